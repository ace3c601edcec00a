//===- Pipelines.cpp - muir's pass pipelines ------------------------------===//
//
// The stages of the flow in DESIGN.md as named pipelines, so that each can
// be run on its own in muir-opt and the tools run exactly the same thing.
//
//===----------------------------------------------------------------------===//
#include "muir/Driver/Pipelines.h"
#include "muir/Conversion/Passes.h"
#include "muir/Support/EnumNames.h"
#include "muir/Support/LayerPass.h"
#include "muir/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include <set>

using namespace mlir;
using namespace mlir::muir;

void mlir::muir::buildPlannedPipeline(OpPassManager &pm,
                                      const PipelineOptions &options) {
  MuirDistributeOptions distribute;
  distribute.nsMode = options.nsMode;
  distribute.machine = options.machine;
  distribute.dpAssign = options.dpAssign;
  distribute.nsForm = options.nsForm;
  distribute.syrk = options.syrk;
  distribute.nsPrecision = options.nsPrecision;
  distribute.layoutInvariant =
      options.deterministic == Determinism::LayoutInvariant;
  pm.addPass(createMuirDistribute(distribute));
  MuirDecomposeOptimizersOptions decompose;
  decompose.probeUpdates = options.probeUpdates;
  decompose.nsPrecision = options.nsPrecision;
  pm.addPass(createMuirDecomposeOptimizers(decompose));
  if (options.batch)
    pm.addPass(createMuirBatchNewtonSchulz());
  MuirGramNewtonSchulzOptions gram;
  gram.nsForm = options.nsForm;
  gram.machine = options.machine;
  gram.syrk = options.syrk;
  pm.addPass(createMuirGramNewtonSchulz(gram));
  pm.addPass(createMuirExpandNewtonSchulz());
}

void mlir::muir::buildToExecPipeline(OpPassManager &pm,
                                     const PipelineOptions &options) {
  buildPlannedPipeline(pm, options);
  buildPlannedToExecPipeline(pm, options);
}

void mlir::muir::buildPlannedToExecPipeline(OpPassManager &pm,
                                            const PipelineOptions &options) {
  if (options.syrk) {
    pm.addPass(createMuirFormSyrk());
    if (options.fuseAllReduce) {
      MuirFuseSyrkAllReduceOptions fuse;
      fuse.chunkRows = options.chunkRows;
      fuse.machine = options.machine;
      pm.addPass(createMuirFuseSyrkAllReduce(fuse));
    }
  }
  // The dialect's folders and patterns (collectives over a group of one,
  // transposes of transposes), then common subexpressions.
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createMuirLowerToExec());
}

