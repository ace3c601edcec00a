//===- Pipelines.h - muir's pipelines, stages and options -------*- C++ -*-===//
//
// The compile pipeline's options (Options.def), the stages muir-compile
// writes, the pipelines between them and the dialects muir's tools
// register: above the transforms and the conversions, which know nothing of
// them.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_DRIVER_PIPELINES_H
#define MUIR_DRIVER_PIPELINES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Pass/PassManager.h"
#include "muir/Analysis/CostModel.h"
#include "muir/Support/Determinism.h"
#include "muir/Support/Limits.h"
#include "muir/Target/Target.h"

#include <functional>
#include <map>
#include <string>

namespace mlir::muir {

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

/// Options of the compile pipeline (muir/Driver/Options.def declares
/// them).
struct PipelineOptions {
#define MUIR_PIPELINE_OPTION(FIELD, TYPE, NAME, DEFAULT, FLAG, IDENTITY,      \
                             HELP)                                            \
  TYPE FIELD = DEFAULT;
#define MUIR_PIPELINE_ENUM_OPTION(FIELD, TYPE, NAME, DEFAULT, VALUES,         \
                                  IDENTITY, HELP)                             \
  TYPE FIELD = DEFAULT;
#include "muir/Driver/Options.def"
};

/// Each pipeline and step option's name, by its field (Options.def), for
/// the messages that name an option: `optionName::chunkRows` is
/// "syrk-chunk-rows".
namespace optionName {
#define MUIR_PIPELINE_OPTION(FIELD, TYPE, NAME, DEFAULT, FLAG, IDENTITY,      \
                             HELP)                                            \
  inline constexpr const char FIELD[] = NAME;
#define MUIR_PIPELINE_ENUM_OPTION(FIELD, TYPE, NAME, DEFAULT, VALUES,         \
                                  IDENTITY, HELP)                             \
  inline constexpr const char FIELD[] = NAME;
#define MUIR_STEP_OPTION(FIELD, TYPE, NAME, DEFAULT, USER, FLAG, HELP)        \
  inline constexpr const char FIELD[] = NAME;
#include "muir/Driver/Options.def"
} // namespace optionName

/// How a saved state's identity records a pipeline option: never (it
/// changes no bits), always, or only when it is not the default (an
/// option newer than states saved without it).
enum class OptionIdentity { Never, Always, NotDefault };

/// A step option as the C API describes it (muir_option_info): every
/// entry of muir/Driver/Options.def, in its order.
struct OptionInfo {
  StringRef name;
  StringRef kind; ///< "boolean", "integer", "choice" or "string"
  std::string defaultText;
  SmallVector<StringRef> choices; ///< a choice's names
  bool user;                      ///< a binding's user sets it
  StringRef help;
};
ArrayRef<OptionInfo> stepOptions();

/// High-level IR -> planned IR (distribute, decompose, batch, Gram form,
/// expand Newton-Schulz): the per-rank program, still on tensors.
void buildPlannedPipeline(OpPassManager &pm, const PipelineOptions &options);
/// High-level IR -> exec IR (the planned pipeline, then the next).
void buildToExecPipeline(OpPassManager &pm, const PipelineOptions &options);
/// Planned IR -> exec IR (SYRK, its fused all-reduce, CSE, bufferize).
void buildPlannedToExecPipeline(OpPassManager &pm,
                                const PipelineOptions &options);
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
/// What is wrong with a combination of options, or "": the same rules for
/// the tools' flags and the C API's items. `given(name)` says whether an
/// option was given explicitly; `spell(name, value)` writes one as its front
/// end reads it ("--ns-form=gram", "ns-form=gram"; value "" for the option
/// alone).
std::string
checkOptions(const PipelineOptions &options, const TargetOptions &target,
             bool cudaBf16, llvm::function_ref<bool(StringRef)> given,
             llvm::function_ref<std::string(StringRef, StringRef)> spell);

/// Every pipeline option as "name=value", in Options.def's order (the
/// compiled-step cache's key).
SmallVector<std::string> optionTexts(const PipelineOptions &options);

/// Exec IR -> LLVM dialect (runtime calls, loops, LLVM conversion). For
/// cuda: buffers on the device, element-wise kernels as PTX embedded in the
/// module (gpu.binary), muirrt_cuda_* calls.
void buildExecToLLVMPipeline(OpPassManager &pm,
                             const TargetOptions &target = {});

/// One phase of lowering IR from one stage to a later one: its name (for
/// timing reports), the stage it reaches, and the pipeline that does it.
struct LoweringPhase {
  StringRef name;
  Stage reaches;
  std::function<void(OpPassManager &)> build;
};
/// The phases that lower IR of stage `from` to `to`, in order (none when
/// `to` is not later): the same pipelines whatever the stage the IR starts
/// at, so that IR read back lowers as the description does.
SmallVector<LoweringPhase> loweringPhases(Stage from, Stage to,
                                          const PipelineOptions &options,
                                          const TargetOptions &target);
/// Whether the pipeline option `name` (Options.def) changes what lowering
/// `from` to `to` runs: the phases' passes, as text, differ between its
/// values (every other option as in `options`). Read off the pipelines
/// themselves, not a list beside them. Nothing for a name that is no
/// pipeline option.
std::optional<bool> optionChangesLowering(MLIRContext &context,
                                          StringRef name, Stage from,
                                          Stage to,
                                          const PipelineOptions &options,
                                          const TargetOptions &target);

/// Drops the muir.* attributes of a function's arguments (read by the
/// tools from the exec IR; LLVM IR has no meaning for them).
void dropMuirArgAttrs(FunctionOpInterface function);

/// The dialects a step's IR holds at any stage (what the step library
/// reads and the pipelines produce), with the interfaces and extensions its
/// pipelines use (bufferization, the conversions to LLVM, the NVVM target)
/// and their translations to LLVM IR: what the step library registers.
void registerStepDialects(DialectRegistry &registry);
/// What muir's tools (muir-opt, muir-compile, muir-lsp-server,
/// muir-reduce) register: every upstream dialect, extension and
/// translation, so that they read any IR, and the step's.
void registerMuirDialects(DialectRegistry &registry);

/// Registers every muir pass and the pipelines `muir-to-exec`,
/// `muir-exec-to-llvm` and `muir-compile-cpu` (both in a row).
void registerMuirPassesAndPipelines();

} // namespace mlir::muir

#endif // MUIR_DRIVER_PIPELINES_H
