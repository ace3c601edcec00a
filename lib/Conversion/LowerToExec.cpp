//===- LowerToExec.cpp - tensor-level muir to exec IR ---------------------===//
//
// Bufferization of training-step functions: upstream one-shot bufferize
// with the muir ops' models (BufferizeMuir.cpp), and what is muir's own
// around it.
//
// The function's tensors are named state (parameters, gradients, optimizer
// state) that the step updates in place, so the exec function takes one
// buffer per argument, returns nothing, and writes each `muir.updates`
// result into its argument's buffer. Before one-shot:
//   - element-wise math becomes linalg on tensors;
//   - each result is materialized in its argument
//     (bufferization.materialize_in_destination, which one-shot must
//     bufferize in place; only those arguments writable) and the function
//     returns nothing, and each scf.index_switch result in a
//     bufferization.alloc_tensor before the switch, so that every case
//     writes one buffer that outlives it;
//   - the counts of ragged exchanges, and every tensor they are copied from
//     or into or are views of, get the #muir_exec.host encoding, which
//     becomes their buffers' memory space (MPI and NCCL read counts on the
//     host).
// One-shot then views slices and reshapes instead of copying them, and
// copies the rest. After it:
//   - copies of buffers nothing wrote (tensor.empty's) are dropped;
//   - a result computed into a fresh buffer (by a runtime call, a kernel,
//     copies into views) is computed into the argument (or, in a switch
//     case, the switch's buffer) instead, when nothing touches that
//     between the fresh buffer's first use and the final copy, except the
//     element-wise kernel that computes it from the argument (the runtime
//     calls have no destination operand, so
//     upstream's analysis cannot place them; and one-shot places no
//     kernel's output in an argument without empty-tensor elimination, a
//     second whole analysis that would cost as much time again);
//   - every allocation is freed at the end of its block: none escapes it,
//     since switch results are their preallocated buffers.
//
//===----------------------------------------------------------------------===//
#include "muir/Conversion/Passes.h"
#include "muir/Transforms/PassInput.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotModuleBufferize.h"
#include "mlir/Dialect/Bufferization/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::muir {
#define GEN_PASS_DEF_MUIRLOWERTOEXEC
#include "muir/Conversion/Passes.h.inc"
} // namespace mlir::muir

using namespace mlir;
using namespace mlir::muir;
namespace bz = mlir::bufferization;
namespace mx = mlir::muir_exec;

namespace {

/// Whether a generic's body reads tensors from outside it (it then is no
/// kernel that can run on buffers).
bool capturesTensors(linalg::GenericOp g) {
  bool captured = false;
  g.getRegion().walk([&](Operation *inner) {
    for (Value v : inner->getOperands())
      captured |= isa<TensorType>(v.getType()) &&
                  !g.getRegion().isAncestor(v.getParentRegion());
  });
  return captured;
}

/// The tensor a view-like tensor op (cast, slice, reshape) views, or null.
Value viewedTensor(Operation *op) {
  if (isa<tensor::CastOp, tensor::ExtractSliceOp, tensor::CollapseShapeOp,
          tensor::ExpandShapeOp>(op))
    return op->getOperand(0);
  return Value();
}

/// An element-wise kernel on buffers: each element of an output depends
/// only on the same element of each input and not on the output's initial
/// value, so it may write a buffer it reads.
bool isElementwise(linalg::GenericOp g) {
  return g.getNumLoops() == g.getNumParallelLoops() &&
         llvm::all_of(g.getIndexingMapsArray(),
                      [](AffineMap m) { return m.isIdentity(); }) &&
         llvm::none_of(g.getDpsInitsMutable(), [&](OpOperand &init) {
           return g.payloadUsesValueFromOperand(&init);
         });
}

/// One training-step function: its checks and the tensor-level
/// preparation for one-shot, then the buffer-level steps after it.
class StepFunction {
public:
  explicit StepFunction(func::FuncOp func) : func(func) {}

  LogicalResult prepare();
  LogicalResult finish();

private:
  LogicalResult checkSignature();
  LogicalResult checkOps();
  LogicalResult planHostCounts();
  void materializeResults();
  void materializeSwitches();
  LogicalResult dropSwitchResults();
  void lowerGroupRanks();
  LogicalResult placeLoopBuffers();
  void dropUndefinedCopies();
  void computeInPlace();
  void freeAllocations();

