//===- MuirExecAttrs.td - muir_exec attributes -------------*- tablegen -*-===//
//
// The runtime's codes as enum attributes, the buffer types the ops take,
// the host memory space and the group attribute.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_EXEC_ATTRS_TD
#define MUIR_EXEC_ATTRS_TD

include "MuirExec/MuirExecDialect.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/CommonTypeConstraints.td"

// A collective's reduction, as a typed attribute; muir-exec-to-runtime-calls
// passes the runtime's code for it (enum muirrt_reduction,
// muir-rt/Collectives.h).
def MuirExec_Reduction : I32EnumAttr<"Reduction",
    "element-wise reduction of a collective", [
      I32EnumAttrCase<"sum", 0>,
      I32EnumAttrCase<"max", 1>,
      I32EnumAttrCase<"min", 2>,
      I32EnumAttrCase<"avg", 3>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::muir_exec";
}
def MuirExec_ReductionAttr
    : EnumAttr<MuirExec_Dialect, MuirExec_Reduction, "reduction"> {
  let assemblyFormat = "`<` $value `>`";
}

def MuirExec_Scoring : I32EnumAttr<"Scoring",
    "how a router turns logits into expert scores", [
      I32EnumAttrCase<"softmax", 0>,
      I32EnumAttrCase<"sigmoid", 1>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::muir_exec";
}
def MuirExec_ScoringAttr
    : EnumAttr<MuirExec_Dialect, MuirExec_Scoring, "scoring"> {
  let assemblyFormat = "`<` $value `>`";
}

def MuirExec_DropPolicy : I32EnumAttr<"DropPolicy",
    "which routed pairs an expert over capacity keeps", [
      I32EnumAttrCase<"weight", 0>,
      I32EnumAttrCase<"position", 1>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::muir_exec";
}
def MuirExec_DropPolicyAttr
    : EnumAttr<MuirExec_Dialect, MuirExec_DropPolicy, "drop_policy"> {
  let assemblyFormat = "`<` $value `>`";
}
def MuirExec_F32Buffer : MemRefRankOf<[F32], [2, 3]>;
// GEMM and SYRK also run in double (the Gram form of Newton-Schulz).
def MuirExec_FloatBuffer : MemRefRankOf<[F32, F64], [2, 3]>;
// GEMM and SYRK on bf16 operands too (a bf16 Newton-Schulz iterate).
def MuirExec_ProductBuffer : MemRefRankOf<[F32, F64, BF16], [2, 3]>;
def MuirExec_AnyF32Buffer : MemRefOf<[F32]>;

def MuirExec_HostMemoryAttr : AttrDef<MuirExec_Dialect, "HostMemory"> {
  let mnemonic = "host";
  let summary = "memory space of buffers kept in host memory on every target";
  let description = [{
    `memref<2xi64, #muir_exec.host>`: a buffer that lives in host memory
    whatever the target, because the host reads it: the counts of an
    `all_to_allv` (MPI and NCCL take them on the host). A buffer without a
    memory space lives where the target computes: host memory on the CPU,
    device memory on CUDA. `muir-lower-to-exec` places count tensors here,
    `muir-exec-to-gpu` keeps them on the host and refuses device work on
    them, and `muir-exec-to-runtime-calls` drops the space once buffers are
    pointers.
  }];
}

// The counts of a ragged exchange: one i64 per group rank, in host memory.
def MuirExec_HostCountBuffer : Type<
    And<[MemRefRankOf<[I64], [1]>.predicate,
         CPred<"::llvm::isa_and_nonnull<::mlir::muir_exec::HostMemoryAttr>("
               "::llvm::cast<::mlir::MemRefType>($_self).getMemorySpace())">]>,
    "1-D i64 memref in #muir_exec.host memory", "::mlir::MemRefType">;
def MuirExec_GroupAttr : AttrDef<MuirExec_Dialect, "Group"> {
  let mnemonic = "group";
  let summary = "the ranks an exec op runs over: axes of a grid";
  let description = [{
    `#muir_exec.group<@world, ["tp"]>`: the ranks that share this rank's
    coordinates on every axis of `muir.grid` `grid` except `axes` (one rank
    per combination of the listed axes; no axes: this rank alone). The
    runtime's C ABI names a group by an integer axes mask, which
    `muir-exec-to-runtime-calls` computes from the grid
    (muir::getRuntimeAxesMask); above that boundary groups are these
    attributes, verified against their grid.
  }];
  let parameters = (ins "::mlir::FlatSymbolRefAttr":$grid,
                        "::mlir::ArrayAttr":$axes);
  let assemblyFormat = "`<` $grid `,` $axes `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The grid named, looked up from `from`'s scope (null if absent).
    ::mlir::muir::GridOp getGridOp(::mlir::Operation *from) const;
    /// The number of ranks in the group.
    int64_t getSize(::mlir::Operation *from) const;
    /// The group as the runtime C ABI's axes mask.
    int64_t getRuntimeMask(::mlir::Operation *from) const;
  }];
}

#endif // MUIR_EXEC_ATTRS_TD
