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
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
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

  void outline(SymbolTable &symbols, func::FuncOp f, scf::ForOp loop,
               int64_t &n) {
    if (loop.getNumResults() != 0)
      return;
    // The values the nest uses from outside it; constants are copied in.
    llvm::SetVector<Value> captured;
    SmallVector<Operation *> constants;
    llvm::SmallPtrSet<Operation *, 8> seenConstants;
    bool ok = true;
    loop->walk([&](Operation *op) {
      for (Value v : op->getOperands()) {
        // Defined in the nest (its ops' results, its blocks' arguments).
        if (loop->isAncestor(v.getParentRegion()->getParentOp()))
          continue;
        if (Operation *def = v.getDefiningOp();
            def && def->hasTrait<OpTrait::ConstantLike>()) {
          if (seenConstants.insert(def).second)
            constants.push_back(def);
          continue;
        }
        ok &= passable(v.getType());
        captured.insert(v);
      }
    });
    if (!ok)
      return;
    OpBuilder b(f);
    SmallVector<Type> types;
    for (Value v : captured)
      types.push_back(v.getType());
    auto callee = func::FuncOp::create(
        b, loop.getLoc(), (f.getName() + "_loop" + Twine(n++)).str(),
        b.getFunctionType(types, {}));
    callee.setPrivate();
    // convert-func-to-llvm keeps `passthrough` (LLVM's own attributes).
    callee->setAttr("passthrough",
                    b.getArrayAttr({b.getStringAttr("noinline")}));
    symbols.insert(callee);
    Block *body = callee.addEntryBlock();
    OpBuilder inside = OpBuilder::atBlockBegin(body);
    IRMapping map;
    for (auto [v, arg] : llvm::zip(captured, body->getArguments()))
      map.map(v, arg);
    for (Operation *c : constants)
      inside.clone(*c, map);
    inside.clone(*loop, map);
    func::ReturnOp::create(inside, loop.getLoc());
    OpBuilder at(loop);
    func::CallOp::create(at, loop.getLoc(), callee,
                         SmallVector<Value>(captured.begin(), captured.end()));
    loop.erase();
  }
};

} // namespace
