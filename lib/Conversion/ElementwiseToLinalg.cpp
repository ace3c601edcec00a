//===- ElementwiseToLinalg.cpp - muir's element-wise ops as linalg --------===//
//
// The optimizer's element-wise math (momentum, the Muon update, AdamW) and
// the MoE layer's (add, SwiGLU and its gradient, the Gram form's diagonal
// shift) become linalg.generic ops on tensors: identity maps, parallel
// iterators, inits that are never read. linalg's tensor-level transforms
// (element-wise fusion, tiling) then apply to them, and muir-lower-to-exec
// bufferizes one kind of element-wise op instead of one per muir op.
// Whole-tensor precision changes (arith.extf / arith.truncf on tensors) take
// upstream's element-wise-to-linalg patterns.
//
// Scalars a kernel shares (the learning rate times a scale, AdamW's bias
// corrections) are computed once before the generic, in f64, and rounded to
// f32 once, so a run-time hyperparameter gives bitwise what the same
// constant does.
//
//===----------------------------------------------------------------------===//
#include "muir/Conversion/Passes.h"
#include "muir/Transforms/PassInput.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

#include <tuple>

namespace mlir::muir {
#define GEN_PASS_DEF_MUIRELEMENTWISETOLINALG
#include "muir/Conversion/Passes.h.inc"
} // namespace mlir::muir

using namespace mlir;
using namespace mlir::muir;

namespace {

using Body =
    function_ref<SmallVector<Value>(OpBuilder &, Location, ValueRange)>;

/// Replaces `op` by a linalg.generic that reads `ins` element by element and
/// yields body(elements), one value per result of `op`.
void replaceByGeneric(PatternRewriter &rw, Operation *op, ValueRange ins,
                      Body body) {
  Location loc = op->getLoc();
  SmallVector<Value> inits;
  for (Type t : op->getResultTypes()) {
    auto tensor = cast<RankedTensorType>(t);
    inits.push_back(tensor::EmptyOp::create(rw, loc, tensor.getShape(),
                                            tensor.getElementType()));
  }
  int64_t rank = cast<RankedTensorType>(op->getResultTypes()[0]).getRank();
  AffineMap id = rw.getMultiDimIdentityMap(rank);
  SmallVector<AffineMap> maps(ins.size() + inits.size(), id);
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      rw, loc, op->getResultTypes(), ins, inits, maps, iters,
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        linalg::YieldOp::create(nb, nl, body(nb, nl, args));
      });
  rw.replaceOp(op, generic.getResults());
}

Value f32(OpBuilder &b, Location loc, double v) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
}
Value f64(OpBuilder &b, Location loc, double v) {
  return arith::ConstantOp::create(b, loc, b.getF64FloatAttr(v));
}
double value(FloatAttr a) { return a.getValueAsDouble(); }

/// The constant v in the element type `t` (f32: rounded once from f64).
Value constant(OpBuilder &b, Location loc, Type t, double v) {
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(t, v));
}
/// An f64 value in the element type `t`: rounded once for f32, as it is
/// for f64.
Value narrowed(OpBuilder &b, Location loc, Type t, Value x) {
  if (t.isF64())
    return x;
  return arith::TruncFOp::create(b, loc, t, x);
}
/// The element type of an op's first operand (the update's tensors are of
/// one type: f32, or f64 computed in f64 throughout).
Type elementOf(Operation *op) {
  return cast<RankedTensorType>(op->getOperand(0).getType()).getElementType();
}

