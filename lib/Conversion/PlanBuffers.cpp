//===- PlanBuffers.cpp - a CPU step's temporaries at planned offsets ------===//
//
// After muir-exec-to-runtime-calls has freed each buffer right after its
// last use, every static temporary of a function has a known life: from
// its allocation to its free, as positions of their ancestors in the
// function's entry block (a loop's buffers live for the whole loop op).
// Buffers whose lives overlap get disjoint bytes of one block, the
// function's arena, allocated on entry and freed before it returns; the
// others share bytes. Offsets are chosen largest buffer first, each at the
// lowest offset clear of the placed buffers it overlaps (a greedy answer to
// the dynamic storage allocation problem, as TFLite's and XLA's buffer
// assignment do), so the arena is about what the function has live at once
// whatever the order of its allocations, where a first fit at run time
// leaves holes a larger buffer cannot use.
//
//===----------------------------------------------------------------------===//
#include "Muir/MuirDialect.h"
#include "muir/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"

#include "llvm/ADT/DenseSet.h"

#include <algorithm>

namespace mlir::muir {
#define GEN_PASS_DEF_MUIRPLANBUFFERS
#include "muir/Conversion/Passes.h.inc"
} // namespace mlir::muir

using namespace mlir;

namespace {

/// The alignment of every planned buffer's offset (the allocations'
/// own, muir-lower-to-exec's 64, or more).
constexpr int64_t kMinAlign = 64;

struct Planned {
  memref::AllocOp alloc;
  memref::DeallocOp dealloc;
  int64_t bytes = 0, align = kMinAlign;
  unsigned first = 0, last = 0; ///< positions in the entry block
  int64_t offset = -1;
};

/// The bytes of a static, identity-layout, default-space buffer, or -1.
int64_t staticBytes(MemRefType type) {
  if (!type.hasStaticShape() || !type.getLayout().isIdentity() ||
      type.getMemorySpace())
    return -1;
  Type element = type.getElementType();
  if (!element.isIntOrIndexOrFloat() || element.isIndex())
    return -1;
  int64_t bits = element.getIntOrFloatBitWidth();
  if (bits % 8)
    return -1;
  return type.getNumElements() * (bits / 8);
}

/// Whether every op from `op` up to (not including) `top`, the entry
/// block's op that holds it, runs its regions one iteration at a time (a
/// buffer of an iteration is freed before the next one allocates it).
bool sequentialNesting(Operation *op, Operation *top) {
  for (Operation *p = op->getParentOp(); p && p != top->getParentOp();
       p = p->getParentOp())
    if (!isa<scf::ForOp, scf::IfOp, scf::WhileOp, scf::ExecuteRegionOp>(p))
      return false;
  return true;
}

/// The uses of `buffer` (and of its views) are all before or at its free:
/// nothing hands it on (a yield, a return, a call's result memref) but the
/// views, which the free's position covers (muir-exec-to-runtime-calls
/// placed it after the last use of any of them).
bool staysInItsLife(Value buffer, memref::DeallocOp dealloc) {
  SmallVector<Value> values{buffer};
  while (!values.empty()) {
    Value v = values.pop_back_val();
    for (Operation *user : v.getUsers()) {
      if (user == dealloc.getOperation())
        continue;
      if (isa<RegionBranchTerminatorOpInterface, func::ReturnOp>(user) ||
          isa<memref::DeallocOp>(user))
        return false;
      Operation *at = dealloc->getBlock()->findAncestorOpInBlock(*user);
      if (!at || dealloc->isBeforeInBlock(at))
        return false;
      bool view = isa<ViewLikeOpInterface, memref::CollapseShapeOp,
                      memref::ExpandShapeOp, memref::CastOp>(user);
      if (view) {
        llvm::append_range(values, user->getResults());
        continue;
      }
      if (llvm::any_of(user->getResultTypes(),
                       [](Type t) { return isa<BaseMemRefType>(t); }))
        return false;
    }
  }
  return true;
}

/// Places the buffers in `order`, each at the lowest aligned offset clear
/// of the placed buffers whose lives overlap its own; returns the bytes
/// the placement needs.
int64_t placeInOrder(ArrayRef<Planned *> order) {
  SmallVector<Planned *> placed;
  int64_t total = 0;
  for (Planned *p : order) {
    SmallVector<std::pair<int64_t, int64_t>> taken;
    for (Planned *q : placed)
      if (q->first <= p->last && p->first <= q->last)
        taken.push_back({q->offset, q->offset + q->bytes});
    llvm::sort(taken);
    int64_t at = 0;
    for (auto [lo, hi] : taken) {
      if (lo >= at + p->bytes)
        break;
      at = std::max(at, (hi + p->align - 1) / p->align * p->align);
    }
    p->offset = at;
    total = std::max(total, at + p->bytes);
    placed.push_back(p);
  }
  return total;
}

/// Two orders, as TFLite's arena planner tries them, and the smaller
/// placement kept: by size (largest first), and by breadth (the positions
/// with the most bytes live first, each position's buffers largest
/// first), which lets the long-lived buffers of the busiest moment settle
/// before a large buffer of a quieter one takes their place. Ties go to
/// the allocations' order.
int64_t place(MutableArrayRef<Planned> buffers) {
  auto bySize = [](const Planned *a, const Planned *b) {
    if (a->bytes != b->bytes)
      return a->bytes > b->bytes;
    return a < b;
  };
  SmallVector<Planned *> sizeOrder;
  for (Planned &p : buffers)
    sizeOrder.push_back(&p);
  llvm::sort(sizeOrder, bySize);

  unsigned end = 0;
  for (Planned &p : buffers)
    end = std::max(end, p.last + 1);
  SmallVector<int64_t> breadth(end, 0);
  for (Planned &p : buffers)
    for (unsigned t = p.first; t <= p.last; ++t)
      breadth[t] += p.bytes;
  SmallVector<unsigned> moments(end);
  for (unsigned t = 0; t < end; ++t)
    moments[t] = t;
  llvm::sort(moments, [&](unsigned a, unsigned b) {
    if (breadth[a] != breadth[b])
      return breadth[a] > breadth[b];
    return a < b;
  });
  SmallVector<Planned *> breadthOrder;
  DenseSet<Planned *> taken;
  for (unsigned t : moments) {
    if (breadth[t] == 0)
      break;
    // (sizeOrder is largest first: so is each moment's share.)
    for (Planned *p : sizeOrder)
      if (p->first <= t && t <= p->last && taken.insert(p).second)
        breadthOrder.push_back(p);
  }

  int64_t bySizeTotal = placeInOrder(sizeOrder);
  SmallVector<int64_t> sizeOffsets;
  for (Planned &p : buffers)
    sizeOffsets.push_back(p.offset);
  int64_t byBreadthTotal = placeInOrder(breadthOrder);
  if (byBreadthTotal <= bySizeTotal)
    return byBreadthTotal;
  for (auto [p, offset] : llvm::zip(buffers, sizeOffsets))
    p.offset = offset;
  return bySizeTotal;
}

void planFunction(func::FuncOp fn) {
  if (fn.isExternal() || !fn.getBody().hasOneBlock())
    return;
  Block &entry = fn.getBody().front();
  DenseMap<Operation *, unsigned> position;
  unsigned n = 0;
  for (Operation &op : entry)
    position[&op] = n++;
  SmallVector<Planned> buffers;
  fn.walk([&](memref::AllocOp alloc) {
    int64_t bytes = staticBytes(alloc.getType());
    if (bytes <= 0 || !alloc.getDynamicSizes().empty() ||
        !alloc.getSymbolOperands().empty())
      return;
    memref::DeallocOp dealloc;
    for (Operation *user : alloc->getUsers())
      if (auto d = dyn_cast<memref::DeallocOp>(user)) {
        if (dealloc)
          return; // freed twice: left alone
        dealloc = d;
      }
    if (!dealloc || dealloc->getBlock() != alloc->getBlock())
      return;
    Operation *top = entry.findAncestorOpInBlock(*alloc);
    Operation *topFree = entry.findAncestorOpInBlock(*dealloc);
    if (!top || !topFree || !sequentialNesting(alloc, top) ||
        !staysInItsLife(alloc.getResult(), dealloc))
      return;
    Planned p;
    p.alloc = alloc;
    p.dealloc = dealloc;
    p.bytes = bytes;
    p.align = std::max<int64_t>(kMinAlign, alloc.getAlignment().value_or(0));
    p.first = position[top];
    p.last = position[topFree];
    buffers.push_back(p);
  });
  if (buffers.empty())
    return;

  int64_t total = place(buffers);
  // The arena: allocated first, freed before the function returns.
  OpBuilder b(fn.getContext());
  b.setInsertionPointToStart(&entry);
  Location loc = fn.getLoc();
  auto arenaType = MemRefType::get({total}, b.getI8Type());
  int64_t align = kMinAlign;
  for (Planned &p : buffers)
    align = std::max(align, p.align);
  Value arena =
      memref::AllocOp::create(b, loc, arenaType, b.getI64IntegerAttr(align));
  b.setInsertionPoint(entry.getTerminator());
  memref::DeallocOp::create(b, loc, arena);
  for (Planned &p : buffers) {
    b.setInsertionPoint(p.alloc);
    Value offset =
        arith::ConstantIndexOp::create(b, p.alloc.getLoc(), p.offset);
    Value view = memref::ViewOp::create(b, p.alloc.getLoc(), p.alloc.getType(),
                                        arena, offset, ValueRange{});
    p.alloc.getResult().replaceAllUsesWith(view);
    p.dealloc.erase();
    p.alloc.erase();
  }
  fn->setAttr(muir::MuirDialect::ArenaBytesAttrHelper::getNameStr(),
              b.getI64IntegerAttr(total));
}

struct PlanBuffersPass
    : public mlir::muir::impl::MuirPlanBuffersBase<PlanBuffersPass> {
  void runOnOperation() override {
    for (auto fn : getOperation().getOps<func::FuncOp>())
      planFunction(fn);
  }
};

} // namespace
