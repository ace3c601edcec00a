//===- GramNewtonSchulz.cpp - Newton-Schulz on the small Gram matrix ------===//
//
// For a wide X (m < n) every Newton-Schulz step X' = a X + (b A + c A^2) X
// with A = X X^T keeps X = Q X0 for an m x m matrix Q, and A stays a
// polynomial in A0 = X0 X0^T: with P = a I + b A + c A^2, Q <- P Q and
// A <- P A P. All iterations run on m x m matrices; X is read twice (A0
// and the final X = Q X0). A tall X is handled as its transpose without
// transposing: A0 = X0^T X0 and X = X0 Q. The Frobenius normalisation
// happens on A0 (its trace is ||X||_F^2) and on Q, so X0 is never
// written out.
//
// The small matrices are kept in f64. In f32 the Gram matrix's eigenvalues
// are the squares of X's singular values, so a direction with singular
// value 1e-4 sits at the f32 rounding of A0 and the iteration, which
// amplifies small directions by up to prod(a), carries that rounding into
// Q (docs/gram-newton-schulz.md: 41-593x the standard form's error on
// ill-conditioned inputs, 2.3-3.8x with one restart; in f64, within 1.3x).
//
// With ns-form=auto the cost model chooses per matrix (shape, batch,
// steps, machine profile); the choice is recorded on the op it leaves.
//
//===----------------------------------------------------------------------===//
#include "muir/Analysis/CostModel.h"
#include "muir/Transforms/PassInput.h"
#include "muir/Transforms/Passes.h"
#include "muir/Transforms/GramForm.h"
#include "muir/Transforms/NewtonSchulzSteps.h"

#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace mlir::muir {
#define GEN_PASS_DEF_MUIRGRAMNEWTONSCHULZ
#include "muir/Transforms/Passes.h.inc"
} // namespace mlir::muir

using namespace mlir;
using namespace mlir::muir;

Value mlir::muir::buildGramIteration(OpBuilder &b, Location loc, Value a,
                                     ArrayRef<std::array<double, 3>> table,
                                     int64_t steps, bool syrk) {
  auto gram = cast<RankedTensorType>(a.getType());
  auto num = [&](double v) { return b.getF64FloatAttr(v); };
  UnitAttr no, yes = b.getUnitAttr();
  NSCoefficients coefficients(b, loc, table);
  // B = c A A + b A (A symmetric: A A = A A^T).
  auto polynomial = [&](OpBuilder &nb, Location nl, Value a, Value cb,
                        Value cc) -> Value {
    if (syrk)
      return SyrkOp::create(nb, nl, gram, a, a, cc, cb, num(1.0), num(0.0),
                            no);
    return MatmulOp::create(nb, nl, gram, a, a, a, cc, cb, num(1.0),
                            num(0.0), no, no, no);
  };
  // Step 0: Q = a I + B.
  auto [a0, b0, c0] = coefficients.at(0);
  Value bm;
  if (syrk)
    bm = SyrkOp::create(b, loc, gram, a, a, num(c0), num(b0), no);
  else
    bm = MatmulOp::create(b, loc, gram, a, a, a, num(c0), num(b0), no, no);
  Value q = AddDiagonalOp::create(b, loc, bm, num(a0));
  // Steps 1, 2, ...: first the previous step's A <- P A P = A P^2 (P and A
  // commute, both polynomials in A0), with P^2 = B B + 2 a B + a^2 I
  // symmetric: a SYRK and one GEMM (3 m^3 instead of two GEMMs' 4 m^3);
  // then B and Q <- P Q = a Q + B Q.
  SmallVector<Value> last = buildStepLoop(
      b, loc, 1, steps, {a, bm, q},
      [&](OpBuilder &nb, Location nl, Value k, ValueRange carried) {
        Value ak = carried[0], bprev = carried[1], qk = carried[2];
        Value one = arith::ConstantIndexOp::create(nb, nl, 1);
        Value prev = coefficients.at(
            nb, nl, Value(arith::SubIOp::create(nb, nl, k, one)))[0];
        auto [ca, cb, cc] = coefficients.at(nb, nl, k);
        Value twoA = arith::AddFOp::create(nb, nl, prev, prev);
        Value aSquared = arith::MulFOp::create(nb, nl, prev, prev);
        Value p2 =
            syrk ? Value(SyrkOp::create(nb, nl, gram, bprev, bprev, Value(),
                                        twoA, num(1.0), num(0.0), no))
                 : Value(MatmulOp::create(nb, nl, gram, bprev, bprev, bprev,
                                          Value(), twoA, num(1.0), num(0.0),
                                          no, no, yes));
        p2 = AddDiagonalOp::create(nb, nl, p2, aSquared);
        Value next = MatmulOp::create(nb, nl, gram, ak, p2, Value(), num(1.0),
                                      num(0.0), no, no, yes);
        Value bk = polynomial(nb, nl, next, cb, cc);
        Value qn = MatmulOp::create(nb, nl, gram, bk, qk, qk, Value(), ca,
                                    num(1.0), num(0.0), no, no, yes);
        return SmallVector<Value>{next, bk, qn};
      });
  return last[2];
}

