//===- StepCore.h - running a compiled step, without LLVM ---------*- C++ -*-===//
//
// The part of the step library that needs neither LLVM nor MLIR: loading
// the CUDA runtime, reading an ahead-of-time step's manifest, and how a
// CUDA step runs (op by op first, then a replayed CUDA graph). The step
// library (Step.cpp) uses it, and so does bench/gpu/muir-step-runner, which
// is built from source on a GPU machine that has no LLVM: plain C++17,
// errors as strings ("" for success), nothing thrown.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_RUNNER_STEPCORE_H
#define MUIR_RUNNER_STEPCORE_H

#include "muir/Runner/Role.h"
#include "muir-rt/EntryTable.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace muir::step {

/// The CUDA runtime (libmuir_rt_cuda.so), loaded with dlopen.
struct CudaRuntime {
  void *handle = nullptr;
  /// Every host call of muir-rt/CudaHost.def: `init` is
  /// muirrt_cuda_init, and so on.
#define MUIR_RT_CUDA_HOST(NAME, RET, PARAMS) RET(*NAME) PARAMS = nullptr;
#include "muir-rt/CudaHost.def"
  /// The step entries (muirrt_cuda_entries), built from this runner's
  /// muir-rt/Entries.def (load refuses another).
  const muirrt_entry_table *entries = nullptr;

  /// Loads the library at `path`. `global`: its symbols resolve a step
  /// loaded after it (an ahead-of-time step's muirrt_cuda_* and mgpu*
  /// calls); else they stay local (the JIT is given them one by one).
  /// Returns "" on success, else why not.
  std::string load(const std::string &path, bool global);
  /// The symbol `name` of the loaded library, or null.
  void *symbol(const std::string &name) const;
  /// "what: <the runtime's last error>".
  std::string failure(const std::string &what) const;
};

/// One argument of a compiled step, as its manifest lists it (see
/// runner::entryManifest): a tensor, the step counter or a hyperparameter.
struct ManifestArgument {
  std::string name;
  int32_t role = 0; ///< a runner::Role
  std::vector<int64_t> shape;
  double defaultValue = 0; ///< hyperparameters
  double initStd = 0;      ///< seeded data's standard deviation (0: 1)
  bool counterUnused = false;
  bool isTensor() const { return mlir::muir::runner::isTensorRole(role); }
  int64_t numel() const;
};

struct Manifest {
  std::vector<ManifestArgument> arguments;
  /// (observation slot, layer) of each trained MoE layer's loss.
  std::vector<std::pair<int64_t, std::string>> losses;
  bool readsCounter() const;
};

/// Reads the text of a step's muir_step_manifest; an error names the line.
std::string parseManifest(const char *text, Manifest &out);

/// How a CUDA step runs on the runtime: the first run op by op (it creates
/// communicators, scratch and the temporaries' arena), later ones as one
/// CUDA graph, captured at the second run and again when the graph no
/// longer matches: after a rebind, at every run of a step that reads its
/// counter (a kernel argument; the runtime updates the graph in place),
/// when hyperparameters the step reads changed since the capture, when
/// another step of the process captured since (the runtime holds one graph),
/// or after a replay failed (the runtime may have dropped the graph).
class GraphRunner {
public:
  /// The step's code once, op by op or under capture; "" or an error.
  using Invoke = std::function<std::string()>;

  GraphRunner(const CudaRuntime &runtime, bool graphs)
      : runtime(runtime), graphs(graphs) {}
  /// The bound pointers changed: the graph holds the old ones.
  void invalidate() { captured = false; }
  /// Captures the graph if the coming run replays one and it must be
  /// (re)captured. `hyper` are the run's hyperparameter values, compared
  /// only when `hyperUsed`.
  std::string prepare(const Invoke &invoke, bool counterUsed, bool hyperUsed,
                      const std::vector<double> &hyper);
  /// The run: replays the graph, or runs op by op.
  std::string launch(const Invoke &invoke);
  /// Whether the last launch replayed a graph.
  bool replayed() const { return replaying; }

private:
  const CudaRuntime &runtime;
  bool graphs;
  bool captured = false, replaying = false;
  int64_t runs = 0;
  uint64_t capture = 0; ///< the process's capture number of this graph
  std::vector<double> capturedHyper;
};

} // namespace muir::step

#endif // MUIR_RUNNER_STEPCORE_H
