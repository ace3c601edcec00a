//===- DecomposeOptimizers.cpp - expand muir.muon_update ------------------===//
//
// muon_update = momentum + newton_schulz + apply_update. Splitting it lets
// the Newton-Schulz passes (expansion, later SYRK formation, distribution
// and batching) see every orthogonalisation as its own op.
//
//===----------------------------------------------------------------------===//
#include "muir/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::muir {
#define GEN_PASS_DEF_MUIRDECOMPOSEOPTIMIZERS
#include "muir/Passes.h.inc"
} // namespace mlir::muir

using namespace mlir;
using namespace mlir::muir;

namespace {

/// The `muir.name` of the function argument `v` comes from, if any.
StringAttr getArgName(Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg)
    return {};
  auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
  if (!func)
    return {};
  return func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "muir.name");
}

struct DecomposeOptimizersPass
    : public mlir::muir::impl::MuirDecomposeOptimizersBase<DecomposeOptimizersPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Slots continue after probes already in the module.
    int64_t nextSlot = 0;
    module.walk([&](ProbeOp p) {
      nextSlot = std::max<int64_t>(nextSlot, p.getSlotAttr().getInt() + 1);
    });

    SmallVector<MuonUpdateOp> updates;
    module.walk([&](MuonUpdateOp op) { updates.push_back(op); });
    for (MuonUpdateOp op : updates) {
      OpBuilder b(op);
      Location loc = op.getLoc();
      auto type = op.getParam().getType();
      int64_t rank = type.getRank();
      int64_t m = type.getDimSize(rank - 2), n = type.getDimSize(rank - 1);

      auto mom = MomentumOp::create(b, loc, type, type, op.getGrad(),
                                    op.getMomentumBuffer(), op.getBetaAttr(),
                                    op.getMomentumKindAttr(),
                                    op.getNesterovAttr());
      auto ns = NewtonSchulzOp::create(
          b, loc, type, mom.getUpdate(), op.getNsStepsAttr(),
          op.getScheduleAttr(), op.getCoefficientsAttr(), op.getEpsAttr());
      if (probeUpdates) {
        StringAttr name = getArgName(op.getParam());
        std::string label =
            name ? name.str() : ("muon_update@" + std::to_string(nextSlot));
        ProbeOp::create(b, loc, ns.getResult(), b.getStringAttr(label),
                        b.getI64IntegerAttr(nextSlot++));
      }
      double scale =
          getUpdateScale(op.getScaleMode(), op.getScaleExtra().convertToDouble(),
                         m, n);
      auto apply = ApplyUpdateOp::create(
          b, loc, type, op.getParam(), ns.getResult(), op.getLrAttr(),
          b.getF64FloatAttr(scale), op.getWeightDecayAttr());
      op.getNewParam().replaceAllUsesWith(apply.getResult());
      op.getNewMomentumBuffer().replaceAllUsesWith(
          mom.getNewMomentumBuffer());
      op.erase();
    }
  }
};

} // namespace
