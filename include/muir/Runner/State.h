//===- State.h - saved training states (--save-state, --resume) -*- C++ -*-===//
//
// A saved state is a directory: <tensor>.npy for every tensor of the step
// (each whole, in its global shape, however the run split it) and
// muir-state.json, the manifest, which records what the state was saved
// for (the step's identity: its IR, the IR without its layout, grid and
// compile flags), the steps done and a hash of every tensor file. A resume
// compares the identity field by field, so that a refusal names what
// differs; a state saved on another layout of the same step (other grid
// axes, sizes and splits, the same IR otherwise) resumes, its tensors split
// as this run splits them. A save replaces only a directory that is itself
// a muir state, never anything else of the user's.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_RUNNER_STATE_H
#define MUIR_RUNNER_STATE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

struct MuirRtContext;

namespace mlir::muir::state {

/// The manifest's format tag and file name.
inline constexpr const char *kFormat = "muir-state-3";
inline constexpr const char *kManifestName = "muir-state.json";

/// The largest step counter a state may hold: AdamW's bias corrections
/// raise betas to the step in double, which counts exactly up to 2^53.
inline constexpr int64_t kMaxStep = int64_t(1) << 53;

/// What a state was saved for. Two runs may continue each other's state
/// only if every field, `build` included, is equal.
struct StepIdentity {
  /// Hash of the step's IR as parsed or built (shapes, settings, grid).
  std::string stepHash;
  /// Hash of the same IR without its layout (the grids, and each
  /// argument's shards and splits): equal for every layout of one
  /// description whose tensors' global shapes do not depend on the layout.
  std::string layoutFreeHash;
  /// The run's grid and its foldings, e.g. "dp=2,tp=2; moe: edp=2,ep=2".
  std::string grid;
  /// The compile flags that change the step's program or its bits:
  /// flag name (as on the command line) -> value.
  std::map<std::string, std::string> flags;
  /// The muir build that saved it (MUIR_VERSION_STRING).
  std::string build;
};

struct Manifest {
  StepIdentity identity;
  int64_t step = 0;
  /// Tensor name -> hash of its .npy file's bytes.
  std::map<std::string, std::string> tensors;
};

/// Parses a manifest's text; the error says what is wrong with it.
llvm::Expected<Manifest> parseManifest(llvm::StringRef text);

/// The manifest as JSON text (parseManifest reads it back).
std::string printManifest(const Manifest &manifest);

/// Empty when `now` may continue a state saved as `saved` (on this layout
/// or, with the same layout-free IR, on another); else one line per
/// difference, e.g. "the flag --ns-mode: saved with 'distributed', this run
/// 'auto'".
std::vector<std::string> differences(const StepIdentity &saved,
                                     const StepIdentity &now);

/// A 64-bit hash as the manifest (and muir-run's traces) write it: 16
/// hexadecimal digits.
std::string hex64(uint64_t value);

/// The hash of a file's bytes as the manifest records it.
llvm::Expected<std::string> fileHash(llvm::StringRef path);

/// Checks, before any work, that `dir` may receive a state: it does not
/// exist (its parent is a writable directory) or it is a previous muir
/// state (a valid manifest, and nothing in it that the manifest does not
/// name). Anything else is refused with a message naming what is in the way.
llvm::Error checkSaveTarget(llvm::StringRef dir);

/// A tensor of a step as a state holds it: its name and global shape.
struct StateTensor {
  std::string name;
  std::vector<int64_t> shape;
};

/// Which tensor files' hashes a process checks: those whose index i (in
/// the step's order) has i % count == index. The ranks of a job each check
/// their share (together every file once); one process checks all.
struct HashShare {
  int64_t index = 0;
  int64_t count = 1;
};

/// A state directory opened once for a resume. Every file of the state is
/// read through it (path(): /proc/self/fd/N, the directory as it was when
/// opened), so that a save renaming a new state into its place meanwhile
/// changes nothing of what this resume reads: it loads the state it
/// checked, or, once the old state's files are removed, refuses.
class OpenedState {
public:
  /// Opens `dir` (as the user gave it; messages name it so).
  static llvm::Expected<OpenedState> open(llvm::StringRef dir);
  OpenedState(OpenedState &&other);
  OpenedState &operator=(OpenedState &&) = delete;
  OpenedState(const OpenedState &) = delete;
  ~OpenedState();
  /// The path through which the state's files are read.
  std::string path() const;
  /// The directory as the user gave it.
  const std::string &given() const { return dir; }
  /// The xxh3 hash of the manifest's bytes as checkState read them: equal
  /// on every rank that checked the same state.
  uint64_t manifestHash = 0;

private:
  OpenedState(std::string dir, int fd) : dir(std::move(dir)), fd(fd) {}
  std::string dir;
  int fd = -1;
};

/// Reads and checks the state in `dir` for a step with identity `identity`
/// and tensors `tensors`: the manifest, that every tensor's file is there,
/// the hashes of `share`'s files, the step counter's range (with
/// `moreSteps` still to run), and that no file or folder of it is a
/// symbolic link or anything but a regular file. A state saved for another
/// step names first the tensors that differ (missing, extra, or of another
/// shape). Returns the steps done.
llvm::Expected<int64_t> checkState(OpenedState &dir,
                                   const StepIdentity &identity,
                                   const std::vector<StateTensor> &tensors,
                                   int64_t moreSteps, HashShare share = {});

/// Saving a state, streamed: beginSave checks `dir` (checkSaveTarget
/// refuses to replace anything that is not a muir state) and makes a
/// staging directory beside it, whose path it returns; every rank writes
/// its parts of the tensor files there (muirrt_npy_create,
/// muirrt_npy_write_part); finishSave writes the manifest (each named
/// tensor file's hash) and puts the staging directory in `dir`'s place in
/// one rename, so that `dir` holds the old state or the new one, whole.
/// abortSave (and a failing finishSave) removes the staging directory.
llvm::Expected<std::string> beginSave(llvm::StringRef dir);
llvm::Error finishSave(llvm::StringRef staged, llvm::StringRef dir,
                       const StepIdentity &identity, int64_t step,
                       llvm::ArrayRef<std::string> names);
void abortSave(llvm::StringRef staged);

} // namespace mlir::muir::state

#endif // MUIR_RUNNER_STATE_H
