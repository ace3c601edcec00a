//===- RunFlags.h - muir-run's own command-line flags ----------*- C++ -*-===//
//
// The flags muir-run takes besides the compile flags it shares with
// muir-compile (muir::PipelineFlags). One instance at namespace scope
// registers them before cl::ParseCommandLineOptions runs.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_TOOLS_MUIR_RUN_RUNFLAGS_H
#define MUIR_TOOLS_MUIR_RUN_RUNFLAGS_H

#include "muir/Driver/PipelineFlags.h"

#include "llvm/Support/CommandLine.h"

#include <cstdint>
#include <string>

namespace muir_run {
namespace cl = llvm::cl;
inline cl::OptionCategory &muirCat = mlir::muir::muirFlagCategory();

struct RunFlags {
  cl::opt<std::string> inputFile{cl::Positional,
                                 cl::desc("[step.yaml|step.json|step.mlir]"),
                                 cl::init(""), cl::cat(muirCat)};
  cl::opt<int> numSteps{"steps", cl::desc("optimizer steps to run"),
                        cl::init(3), cl::cat(muirCat)};
  cl::opt<uint64_t> seed{"seed", cl::desc("seed for tensors not loaded"),
                         cl::init(0), cl::cat(muirCat)};
  cl::opt<std::string> loadDir{
      "load", cl::desc("read initial tensors from DIR/<name>.npy"),
      cl::value_desc("DIR"), cl::init(""), cl::cat(muirCat)};
  cl::opt<std::string> dumpDir{
      "dump",
      cl::desc("write every tensor to DIR/<name>.npy after the last "
               "step"),
      cl::value_desc("DIR"), cl::init(""), cl::cat(muirCat)};
  cl::opt<std::string> saveState{
      "save-state",
      cl::desc("after the last step, save the whole state (every tensor, the "
               "step counter, the step's fingerprint) to DIR, replacing it "
               "atomically"),
      cl::value_desc("DIR"), cl::init(""), cl::cat(muirCat)};
  cl::opt<std::string> resumeDir{
      "resume",
      cl::desc("continue from a state saved by --save-state, on its layout "
               "or another of the same description (refused if it was saved "
               "for another step, compile flags or build, or is damaged)"),
      cl::value_desc("DIR"), cl::init(""), cl::cat(muirCat)};
  cl::opt<std::string> traceFile{
      "trace-fingerprints",
      cl::desc("record, for every op each rank executes, its inputs' and "
               "outputs' hashes to FILE (FILE.rank<R> with several ranks); "
               "compare two runs with muir-trace-diff"),
      cl::value_desc("FILE"), cl::init(""), cl::cat(muirCat)};
  cl::opt<bool> quiet{"quiet", cl::desc("print only the closing summary line"),
                      cl::init(false), cl::cat(muirCat)};
  cl::opt<int> numRanks{
      "ranks",
      cl::desc("run N ranks as MPI processes: muir-run starts itself "
               "under `mpirun -n N` (the grid's devices must be N)"),
      cl::init(1), cl::cat(muirCat)};
  cl::opt<std::string> lrSchedule{
      "lr-schedule",
      cl::desc("multiply every group's learning rate, step by step: "
               "'constant' (1), 'cosine:W:T[:MIN]' (linear warmup over W "
               "steps, cosine decay to MIN (default 0) at step T, MIN after), "
               "'file:PATH' (one factor per line, line s for step s); the "
               "step reads its learning rates at run time, nothing recompiles"),
      cl::value_desc("SCHEDULE"), cl::init("constant"), cl::cat(muirCat)};
  cl::opt<bool> commStats{
      "comm-stats",
      cl::desc("after the last step, every rank prints the bytes it sent and "
               "the collectives it ran per grid-axis group (runtime counters)"),
      cl::init(false), cl::cat(muirCat)};
  // The step options muir-run alone has as flags (cuda-graph,
  // jit-listeners: muir/Driver/Options.def).
#define MUIR_RUN_FLAG(FIELD, TYPE, NAME, DEFAULT, HELP)                        \
  cl::opt<TYPE> FIELD{NAME, cl::desc(HELP), cl::init(DEFAULT),                \
                      cl::cat(muirCat)};
#include "muir/Driver/Options.def"
  cl::opt<bool> cudaCublasGrouped{
      "cuda-cublas-grouped-gemm",
      cl::desc("with --target=cuda, run MoE layers' grouped products with "
               "cuBLAS's grouped GEMM, which takes the expert sizes on the "
               "host (each call waits for the GPU, so steps run op by op, "
               "without a CUDA graph), instead of the runtime's kernel that "
               "reads them on the device"),
      cl::init(false), cl::cat(muirCat)};
  cl::opt<bool> checkFinite{
      "check-finite",
      cl::desc("stop, naming the tensor, the step and the rank, when a "
               "gradient holds a NaN or infinity before a step, a trained "
               "MoE layer's loss is not finite after it, or a parameter or "
               "its state is not finite after the last step; nothing is "
               "written (--check-finite=false: no check)"),
      cl::init(true), cl::cat(muirCat)};
  cl::opt<bool> noProbes{
      "no-probes",
      cl::desc("do not record Newton-Schulz outputs (no singular values in "
               "the table)"),
      cl::init(false), cl::cat(muirCat)};

  /// The flags' combinations (with the compile `flags`; `launcher`: more
  /// than one rank, not yet under mpirun) that cannot run, and every path of
  /// the run, checked at once before anything runs: no output overwrites an
  /// input or another output or lies in a folder that is read or replaced;
  /// --save-state into the state being resumed continues a run (replaced
  /// atomically). "" when the run can go on.
  std::string check(const mlir::muir::PipelineFlags &flags, bool launcher,
                    bool cuda) const;
};

} // namespace muir_run

#endif // MUIR_TOOLS_MUIR_RUN_RUNFLAGS_H
