//===- MuirMoEOps.cpp - verifiers of the MoE layer's ops ------------------===//
//
// Routing, capacity, the grouped products, the loss and the routing's
// gradient: the local checks of each op's verify() (MuirOps.cpp has the
// rest of the dialect's).
//
//===----------------------------------------------------------------------===//
#include "Muir/MuirDialect.h"
#include "Muir/MuirOpsInternal.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace mlir::muir;
using namespace mlir::muir::opcheck;

LogicalResult RouteOp::verify() {
  auto lt = getLogits().getType();
  if (lt.getRank() != 2)
    return emitOpError("expected logits [tokens, experts], got rank ")
           << lt.getRank();
  int64_t tokens = lt.getDimSize(0), experts = lt.getDimSize(1);
  // I64Attr getters read back unsigned; the attributes keep the sign.
  int64_t k = getTopKAttr().getInt();
  int64_t groups = getNGroupAttr().getInt();
  int64_t topkGroup = getTopkGroupAttr().getInt();
  if (experts < 1)
    return emitOpError("expected at least one expert");
  if (k < 1 || k > experts)
    return emitOpError("top_k ")
           << k << " must be in [1, " << experts << "] (the number of experts)";
  if (auto bias = getBias()) {
    auto bt = bias.getType();
    if (bt.getRank() != 1 || bt.getDimSize(0) != experts)
      return emitOpError("expected bias of ")
             << experts << " experts, got " << bt;
  }
  if (groups < 1 || experts % groups != 0)
    return emitOpError("n_group ")
           << groups << " must divide the " << experts << " experts";
  if (topkGroup < 1 || topkGroup > groups)
    return emitOpError("topk_group ")
           << topkGroup << " must be in [1, " << groups << "] (n_group)";
  if (k > topkGroup * (experts / groups))
    return emitOpError("top_k ")
           << k << " exceeds the " << topkGroup * (experts / groups)
           << " experts of the topk_group best groups";
  if (getSoftmaxAfterTopk() && getScoring() != RouteScoring::softmax)
    return emitOpError("softmax_after_topk needs scoring softmax");
  if (!(getScaling().convertToDouble() > 0.0))
    return emitOpError("scaling must be > 0, got ")
           << getScaling().convertToDouble();
  auto expect = [&](Type got, ArrayRef<int64_t> shape, Type element,
                    StringRef what) -> LogicalResult {
    auto want = RankedTensorType::get(shape, element);
    if (got != want)
      return emitOpError("expected ")
             << what << " of type " << want << ", got " << got;
    return success();
  };
  Builder b(getContext());
  if (failed(expect(getIndices().getType(), {tokens, k}, b.getI64Type(),
                    "indices")) ||
      failed(expect(getWeights().getType(), {tokens, k}, b.getF32Type(),
                    "weights")) ||
      failed(
          expect(getCounts().getType(), {experts}, b.getI64Type(), "counts")))
    return failure();
  return success();
}

LogicalResult GroupedMatmulOp::verify() {
  auto it = getInput().getType(), wt = getWeights().getType();
  auto st = getSizes().getType(), rt = getResult().getType();
  if (it.getRank() != 2)
    return emitOpError("expected input rows [R, K], got rank ") << it.getRank();
  if (wt.getRank() != 3)
    return emitOpError("expected one weight matrix per expert [E, K, N], "
                       "got rank ")
           << wt.getRank();
  int64_t experts = wt.getDimSize(0);
  int64_t k = getTransposeB() ? wt.getDimSize(2) : wt.getDimSize(1);
  int64_t n = getTransposeB() ? wt.getDimSize(1) : wt.getDimSize(2);
  if (st.getRank() != 1 || st.getDimSize(0) != experts)
    return emitOpError("expected sizes of the ")
           << experts << " experts, got " << st;
  if (it.getDimSize(1) != k)
    return emitOpError("input rows of ")
           << it.getDimSize(1) << " do not match the experts' " << k
           << " inputs (mismatched hidden sizes)";
  auto want = RankedTensorType::get({it.getDimSize(0), n}, it.getElementType());
  if (rt != want)
    return emitOpError("expected result ") << want << ", got " << rt;
  return success();
}

LogicalResult opcheck::expectType(Operation *op, StringRef what, Type got,
                                  ArrayRef<int64_t> shape, Type element) {
  auto want = RankedTensorType::get(shape, element);
  if (got != want)
    return op->emitOpError("expected ")
           << what << " " << want << ", got " << got;
  return success();
}

