//===- ExecToGPUInternal.h - muir-exec-to-gpu's shared pieces ---*- C++ -*-===//
//
// Private to lib/Conversion: the launch helpers that the pass
// (ExecToGPU.cpp, buffer placement, copies and element-wise kernels) shares
// with its triangle (ExecToGPUTriangles.cpp) and MoE (ExecToGPUMoe.cpp)
// kernels, and the entry points of those two.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_LIB_CONVERSION_EXECTOGPUINTERNAL_H
#define MUIR_LIB_CONVERSION_EXECTOGPUINTERNAL_H

#include "muir/Conversion/Passes.h"
#include "muir/Transforms/PassInput.h"

#include <utility>

namespace mlir::muir::exec_to_gpu {

/// A flat, contiguous view of a static identity-layout buffer.
Value flat(OpBuilder &b, Location loc, Value buffer);

/// A launch of one thread per element before `at`, its kernel named
/// `name`; returns a builder inside the bounds check and the element index.
/// The count is static, or a host index value known only at run time.
std::pair<OpBuilder, Value> launchOver(Operation *at, int64_t n,
                                       StringRef name);
std::pair<OpBuilder, Value> launchOver(Operation *at, Value n,
                                       StringRef name);

Value cIndex(OpBuilder &b, Location loc, int64_t v);

/// Whether a buffer is static and contiguous (the generated kernels' flat
/// views); an error on `op` if not.
LogicalResult checkFlat(Operation *op, Value buffer);

/// Every triangle_all_reduce_start / _wait of `module` as pack and unpack
/// kernels around packed_all_reduce_start / _wait.
LogicalResult lowerTriangles(ModuleOp module);

/// A MoE layer's ops with every expert on this rank: the runtime's plan
/// and generated gather, combine and weight-gradient kernels.
LogicalResult lowerDispatch(muir_exec::MoeDispatchOp d);
LogicalResult lowerCombine(muir_exec::MoeCombineOp c);
LogicalResult lowerCombineWeightsGrad(muir_exec::MoeCombineWeightsGradOp c);

} // namespace mlir::muir::exec_to_gpu

#endif // MUIR_LIB_CONVERSION_EXECTOGPUINTERNAL_H
