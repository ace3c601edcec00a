//===- DistributedNewtonSchulz.cpp - Newton-Schulz on a split matrix ------===//
//
// The distributed and resharded modes' Newton-Schulz (DistributeInternal.h):
// a matrix split on one dimension over a group iterated without gathering
// it, its Gram matrix all-reduced every step, or once in the Gram form.
//
//===----------------------------------------------------------------------===//
#include "DistributeInternal.h"
#include "muir/Transforms/GramForm.h"
#include "muir/Transforms/NewtonSchulzSteps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::muir;
using namespace mlir::muir::distribute;

/// The Gram form of distributedNS: each rank's raw Gram matrix over the
/// unsplit dimension (its slice's products summed in f64) is summed over
/// the group once, by packed triangles; its trace is ||X||_F^2, so the
/// normalisation needs no collective of its own. Every rank iterates on
/// the s x s matrices (the same bits everywhere: the sum runs in group-
/// rank order) and multiplies its own slice by s Q.
static Value distributedGramNS(OpBuilder &b, Location loc,
                               OrthogonalizedUpdateInterface op, Value u,
                               const Shard &s, bool syrk) {
  auto type = cast<RankedTensorType>(u.getType());
  int64_t rank = type.getRank();
  bool rowsSplit = s.dim == rank - 2;
  int64_t batch = rank == 3 ? type.getDimSize(0) : 1;
  int64_t g = rowsSplit ? type.getDimSize(rank - 1) : type.getDimSize(rank - 2);
  SmallVector<int64_t> gramShape(type.getShape());
  gramShape[rank - 2] = g;
  gramShape[rank - 1] = g;
  Type f64 = b.getF64Type();
  auto gram64 = RankedTensorType::get(gramShape, f64);
  auto gram32 = RankedTensorType::get(gramShape, type.getElementType());
  auto num = [&](double v) { return b.getF64FloatAttr(v); };
  UnitAttr no, yes = b.getUnitAttr();
  // The GEMM of an f64 copy when SYRK is off, as on one rank.
  Value local;
  if (syrk) {
    local = SyrkOp::create(b, loc, gram64, u, Value(), num(1.0), num(0.0),
                           rowsSplit ? yes : no);
  } else {
    Value ud = arith::ExtFOp::create(
        b, loc, RankedTensorType::get(type.getShape(), f64), u);
    local =
        MatmulOp::create(b, loc, gram64, ud, ud, Value(), num(1.0), num(0.0),
                         rowsSplit ? yes : no, rowsSplit ? no : yes);
  }
  Value a = SymmetricAllReduceOp::create(b, loc, gram64, s.gridRef(),
                                         b.getStrArrayAttr({s.axis}), local);
  auto norm = TraceNormalizeOp::create(
      b, loc, gram64, RankedTensorType::get({batch}, f64), a, op.getEpsAttr());
  int64_t steps = op.getNsStepsAttr().getInt();
  Value q = buildGramIteration(
      b, loc, norm.getResult(),
      resolveTable(op.getScheduleAttr().getValue(), coefficientsOf(op), steps),
      steps, syrk);
  Value qf = ScaleMatricesOp::create(b, loc, gram32, q, norm.getScale());
  return rowsSplit ? MatmulOp::create(b, loc, type, u, qf, Value(), num(1.0),
                                      num(0.0), no, no)
                   : MatmulOp::create(b, loc, type, qf, u, Value(), num(1.0),
                                      num(0.0), no, no);
}

Value distribute::distributedNS(OpBuilder &b, Location loc,
                                OrthogonalizedUpdateInterface op, Value u,
                                const Shard &s, bool gram, bool syrk) {
  auto type = cast<RankedTensorType>(u.getType());
  int64_t rank = type.getRank();
  bool rowsSplit = s.dim == rank - 2;
  Type f32 = type.getElementType();
  int64_t batch = rank == 3 ? type.getDimSize(0) : 1;
  auto ssType = RankedTensorType::get({batch}, f32);
  ArrayAttr axes = b.getStrArrayAttr({s.axis});
  if (gram)
    return distributedGramNS(b, loc, op, u, s, syrk);
  Value ss = SumSquaresOp::create(b, loc, ssType, u);
  ss = AllReduceOp::create(
      b, loc, ssType, s.gridRef(), axes, ss,
      ReductionKindAttr::get(b.getContext(), ReductionKind::sum));
  Value x = ScaleByNormOp::create(b, loc, u, ss, op.getEpsAttr());
  int64_t g = rowsSplit ? type.getDimSize(rank - 1) : type.getDimSize(rank - 2);
  SmallVector<int64_t> gramShape(type.getShape());
  gramShape[rank - 2] = g;
  gramShape[rank - 1] = g;
  auto gramType = RankedTensorType::get(gramShape, f32);
  auto f64 = [&](double v) { return b.getF64FloatAttr(v); };
  UnitAttr no, yes = b.getUnitAttr();
  int64_t steps = op.getNsStepsAttr().getInt();
  NSCoefficients table(
      b, loc,
      resolveTable(op.getScheduleAttr().getValue(), coefficientsOf(op), steps));
  x = buildStepLoop(
      b, loc, 0, steps, x,
      [&](OpBuilder &nb, Location nl, Value k, ValueRange carried) {
        Value xk = carried[0];
        auto [ca, cb, cc] = table.at(nb, nl, k);
        Value local = MatmulOp::create(nb, nl, gramType, xk, xk, Value(),
                                       f64(1.0), f64(0.0), rowsSplit ? yes : no,
                                       rowsSplit ? no : yes);
        Value gram = AllReduceOp::create(
            nb, nl, gramType, s.gridRef(), axes, local,
            ReductionKindAttr::get(nb.getContext(), ReductionKind::sum));
        Value bm = MatmulOp::create(nb, nl, gramType, gram, gram, gram, cc, cb,
                                    f64(1.0), f64(0.0), no, no, no);
        Value next = rowsSplit
                         ? MatmulOp::create(nb, nl, type, xk, bm, xk, Value(),
                                            ca, f64(1.0), f64(0.0), no, no, no)
                         : MatmulOp::create(nb, nl, type, bm, xk, xk, Value(),
                                            ca, f64(1.0), f64(0.0), no, no, no);
        return SmallVector<Value>{next};
      })[0];
  return x;
}
