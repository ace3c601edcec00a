//===- ExecBufferFusions.cpp - exec buffers fused before the calls --------===//
//
// What muir-exec-to-runtime-calls rewrites on exec buffers before the ops
// become runtime calls: a normalisation that writes bf16 itself, widenings
// folded into their readers, grouped products summed into one buffer, and
// frees moved to the last use (ExecToRuntimeCallsInternal.h).
//
//===----------------------------------------------------------------------===//
#include "ExecToRuntimeCallsInternal.h"
#include "muir/Conversion/Passes.h"

#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;
namespace mx = mlir::muir_exec;

void mlir::muir::detail::fuseNormalizeToBf16(ModuleOp module) {
  SmallVector<mx::FrobeniusNormalizeOp> norms;
  module.walk([&](mx::FrobeniusNormalizeOp n) { norms.push_back(n); });
  for (mx::FrobeniusNormalizeOp n : norms) {
    auto type = cast<MemRefType>(n.getOutput().getType());
    auto alloc = n.getOutput().getDefiningOp<memref::AllocOp>();
    if (!type.getElementType().isF32() || !alloc ||
        n.getInput() == n.getOutput())
      continue;
    linalg::GenericOp truncate;
    bool ok = true;
    for (Operation *user : n.getOutput().getUsers()) {
      if (user == n || isa<memref::DeallocOp>(user))
        continue;
      auto g = dyn_cast<linalg::GenericOp>(user);
      ok &= g && !truncate && g->getBlock() == n->getBlock() &&
            n->isBeforeInBlock(g) && g.getNumDpsInputs() == 1 &&
            g.getNumDpsInits() == 1 && g.getDpsInputs()[0] == n.getOutput() &&
            llvm::all_of(g.getIndexingMapsArray(),
                         [](AffineMap m) { return m.isIdentity(); }) &&
            g.getNumParallelLoops() == g.getNumLoops();
      if (!ok)
        break;
      truncate = g;
    }
    if (!ok || !truncate)
      continue;
    Value into = truncate.getDpsInits()[0];
    auto intoType = dyn_cast<MemRefType>(into.getType());
    Block &body = truncate.getRegion().front();
    auto trunc = dyn_cast<arith::TruncFOp>(&body.front());
    auto yield = dyn_cast<linalg::YieldOp>(body.getTerminator());
    if (!intoType || !intoType.getElementType().isBF16() ||
        !intoType.getLayout().isIdentity() ||
        intoType.getShape() != type.getShape() || !trunc ||
        &*std::next(body.begin()) != yield.getOperation() ||
        trunc.getIn() != body.getArgument(0) ||
        yield.getOperand(0) != trunc.getResult() || trunc.getRoundingmodeAttr())
      continue;
    // The bf16 buffer must exist where the normalisation runs.
    Operation *def = into.getDefiningOp();
    if (def && def->getBlock() == n->getBlock() && n->isBeforeInBlock(def)) {
      if (!isa<memref::AllocOp>(def) || def->getNumOperands() != 0)
        continue;
      def->moveBefore(n);
    }
    n.getOutputMutable().assign(into);
    truncate.erase();
    for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
      user->erase();
    alloc.erase();
  }
}

/// Whether `g` is an element-wise kernel of identity maps whose body is one
/// op of type `Op` on its one input, yielded.
template <typename Op> static bool isOneOpKernel(linalg::GenericOp g) {
  if (g.getNumDpsInputs() != 1 || g.getNumDpsInits() != 1 ||
      g.getNumParallelLoops() != g.getNumLoops() ||
      !llvm::all_of(g.getIndexingMapsArray(),
                    [](AffineMap m) { return m.isIdentity(); }))
    return false;
  Block &body = g.getRegion().front();
  auto op = dyn_cast<Op>(&body.front());
  auto yield = dyn_cast<linalg::YieldOp>(body.getTerminator());
  return op && &*std::next(body.begin()) == yield.getOperation() &&
         op->getOperand(0) == body.getArgument(0) &&
         yield.getOperand(0) == op->getResult(0);
}

