//===- TraceBuffers.cpp - fingerprint tracing of exec IR -----------------===//
//
// Inserts a muir_exec.trace of every buffer an executed op reads (before
// it) and writes (after it), so that the runtime can hash them: two runs
// whose traces differ can be compared op by op to find the first op whose
// inputs agree but whose outputs do not.
//
//===----------------------------------------------------------------------===//
#include "muir/Conversion/Passes.h"
#include "muir/Transforms/PassInput.h"

namespace mlir::muir {
#define GEN_PASS_DEF_MUIRTRACEBUFFERS
#include "muir/Conversion/Passes.h.inc"
} // namespace mlir::muir

using namespace mlir;
namespace mx = mlir::muir_exec;

namespace {

/// The first file location inside `loc` (named and fused locations wrap
/// them), as file:line:col, or "?".
std::string locString(Location loc) {
  std::string text = "?";
  loc->walk([&](Location l) {
    if (auto file = dyn_cast<FileLineColLoc>(l)) {
      text = (file.getFilename().getValue() + ":" + Twine(file.getLine()) +
              ":" + Twine(file.getColumn()))
                 .str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return text;
}

struct TraceBuffersPass
    : public mlir::muir::impl::MuirTraceBuffersBase<TraceBuffersPass> {
  void runOnOperation() override {
    if (failed(muir::checkPassInput(getOperation(), getArgument(),
                                    muir::PassInput::Exec)))
      return signalPassFailure();
    int64_t nextId = 0;
    getOperation().walk([&](func::FuncOp func) {
      if (!func->hasAttr(muir::MuirDialect::EntryAttrHelper::getNameStr()))
        return;
      SmallVector<Operation *> ops;
      func.walk([&](Operation *op) {
        if (isa<mx::MuirExecDialect>(op->getDialect()) ||
            isa<linalg::GenericOp, memref::CopyOp>(op))
          if (!isa<mx::TraceOp>(op))
            ops.push_back(op);
      });
      for (Operation *op : ops) {
        // Which memref operands it reads and which it writes.
        SmallVector<std::pair<unsigned, bool>> buffers; // index, written
        if (auto g = dyn_cast<linalg::GenericOp>(op)) {
          for (OpOperand *in : g.getDpsInputOperands())
            buffers.push_back({in->getOperandNumber(), false});
          for (OpOperand &out : g.getDpsInitsMutable())
            buffers.push_back({out.getOperandNumber(), true});
        } else if (auto c = dyn_cast<memref::CopyOp>(op)) {
          buffers = {{0, false}, {1, true}};
        } else if (auto effects = dyn_cast<MemoryEffectOpInterface>(op)) {
          for (OpOperand &operand : op->getOpOperands()) {
            if (!isa<MemRefType>(operand.get().getType()))
              continue;
            SmallVector<MemoryEffects::EffectInstance> list;
            effects.getEffectsOnValue(operand.get(), list);
            bool writes = llvm::any_of(list, [](auto &e) {
              return isa<MemoryEffects::Write>(e.getEffect());
            });
            buffers.push_back({operand.getOperandNumber(), writes});
          }
        }
        // Views (strided subviews of a batch stack) are traced where they
        // are copied from or to a whole buffer.
        llvm::erase_if(buffers, [&](auto &entry) {
          auto t = cast<MemRefType>(op->getOperand(entry.first).getType());
          return !t.getLayout().isIdentity() || !t.hasStaticShape();
        });
        if (buffers.empty())
          continue;
        int64_t id = nextId++;
        OpBuilder b(op);
        auto make = [&](unsigned index, bool output) {
          mx::TraceOp::create(b, op->getLoc(), op->getOperand(index),
                              b.getI64IntegerAttr(id),
                              b.getStringAttr(op->getName().getStringRef()),
                              b.getStringAttr(locString(op->getLoc())),
                              b.getI64IntegerAttr(index),
                              b.getBoolAttr(output));
        };
        for (auto [index, written] : buffers)
          if (!written)
            make(index, false);
        b.setInsertionPointAfter(op);
        for (auto [index, written] : buffers)
          if (written)
            make(index, true);
      }
    });
  }
};

} // namespace