  func::FuncOp func;
  /// Argument index each returned value is written to.
  SmallVector<int64_t> resultTargets;
};

LogicalResult StepFunction::checkSignature() {
  FunctionType type = func.getFunctionType();
  DenseMap<StringAttr, int64_t> argIndex;
  for (auto [i, t] : llvm::enumerate(type.getInputs())) {
    auto tensor = dyn_cast<RankedTensorType>(t);
    // (int64 tensors: a called MoE layer's tokens_per_expert.)
    bool ok = (tensor && tensor.hasStaticShape() &&
               (tensor.getElementType().isF32() ||
                tensor.getElementType().isF64() ||
                tensor.getElementType().isInteger(64))) ||
              t.isInteger(64) || t.isF64();
    if (!ok)
      return func.emitOpError("argument ")
             << i << ": expected a static f32, f64 or i64 tensor, the i64 "
             << "step or an f64 hyperparameter, got " << t;
    auto name = func.getArgAttrOfType<StringAttr>(
        i, MuirDialect::NameAttrHelper::getNameStr());
    if (tensor && !name)
      return func.emitOpError("argument ")
             << i << ": expected a 'muir.name' attribute naming the tensor";
    if (name)
      argIndex[name] = i;
  }
  for (unsigned i = 0; i < type.getNumResults(); ++i) {
    auto target = func.getResultAttrOfType<StringAttr>(
        i, MuirDialect::UpdatesAttrHelper::getNameStr());
    if (!target)
      return func.emitOpError("result ")
             << i << ": expected a 'muir.updates' attribute naming the "
             << "argument it updates";
    int64_t found = argIndex.lookup_or(target, -1);
    if (found < 0)
      return func.emitOpError("result ")
             << i << " updates '" << target.getValue()
             << "', which is not an argument's muir.name";
    if (type.getInput(found) != type.getResult(i))
      return func.emitOpError("result ")
             << i << " has type " << type.getResult(i) << " but updates '"
             << target.getValue() << "' of type " << type.getInput(found);
    if (llvm::is_contained(resultTargets, found))
      return func.emitOpError("argument '")
             << target.getValue() << "' is updated by two results";
    resultTargets.push_back(found);
  }
  if (!func.getBody().hasOneBlock())
    return func.emitOpError("expected a single-block function");
  return success();
}

/// What one-shot would reject less clearly, or not at all.
LogicalResult StepFunction::checkOps() {
  WalkResult bad = func.walk([&](Operation *op) {
    // (Unexpanded optimizers and Newton-Schulz are refused before, by
    // checkPassInput.)
    if (auto g = dyn_cast<linalg::GenericOp>(op);
        g && (!g.hasPureTensorSemantics() || capturesTensors(g))) {
      op->emitOpError("expected a linalg.generic on tensors whose body "
                      "reads only its operands' elements");
      return WalkResult::interrupt();
    }
    if (auto sw = dyn_cast<scf::IndexSwitchOp>(op);
        sw && !llvm::all_of(sw.getResultTypes(), llvm::IsaPred<TensorType>)) {
      op->emitOpError("expected only tensor results in a step function");
      return WalkResult::interrupt();
    }
    auto isTensor = [](Type t) { return isa<TensorType>(t); };
    bool tensors = llvm::any_of(op->getOperandTypes(), isTensor) ||
                   llvm::any_of(op->getResultTypes(), isTensor);
    if (tensors && !isa<bz::BufferizableOpInterface>(op)) {
      op->emitOpError("cannot be lowered to exec IR");
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(bad.wasInterrupted());
}

/// The all_to_allv counts, with every tensor their buffers are copied from
/// or into (a switch's yields and results, the sources of slices) or views
/// of (reshapes), get the #muir_exec.host encoding, so that each copy and
/// view stays within host memory. (Upstream bufferizes no concatenation in
/// a memory space other than the default: counts may not be one.)
LogicalResult StepFunction::planHostCounts() {
  SetVector<Value> hostCounts;
  SmallVector<Value> work;
  func.walk([&](AllToAllVOp x) {
    work.push_back(x.getSendCounts());
    work.push_back(x.getRecvCounts());
  });
  // So do the constant tables whose elements the host reads one by one (a
  // Newton-Schulz loop's coefficients).
  func.walk([&](tensor::ExtractOp x) {
    if (x.getTensor().getDefiningOp<arith::ConstantOp>())
      work.push_back(x.getTensor());
  });
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!hostCounts.insert(v))
      continue;
    if (auto r = dyn_cast<OpResult>(v)) {
      Operation *def = r.getOwner();
      if (auto sw = dyn_cast<scf::IndexSwitchOp>(def))
        for (Region &region : sw->getRegions())
          work.push_back(
              region.front().getTerminator()->getOperand(r.getResultNumber()));
      if (Value viewed = viewedTensor(def))
        work.push_back(viewed);
      if (isa<tensor::ConcatOp>(def))
        return def->emitOpError("concatenates the counts of a ragged "
                                "exchange, which are host buffers; "
                                "concatenations in host memory are not "
                                "supported");
    }
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (isa<scf::YieldOp>(user))
        if (auto sw = dyn_cast<scf::IndexSwitchOp>(user->getParentOp()))
          work.push_back(sw.getResult(use.getOperandNumber()));
      if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(user))
        work.push_back(user->getResult(0));
    }
  }
  auto host = mx::HostMemoryAttr::get(func.getContext());
  for (Value v : hostCounts) {
    auto t = cast<RankedTensorType>(v.getType());
    auto encoded =
        RankedTensorType::get(t.getShape(), t.getElementType(), host);
    if (auto cst = v.getDefiningOp<arith::ConstantOp>()) {
      auto dense = dyn_cast<DenseElementsAttr>(cst.getValue());
      if (!dense)
        return cst.emitOpError("expected dense counts");
      cst.setValueAttr(dense.reshape(encoded));
    }
    v.setType(encoded);
  }
  return success();
}