LogicalResult GroupedMatmulWgradOp::verify() {
  auto it = getInput().getType(), gt = getGrad().getType();
  auto st = getSizes().getType(), rt = getResult().getType();
  if (it.getRank() != 2 || gt.getRank() != 2)
    return emitOpError("expected input rows [R, K] and gradient rows [R, N], "
                       "got ")
           << it << " and " << gt;
  if (it.getDimSize(0) != gt.getDimSize(0))
    return emitOpError("input has ")
           << it.getDimSize(0) << " rows but the gradient " << gt.getDimSize(0);
  if (st.getRank() != 1)
    return emitOpError("expected sizes [E], got ") << st;
  int64_t e = st.getDimSize(0), k = it.getDimSize(1), n = gt.getDimSize(1);
  SmallVector<int64_t> want = getTransposeB() ? SmallVector<int64_t>{e, n, k}
                                              : SmallVector<int64_t>{e, k, n};
  return expectType(*this, "result", rt, want, it.getElementType());
}

LogicalResult RenumberOp::verify() {
  ArrayRef<int64_t> map = getMap();
  if (map.empty())
    return emitOpError("expected a non-empty map");
  SmallVector<bool> seen(map.size(), false);
  for (auto [i, to] : llvm::enumerate(map)) {
    if (to < 0 || to >= static_cast<int64_t>(map.size()) || seen[to])
      return emitOpError("map must be a permutation of [0, ")
             << map.size() << "); entry " << i << " is " << to;
    seen[to] = true;
  }
  return success();
}

LogicalResult CapacityOp::verify() {
  auto it = getIndices().getType();
  if (it.getRank() != 2)
    return emitOpError("expected indices [tokens, top_k], got ") << it;
  int64_t tokens = it.getDimSize(0), k = it.getDimSize(1);
  int64_t experts = getNumExpertsAttr().getInt();
  if (experts < 1 || k < 1 || k > experts)
    return emitOpError("top_k ")
           << k << " must be in [1, " << experts << "] (the number of "
           << "experts)";
  double cf = getCapacityFactorAttr().getValueAsDouble();
  if (!(cf > 0.0) || !std::isfinite(cf))
    return emitOpError("capacity_factor must be > 0, got ") << cf;
  int64_t group = getGroupTokensAttr().getInt();
  if (group < 0 || (group > 0 && tokens % group != 0))
    return emitOpError("group_tokens ")
           << group << " must be 0 or divide the " << tokens << " tokens";
  if (getTokens() && group != 0)
    return emitOpError("a run-time token count needs group_tokens 0 (the "
                       "block is the first `tokens` rows), got ")
           << group;
  Type f32 = it.getContext() ? Float32Type::get(getContext()) : Type();
  if (failed(expectType(*this, "weights", getWeights().getType(), it.getShape(),
                        f32)) ||
      failed(expectType(*this, "kept_indices", getKeptIndices().getType(),
                        it.getShape(), it.getElementType())) ||
      failed(expectType(*this, "kept_weights", getKeptWeights().getType(),
                        it.getShape(), f32)) ||
      failed(expectType(*this, "counts", getCounts().getType(), {experts},
                        it.getElementType())))
    return failure();
  return success();
}

LogicalResult MseLossOp::verify() {
  return expectType(*this, "loss", getLoss().getType(), {1},
                    getInput().getType().getElementType());
}

LogicalResult RouteGradOp::verify() {
  auto lt = getLogits().getType(), it = getIndices().getType();
  if (lt.getRank() != 2 || it.getRank() != 2 ||
      it.getDimSize(0) != lt.getDimSize(0))
    return emitOpError("expected logits [T, E] and indices [T, K], got ")
           << lt << " and " << it;
  if (it.getDimSize(1) < 1 || it.getDimSize(1) > lt.getDimSize(1))
    return emitOpError("top_k ")
           << it.getDimSize(1) << " must be in [1, " << lt.getDimSize(1)
           << "] (the number of experts)";
  if (getWeightsGrad().getType() !=
      RankedTensorType::get(it.getShape(), lt.getElementType()))
    return emitOpError("expected weights_grad of the indices' shape, got ")
           << getWeightsGrad().getType();
  if (getResult().getType() != lt)
    return emitOpError("expected result ")
           << lt << ", got " << getResult().getType();
  return success();
}
