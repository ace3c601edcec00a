//===- MuirExecOps.td - the execution-level dialect's ops --*- tablegen -*-===//
//
// Explicit buffers and runtime calls. Every op here maps to one call of the
// runtime C API (runtime/include/muir-rt/Runtime.h); element-wise work is
// expressed beside these ops as linalg.generic on the same memrefs. The
// dialect, its types, attributes and interfaces are in the files included
// below.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_EXEC_OPS_TD
#define MUIR_EXEC_OPS_TD

include "MuirExec/MuirExecDialect.td"
include "MuirExec/MuirExecTypes.td"
include "MuirExec/MuirExecAttrs.td"
include "MuirExec/MuirExecInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// `entry` is the body of getRuntimeEntry where the op calls another entry
// than its mnemonic (or picks one by its attributes and types);
// `deviceKernels` says that muir-exec-to-gpu generates its kernels. Which
// target runs it how is TargetInfo's (muir/Target/TargetInfo.h), from
// muir-rt/Entries.def.
class MuirExec_Op<string mnemonic, list<Trait> traits = [],
                  bit deviceKernels = 0, code entry = "">
    : Op<MuirExec_Dialect, mnemonic, !listconcat(traits,
         [DeclareOpInterfaceMethods<MuirExec_RuntimeCallOpInterface>])> {
  let extraClassDefinition = [{
    ::llvm::StringRef $cppClass::getRuntimeEntry() {
      }] # !if(!empty(entry), "return \"" # mnemonic # "\";", entry) # [{
    }
    bool $cppClass::hasDeviceKernels() {
      return }] # !if(deviceKernels, "true", "false") # [{;
    }
  }];
}

