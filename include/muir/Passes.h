//===- Passes.h - muir passes and pipelines ---------------------*- C++ -*-===//
#ifndef MUIR_PASSES_H
#define MUIR_PASSES_H

#include "Muir/MuirDialect.h"
#include "MuirExec/MuirExecDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "muir/Analysis/CostModel.h"
#include "muir/Support/Limits.h"

#include <map>
#include <string>

namespace mlir::muir {

/// The backend a step is compiled for.
enum class Target { Cpu, Cuda };
StringRef stringify(Target target);
/// The values the target flags and pass options accept.
llvm::cl::ValuesClass targetValues();
/// The values the ns-precision flags and pass options accept.
llvm::cl::ValuesClass nsPrecisionValues();

#define GEN_PASS_DECL
#include "muir/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "muir/Passes.h.inc"

/// The stages muir-compile writes that are MLIR modules.
enum class Stage {
  High,    ///< global shapes, muir ops (a per-rank program written as such too)
  Planned, ///< distributed by muir-distribute (muir.per_rank), tensors
  Exec,    ///< buffers and runtime calls (an entry with muir.entry)
  LLVM     ///< the LLVM dialect
};
StringRef stringify(Stage stage);
/// The stage of `module`, from what it holds.
Stage detectStage(ModuleOp module);

/// Options of the compile pipeline.
struct PipelineOptions {
  bool probeUpdates = false;
  NSModeOption nsMode = NSModeOption::Auto; ///< muir-distribute's ns-mode
  Machine machine = Machine::Cpu; ///< the cost model's machine profile
  DpAssign dpAssign = DpAssign::Greedy; ///< muir-distribute's dp-assign
  bool syrk = true; ///< run muir-form-syrk (symmetric products as SYRK)
  bool batch = true; ///< run muir-batch-newton-schulz
  bool fuseAllReduce = true; ///< run muir-fuse-syrk-all-reduce (with syrk)
  int64_t chunkRows = 0;     ///< its syrk-chunk-rows (0: the cost model)
  NSFormOption nsForm = NSFormOption::Auto; ///< muir-gram-newton-schulz's
  /// The element type of the Newton-Schulz iterates (ns-precision).
  NSPrecision nsPrecision = NSPrecision::f32;
};

/// High-level IR -> planned IR (distribute, decompose, batch, Gram form,
/// expand Newton-Schulz): the per-rank program, still on tensors.
void buildPlannedPipeline(OpPassManager &pm, const PipelineOptions &options);
/// High-level IR -> exec IR (the planned pipeline, SYRK, CSE, bufferize).
void buildToExecPipeline(OpPassManager &pm, const PipelineOptions &options);
/// The backend the exec IR is lowered for.
struct TargetOptions {
  Target target = Target::Cpu;
  std::string cudaArch = "sm_90"; ///< the PTX target of the CUDA kernels
  std::string ptxFeatures = "+ptx80"; ///< the PTX ISA version to emit
};

/// The options that change a step's program or its bits, by the tools'
/// flag names, for a saved state's identity (muir-run and the step library
/// alike).
std::map<std::string, std::string> identityOf(const PipelineOptions &options,
                                              const TargetOptions &target);

/// Exec IR -> LLVM dialect (runtime calls, loops, LLVM conversion). For
/// cuda: buffers on the device, element-wise kernels as PTX embedded in the
/// module (gpu.binary), muirrt_cuda_* calls.
void buildExecToLLVMPipeline(OpPassManager &pm,
                             const TargetOptions &target = {});

/// Drops the muir.* attributes of a function's arguments (read by the
/// tools from the exec IR; LLVM IR has no meaning for them).
void dropMuirArgAttrs(FunctionOpInterface function);

/// muir's element-wise ops (optimizer math, add, SwiGLU, the diagonal
/// shift) and arith ops on whole tensors as linalg.generic on tensors.
void populateElementwiseToLinalgPatterns(RewritePatternSet &patterns);
/// Applies those patterns once over `root` (no folding, no dead-code
/// removal).
void applyElementwiseToLinalg(Operation *root);

/// The tensor-level rewrites behind the passes of the same names, for any
/// pattern driver (the passes apply them in one walk; the walk driver skips
/// unreachable blocks, and muir's functions have one block):
/// muir.muon_update as momentum, Newton-Schulz and apply_update, probing
/// each Newton-Schulz output with `probeUpdates` in slots numbered from
/// `nextSlot` on, in the order the driver visits the updates; `nextSlot`
/// must outlive the pattern set, which advances it; the Newton-Schulz ops
/// iterate in `precision`.
void populateDecomposeOptimizersPatterns(RewritePatternSet &patterns,
                                         bool probeUpdates, int64_t &nextSlot,
                                         NSPrecision precision);
/// Each Newton-Schulz op in the Gram or the standard form (`nsForm`, or
/// the cost model for `machine` with auto), the choice recorded on the op
/// it leaves (the Newton-Schulz op, or the Gram form's last product).
void populateGramNewtonSchulzPatterns(RewritePatternSet &patterns,
                                      Machine machine, NSFormOption nsForm,
                                      bool syrk);
/// Newton-Schulz as its normalisation and three matmuls per step.
void populateExpandNewtonSchulzPatterns(RewritePatternSet &patterns);
/// Symmetric products as muir.syrk.
void populateFormSyrkPatterns(RewritePatternSet &patterns);
/// all_reduce(sum) of a SYRK as muir.syrk_all_reduce, in chunks of
/// `chunkRows` rows (> 0; 0: the cost model's for `machine`), leaving the
/// SYRK unused.
void populateFuseSyrkAllReducePatterns(RewritePatternSet &patterns,
                                       Machine machine, int64_t chunkRows);

/// The dialects muir's tools read and produce: every upstream dialect and
/// extension (what the pipelines emit) plus muir and muir_exec, with the
/// muir ops' bufferization models.
void registerMuirDialects(DialectRegistry &registry);

/// The BufferizableOpInterface models of the muir ops that compute tensors:
/// each bufferizes to its muir_exec op, its results fresh allocations
/// (one-shot bufferize in muir-lower-to-exec).
void registerBufferizableOpInterfaceExternalModels(DialectRegistry &registry);

/// A copy between buffers: memref.copy (a memcpy) when both are
/// contiguous, else an element-wise linalg.copy (loops after lowering, with
/// no runtime library behind them).
void copyBuffer(OpBuilder &b, Location loc, Value from, Value to);

/// Registers every muir pass and the pipelines `muir-to-exec`,
/// `muir-exec-to-llvm` and `muir-compile-cpu` (both in a row).
void registerMuirPassesAndPipelines();

} // namespace mlir::muir

#endif // MUIR_PASSES_H
