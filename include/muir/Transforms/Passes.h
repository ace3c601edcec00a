//===- Passes.h - muir's transforms -----------------------------*- C++ -*-===//
//
// The passes that rewrite tensor-level IR (Passes.td) and the rewrites
// behind them, for any pattern driver.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_TRANSFORMS_PASSES_H
#define MUIR_TRANSFORMS_PASSES_H

#include "Muir/MuirDialect.h"
#include "MuirExec/MuirExecDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"
#include "muir/Analysis/CostModel.h"

namespace mlir::muir {

#define GEN_PASS_DECL
#include "muir/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "muir/Transforms/Passes.h.inc"

/// The tensor-level rewrites behind the passes of the same names, for any
/// pattern driver (the passes apply them in one walk; the walk driver skips
/// unreachable blocks, and muir's functions have one block):
/// each orthogonalised update (muon_update, normuon_update: any
/// OrthogonalizedUpdateInterface op) as momentum, Newton-Schulz, its own
/// normalisation (buildNormalizedUpdate) and apply_update, probing
/// each Newton-Schulz output with `probeUpdates` in slots numbered from
/// `nextSlot` on, in the order the driver visits the updates; `nextSlot`
/// must outlive the pattern set, which advances it; the Newton-Schulz ops
/// iterate in `precision`.
void populateDecomposeOptimizersPatterns(RewritePatternSet &patterns,
                                         bool probeUpdates, int64_t &nextSlot,
                                         NSPrecision precision);
/// Each Newton-Schulz op in the Gram or the standard form (`nsForm`, or
/// the cost model for `machine`, priced per rank of `ranks`, with auto),
/// the choice recorded on the op it leaves (the Newton-Schulz op, or the
/// Gram form's last product).
void populateGramNewtonSchulzPatterns(RewritePatternSet &patterns,
                                      Machine machine, int64_t ranks,
                                      NSFormOption nsForm, bool syrk);
/// Newton-Schulz as its normalisation and three matmuls per step.
void populateExpandNewtonSchulzPatterns(RewritePatternSet &patterns);
/// Symmetric products as muir.syrk.
void populateFormSyrkPatterns(RewritePatternSet &patterns);
/// all_reduce(sum) of a SYRK as muir.syrk_all_reduce, in chunks of
/// `chunkRows` rows (> 0; 0: the cost model's for `machine`), leaving the
/// SYRK unused.
void populateFuseSyrkAllReducePatterns(RewritePatternSet &patterns,
                                       Machine machine, int64_t chunkRows);
} // namespace mlir::muir

#endif // MUIR_TRANSFORMS_PASSES_H