/// An update's learning rate (f64) and its decay factor 1 - lr * wd (in
/// the element type `t`, rounded once for f32): from the run-time
/// `hyper(lr, wd)` operands where the op has them, else from its
/// attributes.
struct Hyper {
  Hyper(OpBuilder &b, Location loc, Type t, ValueRange operands,
        FloatAttr lrAttr, FloatAttr wdAttr)
      : b(b), loc(loc), t(t) {
    if (operands.empty()) {
      lr = f64(b, loc, value(lrAttr));
      decay = constant(b, loc, t, 1.0 - value(lrAttr) * value(wdAttr));
      return;
    }
    lr = operands[0];
    decay = narrowed(
        b, loc, t,
        arith::SubFOp::create(b, loc, f64(b, loc, 1.0),
                              arith::MulFOp::create(b, loc, lr, operands[1])));
  }
  /// lr * factor in the element type.
  Value times(double factor) {
    if (auto c = lr.getDefiningOp<arith::ConstantOp>())
      return constant(
          b, loc, t, cast<FloatAttr>(c.getValue()).getValueAsDouble() * factor);
    return narrowed(b, loc, t,
                    arith::MulFOp::create(b, loc, lr, f64(b, loc, factor)));
  }

  OpBuilder &b;
  Location loc;
  Type t;
  Value lr, decay;
};

// One `lower` overload per op; ToLinalg<Op> applies it.

/// An update's results where it takes part: with a run-time `take` flag,
/// each computed value where the flag is true, else the value it replaces
/// (the same bits), in the kernel: no copy of the old tensor is needed.
SmallVector<Value> unlessSkipped(OpBuilder &b, Location loc, Value take,
                                 SmallVector<Value> computed,
                                 ArrayRef<Value> kept) {
  if (!take)
    return computed;
  for (auto [value, old] : llvm::zip(computed, kept))
    value = arith::SelectOp::create(b, loc, take, value, old);
  return computed;
}

/// A coefficient c (f64, from the run-time operand `v` where there is one,
/// else the attribute's value) as c and 1 - c in the element type `t`,
/// each rounded once from f64 for f32: the same bits as the constants.
std::pair<Value, Value> withComplement(OpBuilder &b, Location loc, Type t,
                                       Value v, FloatAttr attr) {
  if (!v)
    return {constant(b, loc, t, value(attr)),
            constant(b, loc, t, 1.0 - value(attr))};
  return {narrowed(b, loc, t, v),
          narrowed(b, loc, t,
                   arith::SubFOp::create(b, loc, f64(b, loc, 1.0), v))};
}

LogicalResult lower(MomentumOp op, PatternRewriter &rw) {
  bool ema = op.getMomentumKind() == MomentumKind::ema;
  bool nesterov = op.getNesterov();
  Type t = elementOf(op);
  Value cBeta, cOneMinus;
  std::tie(cBeta, cOneMinus) = withComplement(
      rw, op.getLoc(), t, op.getBetaValue(), op.getBetaAttr());
  replaceByGeneric(
      rw, op, {op.getGrad(), op.getMomentumBuffer()},
      [&](OpBuilder &nb, Location nl, ValueRange a) {
        Value g = a[0], old = a[1];
        // ema: M' = beta M + (1 - beta) G; accumulate: beta M + G.
        Value gTerm =
            ema ? arith::MulFOp::create(nb, nl, cOneMinus, g).getResult() : g;
        Value newM = arith::AddFOp::create(
            nb, nl, arith::MulFOp::create(nb, nl, cBeta, old), gTerm);
        Value upd = newM;
        if (nesterov)
          upd = arith::AddFOp::create(
              nb, nl, gTerm, arith::MulFOp::create(nb, nl, cBeta, newM));
        // Skipped: U = 0 (its Newton-Schulz stays finite), M' = M.
        return unlessSkipped(nb, nl, op.getTake(), {upd, newM},
                             {op.getTake() ? constant(nb, nl, t, 0.0) : Value(),
                              old});
      });
  return success();
}

LogicalResult lower(ApplyUpdateOp op, PatternRewriter &rw) {
  Hyper h(rw, op.getLoc(), elementOf(op), op.getHyper(), op.getLrAttr(),
          op.getWeightDecayAttr());
  Value decay = h.decay;
  Value step = h.times(value(op.getScaleAttr()));
  replaceByGeneric(rw, op, {op.getParam(), op.getUpdate()},
                   [&](OpBuilder &nb, Location nl, ValueRange a) {
                     Value kept = arith::MulFOp::create(nb, nl, a[0], decay);
                     Value delta = arith::MulFOp::create(nb, nl, step, a[1]);
                     return unlessSkipped(
                         nb, nl, op.getTake(),
                         {arith::SubFOp::create(nb, nl, kept, delta)}, {a[0]});
                   });
  return success();
}

