//===- BatchNewtonSchulz.cpp - same-shaped Newton-Schulz as one batch -----===//
//
// Many optimizer matrices share a shape (every layer's q_proj; MindSpore's
// 74 matrices of 24x10240) and an expert stack is already a batch. Newton-
// Schulz of each is a chain of small runtime calls; a batch [B, m, n] runs
// the same chain once, each GEMM a single strided-batch call. This pass
// groups `muir.newton_schulz` ops of one block (the same rank's work: a
// data-parallel owner's switch case is one block) with equal matrix shape
// m x n and equal settings (steps, schedule, coefficients, eps), stacks
// their inputs (2-D as [1, m, n], stacks as they are) with tensor.concat,
// orthogonalises the stack once and slices the results back out. Ops that
// read a result before the stack exists move after it (all are pure).
//
//===----------------------------------------------------------------------===//
#include "muir/Transforms/PassInput.h"
#include "muir/Transforms/Passes.h"

#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"

namespace mlir::muir {
#define GEN_PASS_DEF_MUIRBATCHNEWTONSCHULZ
#include "muir/Transforms/Passes.h.inc"
} // namespace mlir::muir

using namespace mlir;
using namespace mlir::muir;

namespace {

/// What must agree for two Newton-Schulz ops to share a batch.
struct Key {
  int64_t m, n, steps;
  NSSchedule schedule;
  SmallVector<double> coefficients;
  double eps;
  NSPrecision precision;
  Type element; ///< f32, or f64 (computed in f64)
  bool operator==(const Key &o) const {
    return m == o.m && n == o.n && steps == o.steps && schedule == o.schedule &&
           coefficients == o.coefficients && eps == o.eps &&
           precision == o.precision && element == o.element;
  }
};

Key keyOf(NewtonSchulzOp op) {
  auto t = op.getInput().getType();
  int64_t r = t.getRank();
  Key k{t.getDimSize(r - 2),
        t.getDimSize(r - 1),
        op.getStepsAttr().getInt(),
        op.getSchedule(),
        {},
        op.getEps().convertToDouble(),
        op.getPrecision(),
        t.getElementType()};
  if (auto c = op.getCoefficients())
    k.coefficients.assign(c->begin(), c->end());
  return k;
}

int64_t batchOf(Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  return t.getRank() == 3 ? t.getDimSize(0) : 1;
}

struct BatchNewtonSchulzPass
    : public mlir::muir::impl::MuirBatchNewtonSchulzBase<
          BatchNewtonSchulzPass> {
  void runOnOperation() override {
    if (failed(checkPassInput(getOperation(), getArgument(),
                              PassInput::Tensors)))
      return signalPassFailure();
    SmallVector<Block *> blocks;
    getOperation().walk([&](Block *b) { blocks.push_back(b); });
    for (Block *block : blocks) {
      // Groups in order of their first member.
      SmallVector<std::pair<Key, SmallVector<NewtonSchulzOp>>> groups;
      for (auto op : block->getOps<NewtonSchulzOp>()) {
        Key k = keyOf(op);
        auto it = llvm::find_if(groups, [&](auto &g) { return g.first == k; });
        if (it == groups.end())
          groups.push_back({k, {op}});
        else
          it->second.push_back(op);
      }
      for (auto &[key, ops] : groups)
        if (ops.size() > 1)
          batch(block, ops);
    }
  }

  void batch(Block *block, SmallVector<NewtonSchulzOp> ops) {
    // After every input's definition in this block.
    Operation *after = nullptr;
    for (NewtonSchulzOp op : ops) {
      Operation *def = op.getInput().getDefiningOp();
      if (!def)
        continue;
      Operation *top = block->findAncestorOpInBlock(*def);
      if (top && (!after || after->isBeforeInBlock(top)))
        after = top;
    }
    OpBuilder b(block, after ? std::next(after->getIterator())
                             : block->begin());
    // Where each matrix came from (the plan report names a batch's
    // matrices from its location).
    SmallVector<Location> locs;
    for (NewtonSchulzOp op : ops)
      locs.push_back(op.getLoc());
    Location loc = FusedLoc::get(b.getContext(), locs);
    Type element = keyOf(ops.front()).element;
    int64_t m = keyOf(ops.front()).m, n = keyOf(ops.front()).n;
    int64_t total = 0;
    SmallVector<Value> parts;
    for (NewtonSchulzOp op : ops) {
      Value in = op.getInput();
      if (cast<RankedTensorType>(in.getType()).getRank() == 2)
        in = tensor::ExpandShapeOp::create(
            b, loc, RankedTensorType::get({1, m, n}, element), in,
            SmallVector<ReassociationIndices>{{0, 1}, {2}});
      parts.push_back(in);
      total += batchOf(in);
    }
    auto stackType = RankedTensorType::get({total, m, n}, element);
    Value stack = tensor::ConcatOp::create(b, loc, stackType, 0, parts);
    NewtonSchulzOp first = ops.front();
    Value out = NewtonSchulzOp::create(
        b, loc, stackType, stack, first.getStepsAttr(), first.getScheduleAttr(),
        first.getCoefficientsAttr(), first.getEpsAttr(),
        first.getPrecisionAttr());
    int64_t offset = 0;
    SmallVector<Operation *> inserted;
    for (NewtonSchulzOp op : ops) {
      auto type = op.getInput().getType();
      int64_t count = batchOf(op.getInput());
      SmallVector<OpFoldResult> offsets = {b.getIndexAttr(offset),
                                           b.getIndexAttr(0),
                                           b.getIndexAttr(0)};
      SmallVector<OpFoldResult> sizes = {b.getIndexAttr(count),
                                         b.getIndexAttr(m),
                                         b.getIndexAttr(n)};
      SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
      Value piece = tensor::ExtractSliceOp::create(
          b, loc, RankedTensorType::get({count, m, n}, element), out, offsets,
          sizes, strides);
      if (type.getRank() == 2)
        piece = tensor::CollapseShapeOp::create(
            b, loc, type, piece,
            SmallVector<ReassociationIndices>{{0, 1}, {2}});
      offset += count;
      op.getResult().replaceAllUsesWith(piece);
    }
    Operation *last = b.getInsertionBlock()->empty()
                          ? nullptr
                          : &*std::prev(b.getInsertionPoint());
    for (NewtonSchulzOp op : ops)
      op.erase();
    // Readers that stood before the stack move after it, with their own
    // readers, in their order.
    SmallVector<Operation *> toMove;
    DenseSet<Operation *> seen;
    SmallVector<Value> work;
    for (Operation &op : llvm::make_range(
             after ? std::next(after->getIterator()) : block->begin(),
             std::next(last->getIterator()))) {
      seen.insert(&op); // the stack's own ops stay where they are
      for (Value r : op.getResults())
        work.push_back(r);
    }
    while (!work.empty()) {
      Value v = work.pop_back_val();
      for (Operation *user : v.getUsers()) {
        Operation *top = block->findAncestorOpInBlock(*user);
        if (!top || top == block->getTerminator() || !seen.insert(top).second)
          continue;
        if (top->isBeforeInBlock(last)) {
          toMove.push_back(top);
          for (Value r : top->getResults())
            work.push_back(r);
        }
      }
    }
    llvm::sort(toMove, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    for (Operation *op : toMove) {
      op->moveAfter(last);
      last = op;
    }
  }
};

} // namespace
