//===- DescriptionStrings.cpp - a description's strings: escapes, UTF-8 --===//
//
// The checks of a description's strings before the reader takes them (its
// escapes, as JSON and YAML double-quoted scalars spell them; valid UTF-8),
// and the surrogate pairs LLVM's YAML parser leaves apart, joined
// (DescriptionInternal.h). Description.cpp and HFConfig.cpp use them.
//
//===----------------------------------------------------------------------===//
#include "DescriptionInternal.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/ConvertUTF.h"

#include <optional>

using namespace mlir;
using namespace mlir::muir::desc;
using namespace mlir::muir::desc::detail;

/// The value of the `digits` hex digits at `text[at]`, if they are.
static std::optional<uint32_t> hexAt(StringRef text, size_t at,
                                     unsigned digits) {
  if (at + digits > text.size())
    return std::nullopt;
  uint32_t v = 0;
  for (char c : text.substr(at, digits)) {
    if (!llvm::isHexDigit(c))
      return std::nullopt;
    v = v * 16 + llvm::hexDigitValue(c);
  }
  return v;
}

size_t mlir::muir::desc::detail::checkEscape(StringRef text, size_t at,
                                             std::string &problem) {
  problem.clear();
  if (at + 1 >= text.size())
    return 1;
  char kind = text[at + 1];
  if (kind != 'u' && kind != 'U')
    return 2;
  unsigned digits = kind == 'u' ? 4 : 8;
  size_t length = 2 + digits;
  std::optional<uint32_t> v = hexAt(text, at + 2, digits);
  if (!v) {
    problem = ("expected " + Twine(digits) + " hex digits after '\\" +
               Twine(kind) + "'")
                  .str();
    return 2;
  }
  std::string escape = text.substr(at, length).str();
  if (*v >= 0xD800 && *v <= 0xDBFF && kind == 'u') {
    std::optional<uint32_t> low;
    if (text.substr(at + length).starts_with("\\u"))
      low = hexAt(text, at + length + 2, 4);
    if (low && *low >= 0xDC00 && *low <= 0xDFFF)
      return 2 * length;
    problem = "lone UTF-16 surrogate '" + escape +
              "': a high surrogate (\\uD800-\\uDBFF) must be followed by a "
              "low one (\\uDC00-\\uDFFF), e.g. \"\\ud83d\\ude00\" for U+1F600";
  } else if (*v >= 0xDC00 && *v <= 0xDFFF && kind == 'u') {
    problem = "lone UTF-16 surrogate '" + escape +
              "': a low surrogate (\\uDC00-\\uDFFF) must come right after a "
              "high one (\\uD800-\\uDBFF), e.g. \"\\ud83d\\ude00\" for U+1F600";
  } else if (*v >= 0xD800 && *v <= 0xDFFF) {
    problem = "'" + escape +
              "' is a UTF-16 surrogate, not a character: write the "
              "character's code point (e.g. \\U0001F600)";
  } else if (*v > 0x10FFFF) {
    problem = "'" + escape + "' is past U+10FFFF, the last Unicode code point";
  }
  return length;
}

size_t mlir::muir::desc::detail::invalidUTF8At(StringRef text) {
  const auto *begin = reinterpret_cast<const llvm::UTF8 *>(text.data());
  const auto *end = begin + text.size();
  for (const llvm::UTF8 *p = begin; p < end;) {
    if (*p < 0x80) {
      ++p;
      continue;
    }
    unsigned n = llvm::getNumBytesForUTF8(*p);
    if (n > size_t(end - p) || !llvm::isLegalUTF8Sequence(p, p + n))
      return p - begin;
    p += n;
  }
  return StringRef::npos;
}

StringRef
mlir::muir::desc::detail::joinSurrogatePairs(StringRef value,
                                             SmallVectorImpl<char> &storage) {
  if (!value.contains('\xED'))
    return value;
  std::string out;
  out.reserve(value.size());
  auto byte = [&](size_t i) { return static_cast<uint8_t>(value[i]); };
  for (size_t i = 0; i < value.size();) {
    if (i + 6 <= value.size() && byte(i) == 0xED &&
        (byte(i + 1) & 0xF0) == 0xA0 && (byte(i + 2) & 0xC0) == 0x80 &&
        byte(i + 3) == 0xED && (byte(i + 4) & 0xF0) == 0xB0 &&
        (byte(i + 5) & 0xC0) == 0x80) {
      uint32_t high = 0xD000 | (byte(i + 1) & 0x3F) << 6 | (byte(i + 2) & 0x3F);
      uint32_t low = 0xD000 | (byte(i + 4) & 0x3F) << 6 | (byte(i + 5) & 0x3F);
      uint32_t c = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
      out += static_cast<char>(0xF0 | c >> 18);
      out += static_cast<char>(0x80 | (c >> 12 & 0x3F));
      out += static_cast<char>(0x80 | (c >> 6 & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
      i += 6;
    } else {
      out += value[i++];
    }
  }
  storage.assign(out.begin(), out.end());
  return StringRef(storage.data(), storage.size());
}
