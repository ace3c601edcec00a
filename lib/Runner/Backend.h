//===- Backend.h - what a step does by target --------------------*- C++ -*-===//
//
// A step's target behind one interface, as IREE's HAL device is: the step
// (Step.cpp) parses, lowers, JIT-compiles and checks its arguments the same
// way for every target and asks its Backend for the rest. The CPU backend
// (Backend.cpp) runs on host memory with the runtime linked in and joins
// MPI's ranks; the CUDA backend (CudaBackend.cpp) loads libmuir_rt_cuda.so,
// keeps the tensors on the device, makes the NCCL communicator and replays
// CUDA graphs. A new target is a new Backend and one case in create().
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_LIB_RUNNER_BACKEND_H
#define MUIR_LIB_RUNNER_BACKEND_H

#include "muir/Runner/Step.h"
#include "muir/Runner/StepCore.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace mlir {
class ExecutionEngine;
} // namespace mlir

namespace mlir::muir::runner {

/// The packed entry of a compiled step: one pointer per argument.
using PackedEntry = void (*)(void **);

/// What one run through the JIT's engine hands its backend.
struct EngineRun {
  /// Calls the step's entry once; "" or why it failed.
  std::function<std::string()> invoke;
  /// CUDA: the stream (a cudaStream_t, null: the runtime's) and whether to
  /// wait for the step.
  void *stream = nullptr;
  bool wait = true;
  /// A tensor was bound anew since the last run.
  bool rebound = false;
  /// Whether the step reads its counter and its hyperparameters, and the
  /// values this run gives them.
  bool counterUsed = false, hyperUsed = false;
  const std::vector<double> *hyper = nullptr;
};

class Backend {
public:
  virtual ~Backend();
  /// The backend of `options.target`.
  static std::unique_ptr<Backend> create(const StepOptions &options);

  /// Whether the step's ranks are the runtime's MPI ranks (muirrt_dist_*)
  /// for a grid of `devices`; else the target has its own (NCCL's) or
  /// none.
  virtual bool joinsRuntimeRanks(int64_t devices) const = 0;
  /// This process's rank.
  virtual int64_t rank() const = 0;
  /// The runtime's process-wide settings that the target adds to the
  /// runtime's own (set at each run: another step may have changed them).
  virtual void applySettings(bool fixedOrder) { (void)fixedOrder; }
  /// Starts the target's runtime for a JIT-compiled step on the grid
  /// `sizes` (called once, before the engine is made).
  virtual llvm::Error start(llvm::ArrayRef<int64_t> sizes) {
    (void)sizes;
    return llvm::Error::success();
  }
  /// Readies the lowered module's entry `entryName` for the engine.
  virtual LogicalResult readyEntry(ModuleOp module,
                                   llvm::StringRef entryName) = 0;
  /// Gives the engine the runtime's symbols.
  virtual void registerSymbols(ExecutionEngine &engine) const = 0;
  /// Materialises the entry's code (so that the first run's time is the
  /// step's); sets `direct` where the step is called without the engine.
  virtual llvm::Error lookupEntry(ExecutionEngine &engine,
                                  llvm::StringRef entryName,
                                  PackedEntry &direct) = 0;
  /// One run through the engine; "" or why it failed.
  virtual std::string run(const EngineRun &r) = 0;

  /// Whether the bound tensors are host memory the step library may read.
  virtual bool tensorsOnHost() const = 0;
  /// An observation's data after a run (host memory), or null.
  virtual const float *observation(int64_t slot, int64_t &numel) const = 0;
  /// The device, for a run's report ("" on the CPU).
  virtual std::string description() const { return ""; }
  /// Lines a fingerprint trace's header adds for the target: what its
  /// bits depend on beyond the program.
  virtual std::string traceHeader() const { return ""; }

  /// The memory a step binds for `bytes` of host data at `host`: the host
  /// memory itself, or a device copy.
  virtual llvm::Expected<void *> stage(void *host, size_t bytes) = 0;
  /// The bound memory's data back into `host` (nothing where they are the
  /// same memory).
  virtual llvm::Error unstage(void *host, const void *bound,
                              size_t bytes) = 0;
  /// Frees what stage() made.
  virtual void release(void *bound) = 0;
};

/// The lock of the process's ranks: the runtime's MPI world (Step's
/// joinRanks) and the CUDA runtime's NCCL communicator, whose bootstrap may
/// call MPI too, are made and left under it.
std::mutex &ranksMutex();

/// The CPU target.
std::unique_ptr<Backend> createCpuBackend();
/// The CUDA target.
std::unique_ptr<Backend> createCudaBackend(const StepOptions &options);

/// Gives the JIT the step entries of a runtime's table (muir-rt/
/// EntryTable.h: every entry of Entries.def the target has, by its symbol)
/// and, from the loaded CUDA runtime `mgpu`, MLIR's mgpu* launch ABI
/// (muir-rt/CudaHost.def).
void registerRuntimeSymbols(ExecutionEngine &engine,
                            const muirrt_entry_table &table,
                            const ::muir::step::CudaRuntime *mgpu = nullptr);

} // namespace mlir::muir::runner

#endif // MUIR_LIB_RUNNER_BACKEND_H
