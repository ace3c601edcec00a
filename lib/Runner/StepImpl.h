//===- StepImpl.h - the step library's private state ------------*- C++ -*-===//
//
// What Step.cpp and Cache.cpp share behind muir/Runner/Step.h: the step's
// MLIR state, its JIT or cached library, and its target's Backend.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_LIB_RUNNER_STEPIMPL_H
#define MUIR_LIB_RUNNER_STEPIMPL_H

#include "Backend.h"
#include "muir/Driver/Pipelines.h"
#include "muir/Import/Description.h"
#include "muir/Runner/Step.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/SourceMgr.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mlir::muir::runner {

struct TracedOp {
  std::string name, loc;
  std::map<int64_t, std::string> types; // operand index -> type
};

struct Step::Impl {
  DialectRegistry registry;
  std::unique_ptr<MLIRContext> context;
  llvm::SourceMgr sourceMgr;
  OwningOpRef<ModuleOp> module;
  std::unique_ptr<ExecutionEngine> engine;
  std::unique_ptr<Backend> backend;
  bool distStarted = false;
  std::map<int64_t, TracedOp> tracedOps;
  std::vector<int64_t> counterValue{0};
  std::vector<double> hyperValues;
  // The source as given (the cache's key).
  std::string sourceText, filename;
  // A cached step: its library and packed entry.
  void *library = nullptr;
  PackedEntry packedEntry = nullptr;
  // A step the JIT runs without its engine (CPU: muir_step_packed).
  PackedEntry jitEntry = nullptr;
};

/// Whether steps compiled with these options can be kept in the cache.
bool cacheableWith(const StepOptions &o);
/// Whether the cache directory `dir` may hold code this process runs:
/// owned by this user and writable by no one else (made 0700 when
/// missing). Decided once per directory, with one warning when not.
bool trustedCacheDir(llvm::StringRef dir);
/// The cache file of a step: DIR/muir-step-<key>.so.
std::string cachePath(llvm::StringRef dir, llvm::StringRef key);
/// A hash of the source, the options that change the program, the build
/// and the host CPU.
std::string cacheKey(llvm::StringRef source, llvm::StringRef filename,
                     const StepOptions &options);

/// The layout-free identity of a description's step: the step built for
/// one device (no axis over ranks, no shards, each MoE layer's batch
/// whole when the layer gives `tokens`), without its layout. A trained MoE
/// layer's step is per rank (its local expert stacks and tokens, its
/// collectives over the layout's axes), so stripping the layout from the
/// step as built would not give one identity for every layout.
std::string oneDeviceHash(MLIRContext &context, desc::Description d,
                          Determinism determinism);
/// A step's identity, what a saved state is for: the hash of its IR as
/// parsed or built (`module` at `stage`), the hash of its layout-free form
/// (a description's one-device hash, `layoutFreeHash`, when it has one),
/// its grid, its compile flags and the build.
state::StepIdentity identityOfStep(ModuleOp module, Stage stage,
                                   const std::string &layoutFreeHash,
                                   const StepOptions &options);

} // namespace mlir::muir::runner

#endif // MUIR_LIB_RUNNER_STEPIMPL_H
