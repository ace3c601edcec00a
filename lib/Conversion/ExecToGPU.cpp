//===- ExecToGPU.cpp - exec IR's buffers and kernels onto the GPU ---------===//
//
// For the CUDA target (muir-compile --target=cuda), before the runtime calls
// are formed: every buffer of a step lives in device memory, so
//   memref.alloc / memref.dealloc -> gpu.alloc / gpu.dealloc
//   memref.copy                   -> gpu.memcpy (device to device), or a
//                                    copy kernel where a side is strided
//   linalg.generic (element-wise) -> gpu.launch
//   muir_exec.moe_dispatch        -> muir_exec.moe_plan (the runtime's
//                                    counting sort) + a gather kernel
//   muir_exec.moe_combine         -> a weighted-sum kernel (unpermute)
//   muir_exec.moe_combine_weights_grad -> a dot-product kernel
// (the MoE ops only where a layer's experts are all on this rank).
// The one exception to device memory: i64 buffers that only carry an
// all_to_allv's counts (FSDP's shard sizes, stored by the host) stay host
// buffers, since NCCL takes its counts on the host.
// The element-wise kernels (momentum, Nesterov, the update and weight decay,
// AdamW, ...) all have identity maps over operands of one shape, so the
// launch views every operand as one flat row (memref.reinterpret_cast) and
// gives each thread one element: blocks of kThreads threads, as many blocks
// as the element count needs, a bounds check for the last. The body is the
// generic's, operating on the loaded values.
//
// sqrt in a kernel becomes PTX's correctly rounded sqrt.rn.f32 (inline
// assembly): the GPU-to-NVVM conversion would call libdevice's __nv_sqrtf,
// which, without nvcc's reflection flags, is the approximate sqrt.
//
// Anything else that would touch a buffer from the host (a load, a store,
// another memref op) has no meaning once buffers are on the device and is
// an error here, with the op's location.
//
//===----------------------------------------------------------------------===//
#include "muir/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::muir {
#define GEN_PASS_DEF_MUIREXECTOGPU
#include "muir/Passes.h.inc"
} // namespace mlir::muir

using namespace mlir;

