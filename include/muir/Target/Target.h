//===- Target.h - the targets a step is compiled for ------------*- C++ -*-===//
//
// The enum every layer names a target by (flags, pass options, the step
// library's backends), declared once with its names (EnumNames.h). What the
// compiler knows of each target is muir/Target/TargetInfo.h's.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_TARGET_TARGET_H
#define MUIR_TARGET_TARGET_H

#include "muir/Support/EnumFlags.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"

namespace mlir::muir {

/// The backend a step is compiled for.
enum class Target { Cpu, Cuda };
/// The target's name in flags and options ("cpu", "cuda").
llvm::StringRef stringify(Target target);
/// The values the target flags and pass options accept.
llvm::cl::ValuesClass targetValues();

} // namespace mlir::muir

MUIR_ENUM_FLAG(mlir::muir::Target)

#endif // MUIR_TARGET_TARGET_H
