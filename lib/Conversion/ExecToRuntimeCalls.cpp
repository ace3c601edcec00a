//===- ExecToRuntimeCalls.cpp - muir_exec ops to runtime C calls ----------===//
//
// The runtime's kernels take raw pointers and integer sizes (see
// runtime/include/muir-rt/Runtime.h), which keeps its ABI independent of
// MLIR's memref descriptors. Exec buffers are static and contiguous, so the
// aligned pointer plus static sizes describe them completely; the CUDA
// target's packed exchanges take 1-D views of a larger buffer, passed as
// the aligned pointer plus the view's offset and its length.
//
//===----------------------------------------------------------------------===//
#include "muir/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace mlir::muir {
#define GEN_PASS_DEF_MUIREXECTORUNTIMECALLS
#include "muir/Passes.h.inc"
} // namespace mlir::muir

using namespace mlir;
namespace mx = mlir::muir_exec;

namespace {

class CallBuilder {
public:
  CallBuilder(ModuleOp module, Operation *at, bool cuda)
      : module(module), b(at), loc(at->getLoc()), cuda(cuda) {}

  Value i64(int64_t v) {
    return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(v));
  }
  Value i32(int32_t v) {
    return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v));
  }
  Value f32(FloatAttr v) {
    return arith::ConstantOp::create(
        b, loc, b.getF32FloatAttr(v.getValueAsDouble()));
  }
  Value f32(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  Value f64(FloatAttr v) {
    return arith::ConstantOp::create(
        b, loc, b.getF64FloatAttr(v.getValueAsDouble()));
  }
  /// The address of a buffer's first element (its offset included, for a
  /// view that is not at its allocation's start).
  Value ptr(Value memref) {
    auto type = cast<MemRefType>(memref.getType());
    Value idx =
        memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
    if (!type.getLayout().isIdentity()) {
      auto meta = memref::ExtractStridedMetadataOp::create(b, loc, memref);
      Value bytes = arith::MulIOp::create(
          b, loc, meta.getOffset(),
          arith::ConstantIndexOp::create(
              b, loc, type.getElementTypeBitWidth() / 8));
      idx = arith::AddIOp::create(b, loc, idx, bytes);
    }
    Value asInt =
        arith::IndexCastOp::create(b, loc, b.getI64Type(), idx);
    return LLVM::IntToPtrOp::create(
        b, loc, LLVM::LLVMPointerType::get(b.getContext()), asInt);
  }

  /// ptr(memref), or a null pointer for an absent optional operand.
  Value ptrOrNull(Value memref) {
    if (memref)
      return ptr(memref);
    return LLVM::ZeroOp::create(b, loc,
                                LLVM::LLVMPointerType::get(b.getContext()));
  }

  /// A stack array of i64 constants (counts for ragged collectives).
  Value constArray(ArrayRef<int64_t> values) {
    auto type = MemRefType::get({static_cast<int64_t>(values.size())},
                                b.getI64Type());
    Value buf = memref::AllocaOp::create(b, loc, type);
    for (auto [i, v] : llvm::enumerate(values)) {
      Value idx = arith::ConstantIndexOp::create(b, loc, i);
      memref::StoreOp::create(b, loc, i64(v), buf, ValueRange{idx});
    }
    return ptr(buf);
  }
  /// A pointer to a NUL-terminated constant string (a private global, one
  /// per distinct string).
  Value str(StringRef text) {
    // Named by a hash of the text; on a collision with another text, the
    // next free suffix.
    std::string base = "__muir_str_" + std::to_string(llvm::hash_value(text));
    std::string name = base;
    LLVM::GlobalOp global;
    for (int i = 1;; ++i) {
      global = module.lookupSymbol<LLVM::GlobalOp>(name);
      auto value =
          global ? dyn_cast_or_null<StringAttr>(global.getValueOrNull())
                 : StringAttr();
      if (!global || (value && value.getValue().drop_back() == text))
        break;
      name = base + "_" + std::to_string(i);
    }
    if (!global) {
      OpBuilder mb = OpBuilder::atBlockBegin(module.getBody());
      std::string bytes = text.str();
      bytes.push_back('\0');
      auto type = LLVM::LLVMArrayType::get(b.getI8Type(), bytes.size());
      global = LLVM::GlobalOp::create(mb, loc, type, /*isConstant=*/true,
                                      LLVM::Linkage::Private, name,
                                      mb.getStringAttr(bytes));
    }
    return LLVM::AddressOfOp::create(b, loc, global);
  }
  /// A buffer copy: on the device for the CUDA target.
  void copy(Value from, Value to) {
    if (cuda)
      gpu::MemcpyOp::create(b, loc, Type(), ValueRange{}, to, from);
    else
      memref::CopyOp::create(b, loc, from, to);
  }

  ValueRange call(StringRef cpuName, ArrayRef<Value> args,
                  TypeRange results = {}) {
    // The CUDA runtime's calls take the same arguments, device pointers.
    std::string name = cuda ? "muirrt_cuda_" + cpuName.drop_front(7).str()
                            : cpuName.str();
    SmallVector<Type> types;
    for (Value a : args)
      types.push_back(a.getType());
    auto fnType = b.getFunctionType(types, results);
    if (!module.lookupSymbol<func::FuncOp>(name)) {
      OpBuilder mb = OpBuilder::atBlockEnd(module.getBody());
      auto decl = func::FuncOp::create(mb, loc, name, fnType);
      decl.setPrivate();
    }
    return func::CallOp::create(b, loc, name, results, args).getResults();
  }
  /// The element count of a 1-D buffer, static or not, as i64.
  Value length(Value memref) {
    return toI64(memref::DimOp::create(b, loc, memref, 0));
  }
  Value toI64(Value index) {
    return arith::IndexCastOp::create(b, loc, b.getI64Type(), index);
  }
  Value index(Value i64) {
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), i64);
  }
  Type i64Type() { return b.getI64Type(); }

