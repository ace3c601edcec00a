//===- ExecToRuntimeCalls.cpp - muir_exec ops to runtime C calls ----------===//
//
// The runtime's kernels take raw pointers and integer sizes (see
// runtime/include/muir-rt/Runtime.h), which keeps its ABI independent of
// MLIR's memref descriptors. Exec buffers are static and contiguous, so the
// aligned pointer plus static sizes describe them completely; the CUDA
// target's packed exchanges take 1-D views of a larger buffer, passed as
// the aligned pointer plus the view's offset and its length.
//
// One rewrite pattern per op (CallPattern<Op>, whose `emit` overload builds
// the call), applied in one walk. Which ops a target calls is the ops' own
// RuntimeCallOpInterface: the CPU runtime is `muirrt_<name>`, the CUDA
// runtime `muirrt_cuda_<name>` with the same arguments (device pointers).
// The entries, their names and their types are muir-rt/Entries.def's: a
// call names an Rt entry, and its declaration takes the entry's C types.
// Buffers left as memrefs (allocations, host stores) lose their
// #muir_exec.host memory space here: it is the default one below. Before
// the calls, the buffer fusions of ExecBufferFusions.cpp.
//
//===----------------------------------------------------------------------===//
#include "ExecToRuntimeCallsInternal.h"
#include "muir-rt/Collectives.h"
#include "muir/Conversion/Passes.h"
#include "muir/Target/TargetInfo.h"
#include "muir/Transforms/PassInput.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/Transforms/Patterns.h"
#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace mlir::muir {
#define GEN_PASS_DEF_MUIREXECTORUNTIMECALLS
#include "muir/Conversion/Passes.h.inc"
} // namespace mlir::muir

using namespace mlir;
namespace mx = mlir::muir_exec;

namespace {

/// The type a compiled step passes for a C parameter or result: a pointer
/// is !llvm.ptr, an integer iN, float and double f32 and f64.
template <typename T> Type abiType(MLIRContext *ctx) {
  if constexpr (std::is_pointer_v<T>)
    return LLVM::LLVMPointerType::get(ctx);
  else if constexpr (std::is_same_v<T, float>)
    return Float32Type::get(ctx);
  else if constexpr (std::is_same_v<T, double>)
    return Float64Type::get(ctx);
  else {
    static_assert(std::is_integral_v<T>, "a runtime entry takes pointers, "
                                         "integers, float and double");
    return IntegerType::get(ctx, 8 * sizeof(T));
  }
}
template <typename F> struct AbiSignature;
template <typename R, typename... A> struct AbiSignature<R(A...)> {
  static FunctionType get(MLIRContext *ctx) {
    SmallVector<Type> inputs = {abiType<A>(ctx)...};
    SmallVector<Type> results;
    if constexpr (!std::is_void_v<R>)
      results.push_back(abiType<R>(ctx));
    return FunctionType::get(ctx, inputs, results);
  }
};

/// Each entry's type, from its C declaration in muir-rt/Entries.def.
FunctionType entryType(MLIRContext *ctx, StringRef entry) {
  using TypeOf = FunctionType (*)(MLIRContext *);
  static const llvm::StringMap<TypeOf> all = {
#define MUIR_RT_ENTRY(NAME, TARGETS, RET, PARAMS)                              \
  {#NAME, &AbiSignature<RET PARAMS>::get},
#include "muir-rt/Entries.def"
  };
  auto found = all.find(entry);
  return found == all.end() ? FunctionType() : found->second(ctx);
}

class CallBuilder {
public:
  CallBuilder(RewriterBase &b, mx::RuntimeCallOpInterface at,
              const muir::TargetInfo &target)
      : mod(at->getParentOfType<ModuleOp>()), b(b), loc(at->getLoc()),
        at(at), target(target) {}

  /// Whether a call disagreed with muir-rt/Entries.def (its error said so).
  bool failed() const { return disagreed; }

  Value i64(int64_t v) {
    return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(v));
  }
  /// The rows a call works on: the run-time token count where the op has
  /// one (its buffers' later rows were filled before), else all of them.
  Value rows(Value tokens, int64_t all) { return tokens ? tokens : i64(all); }
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
  /// A coefficient as the runtime takes it (double for f64 buffers, else
  /// float): the operand where the op has one (known at run time), else
  /// the attribute.
  Value scalar(Value operand, FloatAttr attr, bool dbl) {
    if (!operand)
      return dbl ? f64(attr) : f32(attr);
    return dbl ? operand
               : Value(arith::TruncFOp::create(b, loc, b.getF32Type(),
                                               operand));
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

  /// A request as the runtime's i64 handle (the cast goes once the loops
  /// that carry requests carry handles).
  Value handle(Value request) {
    return UnrealizedConversionCastOp::create(b, loc, b.getI64Type(),
                                              request)
        .getResult(0);
  }

  /// The op's group as the runtime's axes mask.
  Value group(mx::GroupOpInterface op) {
    return i64(op.getGroup().getRuntimeMask(op));
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
      global = mod.lookupSymbol<LLVM::GlobalOp>(name);
      auto value =
          global ? dyn_cast_or_null<StringAttr>(global.getValueOrNull())
                 : StringAttr();
      if (!global || (value && value.getValue().drop_back() == text))
        break;
      name = base + "_" + std::to_string(i);
    }
    if (!global) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(mod.getBody());
      std::string bytes = text.str();
      bytes.push_back('\0');
      auto type = LLVM::LLVMArrayType::get(b.getI8Type(), bytes.size());
      global = LLVM::GlobalOp::create(b, loc, type, /*isConstant=*/true,
                                      LLVM::Linkage::Private, name,
                                      b.getStringAttr(bytes));
    }
    return LLVM::AddressOfOp::create(b, loc, global);
  }
  /// A buffer copy, the target's way.
  void copy(Value from, Value to) { target.copy(b, loc, from, to); }

