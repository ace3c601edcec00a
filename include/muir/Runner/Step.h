//===- Step.h - a compiled training step a program calls --------*- C++ -*-===//
//
// The step library's core: compiles a description or muir IR for a target,
// JIT-compiles it, and runs it on tensors the caller binds (its own memory,
// never copied). muir-run and the C API (muir/Step.h) are its clients.
//
// Two phases, so that a launcher can check everything before mpirun
// starts: `Step::load` parses and lowers to exec IR and reads the
// arguments; `Step::prepare` joins the ranks (MPI, NCCL) and JIT-compiles.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_RUNNER_STEP_H
#define MUIR_RUNNER_STEP_H

#include "muir/Driver/Pipelines.h"
#include "muir/Runner/Role.h"
#include "muir/Runner/State.h"
#include "muir/Support/LayerPass.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CodeGen.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <array>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace llvm {
class Module;
class TargetMachine;
} // namespace llvm

namespace mlir {
class ExecutionEngine;
namespace muir::runner {

/// The library's errors are messages (for a tool's "error:" line or the C
/// API's muir_step_last_error).
inline llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(message);
}

/// How a step compiles and runs.
struct StepOptions {
  PipelineOptions pipeline{};
  TargetOptions target{Target::Cpu, "sm_90", "+ptx80"};
  bool cudaBf16 = false;
  bool cudaGraph = true;
  bool cudaCublasGrouped = false;
  /// Record every executed op's buffers' hashes (muir-run
  /// --trace-fingerprints).
  bool trace = false;
  /// Register the JIT's code with gdb and perf (LLVM's listeners; perf's
  /// writes dumps under $TMPDIR/.debug/jit). Off: the JIT writes nothing.
  bool jitListeners = false;
  /// The CUDA runtime library (empty: MUIR_CUDA_RUNTIME, else
  /// lib/libmuir_rt_cuda.so beside the running program's bin/ or beside
  /// the step library).
  std::string cudaRuntime;
  /// NCCL from a unique id the caller distributes (hex, 256 digits), with
  /// this process's rank and the world size; empty: MPI or torchrun's
  /// environment.
  std::string ncclId;
  int64_t ncclRank = -1, ncclWorld = -1;
  /// The GPU (-1: LOCAL_RANK, else 0).
  int64_t cudaDevice = -1;
  /// Keep the compiled step (CPU target, from the C API's shared library)
  /// in DIR as a shared library named by a hash of the source, the options,
  /// the build and the host CPU; a later compile of the same step loads it
  /// without compiling. Empty: no cache.
  std::string cacheDir;
  /// A description's MoE layer as a pass a model calls (layer=NAME,
  /// layer-pass=forward|forward-only|backward|recompute; see
  /// desc::buildLayerModule) instead of the description's optimizer step.
  std::string layer;
  LayerPass layerPass = LayerPass::Forward;
  /// The compile options the user gave explicitly ("ns-mode", "syrk", ...,
  /// "no-probes"): refused for exec IR, which is compiled already, and
  /// ns-mode / dp-assign for planned IR, which is distributed.
  std::vector<std::string> given;

  /// Reads "name=value" items separated by spaces (the C API's spelling;
  /// see muir/Step.h). An error names the item.
  static llvm::Expected<StepOptions> parse(llvm::StringRef text);
};

/// A dimension of a tensor split over the group of a grid axis.
struct Split {
  int64_t dim;
  int64_t mask; ///< the axes as a runtime axes mask (folding in bit 48)
};

/// One argument of the step.
struct Argument {
  std::string name;
  int32_t role = 0; ///< a runner::Role
  llvm::SmallVector<int64_t> shape;       ///< this rank's part
  llvm::SmallVector<int64_t> globalShape; ///< the whole tensor
  llvm::SmallVector<Split> splits;
  double defaultValue = 0; ///< hyperparameters
  int32_t hyperIndex = -1; ///< hyperparameters: index into run()'s values
  bool updated = false;
  bool i64 = false; ///< an int64 tensor (a layer's tokens_per_expert)
  bool f64 = false; ///< an f64 tensor (a reference's parameter and state)
  double initStd = 0; ///< seeded data's standard deviation (0: 1)
  bool isTensor() const { return isTensorRole(role); }
  size_t elementBytes() const { return i64 || f64 ? 8 : 4; }
  int64_t numel() const;
};

/// A grid's axes (the first is the run's; later ones fold the same ranks).
struct Folding {
  std::string name;
  llvm::SmallVector<std::string> axes;
  llvm::SmallVector<int64_t> sizes;
};

/// An observation slot: a Newton-Schulz output ("name" or "name[r0:r1]")
/// or a trained MoE layer's loss ("loss <layer>").
struct Observation {
  std::string label;
  llvm::SmallVector<int64_t> shape;
};

/// A Muon parameter's Newton-Schulz settings, read from the step's IR
/// before it is lowered (exec and planned IR have them expanded already).
struct NSSettings {
  std::string text; ///< "5 simple steps"
  /// The band the iteration leaves singular values in: the range of its
  /// scalar polynomial over [kBandFloor, 1] (the update is normalised to
  /// Frobenius norm 1 first).
  double low = 0, high = 0;
};

/// Singular values of the normalised update below this stay below the
/// band (a square gradient's smallest ones): 1/500 of its Frobenius norm.
inline constexpr double kBandFloor = 2e-3;

/// The range of x -> p_steps(...p_1(x)) over [kBandFloor, 1], p_i(x) = a x +
/// b x^3 + c x^5 with the i-th (a, b, c) of `table`, its last repeating
/// (sampled; a sample settled in a cycle of the last polynomial is
/// followed to `steps` by parity).
std::pair<double, double>
expectedBand(llvm::ArrayRef<std::array<double, 3>> table, int64_t steps);

class Step {
public:
  ~Step();