void mlir::muir::buildExecToLLVMPipeline(OpPassManager &pm,
                                         const TargetOptions &target) {
  if (target.target == Target::Cuda) {
    // Buffers on the device, element-wise kernels in gpu.launch, the rest
    // as muirrt_cuda_* calls; then upstream's NVVM pipeline outlines the
    // kernels, compiles them to PTX (no GPU or ptxas needed) and embeds it
    // (gpu.binary); launches go through the mgpu* functions, which the
    // CUDA runtime provides. The entry keeps bare pointers.
    pm.addPass(createMuirExecToGPU());
    MuirExecToRuntimeCallsOptions calls;
    calls.target = Target::Cuda;
    pm.addPass(createMuirExecToRuntimeCalls(calls));
    // Spelled out rather than upstream's gpu-lower-to-nvvm-pipeline, whose
    // early convert-func-to-llvm gives the entry memref descriptors: the
    // entry keeps one bare pointer per buffer, as on the CPU.
    std::string nvvm =
        "gpu-kernel-outlining,func.func(gpu-async-region),"
        "nvvm-attach-target{chip=" +
        target.cudaArch + " features=" + target.ptxFeatures +
        " O=3},"
        "gpu.module(lower-affine,convert-scf-to-cf,"
        "convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=1},canonicalize,"
        "reconcile-unrealized-casts),"
        "lower-affine,convert-scf-to-cf,expand-strided-metadata,"
        "finalize-memref-to-llvm,convert-math-to-llvm,convert-arith-to-llvm,"
        "convert-index-to-llvm,"
        "convert-func-to-llvm{use-bare-ptr-memref-call-conv=1},"
        "gpu-to-llvm{use-bare-pointers-for-host=1 "
        "use-bare-pointers-for-kernels=1},"
        "convert-cf-to-llvm,reconcile-unrealized-casts,"
        "gpu-module-to-binary{format=isa},canonicalize";
    if (failed(parsePassPipeline(nvvm, pm)))
      llvm::report_fatal_error("muir: malformed built-in CUDA pipeline");
    return;
  }
  pm.addPass(createMuirExecToRuntimeCalls());
  // The temporaries at planned offsets of one arena per function.
  pm.addPass(createMuirPlanBuffers());
  // Upstream passes by name: their C++ constructors move between releases,
  // their flags do not. The entry function's memrefs become bare pointers
  // so the runtime can call it with one pointer per tensor. bf16
  // conversions (a bf16 Newton-Schulz iterate) become integer arithmetic:
  // the same bits on every CPU, and no __truncsfbf2, which Debian 12's
  // libgcc lacks, where the target has no bf16 instructions.
  if (failed(parsePassPipeline(
          "func.func(convert-linalg-to-parallel-loops,"
          "arith-expand{include-bf16=true})",
          pm)))
    llvm::report_fatal_error("muir: malformed built-in lowering pipeline");
  // One function per loop nest: LLVM's compile time grows with the
  // functions' sizes faster than linearly.
  pm.addPass(createMuirOutlineLoops());
  if (failed(parsePassPipeline(
          "lower-affine,convert-scf-to-cf,"
          "expand-strided-metadata,"
          "finalize-memref-to-llvm{use-generic-functions=1},"
          "convert-math-to-llvm,convert-arith-to-llvm,convert-index-to-llvm,"
          "convert-func-to-llvm{use-bare-ptr-memref-call-conv=1},"
          "convert-cf-to-llvm,reconcile-unrealized-casts",
          pm)))
    llvm::report_fatal_error("muir: malformed built-in lowering pipeline");
  // The buffers in the runtime's arena (muirrt_alloc, muirrt_free).
  pm.addPass(createMuirRuntimeAllocs());
  // The parallel nests' calls share their iterations over the runtime's
  // threads.
  pm.addPass(createMuirParallelLoopCalls());
  pm.addPass(createCanonicalizerPass());
}

namespace {
/// The muir-to-exec pipeline's options: muir/Driver/Options.def's pipeline
/// options, under their names.
struct ToExecOptions : public PassPipelineOptions<ToExecOptions> {
#define MUIR_PIPELINE_OPTION(FIELD, TYPE, NAME, DEFAULT, FLAG, IDENTITY,      \
                             HELP)                                            \
  Option<TYPE> FIELD{*this, NAME, llvm::cl::desc(HELP),                       \
                     llvm::cl::init(DEFAULT)};
#define MUIR_PIPELINE_ENUM_OPTION(FIELD, TYPE, NAME, DEFAULT, VALUES,         \
                                  IDENTITY, HELP)                             \
  Option<TYPE> FIELD{*this, NAME, llvm::cl::desc(HELP),                       \
                     llvm::cl::init(DEFAULT), VALUES};
#include "muir/Driver/Options.def"

  PipelineOptions options() const {
    PipelineOptions o;
#define MUIR_PIPELINE_OPTION(FIELD, TYPE, NAME, DEFAULT, FLAG, IDENTITY,      \
                             HELP)                                            \
  o.FIELD = FIELD;
#define MUIR_PIPELINE_ENUM_OPTION(FIELD, TYPE, NAME, DEFAULT, VALUES,         \
                                  IDENTITY, HELP)                             \
  o.FIELD = FIELD;
#include "muir/Driver/Options.def"
    return o;
  }
};

