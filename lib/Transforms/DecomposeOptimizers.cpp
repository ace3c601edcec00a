//===- DecomposeOptimizers.cpp - expand muir.muon_update ------------------===//
//
// muon_update = momentum + newton_schulz + apply_update. Splitting it lets
// the Newton-Schulz passes (expansion, later SYRK formation, distribution
// and batching) see every orthogonalisation as its own op.
//
//===----------------------------------------------------------------------===//
#include "muir/Transforms/PassInput.h"
#include "muir/Transforms/Passes.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

#include <cmath>

namespace mlir::muir {
#define GEN_PASS_DEF_MUIRDECOMPOSEOPTIMIZERS
#include "muir/Transforms/Passes.h.inc"
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
  return func.getArgAttrOfType<StringAttr>(
      arg.getArgNumber(), MuirDialect::NameAttrHelper::getNameStr());
}

/// The probe label of an update applied to `param`: the parameter's
/// `muir.name`, or "name[r0:r1]" for the row block r0..r1 of a named
/// matrix (a fused QKV's part), or "" when it has no name.
std::string probeLabel(Value param) {
  if (StringAttr name = getArgName(param))
    return name.str();
  auto slice = param.getDefiningOp<tensor::ExtractSliceOp>();
  if (!slice || slice.getType().getRank() != 2)
    return "";
  StringAttr name = getArgName(slice.getSource());
  ArrayRef<int64_t> offsets = slice.getStaticOffsets();
  ArrayRef<int64_t> sizes = slice.getStaticSizes();
  if (!name || ShapedType::isDynamic(offsets[0]) ||
      ShapedType::isDynamic(sizes[0]))
    return "";
  return name.str() + "[" + std::to_string(offsets[0]) + ":" +
         std::to_string(offsets[0] + sizes[0]) + "]";
}

/// An orthogonalised update (muon_update, normuon_update: any
/// OrthogonalizedUpdateInterface op) as momentum, Newton-Schulz (per row
/// block of a split update), the op's own normalisation of each block's
/// output (buildNormalizedUpdate, with no splits: Muon keeps it, NorMuon
/// normalises rows and RMS) and apply_update with the op's scale; with
/// probe-updates, each Newton-Schulz output is probed, in slots numbered
/// from `nextSlot` on.
struct DecomposeOrthogonalizedUpdate
    : OpInterfaceRewritePattern<OrthogonalizedUpdateInterface> {
  DecomposeOrthogonalizedUpdate(MLIRContext *context, bool probeUpdates,
                                int64_t &nextSlot, NSPrecision precision)
      : OpInterfaceRewritePattern(context), probeUpdates(probeUpdates),
        nextSlot(nextSlot), precision(precision) {}

  LogicalResult matchAndRewrite(OrthogonalizedUpdateInterface op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getParam().getType());
    int64_t rank = type.getRank();
    int64_t m = type.getDimSize(rank - 2), n = type.getDimSize(rank - 1);
    ValueRange hyper = op.getHyper();
    std::optional<ArrayRef<int64_t>> blocks = op.getRowBlocks();
    if (blocks && !op.getOtherState().empty())
      return rewriter.notifyMatchFailure(
          op, "row blocks of an update with state beyond its momentum");

    auto mom = MomentumOp::create(
        rewriter, loc, type, type, op.getGrad(), op.getMomentumBuffer(),
        hyper.size() > 2 ? hyper[2] : Value(), op.getTake(), op.getBetaAttr(),
        op.getMomentumKindAttr(), op.getNesterovAttr());
    StringAttr name = getArgName(op.getParam());
    std::string label = name ? name.str()
                             : (op->getName().stripDialect() + "@" +
                                std::to_string(nextSlot))
                                   .str();
    SmallVector<Value> newState;
    // Orthogonalise, normalise and apply one block of rows [r0, r0 + rows)
    // (all rows when the update is not split).
    auto block = [&](int64_t r0, int64_t rows, bool whole) -> Value {
      Value u = mom.getUpdate(), p = op.getParam();
      auto blockType = type;
      if (!whole) {
        blockType = RankedTensorType::get({rows, n}, type.getElementType());
        SmallVector<OpFoldResult> offsets = {rewriter.getIndexAttr(r0),
                                             rewriter.getIndexAttr(0)};
        SmallVector<OpFoldResult> sizes = {rewriter.getIndexAttr(rows),
                                           rewriter.getIndexAttr(n)};
        SmallVector<OpFoldResult> strides(2, rewriter.getIndexAttr(1));
        u = tensor::ExtractSliceOp::create(rewriter, loc, blockType, u, offsets,
                                           sizes, strides);
        p = tensor::ExtractSliceOp::create(rewriter, loc, blockType, p, offsets,
                                           sizes, strides);
      }
      auto ns = NewtonSchulzOp::create(
          rewriter, loc, blockType, u, op.getNsStepsAttr(),
          op.getScheduleAttr(), op.getCoefficientsAttr(), op.getEpsAttr(),
          NSPrecisionAttr::get(getContext(), precision));
      if (probeUpdates) {
        std::string tag = whole ? label
                                : label + "[" + std::to_string(r0) + ":" +
                                      std::to_string(r0 + rows) + "]";
        ProbeOp::create(rewriter, loc, ns.getResult(),
                        rewriter.getStringAttr(tag),
                        rewriter.getI64IntegerAttr(nextSlot++));
      }
      Value update = op.buildNormalizedUpdate(rewriter, loc, ns.getResult(),
                                              {}, newState);
      return ApplyUpdateOp::create(
          rewriter, loc, blockType, p, update,
          hyper.take_front(std::min<size_t>(hyper.size(), 2)), op.getTake(),
          op.getLrAttr(),
          rewriter.getF64FloatAttr(op.getApplyScale(whole ? m : rows, n)),
          op.getWeightDecayAttr());
    };
    Value newParam;
    if (blocks) {
      SmallVector<Value> parts;
      int64_t r0 = 0;
      for (int64_t rows : *blocks) {
        parts.push_back(block(r0, rows, false));
        r0 += rows;
      }
      newParam =
          tensor::ConcatOp::create(rewriter, loc, type, /*dim=*/0, parts);
    } else {
      newParam = block(0, m, true);
    }
    SmallVector<Value> results = {newParam, mom.getNewMomentumBuffer()};
    results.append(newState);
    rewriter.replaceOp(op, results);
    return success();
  }

  bool probeUpdates;
  int64_t &nextSlot;
  NSPrecision precision;
};