namespace {

constexpr int64_t kThreads = 256;

/// A flat, contiguous view of a static identity-layout buffer.
Value flat(OpBuilder &b, Location loc, Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  int64_t n = type.getNumElements();
  auto flatType = MemRefType::get({n}, type.getElementType());
  return memref::ReinterpretCastOp::create(b, loc, flatType, buffer,
                                           /*offset=*/0, /*sizes=*/{n},
                                           /*strides=*/{1});
}

bool isElementwise(linalg::GenericOp g) {
  if (g.getNumReductionLoops() != 0 || !g.hasPureBufferSemantics())
    return false;
  for (AffineMap m : g.getIndexingMapsArray())
    if (!m.isIdentity())
      return false;
  for (OpOperand &o : g->getOpOperands()) {
    auto t = dyn_cast<MemRefType>(o.get().getType());
    if (!t || !t.hasStaticShape() || !t.getLayout().isIdentity())
      return false;
  }
  return true;
}

/// A launch of one thread per element of n (blocks of kThreads) before
/// `at`, its kernel named `name` once outlined (PTX entry names say what a
/// kernel is); returns a builder inside the bounds check and the element
/// index.
std::pair<OpBuilder, Value> launchOver(Operation *at, int64_t n,
                                       StringRef name) {
  OpBuilder b(at);
  Location loc = at->getLoc();
  auto idx = [&](OpBuilder &ib, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(ib, loc, v);
  };
  Value one = idx(b, 1);
  Value threads = idx(b, kThreads);
  Value blocks = idx(b, (n + kThreads - 1) / kThreads);
  auto l = gpu::LaunchOp::create(b, loc, blocks, one, one, threads, one, one);
  l.setFunctionAttr(FlatSymbolRefAttr::get(b.getContext(), name));
  OpBuilder kb = OpBuilder::atBlockBegin(&l.getBody().front());
  Value first = arith::MulIOp::create(kb, loc, l.getBlockIds().x,
                                      idx(kb, kThreads));
  Value i = arith::AddIOp::create(kb, loc, first, l.getThreadIds().x);
  Value inside = arith::CmpIOp::create(kb, loc, arith::CmpIPredicate::ult, i,
                                       idx(kb, n));
  auto guard = scf::IfOp::create(kb, loc, inside, /*withElseRegion=*/false);
  gpu::TerminatorOp::create(kb, loc);
  return {guard.getThenBodyBuilder(), i};
}

/// A copy between buffers of which one is strided (a subview of a batch):
/// each thread copies one element, its indices from the flat index.
void copyKernel(memref::CopyOp c) {
  auto type = cast<MemRefType>(c.getSource().getType());
  int64_t n = type.getNumElements();
  if (n > 0) {
    Location loc = c.getLoc();
    auto [ib, i] = launchOver(c, n, "muir_strided_copy");
    SmallVector<Value> indices(type.getRank());
    Value rest = i;
    for (int64_t d = type.getRank() - 1; d >= 0; --d) {
      Value size = arith::ConstantIndexOp::create(ib, loc, type.getDimSize(d));
      indices[d] = arith::RemUIOp::create(ib, loc, rest, size);
      rest = arith::DivUIOp::create(ib, loc, rest, size);
    }
    Value v = memref::LoadOp::create(ib, loc, c.getSource(), indices);
    memref::StoreOp::create(ib, loc, v, c.getTarget(), indices);
  }
  c.erase();
}

/// A buffer copy (memref.copy or linalg.copy) on the device: gpu.memcpy
/// between contiguous buffers, else a copy kernel.
LogicalResult lowerCopy(Operation *op, Value source, Value target) {
  if (!cast<MemRefType>(source.getType()).hasStaticShape())
    return op->emitOpError("copies a dynamically shaped buffer");
  OpBuilder b(op);
  auto contiguous = [](Value v) {
    return cast<MemRefType>(v.getType()).getLayout().isIdentity();
  };
  if (contiguous(source) && contiguous(target))
    gpu::MemcpyOp::create(b, op->getLoc(), Type(), ValueRange{}, target,
                          source);
  else
    copyKernel(memref::CopyOp::create(b, op->getLoc(), source, target));
  op->erase();
  return success();
}

LogicalResult launch(linalg::GenericOp g) {
  OpBuilder b(g);
  Location loc = g.getLoc();
  auto outType = cast<MemRefType>(g.getDpsInits()[0].getType());
  int64_t n = outType.getNumElements();
  if (n == 0) {
    g.erase();
    return success();
  }
  SmallVector<Value> views;
  for (OpOperand &o : g->getOpOperands())
    views.push_back(flat(b, loc, o.get()));
  auto [ib, i] = launchOver(g, n, "muir_elementwise");
  Block &body = g.getRegion().front();
  IRMapping mapping;
  for (auto [arg, view] : llvm::zip(body.getArguments(), views))
    if (!arg.use_empty())
      mapping.map(arg, memref::LoadOp::create(ib, loc, view, ValueRange{i}));
  for (Operation &op : body.without_terminator()) {
    if (auto sqrt = dyn_cast<math::SqrtOp>(op);
        sqrt && sqrt.getType().isF32()) {
      auto asmOp = LLVM::InlineAsmOp::create(
          ib, op.getLoc(), ib.getF32Type(),
          ValueRange{mapping.lookup(sqrt.getOperand())},
          ib.getStringAttr("sqrt.rn.f32 $0, $1;"), ib.getStringAttr("=f,f"),
          /*has_side_effects=*/nullptr, /*is_align_stack=*/nullptr,
          LLVM::TailCallKindAttr::get(ib.getContext(),
                                      LLVM::tailcallkind::TailCallKind::None),
          /*asm_dialect=*/nullptr, /*operand_attrs=*/nullptr);
      mapping.map(sqrt.getResult(), asmOp.getResult(0));
      continue;
    }
    ib.clone(op, mapping);
  }
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  for (auto [v, view] : llvm::zip(yield.getValues(),
                                  ArrayRef(views).drop_front(g.getNumDpsInputs())))
    memref::StoreOp::create(ib, loc, mapping.lookupOrDefault(v), view,
                            ValueRange{i});
  g.erase();
  return success();
}

//===----------------------------------------------------------------------===//
// Mixture of experts (all of a layer's experts on this rank)
//===----------------------------------------------------------------------===//

namespace mx = mlir::muir_exec;

/// The CUDA target runs a MoE layer's exchange only for a group of one.
LogicalResult checkOneRank(Operation *op, int64_t mask) {
  int64_t g =
      muir::getRuntimeGroupSize(op->getParentOfType<ModuleOp>(), mask);
  if (g == 1)
    return success();
  return op->emitOpError("spreads the experts over ")
         << g
         << " ranks; the CUDA target runs MoE layers with every expert on "
            "one rank (ep = 1) so far: compile this step for --target=cpu";
}

/// What the generated MoE kernels assume of a layer's buffers: static,
/// identity layouts (flat views), at least one token, one row per (token,
/// slot) pair (bound >= tokens x k) and a plan of 2 bound + 4 entries.
LogicalResult checkMoeBuffers(Operation *op, Value indices, Value rows,
                              Value plan) {
  for (Value v : op->getOperands())
    if (auto t = dyn_cast<MemRefType>(v.getType());
        t && (!t.hasStaticShape() || !t.getLayout().isIdentity()))
      return op->emitOpError("takes a buffer that is not static and "
                             "contiguous; the CUDA target's MoE kernels "
                             "need flat views");
  auto it = cast<MemRefType>(indices.getType());
  int64_t tokens = it.getDimSize(0), k = it.getDimSize(1);
  int64_t bound = cast<MemRefType>(rows.getType()).getDimSize(0);
  if (tokens < 1)
    return op->emitOpError("has no tokens");
  if (bound < tokens * k)
    return op->emitOpError("has a bound of ")
           << bound << " rows under its " << tokens << " tokens x " << k
           << " slots; the CUDA target needs one row per pair";
  if (cast<MemRefType>(plan.getType()).getDimSize(0) != 2 * bound + 4)
    return op->emitOpError("has a plan of ")
           << cast<MemRefType>(plan.getType()).getDimSize(0)
           << " entries; one rank's is 2 x " << bound << " + 4";
  return success();
}

/// A MoE op's sizes, once checkOneRank and checkMoeBuffers accept it.
struct MoeShape {
  int64_t tokens, k, hidden, bound;
};
FailureOr<MoeShape> checkMoe(Operation *op, int64_t mask, Value indices,
                             Value rows, Value plan) {
  if (failed(checkOneRank(op, mask)) ||
      failed(checkMoeBuffers(op, indices, rows, plan)))
    return failure();
  auto it = cast<MemRefType>(indices.getType());
  auto rt = cast<MemRefType>(rows.getType());
  return MoeShape{it.getDimSize(0), it.getDimSize(1), rt.getDimSize(1),
                  rt.getDimSize(0)};
}

Value cIndex(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

/// plan[at] as an index and whether it names something (>= 0); a missing
/// entry reads as 0 so that its loads stay in bounds.
std::pair<Value, Value> planEntry(OpBuilder &b, Location loc, Value plan,
                                  Value at) {
  Value v = memref::LoadOp::create(b, loc, plan, ValueRange{at});
  Value zero = arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(0));
  Value valid =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, v, zero);
  Value safe = arith::SelectOp::create(b, loc, valid, v, zero);
  return {arith::IndexCastOp::create(b, loc, b.getIndexType(), safe), valid};
}

