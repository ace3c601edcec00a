//===- RuntimeAllocs.cpp - the CPU step's allocations in the arena --------===//
//
// finalize-memref-to-llvm{use-generic-functions=1} lowers memref.alloc and
// memref.dealloc to calls of _mlir_memref_to_llvm_alloc(i64) -> ptr and
// _mlir_memref_to_llvm_free(ptr); here they become the runtime's
// muirrt_alloc and muirrt_free (muir-rt/Entries.def, runtime/cpu/Arena.cpp)
// under muir's own names, so that no other code of the process that uses
// the generic names is routed to muir's arena.
//
//===----------------------------------------------------------------------===//
#include "muir/Conversion/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::muir {
#define GEN_PASS_DEF_MUIRRUNTIMEALLOCS
#include "muir/Conversion/Passes.h.inc"
} // namespace mlir::muir

using namespace mlir;

namespace {

struct RuntimeAllocsPass
    : public mlir::muir::impl::MuirRuntimeAllocsBase<RuntimeAllocsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = module.getContext();
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    auto i64 = IntegerType::get(ctx, 64);
    auto voidType = LLVM::LLVMVoidType::get(ctx);
    if (auto aligned = module.lookupSymbol<LLVM::LLVMFuncOp>(
            "_mlir_memref_to_llvm_aligned_alloc")) {
      aligned.emitError("muir-runtime-allocs: the runtime's arena takes no "
                        "aligned allocation (lower without "
                        "use-aligned-alloc)");
      return signalPassFailure();
    }
    struct Rename {
      StringRef from, to;
      LLVM::LLVMFunctionType type;
    } renames[] = {
        {"_mlir_memref_to_llvm_alloc", "muirrt_alloc",
         LLVM::LLVMFunctionType::get(ptr, {i64})},
        {"_mlir_memref_to_llvm_free", "muirrt_free",
         LLVM::LLVMFunctionType::get(voidType, {ptr})},
    };
    for (const Rename &r : renames) {
      auto fn = module.lookupSymbol<LLVM::LLVMFuncOp>(r.from);
      if (!fn)
        continue;
      if (fn.getFunctionType() != r.type || !fn.isExternal()) {
        fn.emitError("muir-runtime-allocs: expected a declaration of type ")
            << r.type << " (muir-rt/Entries.def's muirrt_"
            << r.to.drop_front(strlen("muirrt_")) << ")";
        return signalPassFailure();
      }
      if (module.lookupSymbol(r.to)) {
        fn.emitError("muir-runtime-allocs: the module already has a symbol ")
            << r.to;
        return signalPassFailure();
      }
      if (failed(SymbolTable::replaceAllSymbolUses(
              fn, StringAttr::get(ctx, r.to), module)))
        return signalPassFailure();
      fn.setSymName(r.to);
    }
  }
};

} // namespace
