//===- ExecToGPU.cpp - exec IR's buffers and kernels onto the GPU ---------===//
//
// For the CUDA target (muir-compile --target=cuda), before the runtime calls
// are formed: every buffer of a step lives in device memory, so
//   memref.alloc / memref.dealloc -> gpu.alloc / gpu.dealloc
//   memref.copy                   -> gpu.memcpy (device to device), or a
//                                    copy kernel where a side is strided
//   linalg.generic (element-wise) -> gpu.launch
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
/// `at`; returns a builder inside the bounds check and the element index.
std::pair<OpBuilder, Value> launchOver(Operation *at, int64_t n) {
  OpBuilder b(at);
  Location loc = at->getLoc();
  auto idx = [&](OpBuilder &ib, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(ib, loc, v);
  };
  Value one = idx(b, 1);
  Value threads = idx(b, kThreads);
  Value blocks = idx(b, (n + kThreads - 1) / kThreads);
  auto l = gpu::LaunchOp::create(b, loc, blocks, one, one, threads, one, one);
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
    auto [ib, i] = launchOver(c, n);
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
  auto [ib, i] = launchOver(g, n);
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
              linalg::CopyOp, linalg::GenericOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
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