/// muir_exec.moe_dispatch -> muir_exec.moe_plan (the runtime's counting)
/// and a generated gather: out[r] = x[token of plan[r]] (times its weight),
/// zero past the routed rows.
LogicalResult lowerDispatch(mx::MoeDispatchOp d) {
  FailureOr<MoeShape> shape = checkMoe(d, d.getAxesMask(), d.getIndices(),
                                       d.getOutput(), d.getPlan());
  if (failed(shape))
    return failure();
  auto [tokens, k, hidden, bound] = *shape;
  (void)tokens;
  OpBuilder b(d);
  Location loc = d.getLoc();
  mx::MoePlanOp::create(b, loc, d.getIndices(), d.getCounts(), d.getPlan(),
                        d.getNumExperts(), bound, d.getLayer());
  if (bound * hidden > 0) {
    Value x = flat(b, loc, d.getInput()), out = flat(b, loc, d.getOutput());
    Value w = d.getWeights() ? flat(b, loc, d.getWeights()) : Value();
    auto [ib, i] = launchOver(d, bound * hidden, "muir_moe_permute");
    Value h = cIndex(ib, loc, hidden);
    Value r = arith::DivUIOp::create(ib, loc, i, h);
    Value col = arith::RemUIOp::create(ib, loc, i, h);
    auto [pair, valid] = planEntry(ib, loc, d.getPlan(), r);
    Value t = arith::DivUIOp::create(ib, loc, pair, cIndex(ib, loc, k));
    Value at = arith::AddIOp::create(
        ib, loc, arith::MulIOp::create(ib, loc, t, h), col);
    Value v = memref::LoadOp::create(ib, loc, x, ValueRange{at});
    if (w)
      v = arith::MulFOp::create(
          ib, loc, memref::LoadOp::create(ib, loc, w, ValueRange{pair}), v);
    Value zero = arith::ConstantOp::create(ib, loc, ib.getF32FloatAttr(0));
    v = arith::SelectOp::create(ib, loc, valid, v, zero);
    memref::StoreOp::create(ib, loc, v, out, ValueRange{i});
  }
  d.erase();
  return success();
}

