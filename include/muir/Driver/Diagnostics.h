//===- Diagnostics.h - the tools' diagnostics ------------------*- C++ -*-===//
//
// Prints MLIR diagnostics as the tools show them: "file:line:col: error:
// message", then the source line and a caret, as LLVM's source manager
// does; but a source line longer than kMaxExcerpt characters (an exec
// module's entry signature runs to kilobytes on one line) is shown as an
// excerpt around the column. Notes follow their diagnostic.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_DRIVER_DIAGNOSTICS_H
#define MUIR_DRIVER_DIAGNOSTICS_H

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::muir {

class ExcerptDiagnosticHandler : public ScopedDiagnosticHandler {
public:
  /// The most characters of a source line shown.
  static constexpr size_t kMaxExcerpt = 120;

  /// Reports `context`'s diagnostics to `os` (stderr by default) with the
  /// lines of `sourceMgr`'s buffers; a file not in it is read from disk.
  ExcerptDiagnosticHandler(llvm::SourceMgr &sourceMgr, MLIRContext *context,
                           llvm::raw_ostream &os = llvm::errs());

  /// Prints one diagnostic (and its notes).
  void print(Diagnostic &diag);

private:
  void print(Location loc, StringRef message, DiagnosticSeverity severity);

  llvm::SourceMgr &sourceMgr;
  llvm::raw_ostream &os;
};

} // namespace mlir::muir

#endif // MUIR_DRIVER_DIAGNOSTICS_H
