//===- state_manifest_fuzzer.cpp - fuzzes the saved state's manifest ------===//
//
// Input: the text of a muir-state.json. parseManifest must fail with a
// message or return a manifest that prints and reads back to the same text
// (printManifest's contract) and whose identity has no differences from
// itself.
//
//===----------------------------------------------------------------------===//
#include "muir/Runner/State.h"

#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

using namespace mlir::muir;

namespace {

[[noreturn]] void bug(const llvm::Twine &what) {
  llvm::errs() << "muir fuzz: " << what << "\n";
  std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::Expected<state::Manifest> manifest = state::parseManifest(
      llvm::StringRef(reinterpret_cast<const char *>(data), size));
  if (!manifest) {
    std::string message = llvm::toString(manifest.takeError());
    if (message.empty())
      bug("parseManifest failed without a message");
    return 0;
  }
  if (manifest->step < 0 || manifest->step > state::kMaxStep)
    bug("parseManifest accepted a step counter out of range");
  if (!state::differences(manifest->identity, manifest->identity).empty())
    bug("a manifest's identity differs from itself");

  std::string text = state::printManifest(*manifest);
  llvm::Expected<state::Manifest> again = state::parseManifest(text);
  if (!again)
    bug("printManifest's output does not read back: " +
        llvm::toString(again.takeError()) + "\n" + text);
  if (state::printManifest(*again) != text)
    bug("printManifest's output reads back differently:\n" + text);
  return 0;
}
