//===- DistributeInternal.h - muir-distribute's shared pieces -*- C++ -*-===//
//
// Private to lib/Transforms: what the pass (Distribute.cpp: shardings,
// the Newton-Schulz mode of each update, the tensor-parallel rewrite)
// shares with its data-parallel spreading (DistributeDp.cpp) and its
// distributed Newton-Schulz builders (DistributedNewtonSchulz.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_LIB_TRANSFORMS_DISTRIBUTEINTERNAL_H
#define MUIR_LIB_TRANSFORMS_DISTRIBUTEINTERNAL_H

#include "muir/Analysis/CostModel.h"
#include "muir/Transforms/Passes.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <optional>
#include <string>

namespace mlir::muir::distribute {

/// One split of an argument: `muir.shards`' entry as the pass reads it.
struct Shard {
  std::string kind; ///< tp_column, tp_row, fsdp, expert
  std::string axis;
  int64_t dim;
  int64_t group;       ///< ranks in the axis' group
  mutable GridOp grid; ///< the folding the axis belongs to
  bool onRunGrid;      ///< the run's grid (not an MoE folding)

  FlatSymbolRefAttr gridRef() const {
    return FlatSymbolRefAttr::get(grid.getSymNameAttr());
  }
  /// As the step library reads it: #muir.split<@grid, ["axis"], dim>.
  SplitAttr split(Builder &b) const {
    return SplitAttr::get(b.getContext(), gridRef(), b.getStrArrayAttr({axis}),
                          dim);
  }
};

/// One orthogonalised update (Muon, NorMuon: an
/// OrthogonalizedUpdateInterface) as the per-rank program runs it.
struct Job {
  OrthogonalizedUpdateInterface op;
  MomentumOp momentum;
  RankedTensorType localType;  ///< the shard this rank holds
  RankedTensorType nsType;     ///< what the owner's NS works on
  SmallVector<Shard> nsShards; ///< splits the NS itself spans (tp modes)
  std::optional<Shard> fsdp;   ///< a dp split gathered to the owner
  NewtonSchulzMode mode = NewtonSchulzMode::duplicated;
  bool gram = false;        ///< distributed/resharded in the Gram form
  bool matrixSplit = false; ///< nsShards split the matrix itself
  NSReason why = NSReason::requested;
  SmallVector<NSCandidate> weighed; ///< the cost model's, for `cost_model`
  int64_t owner = -1; ///< dp group rank that orthogonalises it, -1 all
  double weight = 0;
  double modelledSeconds = 0; ///< the model's time of `mode`, split only
};

/// An update's custom Newton-Schulz coefficients, if any.
inline std::optional<ArrayRef<double>>
coefficientsOf(OrthogonalizedUpdateInterface op) {
  if (DenseF64ArrayAttr c = op.getCoefficientsAttr())
    return c.asArrayRef();
  return std::nullopt;
}

/// Newton-Schulz of a matrix split on one dimension over `s`'s group,
/// without gathering it: the squared norm and, every step, the Gram matrix
/// over the unsplit dimension are all-reduced; the rest is local. Split
/// rows use X <- a X + X (b G + c G G) with G = X^T X, split columns
/// X <- a X + (b G + c G G) X with G = X X^T (the same polynomial).
/// `gram`: the Gram form (the Gram matrix summed once); `syrk`: the
/// symmetric products as SYRKs (the pass's option).
Value distributedNS(OpBuilder &b, Location loc,
                    OrthogonalizedUpdateInterface op, Value u, const Shard &s,
                    bool gram, bool syrk);

/// Layer-wise and FSDP jobs: every rank of the dp group (`group` ranks of
/// `dpAxis` on the grid `gridRef`) orthogonalises the matrices it owns
/// (owners chosen by `policy` from the jobs' weights), in one
/// `scf.index_switch` on its dp group rank: FSDP shards sent to the owners,
/// the owned matrices orthogonalised (`orthogonalise`), the results
/// gathered and finished on every rank (`finish`), before the return of
/// `body`.
LogicalResult
spreadOverDp(Block &body, ArrayRef<Job *> jobs, FlatSymbolRefAttr gridRef,
             StringRef dpAxis, int64_t group, DpAssign policy,
             function_ref<Value(OpBuilder &, Job &, Value)> orthogonalise,
             function_ref<void(OpBuilder &, Job &, Value)> finish);

} // namespace mlir::muir::distribute

#endif // MUIR_LIB_TRANSFORMS_DISTRIBUTEINTERNAL_H
