//===- DistributeDp.cpp - Newton-Schulz shared out over data parallelism --===//
//
// muir-distribute's spreading over the dp axis (DistributeInternal.h): each
// layer-wise or FSDP update orthogonalised by one owner rank, its FSDP
// shards sent to it first, the results gathered back to every rank, with
// each owner's buffers packed and padded to the largest.
//
//===----------------------------------------------------------------------===//
#include "DistributeInternal.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::muir;
using namespace mlir::muir::distribute;

namespace {

/// One spreading: the dp group, the owners' policy and what the pass
/// builds for each job (its Newton-Schulz, its finish).
struct DpSpreader {
  FlatSymbolRefAttr gridRef;
  StringRef dpAxis;
  int64_t group;
  DpAssign policy;
  function_ref<Value(OpBuilder &, Job &, Value)> orthogonalise;
  function_ref<void(OpBuilder &, Job &, Value)> finish;

  /// A 1-D view of `v`.
  static Value flatten(OpBuilder &b, Location loc, Value v) {
    auto t = cast<RankedTensorType>(v.getType());
    SmallVector<ReassociationIndices> all(1);
    for (int64_t d = 0; d < t.getRank(); ++d)
      all[0].push_back(d);
    return tensor::CollapseShapeOp::create(
        b, loc, RankedTensorType::get({t.getNumElements()}, t.getElementType()),
        v, all);
  }
  /// Elements [offset, offset + numel(type)) of a 1-D `v` as `type`.
  static Value unflatten(OpBuilder &b, Location loc, Value v, int64_t offset,
                         RankedTensorType type) {
    auto flat =
        RankedTensorType::get({type.getNumElements()}, type.getElementType());
    Value slice = tensor::ExtractSliceOp::create(
        b, loc, flat, v, ArrayRef<OpFoldResult>{b.getIndexAttr(offset)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(type.getNumElements())},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
    SmallVector<ReassociationIndices> all(1);
    for (int64_t d = 0; d < type.getRank(); ++d)
      all[0].push_back(d);
    return tensor::ExpandShapeOp::create(b, loc, type, slice, all);
  }
  /// `parts` (1-D) back to back, padded with uninitialised elements to
  /// `size`.
  static Value pack(OpBuilder &b, Location loc, ArrayRef<Value> parts,
                    int64_t size) {
    auto f32 = b.getF32Type();
    SmallVector<Value> all(parts);
    int64_t used = 0;
    for (Value p : parts)
      used += cast<RankedTensorType>(p.getType()).getNumElements();
    if (used < size || all.empty())
      all.push_back(tensor::EmptyOp::create(b, loc, {size - used}, f32));
    if (all.size() == 1)
      return all.front();
    return tensor::ConcatOp::create(b, loc, RankedTensorType::get({size}, f32),
                                    0, all);
  }
  static Value counts(OpBuilder &b, Location loc, ArrayRef<int64_t> values) {
    auto type = RankedTensorType::get({static_cast<int64_t>(values.size())},
                                      b.getI64Type());
    return arith::ConstantOp::create(b, loc,
                                     DenseIntElementsAttr::get(type, values));
  }
  /// Block `r` of `group` along `dim`.
  static Value block(OpBuilder &b, Location loc, Value v, int64_t dim,
                     int64_t r, int64_t group) {
    auto t = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> shape(t.getShape());
    shape[dim] /= group;
    SmallVector<OpFoldResult> offsets(t.getRank(), b.getIndexAttr(0)), sizes,
        strides(t.getRank(), b.getIndexAttr(1));
    offsets[dim] = b.getIndexAttr(r * shape[dim]);
    for (int64_t d : shape)
      sizes.push_back(b.getIndexAttr(d));
    return tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get(shape, t.getElementType()), v, offsets,
        sizes, strides);
  }

  /// The jobs shared out over dp, by owner: layer-wise results and FSDP
  /// shards (numel of the local result or shard), in job order, with the
  /// sizes spreadOverDp packs them by.
  struct DpPlan {
    int64_t g = 1;
    SmallVector<SmallVector<Job *>> layerwise, fsdp;
    SmallVector<int64_t> lwSize, fsSize;
    int64_t lwMax = 0, fsMax = 0, lwTotal = 0, fsTotal = 0;
    ArrayAttr dpAxes;      ///< ["dp"]
    RankedTensorType i64s; ///< one count per dp rank
    Type f32;
    /// A packed buffer of n floats.
    RankedTensorType flat(int64_t n) const {
      return RankedTensorType::get({n}, f32);
    }
  };

