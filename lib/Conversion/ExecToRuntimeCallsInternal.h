//===- ExecToRuntimeCallsInternal.h - the buffer fusions ---------*- C++
//-*-===//
//
// Private to lib/Conversion: the rewrites muir-exec-to-runtime-calls makes
// on exec buffers before the ops become calls (ExecBufferFusions.cpp), each
// where the target has what it forms.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_LIB_CONVERSION_EXECTORUNTIMECALLSINTERNAL_H
#define MUIR_LIB_CONVERSION_EXECTORUNTIMECALLSINTERNAL_H

#include "mlir/IR/BuiltinOps.h"

namespace mlir::muir::detail {

/// A Frobenius normalisation into a fresh f32 buffer that only an
/// element-wise `arith.truncf` kernel to bf16 reads (a bf16 Newton-Schulz's
/// first iterate) writes the bf16 buffer itself (muirrt_frobenius_normalize_
/// bf16 rounds as arith.truncf does), and the kernel and the f32 buffer go:
/// one pass over the batch less. CPU only (the CUDA lowering's kernels
/// write the output's type).
void fuseNormalizeToBf16(ModuleOp module);
/// An f32 buffer that an `arith.extf` kernel widens from a bf16 one (a bf16
/// Newton-Schulz's result) and that only element-wise kernels read, through
/// views (the updates' slices of the batch), is not made: each kernel reads
/// the same view of the bf16 buffer and widens the element itself (extf is
/// exact), when nothing writes the bf16 buffer (or the loop buffers it may
/// be) between the widening and the last reader. One pass over the batch
/// less. CPU only.
void fuseWidenIntoReaders(ModuleOp module);
/// CPU: the sum of two grouped products of one row grouping (an MoE
/// backward's rows' gradient through the gate and up projections:
/// gmm(dG, Wg) + gmm(dU, Wu)), each in a buffer only the sum reads, is the
/// first product with the second accumulated into its buffer
/// (grouped_gemm_add): the second buffer, the sum's and the pass over the
/// three go (at 8192 tokens, hidden 1024: 128 MB of the backward's peak).
/// The rows past the groups are zero in both, so in the sum.
void fuseGroupedSums(ModuleOp module);
/// CPU: each buffer is freed right after the op of its block that holds
/// its last use (or a view's), not at the block's end where
/// muir-lower-to-exec frees it, so a pass's peak memory is what is live
/// at once rather than every temporary it makes (an MoE layer's backward
/// at 4096 tokens, hidden 1024: about 190 MB less). Runs after the fusions
/// above, which lengthen some buffers' lives. A buffer that reaches past
/// the ops of its block (a loop's iteration argument, a yield) is left
/// where it was freed. (Not on CUDA: cudaFree waits for the device.)
void freeAfterLastUse(ModuleOp module);

} // namespace mlir::muir::detail

#endif // MUIR_LIB_CONVERSION_EXECTORUNTIMECALLSINTERNAL_H