/// An option's value as its flag spells it.
std::string optionText(bool value) { return value ? "true" : "false"; }
std::string optionText(int64_t value) { return std::to_string(value); }
template <typename E>
std::string optionText(E value, const llvm::cl::ValuesClass &values) {
  for (auto &[name, v] : muir::detail::EnumValueList(values).parser.values)
    if (v == static_cast<int>(value))
      return name.str();
  return std::to_string(static_cast<int>(value));
}
StringRef optionKind(bool) { return "boolean"; }
StringRef optionKind(int64_t) { return "integer"; }
} // namespace

void mlir::muir::registerMuirPassesAndPipelines() {
  registerMuirTransformsPasses();
  registerMuirConversionPasses();
  PassPipelineRegistration<ToExecOptions>(
      "muir-to-exec",
      "high-level muir IR to exec IR (distribute, decompose, batch and "
      "expand Newton-Schulz, form SYRK, bufferize)",
      [](OpPassManager &pm, const ToExecOptions &o) {
        buildToExecPipeline(pm, o.options());
      });
  PassPipelineRegistration<>(
      "muir-exec-to-llvm", "exec IR to the LLVM dialect (runtime calls, loops)",
      [](OpPassManager &pm) { buildExecToLLVMPipeline(pm); });
  PassPipelineRegistration<ToExecOptions>(
      "muir-compile-cpu", "high-level muir IR to the LLVM dialect for the CPU",
      [](OpPassManager &pm, const ToExecOptions &o) {
        buildToExecPipeline(pm, o.options());
        buildExecToLLVMPipeline(pm);
      });
}

StringRef mlir::muir::stringify(Stage stage) {
  switch (stage) {
  case Stage::High:
    return "high";
  case Stage::Planned:
    return "planned";
  case Stage::Exec:
    return "exec";
  case Stage::LLVM:
    return "llvm";
  }
  return "high";
}

SmallVector<LoweringPhase>
mlir::muir::loweringPhases(Stage from, Stage to, const PipelineOptions &options,
                           const TargetOptions &target) {
  SmallVector<LoweringPhase> phases;
  if (from == Stage::High && to >= Stage::Planned)
    phases.push_back({"high-level to planned IR", Stage::Planned,
                      [options](OpPassManager &pm) {
                        buildPlannedPipeline(pm, options);
                      }});
  if (from <= Stage::Planned && to >= Stage::Exec)
    phases.push_back({"planned to exec IR", Stage::Exec,
                      [options](OpPassManager &pm) {
                        buildPlannedToExecPipeline(pm, options);
                      }});
  if (from <= Stage::Exec && to == Stage::LLVM)
    phases.push_back({"exec IR to LLVM", Stage::LLVM,
                      [target](OpPassManager &pm) {
                        buildExecToLLVMPipeline(pm, target);
                      }});
  return phases;
}

namespace {
/// The values a pipeline option is tried with: both of a bool, and a
/// number and another.
SmallVector<bool> valuesToTry(bool) { return {false, true}; }
SmallVector<int64_t> valuesToTry(int64_t value) { return {value, value + 1}; }
} // namespace

std::optional<bool> mlir::muir::optionChangesLowering(
    MLIRContext &context, StringRef name, Stage from, Stage to,
    const PipelineOptions &options, const TargetOptions &target) {
  std::set<std::string> texts;
  auto tryWith = [&](llvm::function_ref<void(PipelineOptions &)> set) {
    PipelineOptions tried = options;
    set(tried);
    PassManager pm(&context);
    for (const LoweringPhase &phase : loweringPhases(from, to, tried, target))
      phase.build(pm);
    std::string text;
    llvm::raw_string_ostream os(text);
    pm.printAsTextualPipeline(os);
    texts.insert(text);
  };
#define MUIR_PIPELINE_OPTION(FIELD, TYPE, NAME, DEFAULT, FLAG, IDENTITY,      \
                             HELP)                                            \
  if (name == NAME)                                                           \
    for (TYPE value : valuesToTry(options.FIELD))                             \
      tryWith([&](PipelineOptions &o) { o.FIELD = value; });
