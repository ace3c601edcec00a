//===- OutlineLoops.cpp - one function per loop nest of the CPU step -----===//
//
// LLVM optimises function by function, and the loop passes' cost (scalar
// evolution above all) grows faster than the function: a step over many
// tensors as one function spent most of its compile time there. Each
// top-level loop nest of the step becomes a private function of its own
// (never inlined back), so the cost grows with the number of loops, not
// with its square.
//
//===----------------------------------------------------------------------===//
#include "muir/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::muir {
#define GEN_PASS_DEF_MUIROUTLINELOOPS
#include "muir/Passes.h.inc"
} // namespace mlir::muir

using namespace mlir;

namespace {

/// Whether the bare-pointer calling convention can pass `type` (a static
/// layout), as convert-func-to-llvm{use-bare-ptr-memref-call-conv} needs.
bool passable(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  if (!memref)
    return type.isIntOrIndexOrFloat();
  int64_t offset = 0;
  SmallVector<int64_t> strides;
  if (!memref.hasStaticShape() ||
      failed(memref.getStridesAndOffset(strides, offset)))
    return false;
  return !ShapedType::isDynamic(offset) &&
         llvm::none_of(strides, ShapedType::isDynamic);
}

struct OutlineLoopsPass
    : public mlir::muir::impl::MuirOutlineLoopsBase<OutlineLoopsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> funcs;
    for (auto f : module.getOps<func::FuncOp>())
      if (!f.isDeclaration() && !f->hasAttr("passthrough"))
        funcs.push_back(f);
    for (func::FuncOp f : funcs) {
      SmallVector<scf::ForOp> loops;
      for (Operation &op : f.getBody().front())
        if (auto loop = dyn_cast<scf::ForOp>(op))
          loops.push_back(loop);
      int64_t n = 0;
      for (scf::ForOp loop : loops)
        outline(symbols, f, loop, n);
    }
  }

  /// Outlined functions by a hash of their type and body.
  DenseMap<llvm::hash_code, SmallVector<func::FuncOp, 1>> outlined;

  void outline(SymbolTable &symbols, func::FuncOp f, scf::ForOp loop,
               int64_t &n) {
    if (loop.getNumResults() != 0)
      return;
    // The values the nest uses from outside it; constants are copied in,
    // and so is the scalar arithmetic that computes a captured scalar from
    // the step's own scalars (a kernel's coefficients from the run-time
    // hyperparameters), so that the step itself holds one call per nest
    // and the function takes what every nest of its kind takes.
    llvm::SetVector<Value> captured;
    SmallVector<Operation *> constants, pulled;
    llvm::SmallPtrSet<Operation *, 8> seenConstants, seenPulled;
    bool ok = true;
    std::function<void(Value)> capture = [&](Value v) {
      Operation *def = v.getDefiningOp();
      if (def && def->hasTrait<OpTrait::ConstantLike>()) {
        if (seenConstants.insert(def).second)
          constants.push_back(def);
        return;
      }
      if (def && def->getBlock() == loop->getBlock() && isScalarMath(def) &&
          seenPulled.size() < kMaxPulled) {
        if (seenPulled.insert(def).second) {
          pulled.push_back(def);
          for (Value operand : def->getOperands())
            capture(operand);
        }
        return;
      }
      captured.insert(v);
    };
    loop->walk([&](Operation *op) {
      for (Value v : op->getOperands())
        // Not defined in the nest (its ops' results, its blocks' arguments).
        if (!loop->isAncestor(v.getParentRegion()->getParentOp()))
          capture(v);
    });
    llvm::sort(pulled, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    // What the function takes for each captured value: the value itself,
    // or, for a view (an offset or other strides) that the nest only loads
    // from and stores to, its base buffer and its offset, so that the
    // views of one shape at different places share one function.
    SmallVector<Value> operands;
    SmallVector<bool> viaBase;
    for (Value v : captured) {
      bool rebase = isRebasable(v, loop);
      ok &= rebase || passable(v.getType());
      viaBase.push_back(rebase);
    }
    if (!ok)
      return;
    OpBuilder at(loop);
    for (auto [v, rebase] : llvm::zip(captured, viaBase)) {
      if (!rebase) {
        operands.push_back(v);
        continue;
      }
      auto meta =
          memref::ExtractStridedMetadataOp::create(at, loop.getLoc(), v);
      operands.push_back(meta.getBaseBuffer());
      operands.push_back(meta.getOffset());
    }
    OpBuilder b(f);
    SmallVector<Type> types;
    for (Value v : operands)
      types.push_back(v.getType());
    auto callee = func::FuncOp::create(
        b, loop.getLoc(), (f.getName() + "_loop" + Twine(n)).str(),
        b.getFunctionType(types, {}));
    callee.setPrivate();
    // convert-func-to-llvm keeps `passthrough` (LLVM's own attributes).
    callee->setAttr("passthrough",
                    b.getArrayAttr({b.getStringAttr("noinline")}));
    Block *body = callee.addEntryBlock();
    OpBuilder inside = OpBuilder::atBlockBegin(body);
    IRMapping map;
    unsigned next = 0;
    for (auto [v, rebase] : llvm::zip(captured, viaBase)) {
      Value arg = body->getArgument(next++);
      if (rebase) {
        auto type = cast<MemRefType>(v.getType());
        auto [strides, offset] = type.getStridesAndOffset();
        arg = memref::ReinterpretCastOp::create(
            inside, loop.getLoc(), arg, OpFoldResult(body->getArgument(next++)),
            getAsIndexOpFoldResult(b.getContext(), type.getShape()),
            getAsIndexOpFoldResult(b.getContext(), strides));
      }
      map.map(v, arg);
    }
    for (Operation *c : constants)
      inside.clone(*c, map);
    for (Operation *op : pulled)
      inside.clone(*op, map);
    inside.clone(*loop, map);
    func::ReturnOp::create(inside, loop.getLoc());
    // A nest equal to one outlined before (the same types and body) calls
    // that function instead.
    func::FuncOp same = findEqual(callee);
    if (same) {
      callee.erase();
      callee = same;
    } else {
      symbols.insert(callee);
      ++n;
    }
    func::CallOp::create(at, loop.getLoc(), callee, operands);
    loop.erase();
  }

  /// At most this many scalar ops are copied into one function.
  static constexpr size_t kMaxPulled = 256;

  /// Scalar arithmetic a function can recompute from its arguments: no
  /// memory effects, no regions, scalar operands and results.
  static bool isScalarMath(Operation *op) {
    auto scalar = [](Type t) { return t.isIntOrIndexOrFloat(); };
    return op->getNumRegions() == 0 && op->getNumResults() > 0 &&
           isMemoryEffectFree(op) &&
           llvm::all_of(op->getOperandTypes(), scalar) &&
           llvm::all_of(op->getResultTypes(), scalar);
  }

  /// Whether the nest `loop` can take `v` through its base buffer and
  /// offset: a memref of static shape and strides, not of the plain
  /// row-major type, that the nest only loads from and stores to.
  static bool isRebasable(Value v, scf::ForOp loop) {
    auto type = dyn_cast<MemRefType>(v.getType());
    // The plain row-major type is passed as it is; any other layout
    // (strided, even with the row-major strides and offset 0) is rebased.
    if (!type || !type.hasStaticShape() ||
        (isa<AffineMapAttr>(type.getLayout()) &&
         type.getLayout().isIdentity()))
      return false;
    int64_t offset = 0;
    SmallVector<int64_t> strides;
    if (failed(type.getStridesAndOffset(strides, offset)) ||
        llvm::any_of(strides, ShapedType::isDynamic))
      return false;
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (!loop->isAncestor(user))
        continue;
      auto load = dyn_cast<memref::LoadOp>(user);
      auto store = dyn_cast<memref::StoreOp>(user);
      if (!(load && load.getMemRef() == v) &&
          !(store && store.getMemRef() == v))
        return false;
    }
    return true;
  }

  /// An outlined function of the same type and body as `callee`, or null
  /// (recording `callee` for the next ones).
  func::FuncOp findEqual(func::FuncOp callee) {
    llvm::hash_code hash = hash_value(callee.getFunctionType());
    callee.getBody().walk([&](Operation *op) {
      hash = llvm::hash_combine(
          hash, OperationEquivalence::computeHash(
                    op, OperationEquivalence::ignoreHashValue,
                    OperationEquivalence::ignoreHashValue,
                    OperationEquivalence::IgnoreLocations));
    });
    SmallVector<func::FuncOp, 1> &bucket = outlined[hash];
    for (func::FuncOp other : bucket)
      if (other.getFunctionType() == callee.getFunctionType() &&
          OperationEquivalence::isRegionEquivalentTo(
              &other.getBody(), &callee.getBody(),
              OperationEquivalence::IgnoreLocations))
        return other;
    bucket.push_back(callee);
    return {};
  }
};

} // namespace