namespace {

RankedTensorType withElement(RankedTensorType t, Type element) {
  return RankedTensorType::get(t.getShape(), element);
}

RankedTensorType square(RankedTensorType t, int64_t r, Type element) {
  SmallVector<int64_t> shape(t.getShape());
  shape[shape.size() - 2] = r;
  shape[shape.size() - 1] = r;
  return RankedTensorType::get(shape, element);
}

/// The Gram form of `op`; returns its result and the last product (which
/// carries the choice).
std::pair<Value, Operation *> gramForm(OpBuilder &b, NewtonSchulzOp op,
                                       bool syrk) {
  Location loc = op.getLoc();
  auto type = op.getInput().getType();
  int64_t rank = type.getRank();
  int64_t m = type.getDimSize(rank - 2), n = type.getDimSize(rank - 1);
  bool tall = m > n;
  int64_t r = std::min(m, n);
  Type f64 = b.getF64Type();
  auto gram = square(type, r, f64);
  auto num = [&](double v) { return b.getF64FloatAttr(v); };
  UnitAttr no, yes = b.getUnitAttr();

  // A0 of the input as it is, its products accumulated in double (the
  // GEMM of an f64 copy without SYRK), then normalised on the small matrix:
  // trace(A0) = ||X||_F^2, so A0 s^2 is the Gram matrix of the normalised
  // X0 = s X with s = 1 / (||X||_F + eps), and X itself is touched again
  // only by the last product.
  Value x = op.getInput();
  Value a;
  if (syrk) {
    a = SyrkOp::create(b, loc, gram, x, Value(), num(1.0), num(0.0),
                       tall ? yes : no);
  } else {
    Value xd = arith::ExtFOp::create(b, loc, withElement(type, f64), x);
    a = MatmulOp::create(b, loc, gram, xd, xd, Value(), num(1.0), num(0.0),
                         tall ? yes : no, tall ? no : yes);
  }
  int64_t batch = rank == 3 ? type.getDimSize(0) : 1;
  auto norm = TraceNormalizeOp::create(
      b, loc, gram, RankedTensorType::get({batch}, f64), a, op.getEpsAttr());
  a = norm.getResult();
  Value q = buildGramIteration(b, loc, norm.getResult(), op.getStepTable(),
                               op.getSteps(), syrk);
  // Q s (X = Q X0 = (Q s) X), rounded to f32 once.
  Value qf = ScaleMatricesOp::create(
      b, loc, square(type, r, b.getF32Type()), q, norm.getScale());
  auto last = tall ? MatmulOp::create(b, loc, type, x, qf, Value(), num(1.0),
                                      num(0.0), no, no)
                   : MatmulOp::create(b, loc, type, qf, x, Value(), num(1.0),
                                      num(0.0), no, no);
  return {last.getResult(), last};
}

/// Each Newton-Schulz op in the form the options (or, with auto, the cost
/// model) choose: the Gram form replaces it, the standard form leaves it;
/// either way the choice and both modelled times are recorded on the op it
/// leaves (`muir.ns_form`, `muir.ns_form_cost`).
struct ChooseNewtonSchulzForm : OpRewritePattern<NewtonSchulzOp> {
  ChooseNewtonSchulzForm(MLIRContext *context, Machine machine,
                         int64_t ranks, NSFormOption nsForm, bool syrk)
      : OpRewritePattern(context), model(MachineProfile::get(machine), ranks),
        nsForm(nsForm), syrk(syrk) {}

