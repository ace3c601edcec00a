//===- HostTensors.h - a step's tensors as muir-run holds them -*- C++ -*-===//
//
// What a tool that runs a step on tensors the runtime owns needs (muir-run;
// IREE keeps the like in iree/tooling): the tensors, loaded, seeded,
// gathered, dumped and saved, the per-step table, the ranks' agreement and
// the communication counters. Not part of the step library (libmuir_step.so),
// whose callers bind their own memory.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_TOOLING_HOSTTENSORS_H
#define MUIR_TOOLING_HOSTTENSORS_H

#include "muir/Runner/Step.h"

#include <initializer_list>

namespace mlir::muir::tooling {
using runner::Step;

/// Whether every rank of the run's grid is `ok` and holds the same
/// `value` (every rank must call it, in the same order); one process is
/// its own answer.
enum class RankAgreement { Same, Differ, SomeFailed };
RankAgreement agreeOnEveryRank(const Step &step, bool ok, uint64_t value);

/// Tensors the runtime owns for a step, as muir-run runs it: this rank's
/// part of each, which --load reads (a rank reads its rows of each file),
/// the seed fills (with the whole tensor's values there) and the step is
/// bound to (host memory; a CUDA run copies it to the device) and save()
/// writes into a state's files (streamed); and, from gather() on, each
/// whole, identical on every rank, which --dump writes.
class HostTensors {
public:
  explicit HostTensors(Step &step);
  ~HostTensors();
  /// Adds every tensor argument; an error names the tensor.
  llvm::Error create();

  /// Reads this rank's part of DIR/<name>.npy (of the whole tensor's
  /// shape) for the tensors it finds.
  /// `shownAs` names the directory in messages when `dir` is another
  /// path to it (a resumed state's /proc/self/fd/N).
  llvm::Error load(llvm::StringRef dir, int32_t &loaded,
                   llvm::StringRef shownAs = "");
  /// Fills what was not loaded from `seed`: each part with the whole
  /// tensor's values there.
  void seed(uint64_t seed);
  /// Parts -> whole tensors (all-gathers: every rank must call it), made
  /// on the first call.
  llvm::Error gather();
  /// Binds the step to the parts (host), or to device copies (CUDA).
  llvm::Error bind();
  /// CUDA: the parts back from the device (no-op on the CPU).
  llvm::Error download();
  /// The bytes of argument `i`'s part.
  size_t bytesOf(size_t i) const;

  /// Rank 0 writes the whole tensors (after gather()) to DIR.
  llvm::Error dump(llvm::StringRef dir) const;
  /// A state in DIR after `step` steps, streamed: every rank must call it
  /// (rank 0 stages the state and makes each tensor's file, each rank
  /// writes the parts it is the first to hold, rank 0 writes the manifest
  /// and puts the state in place). A failure on any rank fails it on
  /// every rank; the rank that failed (or rank 0) says why, the others
  /// return an empty error.
  llvm::Error save(llvm::StringRef dir, int64_t step) const;

  /// The first NaN or infinity in this rank's tensors whose role is in
  /// `roles` (the gradients a step computes itself aside): tensor name,
  /// element index and value; index -1 when none.
  struct NonFinite {
    std::string name;
    int64_t index = -1;
    float value = 0;
  };
  NonFinite firstNonFinite(std::initializer_list<int32_t> roles) const;
  /// A trained MoE layer's loss that is not finite after a run (index 0),
  /// or none (index -1).
  NonFinite nonFiniteLoss() const;

  /// One step's table, the same for any number of ranks: each
  /// parameter's whole shape, the smallest and largest singular value of
  /// its Newton-Schulz outputs (gathered where they are split), |dW|
  /// against the snapshot taken by `snapshot()` and |W| of the whole
  /// tensor; and trained layers' losses. Every rank must call both (they
  /// gather); rank 0 prints.
  void snapshot();
  void printStep(llvm::raw_ostream &os) const;
  /// The lines that say what the table's sigma means and what to expect
  /// from the step's Newton-Schulz settings.
  std::vector<std::string> legend() const;

  int32_t count() const;
  int32_t numParams() const;
  /// Muon parameters (those with Newton-Schulz observations).
  int32_t numMuon() const;

private:
  Step &step;
  struct MuirRtContext *local = nullptr, *whole = nullptr;
  std::vector<int32_t> localIndex, wholeIndex; ///< per argument, -1: none
  /// Per argument: where its part starts in the whole tensor.
  std::vector<llvm::SmallVector<int64_t>> offsets;
  /// Per argument: what the step is bound to (Step::stage's).
  std::vector<void *> staged;
  std::vector<std::vector<char>> before; ///< parameters' bytes (f32 or f64)
};

/// Rank 0 prints every rank's communication and compute counters (bytes
/// and collectives per grid-axis group, GEMM calls and flops), gathered
/// over the grid, then resets them. Every rank must call it.
void printCommStats(const Step &step, llvm::raw_ostream &os);

} // namespace mlir::muir::tooling

#endif // MUIR_TOOLING_HOSTTENSORS_H