  /// The call of the op's runtime entry (RuntimeCallOpInterface::
  /// getRuntimeEntry, which the target's runtime has: the pass checked the
  /// ops it was given, and checks again here for those a fusion made),
  /// with the target's prefix, declared once per module with the entry's
  /// C types. Arguments of other types are an error of the op's `emit`,
  /// reported on the op; the call is still made with the entry's results
  /// so that `emit` goes on, and the pass fails.
  ValueRange call(ArrayRef<Value> args) {
    StringRef entry = at.getRuntimeEntry();
    std::string name = target.symbol(entry);
    FunctionType fnType = entryType(b.getContext(), entry);
    SmallVector<Type> given;
    for (Value a : args)
      given.push_back(a.getType());
    bool has = target.hasEntry(entry);
    if (!fnType || !has || TypeRange(given) != fnType.getInputs()) {
      InFlightDiagnostic d = at->emitOpError("calls ") << name << " with (";
      llvm::interleaveComma(given, d);
      d << ")";
      if (!fnType)
        d << "; muir-rt/Entries.def does not declare " << entry;
      else if (!has)
        d << "; muir-rt/Entries.def declares " << entry << " for another "
          << "target only";
      else
        d << "; muir-rt/Entries.def declares " << fnType;
      disagreed = true;
      if (!fnType)
        fnType = FunctionType::get(b.getContext(), given, {});
      name += ".mismatched";
    }
    if (!mod.lookupSymbol<func::FuncOp>(name)) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToEnd(mod.getBody());
      auto decl = func::FuncOp::create(b, loc, name, fnType);
      decl.setPrivate();
    }
    return func::CallOp::create(b, loc, name, fnType.getResults(), args)
        .getResults();
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

private:
  ModuleOp mod;
  RewriterBase &b;
  Location loc;
  mx::RuntimeCallOpInterface at;
  const muir::TargetInfo &target;
  bool disagreed = false;
};

/// (batch, rows, cols), batch 1 for a plain matrix.
/// The runtime's code of a reduction (muir-rt/Collectives.h).
int32_t reductionCode(mx::Reduction r) {
  switch (r) {
  case mx::Reduction::sum:
    return MUIRRT_REDUCE_SUM;
  case mx::Reduction::max:
    return MUIRRT_REDUCE_MAX;
  case mx::Reduction::min:
    return MUIRRT_REDUCE_MIN;
  case mx::Reduction::avg:
    return MUIRRT_REDUCE_AVG;
  }
  llvm_unreachable("unknown reduction");
}

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