  /// Layer-wise and FSDP jobs: every dp rank orthogonalises the matrices it
  /// owns, in one `scf.index_switch` on its dp group rank: owners chosen,
  /// FSDP shards sent to them, the owned matrices orthogonalised, the
  /// results gathered and finished on every rank.
  LogicalResult spreadOverDp(Block &body, ArrayRef<Job *> jobs) {
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    // A QK-clip of a shared-out result runs on every rank after the
    // gather, before the return.
    SmallVector<Operation *> after;
    for (Job *job : jobs)
      for (Value r : job->op->getResults())
        for (Operation *user : r.getUsers()) {
          if (isa<QkClipOp>(user) && r == job->op.getNewParam() &&
              llvm::all_of(user->getUsers(),
                           [&](Operation *u) { return u == ret; })) {
            after.push_back(user);
            continue;
          }
          if (user != ret)
            return user->emitOpError("reads a Muon update that the "
                                     "data-parallel ranks share out; only "
                                     "the return may");
        }
    int64_t g = group;
    SmallVector<double> weights;
    for (Job *job : jobs)
      weights.push_back(job->weight);
    std::vector<int64_t> owners = assignToRanks(weights, g, policy);
    for (auto [job, owner] : llvm::zip(jobs, owners))
      job->owner = owner;

    DpPlan p = planDp(jobs, g);
    OpBuilder b(ret);
    Location loc = ret.getLoc();
    Value received = sendFsdpShards(b, loc, p);
    auto sw = orthogonaliseOwned(b, loc, p, received);
    gatherAndFinish(b, loc, p, sw);
    for (Operation *clip : after)
      clip->moveBefore(ret);
    return success();
  }

  /// The jobs by owner, and their sizes.
  DpPlan planDp(ArrayRef<Job *> jobs, int64_t g) {
    // Per owner: layer-wise results (numel of the local result) and FSDP
    // shards (numel of the local shard), in job order.
    DpPlan p;
    p.g = g;
    Builder b(gridRef.getContext());
    p.dpAxes = b.getStrArrayAttr({dpAxis});
    p.i64s = RankedTensorType::get({g}, b.getI64Type());
    p.f32 = b.getF32Type();
    p.layerwise.resize(g);
    p.fsdp.resize(g);
    p.lwSize.assign(g, 0);
    p.fsSize.assign(g, 0);
    auto &layerwise = p.layerwise;
    auto &fsdp = p.fsdp;
    auto &lwSize = p.lwSize;
    auto &fsSize = p.fsSize;
    for (Job *job : jobs) {
      int64_t numel = job->localType.getNumElements();
      if (job->fsdp) {
        fsdp[job->owner].push_back(job);
        fsSize[job->owner] += numel;
      } else {
        layerwise[job->owner].push_back(job);
        lwSize[job->owner] += numel;
      }
    }
    p.lwMax = *llvm::max_element(lwSize);
    p.fsMax = *llvm::max_element(fsSize);
    for (int64_t j = 0; j < g; ++j) {
      p.fsTotal += fsSize[j];
      p.lwTotal += lwSize[j];
    }
    return p;
  }

  /// FSDP, out: every rank sends its shard of each matrix to the owner
  /// (null without FSDP jobs).
  Value sendFsdpShards(OpBuilder &b, Location loc, const DpPlan &p) {
    int64_t g = p.g;
    bool haveFs = p.fsTotal > 0;
    Value received;
    if (haveFs) {
      SmallVector<Value> parts;
      for (int64_t j = 0; j < g; ++j)
        for (Job *job : p.fsdp[j])
          parts.push_back(flatten(b, loc, job->momentum.getUpdate()));
      Value send = pack(b, loc, parts, p.fsTotal);
      auto a2a =
          AllToAllVOp::create(b, loc, p.flat(g * p.fsMax), p.i64s, gridRef,
                              p.dpAxes, send, counts(b, loc, p.fsSize));
      received = a2a.getResult();
    }
    return received;
  }