  /// Parses `source` (a description when `filename` ends in .yaml, .yml or
  /// .json, else muir IR) and lowers it to exec IR. Diagnostics go to
  /// `diagnostics` with file:line:col; the error's message is empty when
  /// they said everything.
  static llvm::Expected<std::unique_ptr<Step>>
  load(llvm::StringRef source, llvm::StringRef filename,
       const StepOptions &options, llvm::raw_ostream &diagnostics);

  /// Joins the ranks (under mpirun: the job's MPI world; NCCL on CUDA) and
  /// JIT-compiles. Call once, on every rank. Diagnostics as for load().
  llvm::Error prepare(llvm::raw_ostream &diagnostics);

  /// load + prepare.
  static llvm::Expected<std::unique_ptr<Step>>
  compile(llvm::StringRef source, llvm::StringRef filename,
          const StepOptions &options, llvm::raw_ostream &diagnostics);

  /// Opens a step compiled ahead of time: a shared library the cache
  /// wrote (muir-step-<hash>.so, with its muir_step_metadata), and joins
  /// the ranks. No compiler runs.
  static llvm::Expected<std::unique_ptr<Step>>
  open(llvm::StringRef path, const StepOptions &options);

  const std::vector<Argument> &arguments() const { return args; }
  int32_t find(llvm::StringRef name) const;
  int32_t numHyper() const { return static_cast<int32_t>(hyperArgs.size()); }
  /// Whether the step was loaded from (or written to) the cache.
  bool cached() const;
  /// Why a cacheable step could not be cached (it runs through the JIT),
  /// or "".
  std::string cacheError() const;
  /// The hyperparameters' defaults, in hyperIndex order.
  std::vector<double> defaultHyper() const;

  /// The grid's devices (1 without a grid) and this process's rank.
  int64_t devices() const { return numDevices; }
  int64_t rank() const;
  const std::vector<Folding> &foldings() const { return grids; }
  const std::map<int64_t, Observation> &observations() const { return obs; }
  /// Each Muon parameter's Newton-Schulz settings, by name (empty when the
  /// input was exec or planned IR).
  const std::map<std::string, NSSettings> &nsSettings() const { return ns; }
  /// What a saved state is for (the step's IR as given, grid, flags).
  const state::StepIdentity &identity() const { return id; }
  /// Gradients the step computes itself (a trained MoE layer's).
  bool computesGradient(llvm::StringRef name) const {
    return computedGrads.count(name.str()) != 0;
  }
  /// "NVIDIA H200, bf16 products, CUDA graph" (CUDA only).
  std::string deviceDescription() const;

  /// Binds tensor argument `index` to the caller's memory (host or device
  /// pointer by target), used in place by every run until bound again.
  llvm::Error bind(int32_t index, void *data);

  /// The first element that is NaN or infinite among the bound float32
  /// tensor arguments of `role` (runner::Role), in argument order: {argument
  /// index, flat element}, or {-1, -1} when every one is finite. Host memory
  /// only (an error on the CUDA target).
  llvm::Expected<std::pair<int32_t, int64_t>> firstNonFinite(int32_t role) const;

  /// Runs one step. `hyper` holds numHyper() values (empty: defaults). On
  /// the CUDA target `stream` (a cudaStream_t, null: the runtime's) gets
  /// the step, and `wait` says whether to wait for it.
  llvm::Error run(int64_t counter, llvm::ArrayRef<double> hyper,
                  void *stream = nullptr, bool wait = true);

  /// An observation's data after a run (host memory), or null.
  const float *observation(int64_t slot, int64_t &numel) const;

  /// The memory to bind for `bytes` of host data at `host`: the host memory
  /// itself (CPU), or a device copy (CUDA) that release() frees.
  llvm::Expected<void *> stage(void *host, size_t bytes);
  /// The bound memory's data back into `host` (nothing on the CPU).
  llvm::Error unstage(void *host, const void *bound, size_t bytes);
  void release(void *bound);

