//===- Nesting.h - a bound on how deeply an input nests ---------*- C++ -*-===//
//
// The parsers muir uses (LLVM's YAML and JSON readers, MLIR's parser)
// recurse once per level of nesting, so an input nested tens of thousands
// deep (`[[[[...`, 20,000 nested regions, `tuple<tuple<...`) overflows the
// stack. Every reader first scans its text with findTooDeep, one pass
// without recursion, and refuses an input nested deeper than
// kMaxNestingDepth with the line and column where it passes the bound.
// Header-only: the fuzzers and muir-trace-diff link LLVM's support only.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_SUPPORT_NESTING_H
#define MUIR_SUPPORT_NESTING_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SourceMgr.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace mlir::muir {

/// The deepest nesting a reader accepts: far above any description,
/// config, manifest or module muir writes or reads (a trained MoE step
/// nests about 12 deep), far below the depth whose recursion fills a
/// thread's stack (thousands, also under the sanitizers).
inline constexpr int64_t kMaxNestingDepth = 256;

/// The syntax an input is scanned as.
enum class NestingSyntax {
  /// YAML, block and flow (JSON is YAML's flow style): a flow collection's
  /// `[` or `{` where a node may start, quoted scalars and comments
  /// skipped; a block collection by its indentation (each deeper column a
  /// level, each compact `- ` or `? ` on a line one more).
  Yaml,
  /// MLIR: every `(`, `[`, `{` and `<` outside strings and `//` comments
  /// (`->`, `<=` and `>=` are no brackets).
  Mlir,
};

/// Where nesting passes `limit` in `text`: the byte offset of the first
/// level too deep, or nothing if the text stays within it.
inline std::optional<size_t> findTooDeep(llvm::StringRef text,
                                         NestingSyntax syntax,
                                         int64_t limit = kMaxNestingDepth) {
  const size_t n = text.size();
  int64_t flow = 0;
  if (syntax == NestingSyntax::Mlir) {
    for (size_t i = 0; i < n; ++i) {
      char c = text[i];
      if (c == '"') {
        for (++i; i < n && text[i] != '"'; ++i)
          if (text[i] == '\\')
            ++i;
      } else if (c == '/' && i + 1 < n && text[i + 1] == '/') {
        while (i < n && text[i] != '\n')
          ++i;
      } else if ((c == '-' || c == '<' || c == '>') && i + 1 < n &&
                 text[i + 1] == (c == '-' ? '>' : '=')) {
        ++i;
      } else if (c == '(' || c == '[' || c == '{' || c == '<') {
        if (++flow > limit)
          return i;
      } else if ((c == ')' || c == ']' || c == '}' || c == '>') && flow > 0) {
        --flow;
      }
    }
    return std::nullopt;
  }
  // YAML. The block levels are the columns of the lines' indentation (and
  // of compact collections) still open: a stack of columns.
  llvm::SmallVector<size_t> block;
  // Where a new node may start: the beginning of a line, after an
  // indicator (`:`, `-`, `?`, `,`) and a space, or inside a flow
  // collection after `[`, `{` or `,`.
  bool nodeMayStart = true;
  bool lineStart = true;
  for (size_t i = 0; i < n; ++i) {
    char c = text[i];
    if (lineStart) {
      lineStart = false;
      size_t col = 0;
      while (i < n && text[i] == ' ') {
        ++i;
        ++col;
      }
      if (i >= n)
        break;
      c = text[i];
      bool content = c != '\n' && c != '\r' && c != '#';
      if (content && flow == 0) {
        while (!block.empty() && block.back() > col)
          block.pop_back();
        if (block.empty() || block.back() < col)
          block.push_back(col);
        // Compact collections: "- - - x", "- ? x", each a level deeper.
        while (i + 1 < n && (text[i] == '-' || text[i] == '?') &&
               (text[i + 1] == ' ' || text[i + 1] == '\t')) {
          i += 2;
          col += 2;
          while (i < n && text[i] == ' ') {
            ++i;
            ++col;
          }
          block.push_back(col);
          if (static_cast<int64_t>(block.size()) > limit)
            return i;
        }
        if (i >= n)
          break;
        c = text[i];
        if (static_cast<int64_t>(block.size()) > limit)
          return i;
      }
      nodeMayStart = true;
    }
    switch (c) {
    case '\n':
      lineStart = true;
      continue;
    case '#':
      if (i == 0 || text[i - 1] == ' ' || text[i - 1] == '\t' ||
          text[i - 1] == '\n') {
        while (i + 1 < n && text[i + 1] != '\n')
          ++i;
        continue;
      }
      break;
    case '\'':
    case '"':
      if (!nodeMayStart)
        break;
      for (++i; i < n; ++i) {
        if (c == '"' && text[i] == '\\')
          ++i;
        else if (text[i] == c) {
          if (c == '\'' && i + 1 < n && text[i + 1] == '\'')
            ++i;
          else
            break;
        }
      }
      nodeMayStart = false;
      continue;
    case '[':
    case '{':
      if (nodeMayStart || flow > 0) {
        int64_t depth = flow + 1 + static_cast<int64_t>(block.size());
        if (depth > limit)
          return i;
        ++flow;
        nodeMayStart = true;
        continue;
      }
      break;
    case ']':
    case '}':
      if (flow > 0)
        --flow;
      nodeMayStart = false;
      continue;
    case ',':
      nodeMayStart = flow > 0;
      continue;
    case ' ':
    case '\t':
      continue;
    case ':':
    case '-':
    case '?':
      if (i + 1 >= n || text[i + 1] == ' ' || text[i + 1] == '\t' ||
          text[i + 1] == '\n' || (flow > 0 && (text[i + 1] == ',' ||
                                               text[i + 1] == ']' ||
                                               text[i + 1] == '}'))) {
        nodeMayStart = true;
        continue;
      }
      break;
    default:
      break;
    }
    nodeMayStart = false;
  }
  return std::nullopt;
}

/// The 1-based line and column of byte `offset` in `text`.
inline std::pair<unsigned, unsigned> lineAndColumn(llvm::StringRef text,
                                                   size_t offset) {
  llvm::StringRef before = text.take_front(offset);
  unsigned line = 1 + before.count('\n');
  size_t lastNewline = before.rfind('\n');
  unsigned column =
      1 + (lastNewline == llvm::StringRef::npos ? offset
                                                : offset - lastNewline - 1);
  return {line, column};
}

/// The message a reader gives for input nested past the bound.
inline std::string tooDeepMessage() {
  return "nested deeper than " + std::to_string(kMaxNestingDepth) +
         " levels, the most muir reads";
}

/// For a reader whose input is buffer `bufferId` of `sm`: whether it nests
/// past the bound, in which case the error ("<file>:<line>:<col>: error:
/// the <what> is nested deeper than 256 levels...", with the line shown)
/// is printed through `sm`.
inline bool reportTooDeep(const llvm::SourceMgr &sm, unsigned bufferId,
                          NestingSyntax syntax, llvm::StringRef what) {
  const llvm::MemoryBuffer *buffer = sm.getMemoryBuffer(bufferId);
  std::optional<size_t> at = findTooDeep(buffer->getBuffer(), syntax);
  if (!at)
    return false;
  sm.PrintMessage(llvm::SMLoc::getFromPointer(buffer->getBufferStart() + *at),
                  llvm::SourceMgr::DK_Error,
                  "the " + what + " is " + tooDeepMessage());
  return true;
}

} // namespace mlir::muir

#endif // MUIR_SUPPORT_NESTING_H
