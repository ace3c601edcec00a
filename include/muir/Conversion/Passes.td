//===- Passes.td - muir's conversions -----------------------*- tablegen -*-===//
//
// The passes that lower planned IR to exec IR and exec IR towards LLVM:
// element-wise ops to linalg, muir-lower-to-exec, the runtime calls, the GPU
// kernels, tracing and the outlined loops (muir/Conversion/Passes.h).
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_CONVERSION_PASSES_TD
#define MUIR_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

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

def MuirPlanBuffers : Pass<"muir-plan-buffers", "mlir::ModuleOp"> {
  let summary = "a CPU step's static temporaries at planned offsets of one "
                "arena per function";
  let description = [{
    After `muir-exec-to-runtime-calls` on the CPU target, which frees each
    buffer right after its last use: every `memref.alloc` of a function
    with a static shape and an identity layout, freed once in its own
    block, nested (if at all) only in `scf.for`, `scf.if`, `scf.while` or
    `scf.execute_region`, and handed on by nothing but views, lives from
    the position of its allocation's ancestor in the function's entry
    block to its free's (a loop's buffers for the whole loop op). Buffers
    whose lives overlap get disjoint bytes of one `memref<Nxi8>` allocated
    first and freed before the return, the others share bytes: each
    allocation becomes a `memref.view` at its offset and its free goes.
    Offsets are chosen largest buffer first, each at the lowest offset
    (aligned to 64 bytes, or the allocation's alignment) clear of the
    placed buffers it overlaps, so the arena is about the bytes the
    function has live at once (an MoE layer's recompute backward: 161 MB
    where a first fit in allocation order needed 193 MB). The function
    records the arena's size as `muir.arena_bytes`. A dynamic shape, a
    buffer that escapes its block, and one freed twice are left as they
    were.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect"];
}

def MuirRuntimeAllocs
    : Pass<"muir-runtime-allocs", "mlir::ModuleOp"> {
  let summary = "the CPU step's heap allocations through the runtime's "
                "arena";
  let description = [{
    After the lowering to the LLVM dialect, on the CPU target, where
    `finalize-memref-to-llvm{use-generic-functions=1}` lowered every
    `memref.alloc` and `memref.dealloc` to the generic
    `_mlir_memref_to_llvm_alloc` and `_mlir_memref_to_llvm_free`: those
    become the runtime's `muirrt_alloc` and `muirrt_free`
    (muir-rt/Entries.def), which place blocks of 64 KiB and more first fit
    in one address range per process whose pages stay resident between
    runs (the CUDA runtime places its temporaries in its arena the same
    way): a step's memory is then what it has live at once, with no page
    faults at the next run, and the process's malloc is left as it is. The
    generic names are left to other code of the process. An aligned
    allocation (`use-aligned-alloc`) or a declaration of another type is an
    error.
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

#endif // MUIR_CONVERSION_PASSES_TD