struct DecomposeOptimizersPass
    : public mlir::muir::impl::MuirDecomposeOptimizersBase<DecomposeOptimizersPass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(checkPassInput(getOperation(), getArgument(),
                              PassInput::Tensors)))
      return signalPassFailure();
    ModuleOp module = getOperation();
    // Slots continue after probes already in the module.
    int64_t nextSlot = 0;
    module.walk([&](ProbeOp p) {
      nextSlot = std::max<int64_t>(nextSlot, p.getSlotAttr().getInt() + 1);
    });

    // Updates muir-distribute decomposed already (split matrices, those a
    // dp owner orthogonalises): the orthogonalised update each
    // `muir.apply_update` applies is this rank's part of the Newton-Schulz
    // output, laid out as the parameter.
    if (probeUpdates) {
      SmallVector<ApplyUpdateOp> applied;
      module.walk([&](ApplyUpdateOp op) {
        if (llvm::none_of(op.getUpdate().getUsers(),
                          [](Operation *u) { return isa<ProbeOp>(u); }))
          applied.push_back(op);
      });
      for (ApplyUpdateOp op : applied) {
        OpBuilder b(op);
        std::string label = probeLabel(op.getParam());
        if (label.empty())
          label = "apply_update@" + std::to_string(nextSlot);
        ProbeOp::create(b, op.getLoc(), op.getUpdate(), b.getStringAttr(label),
                        b.getI64IntegerAttr(nextSlot++));
      }
    }

    RewritePatternSet patterns(&getContext());
    populateDecomposeOptimizersPatterns(patterns, probeUpdates, nextSlot,
                                        nsPrecision);
    walkAndApplyPatterns(module, std::move(patterns));
  }
};

} // namespace

void mlir::muir::populateDecomposeOptimizersPatterns(
    RewritePatternSet &patterns, bool probeUpdates, int64_t &nextSlot,
    NSPrecision precision) {
  patterns.add<DecomposeOrthogonalizedUpdate>(
      patterns.getContext(), probeUpdates, nextSlot, precision);
}
