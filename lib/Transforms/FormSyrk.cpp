//===- FormSyrk.cpp - symmetric products as SYRK --------------------------===//
//
// Newton-Schulz spends two of its three products per step on symmetric
// results: the Gram matrix A = X X^T (or X^T X) and A A in B = b A + c A A,
// where A is symmetric so that A A = A A^T. A symmetric rank-k update
// computes one triangle, about half the flops of the GEMM. This pass
// rewrites such `muir.matmul`s to `muir.syrk`:
//  - matmul(X, X) with exactly one operand transposed: X X^T, or X^T X
//    (`transpose`);
//  - matmul(A, A) with neither transposed, when A is known symmetric;
// keeping alpha, and the accumulator with beta when it is itself symmetric.
// Known symmetric: a syrk, such a product, and an all_reduce (a sum) of a
// symmetric tensor. Everything else, B X + a X included, stays a GEMM.
//
//===----------------------------------------------------------------------===//
#include "muir/Transforms/PassInput.h"
#include "muir/Transforms/Passes.h"

#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace mlir::muir {
#define GEN_PASS_DEF_MUIRFORMSYRK
#include "muir/Transforms/Passes.h.inc"
} // namespace mlir::muir

using namespace mlir;
using namespace mlir::muir;

namespace {

bool isSymmetric(Value v, int depth = 0);

/// Whether an accumulator is read: beta is an operand or not 0.
bool readsAccumulator(Value acc, Value betaValue, FloatAttr beta) {
  return acc && (betaValue || beta.getValueAsDouble() != 0.0);
}

/// The accumulator may join a SYRK when it is not read or is symmetric.
bool accumulatorFits(Value acc, Value betaValue, FloatAttr beta, int depth) {
  return !readsAccumulator(acc, betaValue, beta) || isSymmetric(acc, depth);
}

/// What a matmul would become: 0 none, 1 X X^T, 2 X^T X, 3 A A (A sym.).
int syrkForm(MatmulOp mm, int depth) {
  if (mm.getA() != mm.getB() ||
      !accumulatorFits(mm.getAcc(), mm.getBetaValue(), mm.getBetaAttr(), depth))
    return 0;
  bool ta = mm.getTransposeA(), tb = mm.getTransposeB();
  if (!ta && tb)
    return 1;
  if (ta && !tb)
    return 2;
  if (!ta && !tb && isSymmetric(mm.getA(), depth))
    return 3;
  return 0;
}

bool isSymmetric(Value v, int depth) {
  if (depth > 64)
    return false; // give up on absurdly deep chains
  Operation *def = v.getDefiningOp();
  if (!def)
    return false;
  if (auto syrk = dyn_cast<SyrkOp>(def))
    return accumulatorFits(syrk.getAcc(), syrk.getBetaValue(),
                           syrk.getBetaAttr(), depth + 1);
  if (auto mm = dyn_cast<MatmulOp>(def))
    return syrkForm(mm, depth + 1) != 0;
  if (auto ar = dyn_cast<AllReduceOp>(def))
    return isSymmetric(ar.getInput(), depth + 1);
  return false;
}

/// A symmetric product (syrkForm) as muir.syrk.
struct MatmulToSyrk : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MatmulOp mm,
                                PatternRewriter &rewriter) const override {
    int form = syrkForm(mm, 0);
    if (!form)
      return rewriter.notifyMatchFailure(mm, "not a symmetric product");
    UnitAttr transpose = form == 2 ? rewriter.getUnitAttr() : UnitAttr();
    bool reads =
        readsAccumulator(mm.getAcc(), mm.getBetaValue(), mm.getBetaAttr());
    rewriter.replaceOpWithNewOp<SyrkOp>(
        mm, mm.getType(), mm.getA(), reads ? mm.getAcc() : Value(),
        mm.getAlphaValue(), reads ? mm.getBetaValue() : Value(),
        mm.getAlphaAttr(),
        reads ? mm.getBetaAttr() : rewriter.getF64FloatAttr(0.0), transpose);
    return success();
  }
};

struct FormSyrkPass
    : public mlir::muir::impl::MuirFormSyrkBase<FormSyrkPass> {
  void runOnOperation() override {
    if (failed(checkPassInput(getOperation(), getArgument(),
                              PassInput::Tensors)))
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    populateFormSyrkPatterns(patterns);
    walkAndApplyPatterns(getOperation(), std::move(patterns));
  }
};

} // namespace

void mlir::muir::populateFormSyrkPatterns(RewritePatternSet &patterns) {
  patterns.add<MatmulToSyrk>(patterns.getContext());
}