Value emit(mx::GemmOp g, CallBuilder &c) {
  auto [batch, ar, ac] = dims(g.getA());
  auto [cb, m, n] = dims(g.getC());
  (void)cb;
  int64_t k = g.getTransposeA() ? ar : ac;
  // f64 buffers (the Gram form of Newton-Schulz) call dgemm with
  // double scalars.
  bool d = isF64(g.getC());
  if (g.getRowStable()) {
    c.call({c.i32(g.getTransposeA()), c.i32(g.getTransposeB()), c.i64(m),
            c.i64(n), c.i64(k), c.ptr(g.getA()), c.ptr(g.getB()),
            c.ptr(g.getC())});
    return {};
  }
  // bf16 buffers: bf16 operands, f32 accumulation and scalars (the
  // entry: GemmOp::getRuntimeEntry).
  c.call({c.i64(batch), c.i32(g.getTransposeA()), c.i32(g.getTransposeB()),
          c.i64(m), c.i64(n), c.i64(k),
          c.scalar(g.getAlphaValue(), g.getAlphaAttr(), d), c.ptr(g.getA()),
          c.ptr(g.getB()), c.scalar(g.getBetaValue(), g.getBetaAttr(), d),
          c.ptr(g.getC()), c.ptrOrNull(g.getAcc())});
  return {};
}

Value emit(mx::SyrkOp s, CallBuilder &c) {
  auto [batch, r, cl] = dims(s.getA());
  bool t = s.getTranspose();
  bool d = isF64(s.getC());
  c.call({c.i64(batch), c.i32(t), c.i64(t ? cl : r), c.i64(t ? r : cl),
          c.scalar(s.getAlphaValue(), s.getAlphaAttr(), d), c.ptr(s.getA()),
          c.scalar(s.getBetaValue(), s.getBetaAttr(), d),
          c.ptr(s.getC()), c.ptrOrNull(s.getAcc())});
  return {};
}

Value emit(mx::SymmetricAllReduceOp sa, CallBuilder &c) {
  auto [batch, r, cl] = dims(sa.getInput());
  (void)cl;
  c.call({c.group(sa), c.ptr(sa.getInput()),
          c.ptr(sa.getOutput()), c.i64(batch), c.i64(r)});
  return {};
}

Value emit(mx::TraceNormalizeOp tn, CallBuilder &c) {
  auto [batch, r, cl] = dims(tn.getInput());
  (void)cl;
  c.call({c.i64(batch), c.i64(r), c.f64(tn.getEpsAttr()),
          c.ptr(tn.getInput()), c.ptr(tn.getOutput()),
          c.ptr(tn.getScale())});
  return {};
}

Value emit(mx::ScaleMatricesOp sm, CallBuilder &c) {
  auto [batch, r, cl] = dims(sm.getInput());
  c.call({c.i64(batch), c.i64(r * cl), c.ptr(sm.getInput()),
          c.ptr(sm.getScale()), c.ptr(sm.getOutput())});
  return {};
}

Value emit(mx::FrobeniusNormalizeOp nrm, CallBuilder &c) {
  auto [batch, r, cl] = dims(nrm.getInput());
  if (isF64(nrm.getInput())) {
    c.call({c.i64(batch), c.i64(r * cl), c.f64(nrm.getEpsAttr()),
            c.ptr(nrm.getInput()), c.ptr(nrm.getOutput())});
    return {};
  }
  c.call({c.i64(batch), c.i64(r * cl), c.f32(nrm.getEpsAttr()),
          c.ptr(nrm.getInput()), c.ptr(nrm.getOutput())});
  return {};
}

Value emit(mx::SumSquaresOp ss, CallBuilder &c) {
  auto [batch, r, cl] = dims(ss.getInput());
  c.call({c.i64(batch), c.i64(r * cl), c.ptr(ss.getInput()),
          c.ptr(ss.getOutput())});
  return {};
}

