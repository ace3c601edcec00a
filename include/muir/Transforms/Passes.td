//===- Passes.td - muir's transforms ------------------------*- tablegen -*-===//
//
// The passes that rewrite tensor-level IR (high or planned): distribute,
// decompose the optimizers, batch, the Newton-Schulz forms and SYRK. They
// declare MuirTransformsPassIncGen (muir/Transforms/Passes.h).
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_TRANSFORMS_PASSES_TD
#define MUIR_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def MuirDecomposeOptimizers
    : Pass<"muir-decompose-optimizers", "mlir::ModuleOp"> {
  let summary = "expand muir.muon_update into momentum, Newton-Schulz and "
                "the scaled update";
  let description = [{
    Rewrites every `muir.muon_update` into `muir.momentum`,
    `muir.newton_schulz` and `muir.apply_update`, computing the update scale
    from the matrix shape and `scale_mode`. With `probe-updates`, the
    Newton-Schulz output of each parameter is recorded by a `muir.probe`
    labelled with the parameter's `muir.name` (a row block's as
    `name[r0:r1]`), so that the runner can report its singular values;
    so is the update of each `muir.apply_update` already in the module
    (those `muir-distribute` wrote: this rank's part of the output, laid
    out as the parameter).

    Takes tensor-level IR (high or planned; `PassInput::Tensors`): on exec
    or LLVM-dialect IR it fails at the first op of that level.
  }];
  let dependentDialects = ["mlir::muir::MuirDialect",
                           "mlir::tensor::TensorDialect"];
  let options = [
    Option<"probeUpdates", "probe-updates", "bool", /*default=*/"false",
           "record each orthogonalised update with muir.probe">,
    Option<"nsPrecision", "ns-precision", "::mlir::muir::NSPrecision",
           /*default=*/"::mlir::muir::NSPrecision::f32",
           "the element type of the Newton-Schulz iterates it creates",
           "::mlir::muir::nsPrecisionValues()">
  ];
}

def MuirDistribute : Pass<"muir-distribute", "mlir::ModuleOp"> {
  let summary = "turn a step with sharded tensors into the per-rank program";
  let description = [{
    Reads each argument's `muir.shards` (`#muir.shard<kind, "axis", dim>`;
    an axis of the grid its `muir.folding` names, else of the run's grid
    (the one that `folds` no other), else of the one folding that has
    it), gives it its local shape and a `muir.split`
    (`#muir.split<@grid, ["axis"], dim>`) attribute, keeps AdamW local, and runs Newton-Schulz of matrices split
    over tensor- or data-parallel axes in one of four modes: duplicated
    (all_gather the momentum update, orthogonalise the whole matrix,
    all_slice the own block), distributed (the norm and each step's Gram
    matrix all-reduced; in the Gram form one symmetric all-reduce of the
    Gram matrix), resharded (2-D: all_to_all moves the split to the other
    dimension, distributed there, and back)
    or blockwise (local, an approximation, only when asked); `ns-mode=auto`
    lets the cost model pick among the exact ones and records its choice
    and reason (`muir.ns_mode`, `muir.ns_why`). Expert stacks split on the
    expert dimension stay local. Over
    the data-parallel axis no Newton-Schulz runs twice: replicated
    matrices are assigned to dp ranks by cost (layer-wise) and gathered
    with a ragged all_gatherv; FSDP-split matrices travel to their owner
    and back with two all_to_allv. The owner's work is an
    `scf.index_switch` on `muir.group_rank`.

    Takes tensor-level IR (high or planned; `PassInput::Tensors`): on exec
    or LLVM-dialect IR it fails at the first op of that level.
  }];
  let dependentDialects = ["mlir::muir::MuirDialect",
                           "mlir::scf::SCFDialect",
                           "mlir::tensor::TensorDialect",
                           "mlir::arith::ArithDialect"];
  let options = [
    Option<"nsMode", "ns-mode", "::mlir::muir::NewtonSchulzMode",
           /*default=*/"::mlir::muir::NewtonSchulzMode::auto_",
           "Newton-Schulz of split matrices (a `muir.ns_mode` attribute on "
           "an update wins)", "::mlir::muir::nsModeValues()">,
    Option<"machine", "machine", "::mlir::muir::Machine",
           /*default=*/"::mlir::muir::Machine::Cpu",
           "machine profile of the cost model",
           "::mlir::muir::machineValues()">,
    Option<"dpAssign", "dp-assign", "::mlir::muir::DpAssign",
           /*default=*/"::mlir::muir::DpAssign::Greedy",
           "share Newton-Schulz of matrices out among the data-parallel "
           "ranks", "::mlir::muir::dpAssignValues()">,
    Option<"dpAxis", "dp-axis", "std::string", /*default=*/"\"dp\"",
           "the grid axis of data parallelism">,
    Option<"nsPrecision", "ns-precision", "::mlir::muir::NSPrecision",
           /*default=*/"::mlir::muir::NSPrecision::f32",
           "the element type of the Newton-Schulz iterates it creates (the "
           "distributed and resharded modes' iterates stay f32)",
           "::mlir::muir::nsPrecisionValues()">,
    Option<"nsForm", "ns-form", "::mlir::muir::NSFormOption",
           /*default=*/"::mlir::muir::NSFormOption::Auto",
           "the form of distributed and resharded Newton-Schulz: the Gram "
           "matrix all-reduced every step (standard), or once (gram), or "
           "the cost model's choice (auto)", "::mlir::muir::nsFormValues()">,
    Option<"syrk", "syrk", "bool", /*default=*/"true",
           "symmetric products of the Gram form as muir.syrk">,
    Option<"layoutInvariant", "layout-invariant", "bool",
           /*default=*/"false",
           "sums in orders that do not depend on the layout: Newton-Schulz "
           "of split matrices duplicated (the distributed and blockwise "
           "modes refused); a sum over ranks that feeds the step (partial "
           "results over each rank's tokens) and capacity drops over each "
           "rank's tokens refused">
  ];
}