LogicalResult lower(AdamWUpdateOp op, PatternRewriter &rw) {
  Location loc = op.getLoc();
  ValueRange hyper = op.getHyper();
  Type elt = elementOf(op);
  Hyper h(rw, loc, elt, hyper.take_front(std::min<size_t>(hyper.size(), 2)),
          op.getLrAttr(), op.getWeightDecayAttr());
  // beta1, beta2 and eps: run-time operands (hyper's last three) or the
  // attributes.
  bool runTime = hyper.size() == 5;
  Value beta1 = runTime ? hyper[2] : f64(rw, loc, value(op.getBeta1Attr()));
  Value beta2 = runTime ? hyper[3] : f64(rw, loc, value(op.getBeta2Attr()));
  // Bias corrections from the run-time step t, in f64:
  // step_size = lr / (1 - beta1^t), bc2_sqrt = sqrt(1 - beta2^t).
  Value t = arith::SIToFPOp::create(rw, loc, rw.getF64Type(), op.getStep());
  Value one = f64(rw, loc, 1.0);
  Value bc1 = arith::SubFOp::create(
      rw, loc, one, math::PowFOp::create(rw, loc, beta1, t));
  Value bc2 = arith::SubFOp::create(
      rw, loc, one, math::PowFOp::create(rw, loc, beta2, t));
  Value stepSize =
      narrowed(rw, loc, elt, arith::DivFOp::create(rw, loc, h.lr, bc1));
  Value bc2Sqrt =
      narrowed(rw, loc, elt, math::SqrtOp::create(rw, loc, bc2));
  Value decay = h.decay;
  Value cB1, c1mB1;
  std::tie(cB1, c1mB1) = withComplement(
      rw, loc, elt, runTime ? hyper[2] : Value(), op.getBeta1Attr());
  Value cB2, c1mB2;
  std::tie(cB2, c1mB2) = withComplement(
      rw, loc, elt, runTime ? hyper[3] : Value(), op.getBeta2Attr());
  Value eps = runTime ? narrowed(rw, loc, elt, hyper[4])
                      : constant(rw, loc, elt, value(op.getEpsAttr()));
  replaceByGeneric(
      rw, op,
      {op.getParam(), op.getGrad(), op.getExpAvg(), op.getExpAvgSq()},
      [&](OpBuilder &nb, Location nl, ValueRange a) {
        auto mul = [&](Value x, Value y) {
          return arith::MulFOp::create(nb, nl, x, y).getResult();
        };
        auto add = [&](Value x, Value y) {
          return arith::AddFOp::create(nb, nl, x, y).getResult();
        };
        // One statement per op: the IR's order does not depend on the
        // order a compiler evaluates function arguments in.
        Value g = a[1];
        Value keptM = mul(cB1, a[2]);
        Value newM = add(keptM, mul(c1mB1, g));
        Value keptV = mul(cB2, a[3]);
        Value g2 = mul(g, g);
        Value newV = add(keptV, mul(c1mB2, g2));
        Value root = math::SqrtOp::create(nb, nl, newV);
        Value denom =
            add(arith::DivFOp::create(nb, nl, root, bc2Sqrt), eps);
        Value ratio = arith::DivFOp::create(nb, nl, newM, denom);
        Value kept = mul(a[0], decay);
        Value newP =
            arith::SubFOp::create(nb, nl, kept, mul(stepSize, ratio));
        return unlessSkipped(nb, nl, op.getTake(), {newP, newM, newV},
                             {a[0], a[2], a[3]});
      });
  return success();
}

/// The map of a per-row vector ([m] or [B, m]) in the loops of its
/// matrix: every dimension but the last.
AffineMap rowsMap(OpBuilder &b, int64_t rank) {
  SmallVector<AffineExpr> dims;
  for (int64_t d = 0; d + 1 < rank; ++d)
    dims.push_back(b.getAffineDimExpr(d));
  return AffineMap::get(rank, 0, dims, b.getContext());
}