  /// Fingerprint trace records since the start, as muir-run writes them
  /// (one line per buffer of each executed op).
  llvm::Error writeTrace(llvm::StringRef path) const;

private:
  Step();
  llvm::Error readArguments();
  llvm::Error joinRanks();
  llvm::Error startEngine();
  /// Sets the runtime's process-wide settings (deterministic reductions;
  /// on CUDA also bf16 products and the grouped GEMM) to this step's.
  void applySettings();
  bool cacheable() const;
  std::string metadata() const;
  llvm::Error readMetadata(llvm::StringRef text);
  llvm::Error writeCache(llvm::StringRef manifest);
  /// Loads the checked library at `loadPath`; `path` is its name for
  /// messages.
  llvm::Error openLibrary(llvm::StringRef loadPath, llvm::StringRef path);
  /// Step::open's work: `trusted` for a cache entry (this user's own file,
  /// with its record), else any regular file.
  static llvm::Expected<std::unique_ptr<Step>>
  openFrom(llvm::StringRef path, bool trusted, const StepOptions &options);

  struct Impl;
  std::unique_ptr<Impl> impl;
  StepOptions options;
  std::vector<Argument> args;
  std::vector<int32_t> hyperArgs; ///< argument index per hyperIndex
  std::vector<void *> bound;
  std::vector<Folding> grids;
  int64_t numDevices = 1;
  std::map<int64_t, Observation> obs;
  std::map<std::string, NSSettings> ns;
  std::set<std::string> computedGrads;
  std::set<std::string> updatedNames; ///< results' muir.updates
  bool updatesByRole = false;
  state::StepIdentity id;
  std::string entryName;
  bool counterUsed = false, hyperUsed = false, prepared = false;
  /// A called layer: run()'s counter is its token count, in [0, the rows
  /// of its `x`].
  bool tokenCount = false;
  int64_t tokenBound = 0;
  bool rebound = false; ///< a tensor was bound anew since the last run
  std::string cacheFailure;
  /// writeCache failed because another process put the same entry in place
  /// meanwhile (not a failure of the cache: no warning).
  bool cacheRaced = false;
  int64_t runs = 0;
};

/// The entry's arguments as the text manifest of an object file, one line
/// each: "<index> <name> <role> <shape> f32" for a buffer (shape "4x8",
/// "scalar" for rank 0; then "init_std=<std>" for data seeded with its own
/// standard deviation), "<index> step step|step-unused scalar i64" for the
/// step counter and "<index> <name> hyper scalar f64 <default>" for a
/// run-time hyperparameter; then "loss <slot> <layer>" for each trained
/// MoE layer's observed loss. Read from the exec IR; sets `entryName`.
/// muir::step::parseManifest (StepCore.h) reads it.
std::string entryManifest(ModuleOp module, std::string &entryName);

/// Adds muir_step_packed(void **args), which calls the entry (LLVM
/// dialect) with *args[i] as its i-th argument, and the NUL-terminated
/// globals muir_step_manifest and (when not empty) muir_step_metadata.
LogicalResult addPackedEntry(ModuleOp module, llvm::StringRef entryName,
                             llvm::StringRef manifest,
                             llvm::StringRef metadata = "");

/// LLVM's O3 pipeline for a step's host code, without loop unrolling and
/// interleaving: the step's loops are element-wise and memory-bound (the
/// products are the BLAS's), and unrolled copies of a step's hundreds of
/// loops doubled the code and the time to generate it. `tm` may be null.
llvm::Error optimizeHostCode(llvm::Module &module, llvm::TargetMachine *tm);

/// The code generator's level for a step's host code (JIT and objects):
/// `Less` generates the step's hundreds of small loop functions in about
/// two thirds of the time of `Default`, and the loops are memory-bound.
constexpr llvm::CodeGenOptLevel kHostCodeGenLevel = llvm::CodeGenOptLevel::Less;

/// The LLVM-dialect module as a relocatable object (PIC, O3) for `march`:
/// "native" (the host's CPU and features, as the JIT), "x86-64", or an
/// LLVM CPU name. Returns why not, or "".
std::string emitObject(ModuleOp module, llvm::StringRef march,
                       llvm::raw_pwrite_stream &os);

/// The number of ranks in the group of a runtime axes mask, from the
/// grids alone (no runtime needed).
int64_t groupSize(llvm::ArrayRef<Folding> grids, int64_t mask);

/// A new NCCL unique id (hex) for StepOptions::ncclId, made by rank 0 and
/// distributed by the caller.
llvm::Expected<std::string> ncclUniqueId(llvm::StringRef cudaRuntime = "");

/// Under mpirun (OMPI_COMM_WORLD_SIZE set).
bool underMPI();

} // namespace muir::runner
} // namespace mlir

#endif // MUIR_RUNNER_STEP_H