  /// The switch on the dp group rank in which each owner orthogonalises
  /// its matrices: the layer-wise ones packed, the FSDP ones assembled
  /// from the shards received and cut back into per-rank blocks.
  scf::IndexSwitchOp orthogonaliseOwned(OpBuilder &b, Location loc,
                                        const DpPlan &p, Value received) {
    int64_t g = p.g;
    bool haveLw = p.lwTotal > 0, haveFs = p.fsTotal > 0;
    Value dpRank =
        GroupRankOp::create(b, loc, b.getIndexType(), gridRef, p.dpAxes);
    SmallVector<Type> resultTypes;
    if (haveLw)
      resultTypes.push_back(p.flat(p.lwMax));
    if (haveFs) {
      resultTypes.push_back(p.flat(g * p.fsMax));
      resultTypes.push_back(p.i64s);
    }
    SmallVector<int64_t> cases;
    for (int64_t j = 0; j < g; ++j)
      cases.push_back(j);
    auto sw = scf::IndexSwitchOp::create(b, loc, resultTypes, dpRank, cases,
                                         cases.size());
    for (int64_t j = 0; j <= g; ++j) {
      bool isDefault = j == g;
      Region &region =
          isDefault ? sw.getDefaultRegion() : sw.getCaseRegions()[j];
      OpBuilder cb(b.getContext());
      cb.createBlock(&region);
      SmallVector<Value> yields;
      if (isDefault) {
        // Group ranks are in [0, g): never taken.
        if (haveLw)
          yields.push_back(pack(cb, loc, {}, p.lwMax));
        if (haveFs) {
          yields.push_back(pack(cb, loc, {}, g * p.fsMax));
          yields.push_back(counts(cb, loc, SmallVector<int64_t>(g, 0)));
        }
        scf::YieldOp::create(cb, loc, yields);
        continue;
      }
      if (haveLw) {
        SmallVector<Value> parts;
        for (Job *job : p.layerwise[j])
          parts.push_back(flatten(
              cb, loc, orthogonalise(cb, *job, job->momentum.getUpdate())));
        yields.push_back(pack(cb, loc, parts, p.lwMax));
      }
      if (haveFs) {
        // Rank r's shards of this owner's matrices sit at r * p.fsSize[j].
        SmallVector<Value> whole;
        int64_t offset = 0;
        for (Job *job : p.fsdp[j]) {
          SmallVector<Value> pieces;
          for (int64_t r = 0; r < g; ++r)
            pieces.push_back(unflatten(
                cb, loc, received, r * p.fsSize[j] + offset, job->localType));
          offset += job->localType.getNumElements();
          Value u = tensor::ConcatOp::create(cb, loc, job->nsType,
                                             job->fsdp->dim, pieces);
          whole.push_back(orthogonalise(cb, *job, u));
        }
        // Back: block r of every result to rank r.
        SmallVector<Value> parts;
        for (int64_t r = 0; r < g; ++r)
          for (auto [job, o] : llvm::zip(p.fsdp[j], whole))
            parts.push_back(
                flatten(cb, loc, block(cb, loc, o, job->fsdp->dim, r, g)));
        yields.push_back(pack(cb, loc, parts, g * p.fsMax));
        yields.push_back(counts(cb, loc, SmallVector<int64_t>(g, p.fsSize[j])));
      }
      scf::YieldOp::create(cb, loc, yields);
    }
    return sw;
  }

  /// Everyone gets every result and finishes its update.
  void gatherAndFinish(OpBuilder &b, Location loc, const DpPlan &p,
                       scf::IndexSwitchOp sw) {
    int64_t g = p.g;
    bool haveLw = p.lwTotal > 0, haveFs = p.fsTotal > 0;
    // Everyone gets every result.
    unsigned next = 0;
    if (haveLw) {
      Value gathered = AllGatherVOp::create(
          b, loc, p.flat(p.lwTotal), gridRef, p.dpAxes, sw.getResult(next++),
          b.getI64IntegerAttr(0), b.getDenseI64ArrayAttr(p.lwSize));
      int64_t offset = 0;
      for (int64_t j = 0; j < g; ++j)
        for (Job *job : p.layerwise[j]) {
          Value o = unflatten(b, loc, gathered, offset, job->localType);
          offset += job->localType.getNumElements();
          finish(b, *job, o);
        }
    }
    if (haveFs) {
      Value back = sw.getResult(next++);
      Value backCounts = sw.getResult(next++);
      auto a2a = AllToAllVOp::create(b, loc, p.flat(p.fsTotal), p.i64s, gridRef,
                                     p.dpAxes, back, backCounts);
      int64_t offset = 0;
      for (int64_t j = 0; j < g; ++j)
        for (Job *job : p.fsdp[j]) {
          Value o = unflatten(b, loc, a2a.getResult(), offset, job->localType);
          offset += job->localType.getNumElements();
          finish(b, *job, o);
        }
    }
  }
};

} // namespace

LogicalResult distribute::spreadOverDp(
    Block &body, ArrayRef<Job *> jobs, FlatSymbolRefAttr gridRef,
    StringRef dpAxis, int64_t group, DpAssign policy,
    function_ref<Value(OpBuilder &, Job &, Value)> orthogonalise,
    function_ref<void(OpBuilder &, Job &, Value)> finish) {
  return DpSpreader{gridRef, dpAxis, group, policy, orthogonalise, finish}
      .spreadOverDp(body, jobs);
}
