//===- description_fuzzer.cpp - fuzzes the description reader -------------===//
//
// Input: the text of a YAML or JSON description. parseDescription must
// reject it with diagnostics or accept it; an accepted description must
// then pass validate, write and read back to the same text
// (writeDescription's contract), and build high-level IR that verifies:
// an IR error after a successful read means the reader let a bad value
// through.
//
//===----------------------------------------------------------------------===//
#include "FuzzCommon.h"

#include "muir/Import/Description.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <cstddef>
#include <cstdint>
#include <string>

using namespace mlir;
using namespace mlir::muir;

namespace {

// Reads `text`; its diagnostics are printed only when `show` is set.
FailureOr<desc::Description> read(llvm::StringRef text, bool show = false) {
  llvm::SourceMgr sm;
  if (!show)
    sm.setDiagHandler([](const llvm::SMDiagnostic &, void *) {});
  unsigned id = sm.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, "fuzz.yaml"), llvm::SMLoc());
  return desc::parseDescription(sm, id);
}

std::string write(const desc::Description &d) {
  std::string text;
  llvm::raw_string_ostream os(text);
  desc::writeDescription(d, os);
  return text;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FailureOr<desc::Description> d =
      read(llvm::StringRef(reinterpret_cast<const char *>(data), size));
  if (failed(d))
    return 0;
  if (failed(desc::validate(*d, [](const desc::Loc &, const llvm::Twine &,
                                   const desc::Subject &) {})))
    muir_fuzz::bug("validate rejects a description parseDescription accepted");

  std::string text = write(*d);
  FailureOr<desc::Description> again = read(text);
  if (failed(again) && succeeded(read(text, /*show=*/true)))
    muir_fuzz::bug("a description reads differently the second time");
  if (failed(again))
    muir_fuzz::bug("writeDescription's output does not read back:\n" + text);
  if (write(*again) != text)
    muir_fuzz::bug("writeDescription's output reads back differently:\n" +
                   text + "---\n" + write(*again));

  // A few thousand parameters build in milliseconds; more only slow the
  // fuzzer down without reaching other code.
  if (d->params.size() > 2000)
    return 0;
  MLIRContext &ctx = muir_fuzz::context();
  OwningOpRef<ModuleOp> module = desc::buildModule(ctx, *d, Determinism::On);
  if (!module)
    muir_fuzz::bug("buildModule failed on an accepted description");
  muir_fuzz::verifyOrBug(*module, "the IR built from an accepted description "
                                  "does not verify");
  return 0;
}