Value emit(mx::ScaleByNormOp sc, CallBuilder &c) {
  auto [batch, r, cl] = dims(sc.getInput());
  c.call({c.i64(batch), c.i64(r * cl), c.f32(sc.getEpsAttr()),
          c.ptr(sc.getInput()), c.ptr(sc.getSumSquares()),
          c.ptr(sc.getOutput())});
  return {};
}

Value emit(mx::TransposeOp tr, CallBuilder &c) {
  auto [batch, r, cl] = dims(tr.getInput());
  c.call({c.i64(batch), c.i64(r), c.i64(cl),
                              c.ptr(tr.getInput()),
                              c.ptr(tr.getOutput())});
  return {};
}

Value emit(mx::ObserveOp obs, CallBuilder &c) {
  auto t = cast<MemRefType>(obs.getInput().getType());
  c.call({c.i64(obs.getSlot()), c.ptr(obs.getInput()),
                            c.i64(t.getNumElements())});
  return {};
}

Value emit(mx::AllReduceOp ar, CallBuilder &c) {
  c.call({c.group(ar), c.i32(reductionCode(ar.getReduction())),
          c.ptr(ar.getInput()), c.ptr(ar.getOutput()),
          c.i64(numel(ar.getInput()))});
  return {};
}

Value emit(mx::AllGatherOp ag, CallBuilder &c) {
  auto [outer, inner] = split(ag.getInput(), ag.getGatherAxis());
  c.call({c.group(ag), c.ptr(ag.getInput()),
          c.ptr(ag.getOutput()), c.i64(outer), c.i64(inner)});
  return {};
}

Value emit(mx::AllGatherVOp agv, CallBuilder &c) {
  // Counts in floats: sizes are slices of dimension 0.
  auto t = cast<MemRefType>(agv.getInput().getType());
  int64_t row = t.getNumElements() / std::max<int64_t>(1, t.getDimSize(0));
  SmallVector<int64_t> counts;
  for (int64_t s : agv.getSizes())
    counts.push_back(s * row);
  c.call({c.group(agv), c.ptr(agv.getInput()),
          c.ptr(agv.getOutput()), c.constArray(counts)});
  return {};
}

Value emit(mx::ReduceScatterOp rs, CallBuilder &c) {
  auto [outer, inner] = split(rs.getOutput(), rs.getScatterAxis());
  c.call({c.group(rs), c.i32(reductionCode(rs.getReduction())),
          c.ptr(rs.getInput()), c.ptr(rs.getOutput()), c.i64(outer),
          c.i64(inner)});
  return {};
}

Value emit(mx::AllToAllOp a2a, CallBuilder &c) {
  int64_t group = a2a.getGroup().getSize(a2a);
  c.call({c.group(a2a), c.ptr(a2a.getInput()),
          c.ptr(a2a.getOutput()),
          c.i64(numel(a2a.getInput()) / group)});
  return {};
}

Value emit(mx::AllToAllVOp a2av, CallBuilder &c) {
  auto in = cast<MemRefType>(a2av.getInput().getType());
  auto out = cast<MemRefType>(a2av.getOutput().getType());
  int64_t rows = in.getRank() ? in.getDimSize(0) : 1;
  int64_t row = in.getNumElements() / std::max<int64_t>(1, rows);
  c.call({c.group(a2av), c.ptr(a2av.getInput()),
          c.i64(rows), c.ptr(a2av.getSendCounts()),
          c.ptr(a2av.getOutput()),
          c.i64(out.getRank() ? out.getDimSize(0) : 1),
          c.ptr(a2av.getRecvCounts()), c.i64(row)});
  return {};
}

Value emit(mx::SyrkRowsOp sr, CallBuilder &c) {
  auto [batch, r, cl] = dims(sr.getA());
  bool t = sr.getTranspose();
  c.call({c.i64(batch), c.i32(t), c.i64(t ? cl : r), c.i64(t ? r : cl),
          c.f32(sr.getAlphaAttr()), c.ptr(sr.getA()), c.ptr(sr.getC()),
          c.toI64(sr.getRowBegin()), c.toI64(sr.getRowEnd())});
  return {};
}