/// buf[r * h + col] (a flat row-major view) as f64.
Value loadF64(OpBuilder &b, Location loc, Value buf, Value r, Value h,
              Value col) {
  Value at =
      arith::AddIOp::create(b, loc, arith::MulIOp::create(b, loc, r, h), col);
  return arith::ExtFOp::create(
      b, loc, b.getF64Type(),
      memref::LoadOp::create(b, loc, buf, ValueRange{at}).getResult());
}

/// The sum over i in [0, count), in order and in double, of the terms
/// term(i) returns (with a flag, or null, saying whether the term counts),
/// rounded to f32: an scf.for carrying the sum.
Value sumInDouble(
    OpBuilder &b, Location loc, Value count,
    function_ref<std::pair<Value, Value>(OpBuilder &, Value)> term) {
  Value zero = arith::ConstantOp::create(b, loc, b.getF64FloatAttr(0));
  auto loop = scf::ForOp::create(b, loc, cIndex(b, loc, 0), count,
                                 cIndex(b, loc, 1), ValueRange{zero});
  OpBuilder lb = OpBuilder::atBlockBegin(loop.getBody());
  Value acc = loop.getRegionIterArgs()[0];
  auto [v, counts] = term(lb, loop.getInductionVar());
  Value sum = arith::AddFOp::create(lb, loc, acc, v);
  if (counts)
    sum = arith::SelectOp::create(lb, loc, counts, sum, acc);
  scf::YieldOp::create(lb, loc, ValueRange{sum});
  return arith::TruncFOp::create(b, loc, b.getF32Type(), loop.getResult(0));
}

/// muir_exec.moe_combine -> a generated kernel, one thread per output
/// element: out[t][h] = the sum over slots j in order of w[t][j] *
/// rows[row of (t, j)][h], in double (the CPU runtime's arithmetic).
LogicalResult lowerCombine(mx::MoeCombineOp c) {
  FailureOr<MoeShape> shape = checkMoe(c, c.getAxesMask(), c.getIndices(),
                                       c.getInput(), c.getPlan());
  if (failed(shape))
    return failure();
  auto [tokens, k, hidden, bound] = *shape;
  OpBuilder b(c);
  Location loc = c.getLoc();
  if (tokens * hidden > 0) {
    Value rows = flat(b, loc, c.getInput()), out = flat(b, loc, c.getOutput());
    Value w = c.getWeights() ? flat(b, loc, c.getWeights()) : Value();
    auto [ib, i] = launchOver(c, tokens * hidden, "muir_moe_combine");
    Value h = cIndex(ib, loc, hidden);
    Value t = arith::DivUIOp::create(ib, loc, i, h);
    Value col = arith::RemUIOp::create(ib, loc, i, h);
    Value first = arith::AddIOp::create(
        ib, loc, arith::MulIOp::create(ib, loc, t, cIndex(ib, loc, k)),
        cIndex(ib, loc, bound));
    Value result = sumInDouble(
        ib, loc, cIndex(ib, loc, k),
        [&](OpBuilder &lb, Value j) -> std::pair<Value, Value> {
          auto [row, valid] = planEntry(
              lb, loc, c.getPlan(), arith::AddIOp::create(lb, loc, first, j));
          Value v = loadF64(lb, loc, rows, row, h, col);
          if (w) {
            Value p = arith::AddIOp::create(
                lb, loc, arith::MulIOp::create(lb, loc, t, cIndex(lb, loc, k)),
                j);
            Value wt = arith::ExtFOp::create(
                lb, loc, lb.getF64Type(),
                memref::LoadOp::create(lb, loc, w, ValueRange{p}).getResult());
            v = arith::MulFOp::create(lb, loc, wt, v);
          }
          return {v, valid};
        });
    memref::StoreOp::create(ib, loc, result, out, ValueRange{i});
  }
  c.erase();
  return success();
}