/// Each result written into its argument, and the function returns
/// nothing: materialize_in_destination must bufferize in place, so one-shot
/// writes the argument's buffer or fails (with results, its analysis of the
/// function boundary would compare every result with every argument). Only
/// these arguments are writable: one-shot must not update any other in
/// place.
void StepFunction::materializeResults() {
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  OpBuilder b(ret);
  // All arguments' attributes at once (one by one, each would copy the
  // whole list: quadratic in a step's thousands of arguments).
  DenseSet<int64_t> targets(llvm::from_range, resultTargets);
  SmallVector<DictionaryAttr> argAttrs;
  for (BlockArgument arg : func.getArguments()) {
    NamedAttrList attrs(func.getArgAttrDict(arg.getArgNumber()));
    if (isa<TensorType>(arg.getType()))
      attrs.set(bz::BufferizationDialect::kWritableAttrName,
                b.getBoolAttr(targets.contains(arg.getArgNumber())));
    argAttrs.push_back(attrs.getDictionary(func.getContext()));
  }
  func.setAllArgAttrs(argAttrs);
  // A result that is another argument or a view of one (a pass-through; a
  // swap) is copied before any argument is written.
  SmallVector<Value> sources;
  for (auto [i, target] : llvm::enumerate(resultTargets)) {
    Value v = ret.getOperand(i);
    Value root = v;
    while (Operation *def = root.getDefiningOp()) {
      Value viewed = viewedTensor(def);
      if (!viewed)
        break;
      root = viewed;
    }
    auto arg = dyn_cast<BlockArgument>(root);
    if (arg && arg.getOwner() == &func.getBody().front() &&
        arg.getArgNumber() != target)
      v = bz::AllocTensorOp::create(b, ret.getLoc(),
                                    cast<RankedTensorType>(v.getType()),
                                    ValueRange{}, /*copy=*/v);
    sources.push_back(v);
  }
  // Their results are unused, and the tensor form has no memory effects:
  // nothing may erase dead ops between here and one-shot.
  for (auto [source, target] : llvm::zip(sources, resultTargets))
    bz::MaterializeInDestinationOp::create(b, ret.getLoc(), source,
                                           func.getArgument(target));
  ret->setOperands({});
  func.setFunctionType(FunctionType::get(func.getContext(),
                                         func.getArgumentTypes(), TypeRange{}));
  func.setAllResultAttrs(ArrayRef<DictionaryAttr>{});
}

/// Each switch result written, in every case, into one tensor allocated
/// before the switch (bufferization.alloc_tensor): its buffer outlives the
/// cases, which then free their own.
void StepFunction::materializeSwitches() {
  func.walk([&](scf::IndexSwitchOp sw) {
    OpBuilder b(sw);
    SmallVector<Value> dests;
    for (Value r : sw.getResults())
      dests.push_back(bz::AllocTensorOp::create(
          b, sw.getLoc(), cast<RankedTensorType>(r.getType()), ValueRange{}));
    for (Region &region : sw->getRegions()) {
      Operation *yield = region.front().getTerminator();
      b.setInsertionPoint(yield);
      // An uninitialised yield (a tensor.empty: a case that computes
      // nothing for this result) leaves the buffer as it is: its copy is
      // dropped (dropUndefinedCopies).
      for (auto [i, dest] : llvm::enumerate(dests)) {
        auto m = bz::MaterializeInDestinationOp::create(
            b, yield->getLoc(), yield->getOperand(i), dest);
        yield->setOperand(i, m.getResult());
      }
    }
  });
}

LogicalResult StepFunction::prepare() {
  if (failed(checkSignature()))
    return failure();
  applyElementwiseToLinalg(func);
  if (failed(checkOps()))
    return failure();
  if (failed(planHostCounts()))
    return failure();
  materializeSwitches();
  materializeResults();
  return success();
}

