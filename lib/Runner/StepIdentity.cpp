//===- StepIdentity.cpp - what a saved state is for ----------------------===//
//
// A step's identity (muir::state::StepIdentity), which a saved state
// records and a resume checks: the hash of the step's IR as parsed or
// built, of its layout-free form (for a description, the step built for
// one device), its grid, its compile flags and the build (StepImpl.h).
//
//===----------------------------------------------------------------------===//
#include "StepImpl.h"
#include "muir/Driver/PipelineFlags.h"
#include "muir/Import/Description.h"
#include "muir/Support/Version.h"

#include "llvm/Support/xxhash.h"

using namespace mlir;
using namespace mlir::muir;
using namespace mlir::muir::runner;

/// A hash of a module's text (without locations), as a saved state's
/// identity records it.
static std::string irHash(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os, OpPrintingFlags().enableDebugInfo(false));
  return state::hex64(llvm::xxh3_64bits(llvm::arrayRefFromStringRef(text)));
}

/// Removes a high-level step's layout: its grids, and its arguments'
/// shards, splits and foldings (what a description's grid and `shard`
/// entries put on the IR). What remains is the same for every layout of one
/// description whose tensors' global shapes do not depend on it.
static void stripLayout(ModuleOp module) {
  for (GridOp grid : llvm::make_early_inc_range(module.getOps<GridOp>()))
    grid.erase();
  for (auto f : module.getOps<func::FuncOp>())
    for (unsigned i = 0; i < f.getNumArguments(); ++i)
      for (StringRef attr : {MuirDialect::ShardsAttrHelper::getNameStr(),
                             MuirDialect::SplitAttrHelper::getNameStr(),
                             MuirDialect::FoldingAttrHelper::getNameStr()})
        f.removeArgAttr(i, attr);
}

std::string runner::oneDeviceHash(MLIRContext &context, desc::Description d,
                                  Determinism determinism) {
  d.grid.axes = {{"dp", 1, d.grid.loc}};
  d.grid.moeAxes.clear();
  for (desc::Parameter &p : d.params)
    p.shards.clear();
  desc::resolveTokens(d);
  OwningOpRef<ModuleOp> module = desc::buildModule(context, d, determinism);
  if (!module)
    return "";
  stripLayout(*module);
  return irHash(*module);
}

/// The run's grid and its foldings as text ("dp=2,tp=2; @moe: edp=1,ep=2")
/// for a saved state's identity.
static std::string gridText(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  bool first = true;
  // (load() has checked that the grids have one run grid.)
  FailureOr<SmallVector<GridOp>> grids = getGridsByFoldingIndex(module);
  for (GridOp grid : succeeded(grids) ? *grids : SmallVector<GridOp>()) {
    if (!first)
      os << "; @" << grid.getSymName() << ": ";
    first = false;
    for (auto [i, pair] :
         llvm::enumerate(llvm::zip(grid.getAxes(), grid.getShape())))
      os << (i ? "," : "") << cast<StringAttr>(std::get<0>(pair)).getValue()
         << "=" << std::get<1>(pair);
  }
  // No grid: one device, as the runtime runs it.
  return text.empty() ? "dp=1" : text;
}

state::StepIdentity runner::identityOfStep(ModuleOp module, Stage stage,
                                           const std::string &layoutFreeHash,
                                           const StepOptions &options) {
  state::StepIdentity id;
  id.stepHash = irHash(module);
  // A description's step is identified by itself on one device; a
  // high-level step's layout is its grids and its arguments' shards,
  // splits and foldings; planned and exec IR are a rank's program, their
  // layout throughout.
  if (!layoutFreeHash.empty()) {
    id.layoutFreeHash = layoutFreeHash;
  } else if (stage == Stage::High) {
    OwningOpRef<ModuleOp> layoutFree = cast<ModuleOp>(module->clone());
    stripLayout(*layoutFree);
    id.layoutFreeHash = irHash(*layoutFree);
  } else {
    id.layoutFreeHash = id.stepHash;
  }
  id.grid = gridText(module);
  id.flags = identityOf(options.pipeline, options.target);
  // Planned and exec IR iterate as they were compiled (the step's hash
  // holds that); --cuda-bf16's implied precision says nothing there.
  if (stage != Stage::High)
    id.flags.erase("ns-precision");
  // The version and the commit: a state continues on the build that
  // saved it.
  id.build = muirBuildVersion();
  return id;
}
