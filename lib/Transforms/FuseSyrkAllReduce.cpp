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
#include "muir/Transforms/PassInput.h"
#include "muir/Transforms/Passes.h"

#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace mlir::muir {
#define GEN_PASS_DEF_MUIRFUSESYRKALLREDUCE
#include "muir/Transforms/Passes.h.inc"
} // namespace mlir::muir

using namespace mlir;
using namespace mlir::muir;

namespace {

/// all_reduce(sum) of a SYRK that nothing else reads (no accumulator) as
/// one muir.syrk_all_reduce, in chunks of `chunkRows` rows (0: the cost
/// model's chunk for the group's slowest link). The SYRK is left unused
/// (a pattern may erase only its root): dead-code removal takes it.
struct FuseSyrkAllReduce : OpRewritePattern<AllReduceOp> {
  FuseSyrkAllReduce(MLIRContext *context, Machine machine, int64_t chunkRows)
      : OpRewritePattern(context), profile(MachineProfile::get(machine)),
        chunkRows(chunkRows) {}

  LogicalResult matchAndRewrite(AllReduceOp ar,
                                PatternRewriter &rewriter) const override {
    auto syrk = ar.getInput().getDefiningOp<SyrkOp>();
    if (!syrk || ar.getReduction() != ReductionKind::sum ||
        !syrk->hasOneUse() || syrk.getAlphaValue() || syrk.getBetaValue() ||
        (syrk.getAcc() && syrk.getBetaAttr().getValueAsDouble() != 0.0))
      return rewriter.notifyMatchFailure(
          ar, "not a sum of a SYRK with constant alpha and no accumulator "
              "or other readers");
    auto type = syrk.getType();
    int64_t s = type.getDimSize(type.getRank() - 1);
    int64_t rows = chunkRows ? chunkRows : defaultChunk(ar, s);
    rewriter.replaceOpWithNewOp<SyrkAllReduceOp>(
        ar, type, ar.getGridAttr(), ar.getGridAxesAttr(), syrk.getA(),
        syrk.getAlphaAttr(), syrk.getTransposeAttr(),
        rewriter.getI64IntegerAttr(std::min(rows, s)));
    return success();
  }

  /// The cost model's chunk for the group's slowest link.
  int64_t defaultChunk(AllReduceOp ar, int64_t s) const {
    Link link{0, 1};
    for (Attribute a : ar.getGridAxes()) {
      const Link &l = profile.link(cast<StringAttr>(a).getValue());
      link.alpha = std::max(link.alpha, l.alpha);
      link.beta = l.beta;
    }
    return gramChunkRows(link, s);
  }

  MachineProfile profile;
  int64_t chunkRows;
};

struct FuseSyrkAllReducePass
    : public mlir::muir::impl::MuirFuseSyrkAllReduceBase<
          FuseSyrkAllReducePass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(checkPassInput(getOperation(), getArgument(),
                              PassInput::Tensors)))
      return signalPassFailure();
    if (chunkRows < 0) {
      getOperation()->emitError("syrk-chunk-rows must be >= 0, got ")
          << static_cast<int64_t>(chunkRows);
      return signalPassFailure();
    }
    RewritePatternSet patterns(&getContext());
    populateFuseSyrkAllReducePatterns(patterns, machine, chunkRows);
    walkAndApplyPatterns(getOperation(), std::move(patterns));
    // The SYRKs fused away (and any other that nothing reads).
    getOperation()->walk([](SyrkOp syrk) {
      if (syrk->use_empty())
        syrk.erase();
    });
  }
};

} // namespace

void mlir::muir::populateFuseSyrkAllReducePatterns(RewritePatternSet &patterns,
                                                   Machine machine,
                                                   int64_t chunkRows) {
  patterns.add<FuseSyrkAllReduce>(patterns.getContext(), machine, chunkRows);
}
