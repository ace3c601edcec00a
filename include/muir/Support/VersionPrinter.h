//===- VersionPrinter.h - --version of the LLVM-based tools -----*- C++ -*-===//
//
// `tool --version` prints "tool (muir 0.1.0, git 0123456789ab)", then
// LLVM's own version lines. Call before the command line is parsed.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_SUPPORT_VERSIONPRINTER_H
#define MUIR_SUPPORT_VERSIONPRINTER_H

#include "muir/Support/Version.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace mlir::muir {

inline void setVersionPrinter(llvm::StringRef tool) {
  llvm::cl::SetVersionPrinter([name = tool.str()](llvm::raw_ostream &os) {
    os << name << " (" << muirBuildVersion() << ")\n";
    // LLVM's default lines (an override replaces them, so ask for them).
    llvm::cl::PrintVersionMessage();
  });
}

} // namespace mlir::muir

#endif // MUIR_SUPPORT_VERSIONPRINTER_H