#define MUIR_PIPELINE_ENUM_OPTION(FIELD, TYPE, NAME, DEFAULT, VALUES,         \
                                  IDENTITY, HELP)                             \
  if (name == NAME)                                                           \
    for (auto &entry : detail::EnumValueList(VALUES).parser.values)           \
      tryWith([&](PipelineOptions &o) {                                       \
        o.FIELD = static_cast<TYPE>(entry.second);                            \
      });
#include "muir/Driver/Options.def"
  if (texts.empty())
    return std::nullopt;
  return texts.size() > 1;
}

Stage mlir::muir::detectStage(ModuleOp module) {
  bool planned = false;
  for (Operation &op : *module.getBody()) {
    if (auto f = dyn_cast<LLVM::LLVMFuncOp>(op); f && !f.isExternal())
      return Stage::LLVM;
    if (auto f = dyn_cast<func::FuncOp>(op)) {
      if (f->hasAttr(MuirDialect::EntryAttrHelper::getNameStr()))
        return Stage::Exec;
      planned |= f->hasAttr(MuirDialect::PerRankAttrHelper::getNameStr());
    }
  }
  return planned ? Stage::Planned : Stage::High;
}

std::map<std::string, std::string>
mlir::muir::identityOf(const PipelineOptions &options,
                       const TargetOptions &target) {
  std::map<std::string, std::string> identity = {
      {"target", stringify(target.target).str()},
      {"cuda-arch", target.target == Target::Cuda ? target.cudaArch : ""}};
  // NotDefault: recorded only when it is not the default, so that states
  // saved before the option existed still resume.
  auto record = [&](StringRef name, OptionIdentity how, std::string text,
                    bool isDefault) {
    if (how == OptionIdentity::Always ||
        (how == OptionIdentity::NotDefault && !isDefault))
      identity[name.str()] = std::move(text);
  };
#define MUIR_PIPELINE_OPTION(FIELD, TYPE, NAME, DEFAULT, FLAG, IDENTITY,      \
                             HELP)                                            \
  record(NAME, OptionIdentity::IDENTITY, optionText(options.FIELD),           \
         options.FIELD == TYPE(DEFAULT));
#define MUIR_PIPELINE_ENUM_OPTION(FIELD, TYPE, NAME, DEFAULT, VALUES,         \
                                  IDENTITY, HELP)                             \
  record(NAME, OptionIdentity::IDENTITY, optionText(options.FIELD, VALUES),   \
         options.FIELD == DEFAULT);
#include "muir/Driver/Options.def"
  return identity;
}

std::string mlir::muir::checkOptions(
    const PipelineOptions &options, const TargetOptions &target, bool cudaBf16,
    llvm::function_ref<bool(StringRef)> given,
    llvm::function_ref<std::string(StringRef, StringRef)> spell) {
  if (options.chunkRows < 0)
    return spell(optionName::chunkRows, "") + " must be >= 0, got " +
           std::to_string(options.chunkRows);
  // An option that would change nothing is a mistake to point out, not to
  // ignore.
  bool cuda = target.target == Target::Cuda;
  if (options.deterministic == Determinism::LayoutInvariant) {
    if (cuda)
      return spell(optionName::deterministic, "layout-invariant") +
             " is the CPU target's (cuBLAS's bits depend on the GPU "
             "model): use " + spell("target", "cpu");
    if (options.nsMode != NewtonSchulzMode::auto_ &&
        options.nsMode != NewtonSchulzMode::duplicated)
      return spell(optionName::deterministic, "layout-invariant") +
             " runs Newton-Schulz of split matrices duplicated; " +
             spell(optionName::nsMode,
                   stringify(options.nsMode)) +
             " sums (or approximates) over the split in an order the "
             "layout sets";
  }
  if (given("cuda-arch") && !cuda)
    return spell("cuda-arch", "") + " has no effect without " +
           spell("target", "cuda");
  if (cudaBf16 && !cuda)
    return spell(optionName::cudaBf16, "") + " needs " +
           spell("target", "cuda") + " (a CPU step iterates in bf16 with " +
           spell(optionName::nsPrecision, "bf16") + ")";
  if (options.nsForm == NSFormOption::Gram &&
      options.nsPrecision == NSPrecision::bf16)
    return spell(optionName::nsForm, "gram") +
           " iterates on the Gram matrix in f64; a bf16 iterate (" +
           spell(optionName::nsPrecision, "bf16") + ", " +
           spell(optionName::cudaBf16, "") + ") takes the standard form";
  if (given(optionName::fuseAllReduce) && options.fuseAllReduce &&
      !options.syrk)
    return spell(optionName::fuseAllReduce, "") + " needs " +
           spell(optionName::syrk, "") + " (it fuses the SYRK's all-reduce); " +
           spell(optionName::syrk, "false") + " computes no SYRK";
  if (given(optionName::chunkRows) && (!options.syrk || !options.fuseAllReduce))
    return spell(optionName::chunkRows, "") + " has no effect with " +
           (!options.syrk ? spell(optionName::syrk, "false")
                          : spell(optionName::fuseAllReduce, "false"));
  return "";
}