Value emit(mx::TriangleAllReduceStartOp st, CallBuilder &c) {
  auto [batch, n, n2] = dims(st.getC());
  (void)n2;
  Value request = c.call({c.group(st), c.i64(batch), c.i64(n), c.ptr(st.getC()),
       c.toI64(st.getRowBegin()), c.toI64(st.getRowEnd())})[0];
  return request;
}

Value emit(mx::TriangleAllReduceWaitOp w, CallBuilder &c) {
  c.call({c.handle(w.getRequest()), c.ptr(w.getC()), c.toI64(w.getRowBegin()),
          c.toI64(w.getRowEnd())});
  return {};
}

Value emit(mx::PackedAllReduceStartOp ps, CallBuilder &c) {
  Value request =
      c.call({c.group(ps), c.ptr(ps.getBuffer()),
              c.length(ps.getBuffer())})[0];
  return request;
}

Value emit(mx::PackedAllReduceWaitOp pw, CallBuilder &c) {
  c.call({c.handle(pw.getRequest()), c.ptr(pw.getBuffer()),
          c.length(pw.getBuffer())});
  return {};
}

Value emit(mx::GroupedGemmOp gg, CallBuilder &c) {
  auto it = cast<MemRefType>(gg.getInput().getType());
  auto ot = cast<MemRefType>(gg.getOutput().getType());
  auto wt = cast<MemRefType>(gg.getWeights().getType());
  c.call({c.i64(wt.getDimSize(0)), c.i64(it.getDimSize(0)),
          c.i64(it.getDimSize(1)), c.i64(ot.getDimSize(1)),
          c.ptr(gg.getInput()), c.ptr(gg.getWeights()),
          c.i32(gg.getTransposeB()), c.ptr(gg.getSizes()),
          c.ptr(gg.getOutput())});
  return {};
}

Value emit(mx::GroupedGemmAddOp gg, CallBuilder &c) {
  auto it = cast<MemRefType>(gg.getInput().getType());
  auto ot = cast<MemRefType>(gg.getOutput().getType());
  auto wt = cast<MemRefType>(gg.getWeights().getType());
  c.call({c.i64(wt.getDimSize(0)), c.i64(it.getDimSize(0)),
          c.i64(it.getDimSize(1)), c.i64(ot.getDimSize(1)),
          c.ptr(gg.getInput()), c.ptr(gg.getWeights()),
          c.i32(gg.getTransposeB()), c.i32(gg.getBf16Operands()),
          c.ptr(gg.getSizes()), c.ptr(gg.getOutput())});
  return {};
}

Value emit(mx::TraceOp tr, CallBuilder &c) {
  auto t = cast<MemRefType>(tr.getBuffer().getType());
  int64_t bytes =
      t.getNumElements() * t.getElementType().getIntOrFloatBitWidth() /
      8;
  c.call({c.i64(tr.getOpId()), c.i64(tr.getIndex()),
          c.i32(tr.getOutput()), c.ptr(tr.getBuffer()), c.i64(bytes)});
  return {};
}

Value emit(mx::CapacityOp cap, CallBuilder &c) {
  auto it = cast<MemRefType>(cap.getIndices().getType());
  auto ct = cast<MemRefType>(cap.getCounts().getType());
  c.call({c.rows(cap.getTokens(), it.getDimSize(0)), c.i64(it.getDimSize(1)),
          c.i64(ct.getDimSize(0)), c.f64(cap.getCapacityFactorAttr()),
          c.i32(static_cast<int32_t>(cap.getPolicy())), c.i64(cap.getGroupTokens()),
          c.ptr(cap.getIndices()), c.ptr(cap.getWeights()),
          c.ptr(cap.getKeptIndices()), c.ptr(cap.getKeptWeights()),
          c.ptr(cap.getCounts())});
  return {};
}

Value emit(mx::MseLossOp mse, CallBuilder &c) {
  c.call({c.i64(numel(mse.getInput())), c.ptr(mse.getInput()),
          c.ptr(mse.getTarget()), c.f32(mse.getScaleAttr()),
          c.ptr(mse.getLoss()), c.ptr(mse.getGrad())});
  return {};
}