/// s_i = sum over the columns j, in order, of x_ij * x_ij (in the element
/// type: f32, or f64 for an f64 parameter).
LogicalResult lower(RowSumSquaresOp op, PatternRewriter &rw) {
  Location loc = op.getLoc();
  auto in = op.getInput().getType();
  auto out = op.getResult().getType();
  int64_t rank = in.getRank();
  Value empty = tensor::EmptyOp::create(rw, loc, out.getShape(),
                                        out.getElementType());
  Value zero =
      linalg::FillOp::create(rw, loc, constant(rw, loc, out.getElementType(),
                                               0.0),
                             empty)
          .getResult(0);
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  iters.back() = utils::IteratorType::reduction;
  auto generic = linalg::GenericOp::create(
      rw, loc, TypeRange{out}, ValueRange{op.getInput()}, ValueRange{zero},
      ArrayRef<AffineMap>{rw.getMultiDimIdentityMap(rank), rowsMap(rw, rank)},
      iters, [&](OpBuilder &nb, Location nl, ValueRange a) {
        Value sq = arith::MulFOp::create(nb, nl, a[0], a[0]);
        Value sum = arith::AddFOp::create(nb, nl, a[1], sq);
        linalg::YieldOp::create(nb, nl, sum);
      });
  rw.replaceOp(op, generic.getResults());
  return success();
}

/// v' = beta2 v + (1 - beta2) (s / columns) per row, then
/// P = O / (sqrt(v') + eps2) with each row's v'.
LogicalResult lower(NorMuonNormalizeOp op, PatternRewriter &rw) {
  Location loc = op.getLoc();
  auto in = op.getInput().getType();
  auto rows = op.getVariance().getType();
  Type t = in.getElementType();
  int64_t rank = in.getRank();
  Value cB2, c1mB2;
  std::tie(cB2, c1mB2) = withComplement(rw, loc, t, Value(), op.getBeta2Attr());
  Value columns =
      constant(rw, loc, t, static_cast<double>(op.getColumns()));
  Value eps2 = constant(rw, loc, t, value(op.getEps2Attr()));
  Value take = op.getTake();
  Value vEmpty = tensor::EmptyOp::create(rw, loc, rows.getShape(), t);
  AffineMap rowId = rw.getMultiDimIdentityMap(rank - 1);
  auto newV = linalg::GenericOp::create(
      rw, loc, TypeRange{rows}, ValueRange{op.getRowSums(), op.getVariance()},
      ValueRange{vEmpty}, ArrayRef<AffineMap>{rowId, rowId, rowId},
      SmallVector<utils::IteratorType>(rank - 1,
                                       utils::IteratorType::parallel),
      [&](OpBuilder &nb, Location nl, ValueRange a) {
        Value mean = arith::DivFOp::create(nb, nl, a[0], columns);
        Value kept = arith::MulFOp::create(nb, nl, cB2, a[1]);
        Value added = arith::MulFOp::create(nb, nl, c1mB2, mean);
        Value v = arith::AddFOp::create(nb, nl, kept, added);
        linalg::YieldOp::create(nb, nl,
                                unlessSkipped(nb, nl, take, {v}, {a[1]}));
      });
  Value pEmpty = tensor::EmptyOp::create(rw, loc, in.getShape(), t);
  auto p = linalg::GenericOp::create(
      rw, loc, TypeRange{in}, ValueRange{op.getInput(), newV.getResult(0)},
      ValueRange{pEmpty},
      ArrayRef<AffineMap>{rw.getMultiDimIdentityMap(rank), rowsMap(rw, rank),
                          rw.getMultiDimIdentityMap(rank)},
      SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
      [&](OpBuilder &nb, Location nl, ValueRange a) {
        Value root = math::SqrtOp::create(nb, nl, a[1]);
        Value denom = arith::AddFOp::create(nb, nl, root, eps2);
        Value x = arith::DivFOp::create(nb, nl, a[0], denom);
        linalg::YieldOp::create(nb, nl, x);
      });
  rw.replaceOp(op, {p.getResult(0), newV.getResult(0)});
  return success();
}

