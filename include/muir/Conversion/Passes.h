//===- Passes.h - muir's conversions ----------------------------*- C++ -*-===//
//
// The passes that lower planned IR to exec IR and exec IR towards LLVM
// (Passes.td), and what the pipelines share of them.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_CONVERSION_PASSES_H
#define MUIR_CONVERSION_PASSES_H

#include "Muir/MuirDialect.h"
#include "MuirExec/MuirExecDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"
#include "muir/Target/Target.h"

namespace mlir::muir {

#define GEN_PASS_DECL
#include "muir/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "muir/Conversion/Passes.h.inc"

/// muir's element-wise ops (optimizer math, add, SwiGLU, the diagonal
/// shift) and arith ops on whole tensors as linalg.generic on tensors.
void populateElementwiseToLinalgPatterns(RewritePatternSet &patterns);
/// Applies those patterns once over `root` (no folding, no dead-code
/// removal).
void applyElementwiseToLinalg(Operation *root);
/// The BufferizableOpInterface models of the muir ops that compute tensors:
/// each bufferizes to its muir_exec op, its results fresh allocations
/// (one-shot bufferize in muir-lower-to-exec).
void registerBufferizableOpInterfaceExternalModels(DialectRegistry &registry);

/// A copy between buffers: memref.copy (a memcpy) when both are
/// contiguous, else an element-wise linalg.copy (loops after lowering, with
/// no runtime library behind them).
void copyBuffer(OpBuilder &b, Location loc, Value from, Value to);

} // namespace mlir::muir

#endif // MUIR_CONVERSION_PASSES_H
