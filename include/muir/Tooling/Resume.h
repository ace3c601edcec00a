//===- Resume.h - a run resumed from a saved state --------------*- C++ -*-===//
//
// muir-run's --resume: the state directory opened once and checked against
// the step before anything runs, then every tensor read from it, all ranks
// agreeing that they read the same state.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_TOOLING_RESUME_H
#define MUIR_TOOLING_RESUME_H

#include "muir/Runner/State.h"
#include "muir/Tooling/HostTensors.h"

#include <optional>

namespace mlir::muir::tooling {

/// Opens the state in `dir` and checks it for `step` (its identity, its
/// tensors, `moreSteps` still to run: muir::state::checkState). Under
/// mpirun each rank hashes its share of the files (the launcher of
/// --ranks N hashed them all before starting the ranks, so that a damaged
/// file is reported once). Returns the number of the first step to run
/// (the saved counter plus one).
llvm::Expected<int64_t> openResumed(const Step &step, llvm::StringRef dir,
                                    int64_t moreSteps,
                                    std::optional<state::OpenedState> &opened);

/// Reads every tensor of `tensors` from the state `opened` checked, and
/// closes it. The ranks opened the directory one by one: all must have
/// read the same state (a save may have put another in its place in
/// between), and all fail together if one could not.
llvm::Error loadResumed(const Step &step, HostTensors &tensors,
                        state::OpenedState &opened, int32_t &numLoaded);

} // namespace mlir::muir::tooling

#endif // MUIR_TOOLING_RESUME_H