/// The map of a per-matrix value in the loops of its matrix: [B] for a
/// stack [B, m, n], a scalar (rank 0) for a matrix.
AffineMap matrixMap(OpBuilder &b, int64_t rank) {
  if (rank == 3)
    return AffineMap::get(3, 0, {b.getAffineDimExpr(0)}, b.getContext());
  return AffineMap::get(rank, 0, {}, b.getContext());
}

/// A per-matrix vector ([B], or [1] for a matrix) in matrixMap's shape:
/// the [1] of a matrix as a scalar.
Value perMatrix(PatternRewriter &rw, Location loc, Value v, int64_t rank) {
  if (rank == 3)
    return v;
  auto t = cast<RankedTensorType>(v.getType());
  return tensor::CollapseShapeOp::create(
      rw, loc, RankedTensorType::get({}, t.getElementType()), v,
      ArrayRef<ReassociationIndices>{});
}

/// An f64 matrix's (each of a stack's) sum of squares, in f64, its
/// elements in order: a generated loop nest. f32 inputs are left to the
/// runtime's double sum (muir_exec.sum_squares).
LogicalResult lower(SumSquaresOp op, PatternRewriter &rw) {
  Type t = elementOf(op);
  if (!t.isF64())
    return failure();
  Location loc = op.getLoc();
  int64_t rank = op.getInput().getType().getRank();
  auto out = op.getResult().getType();
  SmallVector<int64_t> accShape;
  if (rank == 3)
    accShape.push_back(out.getDimSize(0));
  Value zero =
      linalg::FillOp::create(
          rw, loc, constant(rw, loc, t, 0.0),
          Value(tensor::EmptyOp::create(rw, loc, accShape, t)))
          .getResult(0);
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::reduction);
  if (rank == 3)
    iters.front() = utils::IteratorType::parallel;
  auto generic = linalg::GenericOp::create(
      rw, loc, TypeRange{zero.getType()}, ValueRange{op.getInput()},
      ValueRange{zero},
      ArrayRef<AffineMap>{rw.getMultiDimIdentityMap(rank),
                          matrixMap(rw, rank)},
      iters, [&](OpBuilder &nb, Location nl, ValueRange a) {
        Value sq = arith::MulFOp::create(nb, nl, a[0], a[0]);
        linalg::YieldOp::create(
            nb, nl, Value(arith::AddFOp::create(nb, nl, a[1], sq)));
      });
  Value sums = generic.getResult(0);
  if (rank != 3)
    sums = tensor::ExpandShapeOp::create(rw, loc, out, sums,
                                         ArrayRef<ReassociationIndices>{});
  rw.replaceOp(op, sums);
  return success();
}

/// out = in * (1 / (sqrt(ss) + eps)) per matrix for f64 (the arithmetic of
/// muirrt_frobenius_normalize_f64): a generated kernel. f32 is the
/// runtime's (muir_exec.scale_by_norm).
LogicalResult lower(ScaleByNormOp op, PatternRewriter &rw) {
  Type t = elementOf(op);
  if (!t.isF64())
    return failure();
  Location loc = op.getLoc();
  auto in = op.getInput().getType();
  int64_t rank = in.getRank();
  Value ss = perMatrix(rw, loc, op.getSumSquares(), rank);
  auto ssType = cast<RankedTensorType>(ss.getType());
  Value one = constant(rw, loc, t, 1.0);
  Value eps = constant(rw, loc, t, value(op.getEpsAttr()));
  AffineMap ssId = rw.getMultiDimIdentityMap(ssType.getRank());
  auto scale = linalg::GenericOp::create(
      rw, loc, TypeRange{ssType}, ValueRange{ss},
      ValueRange{Value(
          tensor::EmptyOp::create(rw, loc, ssType.getShape(), t))},
      ArrayRef<AffineMap>{ssId, ssId},
      SmallVector<utils::IteratorType>(ssType.getRank(),
                                       utils::IteratorType::parallel),
      [&](OpBuilder &nb, Location nl, ValueRange a) {
        Value root = math::SqrtOp::create(nb, nl, a[0]);
        Value denom = arith::AddFOp::create(nb, nl, root, eps);
        linalg::YieldOp::create(
            nb, nl, Value(arith::DivFOp::create(nb, nl, one, denom)));
      });
  auto scaled = linalg::GenericOp::create(
      rw, loc, TypeRange{in}, ValueRange{op.getInput(), scale.getResult(0)},
      ValueRange{Value(tensor::EmptyOp::create(rw, loc, in.getShape(), t))},
      ArrayRef<AffineMap>{rw.getMultiDimIdentityMap(rank),
                          matrixMap(rw, rank),
                          rw.getMultiDimIdentityMap(rank)},
      SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
      [&](OpBuilder &nb, Location nl, ValueRange a) {
        linalg::YieldOp::create(
            nb, nl, Value(arith::MulFOp::create(nb, nl, a[0], a[1])));
      });
  rw.replaceOp(op, scaled.getResults());
  return success();
}