/// A switch result is the buffer every case wrote (materializeSwitches):
/// the switch returns nothing.
LogicalResult StepFunction::dropSwitchResults() {
  SmallVector<scf::IndexSwitchOp> switches;
  func.walk([&](scf::IndexSwitchOp sw) {
    if (sw.getNumResults())
      switches.push_back(sw);
  });
  for (scf::IndexSwitchOp sw : switches) {
    for (OpResult r : sw->getResults()) {
      Value common;
      for (Region &region : sw->getRegions()) {
        Value v =
            region.front().getTerminator()->getOperand(r.getResultNumber());
        if ((common && v != common) ||
            sw->isAncestor(v.getParentBlock()->getParentOp()))
          return sw.emitOpError("result #")
                 << r.getResultNumber()
                 << " was not bufferized into one buffer for all cases";
        common = v;
      }
      r.replaceAllUsesWith(common);
    }
    OpBuilder b(sw);
    auto bare =
        scf::IndexSwitchOp::create(b, sw.getLoc(), TypeRange{}, sw.getArg(),
                                   sw.getCasesAttr(), sw.getNumCases());
    for (auto [from, to] : llvm::zip(sw->getRegions(), bare->getRegions())) {
      to.takeBody(from);
      Operation *yield = to.front().getTerminator();
      yield->setOperands({});
    }
    sw.erase();
  }
  return success();
}

/// muir.group_rank: the exec op, or 0 on a group of one.
void StepFunction::lowerGroupRanks() {
  SmallVector<GroupRankOp> ranks;
  func.walk([&](GroupRankOp gr) { ranks.push_back(gr); });
  for (GroupRankOp gr : ranks) {
    OpBuilder b(gr);
    Value rank = gr.getGroupSize() == 1
                     ? Value(arith::ConstantIndexOp::create(b, gr.getLoc(), 0))
                     : Value(mx::GroupRankOp::create(
                           b, gr.getLoc(), b.getIndexType(),
                           mx::GroupAttr::get(b.getContext(), gr.getGridAttr(),
                                              gr.getGridAxes())));
    gr.getRank().replaceAllUsesWith(rank);
    gr.erase();
  }
}

/// The order of ops in their blocks, numbered once per block. MLIR's
/// isBeforeInBlock renumbers the whole block after every insertion or move
/// into it, which made the loops below that move ops and compare others
/// quadratic in the ops of a step (a Kimi-K2 step has hundreds of
/// thousands). An op moved or made in a numbered block is placed() (numbered
/// between its new neighbours) and an erased one forgotten first; other ops
/// moved or made since fall back to isBeforeInBlock.
class BlockOrder {
public:
  bool before(Operation *a, Operation *b) {
    if (a->getBlock() == b->getBlock()) {
      llvm::DenseMap<Operation *, double> &at = positions(a->getBlock());
      auto ia = at.find(a), ib = at.find(b);
      if (ia != at.end() && ib != at.end())
        return ia->second < ib->second;
    }
    return a->isBeforeInBlock(b);
  }
  void forget(Operation *op) {
    for (auto &entry : numbered)
      entry.second.erase(op);
  }
  /// Numbers `x`, just moved or made, between its neighbours in its
  /// block (forgotten where they are not numbered).
  void placed(Operation *x) {
    forget(x);
    Operation *lo = x->getPrevNode(), *hi = x->getNextNode();
    llvm::DenseMap<Operation *, double> &at = positions(x->getBlock());
    auto il = lo ? at.find(lo) : at.end(), ih = hi ? at.find(hi) : at.end();
    if ((lo && il == at.end()) || (hi && ih == at.end()) || (!lo && !hi))
      return;
    double l = lo ? il->second : ih->second - 1;
    double h = hi ? ih->second : il->second + 1;
    double mid = (l + h) / 2;
    if (l < mid && mid < h)
      at[x] = mid;
  }

private:
  llvm::DenseMap<Operation *, double> &positions(Block *block) {
    auto [it, fresh] = numbered.try_emplace(block);
    if (fresh) {
      double n = 0;
      for (Operation &op : *block)
        it->second[&op] = n++;
    }
    return it->second;
  }
  llvm::DenseMap<Block *, llvm::DenseMap<Operation *, double>> numbered;
};

/// The ops of `block` that use `buffer` or a view of it, each as its
/// ancestor in `block`.
SmallVector<Operation *> usersIn(Block &block, Value buffer) {
  SmallVector<Operation *> users;
  SmallVector<Value> work{buffer};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (Operation *user : v.getUsers()) {
      if (auto view = dyn_cast<ViewLikeOpInterface>(user))
        if (view.getViewSource() == v)
          llvm::append_range(work, user->getResults());
      if (Operation *top = block.findAncestorOpInBlock(*user))
        users.push_back(top);
    }
  }
  return users;
}