  LogicalResult matchAndRewrite(NewtonSchulzOp op,
                                PatternRewriter &rewriter) const override {
    auto type = op.getInput().getType();
    int64_t rank = type.getRank();
    int64_t m = type.getDimSize(rank - 2), n = type.getDimSize(rank - 1);
    int64_t batch = rank == 3 ? type.getDimSize(0) : 1;
    FormCost cost;
    bool gram = model.preferGram(m, n, batch, op.getSteps(), syrk, &cost);
    if (nsForm != NSFormOption::Auto)
      gram = nsForm == NSFormOption::Gram;
    // The Gram form iterates in double from an f32 X: a bf16 iterate is the
    // standard form's (the tools reject --ns-form=gram with it), and so is
    // an f64 X, which iterates in double already.
    if (op.getPrecision() == NSPrecision::bf16 ||
        type.getElementType().isF64())
      gram = false;
    auto formAttr =
        NSFormAttr::get(getContext(), gram ? NSForm::gram : NSForm::standard);
    auto costAttr = NSFormCostAttr::get(getContext(),
                                        APFloat(cost.standardSeconds),
                                        APFloat(cost.gramSeconds));
    auto record = [&](Operation *on) {
      on->setAttr(MuirDialect::NsFormAttrHelper::getNameStr(), formAttr);
      on->setAttr(MuirDialect::NsFormCostAttrHelper::getNameStr(), costAttr);
    };
    if (!gram) {
      if (op->getAttr(MuirDialect::NsFormAttrHelper::getNameStr()) ==
              formAttr &&
          op->getAttr(MuirDialect::NsFormCostAttrHelper::getNameStr()) ==
              costAttr)
        return rewriter.notifyMatchFailure(op, "standard form recorded");
      rewriter.modifyOpInPlace(op, [&] { record(op); });
      return success();
    }
    auto [result, last] = gramForm(rewriter, op, syrk);
    record(last);
    rewriter.replaceOp(op, result);
    return success();
  }

  NSCostModel model;
  NSFormOption nsForm;
  bool syrk;
};

struct GramNewtonSchulzPass
    : public mlir::muir::impl::MuirGramNewtonSchulzBase<GramNewtonSchulzPass> {
  using MuirGramNewtonSchulzBase::MuirGramNewtonSchulzBase;

  void runOnOperation() override {
    if (failed(checkPassInput(getOperation(), getArgument(),
                              PassInput::Tensors)))
      return signalPassFailure();
    // Priced per rank, as muir-distribute prices: the run grid's ranks
    // share the machine's rate where its profile says they do.
    FailureOr<GridOp> run = getRunGrid(getOperation());
    if (failed(run))
      return signalPassFailure();
    int64_t ranks = 1;
    if (*run)
      for (int64_t s : run->getShape())
        ranks *= s;
    RewritePatternSet patterns(&getContext());
    populateGramNewtonSchulzPatterns(patterns, machine, ranks, nsForm, syrk);
    walkAndApplyPatterns(getOperation(), std::move(patterns));
  }
};

} // namespace

void mlir::muir::populateGramNewtonSchulzPatterns(RewritePatternSet &patterns,
                                                  Machine machine,
                                                  int64_t ranks,
                                                  NSFormOption nsForm,
                                                  bool syrk) {
  patterns.add<ChooseNewtonSchulzForm>(patterns.getContext(), machine, ranks,
                                       nsForm, syrk);
}