private:
  ModuleOp module;
  OpBuilder b;
  Location loc;
  bool cuda;
};

/// The exec ops the CUDA runtime (runtime/cuda) has calls for.
bool hasCudaCall(Operation *op) {
  return isa<mx::GemmOp, mx::SyrkOp, mx::SumSquaresOp, mx::TransposeOp,
             mx::TraceNormalizeOp, mx::ScaleMatricesOp,
             mx::SymmetricAllReduceOp,
             mx::ObserveOp, mx::AllReduceOp, mx::AllGatherOp,
             mx::AllGatherVOp, mx::ReduceScatterOp, mx::AllToAllOp,
             mx::BroadcastOp, mx::AllSliceOp, mx::GroupRankOp,
             mx::SyrkRowsOp, mx::PackedAllReduceStartOp,
             mx::PackedAllReduceWaitOp, mx::RouteOp, mx::RouteGradOp,
             mx::CapacityOp, mx::MseLossOp, mx::GroupedGemmOp,
             mx::GroupedGemmWgradOp, mx::MoePlanOp, mx::AllToAllVOp>(op);
}

/// The exec ops whose CUDA form is generated kernels (muir-exec-to-gpu).
bool hasCudaKernels(Operation *op) {
  return isa<mx::FrobeniusNormalizeOp, mx::ScaleByNormOp,
             mx::TriangleAllReduceStartOp, mx::TriangleAllReduceWaitOp,
             mx::MoeDispatchOp, mx::MoeCombineOp,
             mx::MoeCombineWeightsGradOp>(op);
}

/// The exec ops only the CUDA target has (muir-exec-to-gpu forms them).
bool isCudaOnly(Operation *op) {
  if (auto ss = dyn_cast<mx::SumSquaresOp>(op))
    return cast<MemRefType>(ss.getOutput().getType()).getElementType().isF64();
  return isa<mx::PackedAllReduceStartOp, mx::PackedAllReduceWaitOp,
             mx::MoePlanOp>(op);
}

/// (batch, rows, cols), batch 1 for a plain matrix.
std::array<int64_t, 3> dims(Value v) {
  ArrayRef<int64_t> s = cast<MemRefType>(v.getType()).getShape();
  return s.size() == 3 ? std::array<int64_t, 3>{s[0], s[1], s[2]}
                       : std::array<int64_t, 3>{1, s[0], s[1]};
}

bool isF64(Value v) {
  return cast<MemRefType>(v.getType()).getElementType().isF64();
}