def MuirGramNewtonSchulz
    : Pass<"muir-gram-newton-schulz", "mlir::ModuleOp"> {
  let summary = "Newton-Schulz of wide or tall matrices on the small Gram "
                "matrix, chosen per matrix by the cost model";
  let description = [{
    For X of m x n (m < n; a tall X as its transpose, without transposing)
    every step X' = a X + (b A + c A^2) X with A = X X^T keeps X = Q X0 for
    an m x m matrix Q, and A a polynomial in A0 = X0 X0^T. This pass
    rewrites a `muir.newton_schulz` (2-D, or a batched stack) into that
    form:

    ```
    A0 = X X^T                 (SYRK of f32 X, products summed in f64)
    s  = 1 / (sqrt(trace(A0)) + eps);  A = s^2 A0  (X0 = s X normalised)
    per step k with (a, b, c):
      B = b A + c A A                              (SYRK with accumulator)
      Q = a I + B (first step), else Q = a Q + B Q (GEMM)
      A = P A P = A P^2, P^2 = B B + 2 a B + a^2 I  (SYRK, GEMM; not last)
    X = (s Q) X                (s Q rounded to f32 once, GEMM)
    ```

    The small matrices are kept in double: in f32 the Gram matrix's small
    eigenvalues (squares of X's singular values) fall below its rounding
    and the iteration amplifies the loss (docs/gram-newton-schulz.md has
    the measured errors). With `ns-form=auto` the cost model (lib/Analysis) compares
    both forms on the machine profile and keeps the standard form unless
    the Gram form is modelled at under 0.8 of its time; a square matrix
    always stays standard. The choice is recorded as `muir.ns_form` (and
    both modelled times as `muir.ns_form_cost`) on the Newton-Schulz that
    stays, or on the Gram form's last product; the op's location names its
    matrices (`param <name>`, fused for a batch), and the plan report lists
    the forms from these records.

    Takes tensor-level IR (high or planned; `PassInput::Tensors`): on exec
    or LLVM-dialect IR it fails at the first op of that level.
  }];
  let dependentDialects = ["mlir::muir::MuirDialect",
                           "mlir::arith::ArithDialect"];
  let options = [
    Option<"nsForm", "ns-form", "::mlir::muir::NSFormOption",
           /*default=*/"::mlir::muir::NSFormOption::Auto",
           "the form of every Newton-Schulz, or auto (per matrix)",
           "::mlir::muir::nsFormValues()">,
    Option<"machine", "machine", "::mlir::muir::Machine",
           /*default=*/"::mlir::muir::Machine::Cpu",
           "machine profile of the cost model",
           "::mlir::muir::machineValues()">,
    Option<"syrk", "syrk", "bool", /*default=*/"true",
           "symmetric products as muir.syrk (as muir-form-syrk would)">
  ];
}

def MuirExpandNewtonSchulz
    : Pass<"muir-expand-newton-schulz"> {
  let summary = "expand muir.newton_schulz into normalisation and matmuls";
  let description = [{
    Each step with coefficients (a, b, c) becomes A = X X^T,
    B = b A + c A A and X' = a X + B X as `muir.matmul` ops, after a
    Frobenius normalisation; a tall X iterates as A = X^T X and
    X' = a X + X B, so the Gram matrix is the small one without
    transposing. A form recorded on the Newton-Schulz (`muir.ns_form`,
    `muir.ns_form_cost`) moves to the normalisation, where the plan report
    reads it.

    Takes tensor-level IR (high or planned; `PassInput::Tensors`): on exec
    or LLVM-dialect IR it fails at the first op of that level.
  }];
  let dependentDialects = ["mlir::muir::MuirDialect"];
}

def MuirFuseSyrkAllReduce
    : Pass<"muir-fuse-syrk-all-reduce"> {
  let summary = "all-reduce only the packed triangle of a SYRK";
  let description = [{
    Replaces `muir.all_reduce` (sum) of a `muir.syrk` without accumulator
    and without other readers by `muir.syrk_all_reduce`, which sends the
    packed upper triangle (s (s + 1) / 2 floats instead of s^2) in chunks
    of rows whose exchanges overlap the next chunk's SYRK; results equal
    the unfused pair bitwise where the SYRK is exact, and within fp32
    rounding otherwise. Other reductions, products with an accumulator and
    syrk results read elsewhere are left alone.

    Takes tensor-level IR (high or planned; `PassInput::Tensors`): on exec
    or LLVM-dialect IR it fails at the first op of that level.
  }];
  let dependentDialects = ["mlir::muir::MuirDialect"];
  let options = [
    Option<"chunkRows", "syrk-chunk-rows", "int64_t", /*default=*/"0",
           "rows per chunk (0: from the machine profile, about four chunks "
           "each worth several link latencies)">,
    Option<"machine", "machine", "::mlir::muir::Machine",
           /*default=*/"::mlir::muir::Machine::Cpu",
           "machine profile for the default chunk",
           "::mlir::muir::machineValues()">
  ];
}

def MuirBatchNewtonSchulz
    : Pass<"muir-batch-newton-schulz", "mlir::ModuleOp"> {
  let summary = "orthogonalise same-shaped matrices as one batched "
                "Newton-Schulz";
  let description = [{
    Groups the `muir.newton_schulz` ops of one block (one rank's work: a
    data-parallel owner's switch case is its own block) whose matrices have
    the same m x n and whose settings (steps, schedule, coefficients, eps)
    agree; 2-D inputs join as [1, m, n], expert stacks as they are. Each
    group becomes one stack (tensor.concat), one batched Newton-Schulz and
    slices of its result, so every GEMM of the chain is one runtime call
    for the whole group. Different shapes, different settings and
    different blocks (matrices owned by different ranks) stay apart.

    Takes tensor-level IR (high or planned; `PassInput::Tensors`): on exec
    or LLVM-dialect IR it fails at the first op of that level.
  }];
  let dependentDialects = ["mlir::muir::MuirDialect",
                           "mlir::tensor::TensorDialect"];
}

def MuirFormSyrk : Pass<"muir-form-syrk"> {
  let summary = "rewrite symmetric products (X X^T, X^T X, A A of a "
                "symmetric A) to muir.syrk";
  let description = [{
    Newton-Schulz forms two symmetric products per step: the Gram matrix
    and A A in B = b A + c A A. A symmetric rank-k update computes one
    triangle (about half the flops). A matmul whose two operands are the
    same value becomes a `muir.syrk` when exactly one is transposed (X X^T;
    X^T X with `transpose`), or when neither is and the value is known
    symmetric (a syrk, such a product, or an all_reduce of one). The
    accumulator joins with its beta only when it is symmetric itself;
    otherwise, and for every other product (B X + a X), the GEMM stays.

    Takes tensor-level IR (high or planned; `PassInput::Tensors`): on exec
    or LLVM-dialect IR it fails at the first op of that level.
  }];
  let dependentDialects = ["mlir::muir::MuirDialect"];
}

#endif // MUIR_TRANSFORMS_PASSES_TD