/// muir_exec.moe_combine_weights_grad -> a generated kernel, one thread per
/// (token, slot): the dot product (double, in order) of the output
/// gradient's row with the pair's expert row; 0 for a dropped slot.
LogicalResult lowerCombineWeightsGrad(mx::MoeCombineWeightsGradOp c) {
  FailureOr<MoeShape> shape = checkMoe(c, c.getAxesMask(), c.getIndices(),
                                       c.getInput(), c.getPlan());
  if (failed(shape))
    return failure();
  auto [tokens, k, hidden, bound] = *shape;
  OpBuilder b(c);
  Location loc = c.getLoc();
  if (tokens * k > 0) {
    Value grad = flat(b, loc, c.getGrad()), rows = flat(b, loc, c.getInput());
    Value out = flat(b, loc, c.getOutput());
    auto [ib, p] = launchOver(c, tokens * k, "muir_moe_combine_weights_grad");
    Value h = cIndex(ib, loc, hidden);
    Value t = arith::DivUIOp::create(ib, loc, p, cIndex(ib, loc, k));
    auto [row, valid] = planEntry(
        ib, loc, c.getPlan(),
        arith::AddIOp::create(ib, loc, p, cIndex(ib, loc, bound)));
    // A dropped slot runs no iterations.
    Value count = arith::SelectOp::create(ib, loc, valid, h,
                                          cIndex(ib, loc, 0));
    Value result = sumInDouble(
        ib, loc, count, [&](OpBuilder &lb, Value col) -> std::pair<Value, Value> {
          return {arith::MulFOp::create(lb, loc,
                                        loadF64(lb, loc, grad, t, h, col),
                                        loadF64(lb, loc, rows, row, h, col)),
                  Value()};
        });
    memref::StoreOp::create(ib, loc, result, out, ValueRange{p});
  }
  c.erase();
  return success();
}

//===----------------------------------------------------------------------===//
// Host buffers
//===----------------------------------------------------------------------===//

/// The i64 buffers that only carry all_to_allv counts (filled by host
/// stores and host copies, as FSDP's shard sizes are): NCCL's grouped
/// sends and receives take their counts on the host, so these stay in host
/// memory. A buffer copied to or from a device buffer is not one of them.
DenseSet<Value> hostCountBuffers(ModuleOp module) {
  DenseSet<Value> host;
  module.walk([&](memref::AllocOp a) {
    if (!a.getType().getElementType().isInteger(64))
      return;
    Value v = a.getResult();
    bool counts = false;
    bool onlyHost = llvm::all_of(a->getUsers(), [&](Operation *u) {
      if (auto x = dyn_cast<mx::AllToAllVOp>(u)) {
        counts = true;
        return x.getInput() != v && x.getOutput() != v;
      }
      return isa<memref::StoreOp, memref::LoadOp, memref::DeallocOp,
                 memref::CopyOp>(u);
    });
    if (onlyHost && (counts || llvm::any_of(a->getUsers(), [](Operation *u) {
          return isa<memref::CopyOp>(u);
        })))
      host.insert(v);
  });
  // Both sides of a host copy are host buffers, or neither is.
  auto pairUp = [&](DenseSet<Value> &set) {
    for (bool changed = true; changed;) {
      changed = false;
      module.walk([&](memref::CopyOp c) {
        bool s = set.contains(c.getSource()), t = set.contains(c.getTarget());
        if (s != t) {
          set.erase(s ? c.getSource() : c.getTarget());
          changed = true;
        }
      });
    }
  };
  pairUp(host);
  // Only those connected by copies to an all_to_allv's counts stay on the
  // host; the others are the device's.
  DenseSet<Value> result;
  module.walk([&](mx::AllToAllVOp x) {
    for (Value v : {x.getSendCounts(), x.getRecvCounts()})
      if (host.contains(v))
        result.insert(v);
  });
  for (bool changed = true; changed;) {
    changed = false;
    module.walk([&](memref::CopyOp c) {
      Value s = c.getSource(), t = c.getTarget();
      if (host.contains(s) && host.contains(t) &&
          result.contains(s) != result.contains(t)) {
        result.insert(s);
        result.insert(t);
        changed = true;
      }
    });
  }
  pairUp(result);
  return result;
}

