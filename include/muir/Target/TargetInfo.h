//===- TargetInfo.h - what the compiler knows of a target -------*- C++ -*-===//
//
// One seam per target, as Triton's TargetInfoBase: the runtime's symbol
// prefix, which of muir-rt/Entries.def's entries the target's runtime has
// (its TARGETS column), how it copies a buffer and whether it generates
// kernels for exec ops (muir-exec-to-gpu). How a target runs an exec op is
// derived from these and the op's RuntimeCallOpInterface (the entry it
// calls, whether device kernels replace it), never spelled per op and
// target.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_TARGET_TARGETINFO_H
#define MUIR_TARGET_TARGETINFO_H

#include "muir/Target/Target.h"

#include "MuirExec/MuirExecDialect.h"
#include "mlir/IR/Builders.h"

#include <string>

namespace mlir::muir {

class TargetInfo {
public:
  virtual ~TargetInfo();
  /// The target's info (one per target, for the process's life).
  static const TargetInfo &get(Target target);

  Target target() const { return kind; }
  /// The target's name in messages ("CPU", "CUDA").
  virtual llvm::StringRef displayName() const = 0;
  /// The prefix of its runtime's symbols ("muirrt_", "muirrt_cuda_").
  virtual llvm::StringRef runtimePrefix() const = 0;
  /// Whether its runtime has the entry `entry` (muir-rt/Entries.def's name,
  /// without prefix).
  bool hasEntry(llvm::StringRef entry) const;
  /// The symbol the target's runtime gives `entry`.
  std::string symbol(llvm::StringRef entry) const {
    return (runtimePrefix() + entry).str();
  }
  /// Whether muir-exec-to-gpu generates kernels for the ops that ask for
  /// device kernels (RuntimeCallOpInterface::hasDeviceKernels).
  virtual bool generatesKernels() const = 0;
  /// Whether a buffer is best freed right after its last use (a CPU free
  /// costs nothing; cudaFree waits for the device).
  virtual bool freesAfterLastUse() const = 0;
  /// Copies buffer `from` into `to`.
  virtual void copy(OpBuilder &b, Location loc, Value from,
                    Value to) const = 0;

  /// How the target runs `op`: a call where its runtime has the op's
  /// entry, else kernels where it generates the op's device kernels, else
  /// not at all.
  muir_exec::Lowering lowering(muir_exec::RuntimeCallOpInterface op) const;
  /// The error of an op the target does not call (`lowering` is kernels
  /// or none), naming the fix.
  LogicalResult checkCalled(muir_exec::RuntimeCallOpInterface op) const;

protected:
  explicit TargetInfo(Target kind) : kind(kind) {}

private:
  Target kind;
};

} // namespace mlir::muir

#endif // MUIR_TARGET_TARGETINFO_H