Value emit(mx::GroupedGemmWgradOp wg, CallBuilder &c) {
  auto it = cast<MemRefType>(wg.getInput().getType());
  auto gt = cast<MemRefType>(wg.getGrad().getType());
  auto st = cast<MemRefType>(wg.getSizes().getType());
  c.call({c.i64(st.getDimSize(0)), c.i64(it.getDimSize(0)),
          c.i64(it.getDimSize(1)), c.i64(gt.getDimSize(1)),
          c.ptr(wg.getInput()), c.ptr(wg.getGrad()),
          c.i32(wg.getTransposeB()), c.ptr(wg.getSizes()),
          c.ptr(wg.getOutput())});
  return {};
}

Value emit(mx::RouteGradOp rg, CallBuilder &c) {
  auto lt = cast<MemRefType>(rg.getLogits().getType());
  auto it = cast<MemRefType>(rg.getIndices().getType());
  c.call({c.rows(rg.getTokens(), lt.getDimSize(0)), c.i64(lt.getDimSize(1)),
          c.i64(it.getDimSize(1)), c.ptr(rg.getLogits()),
          c.i32(static_cast<int32_t>(rg.getScoring())), c.i32(rg.getSoftmaxAfterTopk()),
          c.i32(rg.getNormalize()), c.f32(rg.getScalingAttr()),
          c.ptr(rg.getIndices()), c.ptr(rg.getWeightsGrad()),
          c.ptr(rg.getOutput())});
  return {};
}

Value emit(mx::MoeDispatchOp d, CallBuilder &c) {
  auto xt = cast<MemRefType>(d.getInput().getType());
  auto it = cast<MemRefType>(d.getIndices().getType());
  auto ot = cast<MemRefType>(d.getOutput().getType());
  c.call({c.group(d), c.i64(xt.getDimSize(0)),
          c.i64(it.getDimSize(1)), c.i64(d.getNumExperts()),
          c.i64(xt.getDimSize(1)), c.ptr(d.getInput()),
          c.ptr(d.getIndices()), c.ptrOrNull(d.getWeights()),
          c.i64(ot.getDimSize(0)), c.ptr(d.getOutput()),
          c.ptr(d.getCounts()), c.ptr(d.getPlan()),
          c.str(d.getLayer())});
  return {};
}

Value emit(mx::MoeCombineOp cb, CallBuilder &c) {
  auto rt = cast<MemRefType>(cb.getInput().getType());
  auto it = cast<MemRefType>(cb.getIndices().getType());
  c.call({c.group(cb), c.i64(it.getDimSize(0)),
          c.i64(it.getDimSize(1)), c.i64(cb.getNumExperts()),
          c.i64(rt.getDimSize(1)), c.ptr(cb.getInput()),
          c.i64(rt.getDimSize(0)), c.ptr(cb.getIndices()),
          c.ptr(cb.getPlan()), c.ptrOrNull(cb.getWeights()),
          c.ptr(cb.getOutput()), c.str(cb.getLayer())});
  return {};
}

Value emit(mx::MoeCombineWeightsGradOp cw, CallBuilder &c) {
  auto rt = cast<MemRefType>(cw.getInput().getType());
  auto it = cast<MemRefType>(cw.getIndices().getType());
  c.call({c.group(cw), c.i64(it.getDimSize(0)),
          c.i64(it.getDimSize(1)), c.i64(cw.getNumExperts()),
          c.i64(rt.getDimSize(1)), c.ptr(cw.getGrad()),
          c.ptr(cw.getInput()), c.i64(rt.getDimSize(0)),
          c.ptr(cw.getIndices()), c.ptr(cw.getPlan()),
          c.ptr(cw.getOutput()), c.str(cw.getLayer())});
  return {};
}