void mlir::muir::detail::fuseWidenIntoReaders(ModuleOp module) {
  SmallVector<linalg::GenericOp> widens;
  module.walk([&](linalg::GenericOp g) {
    if (isOneOpKernel<arith::ExtFOp>(g))
      widens.push_back(g);
  });
  for (linalg::GenericOp widen : widens) {
    Value src = widen.getDpsInputs()[0], wide = widen.getDpsInits()[0];
    auto srcType = dyn_cast<MemRefType>(src.getType());
    auto wideType = dyn_cast<MemRefType>(wide.getType());
    auto alloc = wide.getDefiningOp<memref::AllocOp>();
    if (!srcType || !wideType || !alloc || !srcType.getElementType().isBF16() ||
        !wideType.getElementType().isF32() ||
        !srcType.getLayout().isIdentity() ||
        alloc->getBlock() != widen->getBlock())
      continue;
    Block *block = widen->getBlock();
    // The readers: kernels in the block after the widening that take a
    // view chain (subview, collapse_shape) of the f32 buffer
    // as inputs only.
    struct Read {
      linalg::GenericOp reader;
      unsigned operand;
      SmallVector<Operation *> chain; // from the buffer outwards
    };
    SmallVector<Read> reads;
    bool ok = true;
    std::function<void(Value, SmallVector<Operation *>)> follow =
        [&](Value v, SmallVector<Operation *> chain) {
          for (OpOperand &use : v.getUses()) {
            Operation *user = use.getOwner();
            if (!ok || user == widen || isa<memref::DeallocOp>(user))
              continue;
            if (isa<memref::SubViewOp, memref::CollapseShapeOp>(user) &&
                user->getBlock() == block) {
              SmallVector<Operation *> longer = chain;
              longer.push_back(user);
              follow(user->getResult(0), longer);
              continue;
            }
            auto g = dyn_cast<linalg::GenericOp>(user);
            ok = g && g->getBlock() == block && widen->isBeforeInBlock(g) &&
                 g.isDpsInput(&use) && !chain.empty();
            if (ok)
              reads.push_back({g, use.getOperandNumber(), chain});
          }
        };
    follow(wide, {});
    if (!ok || reads.empty())
      continue;
    Operation *last = reads.front().reader;
    for (const Read &r : reads)
      if (last->isBeforeInBlock(r.reader))
        last = r.reader;
    // The buffers the bf16 value may be: itself, or a loop's initial
    // buffers when it is the loop's result.
    SmallVector<Value> aliases{src};
    if (auto loop = src.getDefiningOp<scf::ForOp>())
      llvm::append_range(aliases, loop.getInitArgs());
    llvm::SmallPtrSet<Operation *, 8> readers;
    for (const Read &r : reads)
      readers.insert(r.reader);
    for (Value a : aliases)
      for (Operation *user : a.getUsers()) {
        Operation *top = block->findAncestorOpInBlock(*user);
        if (!top || top == widen || !widen->isBeforeInBlock(top) ||
            last->isBeforeInBlock(top) || isa<memref::DeallocOp>(top))
          continue;
        ok &= readers.contains(top);
      }
    if (!ok)
      continue;
    for (const Read &r : reads) {
      OpBuilder b(r.reader);
      Value view = src;
      for (Operation *step : r.chain) {
        Location loc = step->getLoc();
        if (auto sv = dyn_cast<memref::SubViewOp>(step))
          view = memref::SubViewOp::create(b, loc, view, sv.getMixedOffsets(),
                                           sv.getMixedSizes(),
                                           sv.getMixedStrides());
        else
          view = memref::CollapseShapeOp::create(
              b, loc, view,
              cast<memref::CollapseShapeOp>(step).getReassociationIndices());
      }
      r.reader->setOperand(r.operand, view);
      linalg::GenericOp reader = r.reader;
      Block &body = reader.getRegion().front();
      BlockArgument arg = body.getArgument(r.operand);
      arg.setType(b.getBF16Type());
      OpBuilder in = OpBuilder::atBlockBegin(&body);
      Value widened =
          arith::ExtFOp::create(in, widen.getLoc(), b.getF32Type(), arg);
      arg.replaceAllUsesExcept(widened, widened.getDefiningOp());
    }
    widen.erase();
    // The old views (each once, outermost first) and the buffer are dead
    // now.
    llvm::SetVector<Operation *> views;
    for (const Read &r : reads)
      views.insert(r.chain.begin(), r.chain.end());
    SmallVector<Operation *> order(views.begin(), views.end());
    llvm::sort(order, [](Operation *a, Operation *b) {
      return b->isBeforeInBlock(a);
    });
    for (Operation *step : order)
      if (step->use_empty())
        step->erase();
    if (llvm::all_of(alloc->getUsers(),
                     [](Operation *u) { return isa<memref::DeallocOp>(u); })) {
      for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
        user->erase();
      alloc.erase();
    }
  }
}

/// Whether `g` is an element-wise kernel of identity maps whose body adds
/// its two inputs (in order) and yields the sum into its one output.
static bool isSumKernel(linalg::GenericOp g) {
  if (g.getNumDpsInputs() != 2 || g.getNumDpsInits() != 1 ||
      g.getNumParallelLoops() != g.getNumLoops() ||
      !llvm::all_of(g.getIndexingMapsArray(),
                    [](AffineMap m) { return m.isIdentity(); }))
    return false;
  Block &body = g.getRegion().front();
  auto add = dyn_cast<arith::AddFOp>(&body.front());
  auto yield = dyn_cast<linalg::YieldOp>(body.getTerminator());
  return add && &*std::next(body.begin()) == yield.getOperation() &&
         add.getLhs() == body.getArgument(0) &&
         add.getRhs() == body.getArgument(1) &&
         yield.getOperand(0) == add.getResult();
}

