//===- ExpandNewtonSchulz.cpp - Newton-Schulz as matmuls ------------------===//
//
// X <- X / (||X|| + eps); then a loop over the steps (each step's
// coefficients read from the schedule's table) whose body is one step:
// three products whose Gram matrix is min(m, n) square, A = X X^T,
// B = b A + c A A, X' = a X + B X for a wide X (m <= n), and A = X^T X, B as
// before, X' = a X + X B for a tall one (the transposed iteration, with no
// transposes). The form the Gram pass recorded on the Newton-Schulz
// (`muir.ns_form`, `muir.ns_form_cost`) moves to the normalisation.
//
//===----------------------------------------------------------------------===//
#include "muir/Transforms/PassInput.h"
#include "muir/Transforms/Passes.h"
#include "muir/Transforms/NewtonSchulzSteps.h"

#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace mlir::muir {
#define GEN_PASS_DEF_MUIREXPANDNEWTONSCHULZ
#include "muir/Transforms/Passes.h.inc"
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
  // A tall X iterates as its transpose would, without transposing: the
  // Gram matrix X^T X and X' = a X + X B (B is symmetric).
  bool tall = m > n;
  int64_t r = std::min(m, n);

  auto normalize = FrobeniusNormalizeOp::create(b, loc, type, op.getInput(),
                                                op.getEpsAttr());
  // muir-gram-newton-schulz's record of the form (standard) stays on the
  // expansion's first op, for the plan report.
  for (StringRef name : {MuirDialect::NsFormAttrHelper::getNameStr(),
                         MuirDialect::NsFormCostAttrHelper::getNameStr()})
    if (Attribute a = op->getAttr(name))
      normalize->setAttr(name, a);
  Value x = normalize;
  // A bf16 iterate: X rounded once after the normalisation, every product
  // on bf16 buffers, the result widened back.
  bool bf16 = op.getPrecision() == NSPrecision::bf16;
  RankedTensorType f32Type = type;
  if (bf16) {
    type = RankedTensorType::get(type.getShape(), b.getBF16Type());
    x = arith::TruncFOp::create(b, loc, type, x);
  }
  auto gram = withLastTwo(type, r, r);
  auto f64 = [&](double v) { return b.getF64FloatAttr(v); };
  UnitAttr no, yes = b.getUnitAttr();
  // One step in a loop over the steps, its coefficients read from the
  // table.
  NSCoefficients table(b, loc, op.getStepTable());
  x = buildStepLoop(
      b, loc, 0, op.getSteps(), x,
      [&](OpBuilder &nb, Location nl, Value k, ValueRange carried) {
        Value xk = carried[0];
        auto [ca, cb, cc] = table.at(nb, nl, k);
        Value a = MatmulOp::create(nb, nl, gram, xk, xk, Value(), f64(1.0),
                                   f64(0.0), /*transpose_a=*/tall ? yes : no,
                                   /*transpose_b=*/tall ? no : yes);
        Value bm = MatmulOp::create(nb, nl, gram, a, a, a, cc, cb, f64(1.0),
                                    f64(0.0), no, no, no);
        Value next =
            tall ? MatmulOp::create(nb, nl, type, xk, bm, xk, Value(), ca,
                                    f64(1.0), f64(0.0), no, no, no)
                 : MatmulOp::create(nb, nl, type, bm, xk, xk, Value(), ca,
                                    f64(1.0), f64(0.0), no, no, no);
        return SmallVector<Value>{next};
      })[0];
  if (bf16)
    x = arith::ExtFOp::create(b, loc, f32Type, x);
  return x;
}

struct ExpandNewtonSchulz : OpRewritePattern<NewtonSchulzOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(NewtonSchulzOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, expand(rewriter, op));
    return success();
  }
};

struct ExpandNewtonSchulzPass
    : public mlir::muir::impl::MuirExpandNewtonSchulzBase<ExpandNewtonSchulzPass> {
  void runOnOperation() override {
    if (failed(checkPassInput(getOperation(), getArgument(),
                              PassInput::Tensors)))
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    populateExpandNewtonSchulzPatterns(patterns);
    walkAndApplyPatterns(getOperation(), std::move(patterns));
  }
};

} // namespace

void mlir::muir::populateExpandNewtonSchulzPatterns(
    RewritePatternSet &patterns) {
  patterns.add<ExpandNewtonSchulz>(patterns.getContext());
}
