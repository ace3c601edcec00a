//===- Version.h - muir's version, for every tool's --version ---*- C++ -*-===//
//
// Plain C++ (no LLVM): muir-step-runner, which runs without LLVM, prints it
// too. The LLVM tools print it beside LLVM's own (VersionPrinter.h).
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_SUPPORT_VERSION_H
#define MUIR_SUPPORT_VERSION_H

/// "muir 0.1.0, git 0123456789ab": the version and the commit this build
/// was made from (lib/Support/Version.cpp). Outside any namespace: the
/// tools that use namespace mlir see mlir::muir as `muir`.
const char *muirBuildVersion();

#endif // MUIR_SUPPORT_VERSION_H
