//===- PassInput.cpp - the level of IR a muir pass takes ------------------===//
#include "muir/Transforms/PassInput.h"
#include "Muir/MuirDialect.h"
#include "MuirExec/MuirExecDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"

using namespace mlir;
using namespace mlir::muir;

LogicalResult mlir::muir::checkPassInput(Operation *root, StringRef pass,
                                         PassInput input) {
  // A function pass (nested under func.func) reads its module's grids.
  auto module = dyn_cast<ModuleOp>(root);
  if (!module)
    module = root->getParentOfType<ModuleOp>();
  auto fail = [&](Operation *op, const Twine &found, const Twine &hint) {
    StringRef level = input == PassInput::Exec ? "exec IR (buffers and "
                                                 "muir_exec ops)"
                      : input == PassInput::Planned
                          ? "planned IR (distributed, optimizers "
                            "decomposed, Newton-Schulz expanded)"
                          : "tensor-level IR (high or planned: muir ops on "
                            "tensors)";
    op->emitError() << pass << " expects " << level << "; found " << found
                    << ": " << hint;
    return failure();
  };
  auto isMuir = [](Operation *op) {
    return op->getDialect() && isa<MuirDialect>(op->getDialect()) &&
           !isa<GridOp>(op);
  };
  // A step function on tensors: its arguments name tensors.
  auto isTensorStep = [](func::FuncOp f) {
    if (f->hasAttr(MuirDialect::EntryAttrHelper::getNameStr()))
      return false;
    for (unsigned i = 0; i < f.getNumArguments(); ++i)
      if (f.getArgAttr(i, MuirDialect::NameAttrHelper::getNameStr()) &&
          isa<TensorType>(f.getArgument(i).getType()))
        return true;
    return false;
  };
  bool hasGrid = module && !module.getOps<GridOp>().empty();
  Operation *bad = nullptr;
  std::string found, hint;
  root->walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (auto f = dyn_cast<LLVM::LLVMFuncOp>(op); f && !f.isExternal()) {
      found = ("LLVM-dialect function @" + f.getName()).str();
      hint = "the IR is lowered to LLVM already";
    } else if (input == PassInput::Exec) {
      if (!isMuir(op))
        return WalkResult::advance();
      found = ("tensor-level op '" + op->getName().getStringRef() + "'").str();
      hint = "run muir-lower-to-exec first (the muir-to-exec pipeline)";
    } else if (auto f = dyn_cast<func::FuncOp>(op);
               f && f->hasAttr(MuirDialect::EntryAttrHelper::getNameStr())) {
      found = ("exec function @" + f.getName() + " (muir.entry)").str();
      hint = input == PassInput::Planned
                 ? "it is lowered to exec IR already"
                 : "the pass runs before muir-lower-to-exec";
    } else if (op->getDialect() &&
               isa<muir_exec::MuirExecDialect>(op->getDialect())) {
      found = ("exec op '" + op->getName().getStringRef() + "'").str();
      hint = input == PassInput::Planned
                 ? "it is lowered to exec IR already"
                 : "the pass runs before muir-lower-to-exec";
    } else if (input != PassInput::Planned) {
      return WalkResult::advance();
    } else if (auto f = dyn_cast<func::FuncOp>(op);
               f && hasGrid &&
               !f->hasAttr(MuirDialect::PerRankAttrHelper::getNameStr()) &&
               isTensorStep(f) &&
               llvm::any_of(llvm::seq(f.getNumArguments()), [&](unsigned i) {
                 return bool(f.getArgAttr(
                     i, MuirDialect::ShardsAttrHelper::getNameStr()));
               })) {
      found = ("function @" + f.getName() +
               ", whose arguments are sharded (muir.shards) but not "
               "distributed")
                  .str();
      hint = "run muir-distribute first";
    } else if (isa<MuonUpdateOp, NorMuonUpdateOp>(op)) {
      found = ("high-level op '" + op->getName().getStringRef() + "'").str();
      hint = "run muir-decompose-optimizers first (the muir-to-exec "
             "pipeline)";
    } else if (isa<NewtonSchulzOp>(op)) {
      found = "op 'muir.newton_schulz'";
      hint = "run muir-expand-newton-schulz first (the muir-to-exec "
             "pipeline)";
    } else {
      return WalkResult::advance();
    }
    bad = op;
    return WalkResult::interrupt();
  });
  if (bad)
    return fail(bad, found, hint);
  // Exec IR has no step function on tensors left.
  if (input == PassInput::Exec && module)
    for (auto f : module.getOps<func::FuncOp>())
      if (isTensorStep(f))
        return fail(f, "tensor-level function @" + f.getName(),
                    "run muir-lower-to-exec first (the muir-to-exec "
                    "pipeline)");
  return success();
}