/// A loop's buffers after one-shot: each step's fresh allocations are made
/// once, before the loop (every step writes them before it reads them), and
/// a carried buffer that each step computes anew (a Newton-Schulz iterate:
/// the step reads X while it writes X') alternates between two buffers
/// made before the loop, the step writing the one it does not read. The
/// first of the two is the initial buffer when nothing else uses it, else a
/// copy of it. So a loop allocates nothing, and freeAllocations frees its
/// buffers after it, at the end of its block.
LogicalResult StepFunction::placeLoopBuffers() {
  SmallVector<scf::ForOp> loops;
  func.walk([&](scf::ForOp loop) { loops.push_back(loop); }); // inner first
  IRRewriter rewriter(func.getContext());
  BlockOrder order;
  for (scf::ForOp loop : loops) {
    Block *body = loop.getBody();
    Operation *yield = body->getTerminator();
    // The carried buffers and the allocation each step yields for them.
    SmallVector<std::pair<unsigned, memref::AllocOp>> carried;
    for (auto [i, arg] : llvm::enumerate(loop.getRegionIterArgs())) {
      if (!isa<MemRefType>(arg.getType()))
        continue;
      Value next = yield->getOperand(i);
      if (next == arg)
        continue;
      auto alloc = next.getDefiningOp<memref::AllocOp>();
      if (!alloc || alloc->getBlock() != body ||
          alloc.getType() != arg.getType() ||
          !alloc.getDynamicSizes().empty())
        return loop.emitOpError("carries buffer #")
               << i << ", which a step does not compute into a fresh buffer "
               << "of its own type";
      carried.push_back({static_cast<unsigned>(i), alloc});
    }
    // Every other allocation of a step: once, before the loop.
    for (auto alloc : llvm::make_early_inc_range(body->getOps<memref::AllocOp>()))
      if (alloc.getDynamicSizes().empty() &&
          llvm::none_of(carried, [&](auto &c) { return c.second == alloc; }))
        alloc->moveBefore(loop);
    if (carried.empty())
      continue;
    // The two buffers of each carried one: the first holds the initial
    // value, the second (the step's own allocation, made before the loop)
    // is written by step 0.
    SmallVector<Value> spares;
    for (auto [i, alloc] : carried) {
      OpOperand &init = loop.getInitArgsMutable()[i];
      Value first = init.get();
      // The initial buffer itself when nothing uses it from the loop on.
      auto initAlloc = first.getDefiningOp<memref::AllocOp>();
      bool ownInit =
          initAlloc && initAlloc->getBlock() == loop->getBlock() &&
          initAlloc.getType() == alloc.getType() &&
          llvm::all_of(usersIn(*loop->getBlock(), first), [&](Operation *u) {
            return u != loop ? order.before(u, loop)
                             : llvm::count(loop->getOperands(), first) == 1;
          });
      if (!ownInit) {
        rewriter.setInsertionPoint(loop);
        first = memref::AllocOp::create(rewriter, loop.getLoc(),
                                        alloc.getType(),
                                        alloc.getAlignmentAttr());
        copyBuffer(rewriter, loop.getLoc(), init.get(), first);
      }
      init.set(first);
      alloc->moveBefore(loop);
      spares.push_back(alloc.getResult());
    }
    rewriter.setInsertionPoint(loop);
    order.forget(loop); // replaced (and erased) below
    FailureOr<LoopLikeOpInterface> grown =
        cast<LoopLikeOpInterface>(loop.getOperation())
            .replaceWithAdditionalYields(
                rewriter, spares, /*replaceInitOperandUsesInLoop=*/false,
                [&](OpBuilder &, Location,
                    ArrayRef<BlockArgument> added) {
                  // The buffer this step read is the next one's to write
                  // (argument 0 of the body is the induction variable).
                  Block *step = added.front().getOwner();
                  SmallVector<Value> read;
                  for (auto [i, alloc] : carried)
                    read.push_back(step->getArgument(1 + i));
                  return read;
                });
    if (failed(grown))
      return loop.emitOpError("could not carry its buffers in pairs");
    auto updated = cast<scf::ForOp>(grown->getOperation());
    unsigned extra = updated.getNumRegionIterArgs() - carried.size();
    for (auto [j, entry] : llvm::enumerate(carried)) {
      Value spare = updated.getRegionIterArgs()[extra + j];
      // The step writes the spare and yields it as the next value.
      rewriter.replaceUsesWithIf(entry.second.getResult(), spare,
                                 [&](OpOperand &use) {
                                   return updated->isProperAncestor(
                                       use.getOwner());
                                 });
    }
  }
  return success();
}

/// A copy of a buffer nothing wrote (a tensor.empty's: the padding of a
/// concatenation) leaves its target undefined, as it was.
void StepFunction::dropUndefinedCopies() {
  SmallVector<Operation *> copies;
  func.walk([&](Operation *op) {
    if (isa<memref::CopyOp, linalg::CopyOp>(op))
      copies.push_back(op);
  });
  for (Operation *copy : copies) {
    auto alloc = copy->getOperand(0).getDefiningOp<memref::AllocOp>();
    if (!alloc || !alloc->hasOneUse())
      continue;
    Value target = copy->getOperand(1);
    copy->erase();
    alloc.erase();
    // The view of the target it went into, unless something else uses it.
    while (target.use_empty() && target.getDefiningOp<ViewLikeOpInterface>()) {
      Operation *view = target.getDefiningOp();
      target = cast<ViewLikeOpInterface>(view).getViewSource();
      view->erase();
    }
  }
}