int64_t numel(Value v) {
  return cast<MemRefType>(v.getType()).getNumElements();
}

/// (rows before `axis`, floats from `axis` on) of a row-major buffer: the
/// runtime's view of a gather or scatter along `axis`.
std::pair<int64_t, int64_t> split(Value v, int64_t axis) {
  ArrayRef<int64_t> shape = cast<MemRefType>(v.getType()).getShape();
  int64_t outer = 1, inner = 1;
  for (auto [d, size] : llvm::enumerate(shape))
    (static_cast<int64_t>(d) < axis ? outer : inner) *= size;
  return {outer, inner};
}


struct ExecToRuntimeCallsPass
    : public mlir::muir::impl::MuirExecToRuntimeCallsBase<ExecToRuntimeCallsPass> {
  using MuirExecToRuntimeCallsBase::MuirExecToRuntimeCallsBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<Operation *> ops;
    module.walk([&](Operation *op) {
      if (isa<mx::MuirExecDialect>(op->getDialect()))
        ops.push_back(op);
    });
    bool cuda = target == mlir::muir::Target::Cuda;
    for (Operation *op : ops) {
      if (cuda && hasCudaKernels(op)) {
        op->emitOpError("becomes generated kernels for the CUDA target: run "
                        "muir-exec-to-gpu first");
        return signalPassFailure();
      }
      if (cuda && !hasCudaCall(op)) {
        op->emitOpError("has no CUDA runtime call yet; compile this step "
                        "for --target=cpu");
        return signalPassFailure();
      }
      if (!cuda && isCudaOnly(op)) {
        op->emitOpError("is the CUDA target's (muir-exec-to-gpu forms it)");
        return signalPassFailure();
      }
    }
    for (Operation *op : ops) {
      CallBuilder c(module, op, cuda);
      if (auto g = dyn_cast<mx::GemmOp>(op)) {
        auto [batch, ar, ac] = dims(g.getA());
        auto [cb, m, n] = dims(g.getC());
        (void)cb;
        int64_t k = g.getTransposeA() ? ar : ac;
        // f64 buffers (the Gram form of Newton-Schulz) call dgemm with
        // double scalars.
        bool d = isF64(g.getC());
        auto scalar = [&](FloatAttr v) { return d ? c.f64(v) : c.f32(v); };
        bool sym = g.getSymmetric(); // f64 (verified)
        c.call(sym ? "muirrt_dgemm_sym" : d ? "muirrt_dgemm" : "muirrt_sgemm",
               {c.i64(batch), c.i32(g.getTransposeA()),
                c.i32(g.getTransposeB()), c.i64(m), c.i64(n), c.i64(k),
                scalar(g.getAlphaAttr()), c.ptr(g.getA()), c.ptr(g.getB()),
                scalar(g.getBetaAttr()), c.ptr(g.getC()),
                c.ptrOrNull(g.getAcc())});
      } else if (auto s = dyn_cast<mx::SyrkOp>(op)) {
        auto [batch, r, cl] = dims(s.getA());
        bool t = s.getTranspose();
        bool d = isF64(s.getC());
        auto scalar = [&](FloatAttr v) { return d ? c.f64(v) : c.f32(v); };
        // An f32 A into f64 C: the products accumulated in double.
        c.call(!d ? "muirrt_ssyrk"
                  : isF64(s.getA()) ? "muirrt_dsyrk" : "muirrt_ssyrk_f64",
               {c.i64(batch), c.i32(t), c.i64(t ? cl : r), c.i64(t ? r : cl),
                scalar(s.getAlphaAttr()), c.ptr(s.getA()),
                scalar(s.getBetaAttr()), c.ptr(s.getC()),
                c.ptrOrNull(s.getAcc())});
      } else if (auto sa = dyn_cast<mx::SymmetricAllReduceOp>(op)) {
        auto [batch, r, cl] = dims(sa.getInput());
        (void)cl;
        c.call("muirrt_symmetric_all_reduce",
               {c.i64(sa.getAxesMask()), c.ptr(sa.getInput()),
                c.ptr(sa.getOutput()), c.i64(batch), c.i64(r)});
      } else if (auto tn = dyn_cast<mx::TraceNormalizeOp>(op)) {
        auto [batch, r, cl] = dims(tn.getInput());
        (void)cl;
        c.call("muirrt_trace_normalize",
               {c.i64(batch), c.i64(r), c.f64(tn.getEpsAttr()),
                c.ptr(tn.getInput()), c.ptr(tn.getOutput()),
                c.ptr(tn.getScale())});
      } else if (auto sm = dyn_cast<mx::ScaleMatricesOp>(op)) {
        auto [batch, r, cl] = dims(sm.getInput());
        c.call(isF64(sm.getOutput()) ? "muirrt_scale_matrices_f64"
                                     : "muirrt_scale_matrices_f32",
               {c.i64(batch), c.i64(r * cl), c.ptr(sm.getInput()),
                c.ptr(sm.getScale()), c.ptr(sm.getOutput())});
      } else if (auto nrm = dyn_cast<mx::FrobeniusNormalizeOp>(op)) {
        auto [batch, r, cl] = dims(nrm.getInput());
        c.call("muirrt_frobenius_normalize",
               {c.i64(batch), c.i64(r * cl), c.f32(nrm.getEpsAttr()),
                c.ptr(nrm.getInput()), c.ptr(nrm.getOutput())});
      } else if (auto ss = dyn_cast<mx::SumSquaresOp>(op)) {
        auto [batch, r, cl] = dims(ss.getInput());
        bool f64 = cast<MemRefType>(ss.getOutput().getType())
                       .getElementType()
                       .isF64();
        c.call(f64 ? "muirrt_sum_squares_f64" : "muirrt_sum_squares",
               {c.i64(batch), c.i64(r * cl), c.ptr(ss.getInput()),
                c.ptr(ss.getOutput())});
      } else if (auto sc = dyn_cast<mx::ScaleByNormOp>(op)) {
        auto [batch, r, cl] = dims(sc.getInput());
        c.call("muirrt_scale_by_norm",
               {c.i64(batch), c.i64(r * cl), c.f32(sc.getEpsAttr()),
                c.ptr(sc.getInput()), c.ptr(sc.getSumSquares()),
                c.ptr(sc.getOutput())});
      } else if (auto tr = dyn_cast<mx::TransposeOp>(op)) {
        auto [batch, r, cl] = dims(tr.getInput());
        c.call("muirrt_transpose", {c.i64(batch), c.i64(r), c.i64(cl),
                                    c.ptr(tr.getInput()),
                                    c.ptr(tr.getOutput())});
      } else if (auto obs = dyn_cast<mx::ObserveOp>(op)) {
        auto t = cast<MemRefType>(obs.getInput().getType());
        c.call("muirrt_observe", {c.i64(obs.getSlot()), c.ptr(obs.getInput()),
                                  c.i64(t.getNumElements())});
      } else if (auto ar = dyn_cast<mx::AllReduceOp>(op)) {
        c.call("muirrt_all_reduce",
               {c.i64(ar.getAxesMask()), c.i32(static_cast<int32_t>(ar.getReduction())),
                c.ptr(ar.getInput()), c.ptr(ar.getOutput()),
                c.i64(numel(ar.getInput()))});
      } else if (auto ag = dyn_cast<mx::AllGatherOp>(op)) {
        auto [outer, inner] = split(ag.getInput(), ag.getGatherAxis());
        c.call("muirrt_all_gather",
               {c.i64(ag.getAxesMask()), c.ptr(ag.getInput()),
                c.ptr(ag.getOutput()), c.i64(outer), c.i64(inner)});
      } else if (auto agv = dyn_cast<mx::AllGatherVOp>(op)) {
        // Counts in floats: sizes are slices of dimension 0.
        auto t = cast<MemRefType>(agv.getInput().getType());
        int64_t row = t.getNumElements() / std::max<int64_t>(1, t.getDimSize(0));
        SmallVector<int64_t> counts;
        for (int64_t s : agv.getSizes())
          counts.push_back(s * row);
        c.call("muirrt_all_gatherv",
               {c.i64(agv.getAxesMask()), c.ptr(agv.getInput()),
                c.ptr(agv.getOutput()), c.constArray(counts)});
      } else if (auto rs = dyn_cast<mx::ReduceScatterOp>(op)) {
        auto [outer, inner] = split(rs.getOutput(), rs.getScatterAxis());
        c.call("muirrt_reduce_scatter",
               {c.i64(rs.getAxesMask()), c.i32(static_cast<int32_t>(rs.getReduction())),
                c.ptr(rs.getInput()), c.ptr(rs.getOutput()), c.i64(outer),
                c.i64(inner)});
      } else if (auto a2a = dyn_cast<mx::AllToAllOp>(op)) {
        int64_t group = muir::getRuntimeGroupSize(module, a2a.getAxesMask());
        c.call("muirrt_all_to_all",
               {c.i64(a2a.getAxesMask()), c.ptr(a2a.getInput()),
                c.ptr(a2a.getOutput()),
                c.i64(numel(a2a.getInput()) / group)});
      } else if (auto a2av = dyn_cast<mx::AllToAllVOp>(op)) {
        auto in = cast<MemRefType>(a2av.getInput().getType());
        auto out = cast<MemRefType>(a2av.getOutput().getType());
        int64_t rows = in.getRank() ? in.getDimSize(0) : 1;
        int64_t row = in.getNumElements() / std::max<int64_t>(1, rows);
        c.call("muirrt_all_to_allv",
               {c.i64(a2av.getAxesMask()), c.ptr(a2av.getInput()),
                c.i64(rows), c.ptr(a2av.getSendCounts()),
                c.ptr(a2av.getOutput()),
                c.i64(out.getRank() ? out.getDimSize(0) : 1),
                c.ptr(a2av.getRecvCounts()), c.i64(row)});
      } else if (auto sr = dyn_cast<mx::SyrkRowsOp>(op)) {
        auto [batch, r, cl] = dims(sr.getA());
        bool t = sr.getTranspose();
        c.call("muirrt_ssyrk_rows",
               {c.i64(batch), c.i32(t), c.i64(t ? cl : r), c.i64(t ? r : cl),
                c.f32(sr.getAlphaAttr()), c.ptr(sr.getA()), c.ptr(sr.getC()),
                c.toI64(sr.getRowBegin()), c.toI64(sr.getRowEnd())});
      } else if (auto st = dyn_cast<mx::TriangleAllReduceStartOp>(op)) {
        auto [batch, n, n2] = dims(st.getC());
        (void)n2;
        Value request = c.call(
            "muirrt_triangle_all_reduce_start",
            {c.i64(st.getAxesMask()), c.i64(batch), c.i64(n), c.ptr(st.getC()),
             c.toI64(st.getRowBegin()), c.toI64(st.getRowEnd())},
            {c.i64Type()})[0];
        st.getRequest().replaceAllUsesWith(request);
      } else if (auto w = dyn_cast<mx::TriangleAllReduceWaitOp>(op)) {
        c.call("muirrt_triangle_all_reduce_wait",
               {w.getRequest(), c.ptr(w.getC()), c.toI64(w.getRowBegin()),
                c.toI64(w.getRowEnd())});
      } else if (auto ps = dyn_cast<mx::PackedAllReduceStartOp>(op)) {
        Value request =
            c.call("muirrt_packed_all_reduce_start",
                   {c.i64(ps.getAxesMask()), c.ptr(ps.getBuffer()),
                    c.length(ps.getBuffer())},
                   {c.i64Type()})[0];
        ps.getRequest().replaceAllUsesWith(request);
      } else if (auto pw = dyn_cast<mx::PackedAllReduceWaitOp>(op)) {
        c.call("muirrt_packed_all_reduce_wait",
               {pw.getRequest(), c.ptr(pw.getBuffer()),
                c.length(pw.getBuffer())});
      } else if (auto gg = dyn_cast<mx::GroupedGemmOp>(op)) {
        auto it = cast<MemRefType>(gg.getInput().getType());
        auto ot = cast<MemRefType>(gg.getOutput().getType());
        auto wt = cast<MemRefType>(gg.getWeights().getType());
        c.call("muirrt_grouped_gemm",
               {c.i64(wt.getDimSize(0)), c.i64(it.getDimSize(0)),
                c.i64(it.getDimSize(1)), c.i64(ot.getDimSize(1)),
                c.ptr(gg.getInput()), c.ptr(gg.getWeights()),
                c.i32(gg.getTransposeB()), c.ptr(gg.getSizes()),
                c.ptr(gg.getOutput())});
      } else if (auto tr = dyn_cast<mx::TraceOp>(op)) {
        auto t = cast<MemRefType>(tr.getBuffer().getType());
        int64_t bytes =
            t.getNumElements() * t.getElementType().getIntOrFloatBitWidth() /
            8;
        c.call("muirrt_trace_buffer",
               {c.i64(tr.getOpId()), c.i64(tr.getIndex()),
                c.i32(tr.getOutput()), c.ptr(tr.getBuffer()), c.i64(bytes)});
      } else if (auto cap = dyn_cast<mx::CapacityOp>(op)) {
        auto it = cast<MemRefType>(cap.getIndices().getType());
        auto ct = cast<MemRefType>(cap.getCounts().getType());
        c.call("muirrt_capacity",
               {c.i64(it.getDimSize(0)), c.i64(it.getDimSize(1)),
                c.i64(ct.getDimSize(0)), c.f64(cap.getCapacityFactorAttr()),
                c.i32(static_cast<int32_t>(cap.getPolicy())), c.i64(cap.getGroupTokens()),
                c.ptr(cap.getIndices()), c.ptr(cap.getWeights()),
                c.ptr(cap.getKeptIndices()), c.ptr(cap.getKeptWeights()),
                c.ptr(cap.getCounts())});
      } else if (auto mse = dyn_cast<mx::MseLossOp>(op)) {
        c.call("muirrt_mse_loss",
               {c.i64(numel(mse.getInput())), c.ptr(mse.getInput()),
                c.ptr(mse.getTarget()), c.f32(mse.getScaleAttr()),
                c.ptr(mse.getLoss()), c.ptr(mse.getGrad())});
      } else if (auto wg = dyn_cast<mx::GroupedGemmWgradOp>(op)) {
        auto it = cast<MemRefType>(wg.getInput().getType());
        auto gt = cast<MemRefType>(wg.getGrad().getType());
        auto st = cast<MemRefType>(wg.getSizes().getType());
        c.call("muirrt_grouped_gemm_wgrad",
               {c.i64(st.getDimSize(0)), c.i64(it.getDimSize(0)),
                c.i64(it.getDimSize(1)), c.i64(gt.getDimSize(1)),
                c.ptr(wg.getInput()), c.ptr(wg.getGrad()),
                c.i32(wg.getTransposeB()), c.ptr(wg.getSizes()),
                c.ptr(wg.getOutput())});
      } else if (auto rg = dyn_cast<mx::RouteGradOp>(op)) {
        auto lt = cast<MemRefType>(rg.getLogits().getType());
        auto it = cast<MemRefType>(rg.getIndices().getType());
        c.call("muirrt_route_grad",
               {c.i64(lt.getDimSize(0)), c.i64(lt.getDimSize(1)),
                c.i64(it.getDimSize(1)), c.ptr(rg.getLogits()),
                c.i32(static_cast<int32_t>(rg.getScoring())), c.i32(rg.getSoftmaxAfterTopk()),
                c.i32(rg.getNormalize()), c.f32(rg.getScalingAttr()),
                c.ptr(rg.getIndices()), c.ptr(rg.getWeightsGrad()),
                c.ptr(rg.getOutput())});
      } else if (auto d = dyn_cast<mx::MoeDispatchOp>(op)) {
        auto xt = cast<MemRefType>(d.getInput().getType());
        auto it = cast<MemRefType>(d.getIndices().getType());
        auto ot = cast<MemRefType>(d.getOutput().getType());
        c.call("muirrt_moe_dispatch",
               {c.i64(d.getAxesMask()), c.i64(xt.getDimSize(0)),
                c.i64(it.getDimSize(1)), c.i64(d.getNumExperts()),
                c.i64(xt.getDimSize(1)), c.ptr(d.getInput()),
                c.ptr(d.getIndices()), c.ptrOrNull(d.getWeights()),
                c.i64(ot.getDimSize(0)), c.ptr(d.getOutput()),
                c.ptr(d.getCounts()), c.ptr(d.getPlan()),
                c.str(d.getLayer())});
      } else if (auto cb = dyn_cast<mx::MoeCombineOp>(op)) {
        auto rt = cast<MemRefType>(cb.getInput().getType());
        auto it = cast<MemRefType>(cb.getIndices().getType());
        c.call("muirrt_moe_combine",
               {c.i64(cb.getAxesMask()), c.i64(it.getDimSize(0)),
                c.i64(it.getDimSize(1)), c.i64(cb.getNumExperts()),
                c.i64(rt.getDimSize(1)), c.ptr(cb.getInput()),
                c.i64(rt.getDimSize(0)), c.ptr(cb.getIndices()),
                c.ptr(cb.getPlan()), c.ptrOrNull(cb.getWeights()),
                c.ptr(cb.getOutput()), c.str(cb.getLayer())});
      } else if (auto cw = dyn_cast<mx::MoeCombineWeightsGradOp>(op)) {
        auto rt = cast<MemRefType>(cw.getInput().getType());
        auto it = cast<MemRefType>(cw.getIndices().getType());
        c.call("muirrt_moe_combine_weights_grad",
               {c.i64(cw.getAxesMask()), c.i64(it.getDimSize(0)),
                c.i64(it.getDimSize(1)), c.i64(cw.getNumExperts()),
                c.i64(rt.getDimSize(1)), c.ptr(cw.getGrad()),
                c.ptr(cw.getInput()), c.i64(rt.getDimSize(0)),
                c.ptr(cw.getIndices()), c.ptr(cw.getPlan()),
                c.ptr(cw.getOutput()), c.str(cw.getLayer())});
      } else if (auto mp = dyn_cast<mx::MoePlanOp>(op)) {
        auto it = cast<MemRefType>(mp.getIndices().getType());
        c.call("muirrt_moe_plan",
               {c.i64(it.getDimSize(0)), c.i64(it.getDimSize(1)),
                c.i64(mp.getNumExperts()), c.i64(mp.getBound()),
                c.ptr(mp.getIndices()), c.ptr(mp.getCounts()),
                c.ptr(mp.getPlan()), c.str(mp.getLayer())});
      } else if (auto rt = dyn_cast<mx::RouteOp>(op)) {
        auto lt = cast<MemRefType>(rt.getLogits().getType());
        auto it = cast<MemRefType>(rt.getIndices().getType());
        c.call("muirrt_route",
               {c.i64(lt.getDimSize(0)), c.i64(lt.getDimSize(1)),
                c.i64(it.getDimSize(1)), c.ptr(rt.getLogits()),
                c.ptrOrNull(rt.getBias()), c.i32(static_cast<int32_t>(rt.getScoring())),
                c.i32(rt.getSoftmaxAfterTopk()), c.i32(rt.getNormalize()),
                c.i64(rt.getNGroup()), c.i64(rt.getTopkGroup()),
                c.f32(rt.getScalingAttr()), c.ptr(rt.getIndices()),
                c.ptr(rt.getWeights()), c.ptr(rt.getCounts())});
      } else if (auto gr = dyn_cast<mx::GroupRankOp>(op)) {
        Value r = c.call("muirrt_dist_group_rank", {c.i64(gr.getAxesMask())},
                         {c.i64Type()})[0];
        gr.getRank().replaceAllUsesWith(c.index(r));
      } else if (auto sl = dyn_cast<mx::AllSliceOp>(op)) {
        auto [outer, inner] = split(sl.getOutput(), sl.getSliceAxis());
        c.call("muirrt_all_slice",
               {c.i64(sl.getAxesMask()), c.ptr(sl.getInput()),
                c.ptr(sl.getOutput()), c.i64(outer), c.i64(inner)});
      } else if (auto bc = dyn_cast<mx::BroadcastOp>(op)) {
        // The runtime broadcasts in place: start from this rank's input.
        c.copy(bc.getInput(), bc.getOutput());
        c.call("muirrt_broadcast",
               {c.i64(bc.getAxesMask()), c.i64(bc.getRoot()),
                c.ptr(bc.getOutput()), c.i64(numel(bc.getInput()))});
      } else {
        op->emitOpError("has no runtime call");
        return signalPassFailure();
      }
      op->erase();
    }
    // Grids only describe who talks to whom; once collectives are calls
    // with communicators, nothing below the runtime calls refers to them.
    for (auto grid :
         llvm::make_early_inc_range(module.getOps<muir::GridOp>()))
      grid.erase();
  }
};

} // namespace