SmallVector<std::string>
mlir::muir::optionTexts(const PipelineOptions &options) {
  SmallVector<std::string> texts;
#define MUIR_PIPELINE_OPTION(FIELD, TYPE, NAME, DEFAULT, FLAG, IDENTITY,      \
                             HELP)                                            \
  texts.push_back(std::string(NAME) + "=" + optionText(options.FIELD));
#define MUIR_PIPELINE_ENUM_OPTION(FIELD, TYPE, NAME, DEFAULT, VALUES,         \
                                  IDENTITY, HELP)                             \
  texts.push_back(std::string(NAME) + "=" + optionText(options.FIELD, VALUES));
#include "muir/Driver/Options.def"
  return texts;
}

ArrayRef<OptionInfo> mlir::muir::stepOptions() {
  static const std::vector<OptionInfo> all = [] {
    std::vector<OptionInfo> v;
#define MUIR_PIPELINE_OPTION(FIELD, TYPE, NAME, DEFAULT, FLAG, IDENTITY,      \
                             HELP)                                            \
  v.push_back({NAME, optionKind(TYPE(DEFAULT)), optionText(TYPE(DEFAULT)),    \
               {}, true, HELP});
#define MUIR_PIPELINE_ENUM_OPTION(FIELD, TYPE, NAME, DEFAULT, VALUES,         \
                                  IDENTITY, HELP)                             \
  v.push_back({NAME, "choice", optionText(DEFAULT, VALUES),                   \
               valueNames(VALUES), true, HELP});
#define MUIR_STEP_OPTION(FIELD, TYPE, NAME, DEFAULT, USER, FLAG, HELP)        \
  v.push_back({NAME, optionKind(TYPE(DEFAULT)), optionText(TYPE(DEFAULT)),    \
               {}, USER, HELP});
#define MUIR_OTHER_OPTION(NAME, KIND, DEFAULT, USER, HELP)                    \
  v.push_back({NAME, KIND, DEFAULT, {}, USER, HELP});
#include "muir/Driver/Options.def"
    // The choices of the options read by hand.
    for (OptionInfo &o : v) {
      if (o.name == "target")
        o.choices = valueNames(targetValues());
      else if (o.name == "layer-pass")
        for (const EnumName<LayerPass> &p : kLayerPasses)
          o.choices.push_back(p.name);
    }
    return v;
  }();
  return all;
}

void mlir::muir::dropMuirArgAttrs(FunctionOpInterface function) {
  for (unsigned i = 0; i < function.getNumArguments(); ++i) {
    SmallVector<NamedAttribute> kept;
    if (DictionaryAttr dict = function.getArgAttrDict(i))
      for (NamedAttribute attr : dict)
        if (!attr.getName().getValue().starts_with("muir."))
          kept.push_back(attr);
    function.setArgAttrs(i, kept);
  }
}