Value emit(mx::MoePlanOp mp, CallBuilder &c) {
  auto it = cast<MemRefType>(mp.getIndices().getType());
  c.call({c.i64(it.getDimSize(0)), c.i64(it.getDimSize(1)),
          c.i64(mp.getNumExperts()), c.i64(mp.getBound()),
          c.ptr(mp.getIndices()), c.ptr(mp.getCounts()),
          c.ptr(mp.getPlan()), c.str(mp.getLayer())});
  return {};
}

Value emit(mx::RouteOp rt, CallBuilder &c) {
  auto lt = cast<MemRefType>(rt.getLogits().getType());
  auto it = cast<MemRefType>(rt.getIndices().getType());
  c.call({c.rows(rt.getTokens(), lt.getDimSize(0)), c.i64(lt.getDimSize(1)),
          c.i64(it.getDimSize(1)), c.ptr(rt.getLogits()),
          c.ptrOrNull(rt.getBias()), c.i32(static_cast<int32_t>(rt.getScoring())),
          c.i32(rt.getSoftmaxAfterTopk()), c.i32(rt.getNormalize()),
          c.i64(rt.getNGroup()), c.i64(rt.getTopkGroup()),
          c.f32(rt.getScalingAttr()), c.ptr(rt.getIndices()),
          c.ptr(rt.getWeights()), c.ptr(rt.getCounts())});
  return {};
}

Value emit(mx::GroupRankOp gr, CallBuilder &c) {
  Value r = c.call({c.group(gr)})[0];
  return c.index(r);
}

Value emit(mx::AllSliceOp sl, CallBuilder &c) {
  auto [outer, inner] = split(sl.getOutput(), sl.getSliceAxis());
  c.call({c.group(sl), c.ptr(sl.getInput()),
          c.ptr(sl.getOutput()), c.i64(outer), c.i64(inner)});
  return {};
}

Value emit(mx::BroadcastOp bc, CallBuilder &c) {
  // The runtime broadcasts in place: start from this rank's input.
  c.copy(bc.getInput(), bc.getOutput());
  c.call({c.group(bc), c.i64(bc.getRoot()),
          c.ptr(bc.getOutput()), c.i64(numel(bc.getInput()))});
  return {};
}

/// Rewrites an exec op into its runtime call. `failed` is set where a call
/// disagreed with muir-rt/Entries.def.
template <typename OpT>
struct CallPattern : OpRewritePattern<OpT> {
  CallPattern(MLIRContext *context, const muir::TargetInfo &target,
              bool *failed)
      : OpRewritePattern<OpT>(context), target(target), failed(failed) {}

  LogicalResult matchAndRewrite(OpT op,
                                PatternRewriter &rewriter) const override {
    CallBuilder c(rewriter, op, target);
    Value result = emit(op, c);
    *failed |= c.failed();
    if (!result) {
      rewriter.eraseOp(op);
      return success();
    }
    // A started request's handle stands for the request until the loops
    // that carry it are converted.
    Type type = op->getResult(0).getType();
    if (isa<mx::RequestType>(type))
      result = UnrealizedConversionCastOp::create(rewriter, op->getLoc(),
                                                  type, result)
                   .getResult(0);
    assert(result.getType() == type && "a call's result is the op's");
    rewriter.replaceOp(op, result);
    return success();
  }

  const muir::TargetInfo &target;
  bool *failed;
};

/// One CallPattern per exec op: an op without an `emit` overload does not
/// compile.
template <typename... Ops>
void addCallPatterns(RewritePatternSet &patterns,
                     const muir::TargetInfo &target, bool *failed) {
  patterns.add<CallPattern<Ops>...>(patterns.getContext(), target, failed);
}

