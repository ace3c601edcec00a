//===- Diagnostics.cpp - the tools' diagnostics ---------------------------===//
#include "muir/Driver/Diagnostics.h"
#include "muir/Support/Files.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"
#include "llvm/Support/WithColor.h"

using namespace mlir;
using namespace mlir::muir;

ExcerptDiagnosticHandler::ExcerptDiagnosticHandler(llvm::SourceMgr &sourceMgr,
                                                   MLIRContext *context,
                                                   llvm::raw_ostream &os)
    : ScopedDiagnosticHandler(context), sourceMgr(sourceMgr), os(os) {
  setHandler([this](Diagnostic &diag) {
    print(diag);
    return success();
  });
}

void ExcerptDiagnosticHandler::print(Diagnostic &diag) {
  print(diag.getLocation(), diag.str(), diag.getSeverity());
  for (Diagnostic &note : diag.getNotes())
    print(note.getLocation(), note.str(), DiagnosticSeverity::Note);
}

/// The first file location inside `loc` (fused, named and call-site
/// locations wrap them).
static FileLineColLoc fileLocation(Location loc) {
  FileLineColLoc found;
  loc->walk([&](Location l) {
    if (auto f = dyn_cast<FileLineColLoc>(l)) {
      found = f;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return found;
}

void ExcerptDiagnosticHandler::print(Location loc, StringRef message,
                                     DiagnosticSeverity severity) {
  llvm::HighlightColor color = llvm::HighlightColor::Error;
  StringRef label = "error: ";
  switch (severity) {
  case DiagnosticSeverity::Error:
    break;
  case DiagnosticSeverity::Warning:
    color = llvm::HighlightColor::Warning;
    label = "warning: ";
    break;
  case DiagnosticSeverity::Note:
    color = llvm::HighlightColor::Note;
    label = "note: ";
    break;
  case DiagnosticSeverity::Remark:
    color = llvm::HighlightColor::Remark;
    label = "remark: ";
    break;
  }
  FileLineColLoc file = fileLocation(loc);
  if (!file) {
    if (!isa<UnknownLoc>(loc))
      os << loc << ": ";
    llvm::WithColor(os, color) << label;
    os << message << "\n";
    return;
  }
  StringRef name = file.getFilename().getValue();
  unsigned line = file.getLine(), col = file.getColumn();
  os << name << ":" << line << ":" << col << ": ";
  llvm::WithColor(os, color) << label;
  os << message << "\n";

  // The source line: from a buffer of the source manager, else the file.
  unsigned id = 0;
  for (unsigned i = 1; i <= sourceMgr.getNumBuffers() && !id; ++i)
    if (sourceMgr.getMemoryBuffer(i)->getBufferIdentifier() == name)
      id = i;
  if (!id) {
    std::string error;
    auto buffer = readBoundedFile(name, error);
    if (!buffer)
      return;
    id = sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  }
  StringRef text = sourceMgr.getMemoryBuffer(id)->getBuffer();
  size_t start = 0;
  for (unsigned l = 1; l < line; ++l) {
    start = text.find('\n', start);
    if (start == StringRef::npos)
      return;
    ++start;
  }
  StringRef source = text.substr(start).take_until(
      [](char c) { return c == '\n' || c == '\r'; });
  size_t caret = col ? col - 1 : 0;
  if (caret > source.size())
    return;
  // A long line: kMaxExcerpt characters around the column, "..." marking
  // what is cut.
  std::string shown = source.str();
  if (source.size() > kMaxExcerpt) {
    size_t from = caret > kMaxExcerpt / 3 ? caret - kMaxExcerpt / 3 : 0;
    size_t to = std::min(source.size(), from + kMaxExcerpt);
    shown = (from ? "..." : "") + source.slice(from, to).str() +
            (to < source.size() ? "..." : "");
    caret = caret - from + (from ? 3 : 0);
  }
  for (char &c : shown)
    if (c == '\t')
      c = ' ';
  os << shown << "\n" << std::string(caret, ' ');
  llvm::WithColor(os, llvm::raw_ostream::GREEN, /*Bold=*/true) << "^";
  os << "\n";
}
