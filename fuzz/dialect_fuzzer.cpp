//===- dialect_fuzzer.cpp - fuzzes the muir dialects' parser and verifier -===//
//
// Input: MLIR text. parseSourceString<ModuleOp> (which verifies) must reject
// it with diagnostics or return a module; a module must then verify again
// and read back from its printed text, in the custom form (the ops'
// printers and parsers agree) and in the generic form (the properties'
// attribute converters).
// Upstream dialects are registered too (muir IR mixes func, arith, tensor,
// memref, ...); the corpus is muir's.
//
//===----------------------------------------------------------------------===//
#include "muir/Support/Nesting.h"
#include "FuzzCommon.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Parser/Parser.h"

#include <cstddef>
#include <cstdint>
#include <string>

using namespace mlir;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  MLIRContext &ctx = muir_fuzz::context();
  ParserConfig config(&ctx);
  // MLIR's lexer stops at a NUL after the text, which files read by the
  // tools have (MemoryBuffer) and the fuzzer's bytes do not.
  std::string input(reinterpret_cast<const char *>(data), size);
  // The tools refuse input nested past the bound before parsing (a deeper
  // one would overflow the parser's stack): so does the fuzzer.
  if (muir::findTooDeep(input, muir::NestingSyntax::Mlir))
    return 0;
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(input, config);
  if (!module)
    return 0;
  muir_fuzz::verifyOrBug(*module, "a parsed module does not verify again");

  for (bool generic : {false, true}) {
    std::string text;
    llvm::raw_string_ostream os(text);
    OpPrintingFlags flags;
    if (generic)
      flags.printGenericOpForm();
    module->print(os, flags);
    if (parseSourceString<ModuleOp>(text, config))
      continue;
    muir_fuzz::showDiagnostics();
    (void)parseSourceString<ModuleOp>(text, config);
    muir_fuzz::bug(llvm::Twine("the ") + (generic ? "generic" : "custom") +
                   " form of a valid module does not parse:\n" + text);
  }
  return 0;
}