/// A result that a runtime call (or a kernel, or copies into views)
/// computes into a fresh buffer of `block`, then copies into a buffer that
/// outlives it (an argument, or a switch result's buffer made before the
/// switch), is computed in that buffer instead when nothing in `block`
/// touches it from the fresh buffer's first use on; an element-wise kernel
/// may also read the buffer it then writes.
void computeInPlaceIn(Block &block) {
  SmallVector<memref::CopyOp> copies;
  for (auto copy : block.getOps<memref::CopyOp>())
    copies.push_back(copy);
  for (memref::CopyOp copy : copies) {
    Value target = copy.getTarget();
    auto arg = dyn_cast<BlockArgument>(target);
    bool outlives = arg ? isa<func::FuncOp>(arg.getOwner()->getParentOp())
                        : target.getDefiningOp<memref::AllocOp>() &&
                              target.getDefiningOp()->getBlock() != &block;
    auto alloc = copy.getSource().getDefiningOp<memref::AllocOp>();
    if (!outlives || !alloc || alloc->getBlock() != &block ||
        alloc.getType() != target.getType())
      continue;
    SmallVector<Operation *> uses = usersIn(block, alloc.getResult());
    Operation *first = nullptr;
    bool copiedLast = true;
    for (Operation *use : uses) {
      if (use == copy)
        continue;
      copiedLast &= use->isBeforeInBlock(copy);
      if (!first || use->isBeforeInBlock(first))
        first = use;
    }
    if (!first || !copiedLast)
      continue;
    bool safe = llvm::all_of(usersIn(block, target), [&](Operation *use) {
      if (use == copy || use->isBeforeInBlock(first))
        return true;
      auto g = dyn_cast<linalg::GenericOp>(use);
      return use == first && g && isElementwise(g) &&
             llvm::is_contained(g.getDpsInputs(), target) &&
             llvm::is_contained(g.getDpsInits(), alloc.getResult()) &&
             !llvm::is_contained(g.getDpsInits(), target);
    });
    if (!safe)
      continue;
    alloc.getResult().replaceAllUsesWith(target);
    copy.erase();
    alloc.erase();
  }
}

/// Whether two subviews of static offsets, sizes and unit strides share
/// no element (some dimension's ranges do not meet).
bool disjointSlots(memref::SubViewOp a, memref::SubViewOp b) {
  auto unit = [](memref::SubViewOp v) {
    return llvm::all_of(v.getStaticStrides(),
                        [](int64_t s) { return s == 1; });
  };
  if (!unit(a) || !unit(b) || a.getStaticOffsets().size() !=
                                  b.getStaticOffsets().size())
    return false;
  for (auto [ao, as, bo, bs] :
       llvm::zip(a.getStaticOffsets(), a.getStaticSizes(),
                 b.getStaticOffsets(), b.getStaticSizes())) {
    if (ShapedType::isDynamic(ao) || ShapedType::isDynamic(as) ||
        ShapedType::isDynamic(bo) || ShapedType::isDynamic(bs))
      return false;
    if (ao + as <= bo || bo + bs <= ao)
      return true;
  }
  return false;
}