def MuirExec_GemmOp : MuirExec_Op<"gemm", [AttrSizedOperandSegments], 0, [{
      if (getRowStable())
        return "gemm_rows";
      if (getSymmetric())
        return "dgemm_sym";
      ::mlir::Type e = ::mlir::getElementTypeOrSelf(getC());
      return e.isF64() ? "dgemm" : e.isBF16() ? "bgemm" : "sgemm";
    }]> {
  let summary = "C = alpha * op(A) * op(B) + beta * acc (runtime sgemm)";
  let description = [{
    GEMM on 2-D or batched 3-D buffers; the accumulator is `acc` when
    given (C's shape; it may be C itself), else C, read when beta != 0. C
    is written. Runs as one `muirrt_sgemm` (f64 buffers: `muirrt_dgemm`)
    call for the whole batch, which scales the accumulator into C and lets
    BLAS add the product (beta 1). All buffers share one element type; bf16
    buffers call `muirrt_bgemm` (products accumulated in f32, the result
    rounded to bf16 to nearest even).
    `symmetric` (square f64 operands whose product and accumulator are
    symmetric) calls `muirrt_dgemm_sym`, which computes the upper triangle
    in blocks of rows and mirrors it. alpha and beta are the attributes
    (default 1 and 0, elided when printed) or, known only at run time (a
    Newton-Schulz loop's coefficients), the f64 operands `alpha` and
    `beta`: one form each, an operand with its attribute left at the
    default (the verifier refuses both). `row_stable` (f32,
    2-D, no accumulator, alpha 1, beta 0: `muir.matmul`'s) calls
    `muirrt_gemm_rows`, whose every element sums its products in ascending
    order whatever the shapes.
  }];
  let arguments = (ins Arg<MuirExec_ProductBuffer, "", [MemRead]>:$a,
      Arg<MuirExec_ProductBuffer, "", [MemRead]>:$b,
      Arg<MuirExec_ProductBuffer, "", [MemRead, MemWrite]>:$c,
      Arg<Optional<MuirExec_ProductBuffer>, "", [MemRead]>:$acc,
      Optional<F64>:$alpha_value, Optional<F64>:$beta_value,
      DefaultValuedAttr<F64Attr, "1.0">:$alpha,
      DefaultValuedAttr<F64Attr, "0.0">:$beta, UnitAttr:$transpose_a,
      UnitAttr:$transpose_b, UnitAttr:$symmetric, UnitAttr:$row_stable);
  let assemblyFormat = [{
    $a `,` $b `,` $c (`acc` $acc^)? (`alpha` `(` $alpha_value^ `)`)?
    (`beta` `(` $beta_value^ `)`)? attr-dict `:` type($a) `,` type($b) `,`
    type($c) (`,` type($acc)^)?
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Value":$a, "::mlir::Value":$b, "::mlir::Value":$c,
        "::mlir::Value":$acc, "::mlir::FloatAttr":$alpha,
        "::mlir::FloatAttr":$beta, "::mlir::UnitAttr":$transpose_a,
        "::mlir::UnitAttr":$transpose_b, "::mlir::UnitAttr":$symmetric), [{
      build($_builder, $_state, a, b, c, acc, ::mlir::Value(), ::mlir::Value(),
            alpha, beta, transpose_a, transpose_b, symmetric,
            ::mlir::UnitAttr());
    }]>];
  let hasVerifier = 1;
}

def MuirExec_SyrkOp : MuirExec_Op<"syrk", [AttrSizedOperandSegments], 0, [{
      // An f32 A into f64 C: the products accumulated in double.
      ::mlir::Type c = ::mlir::getElementTypeOrSelf(getC());
      if (c.isBF16())
        return "bsyrk";
      if (!c.isF64())
        return "ssyrk";
      ::mlir::Type a = ::mlir::getElementTypeOrSelf(getA());
      return a.isF64() ? "dsyrk" : "ssyrk_f64";
    }]> {
  let summary = "C = alpha * A * A^T + beta * acc (runtime ssyrk)";
  let description = [{
    Symmetric rank-k update; both triangles of C are written. With
    `transpose`, C = alpha * A^T * A + beta * acc (A is k x n). The
    accumulator (symmetric) is `acc` when given, else C. All buffers share
    one element type (f32: `muirrt_ssyrk`, f64: `muirrt_dsyrk`, bf16:
    `muirrt_bsyrk`, accumulated in f32 and rounded to bf16), except
    that an f32 A may accumulate into f64 C (`muirrt_ssyrk_f64`). alpha and
    beta may be f64 operands, as for muir_exec.gemm.
  }];
  let arguments = (ins Arg<MuirExec_ProductBuffer, "", [MemRead]>:$a,
      Arg<MuirExec_ProductBuffer, "", [MemRead, MemWrite]>:$c,
      Arg<Optional<MuirExec_ProductBuffer>, "", [MemRead]>:$acc,
      Optional<F64>:$alpha_value, Optional<F64>:$beta_value,
      DefaultValuedAttr<F64Attr, "1.0">:$alpha,
      DefaultValuedAttr<F64Attr, "0.0">:$beta, UnitAttr:$transpose);
  let assemblyFormat = [{
    $a `,` $c (`acc` $acc^)? (`alpha` `(` $alpha_value^ `)`)?
    (`beta` `(` $beta_value^ `)`)? attr-dict `:` type($a) `,` type($c)
    (`,` type($acc)^)?
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Value":$a, "::mlir::Value":$c,
        "::mlir::Value":$acc, "::mlir::FloatAttr":$alpha,
        "::mlir::FloatAttr":$beta, "::mlir::UnitAttr":$transpose), [{
      build($_builder, $_state, a, c, acc, ::mlir::Value(), ::mlir::Value(),
            alpha, beta, transpose);
    }]>];
  let hasVerifier = 1;
}

def MuirExec_TraceNormalizeOp : MuirExec_Op<"trace_normalize"> {
  let summary = "out = s^2 in, scale = s = 1 / (sqrt(trace(in)) + eps)";
  let description = [{
    Per square f64 matrix (muir.trace_normalize); the trace summed in
    order in double. Runtime: muirrt_trace_normalize.
  }];
  let arguments = (ins Arg<MemRefRankOf<[F64], [2, 3]>, "", [MemRead]>:$input,
      Arg<MemRefRankOf<[F64], [2, 3]>, "", [MemWrite]>:$output,
      Arg<MemRefRankOf<[F64], [1]>, "", [MemWrite]>:$scale, F64Attr:$eps);
  let assemblyFormat = [{
    $input `,` $output `,` $scale attr-dict `:` type($input) `,`
    type($output) `,` type($scale)
  }];
  let hasVerifier = 1;
}

def MuirExec_ScaleMatricesOp : MuirExec_Op<"scale_matrices", [], 0, [{
      ::mlir::Type e = ::mlir::getElementTypeOrSelf(getOutput());
      return e.isF64() ? "scale_matrices_f64" : "scale_matrices_f32";
    }]> {
  let summary = "out[b] = scale[b] * in[b], rounded once to out's type";
  let description = [{
    f64 matrices times one f64 scalar each, into f32 or f64
    (muir.scale_matrices). Runtime: muirrt_scale_matrices_f32 / _f64.
  }];
  let arguments = (ins Arg<MemRefRankOf<[F64], [2, 3]>, "", [MemRead]>:$input,
      Arg<MemRefRankOf<[F64], [1]>, "", [MemRead]>:$scale,
      Arg<MuirExec_FloatBuffer, "", [MemWrite]>:$output);
  let assemblyFormat = [{
    $input `,` $scale `,` $output attr-dict `:` type($input) `,`
    type($scale) `,` type($output)
  }];
  let hasVerifier = 1;
}

def MuirExec_FrobeniusNormalizeOp
    : MuirExec_Op<"frobenius_normalize", [], 1, [{
      if (::mlir::getElementTypeOrSelf(getInput()).isF64())
        return "frobenius_normalize_f64";
      ::mlir::Type e = ::mlir::getElementTypeOrSelf(getOutput());
      return e.isBF16() ? "frobenius_normalize_bf16" : "frobenius_normalize";
    }]> {
  let summary = "out = in / (||in||_F + eps) per matrix";
  let description = [{
    Norm accumulated in double in a fixed order; `in` and `out` may be the
    same buffer. f32 buffers: `muirrt_frobenius_normalize`; f64 buffers (an
    f64 parameter's Newton-Schulz): `muirrt_frobenius_normalize_f64`. An
    f32 input with a bf16 output (CPU only: muir-exec-to-runtime-calls
    fuses a normalisation and the `arith.truncf` kernel that follows it,
    a bf16 Newton-Schulz's first iterate) writes each scaled element
    rounded to bf16 to nearest even, as `arith.truncf`:
    `muirrt_frobenius_normalize_bf16`.
  }];
  let arguments = (ins
      Arg<MemRefRankOf<[F32, F64], [2, 3]>, "", [MemRead]>:$input,
      Arg<MemRefRankOf<[F32, F64, BF16], [2, 3]>, "", [MemWrite]>:$output,
      F64Attr:$eps);
  let assemblyFormat = [{
    $input `,` $output attr-dict `:` type($input) `,` type($output)
  }];
  let hasVerifier = 1;
}

def MuirExec_TransposeOp : MuirExec_Op<"transpose"> {
  let summary = "out = in^T over the last two dimensions";
  let description = [{ Cache-blocked runtime transpose. }];
  let arguments = (ins Arg<MuirExec_F32Buffer, "", [MemRead]>:$input,
      Arg<MuirExec_F32Buffer, "", [MemWrite]>:$output);
  let assemblyFormat = [{
    $input `,` $output attr-dict `:` type($input) `,` type($output)
  }];
  let hasVerifier = 1;
}

def MuirExec_ObserveOp : MuirExec_Op<"observe"> {
  let summary = "copy a buffer to a runtime observation slot";
  let description = [{
    The runtime keeps the copy for the host to report after the step;
    `label` names what was observed.
  }];
  let arguments = (ins Arg<MuirExec_AnyF32Buffer, "", [MemRead]>:$input,
      StrAttr:$label, I64Attr:$slot);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}


def MuirExec_SumSquaresOp : MuirExec_Op<"sum_squares", [], 0, [{
      ::mlir::Type e = ::mlir::getElementTypeOrSelf(getOutput());
      return e.isF64() ? "sum_squares_f64" : "sum_squares";
    }]> {
  let summary = "out[i] = sum of squares of matrix i (double accumulation)";
  let description = [{
    Double sum per matrix in a fixed order, rounded to f32, or kept in
    double for an f64 `output` (the CUDA target's, formed by
    `muir-exec-to-gpu` for the scaling kernel of a `frobenius_normalize`).
  }];
  let arguments = (ins Arg<MuirExec_F32Buffer, "", [MemRead]>:$input,
      Arg<AnyTypeOf<[MuirExec_AnyF32Buffer, MemRefRankOf<[F64], [1]>]>, "",
          [MemWrite]>:$output);
  let assemblyFormat = [{
    $input `,` $output attr-dict `:` type($input) `,` type($output)
  }];
}

def MuirExec_ScaleByNormOp
    : MuirExec_Op<"scale_by_norm", [], 1> {
  let summary = "out = in / (sqrt(ss) + eps) per matrix";
  let description = [{ Same arithmetic as frobenius_normalize. }];
  let arguments = (ins Arg<MuirExec_F32Buffer, "", [MemRead]>:$input,
      Arg<MuirExec_AnyF32Buffer, "", [MemRead]>:$sum_squares,
      Arg<MuirExec_F32Buffer, "", [MemWrite]>:$output, F64Attr:$eps);
  let assemblyFormat = [{
    $input `,` $sum_squares `,` $output attr-dict `:` type($input) `,`
    type($sum_squares) `,` type($output)
  }];
}

//===----------------------------------------------------------------------===//
// Collectives (runtime: MPI on CPU)
//===----------------------------------------------------------------------===//

class MuirExec_CollectiveOp<string mnemonic>
    : MuirExec_Op<mnemonic, [MuirExec_GroupOpInterface]> {
  let assemblyFormat = [{
    $input `,` $output attr-dict `:` type($input) `,` type($output)
  }];
}

def MuirExec_AllReduceOp : MuirExec_CollectiveOp<"all_reduce"> {
  let summary = "element-wise reduction over a group (runtime all-reduce)";
  let description = [{
    `reduction`: 0 sum, 1 max, 2 min, 3 avg; sums are added in group-rank
    order, so results do not depend on timing.
  }];
  let arguments = (ins Arg<MuirExec_AnyF32Buffer, "", [MemRead]>:$input,
      Arg<MuirExec_AnyF32Buffer, "", [MemWrite]>:$output,
      MuirExec_GroupAttr:$group,
      MuirExec_ReductionAttr:$reduction);
}

def MuirExec_SymmetricAllReduceOp
    : MuirExec_CollectiveOp<"symmetric_all_reduce"> {
  let summary = "the group's sum of symmetric f64 matrices, by triangles";
  let description = [{
    muir.symmetric_all_reduce: packed upper triangles travel, the sum runs
    in group-rank order, both triangles of the output are written.
    Runtime: muirrt_symmetric_all_reduce.
  }];
  let arguments = (ins Arg<MemRefRankOf<[F64], [2, 3]>, "", [MemRead]>:$input,
      Arg<MemRefRankOf<[F64], [2, 3]>, "", [MemWrite]>:$output,
      MuirExec_GroupAttr:$group);
  let hasVerifier = 1;
}

def MuirExec_AllGatherOp : MuirExec_CollectiveOp<"all_gather"> {
  let summary = "concatenate the group's pieces along a dimension";
  let description = [{
    Gathers along `gather_axis` of row-major buffers, group-rank order.
  }];
  let arguments = (ins Arg<MuirExec_AnyF32Buffer, "", [MemRead]>:$input,
      Arg<MuirExec_AnyF32Buffer, "", [MemWrite]>:$output,
      MuirExec_GroupAttr:$group,
      I64Attr:$gather_axis);
}

def MuirExec_AllGatherVOp : MuirExec_CollectiveOp<"all_gatherv"> {
  let summary = "ragged gather along dimension 0 (static sizes)";
  let description = [{
    Group rank j contributes its first sizes[j] slices of dimension 0.
  }];
  let arguments = (ins Arg<MuirExec_AnyF32Buffer, "", [MemRead]>:$input,
      Arg<MuirExec_AnyF32Buffer, "", [MemWrite]>:$output,
      MuirExec_GroupAttr:$group,
      DenseI64ArrayAttr:$sizes);
}

def MuirExec_ReduceScatterOp : MuirExec_CollectiveOp<"reduce_scatter"> {
  let summary = "reduce over a group, keep this rank's slice";
  let description = [{ Slices along `scatter_axis`, group-rank order. }];
  let arguments = (ins Arg<MuirExec_AnyF32Buffer, "", [MemRead]>:$input,
      Arg<MuirExec_AnyF32Buffer, "", [MemWrite]>:$output,
      MuirExec_GroupAttr:$group,
      I64Attr:$scatter_axis, MuirExec_ReductionAttr:$reduction);
}

def MuirExec_AllToAllOp : MuirExec_CollectiveOp<"all_to_all"> {
  let summary = "exchange equal blocks of dimension 0 with every group rank";
  let description = [{
    Block j of dimension 0 goes to group rank j; the received blocks are
    concatenated along dimension 0 in group-rank order.
  }];
  let arguments = (ins Arg<MuirExec_AnyF32Buffer, "", [MemRead]>:$input,
      Arg<MuirExec_AnyF32Buffer, "", [MemWrite]>:$output,
      MuirExec_GroupAttr:$group);
}

def MuirExec_AllToAllVOp
    : MuirExec_Op<"all_to_allv", [MuirExec_GroupOpInterface]> {
  let summary = "ragged all-to-all of rows with run-time counts";
  let description = [{
    `send_counts[j]` rows (dimension 0, back to back) of `input` go to group
    rank j; `output` receives rows packed from row 0 in group-rank order
    and `recv_counts[j]` the rows from group rank j. Receiving more rows
    than `output` holds is a run-time error. The counts are host buffers
    (`#muir_exec.host`) on every target.
  }];
  let arguments = (ins Arg<MuirExec_AnyF32Buffer, "", [MemRead]>:$input,
      Arg<MuirExec_HostCountBuffer, "", [MemRead]>:$send_counts,
      Arg<MuirExec_AnyF32Buffer, "", [MemWrite]>:$output,
      Arg<MuirExec_HostCountBuffer, "", [MemWrite]>:$recv_counts,
      MuirExec_GroupAttr:$group);
  let assemblyFormat = [{
    $input `,` $send_counts `,` $output `,` $recv_counts attr-dict `:`
    type($input) `,` type($send_counts) `,` type($output) `,`
    type($recv_counts)
  }];
}

def MuirExec_SyrkRowsOp
    : MuirExec_Op<"syrk_rows", [], 0, [{ return "ssyrk_rows"; }]> {
  let summary = "rows [row_begin, row_end) of the upper triangle of alpha A A^T";
  let description = [{
    Writes C[r][c] = (alpha * A A^T)[r][c] for row_begin <= r < row_end and
    c >= r, in every batch item (with `transpose`, alpha * A^T A, A being
    k x n); the rest of C is left as it is. One chunk of the fused SYRK and
    all-reduce: a SYRK of the diagonal block and a GEMM of the block to its
    right, so each entry is the same K-sequential dot product as a whole
    SYRK's.
  }];
  let arguments = (ins Arg<MuirExec_F32Buffer, "", [MemRead]>:$a,
      Arg<MuirExec_F32Buffer, "", [MemRead, MemWrite]>:$c, Index:$row_begin,
      Index:$row_end, F64Attr:$alpha, UnitAttr:$transpose);
  let assemblyFormat = [{
    $a `,` $c `rows` `[` $row_begin `,` $row_end `)` attr-dict `:` type($a)
    `,` type($c)
  }];
  let hasVerifier = 1;
}

def MuirExec_TriangleAllReduceStartOp
    : MuirExec_Op<"triangle_all_reduce_start",
                  [MemoryEffects<[MemRead, MemWrite]>,
                   MuirExec_GroupOpInterface], 1> {
  let summary = "start the group's sum of rows of C's upper triangle";
  let description = [{
    Packs rows [row_begin, row_end) of the upper triangle of every batch
    item of C (row r contributes its n - r entries from the diagonal on)
    and starts the group's exchange of them without waiting (MPI_Iallgather
    on the CPU). The result is a request that exactly one
    `triangle_all_reduce_wait` completes; between the two, C may be written
    outside these rows (the next chunk's `syrk_rows`), which is what lets
    communication hide behind compute.
  }];
  let arguments = (ins Arg<MuirExec_F32Buffer, "", [MemRead]>:$c,
      Index:$row_begin, Index:$row_end, MuirExec_GroupAttr:$group);
  let results = (outs MuirExec_RequestType:$request);
  let assemblyFormat = [{
    $c `rows` `[` $row_begin `,` $row_end `)` attr-dict `:` type($c)
  }];
  let hasVerifier = 1;
}

def MuirExec_TriangleAllReduceWaitOp
    : MuirExec_Op<"triangle_all_reduce_wait",
                  [MemoryEffects<[MemRead, MemWrite]>], 1> {
  let summary = "finish a started triangle sum into C";
  let description = [{
    Waits for `request`, adds the group's pieces in group-rank order (as
    `all_reduce`, so the result does not depend on timing) and writes the
    sums to the request's rows of C's upper triangle and, mirrored, to the
    matching columns of the lower triangle. `row_begin` and `row_end` are
    the request's rows (the runtime checks that they are), so the rows a
    wait writes are visible in the IR.
  }];
  let arguments = (ins MuirExec_RequestType:$request,
      Arg<MuirExec_F32Buffer, "", [MemWrite]>:$c, Index:$row_begin,
      Index:$row_end);
  let assemblyFormat = [{
    $request `,` $c `rows` `[` $row_begin `,` $row_end `)` attr-dict `:`
    type($c)
  }];
  let hasVerifier = 1;
}

def MuirExec_PackedAllReduceStartOp
    : MuirExec_Op<"packed_all_reduce_start",
                  [MemoryEffects<[MemRead, MemWrite]>,
                   MuirExec_GroupOpInterface]> {
  let summary = "start the group's sum of a packed buffer (CUDA target)";
  let description = [{
    The CUDA target's exchange of a triangle chunk, formed by
    `muir-exec-to-gpu` from `triangle_all_reduce_start` once a generated
    kernel has packed the chunk's rows into `buffer`: starts the group's
    exchange of the buffer on the runtime's communication stream and
    returns a request that exactly one `packed_all_reduce_wait` on the same
    buffer completes. The buffer must not be written until then.
  }];
  let arguments = (ins Arg<MemRefRankOf<[F32], [1]>, "", [MemRead]>:$buffer,
      MuirExec_GroupAttr:$group);
  let results = (outs MuirExec_RequestType:$request);
  let assemblyFormat = "$buffer attr-dict `:` type($buffer)";
}

def MuirExec_PackedAllReduceWaitOp
    : MuirExec_Op<"packed_all_reduce_wait",
                  [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "finish a started packed sum into its buffer (CUDA target)";
  let description = [{
    Makes the step wait for `request` and writes the group's sum of the
    packed buffers, added in group-rank order (or NCCL's order without
    determinism), into `buffer`, which a generated kernel then unpacks.
  }];
  let arguments = (ins MuirExec_RequestType:$request,
      Arg<MemRefRankOf<[F32], [1]>, "", [MemRead, MemWrite]>:$buffer);
  let assemblyFormat = "$request `,` $buffer attr-dict `:` type($buffer)";
}

def MuirExec_RouteOp : MuirExec_Op<"route", [AttrSizedOperandSegments]> {
  let summary = "top-k expert routing (runtime route)";
  let description = [{
    `muir.route` on buffers: logits [T, E] (and the optional selection bias
    [E]) in; the indices [T, K], weights [T, K] and tokens-per-expert counts
    [E] out. `scoring`: 0 softmax, 1 sigmoid. One `muirrt_route` call.
    With `tokens` (a run-time count n): the rows after the first n are
    written as dropped (-1, 0) and the call routes n tokens.
  }];
  let arguments = (ins Arg<MemRefRankOf<[F32], [2]>, "", [MemRead]>:$logits,
      Arg<Optional<MemRefRankOf<[F32], [1]>>, "", [MemRead]>:$bias,
      Arg<MemRefRankOf<[I64], [2]>, "", [MemWrite]>:$indices,
      Arg<MemRefRankOf<[F32], [2]>, "", [MemWrite]>:$weights,
      Arg<MemRefRankOf<[I64], [1]>, "", [MemWrite]>:$counts,
      Optional<I64>:$tokens,
      MuirExec_ScoringAttr:$scoring, UnitAttr:$softmax_after_topk, UnitAttr:$normalize,
      I64Attr:$n_group, I64Attr:$topk_group, F64Attr:$scaling);
  let assemblyFormat = [{
    $logits (`bias` $bias^)? `into` $indices `,` $weights `,` $counts
    (`tokens` `(` $tokens^ `)`)? attr-dict `:` type($logits) (`,` type($bias)^)? `->` type($indices) `,`
    type($weights) `,` type($counts)
  }];
}

def MuirExec_GroupedGemmOp : MuirExec_Op<"grouped_gemm", [], 0, [{
      return getBf16Operands() ? "grouped_gemm_bf16" : "grouped_gemm";
    }]> {
  let summary = "per-expert GEMMs over ragged row groups (runtime)";
  let description = [{
    `muir.grouped_matmul` on buffers: one `muirrt_grouped_gemm` call
    (`bf16_operands`: `muirrt_grouped_gemm_bf16`).
  }];
  let arguments = (ins Arg<MemRefRankOf<[F32], [2]>, "", [MemRead]>:$input,
      Arg<MemRefRankOf<[F32], [3]>, "", [MemRead]>:$weights,
      Arg<MemRefRankOf<[I64], [1]>, "", [MemRead]>:$sizes,
      Arg<MemRefRankOf<[F32], [2]>, "", [MemWrite]>:$output,
      UnitAttr:$transpose_b, UnitAttr:$bf16_operands);
  let assemblyFormat = [{
    $input `,` $weights `,` $sizes `into` $output attr-dict `:`
    type($input) `,` type($weights) `,` type($sizes) `->` type($output)
  }];
}

def MuirExec_GroupedGemmAddOp
    : MuirExec_Op<"grouped_gemm_add"> {
  let summary = "output += per-expert GEMMs over ragged row groups (runtime)";
  let description = [{
    `grouped_gemm`'s product added to `output` over the groups' rows (the
    rows past their total are left as they are): one
    `muirrt_grouped_gemm_add` call. muir-exec-to-runtime-calls forms it on
    the CPU target from the sum of two `grouped_gemm` of one grouping (an
    MoE backward's rows' gradient through gate and up): the second
    accumulates into the first's buffer.
  }];
  let arguments = (ins Arg<MemRefRankOf<[F32], [2]>, "", [MemRead]>:$input,
      Arg<MemRefRankOf<[F32], [3]>, "", [MemRead]>:$weights,
      Arg<MemRefRankOf<[I64], [1]>, "", [MemRead]>:$sizes,
      Arg<MemRefRankOf<[F32], [2]>, "", [MemRead, MemWrite]>:$output,
      UnitAttr:$transpose_b, UnitAttr:$bf16_operands);
  let assemblyFormat = [{
    $input `,` $weights `,` $sizes `into` $output attr-dict `:`
    type($input) `,` type($weights) `,` type($sizes) `->` type($output)
  }];
}

def MuirExec_GroupedGemmWgradOp : MuirExec_Op<"grouped_gemm_wgrad", [], 0, [{
      return getBf16Operands() ? "grouped_gemm_wgrad_bf16"
                               : "grouped_gemm_wgrad";
    }]> {
  let summary = "per-expert weight gradients of a grouped GEMM (runtime)";
  let description = [{
    `muir.grouped_matmul_wgrad` on buffers: one `muirrt_grouped_gemm_wgrad`
    (`bf16_operands`: `muirrt_grouped_gemm_wgrad_bf16`).
  }];
  let arguments = (ins Arg<MemRefRankOf<[F32], [2]>, "", [MemRead]>:$input,
      Arg<MemRefRankOf<[F32], [2]>, "", [MemRead]>:$grad,
      Arg<MemRefRankOf<[I64], [1]>, "", [MemRead]>:$sizes,
      Arg<MemRefRankOf<[F32], [3]>, "", [MemWrite]>:$output,
      UnitAttr:$transpose_b, UnitAttr:$bf16_operands);
  let assemblyFormat = [{
    $input `,` $grad `,` $sizes `into` $output attr-dict `:`
    type($input) `,` type($grad) `,` type($sizes) `->` type($output)
  }];
}

def MuirExec_RouteGradOp : MuirExec_Op<"route_grad"> {
  let summary = "logits' gradient of top-k routing (runtime route_grad)";
  let description = [{
    `muir.route_grad` on buffers: one `muirrt_route_grad` call.
  }];
  let arguments = (ins Arg<MemRefRankOf<[F32], [2]>, "", [MemRead]>:$logits,
      Arg<MemRefRankOf<[I64], [2]>, "", [MemRead]>:$indices,
      Arg<MemRefRankOf<[F32], [2]>, "", [MemRead]>:$weights_grad,
      Arg<MemRefRankOf<[F32], [2]>, "", [MemWrite]>:$output,
      Optional<I64>:$tokens,
      MuirExec_ScoringAttr:$scoring, UnitAttr:$softmax_after_topk, UnitAttr:$normalize,
      F64Attr:$scaling);
  let assemblyFormat = [{
    $logits `,` $indices `,` $weights_grad `into` $output
    (`tokens` `(` $tokens^ `)`)? attr-dict `:`
    type($logits) `,` type($indices) `,` type($weights_grad) `->`
    type($output)
  }];
}

def MuirExec_MoeDispatchOp
    : MuirExec_Op<"moe_dispatch", [MuirExec_GroupOpInterface], 1> {
  let summary = "expert dispatch over a group (runtime moe_dispatch)";
  let description = [{
    `muir.dispatch` on buffers: one `muirrt_moe_dispatch` call (an
    all-gather of counts and a ragged all-to-all of tokens).
  }];
  let arguments = (ins Arg<MemRefRankOf<[F32], [2]>, "", [MemRead]>:$input,
      Arg<MemRefRankOf<[I64], [2]>, "", [MemRead]>:$indices,
      Arg<Optional<MemRefRankOf<[F32], [2]>>, "", [MemRead]>:$weights,
      Arg<MemRefRankOf<[F32], [2]>, "", [MemWrite]>:$output,
      Arg<MemRefRankOf<[I64], [1]>, "", [MemWrite]>:$counts,
      Arg<MemRefRankOf<[I64], [1]>, "", [MemWrite]>:$plan,
      MuirExec_GroupAttr:$group, I64Attr:$num_experts, StrAttr:$layer);
  let assemblyFormat = [{
    $input `,` $indices (`weights` $weights^)? `into` $output `,` $counts
    `,` $plan attr-dict `:` type($input) `,` type($indices)
    (`,` type($weights)^)? `->` type($output) `,` type($counts) `,`
    type($plan)
  }];
}

def MuirExec_MoePlanOp : MuirExec_Op<"moe_plan"> {
  let summary = "one rank's dispatch plan on the GPU (a group of one)";
  let description = [{
    The part of `moe_dispatch` that is not element-wise, on the CUDA target
    where a layer's experts are all on one rank (`muir-exec-to-gpu` splits
    the dispatch into this op and a generated gather kernel). From the
    routing `indices` [tokens, k] (-1: dropped): `counts[e]`, the pairs
    that chose expert e, and the plan [2 bound + 4]: `plan[r]` the pair
    (t * k + j) of expert-major row r (experts in order, then pairs in
    (token, slot) order), `plan[bound + p]` the row of pair p, -1 where
    there is none, then the tokens and pairs received and sent. Needs
    `bound >= tokens * k`. Lowers to `muirrt_cuda_moe_plan`.
  }];
  let arguments = (ins Arg<MemRefRankOf<[I64], [2]>, "", [MemRead]>:$indices,
      Arg<MemRefRankOf<[I64], [1]>, "", [MemWrite]>:$counts,
      Arg<MemRefRankOf<[I64], [1]>, "", [MemWrite]>:$plan,
      I64Attr:$num_experts, I64Attr:$bound, StrAttr:$layer);
  let assemblyFormat = [{
    $indices `into` $counts `,` $plan attr-dict `:` type($indices) `->`
    type($counts) `,` type($plan)
  }];
}

def MuirExec_MoeCombineOp
    : MuirExec_Op<"moe_combine", [MuirExec_GroupOpInterface], 1> {
  let summary = "expert combine over a group (runtime moe_combine)";
  let description = [{
    `muir.combine` on buffers: one `muirrt_moe_combine` call.
  }];
  let arguments = (ins Arg<MemRefRankOf<[F32], [2]>, "", [MemRead]>:$input,
      Arg<MemRefRankOf<[I64], [2]>, "", [MemRead]>:$indices,
      Arg<MemRefRankOf<[I64], [1]>, "", [MemRead]>:$plan,
      Arg<Optional<MemRefRankOf<[F32], [2]>>, "", [MemRead]>:$weights,
      Arg<MemRefRankOf<[F32], [2]>, "", [MemWrite]>:$output,
      MuirExec_GroupAttr:$group, I64Attr:$num_experts, StrAttr:$layer);
  let assemblyFormat = [{
    $input `,` $indices `,` $plan (`weights` $weights^)? `into` $output
    attr-dict `:` type($input) `,` type($indices) `,` type($plan)
    (`,` type($weights)^)? `->` type($output)
  }];
}

def MuirExec_MoeCombineWeightsGradOp
    : MuirExec_Op<"moe_combine_weights_grad", [MuirExec_GroupOpInterface], 1> {
  let summary = "combine's weight gradient (runtime)";
  let description = [{
    `muir.combine_weights_grad` on buffers: one
    `muirrt_moe_combine_weights_grad` call.
  }];
  let arguments = (ins Arg<MemRefRankOf<[F32], [2]>, "", [MemRead]>:$grad,
      Arg<MemRefRankOf<[F32], [2]>, "", [MemRead]>:$input,
      Arg<MemRefRankOf<[I64], [2]>, "", [MemRead]>:$indices,
      Arg<MemRefRankOf<[I64], [1]>, "", [MemRead]>:$plan,
      Arg<MemRefRankOf<[F32], [2]>, "", [MemWrite]>:$output,
      MuirExec_GroupAttr:$group, I64Attr:$num_experts, StrAttr:$layer);
  let assemblyFormat = [{
    $grad `,` $input `,` $indices `,` $plan `into` $output attr-dict `:`
    type($grad) `,` type($input) `,` type($indices) `,` type($plan) `->`
    type($output)
  }];
}

def MuirExec_MseLossOp : MuirExec_Op<"mse_loss"> {
  let summary = "half the scaled squared error and its gradient (runtime)";
  let description = [{ `muir.mse_loss` on buffers: one `muirrt_mse_loss`. }];
  let arguments = (ins Arg<MuirExec_AnyF32Buffer, "", [MemRead]>:$input,
      Arg<MuirExec_AnyF32Buffer, "", [MemRead]>:$target,
      Arg<MemRefRankOf<[F32], [1]>, "", [MemWrite]>:$loss,
      Arg<MuirExec_AnyF32Buffer, "", [MemWrite]>:$grad, F64Attr:$scale);
  let assemblyFormat = [{
    $input `,` $target `into` $loss `,` $grad attr-dict `:` type($input) `,`
    type($target) `->` type($loss) `,` type($grad)
  }];
}

def MuirExec_CapacityOp : MuirExec_Op<"capacity"> {
  let summary = "capacity-factor drops of routed pairs (runtime)";
  let description = [{ `muir.capacity` on buffers: one `muirrt_capacity`. }];
  let arguments = (ins Arg<MemRefRankOf<[I64], [2]>, "", [MemRead]>:$indices,
      Arg<MemRefRankOf<[F32], [2]>, "", [MemRead]>:$weights,
      Arg<MemRefRankOf<[I64], [2]>, "", [MemWrite]>:$kept_indices,
      Arg<MemRefRankOf<[F32], [2]>, "", [MemWrite]>:$kept_weights,
      Arg<MemRefRankOf<[I64], [1]>, "", [MemWrite]>:$counts,
      Optional<I64>:$tokens,
      F64Attr:$capacity_factor, MuirExec_DropPolicyAttr:$policy, I64Attr:$group_tokens);
  let assemblyFormat = [{
    $indices `,` $weights `into` $kept_indices `,` $kept_weights `,` $counts
    (`tokens` `(` $tokens^ `)`)? attr-dict `:` type($indices) `,` type($weights) `->` type($kept_indices)
    `,` type($kept_weights) `,` type($counts)
  }];
}

def MuirExec_TraceOp
    : MuirExec_Op<"trace", [], 0, [{ return "trace_buffer"; }]> {
  let summary = "hash a buffer for the fingerprint trace (runtime)";
  let description = [{
    Records a hash of `buffer`'s bytes for op `op_id` (`op` its name, `loc`
    its location), operand `index`, read (`output` false, before the op
    runs) or written (after). One `muirrt_trace_buffer` call.
  }];
  let arguments = (ins Arg<AnyMemRef, "", [MemRead]>:$buffer,
      I64Attr:$op_id, StrAttr:$op, StrAttr:$loc, I64Attr:$index,
      BoolAttr:$output);
  let assemblyFormat = "$buffer attr-dict `:` type($buffer)";
}

def MuirExec_GroupRankOp
    : MuirExec_Op<"group_rank", [Pure, MuirExec_GroupOpInterface], 0,
                  [{ return "dist_group_rank"; }]> {
  let summary = "this rank's index in its group";
  let arguments = (ins MuirExec_GroupAttr:$group);
  let results = (outs Index:$rank);
  let assemblyFormat = "attr-dict `:` type($rank)";
}

def MuirExec_BroadcastOp : MuirExec_CollectiveOp<"broadcast"> {
  let summary = "copy group rank `root`'s buffer to the group";
  let description = [{ `output` receives the root's `input`. }];
  let arguments = (ins Arg<MuirExec_AnyF32Buffer, "", [MemRead]>:$input,
      Arg<MuirExec_AnyF32Buffer, "", [MemWrite]>:$output,
      MuirExec_GroupAttr:$group,
      I64Attr:$root);
}


def MuirExec_AllSliceOp : MuirExec_CollectiveOp<"all_slice"> {
  let summary = "keep this rank's block along a dimension (no communication)";
  let description = [{ Block r = group rank along `slice_axis`. }];
  let arguments = (ins Arg<MuirExec_AnyF32Buffer, "", [MemRead]>:$input,
      Arg<MuirExec_AnyF32Buffer, "", [MemWrite]>:$output,
      MuirExec_GroupAttr:$group,
      I64Attr:$slice_axis);
}

#endif // MUIR_EXEC_OPS_TD
