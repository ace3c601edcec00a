//===- DescriptionInternal.h - helpers of the Description files -*- C++ -*-===//
//
// Private to lib/Import: the helpers that the reader (Description.cpp),
// validation (DescriptionValidate.cpp) and writer (DescriptionWriter.cpp) of
// training-step descriptions share. Not part of muir's interface.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_LIB_IMPORT_DESCRIPTIONINTERNAL_H
#define MUIR_LIB_IMPORT_DESCRIPTIONINTERNAL_H

#include "muir/Import/Description.h"

#include <cstdint>
#include <optional>
#include <string>

namespace mlir::muir::desc::detail {

/// `v` as the writer spells it: the shortest of 15..17 significant digits
/// that reads back exactly, with a decimal point before any exponent.
/// Defined in DescriptionWriter.cpp.
std::string number(double v);

/// The number of devices of a folding (the product of its axes' sizes), or
/// nullopt when it is more than kMaxDevices. Defined in
/// DescriptionValidate.cpp.
std::optional<int64_t> numDevicesChecked(ArrayRef<GridAxis> axes);

/// At a backslash `text[at]` of a JSON string or a YAML double-quoted
/// scalar: the length of the escape, a UTF-16 surrogate pair (`\ud83d\ude00`)
/// counting as one. `problem` says why the escape is no character (a lone
/// surrogate, `\U` past U+10FFFF or of a surrogate, too few hex digits),
/// and is left empty when it is one. Defined in DescriptionStrings.cpp; JSON
/// descriptions and Hugging Face configs share it.
size_t checkEscape(StringRef text, size_t at, std::string &problem);

/// The first byte of `text` at which it is no valid UTF-8 (overlong forms
/// and surrogates included), or npos.
size_t invalidUTF8At(StringRef text);

/// `value`, a double-quoted scalar as LLVM's YAML parser decodes it, with
/// each UTF-16 surrogate pair (`\ud83d\ude00`), which the parser encodes
/// half by half (CESU-8: ED A0 BD ED B8 80), as the one UTF-8 character it
/// stands for (F0 9F 98 80). The strings were checked before (Reader::
/// checkStrings): every surrogate in them comes from a pair of escapes.
StringRef joinSurrogatePairs(StringRef value, SmallVectorImpl<char> &storage);

} // namespace mlir::muir::desc::detail

#endif // MUIR_LIB_IMPORT_DESCRIPTIONINTERNAL_H