/// MuonClip's QK-clip: per row head j, s_j = sqrt(min over its group of
/// gamma_i) with gamma_i = x_i > tau ? tau / x_i : 1 (s = 1 when skipped),
/// then each row of head j times s_j. The heads' factors are computed once
/// each, their square roots once per row; the rows are scaled in place.
LogicalResult lower(QkClipOp op, PatternRewriter &rw) {
  Location loc = op.getLoc();
  auto w = op.getParam().getType();
  Type t = w.getElementType();
  int64_t headRows = op.getHeadRows(), group = op.getGroup();
  int64_t heads = w.getDimSize(0) / headRows;
  MLIRContext *ctx = rw.getContext();
  auto d = [&](unsigned i) { return rw.getAffineDimExpr(i); };
  auto parallel = utils::IteratorType::parallel;
  Value one = constant(rw, loc, t, 1.0);
  Value tau = constant(rw, loc, t, value(op.getTauAttr()));
  // The smallest gamma of each head's group of query heads (the logits
  // are f32; an f64 parameter's factors are computed in f64).
  auto headsType = RankedTensorType::get({heads}, t);
  Type logitType = op.getMaxLogits().getType().getElementType();
  Value grouped = tensor::ExpandShapeOp::create(
      rw, loc, RankedTensorType::get({heads, group}, logitType),
      op.getMaxLogits(), ArrayRef<ReassociationIndices>{{0, 1}});
  Value ones =
      linalg::FillOp::create(
          rw, loc, one,
          Value(tensor::EmptyOp::create(rw, loc, headsType.getShape(), t)))
          .getResult(0);
  auto minGamma = linalg::GenericOp::create(
      rw, loc, TypeRange{headsType}, ValueRange{grouped}, ValueRange{ones},
      ArrayRef<AffineMap>{rw.getMultiDimIdentityMap(2),
                          AffineMap::get(2, 0, {d(0)}, ctx)},
      {parallel, utils::IteratorType::reduction},
      [&](OpBuilder &nb, Location nl, ValueRange a) {
        Value logit = a[0];
        if (logitType != t)
          logit = arith::ExtFOp::create(nb, nl, t, logit);
        Value over = arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OGT,
                                           logit, tau);
        Value ratio = arith::DivFOp::create(nb, nl, tau, logit);
        Value gamma = arith::SelectOp::create(nb, nl, over, ratio, one);
        linalg::YieldOp::create(
            nb, nl, Value(arith::MinimumFOp::create(nb, nl, a[1], gamma)));
      });
  // Each row's factor, s_j = sqrt(min gamma) for the head_rows rows of
  // head j (1 when skipped), then each row times its factor in place: the
  // matrix is the generic's destination, so that the updated parameter's
  // buffer is scaled where it is instead of copied into a new one.
  int64_t m = heads * headRows;
  auto perRow = linalg::GenericOp::create(
      rw, loc, TypeRange{RankedTensorType::get({heads, headRows}, t)},
      ValueRange{minGamma.getResult(0)},
      ValueRange{Value(tensor::EmptyOp::create(
          rw, loc, ArrayRef<int64_t>{heads, headRows}, t))},
      ArrayRef<AffineMap>{AffineMap::get(2, 0, {d(0)}, ctx),
                          rw.getMultiDimIdentityMap(2)},
      {parallel, parallel}, [&](OpBuilder &nb, Location nl, ValueRange a) {
        Value root = math::SqrtOp::create(nb, nl, a[0]);
        linalg::YieldOp::create(
            nb, nl, unlessSkipped(nb, nl, op.getTake(), {root}, {one}));
      });
  Value rowScale = tensor::CollapseShapeOp::create(
      rw, loc, RankedTensorType::get({m}, t), perRow.getResult(0),
      ArrayRef<ReassociationIndices>{{0, 1}});
  AffineMap id2 = rw.getMultiDimIdentityMap(2);
  auto clipped = linalg::GenericOp::create(
      rw, loc, TypeRange{w}, ValueRange{rowScale}, ValueRange{op.getParam()},
      ArrayRef<AffineMap>{AffineMap::get(2, 0, {d(0)}, ctx), id2},
      {parallel, parallel}, [&](OpBuilder &nb, Location nl, ValueRange a) {
        linalg::YieldOp::create(
            nb, nl, Value(arith::MulFOp::create(nb, nl, a[1], a[0])));
      });
  rw.replaceOp(op, clipped.getResults());
  return success();
}

