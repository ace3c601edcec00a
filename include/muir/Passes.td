//===- Passes.td - muir passes -----------------------------*- tablegen -*-===//
#ifndef MUIR_PASSES_TD
#define MUIR_PASSES_TD

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

def MuirElementwiseToLinalg
    : Pass<"muir-elementwise-to-linalg", "mlir::ModuleOp"> {
  let summary = "muir's element-wise ops as linalg.generic on tensors";
  let description = [{
    Momentum, the Muon update, AdamW, add, SwiGLU (and its gradient) and
    add_diagonal become `linalg.generic` ops on tensors (identity maps,
    parallel iterators, `tensor.empty` inits that are never read), and
    `arith` ops on whole tensors take upstream's element-wise-to-linalg
    patterns, so linalg's tensor transforms (`linalg-fuse-elementwise-ops`)
    apply. `muir-lower-to-exec` applies the same patterns first.

    Takes tensor-level IR (high or planned; `PassInput::Tensors`): on exec
    or LLVM-dialect IR it fails at the first op of that level.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect",
                           "mlir::tensor::TensorDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::math::MathDialect"];
}

def MuirLowerToExec : Pass<"muir-lower-to-exec", "mlir::ModuleOp"> {
  let summary = "bufferize tensor-level muir functions into exec IR";
  let description = [{
    Turns each function whose arguments carry `muir.name` into an exec
    function marked `muir.entry`: tensor arguments become memrefs that the
    function updates in place (a result annotated `muir.updates = "name"`
    is written into that argument's buffer), intermediate tensors become
    `memref.alloc`s freed at the end of their block, linear algebra becomes
    `muir_exec` runtime ops, and element-wise math (first turned into
    `linalg.generic` on tensors, as `muir-elementwise-to-linalg` does)
    becomes the same generics on buffers. Newton-Schulz must have been
    expanded.
    Collectives become `muir_exec` collectives over the same group
    (`#muir_exec.group`; a group of one: a copy, though the pipeline's
    canonicalization folds those away first).
    The bufferization is upstream's one-shot module bufferize, with the
    muir ops' BufferizableOpInterface models; the function boundary (the
    updates), the runtime calls computed in place and the frees are
    muir's, around it.

    Takes planned IR (`PassInput::Planned`): a `muir.muon_update`, a
    `muir.newton_schulz`, sharded arguments not distributed, exec or
    LLVM-dialect IR are errors naming the pass to run first.
  }];
  let dependentDialects = ["mlir::muir_exec::MuirExecDialect",
                           "mlir::bufferization::BufferizationDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::tensor::TensorDialect",
                           "mlir::linalg::LinalgDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::math::MathDialect",
                           "mlir::func::FuncDialect",
                           "mlir::scf::SCFDialect"];
}

def MuirExecToRuntimeCalls
    : Pass<"muir-exec-to-runtime-calls", "mlir::ModuleOp"> {
  let summary = "turn muir_exec ops into calls of the runtime's C API";
  let description = [{
    Each `muir_exec` op becomes a `func.call` of its `muirrt_*` function
    with raw pointers (`memref.extract_aligned_pointer_as_index`) and the
    static sizes as integers; declarations are added once per module.
    A group becomes the runtime's axes mask, numbered by the grid's folding
    index, so the module needs one run grid (one that `folds` no other).
    `!muir_exec.request`s become the runtime's `i64` handles, also where a
    loop carries them (upstream's SCF structural type conversion).

    Takes exec IR (`PassInput::Exec`): a muir op other than `muir.grid`, a
    step function on tensors or LLVM-dialect IR is an error naming
    muir-lower-to-exec.
  }];
  let options = [
    Option<"target", "target", "::mlir::muir::Target",
           /*default=*/"::mlir::muir::Target::Cpu",
           "the runtime called (cuda: device pointers; ops without a CUDA "
           "runtime call are errors)", "::mlir::muir::targetValues()">
  ];
  let dependentDialects = ["mlir::func::FuncDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::gpu::GPUDialect",
                           "mlir::LLVM::LLVMDialect"];
}

def MuirExecToGPU : Pass<"muir-exec-to-gpu", "mlir::ModuleOp"> {
  let summary = "put a step's buffers on the device and its element-wise "
                "kernels into gpu.launch";
  let description = [{
    For the CUDA target, before `muir-exec-to-runtime-calls{target=cuda}`:
    `memref.alloc`/`dealloc` become `gpu.alloc`/`dealloc`, `memref.copy`
    becomes `gpu.memcpy`, and every element-wise `linalg.generic` (identity
    maps, one shape) a `gpu.launch` of one thread per element over flat
    views of its operands (blocks of 256 threads). `math.sqrt` on f32 in a
    kernel becomes PTX's correctly rounded `sqrt.rn.f32`. Host loads or
    stores of buffers, and other linalg ops, are errors.

    Takes exec IR (`PassInput::Exec`): a muir op other than `muir.grid`, a
    step function on tensors or LLVM-dialect IR is an error naming
    muir-lower-to-exec.
  }];
  let dependentDialects = ["mlir::gpu::GPUDialect",
                           "mlir::scf::SCFDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::LLVM::LLVMDialect"];
}

def MuirTraceBuffers : Pass<"muir-trace-buffers", "mlir::ModuleOp"> {
  let summary = "record a hash of every buffer each exec op reads and writes";
  let description = [{
    For fingerprint tracing (muir-run --trace-fingerprints): around every
    `muir_exec` op, `linalg.generic` kernel and `memref.copy` of the entry
    function, a `muir_exec.trace` of each buffer it reads (before it runs)
    and of each it writes (after), tagged with the op's id, name, location,
    operand index and shape. The runtime hashes the bytes and keeps one
    record per execution.

    Takes exec IR (`PassInput::Exec`): a muir op other than `muir.grid`, a
    step function on tensors or LLVM-dialect IR is an error naming
    muir-lower-to-exec.
  }];
  let dependentDialects = ["mlir::muir_exec::MuirExecDialect"];
}

def MuirOutlineLoops : Pass<"muir-outline-loops", "mlir::ModuleOp"> {
  let summary = "move each top-level loop nest of the CPU step into a "
                "function of its own";
  let description = [{
    After `convert-linalg-to-parallel-loops` on the CPU target: every
    `scf.for` or `scf.parallel` directly in the body of a function with a
    body (the step) becomes a call of a private function
    (`<function>_loop<N>`, LLVM's `noinline`) that
    holds the loop nest, taking the values the nest uses from outside as
    arguments (constants are copied in). LLVM optimises one function at a
    time, and its loop passes (induction-variable simplification above
    all) cost more than linearly in the size of a function: a step of many
    tensors as one function took most of its compile time there.

    Code per shape class and kind of nest, not per tensor: a nest equal to
    one outlined before (the same argument types, the same ops and
    constants) calls that function. The scalar arithmetic that computes a
    captured scalar from the step's own scalars (a kernel's coefficients
    from the run-time hyperparameters: pure ops on scalars in the same
    block, at most 256 per nest) is copied into the function, so that the
    step holds one call per nest. A view the nest only loads from and
    stores to (a slot of a batch buffer, a strided slice: any layout other
    than the plain row-major one, static sizes and strides) is passed as
    its base buffer (`memref<f32>`) and its offset
    (`memref.extract_strided_metadata` at the call,
    `memref.reinterpret_cast` in the function), so that the nests over
    the slots of a batch share one function. A loop with results, or one
    using another memref the bare-pointer calling convention cannot pass,
    stays.

    An `scf.parallel` nest (a `linalg.generic`'s parallel dimensions, from
    `convert-linalg-to-parallel-loops`) of constant bounds and at least
    2^18 innermost iterations becomes a function that also takes the range
    [lo, hi) of its outer dimension's iterations (two `index` arguments
    after the others, attribute `muir.parallel_range` = the iteration
    count), called with the whole range; `muir-parallel-loop-calls` shares
    it out over threads.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::func::FuncDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect"];
}

def MuirParallelLoopCalls
    : Pass<"muir-parallel-loop-calls", "mlir::ModuleOp"> {
  let summary = "share out the outlined parallel loop nests over the "
                "runtime's threads";
  let description = [{
    After the lowering to the LLVM dialect, on the CPU target: each call of
    a function that `muir-outline-loops` made from an `scf.parallel` nest
    (attribute `muir.parallel_range`: its last two arguments are the range
    [lo, hi) of the outer dimension's iterations) becomes a call of the
    runtime's `muirrt_parallel_range(fn, ctx, count)`, which runs
    `fn(ctx, lo, hi)` on parts of [0, count) on its threads
    (`muirrt_blas_threads`). `fn` is a trampoline, `<callee>_range`, that
    loads the call's arguments from a struct the caller stores on its
    stack (`llvm.alloca` in its entry block) and calls the nest with the
    part's range. The iterations of an `scf.parallel` are independent, so
    the results are those of one thread, bit for bit.
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

#endif // MUIR_PASSES_TD