/// The grouped_gemm that writes `buffer` (a memref.alloc of the block),
/// when its only other users are `reader` and its free: the buffer holds
/// that product alone when `reader` runs.
static mx::GroupedGemmOp onlyProduct(Value buffer, Operation *reader) {
  auto alloc = buffer.getDefiningOp<memref::AllocOp>();
  if (!alloc)
    return {};
  mx::GroupedGemmOp writer;
  for (Operation *user : buffer.getUsers()) {
    if (user == reader || isa<memref::DeallocOp>(user))
      continue;
    auto gg = dyn_cast<mx::GroupedGemmOp>(user);
    if (!gg || writer || gg.getOutput() != buffer ||
        gg->getBlock() != reader->getBlock() || !gg->isBeforeInBlock(reader))
      return {};
    writer = gg;
  }
  return writer;
}

void mlir::muir::detail::fuseGroupedSums(ModuleOp module) {
  SmallVector<linalg::GenericOp> sums;
  module.walk([&](linalg::GenericOp g) {
    if (isSumKernel(g))
      sums.push_back(g);
  });
  for (linalg::GenericOp g : sums) {
    Value a = g.getDpsInputs()[0], b = g.getDpsInputs()[1];
    Value out = g.getDpsInits()[0];
    if (a == b || out == a || out == b || a.getType() != b.getType() ||
        a.getType() != out.getType())
      continue;
    mx::GroupedGemmOp first = onlyProduct(a, g), second = onlyProduct(b, g);
    if (!first || !second || first.getSizes() != second.getSizes())
      continue;
    if (second->isBeforeInBlock(first)) {
      std::swap(first, second);
      std::swap(a, b);
    }
    // The sum's output is a fresh buffer of the block; its users read the
    // first product's buffer instead.
    auto outAlloc = out.getDefiningOp<memref::AllocOp>();
    if (!outAlloc || outAlloc->getBlock() != g->getBlock() ||
        llvm::any_of(out.getUsers(), [&](Operation *user) {
          Operation *top = g->getBlock()->findAncestorOpInBlock(*user);
          return user != g && (!top || !g->isBeforeInBlock(top));
        }))
      continue;
    OpBuilder builder(second);
    mx::GroupedGemmAddOp::create(builder, second.getLoc(), second.getInput(),
                                 second.getWeights(), second.getSizes(), a,
                                 second.getTransposeBAttr(),
                                 second.getBf16OperandsAttr());
    second.erase();
    g.erase();
    for (Operation *user : llvm::make_early_inc_range(b.getUsers()))
      user->erase(); // its free
    b.getDefiningOp()->erase();
    for (Operation *user : llvm::make_early_inc_range(out.getUsers()))
      if (isa<memref::DeallocOp>(user))
        user->erase();
    out.replaceAllUsesWith(a);
    outAlloc.erase();
  }
}

void mlir::muir::detail::freeAfterLastUse(ModuleOp module) {
  SmallVector<memref::DeallocOp> frees;
  module.walk([&](memref::DeallocOp d) { frees.push_back(d); });
  // Where each free goes, found first and moved after: moving while
  // looking would renumber the block at every comparison.
  SmallVector<std::pair<memref::DeallocOp, Operation *>> moves;
  for (memref::DeallocOp d : frees) {
    auto alloc = d.getMemref().getDefiningOp<memref::AllocOp>();
    if (!alloc || alloc->getBlock() != d->getBlock())
      continue;
    Block *block = d->getBlock();
    Operation *last = alloc;
    bool escapes = false;
    SmallVector<Value> values{alloc.getResult()};
    while (!values.empty() && !escapes) {
      Value v = values.pop_back_val();
      for (Operation *user : v.getUsers()) {
        if (user == d)
          continue;
        Operation *top = block->findAncestorOpInBlock(*user);
        bool view = isa<ViewLikeOpInterface, memref::CollapseShapeOp,
                        memref::ExpandShapeOp, memref::CastOp>(user);
        // Anything that may hand the buffer on other than a view (a
        // loop's iteration argument at any depth, a yield, an op with a
        // memref result) keeps the free where it was.
        escapes = !top || isa<RegionBranchTerminatorOpInterface>(user) ||
                  (user->getNumRegions() > 0 && !isa<linalg::LinalgOp>(user)) ||
                  (!view && llvm::any_of(user->getResultTypes(), [](Type t) {
                    return isa<BaseMemRefType>(t);
                  }));
        if (escapes)
          break;
        if (last->isBeforeInBlock(top))
          last = top;
        if (view)
          llvm::append_range(values, user->getResults());
      }
    }
    if (!escapes)
      moves.push_back({d, last});
  }
  for (auto [d, last] : moves)
    d->moveAfter(last);
}