/// Element-wise with the element's indices: row == column gains value.
LogicalResult lower(AddDiagonalOp op, PatternRewriter &rw) {
  int64_t rank = op.getType().getRank();
  Type element = op.getType().getElementType();
  // A value known only at run time is converted once, outside the kernel.
  Value shift = op.getValueOperand();
  if (shift && !element.isF64())
    shift = arith::TruncFOp::create(rw, op.getLoc(), element, shift);
  replaceByGeneric(rw, op, {op.getInput()},
                   [&](OpBuilder &nb, Location nl, ValueRange a) {
                     Value r = linalg::IndexOp::create(nb, nl, rank - 2);
                     Value c = linalg::IndexOp::create(nb, nl, rank - 1);
                     Value onDiagonal = arith::CmpIOp::create(
                         nb, nl, arith::CmpIPredicate::eq, r, c);
                     Value v = shift ? shift
                                     : Value(arith::ConstantOp::create(
                                           nb, nl,
                                           FloatAttr::get(
                                               a[0].getType(),
                                               value(op.getValueAttr()))));
                     Value sum = arith::AddFOp::create(nb, nl, a[0], v);
                     return SmallVector<Value>{arith::SelectOp::create(
                         nb, nl, onDiagonal, sum, a[0])};
                   });
  return success();
}

LogicalResult lower(SwigluOp op, PatternRewriter &rw) {
  Value one = f32(rw, op.getLoc(), 1.0);
  replaceByGeneric(rw, op, {op.getGate(), op.getUp()},
                   [&](OpBuilder &nb, Location nl, ValueRange a) {
                     // g / (1 + exp(-g)) * u
                     Value neg = arith::NegFOp::create(nb, nl, a[0]);
                     Value den = arith::AddFOp::create(
                         nb, nl, one, math::ExpOp::create(nb, nl, neg));
                     Value silu = arith::DivFOp::create(nb, nl, a[0], den);
                     return SmallVector<Value>{
                         arith::MulFOp::create(nb, nl, silu, a[1])};
                   });
  return success();
}

