//===- ExpandNewtonSchulz.cpp - Newton-Schulz as matmuls ------------------===//
//
// X <- X / (||X|| + eps); iterate on the wide orientation (transposing tall
// matrices) so that the Gram matrix A = X X^T is min(m, n) square; each step
// is three products: A = X X^T, B = b A + c A A, X' = a X + B X.
//
//===----------------------------------------------------------------------===//
#include "muir/Passes.h"

namespace mlir::muir {
#define GEN_PASS_DEF_MUIREXPANDNEWTONSCHULZ
#include "muir/Passes.h.inc"
} // namespace mlir::muir

using namespace mlir;
using namespace mlir::muir;

namespace {

RankedTensorType withLastTwo(RankedTensorType t, int64_t r, int64_t c) {
  SmallVector<int64_t> shape(t.getShape());
  shape[shape.size() - 2] = r;
  shape[shape.size() - 1] = c;
  return RankedTensorType::get(shape, t.getElementType());
}

Value expand(OpBuilder &b, NewtonSchulzOp op) {
  Location loc = op.getLoc();
  auto type = op.getInput().getType();
  int64_t rank = type.getRank();
  int64_t m = type.getDimSize(rank - 2), n = type.getDimSize(rank - 1);
  bool tall = m > n;
  int64_t r = std::min(m, n), c = std::max(m, n);

  Value x = FrobeniusNormalizeOp::create(b, loc, type, op.getInput(),
                                         op.getEpsAttr());
  auto wide = withLastTwo(type, r, c);
  if (tall)
    x = TransposeOp::create(b, loc, wide, x);
  auto gram = withLastTwo(type, r, r);
  auto f64 = [&](double v) { return b.getF64FloatAttr(v); };
  UnitAttr no, yes = b.getUnitAttr();
  for (auto [ca, cb, cc] : op.getStepCoefficients()) {
    Value a = MatmulOp::create(b, loc, gram, x, x, Value(), f64(1.0),
                               f64(0.0), /*transpose_a=*/no,
                               /*transpose_b=*/yes);
    Value bm = MatmulOp::create(b, loc, gram, a, a, a, f64(cc), f64(cb),
                                no, no);
    x = MatmulOp::create(b, loc, wide, bm, x, x, f64(1.0), f64(ca), no,
                         no);
  }
  if (tall)
    x = TransposeOp::create(b, loc, type, x);
  return x;
}

struct ExpandNewtonSchulzPass
    : public mlir::muir::impl::MuirExpandNewtonSchulzBase<ExpandNewtonSchulzPass> {
  void runOnOperation() override {
    SmallVector<NewtonSchulzOp> ops;
    getOperation().walk([&](NewtonSchulzOp op) { ops.push_back(op); });
    for (NewtonSchulzOp op : ops) {
      OpBuilder b(op);
      op.getResult().replaceAllUsesWith(expand(b, op));
      op.erase();
    }
  }
};

} // namespace
