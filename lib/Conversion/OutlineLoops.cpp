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
#include "muir/Conversion/Passes.h"
#include "muir/Transforms/PassInput.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
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
#define GEN_PASS_DEF_MUIRPARALLELLOOPCALLS
#include "muir/Conversion/Passes.h.inc"
} // namespace mlir::muir

using namespace mlir;

namespace {

/// On an outlined function whose last two arguments are the range [lo, hi)
/// of its outer dimension's iterations: the number of iterations (i64),
/// which muir-parallel-loop-calls shares out. Set by muir-outline-loops,
/// read by muir-parallel-loop-calls after the lowering to LLVM (which keeps
/// a function's discardable attributes), used by nothing else.
constexpr llvm::StringLiteral kParallelRangeAttr =
    muir::MuirDialect::ParallelRangeAttrHelper::getNameStr();

/// The runtime's entry that runs fn(ctx, lo, hi) over [0, count) in parts
/// on its threads (muir-rt/Runtime.h).
constexpr llvm::StringLiteral kParallelRangeFn = "muirrt_parallel_range";

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
      SmallVector<Operation *> loops;
      for (Operation &op : f.getBody().front())
        if (isa<scf::ForOp, scf::ParallelOp>(op))
          loops.push_back(&op);
      int64_t n = 0;
      for (Operation *loop : loops)
        outline(symbols, f, loop, n);
    }
  }

  /// Outlined functions by a hash of their type and body.
  DenseMap<llvm::hash_code, SmallVector<func::FuncOp, 1>> outlined;

  void outline(SymbolTable &symbols, func::FuncOp f, Operation *loop,
               int64_t &n) {
    if (loop->getNumResults() != 0)
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
    Location loc = loop->getLoc();
    for (auto [v, rebase] : llvm::zip(captured, viaBase)) {
      if (!rebase) {
        operands.push_back(v);
        continue;
      }
      auto meta = memref::ExtractStridedMetadataOp::create(at, loc, v);
      operands.push_back(meta.getBaseBuffer());
      operands.push_back(meta.getOffset());
    }
    OpBuilder b(f);
    SmallVector<Type> types;
    for (Value v : operands)
      types.push_back(v.getType());
    // A parallel nest big enough to share out takes the range [lo, hi) of
    // its outer dimension's iterations as two more arguments.
    int64_t iterations = rangeIterations(loop);
    if (iterations > 0)
      types.append(2, b.getIndexType());
    auto callee = func::FuncOp::create(
        b, loc, (f.getName() + "_loop" + Twine(n)).str(),
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
            inside, loc, arg, OpFoldResult(body->getArgument(next++)),
            getAsIndexOpFoldResult(b.getContext(), type.getShape()),
            getAsIndexOpFoldResult(b.getContext(), strides));
      }
      map.map(v, arg);
    }
    for (Operation *c : constants)
      inside.clone(*c, map);
    for (Operation *op : pulled)
      inside.clone(*op, map);
    Operation *copy = inside.clone(*loop, map);
    if (iterations > 0) {
      restrictOuterDim(inside, cast<scf::ParallelOp>(copy),
                       body->getArgument(next), body->getArgument(next + 1));
      callee->setAttr(kParallelRangeAttr, b.getI64IntegerAttr(iterations));
    }
    func::ReturnOp::create(inside, loc);
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
    // The whole range, which muir-parallel-loop-calls shares out over
    // the runtime's threads.
    if (iterations > 0) {
      operands.push_back(arith::ConstantIndexOp::create(at, loc, 0));
      operands.push_back(arith::ConstantIndexOp::create(at, loc, iterations));
    }
    func::CallOp::create(at, loc, callee, operands);
    loop->erase();
  }

  /// Below this many innermost iterations a nest runs on the calling
  /// thread: waking another costs more (a few microseconds) than it saves.
  static constexpr int64_t kMinParallelWork = 1 << 18;

  /// The iterations of the outer dimension of `loop` when it is an
  /// scf.parallel (every iteration independent: linalg's parallel
  /// dimensions) of constant bounds, no results, and at least
  /// kMinParallelWork innermost iterations of constant bounds; else 0.
  static int64_t rangeIterations(Operation *loop) {
    auto par = dyn_cast<scf::ParallelOp>(loop);
    if (!par || par.getNumResults() != 0)
      return 0;
    auto tripCount = [](Value lb, Value ub, Value step) -> int64_t {
      std::optional<int64_t> l = getConstantIntValue(lb),
                             u = getConstantIntValue(ub),
                             s = getConstantIntValue(step);
      if (!l || !u || !s || *s <= 0)
        return -1;
      return *u > *l ? (*u - *l + *s - 1) / *s : 0;
    };
    SmallVector<int64_t> counts;
    for (auto [lb, ub, step] : llvm::zip(par.getLowerBound(),
                                         par.getUpperBound(), par.getStep()))
      counts.push_back(tripCount(lb, ub, step));
    if (counts.empty() || counts[0] < 2)
      return 0;
    // The work: the product of every nested loop's iterations (a nest of
    // unknown bounds counts as big enough once the outer ones are).
    int64_t work = 1;
    bool unknown = false;
    auto add = [&](int64_t count) {
      if (count < 0)
        unknown = true;
      else
        work = std::min<int64_t>(work * std::max<int64_t>(count, 1), 1 << 30);
    };
    for (int64_t c : counts)
      add(c);
    par.getBody()->walk([&](Operation *op) {
      if (auto inner = dyn_cast<scf::ForOp>(op))
        add(tripCount(inner.getLowerBound(), inner.getUpperBound(),
                      inner.getStep()));
      else if (auto inner = dyn_cast<scf::ParallelOp>(op))
        for (auto [lb, ub, step] :
             llvm::zip(inner.getLowerBound(), inner.getUpperBound(),
                       inner.getStep()))
          add(tripCount(lb, ub, step));
    });
    if (work < kMinParallelWork && !unknown)
      return 0;
    return counts[0];
  }

  /// Makes `par` run only the iterations [lo, hi) of its outer dimension:
  /// lb + lo * step up to min(lb + hi * step, ub).
  static void restrictOuterDim(OpBuilder &b, scf::ParallelOp par, Value lo,
                               Value hi) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(par);
    Location loc = par.getLoc();
    Value lb = par.getLowerBound()[0], ub = par.getUpperBound()[0],
          step = par.getStep()[0];
    Value from = arith::AddIOp::create(
        b, loc, lb, arith::MulIOp::create(b, loc, lo, step));
    Value to = arith::MinSIOp::create(
        b, loc, ub,
        arith::AddIOp::create(b, loc, lb,
                              arith::MulIOp::create(b, loc, hi, step)));
    par.getLowerBoundMutable()[0].set(from);
    par.getUpperBoundMutable()[0].set(to);
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
  static bool isRebasable(Value v, Operation *loop) {
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

namespace {

/// Each call of an outlined parallel nest (kParallelRangeAttr) becomes a
/// call of the runtime's muirrt_parallel_range with a trampoline and the
/// call's other arguments stored in a struct on the stack:
///
///   llvm.func @step_loop3_range(%ctx: !llvm.ptr, %lo: i64, %hi: i64) {
///     <load each field of %ctx>
///     llvm.call @step_loop3(<fields>, %lo, %hi)
///   }
///   ... llvm.call @muirrt_parallel_range(@step_loop3_range, %ctx, %count)
struct ParallelLoopCallsPass
    : public mlir::muir::impl::MuirParallelLoopCallsBase<
          ParallelLoopCallsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = module.getContext();
    SmallVector<LLVM::CallOp> calls;
    module.walk([&](LLVM::CallOp call) {
      auto callee = call.getCallee();
      if (!callee)
        return;
      auto fn = module.lookupSymbol<LLVM::LLVMFuncOp>(*callee);
      if (fn && fn->hasAttr(kParallelRangeAttr))
        calls.push_back(call);
    });
    if (calls.empty())
      return;
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    auto i64 = IntegerType::get(ctx, 64);
    OpBuilder b(module.getBodyRegion());
    b.setInsertionPointToEnd(module.getBody());
    auto runtime = module.lookupSymbol<LLVM::LLVMFuncOp>(kParallelRangeFn);
    if (!runtime)
      runtime = LLVM::LLVMFuncOp::create(
          b, module.getLoc(), kParallelRangeFn,
          LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx),
                                      {ptr, ptr, i64}));
    DenseMap<Operation *, LLVM::LLVMFuncOp> trampolines;
    for (LLVM::CallOp call : calls) {
      auto fn = module.lookupSymbol<LLVM::LLVMFuncOp>(*call.getCallee());
      auto fnType = fn.getFunctionType();
      unsigned nargs = fnType.getNumParams();
      if (nargs < 2 || call.getNumOperands() != nargs ||
          fnType.getParamType(nargs - 1) != i64 ||
          fnType.getParamType(nargs - 2) != i64) {
        call.emitError("muir: malformed call of a parallel loop nest");
        return signalPassFailure();
      }
      // The call's arguments, then its lo (the runtime's parts count from
      // 0).
      SmallVector<Type> fields(fnType.getParams().drop_back(1));
      auto record = LLVM::LLVMStructType::getLiteral(ctx, fields);
      LLVM::LLVMFuncOp &tramp = trampolines[fn];
      if (!tramp)
        tramp = makeTrampoline(b, fn, record, nargs - 1, ptr, i64);
      // The struct lives in the caller's entry block (a call inside a loop
      // reuses it).
      auto caller = call->getParentOfType<LLVM::LLVMFuncOp>();
      Location loc = call.getLoc();
      OpBuilder entry = OpBuilder::atBlockBegin(&caller.getBody().front());
      Value one = LLVM::ConstantOp::create(entry, loc, i64,
                                           entry.getI64IntegerAttr(1));
      Value slot = LLVM::AllocaOp::create(entry, loc, ptr, record, one);
      OpBuilder at(call);
      for (unsigned i = 0; i + 1 < nargs; ++i) {
        Value field = LLVM::GEPOp::create(
            at, loc, ptr, record, slot,
            ArrayRef<LLVM::GEPArg>{0, static_cast<int32_t>(i)});
        LLVM::StoreOp::create(at, loc, call.getOperand(i), field);
      }
      Value lo = call.getOperand(nargs - 2), hi = call.getOperand(nargs - 1);
      Value count = LLVM::SubOp::create(at, loc, hi, lo);
      Value addr = LLVM::AddressOfOp::create(at, loc, tramp);
      LLVM::CallOp::create(at, loc, runtime, ValueRange{addr, slot, count});
      call.erase();
    }
  }

  /// llvm.func @<fn>_range(%ctx, %lo, %hi): loads the call's arguments and
  /// its first iteration `base` from the struct at %ctx and calls fn with
  /// them and [base + lo, base + hi).
  static LLVM::LLVMFuncOp makeTrampoline(OpBuilder &b, LLVM::LLVMFuncOp fn,
                                         LLVM::LLVMStructType record,
                                         unsigned nfields, Type ptr,
                                         Type i64) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointAfter(fn);
    MLIRContext *ctx = b.getContext();
    Location loc = fn.getLoc();
    auto tramp = LLVM::LLVMFuncOp::create(
        b, loc, (fn.getName() + "_range").str(),
        LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx),
                                    {ptr, i64, i64}),
        LLVM::Linkage::Internal);
    Block *body = tramp.addEntryBlock(b);
    OpBuilder in = OpBuilder::atBlockBegin(body);
    SmallVector<Value> args;
    for (unsigned i = 0; i < nfields; ++i) {
      Value field = LLVM::GEPOp::create(
          in, loc, ptr, record, body->getArgument(0),
          ArrayRef<LLVM::GEPArg>{0, static_cast<int32_t>(i)});
      args.push_back(
          LLVM::LoadOp::create(in, loc, record.getBody()[i], field));
    }
    Value base = args.back();
    args.back() = LLVM::AddOp::create(in, loc, base, body->getArgument(1));
    args.push_back(LLVM::AddOp::create(in, loc, base, body->getArgument(2)));
    LLVM::CallOp::create(in, loc, fn, args);
    LLVM::ReturnOp::create(in, loc, ValueRange{});
    return tramp;
  }
};

} // namespace
