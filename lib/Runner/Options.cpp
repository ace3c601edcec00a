//===- Options.cpp - a step's options from "name=value" items -------------===//
//
// StepOptions::parse: the C API's and the Python package's spelling of the
// step's compile and run options (muir/Step.h lists them).
//
//===----------------------------------------------------------------------===//
#include "muir/Runner/Step.h"

#include "muir/Driver/PipelineFlags.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::muir;
using namespace mlir::muir::runner;
using llvm::StringRef;
using llvm::Twine;

namespace {
/// Calls whichever of the lambdas takes the argument.
template <typename... Fs> struct overloaded : Fs... {
  using Fs::operator()...;
};
template <typename... Fs> overloaded(Fs...) -> overloaded<Fs...>;
} // namespace


llvm::Expected<StepOptions> StepOptions::parse(StringRef text) {
  StepOptions o;
  o.pipeline.probeUpdates = false;
  llvm::StringSet<> givenNames;
  llvm::SmallVector<StringRef> items;
  text.split(items, ' ', -1, false);
  for (StringRef item : items) {
    item = item.trim();
    if (item.empty())
      continue;
    auto [key, value] = item.split('=');
    givenNames.insert(key);
    auto boolean = [&](bool &out) -> llvm::Error {
      if (value == "true" || value == "1")
        out = true;
      else if (value == "false" || value == "0")
        out = false;
      else
        return error("option '" + item + "': expected true or false");
      return llvm::Error::success();
    };
    auto integer = [&](int64_t &out) -> llvm::Error {
      if (value.getAsInteger(10, out))
        return error("option '" + item + "': expected an integer");
      return llvm::Error::success();
    };
    llvm::Error e = llvm::Error::success();
    // Enum values: the flags' own lists (muir-compile's --target and the
    // like), so that the names and the error's list are the same.
    auto enumeration = [&](auto &out, const llvm::cl::ValuesClass &values)
        -> llvm::Error {
      auto v = parseEnumValue<std::decay_t<decltype(out)>>(values, value);
      if (!v)
        return error("option '" + item + "': " + expectedOneOf(values));
      out = *v;
      return llvm::Error::success();
    };
    // The options muir/Driver/Options.def declares with a field, then
    // those read by hand.
    bool known = false;
    auto readValue = overloaded{boolean, integer};
#define MUIR_PIPELINE_OPTION(FIELD, TYPE, NAME, DEFAULT, FLAG, IDENTITY,      \
                             HELP)                                            \
  if (!known && key == NAME) {                                                \
    known = true;                                                             \
    e = readValue(o.pipeline.FIELD);                                          \
  }
#define MUIR_PIPELINE_ENUM_OPTION(FIELD, TYPE, NAME, DEFAULT, VALUES,         \
                                  IDENTITY, HELP)                             \
  if (!known && key == NAME) {                                                \
    known = true;                                                             \
    e = enumeration(o.pipeline.FIELD, VALUES);                                \
  }
#define MUIR_STEP_OPTION(FIELD, TYPE, NAME, DEFAULT, USER, FLAG, HELP)        \
  if (!known && key == NAME) {                                                \
    known = true;                                                             \
    e = readValue(o.FIELD);                                                   \
  }
#include "muir/Driver/Options.def"
    if (known) {
      // read above
    } else if (key == "target") {
      e = enumeration(o.target.target, targetValues());
    } else if (key == "cuda-arch") {
      int ptx = PipelineFlags::ptxVersion(value);
      if (!ptx)
        return error("option '" + item + "': expected sm_80 or newer");
      o.target.cudaArch = value.str();
      o.target.ptxFeatures = "+ptx" + std::to_string(ptx);
    } else if (key == "cache-dir") {
      o.cacheDir = value.str();
    } else if (key == "layer") {
      if (value.empty())
        return error("option 'layer=': expected the name of an MoE layer");
      o.layer = value.str();
    } else if (key == "layer-pass") {
      std::optional<LayerPass> pass = enumValue(kLayerPasses, value);
      if (!pass) {
        std::string names;
        for (const EnumName<LayerPass> &p : kLayerPasses)
          names += (names.empty() ? "" : ", ") + p.name.str();
        return error("option '" + item + "': expected one of " + names);
      }
      o.layerPass = *pass;
    } else if (key == "nccl-id") {
      o.ncclId = value.str();
    } else {
      return error("unknown option '" + key +
                   "' (see muir/Step.h for the options)");
    }
    if (e)
      return std::move(e);
  }
  if (o.layerPass != LayerPass::Forward && o.layer.empty())
    return error("option 'layer-pass' needs layer=NAME");
  // cuda-bf16 iterates Newton-Schulz in bf16 unless ns-precision says.
  if (o.cudaBf16 && !givenNames.count("ns-precision"))
    o.pipeline.nsPrecision = NSPrecision::bf16;
  // The combinations the tools refuse, by the same rules.
  std::string bad = checkOptions(
      o.pipeline, o.target, o.cudaBf16,
      [&](StringRef name) { return givenNames.count(name) > 0; },
      [](StringRef name, StringRef value) {
        return (name + (value.empty() ? "" : "=") + value).str();
      });
  if (!bad.empty())
    return error("options: " + bad);
  if (!o.ncclId.empty() && (o.ncclRank < 0 || o.ncclWorld < 1 ||
                            o.ncclRank >= o.ncclWorld))
    return error("nccl-id needs nccl-rank and nccl-world (0 <= rank < "
                 "world)");
  return o;
}
