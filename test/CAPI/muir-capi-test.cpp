//===- muir-capi-test.cpp - muir's dialects through MLIR's C API ----------===//
//
// A client of libMuirCAPI.so (muir-c/Dialects.h), as MLIR's C API uses a
// dialect handle: mlirDialectHandleInsertDialect, ...LoadDialect and
// ...GetNamespace are one call each of the handle's hooks, which this test
// calls the same way (Debian's LLVM ships the C API's own functions only
// as static archives, which do not mix with libMLIR.so). Usage:
//   muir-capi-test FILE PIPELINE
// prints each handle's namespace, whether FILE parses without and with the
// handles inserted, then FILE after PIPELINE (muir's passes registered
// through mlirRegisterMuirPasses).
//
//===----------------------------------------------------------------------===//
#include "muir-c/Dialects.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Registration.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

static const MlirDialectRegistrationHooks *hooks(MlirDialectHandle h) {
  return static_cast<const MlirDialectRegistrationHooks *>(h.ptr);
}

static OwningOpRef<ModuleOp> parse(MLIRContext &context, const char *path) {
  context.allowUnregisteredDialects(false);
  return parseSourceFile<ModuleOp>(path, &context);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    llvm::errs() << "usage: muir-capi-test FILE PIPELINE\n";
    return 2;
  }
  MlirDialectHandle handles[] = {mlirGetDialectHandle__muir__(),
                                 mlirGetDialectHandle__muir_exec__()};
  for (MlirDialectHandle h : handles)
    llvm::outs() << "namespace: " << unwrap(hooks(h)->getNamespaceHook())
                 << "\n";

  {
    DialectRegistry registry;
    registry.insert<func::FuncDialect>();
    MLIRContext context(registry);
    // The parser's error goes to stderr; the test reads stdout.
    context.getDiagEngine().registerHandler([](Diagnostic &) {});
    llvm::outs() << "without the handles: "
                 << (parse(context, argv[1]) ? "parsed" : "refused") << "\n";
  }

  DialectRegistry registry;
  registry.insert<func::FuncDialect>();
  for (MlirDialectHandle h : handles)
    hooks(h)->insertHook(wrap(&registry));
  MLIRContext context(registry);
  for (MlirDialectHandle h : handles) {
    Dialect *d = unwrap(hooks(h)->loadHook(wrap(&context)));
    llvm::outs() << "loaded: " << (d ? d->getNamespace() : "(none)") << "\n";
  }
  OwningOpRef<ModuleOp> module = parse(context, argv[1]);
  llvm::outs() << "with the handles: " << (module ? "parsed" : "refused")
               << "\n";
  if (!module)
    return 1;

  mlirRegisterMuirPasses();
  mlirRegisterMuirPasses(); // a second call does nothing
  // As mlirParsePassPipeline does: the text names its anchor, and the pass
  // manager becomes the parsed one.
  PassManager pm(&context);
  FailureOr<OpPassManager> parsed = parsePassPipeline(argv[2], llvm::errs());
  if (failed(parsed))
    return 1;
  static_cast<OpPassManager &>(pm) = std::move(*parsed);
  if (failed(pm.run(*module)))
    return 1;
  module->print(llvm::outs());
  return 0;
}
