//===- MuirExecInterfaces.td - muir_exec op interfaces -----*- tablegen -*-===//
//
// How an exec op names its ranks (GroupOpInterface) and how each target
// runs it (RuntimeCallOpInterface).
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_EXEC_INTERFACES_TD
#define MUIR_EXEC_INTERFACES_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/EnumAttr.td"

def MuirExec_GroupOpInterface : OpInterface<"GroupOpInterface"> {
  let description = [{
    An exec op that runs over a group of ranks (its `group` attribute);
    the verifier checks that the group names a `muir.grid` and axes of it.
  }];
  let cppNamespace = "::mlir::muir_exec";
  let methods = [
    InterfaceMethod<"The ranks the op runs over.",
      "::mlir::muir_exec::GroupAttr", "getGroup">,
  ];
  let verify = [{ return ::mlir::muir_exec::verifyGroup($_op); }];
}

// How a target runs an exec op: one call of its runtime's C API, kernels
// that muir-exec-to-gpu generates (after which the op is gone), or not at
// all (the op is the other target's).
def MuirExec_Lowering : I32EnumAttr<"Lowering",
    "how a target runs an exec op", [
      I32EnumAttrCase<"call", 0>,
      I32EnumAttrCase<"kernels", 1>,
      I32EnumAttrCase<"none", 2>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::muir_exec";
}

def MuirExec_RuntimeCallOpInterface : OpInterface<"RuntimeCallOpInterface"> {
  let description = [{
    An exec op that a target runs as one call of its runtime's entry, or
    as kernels muir-exec-to-gpu generates. The op says which entry of
    muir-rt/Entries.def it calls (given its attributes and types) and
    whether a device target generates its kernels; a target's TargetInfo
    (muir/Target/TargetInfo.h) derives from these and the entries' TARGETS
    column how it runs the op: `muir-exec-to-runtime-calls` calls the
    entry where the target's runtime has it, refuses a `kernels` op for
    CUDA (muir-exec-to-gpu replaces it first) and a `none` op with a
    message naming the other target.
  }];
  let cppNamespace = "::mlir::muir_exec";
  let methods = [
    InterfaceMethod<"The muir-rt/Entries.def entry the op calls (without "
      "the target's prefix).", "::llvm::StringRef", "getRuntimeEntry">,
    InterfaceMethod<"Whether a device target generates the op's kernels "
      "(muir-exec-to-gpu) where its runtime has no entry for it.",
      "bool", "hasDeviceKernels">,
  ];
}

#endif // MUIR_EXEC_INTERFACES_TD
