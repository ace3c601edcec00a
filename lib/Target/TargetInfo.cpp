//===- TargetInfo.cpp - what the compiler knows of a target ---------------===//
//
// The CPU and CUDA targets' TargetInfo, and the targets' names. See
// muir/Target/TargetInfo.h.
//
//===----------------------------------------------------------------------===//
#include "muir/Target/TargetInfo.h"
#include "muir/Support/EnumNames.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace mlir::muir;
namespace mx = mlir::muir_exec;
using llvm::StringRef;

/// The targets, declared once (EnumNames.h).
static constexpr EnumName<Target> targets[] = {
    {Target::Cpu, "cpu", "OpenBLAS, MPI, kernels compiled through LLVM"},
    {Target::Cuda, "cuda",
     "cuBLAS, NCCL, kernels as PTX embedded in the module"},
};

StringRef mlir::muir::stringify(Target target) {
  return enumName(targets, target);
}

llvm::cl::ValuesClass mlir::muir::targetValues() {
  return enumValues(targets);
}

/// Each entry of muir-rt/Entries.def and its TARGETS column (Both, Cpu or
/// Cuda).
static const llvm::StringMap<StringRef> &entryTargets() {
  static const llvm::StringMap<StringRef> all = {
#define MUIR_RT_ENTRY(NAME, TARGETS, RET, PARAMS) {#NAME, #TARGETS},
#include "muir-rt/Entries.def"
  };
  return all;
}

TargetInfo::~TargetInfo() = default;

bool TargetInfo::hasEntry(StringRef entry) const {
  auto found = entryTargets().find(entry);
  if (found == entryTargets().end())
    return false;
  StringRef column = found->second;
  return column == "Both" ||
         column == (kind == Target::Cpu ? StringRef("Cpu") : "Cuda");
}

mx::Lowering TargetInfo::lowering(mx::RuntimeCallOpInterface op) const {
  if (hasEntry(op.getRuntimeEntry()))
    return mx::Lowering::call;
  if (generatesKernels() && op.hasDeviceKernels())
    return mx::Lowering::kernels;
  return mx::Lowering::none;
}

LogicalResult
TargetInfo::checkCalled(mx::RuntimeCallOpInterface op) const {
  switch (lowering(op)) {
  case mx::Lowering::call:
    return success();
  case mx::Lowering::kernels:
    return op->emitOpError("becomes generated kernels for the ")
           << displayName() << " target: run muir-exec-to-gpu first";
  case mx::Lowering::none:
    break;
  }
  StringRef entry = op.getRuntimeEntry();
  if (!entryTargets().count(entry))
    return op->emitOpError("calls the runtime entry '")
           << entry << "', which muir-rt/Entries.def does not declare";
  for (Target other : {Target::Cpu, Target::Cuda})
    if (other != kind && get(other).lowering(op) != mx::Lowering::none)
      return op->emitOpError("has no ")
             << displayName() << " runtime call (muir-rt/Entries.def: "
             << entry << "); compile this step for --target="
             << stringify(other);
  return op->emitOpError("has no runtime call on any target "
                         "(muir-rt/Entries.def: ")
         << entry << ")";
}

namespace {

class CpuTargetInfo final : public TargetInfo {
public:
  CpuTargetInfo() : TargetInfo(Target::Cpu) {}
  StringRef displayName() const override { return "CPU"; }
  StringRef runtimePrefix() const override { return "muirrt_"; }
  bool generatesKernels() const override { return false; }
  bool freesAfterLastUse() const override { return true; }
  void copy(OpBuilder &b, Location loc, Value from,
            Value to) const override {
    memref::CopyOp::create(b, loc, from, to);
  }
};

class CudaTargetInfo final : public TargetInfo {
public:
  CudaTargetInfo() : TargetInfo(Target::Cuda) {}
  StringRef displayName() const override { return "CUDA"; }
  StringRef runtimePrefix() const override { return "muirrt_cuda_"; }
  bool generatesKernels() const override { return true; }
  bool freesAfterLastUse() const override { return false; }
  void copy(OpBuilder &b, Location loc, Value from,
            Value to) const override {
    gpu::MemcpyOp::create(b, loc, Type(), ValueRange{}, to, from);
  }
};

} // namespace

const TargetInfo &TargetInfo::get(Target target) {
  static const CpuTargetInfo cpu;
  static const CudaTargetInfo cuda;
  switch (target) {
  case Target::Cpu:
    return cpu;
  case Target::Cuda:
    return cuda;
  }
  llvm_unreachable("a target without its TargetInfo");
}