/// The loops that carry requests (the chunked triangle exchange's
/// `scf.for`) carry the runtime's i64 handles instead, by upstream's
/// structural type conversion; the casts the call patterns left then
/// cancel.
LogicalResult convertRequests(ModuleOp module) {
  MLIRContext *ctx = module.getContext();
  TypeConverter types;
  types.addConversion([](Type t) { return t; });
  types.addConversion(
      [](mx::RequestType t) { return IntegerType::get(t.getContext(), 64); });
  auto cast = [](OpBuilder &b, Type type, ValueRange inputs,
                 Location loc) -> Value {
    return UnrealizedConversionCastOp::create(b, loc, type, inputs)
        .getResult(0);
  };
  types.addSourceMaterialization(cast);
  types.addTargetMaterialization(cast);
  ConversionTarget target(*ctx);
  // Only the structural ops' types change; nothing else is touched (or
  // folded).
  target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
  RewritePatternSet patterns(ctx);
  scf::populateSCFStructuralTypeConversionsAndLegality(types, patterns,
                                                       target);
  if (failed(applyPartialConversion(module, target, std::move(patterns))))
    return failure();
  SmallVector<UnrealizedConversionCastOp> casts;
  auto isRequest = [](Type t) { return isa<mx::RequestType>(t); };
  module.walk([&](UnrealizedConversionCastOp op) {
    if (llvm::any_of(op->getOperandTypes(), isRequest) ||
        llvm::any_of(op->getResultTypes(), isRequest))
      casts.push_back(op);
  });
  SmallVector<UnrealizedConversionCastOp> left;
  reconcileUnrealizedCasts(casts, &left);
  for (UnrealizedConversionCastOp op : left)
    return op.emitOpError("a request that no runtime call takes or makes");
  return success();
}

struct ExecToRuntimeCallsPass
    : public mlir::muir::impl::MuirExecToRuntimeCallsBase<
          ExecToRuntimeCallsPass> {
  using MuirExecToRuntimeCallsBase::MuirExecToRuntimeCallsBase;

  void runOnOperation() override {
    if (failed(muir::checkPassInput(getOperation(), getArgument(),
                                    muir::PassInput::Exec)))
      return signalPassFailure();
    ModuleOp module = getOperation();
    const muir::TargetInfo &info = muir::TargetInfo::get(target);
    // Groups become masks numbered by folding index, which needs one run
    // grid.
    if (failed(muir::getRunGrid(module)))
      return signalPassFailure();
    WalkResult unsupported = module.walk([&](mx::RuntimeCallOpInterface op) {
      return failed(info.checkCalled(op)) ? WalkResult::interrupt()
                                          : WalkResult::advance();
    });
    if (unsupported.wasInterrupted())
      return signalPassFailure();

    // The fusions form entries only some runtimes have.
    if (info.hasEntry("frobenius_normalize_bf16"))
      muir::detail::fuseNormalizeToBf16(module);
    // (Element-wise kernels still linalg here: not a target that generates
    // them.)
    if (!info.generatesKernels())
      muir::detail::fuseWidenIntoReaders(module);
    if (info.hasEntry("grouped_gemm_add"))
      muir::detail::fuseGroupedSums(module);
    if (info.freesAfterLastUse())
      muir::detail::freeAfterLastUse(module);

    RewritePatternSet patterns(&getContext());
    bool disagreed = false;
    addCallPatterns<
#define GET_OP_LIST
#include "MuirExec/MuirExecOps.cpp.inc"
        >(patterns, info, &disagreed);
    walkAndApplyPatterns(module, std::move(patterns));
    if (disagreed)
      return signalPassFailure();
    if (failed(convertRequests(module)))
      return signalPassFailure();

    // Grids only describe who talks to whom; once collectives are calls
    // with communicators, nothing below the runtime calls refers to them.
    for (auto grid :
         llvm::make_early_inc_range(module.getOps<muir::GridOp>()))
      grid.erase();

    // Once buffers are pointers, host memory (#muir_exec.host, where
    // muir-lower-to-exec puts the counts on every target and which
    // muir-exec-to-gpu keeps on the host for CUDA) is the default memory
    // space, which the LLVM lowering knows.
    AttrTypeReplacer hostToDefault;
    hostToDefault.addReplacement([](MemRefType type) -> std::optional<Type> {
      if (!mx::isHostMemory(type))
        return std::nullopt;
      return MemRefType::get(type.getShape(), type.getElementType(),
                             type.getLayout());
    });
    hostToDefault.recursivelyReplaceElementsIn(module, /*replaceAttrs=*/true,
                                               /*replaceLocs=*/false,
                                               /*replaceTypes=*/true);
  }
};

} // namespace
