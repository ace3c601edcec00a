//===- FuseSyrkAllReduce.cpp - all-reduce only a triangle of a SYRK -------===//
//
// The distributed mode all-reduces a Gram matrix every Newton-Schulz step.
// It is symmetric, so only a triangle need travel: this pass replaces
// all_reduce(sum) of a muir.syrk (no accumulator, no other reader) with
// muir.syrk_all_reduce, which sends s (s + 1) / 2 values instead of s^2,
// in chunks of rows whose reductions pipeline. The chunk size is the
// `syrk-chunk-rows` option, or (0) chosen from the machine profile: about four
// chunks, each large enough that its message costs several times the
// link's latency.
//
//===----------------------------------------------------------------------===//
#include "muir/Analysis/CostModel.h"
#include "muir/Passes.h"

namespace mlir::muir {
#define GEN_PASS_DEF_MUIRFUSESYRKALLREDUCE
#include "muir/Passes.h.inc"
} // namespace mlir::muir

using namespace mlir;
using namespace mlir::muir;

namespace {

struct FuseSyrkAllReducePass
    : public mlir::muir::impl::MuirFuseSyrkAllReduceBase<
          FuseSyrkAllReducePass> {
  using Base::Base;

  void runOnOperation() override {
    MachineProfile profile = MachineProfile::get(machine);
    if (chunkRows < 0) {
      getOperation().emitError("syrk-chunk-rows must be >= 0, got ")
          << static_cast<int64_t>(chunkRows);
      return signalPassFailure();
    }
    SmallVector<AllReduceOp> candidates;
    getOperation().walk([&](AllReduceOp ar) { candidates.push_back(ar); });
    for (AllReduceOp ar : candidates) {
      auto syrk = ar.getInput().getDefiningOp<SyrkOp>();
      if (!syrk || ar.getReduction() != ReductionKind::sum ||
          !syrk->hasOneUse() ||
          (syrk.getAcc() && syrk.getBetaAttr().getValueAsDouble() != 0.0))
        continue;
      auto type = syrk.getType();
      int64_t s = type.getDimSize(type.getRank() - 1);
      int64_t rows = chunkRows ? chunkRows : defaultChunk(profile, ar, s);
      OpBuilder b(ar);
      auto fused = SyrkAllReduceOp::create(
          b, ar.getLoc(), type, ar.getGridAttr(), ar.getGridAxesAttr(),
          syrk.getA(), syrk.getAlphaAttr(), syrk.getTransposeAttr(),
          b.getI64IntegerAttr(std::min(rows, s)));
      ar.getResult().replaceAllUsesWith(fused.getResult());
      ar.erase();
      syrk.erase();
    }
  }

  /// The cost model's chunk for the group's slowest link.
  static int64_t defaultChunk(const MachineProfile &p, AllReduceOp ar,
                              int64_t s) {
    Link link{0, 1};
    for (Attribute a : ar.getGridAxes()) {
      const Link &l = p.link(cast<StringAttr>(a).getValue());
      link.alpha = std::max(link.alpha, l.alpha);
      link.beta = l.beta;
    }
    return gramChunkRows(link, s);
  }
};

} // namespace