struct ExecToGPUPass
    : public mlir::muir::impl::MuirExecToGPUBase<ExecToGPUPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<Operation *> ops;
    module.walk([&](Operation *op) {
      if (op->getParentOfType<gpu::GPUModuleOp>() ||
          op->getParentOfType<gpu::LaunchOp>())
        return;
      if (isa<memref::AllocOp, memref::DeallocOp, memref::CopyOp,
              linalg::CopyOp, linalg::GenericOp, mx::MoeDispatchOp,
              mx::MoeCombineOp, mx::MoeCombineWeightsGradOp>(op))
        ops.push_back(op);
    });
    DenseSet<Value> host = hostCountBuffers(module);
    WalkResult countsOnDevice = module.walk([&](mx::AllToAllVOp x) {
      for (Value v : {x.getSendCounts(), x.getRecvCounts()})
        if (!host.contains(v)) {
          x.emitOpError("takes counts that are not host buffers of their "
                        "own (NCCL's sends and receives need their counts "
                        "on the host)");
          return WalkResult::interrupt();
        }
      return WalkResult::advance();
    });
    if (countsOnDevice.wasInterrupted())
      return signalPassFailure();
    auto onHost = [&](Operation *op) {
      if (auto a = dyn_cast<memref::AllocOp>(op))
        return host.contains(a.getResult());
      if (auto d = dyn_cast<memref::DeallocOp>(op))
        return host.contains(d.getMemref());
      if (auto c = dyn_cast<memref::CopyOp>(op))
        return host.contains(c.getSource());
      return false;
    };
    for (Operation *op : ops) {
      if (onHost(op))
        continue;
      OpBuilder b(op);
      Location loc = op->getLoc();
      if (auto a = dyn_cast<memref::AllocOp>(op)) {
        if (!a.getType().hasStaticShape())
          return fail(op, "allocates a dynamically shaped buffer");
        auto g = gpu::AllocOp::create(b, loc, a.getType(), Type(),
                                      ValueRange{}, ValueRange{},
                                      ValueRange{}, nullptr);
        a.replaceAllUsesWith(g.getMemref());
      } else if (auto d = dyn_cast<memref::DeallocOp>(op)) {
        gpu::DeallocOp::create(b, loc, Type(), ValueRange{}, d.getMemref());
      } else if (auto lc = dyn_cast<linalg::CopyOp>(op)) {
        if (failed(lowerCopy(op, lc.getInputs()[0], lc.getOutputs()[0])))
          return signalPassFailure();
        continue;
      } else if (isa<mx::MoeDispatchOp, mx::MoeCombineOp,
                     mx::MoeCombineWeightsGradOp>(op)) {
        LogicalResult done =
            TypeSwitch<Operation *, LogicalResult>(op)
                .Case([](mx::MoeDispatchOp d) { return lowerDispatch(d); })
                .Case([](mx::MoeCombineOp c) { return lowerCombine(c); })
                .Case([](mx::MoeCombineWeightsGradOp c) {
                  return lowerCombineWeightsGrad(c);
                });
        if (failed(done))
          return signalPassFailure();
        continue;
      } else if (auto c = dyn_cast<memref::CopyOp>(op)) {
        if (failed(lowerCopy(op, c.getSource(), c.getTarget())))
          return signalPassFailure();
        continue;
      } else {
        auto g = cast<linalg::GenericOp>(op);
        if (!isElementwise(g))
          return fail(op, "is not an element-wise kernel over identity-"
                          "layout buffers (the CUDA target runs only those "
                          "as generated kernels)");
        if (failed(launch(g)))
          return signalPassFailure();
        continue;
      }
      op->erase();
    }
    // Whatever else reads or writes a buffer on the host is an error.
    WalkResult bad = module.walk([&](Operation *op) {
      if (op->getParentOfType<gpu::GPUModuleOp>() ||
          op->getParentOfType<gpu::LaunchOp>())
        return WalkResult::skip();
      if (auto l = dyn_cast<memref::LoadOp>(op); l && host.contains(l.getMemref()))
        return WalkResult::advance();
      if (auto st = dyn_cast<memref::StoreOp>(op);
          st && host.contains(st.getMemref()))
        return WalkResult::advance();
      if (isa<memref::LoadOp, memref::StoreOp, linalg::LinalgOp>(op)) {
        op->emitOpError("reads or writes a device buffer from the host; the "
                        "CUDA target has no lowering for it");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (bad.wasInterrupted())
      signalPassFailure();
  }

  void fail(Operation *op, const Twine &why) {
    op->emitOpError(why);
    signalPassFailure();
  }
};

} // namespace
