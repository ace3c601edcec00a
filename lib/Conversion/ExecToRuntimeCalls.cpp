//===- ExecToRuntimeCalls.cpp - muir_exec ops to runtime C calls ----------===//
//
// The runtime's kernels take raw pointers and integer sizes (see
// runtime/include/muir-rt/Runtime.h), which keeps its ABI independent of
// MLIR's memref descriptors. Exec buffers are static and contiguous, so the
// aligned pointer plus static sizes describe them completely.
//
//===----------------------------------------------------------------------===//
#include "muir/Passes.h"

namespace mlir::muir {
#define GEN_PASS_DEF_MUIREXECTORUNTIMECALLS
#include "muir/Passes.h.inc"
} // namespace mlir::muir

using namespace mlir;
namespace mx = mlir::muir_exec;

namespace {

class CallBuilder {
public:
  CallBuilder(ModuleOp module, Operation *at)
      : module(module), b(at), loc(at->getLoc()) {}

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
  Value ptr(Value memref) {
    Value idx =
        memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
    Value asInt =
        arith::IndexCastOp::create(b, loc, b.getI64Type(), idx);
    return LLVM::IntToPtrOp::create(
        b, loc, LLVM::LLVMPointerType::get(b.getContext()), asInt);
  }

  void call(StringRef name, ArrayRef<Value> args) {
    SmallVector<Type> types;
    for (Value a : args)
      types.push_back(a.getType());
    auto fnType = b.getFunctionType(types, {});
    if (!module.lookupSymbol<func::FuncOp>(name)) {
      OpBuilder mb = OpBuilder::atBlockEnd(module.getBody());
      auto decl = func::FuncOp::create(mb, loc, name, fnType);
      decl.setPrivate();
    }
    func::CallOp::create(b, loc, name, TypeRange{}, args);
  }

private:
  ModuleOp module;
  OpBuilder b;
  Location loc;
};

/// (batch, rows, cols), batch 1 for a plain matrix.
std::array<int64_t, 3> dims(Value v) {
  ArrayRef<int64_t> s = cast<MemRefType>(v.getType()).getShape();
  return s.size() == 3 ? std::array<int64_t, 3>{s[0], s[1], s[2]}
                       : std::array<int64_t, 3>{1, s[0], s[1]};
}

struct ExecToRuntimeCallsPass
    : public mlir::muir::impl::MuirExecToRuntimeCallsBase<ExecToRuntimeCallsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<Operation *> ops;
    module.walk([&](Operation *op) {
      if (isa<mx::MuirExecDialect>(op->getDialect()))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      CallBuilder c(module, op);
      if (auto g = dyn_cast<mx::GemmOp>(op)) {
        auto [batch, ar, ac] = dims(g.getA());
        auto [cb, m, n] = dims(g.getC());
        (void)cb;
        int64_t k = g.getTransposeA() ? ar : ac;
        c.call("muirrt_sgemm",
               {c.i64(batch), c.i32(g.getTransposeA()),
                c.i32(g.getTransposeB()), c.i64(m), c.i64(n), c.i64(k),
                c.f32(g.getAlphaAttr()), c.ptr(g.getA()), c.ptr(g.getB()),
                c.f32(g.getBetaAttr()), c.ptr(g.getC())});
      } else if (auto s = dyn_cast<mx::SyrkOp>(op)) {
        auto [batch, n, k] = dims(s.getA());
        c.call("muirrt_ssyrk",
               {c.i64(batch), c.i64(n), c.i64(k), c.f32(s.getAlphaAttr()),
                c.ptr(s.getA()), c.f32(s.getBetaAttr()), c.ptr(s.getC())});
      } else if (auto nrm = dyn_cast<mx::FrobeniusNormalizeOp>(op)) {
        auto [batch, r, cl] = dims(nrm.getInput());
        c.call("muirrt_frobenius_normalize",
               {c.i64(batch), c.i64(r * cl), c.f32(nrm.getEpsAttr()),
                c.ptr(nrm.getInput()), c.ptr(nrm.getOutput())});
      } else if (auto tr = dyn_cast<mx::TransposeOp>(op)) {
        auto [batch, r, cl] = dims(tr.getInput());
        c.call("muirrt_transpose", {c.i64(batch), c.i64(r), c.i64(cl),
                                    c.ptr(tr.getInput()),
                                    c.ptr(tr.getOutput())});
      } else if (auto obs = dyn_cast<mx::ObserveOp>(op)) {
        auto t = cast<MemRefType>(obs.getInput().getType());
        c.call("muirrt_observe", {c.i64(obs.getSlot()), c.ptr(obs.getInput()),
                                  c.i64(t.getNumElements())});
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
