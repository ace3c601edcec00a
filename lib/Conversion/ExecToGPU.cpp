//===- ExecToGPU.cpp - exec IR's buffers and kernels onto the GPU ---------===//
//
// For the CUDA target (muir-compile --target=cuda), before the runtime calls
// are formed: every buffer of a step lives in device memory, so
//   memref.alloc / memref.dealloc -> gpu.alloc / gpu.dealloc
//   memref.copy                   -> gpu.memcpy (device to device), or a
//                                    copy kernel where a side is strided
//   linalg.fill                   -> a kernel storing the value
//   linalg.generic (element-wise) -> gpu.launch
//   linalg.generic (reductions, broadcasts: NorMuon's rows, QK-clip's
//                  heads) -> gpu.launch, a thread per parallel point that
//                  runs the reduction loops in order
//   muir_exec.moe_dispatch        -> muir_exec.moe_plan (the runtime's
//                                    counting sort) + a gather kernel
//   muir_exec.moe_combine         -> a weighted-sum kernel (unpermute)
//   muir_exec.moe_combine_weights_grad -> a dot-product kernel
// (the MoE ops only where a layer's experts are all on this rank)
//   muir_exec.frobenius_normalize -> muir_exec.sum_squares into a double
//                                    buffer (the runtime's fixed-order
//                                    reduction) + a scaling kernel
//   muir_exec.scale_by_norm       -> the scaling kernel
//   muir_exec.triangle_all_reduce_start / _wait
//                                 -> a packing kernel into a buffer of the
//                                    step + muir_exec.packed_all_reduce_start,
//                                    muir_exec.packed_all_reduce_wait + an
//                                    unpacking (and mirroring) kernel.
// The one exception to device memory: buffers in #muir_exec.host memory
// (an all_to_allv's counts, such as FSDP's shard sizes, stored by the host:
// NCCL takes its counts on the host) stay host allocations, and only host
// work and the all_to_allv's counts may name them.
// The element-wise kernels (momentum, Nesterov, the update and weight decay,
// AdamW, ...) all have identity maps over operands of one shape, so the
// launch views every identity-layout operand as one flat row
// (memref.reinterpret_cast; a view, such as a slice of a batch, is indexed
// by the element's indices over the shape) and gives each thread one
// element: blocks of kThreads threads, as many blocks as the element count
// needs, a bounds check for the last. The body is the generic's, operating
// on the loaded values.
//
// sqrt in a kernel becomes PTX's correctly rounded sqrt.rn.f32 (inline
// assembly): the GPU-to-NVVM conversion would call libdevice's __nv_sqrtf,
// which, without nvcc's reflection flags, is the approximate sqrt.
//
// Anything else that would touch a buffer from the host (a load, a store,
// another memref op) has no meaning once buffers are on the device and is
// an error here, with the op's location.
//
// This file places buffers and generates the copy and element-wise kernels;
// the triangle chunks' kernels are ExecToGPUTriangles.cpp, the MoE layer's
// ExecToGPUMoe.cpp (shared helpers: ExecToGPUInternal.h).
//
//===----------------------------------------------------------------------===//
#include "ExecToGPUInternal.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/TypeSwitch.h"

#include <functional>

namespace mlir::muir {
#define GEN_PASS_DEF_MUIREXECTOGPU
#include "muir/Conversion/Passes.h.inc"
} // namespace mlir::muir

using namespace mlir;
namespace mx = mlir::muir_exec;

