//===- PassInput.h - the level of IR a muir pass takes ----------*- C++ -*-===//
//
// Every muir pass, transform or conversion, checks that it is given IR of
// the level it takes (checkPassInput), so that a pass given the wrong level
// fails instead of leaving the IR as it was.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_TRANSFORMS_PASSINPUT_H
#define MUIR_TRANSFORMS_PASSINPUT_H

#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"

namespace mlir::muir {

/// The level of IR a muir pass takes (the stages of docs/design.md).
enum class PassInput {
  /// Tensor-level IR, high or planned: muir ops on tensors, before
  /// muir-lower-to-exec (muir-distribute, the Newton-Schulz rewrites, ...).
  Tensors,
  /// Planned IR: distributed, optimizers decomposed, Newton-Schulz
  /// expanded (muir-lower-to-exec).
  Planned,
  /// Exec IR: buffers, muir_exec ops, a muir.entry function
  /// (muir-exec-to-runtime-calls, muir-exec-to-gpu, muir-trace-buffers).
  Exec,
};

/// Fails, with an error on the first op of `module` that is not IR of
/// level `input` (naming `pass` and the pass that makes the IR it takes),
/// unless `module` is such IR. Every muir pass checks its input so, so that
/// a pass given the wrong level fails instead of leaving the IR as it was.
LogicalResult checkPassInput(Operation *root, StringRef pass,
                             PassInput input);

} // namespace mlir::muir

#endif // MUIR_TRANSFORMS_PASSINPUT_H