/// A fresh buffer that element-wise kernels compute and that is then
/// copied (as it is, or through a memref.expand_shape) into a slot of a
/// fresh buffer of `block` (a batch's stack: a concatenation's subviews) is
/// computed in that slot instead: the stack and its slot are made before
/// the kernel, the copy goes. Only when kernels alone write or read the
/// fresh buffer (runtime calls take identity layouts), the copy is its last
/// use, and nothing but subviews and copies into them uses the stack before
/// this copy (the slots of a concatenation are disjoint). A Newton-Schulz
/// batch's momentum updates then go straight into its stack: one pass over
/// them less.
void stackInPlaceIn(Block &block) {
  BlockOrder order;
  SmallVector<memref::CopyOp> copies;
  for (auto copy : block.getOps<memref::CopyOp>())
    copies.push_back(copy);
  for (memref::CopyOp copy : copies) {
    auto slot = copy.getTarget().getDefiningOp<memref::SubViewOp>();
    if (!slot || slot->getBlock() != &block || slot->getNumOperands() != 1)
      continue;
    auto stack = slot.getSource().getDefiningOp<memref::AllocOp>();
    if (!stack || stack->getBlock() != &block || stack->getNumOperands() != 0)
      continue;
    Value source = copy.getSource();
    auto expand = source.getDefiningOp<memref::ExpandShapeOp>();
    if (expand && (!expand->hasOneUse() || expand->getBlock() != &block))
      continue;
    auto alloc = (expand ? expand.getSrc() : source)
                     .getDefiningOp<memref::AllocOp>();
    if (!alloc || alloc->getBlock() != &block || alloc->getNumOperands() != 0)
      continue;
    Operation *first = nullptr;
    bool ok = true;
    for (Operation *use : usersIn(block, alloc.getResult())) {
      if (use == copy || use == expand)
        continue;
      auto g = dyn_cast<linalg::GenericOp>(use);
      ok &= g && order.before(use, copy);
      if (!first || order.before(use, first))
        first = use;
    }
    if (!ok || !first)
      continue;
    // Before the copy, the stack is only viewed, or used through slots
    // disjoint from this one (the other slots' copies and kernels).
    for (Operation *use : usersIn(block, stack.getResult())) {
      if (!order.before(use, copy) || isa<memref::SubViewOp>(use))
        continue;
      bool viaOtherSlots = false;
      for (Value operand : use->getOperands()) {
        Value v = operand;
        while (auto *def = v.getDefiningOp()) {
          if (!isa<memref::CollapseShapeOp, memref::ExpandShapeOp>(def))
            break;
          v = def->getOperand(0);
        }
        if (v == stack.getResult()) {
          viaOtherSlots = false;
          break;
        }
        auto other = v.getDefiningOp<memref::SubViewOp>();
        if (!other || other.getSource() != stack.getResult())
          continue;
        if (!disjointSlots(other, slot)) {
          viaOtherSlots = false;
          break;
        }
        viaOtherSlots = true;
      }
      ok &= viaOtherSlots;
    }
    if (!ok)
      continue;
    if (order.before(first, stack)) {
      stack->moveBefore(first);
      order.placed(stack);
    }
    if (order.before(first, slot)) {
      slot->moveAfter(stack);
      order.placed(slot);
    }
    OpBuilder b(first);
    Value into = slot.getResult();
    if (expand) {
      auto collapse = memref::CollapseShapeOp::create(
          b, expand.getLoc(), into, expand.getReassociationIndices());
      order.placed(collapse);
      into = collapse;
    }
    alloc.getResult().replaceAllUsesWith(into);
    order.forget(copy);
    copy.erase();
    if (expand) {
      order.forget(expand);
      expand.erase();
    }
    order.forget(alloc);
    alloc.erase();
  }
}

/// computeInPlace in the function's body and in every switch case.
void StepFunction::computeInPlace() {
  computeInPlaceIn(func.getBody().front());
  stackInPlaceIn(func.getBody().front());
  func.walk([](scf::IndexSwitchOp sw) {
    for (Region &region : sw->getRegions()) {
      computeInPlaceIn(region.front());
      stackInPlaceIn(region.front());
    }
  });
}

/// Every allocation is freed at the end of its block (the function's, or
/// a switch case's), in the order of allocation.
void StepFunction::freeAllocations() {
  SmallVector<memref::AllocOp> allocs;
  func.walk([&](memref::AllocOp a) { allocs.push_back(a); });
  for (memref::AllocOp a : allocs) {
    OpBuilder b(a->getBlock()->getTerminator());
    memref::DeallocOp::create(b, a.getLoc(), a.getResult());
  }
}

LogicalResult StepFunction::finish() {
  if (failed(dropSwitchResults()))
    return failure();
  // Copies of a buffer onto itself (a result that one-shot computed in
  // place) do nothing.
  func.walk([](memref::CopyOp c) {
    if (c.getSource() == c.getTarget())
      c.erase();
  });
  lowerGroupRanks();
  if (failed(placeLoopBuffers()))
    return failure();
  dropUndefinedCopies();
  computeInPlace();
  freeAllocations();
  // The exec function is marked as such, and only as such (no muir.per_rank:
  // its stage is exec).
  func->setDiscardableAttrs(ArrayRef<NamedAttribute>{});
  func->setAttr(MuirDialect::EntryAttrHelper::getNameStr(),
                UnitAttr::get(func.getContext()));
  return success();
}

