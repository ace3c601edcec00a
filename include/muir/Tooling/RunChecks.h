//===- RunChecks.h - what a run checks before it starts ---------*- C++ -*-===//
//
// The outputs a run writes, the learning-rate schedule and the report of a
// non-finite value: what muir-run checks before its first step, so that a
// bad flag costs no work and writes nothing.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_TOOLING_RUNCHECKS_H
#define MUIR_TOOLING_RUNCHECKS_H

#include "muir/Tooling/HostTensors.h"

namespace mlir::muir::tooling {
using runner::Step;

/// `ranks` processes run the step's grid.
llvm::Error checkRanks(const Step &step, int64_t ranks);
/// `dir` is a directory that can be read ("--load: cannot open ...").
llvm::Error checkLoadDir(llvm::StringRef flag, llvm::StringRef dir);
/// What a load directory (`flag` names it, "--load") would surprise with:
/// no file that matches a tensor (every tensor is seeded), and the .npy
/// files under it that match none (they are not read); one message each,
/// nothing when every file is read.
std::vector<std::string> loadDirWarnings(llvm::StringRef flag,
                                         llvm::StringRef dir, const Step &step);
/// FILE (FILE.rank<R> with several ranks) can be written at the end.
llvm::Error checkTraceTarget(llvm::StringRef file, int64_t ranks);
/// Every tensor's DIR/<name>.npy can be replaced (muirrt_check_dump).
llvm::Error checkDumpTarget(llvm::StringRef dir, const Step &step);

/// The learning-rate factor of steps first..last (1-based) from a
/// schedule: "constant"; "cosine:W:T[:MIN]" (linear warmup s / W for
/// s <= W, then MIN + (1 - MIN) (1 + cos(pi (s - W) / (T - W))) / 2, MIN
/// from step T on); "file:PATH" (one factor per line, line s for step s).
llvm::Expected<std::vector<double>> lrSchedule(llvm::StringRef spec,
                                               int64_t first, int64_t last);

/// Whether any rank found a NaN or infinity (`found` is this rank's); the
/// lowest such rank reports it in one line ("rank R, step S: <what> 'name'
/// holds nan at element k; stopped <when>, nothing written"). Every rank
/// must call it.
bool stopOnNonFinite(const Step &step, llvm::StringRef tool, int64_t at,
                     llvm::StringRef what, llvm::StringRef when,
                     const HostTensors::NonFinite &found, bool element);

} // namespace mlir::muir::tooling

#endif // MUIR_TOOLING_RUNCHECKS_H
