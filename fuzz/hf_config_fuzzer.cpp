//===- hf_config_fuzzer.cpp - fuzzes the Hugging Face config import -------===//
//
// Input: the text of a config.json. importHFConfigText must reject it with
// at least one error line or return a description that passes validate and
// builds high-level IR that verifies, both as imported and with the layout
// dp=2,tp=2,ep=2 applied (applyLayout may refuse it, with errors).
//
//===----------------------------------------------------------------------===//
#include "FuzzCommon.h"

#include "muir/Import/Description.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

using namespace mlir;
using namespace mlir::muir;

namespace {

// A few thousand parameters build in milliseconds; a 60-layer MoE model
// with its experts takes far longer without reaching other code.
constexpr size_t kMaxParams = 2000;

void buildAndVerify(const desc::Description &d, const char *what) {
  if (failed(desc::validate(d, [](const desc::Loc &, const llvm::Twine &,
                                  const desc::Subject &) {})))
    muir_fuzz::bug(llvm::Twine("validate rejects ") + what);
  if (d.params.size() > kMaxParams)
    return;
  OwningOpRef<ModuleOp> module =
      desc::buildModule(muir_fuzz::context(), d, Determinism::On);
  if (!module)
    muir_fuzz::bug(llvm::Twine("buildModule failed on ") + what);
  muir_fuzz::verifyOrBug(*module,
                         llvm::Twine("the IR does not verify for ") + what);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<std::string> errors;
  FailureOr<desc::Description> d = desc::importHFConfigText(
      llvm::StringRef(reinterpret_cast<const char *>(data), size),
      "config.json", errors);
  if (failed(d)) {
    if (errors.empty())
      muir_fuzz::bug("importHFConfigText failed without an error message");
    return 0;
  }
  buildAndVerify(*d, "an imported config");

  static const desc::Grid layout = [] {
    std::string error;
    FailureOr<desc::Grid> grid = desc::parseLayout("dp=2,tp=2,ep=2", error);
    if (failed(grid))
      muir_fuzz::bug("parseLayout: " + error);
    return *grid;
  }();
  desc::ErrorList layoutErrors;
  if (failed(desc::applyLayout(*d, layout, layoutErrors))) {
    if (layoutErrors.empty())
      muir_fuzz::bug("applyLayout failed without an error message");
    return 0;
  }
  buildAndVerify(*d, "an imported config with dp=2,tp=2,ep=2");
  return 0;
}