/// One-shot bufferize over `scratch`: function boundaries with identity
/// layouts, buffers in the memory space of their tensor's encoding.
LogicalResult bufferize(ModuleOp scratch) {
  bz::OneShotBufferizationOptions options;
  options.bufferizeFunctionBoundaries = true;
  options.setFunctionBoundaryTypeConversion(
      bz::LayoutMapOption::IdentityLayoutMap);
  options.unknownTypeConverterFn = [](TensorType t, Attribute space,
                                      const bz::BufferizationOptions &) {
    return bz::getMemRefTypeWithStaticIdentityLayout(t, space);
  };
  options.defaultMemorySpaceFn = [](TensorType t) -> std::optional<Attribute> {
    if (auto ranked = dyn_cast<RankedTensorType>(t))
      return ranked.getEncoding();
    return Attribute();
  };
  options.memCpyFn = [](OpBuilder &b, Location loc, Value from,
                        Value to) -> LogicalResult {
    copyBuffer(b, loc, from, to);
    return success();
  };
  options.bufferAlignment = 64;
  // A Newton-Schulz loop yields each step's fresh iterate (placeLoopBuffers
  // then alternates two buffers).
  options.allowReturnAllocsFromLoops = true;
  // runOneShotModuleBufferize, in its steps: the writable marks are
  // stripped between analysis and rewriting, all of a function's at once
  // (the rewrite strips them one argument at a time, each rebuilding the
  // whole list: quadratic in a step's thousands of arguments).
  bz::OneShotAnalysisState analysis(scratch, options);
  bz::BufferizationState state;
  if (failed(bz::analyzeModuleOp(scratch, analysis)) ||
      failed(bz::insertTensorCopies(scratch, analysis, state)))
    return failure();
  for (auto func : scratch.getOps<func::FuncOp>()) {
    SmallVector<DictionaryAttr> argAttrs;
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      NamedAttrList attrs;
      if (DictionaryAttr dict = func.getArgAttrDict(i))
        for (NamedAttribute attr : dict)
          if (attr.getName() != bz::BufferizationDialect::kWritableAttrName)
            attrs.push_back(attr);
      argAttrs.push_back(attrs.getDictionary(func.getContext()));
    }
    func.setAllArgAttrs(argAttrs);
  }
  return bz::bufferizeModuleOp(scratch, options, state);
}

struct LowerToExecPass
    : public mlir::muir::impl::MuirLowerToExecBase<LowerToExecPass> {
  void runOnOperation() override {
    if (failed(checkPassInput(getOperation(), getArgument(),
                              PassInput::Planned)))
      return signalPassFailure();
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> funcs;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal() ||
          func->hasAttr(MuirDialect::EntryAttrHelper::getNameStr()))
        continue;
      bool named = false;
      for (unsigned i = 0; i < func.getNumArguments(); ++i)
        named |=
            bool(func.getArgAttr(i, MuirDialect::NameAttrHelper::getNameStr()));
      if (named) {
        funcs.push_back(func);
        continue;
      }
      // A function of muir ops that is no step (no named argument) would
      // be left for the next pass to fail on: said here, naming it.
      Operation *muirOp = nullptr;
      func.walk([&](Operation *op) {
        if (isa_and_nonnull<MuirDialect>(op->getDialect())) {
          muirOp = op;
          return WalkResult::interrupt();
        }
        return WalkResult::advance();
      });
      if (muirOp) {
        func.emitError("function @")
                .append(func.getSymName(),
                        " holds muir ops but none of its arguments has a "
                        "'muir.name': muir-lower-to-exec lowers step "
                        "functions, whose tensor arguments are named (e.g. "
                        "{muir.name = \"w\", muir.role = #muir.role<param>})")
                .attachNote(muirOp->getLoc())
            << "its first muir op";
        return signalPassFailure();
      }
    }
    if (funcs.empty())
      return;
    std::vector<StepFunction> steps;
    for (func::FuncOp func : funcs) {
      steps.emplace_back(func);
      if (failed(steps.back().prepare()))
        return signalPassFailure();
    }

    // One-shot's module bufferization runs on the step functions alone, in
    // a module of their own with the grids their collectives name; other
    // functions are left as they are.
    OwningOpRef<ModuleOp> scratch = ModuleOp::create(module.getLoc());
    for (GridOp grid : module.getOps<GridOp>())
      scratch->push_back(grid.clone());
    SmallVector<Operation *> before;
    for (func::FuncOp func : funcs) {
      Operation *next = func->getNextNode();
      while (next && llvm::is_contained(funcs, next))
        next = next->getNextNode();
      before.push_back(next);
      func->remove();
      scratch->push_back(func);
    }
    if (failed(bufferize(*scratch)))
      return signalPassFailure();

    // Constants became globals: into the module, first renamed (with their
    // uses, in the scratch module) where the module has a symbol of that
    // name.
    SymbolTable symbols(module), scratchSymbols(*scratch);
    for (auto global :
         llvm::make_early_inc_range(scratch->getOps<memref::GlobalOp>())) {
      if (symbols.lookup(global.getSymNameAttr()) &&
          failed(scratchSymbols.renameToUnique(global, {&symbols})))
        return signalPassFailure();
      global->remove();
      symbols.insert(global, module.getBody()->begin());
    }
    for (auto [func, next] : llvm::zip(funcs, before)) {
      func->remove();
      if (next)
        module.getBody()->getOperations().insert(next->getIterator(), func);
      else
        module.push_back(func);
    }
    for (StepFunction &step : steps)
      if (failed(step.finish()))
        return signalPassFailure();
  }
};

} // namespace