namespace mlir::muir::exec_to_gpu {

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

/// The indices over `type`'s shape of the flat (row-major) index i.
SmallVector<Value> unflatten(OpBuilder &b, Location loc, Value i,
                             MemRefType type) {
  SmallVector<Value> indices(type.getRank());
  Value rest = i;
  for (int64_t d = type.getRank() - 1; d >= 0; --d) {
    Value size = arith::ConstantIndexOp::create(b, loc, type.getDimSize(d));
    indices[d] = arith::RemUIOp::create(b, loc, rest, size);
    rest = arith::DivUIOp::create(b, loc, rest, size);
  }
  return indices;
}

/// Whether `g` is on static buffers only, every map satisfying `mapOk`.
bool isKernelOver(linalg::GenericOp g,
                  function_ref<bool(AffineMap)> mapOk) {
  if (!g.hasPureBufferSemantics() ||
      !llvm::all_of(g.getIndexingMapsArray(), mapOk))
    return false;
  return llvm::all_of(g->getOpOperands(), [](OpOperand &o) {
    auto t = dyn_cast<MemRefType>(o.get().getType());
    return t && t.hasStaticShape();
  });
}

/// Element-wise: identity maps, no reduction (one thread per element,
/// flat views).
bool isElementwise(linalg::GenericOp g) {
  return g.getNumReductionLoops() == 0 &&
         isKernelOver(g, [](AffineMap m) { return m.isIdentity(); });
}

/// A launch of one thread per element of n (blocks of kThreads) before
/// `at`, its kernel named `name` once outlined (PTX entry names say what a
/// kernel is); returns a builder inside the bounds check and the element
/// index. n is `count`, or, when `count` is null, a host index value known
/// only at run time (then a count of 0 still launches one block, whose
/// threads all fail the check).
std::pair<OpBuilder, Value> launchOver(Operation *at, int64_t count,
                                       Value dynamicCount, StringRef name) {
  OpBuilder b(at);
  Location loc = at->getLoc();
  auto idx = [&](OpBuilder &ib, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(ib, loc, v);
  };
  Value one = idx(b, 1);
  Value threads = idx(b, kThreads);
  Value blocks =
      dynamicCount
          ? Value(arith::MaxUIOp::create(
                b, loc, arith::CeilDivUIOp::create(b, loc, dynamicCount,
                                                   threads),
                one))
          : idx(b, (count + kThreads - 1) / kThreads);
  auto l = gpu::LaunchOp::create(b, loc, blocks, one, one, threads, one, one);
  l.setFunctionAttr(FlatSymbolRefAttr::get(b.getContext(), name));
  OpBuilder kb = OpBuilder::atBlockBegin(&l.getBody().front());
  Value first = arith::MulIOp::create(kb, loc, l.getBlockIds().x,
                                      idx(kb, kThreads));
  Value i = arith::AddIOp::create(kb, loc, first, l.getThreadIds().x);
  Value inside = arith::CmpIOp::create(
      kb, loc, arith::CmpIPredicate::ult, i,
      dynamicCount ? dynamicCount : idx(kb, count));
  auto guard = scf::IfOp::create(kb, loc, inside, /*withElseRegion=*/false);
  gpu::TerminatorOp::create(kb, loc);
  return {guard.getThenBodyBuilder(), i};
}
std::pair<OpBuilder, Value> launchOver(Operation *at, int64_t n,
                                       StringRef name) {
  return launchOver(at, n, Value(), name);
}
std::pair<OpBuilder, Value> launchOver(Operation *at, Value n,
                                       StringRef name) {
  return launchOver(at, 0, n, name);
}

/// A copy between buffers of which one is strided (a subview of a batch):
/// each thread copies one element, its indices from the flat index.
void copyKernel(memref::CopyOp c) {
  auto type = cast<MemRefType>(c.getSource().getType());
  int64_t n = type.getNumElements();
  if (n > 0) {
    Location loc = c.getLoc();
    auto [ib, i] = launchOver(c, n, "muir_strided_copy");
    SmallVector<Value> indices = unflatten(ib, loc, i, type);
    Value v = memref::LoadOp::create(ib, loc, c.getSource(), indices);
    memref::StoreOp::create(ib, loc, v, c.getTarget(), indices);
  }
  c.erase();
}

/// linalg.fill of a device buffer: a thread per element stores the value.
LogicalResult lowerFill(linalg::FillOp f) {
  Value out = f.getOutputs()[0];
  auto type = dyn_cast<MemRefType>(out.getType());
  if (!type || !type.hasStaticShape())
    return f.emitOpError("fills a dynamically shaped buffer");
  if (int64_t n = type.getNumElements()) {
    auto [ib, i] = launchOver(f, n, "muir_fill");
    Location loc = f.getLoc();
    memref::StoreOp::create(ib, loc, f.getInputs()[0], out,
                            unflatten(ib, loc, i, type));
  }
  f.erase();
  return success();
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

/// PTX's correctly rounded square root of an f32 or f64 value (inline
/// assembly; see the file comment).
Value sqrtRn(OpBuilder &b, Location loc, Value v) {
  bool f64 = v.getType().isF64();
  auto asmOp = LLVM::InlineAsmOp::create(
      b, loc, v.getType(), ValueRange{v},
      b.getStringAttr(f64 ? "sqrt.rn.f64 $0, $1;" : "sqrt.rn.f32 $0, $1;"),
      b.getStringAttr(f64 ? "=d,d" : "=f,f"),
      /*has_side_effects=*/nullptr, /*is_align_stack=*/nullptr,
      LLVM::TailCallKindAttr::get(b.getContext(),
                                  LLVM::tailcallkind::TailCallKind::None),
      /*asm_dialect=*/nullptr, /*operand_attrs=*/nullptr);
  return asmOp.getResult(0);
}

/// One op of a generic's body, cloned into a kernel: an f32 or f64 sqrt
/// as PTX's correctly rounded one, anything else as it is.
void cloneIntoKernel(OpBuilder &b, Operation &op, IRMapping &mapping) {
  if (auto sqrt = dyn_cast<math::SqrtOp>(op);
      sqrt && (sqrt.getType().isF32() || sqrt.getType().isF64())) {
    mapping.map(sqrt.getResult(),
                sqrtRn(b, op.getLoc(), mapping.lookup(sqrt.getOperand())));
    return;
  }
  b.clone(op, mapping);
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
  // Identity-layout operands as flat rows indexed by the element's flat
  // index; views (slices of a batch) by its indices over the shape.
  auto isFlat = [](Value v) {
    return cast<MemRefType>(v.getType()).getLayout().isIdentity();
  };
  SmallVector<Value> views;
  for (OpOperand &o : g->getOpOperands())
    views.push_back(isFlat(o.get()) ? flat(b, loc, o.get()) : o.get());
  auto [ib, i] = launchOver(g, n, "muir_elementwise");
  SmallVector<Value> indices;
  if (!llvm::all_of(views, isFlat))
    indices = unflatten(ib, loc, i, outType);
  auto at = [&](Value view) -> SmallVector<Value> {
    if (isFlat(view))
      return {i};
    return indices;
  };
  Block &body = g.getRegion().front();
  IRMapping mapping;
  for (auto [arg, view] : llvm::zip(body.getArguments(), views))
    if (!arg.use_empty())
      mapping.map(arg, memref::LoadOp::create(ib, loc, view, at(view)));
  for (Operation &op : body.without_terminator()) {
    // An element's index along a dimension, from the flat index (row-major
    // over the output's shape): (i / stride) % size.
    if (auto index = dyn_cast<linalg::IndexOp>(op)) {
      int64_t dim = index.getDim(), stride = 1;
      for (int64_t d = outType.getRank() - 1; d > dim; --d)
        stride *= outType.getDimSize(d);
      Location l = op.getLoc();
      Value q = arith::DivUIOp::create(
          ib, l, i, arith::ConstantIndexOp::create(ib, l, stride));
      mapping.map(index.getResult(),
                  arith::RemUIOp::create(
                      ib, l, q,
                      arith::ConstantIndexOp::create(
                          ib, l, outType.getDimSize(dim))));
      continue;
    }
    cloneIntoKernel(ib, op, mapping);
  }
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  for (auto [v, view] : llvm::zip(yield.getValues(),
                                  ArrayRef(views).drop_front(g.getNumDpsInputs())))
    memref::StoreOp::create(ib, loc, mapping.lookupOrDefault(v), view,
                            at(view));
  g.erase();
  return success();
}

Value cIndex(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

/// Reductions and broadcasts: projected-permutation maps (launchLoops).
bool isLoopKernel(linalg::GenericOp g) {
  return isKernelOver(g,
                      [](AffineMap m) { return m.isProjectedPermutation(); });
}

/// A generic with reductions or broadcasts (the rows' sums of NorMuon, its
/// per-row scaling, QK-clip's heads): one thread per point of its parallel
/// loops, which runs the reduction loops in order (the CPU's loop order:
/// the same sums, deterministic), its accumulators the outputs' values.
LogicalResult launchLoops(linalg::GenericOp g) {
  Location loc = g.getLoc();
  SmallVector<int64_t> ranges = g.getStaticLoopRanges();
  SmallVector<unsigned> parallel, reduction;
  for (auto [d, it] : llvm::enumerate(g.getIteratorTypesArray()))
    (it == utils::IteratorType::parallel ? parallel : reduction).push_back(d);
  int64_t n = 1;
  for (unsigned d : parallel)
    n *= ranges[d];
  if (n == 0) {
    g.erase();
    return success();
  }
  auto [ib, i] = launchOver(g, n, reduction.empty() ? "muir_broadcast"
                                                    : "muir_reduction");
  SmallVector<Value> ivs(ranges.size());
  Value rest = i;
  for (unsigned d : llvm::reverse(parallel)) {
    Value size = cIndex(ib, loc, ranges[d]);
    ivs[d] = arith::RemUIOp::create(ib, loc, rest, size);
    rest = arith::DivUIOp::create(ib, loc, rest, size);
  }
  auto at = [&](OpOperand &o) {
    SmallVector<Value> indices;
    for (AffineExpr e : g.getMatchingIndexingMap(&o).getResults())
      indices.push_back(ivs[cast<AffineDimExpr>(e).getPosition()]);
    return indices;
  };
  Block &body = g.getRegion().front();
  // The outputs' values, read where the body reads them or where a
  // reduction carries them.
  SmallVector<Value> acc;
  for (OpOperand &o : g.getDpsInitsMutable()) {
    BlockArgument arg = g.getMatchingBlockArgument(&o);
    acc.push_back(arg.use_empty() && reduction.empty()
                      ? Value()
                      : Value(memref::LoadOp::create(ib, loc, o.get(),
                                                     at(o))));
  }
  auto compute = [&](OpBuilder &bb, ValueRange carried) {
    IRMapping mapping;
    for (OpOperand *o : g.getDpsInputOperands()) {
      BlockArgument arg = g.getMatchingBlockArgument(o);
      if (!arg.use_empty())
        mapping.map(arg, memref::LoadOp::create(bb, loc, o->get(), at(*o)));
    }
    for (auto [k, o] : llvm::enumerate(g.getDpsInitsMutable()))
      if (carried[k])
        mapping.map(g.getMatchingBlockArgument(&o), carried[k]);
    for (Operation &op : body.without_terminator()) {
      if (auto index = dyn_cast<linalg::IndexOp>(op)) {
        mapping.map(index.getResult(), ivs[index.getDim()]);
        continue;
      }
      cloneIntoKernel(bb, op, mapping);
    }
    SmallVector<Value> results;
    for (Value v : cast<linalg::YieldOp>(body.getTerminator()).getValues())
      results.push_back(mapping.lookupOrDefault(v));
    return results;
  };
  // The reduction loops, outermost first, each carrying the outputs.
  std::function<SmallVector<Value>(OpBuilder &, ValueRange, size_t)> nest =
      [&](OpBuilder &bb, ValueRange carried, size_t k) -> SmallVector<Value> {
    if (k == reduction.size())
      return compute(bb, carried);
    auto loop = scf::ForOp::create(
        bb, loc, cIndex(bb, loc, 0), cIndex(bb, loc, ranges[reduction[k]]),
        cIndex(bb, loc, 1), carried,
        [&](OpBuilder &lb, Location, Value iv, ValueRange args) {
          ivs[reduction[k]] = iv;
          scf::YieldOp::create(lb, loc, nest(lb, args, k + 1));
        });
    return SmallVector<Value>(loop.getResults());
  };
  SmallVector<Value> results = nest(ib, acc, 0);
  for (auto [v, o] : llvm::zip(results, g.getDpsInitsMutable()))
    memref::StoreOp::create(ib, loc, v, o.get(), at(o));
  g.erase();
  return success();
}

/// Whether a buffer is static and contiguous (the generated kernels' flat
/// views); an error on `op` if not.
LogicalResult checkFlat(Operation *op, Value buffer) {
  auto t = cast<MemRefType>(buffer.getType());
  if (t.hasStaticShape() && t.getLayout().isIdentity())
    return success();
  return op->emitOpError("takes a buffer that is not static and contiguous; "
                         "the CUDA target's generated kernels need flat "
                         "views");
}

} // namespace mlir::muir::exec_to_gpu

using namespace mlir::muir::exec_to_gpu;

namespace {

//===----------------------------------------------------------------------===//
// Normalisation: the sums of squares are the runtime's (a fixed-order
// double reduction); the scaling is a generated kernel.
//===----------------------------------------------------------------------===//

/// out = in * f32(1 / (sqrt(ss[item]) + eps)) per item of `in` ([batch,
/// rows, cols] or [rows, cols]), one thread per element: the reciprocal in
/// double (eps rounded to f32 first, as the runtime call passes it), then a
/// float multiply, the CPU runtime's arithmetic. ss is f64 (the
/// normalisation's own sums) or f32 (an all-reduced sum of squares).
LogicalResult scaleKernel(Operation *at, Value in, Value ss, Value out,
                          double eps) {
  for (Value v : {in, ss, out})
    if (failed(checkFlat(at, v)))
      return failure();
  auto type = cast<MemRefType>(in.getType());
  int64_t n = type.getNumElements();
  if (n == 0)
    return success();
  int64_t numel = n / (type.getRank() == 3 ? type.getDimSize(0) : 1);
  OpBuilder b(at);
  Location loc = at->getLoc();
  Value x = flat(b, loc, in), y = flat(b, loc, out), s = flat(b, loc, ss);
  auto [ib, i] = launchOver(at, n, "muir_scale_by_norm");
  Value item = arith::DivUIOp::create(ib, loc, i, cIndex(ib, loc, numel));
  Value sum = memref::LoadOp::create(ib, loc, s, ValueRange{item});
  if (!sum.getType().isF64())
    sum = arith::ExtFOp::create(ib, loc, ib.getF64Type(), sum);
  // One statement per op: the order in which a call's arguments are
  // evaluated is unspecified (g++ and clang differ), the IR's must not be.
  double epsF32 = static_cast<float>(eps);
  Value eps64 = arith::ConstantOp::create(ib, loc, ib.getF64FloatAttr(epsF32));
  Value root = sqrtRn(ib, loc, sum);
  Value denom = arith::AddFOp::create(ib, loc, root, eps64);
  Value scale = arith::TruncFOp::create(
      ib, loc, ib.getF32Type(),
      arith::DivFOp::create(
          ib, loc, arith::ConstantOp::create(ib, loc, ib.getF64FloatAttr(1)),
          denom));
  Value v = arith::MulFOp::create(
      ib, loc, memref::LoadOp::create(ib, loc, x, ValueRange{i}), scale);
  memref::StoreOp::create(ib, loc, v, y, ValueRange{i});
  return success();
}

/// muir_exec.frobenius_normalize -> the runtime's sums of squares into a
/// double buffer of the step, then the generated scaling kernel.
LogicalResult lowerNormalize(mx::FrobeniusNormalizeOp op) {
  if (failed(checkFlat(op, op.getInput())))
    return failure();
  if (cast<MemRefType>(op.getOutput().getType()).getElementType().isBF16())
    return op.emitOpError("with a bf16 output is CPU only (the CUDA target "
                          "normalises into the input's type)");
  auto type = cast<MemRefType>(op.getInput().getType());
  int64_t batch = type.getRank() == 3 ? type.getDimSize(0) : 1;
  OpBuilder b(op);
  Location loc = op.getLoc();
  auto ssType = MemRefType::get({batch}, b.getF64Type());
  Value ss = gpu::AllocOp::create(b, loc, ssType, Type(), ValueRange{},
                                  ValueRange{}, ValueRange{}, nullptr)
                 .getMemref();
  mx::SumSquaresOp::create(b, loc, op.getInput(), ss);
  if (failed(scaleKernel(op, op.getInput(), ss, op.getOutput(),
                         op.getEps().convertToDouble())))
    return failure();
  gpu::DeallocOp::create(b, loc, Type(), ValueRange{}, ss);
  op.erase();
  return success();
}

LogicalResult lowerScaleByNorm(mx::ScaleByNormOp op) {
  if (failed(scaleKernel(op, op.getInput(), op.getSumSquares(),
                         op.getOutput(), op.getEps().convertToDouble())))
    return failure();
  op.erase();
  return success();
}

//===----------------------------------------------------------------------===//
// Host buffers
//===----------------------------------------------------------------------===//

/// Host work on buffers in #muir_exec.host memory stays on the host: their
/// allocation (or a constant global's), views, loads and stores, and
/// copies between two of them.
bool isHostWork(Operation *op) {
  auto host = [](Value v) { return mx::isHostMemory(v.getType()); };
  if (auto view = dyn_cast<ViewLikeOpInterface>(op))
    return host(view.getViewSource()) && op->getNumResults() == 1 &&
           host(op->getResult(0));
  return TypeSwitch<Operation *, bool>(op)
      .Case([&](memref::AllocOp a) { return host(a.getMemref()); })
      .Case([&](memref::GetGlobalOp g) { return host(g.getResult()); })
      .Case([&](memref::DeallocOp d) { return host(d.getMemref()); })
      .Case([&](memref::LoadOp l) { return host(l.getMemref()); })
      .Case([&](memref::StoreOp st) { return host(st.getMemref()); })
      .Case([&](memref::CopyOp c) {
        return host(c.getSource()) && host(c.getTarget());
      })
      .Default(false);
}

/// Everything else that names a host buffer runs on the device (a kernel,
/// a runtime call on device pointers), except an all_to_allv reading its
/// counts: an error at the op.
LogicalResult checkHostBuffers(ModuleOp module) {
  WalkResult bad = module.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (isa<gpu::GPUModuleOp, gpu::LaunchOp>(op))
      return WalkResult::skip();
    if (isHostWork(op))
      return WalkResult::advance();
    if (isa<memref::GetGlobalOp>(op)) {
      op->emitOpError("names a constant buffer outside #muir_exec.host "
                      "memory; the CUDA target keeps constants only for the "
                      "host (ragged exchanges' counts)");
      return WalkResult::interrupt();
    }
    auto x = dyn_cast<mx::AllToAllVOp>(op);
    for (OpOperand &use : op->getOpOperands()) {
      if (!mx::isHostMemory(use.get().getType()) ||
          (x && (&use == &x.getSendCountsMutable() ||
                 &use == &x.getRecvCountsMutable())))
        continue;
      op->emitOpError("operand #")
          << use.getOperandNumber()
          << " is a buffer in host memory (#muir_exec.host), which the "
             "CUDA target's device work cannot read or write";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(bad.wasInterrupted());
}

struct ExecToGPUPass
    : public mlir::muir::impl::MuirExecToGPUBase<ExecToGPUPass> {
  void runOnOperation() override {
    if (failed(muir::checkPassInput(getOperation(), getArgument(),
                                    muir::PassInput::Exec)))
      return signalPassFailure();
    ModuleOp module = getOperation();
    // The CUDA runtime's kernels and cuBLAS calls are f32 (bf16 inside);
    // f64 steps, references, run on the CPU target.
    bool anyF64 = false;
    module.walk([&](func::FuncOp f) {
      for (auto [i, t] : llvm::enumerate(f.getArgumentTypes())) {
        auto mt = dyn_cast<MemRefType>(t);
        if (anyF64 || !mt || !mt.getElementType().isF64())
          continue;
        auto name = f.getArgAttrOfType<StringAttr>(
            i, muir::MuirDialect::NameAttrHelper::getNameStr());
        f.emitError() << "the CUDA target runs f32 tensors; '"
                      << (name ? name.getValue() : StringRef("?"))
                      << "' is f64 (f64 steps run on the CPU target)";
        anyF64 = true;
      }
    });
    if (anyF64)
      return signalPassFailure();
    SmallVector<Operation *> ops;
    module.walk([&](Operation *op) {
      if (op->getParentOfType<gpu::GPUModuleOp>() ||
          op->getParentOfType<gpu::LaunchOp>())
        return;
      if (isa<memref::AllocOp, memref::DeallocOp, memref::CopyOp,
              linalg::CopyOp, linalg::FillOp, linalg::GenericOp,
              mx::MoeDispatchOp,
              mx::MoeCombineOp, mx::MoeCombineWeightsGradOp,
              mx::FrobeniusNormalizeOp, mx::ScaleByNormOp>(op))
        ops.push_back(op);
    });
    if (failed(lowerTriangles(module)))
      return signalPassFailure();
    if (failed(checkHostBuffers(module)))
      return signalPassFailure();
    for (Operation *op : ops) {
      if (isHostWork(op))
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
      } else if (auto f = dyn_cast<linalg::FillOp>(op)) {
        if (failed(lowerFill(f)))
          return signalPassFailure();
        continue;
      } else if (auto lc = dyn_cast<linalg::CopyOp>(op)) {
        if (failed(lowerCopy(op, lc.getInputs()[0], lc.getOutputs()[0])))
          return signalPassFailure();
        continue;
      } else if (isa<mx::MoeDispatchOp, mx::MoeCombineOp,
                     mx::MoeCombineWeightsGradOp, mx::FrobeniusNormalizeOp,
                     mx::ScaleByNormOp>(op)) {
        LogicalResult done =
            TypeSwitch<Operation *, LogicalResult>(op)
                .Case([](mx::MoeDispatchOp d) { return lowerDispatch(d); })
                .Case([](mx::MoeCombineOp c) { return lowerCombine(c); })
                .Case([](mx::MoeCombineWeightsGradOp c) {
                  return lowerCombineWeightsGrad(c);
                })
                .Case([](mx::FrobeniusNormalizeOp n) {
                  return lowerNormalize(n);
                })
                .Case([](mx::ScaleByNormOp n) { return lowerScaleByNorm(n); });
        if (failed(done))
          return signalPassFailure();
        continue;
      } else if (auto c = dyn_cast<memref::CopyOp>(op)) {
        if (failed(lowerCopy(op, c.getSource(), c.getTarget())))
          return signalPassFailure();
        continue;
      } else {
        auto g = cast<linalg::GenericOp>(op);
        if (!isElementwise(g) && !isLoopKernel(g))
          return fail(op, "is not a kernel over static buffers with "
                          "projected-permutation maps (the CUDA target "
                          "runs only those as generated kernels)");
        if (failed(isElementwise(g) ? launch(g) : launchLoops(g)))
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
      if (isHostWork(op))
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