LogicalResult lower(SwigluGradOp op, PatternRewriter &rw) {
  Value one = f32(rw, op.getLoc(), 1.0);
  replaceByGeneric(
      rw, op, {op.getGate(), op.getUp(), op.getGrad()},
      [&](OpBuilder &nb, Location nl, ValueRange a) {
        // s = sigmoid(g); d_up = dy g s; d_gate = dy u s (1 + g (1 - s))
        Value neg = arith::NegFOp::create(nb, nl, a[0]);
        Value den = arith::AddFOp::create(nb, nl, one,
                                          math::ExpOp::create(nb, nl, neg));
        Value sig = arith::DivFOp::create(nb, nl, one, den);
        Value silu = arith::MulFOp::create(nb, nl, a[0], sig);
        Value dup = arith::MulFOp::create(nb, nl, a[2], silu);
        Value oneMinus = arith::SubFOp::create(nb, nl, one, sig);
        Value inner = arith::AddFOp::create(
            nb, nl, one, arith::MulFOp::create(nb, nl, a[0], oneMinus));
        Value dyu = arith::MulFOp::create(nb, nl, a[2], a[1]);
        Value dgate = arith::MulFOp::create(
            nb, nl, arith::MulFOp::create(nb, nl, dyu, sig), inner);
        return SmallVector<Value>{dgate, dup};
      });
  return success();
}

LogicalResult lower(AddOp op, PatternRewriter &rw) {
  replaceByGeneric(rw, op, {op.getLhs(), op.getRhs()},
                   [&](OpBuilder &nb, Location nl, ValueRange a) {
                     return SmallVector<Value>{
                         arith::AddFOp::create(nb, nl, a[0], a[1])};
                   });
  return success();
}

/// A select per index the map moves: indices it keeps, and those outside
/// it (-1), stay.
LogicalResult lower(RenumberOp op, PatternRewriter &rw) {
  ArrayRef<int64_t> map = op.getMap();
  replaceByGeneric(
      rw, op, {op.getIndices()}, [&](OpBuilder &nb, Location nl, ValueRange a) {
        Value out = a[0];
        Type i64 = a[0].getType();
        for (auto [from, to] : llvm::enumerate(map)) {
          if (static_cast<int64_t>(from) == to)
            continue;
          Value is = arith::CmpIOp::create(
              nb, nl, arith::CmpIPredicate::eq, a[0],
              arith::ConstantOp::create(nb, nl, nb.getIntegerAttr(i64, from)));
          out = arith::SelectOp::create(
              nb, nl, is,
              arith::ConstantOp::create(nb, nl, nb.getIntegerAttr(i64, to)),
              out);
        }
        return SmallVector<Value>{out};
      });
  return success();
}

template <typename OpT>
struct ToLinalg : OpRewritePattern<OpT> {
  using OpRewritePattern<OpT>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpT op,
                                PatternRewriter &rewriter) const override {
    return lower(op, rewriter);
  }
};

struct ElementwiseToLinalgPass
    : public mlir::muir::impl::MuirElementwiseToLinalgBase<
          ElementwiseToLinalgPass> {
  void runOnOperation() override {
    if (failed(checkPassInput(getOperation(), getArgument(),
                              PassInput::Tensors)))
      return signalPassFailure();
    applyElementwiseToLinalg(getOperation());
  }
};

} // namespace

void mlir::muir::populateElementwiseToLinalgPatterns(
    RewritePatternSet &patterns) {
  patterns.add<ToLinalg<MomentumOp>, ToLinalg<ApplyUpdateOp>,
               ToLinalg<AdamWUpdateOp>, ToLinalg<AddDiagonalOp>,
               ToLinalg<SwigluOp>, ToLinalg<SwigluGradOp>, ToLinalg<AddOp>,
               ToLinalg<RenumberOp>,
               ToLinalg<RowSumSquaresOp>, ToLinalg<NorMuonNormalizeOp>,
               ToLinalg<QkClipOp>, ToLinalg<SumSquaresOp>,
               ToLinalg<ScaleByNormOp>>(
      patterns.getContext());
  linalg::populateElementwiseToLinalgConversionPatterns(patterns);
}

void mlir::muir::applyElementwiseToLinalg(Operation *root) {
  RewritePatternSet patterns(root->getContext());
  populateElementwiseToLinalgPatterns(patterns);
  // One walk, these rewrites only: no folding or dead-code removal, so the
  // rest of the step stays as it was.
  walkAndApplyPatterns(root, std::move(patterns));
}
