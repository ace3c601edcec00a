//===- muir-compile.cpp - training-step descriptions to muir IR -----------===//
//
// Reads a description (YAML/JSON) or a Hugging Face config.json, applies a
// layout, builds the high-level IR and lowers it to the requested stage;
// prints a plan report (readable table, optional JSON). Or reads muir IR
// (.mlir) of any stage it writes and lowers it from there (no report).
// Every pipeline runs under MLIR's pass-manager flags (--mlir-*). Output
// files are written only when everything succeeded.
//
//===----------------------------------------------------------------------===//
#include "muir/Report/PlanReport.h"
#include "muir/Analysis/StepCost.h"
#include "muir/Import/Description.h"
#include "muir/Driver/PipelineFlags.h"
#include "muir/Driver/Pipelines.h"
#include "muir/Runner/Step.h"
#include "muir/Support/Files.h"
#include "muir/Support/Nesting.h"
#include "muir/Support/VersionPrinter.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/AsmState.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/Timing.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/SubtargetFeature.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

#include <chrono>
#include <optional>
#include <set>
#include <utility>

using namespace mlir;
namespace cl = llvm::cl;

static cl::opt<std::string>
    inputFile(cl::Positional,
              cl::desc("[description.yaml|.json|step.mlir (IR of any stage "
                       "muir-compile writes)]"),
                                      cl::init(""),
    cl::cat(muir::muirFlagCategory()));
static cl::opt<std::string>
    hfConfig("hf", cl::desc("derive the description from a Hugging Face "
                            "config.json"),
             cl::value_desc("config.json"), cl::init(""),
    cl::cat(muir::muirFlagCategory()));
static cl::opt<std::string>
    layout("layout",
           cl::desc("grid axes, e.g. \"dp=8,tp=2,ep=8\" (ep/etp fold over "
                    "the attention devices) or \"dp=8,tp=2;moe:edp=2,ep=8\"; "
                    "replaces the description's grid"),
           cl::init(""),
    cl::cat(muir::muirFlagCategory()));
enum class Emit { Description, High, Planned, Exec, LLVM, PTX, Object, None };
MUIR_ENUM_FLAG(Emit)
static cl::opt<Emit> emit(
    "emit", cl::desc("IR stage to write"), cl::init(Emit::Exec),
    cl::values(clEnumValN(Emit::Description, "description",
                          "the description itself as YAML (after --hf and "
                          "--layout)"),
               clEnumValN(Emit::High, "high", "high-level muir IR"),
               clEnumValN(Emit::Planned, "planned",
                          "after optimizer decomposition and Newton-Schulz "
                          "expansion (per-rank program, tensors)"),
               clEnumValN(Emit::Exec, "exec", "exec IR (buffers, runtime "
                                              "calls)"),
               clEnumValN(Emit::LLVM, "llvm", "LLVM dialect (host code; with "
                                              "--target=cuda the kernels' "
                                              "PTX embedded)"),
               clEnumValN(Emit::PTX, "ptx", "the PTX of the generated "
                                            "kernels (--target=cuda)"),
               clEnumValN(Emit::Object, "object",
                          "an object file (PIC, for --march) of the step, with "
                          "muir_step_packed(void **args) and the argument "
                          "list muir_step_manifest (see docs)"),
               clEnumValN(Emit::None, "none", "no IR, only the report")),
    cl::cat(muir::muirFlagCategory()));
static cl::opt<std::string> outputFile("o", cl::desc("output file ('-' for "
                                                     "stdout)"),
                                       cl::value_desc("FILE"), cl::init("-"),
    cl::cat(muir::muirFlagCategory()));
static cl::opt<std::string>
    reportFile("report", cl::desc("write the plan report as JSON ('-' for "
                                  "stdout)"),
               cl::value_desc("FILE"), cl::init(""),
    cl::cat(muir::muirFlagCategory()));
static muir::PipelineFlags flags;
static cl::opt<std::string> march(
    "march",
    cl::desc("with --emit=object, the CPU the object's host code is "
             "optimised for: 'native' (this machine's CPU and features, as "
             "muir-run's JIT), 'x86-64' (any), or an LLVM CPU name such as "
             "'znver4' or 'sapphirerapids'"),
    cl::value_desc("CPU"), cl::init("native"),
    cl::cat(muir::muirFlagCategory()));
static cl::opt<bool> quiet("quiet", cl::desc("no readable report table"),
                           cl::init(false),
    cl::cat(muir::muirFlagCategory()));
static cl::opt<std::string>
    layerName("layer",
              cl::desc("compile the description's MoE layer NAME as a pass "
                       "a model calls (docs/step-library.md) instead of "
                       "the optimizer step; no plan report"),
              cl::value_desc("NAME"), cl::init(""),
    cl::cat(muir::muirFlagCategory()));
static cl::opt<muir::LayerPass> layerPass("layer-pass",
                                          cl::desc("with --layer: which pass"),
                                          cl::init(muir::LayerPass::Forward),
                                          muir::enumValues(muir::kLayerPasses),
                                          cl::cat(muir::muirFlagCategory()));
static cl::opt<bool> timing("timing",
                            cl::desc("print wall time per phase to stderr"),
                            cl::init(false),
    cl::cat(muir::muirFlagCategory()));
static cl::opt<bool> verifyEach(
    "verify-each",
    cl::desc("verify the IR after every pass (default: after each phase of "
             "the lowering, its last pass's result; muir-opt verifies after "
             "every pass)"),
    cl::init(false), cl::cat(muir::muirFlagCategory()));

/// When the compile started (after the flags were read).
static std::chrono::steady_clock::time_point start;

/// With --timing, when a phase of the compile ended.
static void phase(StringRef name) {
  if (timing)
    llvm::errs() << "muir-compile: " << name << " at "
                 << std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - start)
                        .count()
                 << " s\n";
}

static int fail(const Twine &msg) {
  llvm::WithColor::error(llvm::errs(), "muir-compile") << msg << "\n";
  return 1;
}

/// Whether the input is muir IR (.mlir) rather than a description.
static bool irInput() {
  return llvm::sys::path::extension(inputFile) == ".mlir";
}

/// --emit's value as the flag spells it.
static StringRef emitName() {
  const auto &parser = emit.getParser();
  for (unsigned n = 0; n < parser.getNumOptions(); ++n)
    if (static_cast<const cl::OptionValue<Emit> &>(parser.getOptionValue(n))
            .getValue() == emit)
      return parser.getOption(n);
  return "";
}

/// The IR stage --emit writes (LLVM for llvm, ptx and object); none for
/// description and none.
static std::optional<muir::Stage> emitStage() {
  switch (emit) {
  case Emit::High:
    return muir::Stage::High;
  case Emit::Planned:
    return muir::Stage::Planned;
  case Emit::Exec:
    return muir::Stage::Exec;
  case Emit::LLVM:
  case Emit::PTX:
  case Emit::Object:
    return muir::Stage::LLVM;
  case Emit::Description:
  case Emit::None:
    return std::nullopt;
  }
  return std::nullopt;
}

/// The flags that need a description, refused with IR input: what only a
/// description has (its grid, its MoE layers, the plan report computed
/// from it). "" when none is given.
static std::string checkIRFlags() {
  if (layout.getNumOccurrences())
    return "--layout applies to a description, not to IR (" + inputFile +
           " is laid out already): give the description with --layout";
  if (!layerName.empty())
    return "--layer applies to a description, not to IR: give the "
           "description holding the MoE layer";
  if (!reportFile.empty())
    return "--report: the plan report is computed from a description, not "
           "from IR: give the description, or leave the flag out";
  if (emit == Emit::Description)
    return "--emit=description: IR cannot be written back as a "
           "description; give an IR stage (--emit=high, planned, exec, llvm, "
           "ptx or object)";
  if (emit == Emit::None)
    return "--emit=none writes only the plan report, which needs a "
           "description; give an IR stage (--emit=high, planned, exec, llvm, "
           "ptx or object)";
  return "";
}

/// The flags' combinations that cannot run, and every path, checked at
/// once before any work: no output overwrites another or what is read
/// (muir/Support/Files.h). "" when the compile can go on.
static std::string checkFlags() {
  if (std::string bad = flags.check(); !bad.empty())
    return bad;
  if (emit == Emit::PTX && flags.target != muir::Target::Cuda)
    return "--emit=ptx needs --target=cuda";
  if (emit == Emit::Object && outputFile == "-")
    return "--emit=object needs -o FILE";
  if (layerPass.getNumOccurrences() && layerName.empty())
    return "--layer-pass needs --layer NAME";
  if (!layerName.empty() &&
      (!reportFile.empty() || emit == Emit::None || emit == Emit::Description))
    return "--layer compiles an MoE layer, which has no plan report: "
           "give --emit=high, planned, exec, llvm, ptx or object, "
           "without --report";
  if (layout.getNumOccurrences() && layout.empty())
    return "--layout is empty: give the grid's axes, e.g. "
           "--layout dp=2,tp=2 (or leave the flag out to keep the "
           "description's grid)";
  // Every path, checked at once before any work: no output overwrites
  // another or what is read (muir/Support/Files.h).
  {
    using muir::PathKind;
    std::vector<muir::PathUse> paths = {{"the input", inputFile,
                                         PathKind::InputFile,
                                         inputFile.getNumOccurrences() > 0},
                                        {"--hf", hfConfig, PathKind::InputFile,
                                         hfConfig.getNumOccurrences() > 0}};
    if (emit != Emit::None)
      paths.push_back({"-o", outputFile, PathKind::OutputFile,
                       outputFile.getNumOccurrences() > 0});
    paths.push_back({"--report", reportFile, PathKind::OutputFile,
                     reportFile.getNumOccurrences() > 0});
    if (std::string bad = muir::checkPathUses(paths); !bad.empty())
      return bad;
  }
  if (inputFile.empty() == hfConfig.empty())
    return inputFile.empty()
               ? "no input: give a description file or --hf config.json"
               : "give either a description file or --hf, not both";
  if (irInput())
    return checkIRFlags();
  return "";
}

/// The description: the input file's, or the one imported from --hf, with
/// --layout's grid; failure once its errors are printed.
static FailureOr<muir::desc::Description>
readDescription(llvm::SourceMgr &sourceMgr) {
  FailureOr<muir::desc::Description> desc = failure();
  if (!hfConfig.empty()) {
    std::vector<std::string> errors;
    desc = muir::desc::importHFConfig(hfConfig, errors);
    if (failed(desc)) {
      for (const std::string &e : errors)
        llvm::WithColor::error(llvm::errs(), "muir-compile") << e << "\n";
      if (errors.size() > 1)
        llvm::errs() << "muir-compile: " << errors.size() << " errors in "
                     << hfConfig << "\n";
      return failure();
    }
  } else {
    std::string error;
    auto file = muir::readBoundedFile(inputFile, error);
    if (!file) {
      fail(error);
      return failure();
    }
    unsigned id = sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
    desc = muir::desc::parseDescription(sourceMgr, id);
    if (failed(desc))
      return failure();
  }
  if (!layout.empty()) {
    std::string error;
    FailureOr<muir::desc::Grid> grid = muir::desc::parseLayout(layout, error);
    if (failed(grid)) {
      fail("--layout: " + error);
      return failure();
    }
    // One rule broken by many parameters is one error naming a few; the
    // count at the end is of every one.
    muir::desc::ErrorList errors;
    if (failed(muir::desc::applyLayout(*desc, *grid, errors))) {
      std::vector<std::string> lines = errors.lines();
      for (const std::string &e : lines)
        llvm::WithColor::error(llvm::errs(), "muir-compile") << e << "\n";
      if (errors.size() > 1)
        llvm::errs() << "muir-compile: " << errors.size() << " errors in "
                     << (hfConfig.empty() ? inputFile : hfConfig)
                     << " with --layout " << layout
                     << (lines.size() < errors.size()
                             ? " (grouped by kind into " +
                                   std::to_string(lines.size()) + " lines)"
                             : std::string())
                     << "\n";
      return failure();
    }
  }
  return desc;
}

/// MLIR's own flags, which muir-compile applies to every pipeline it runs:
/// --help lists them apart from muir's.
static cl::OptionCategory &mlirFlagCategory() {
  static cl::OptionCategory category(
      "MLIR options (printing the IR around passes, timing them)");
  return category;
}

/// Registers MLIR's pass-manager, context, printer and timing flags
/// (--mlir-print-ir-after-all, --mlir-timing, --mlir-print-debuginfo, ...)
/// in their category, as mlir-opt and iree-compile take them.
static void registerMLIRFlags() {
  registerPassManagerCLOptions();
  registerMLIRContextCLOptions();
  registerAsmPrinterCLOptions();
  registerDefaultTimingManagerCLOptions();
  for (auto &option : cl::getRegisteredOptions())
    if (option.first.starts_with("mlir-"))
      option.second->addCategory(mlirFlagCategory());
}

/// Where --mlir-timing times the compile: one report, each pipeline a
/// scope of it (a scope that times nothing without the flag).
static TimingScope *timingRoot = nullptr;

/// Runs `pm` on `module` as MLIR's tools do: under the pass-manager flags
/// (--mlir-print-ir-after-all, --mlir-print-ir-after=PASS, ...), timed as
/// `name` with --mlir-timing.
static LogicalResult runPipeline(PassManager &pm, ModuleOp module,
                                 StringRef name) {
  if (failed(applyPassManagerCLOptions(pm)))
    return failure();
  TimingScope scope = timingRoot->nest(name);
  pm.enableTiming(scope);
  // The verifier after every pass was a sixth of a Kimi-K2 plan's time:
  // once per phase instead, unless asked.
  pm.enableVerifier(verifyEach);
  if (failed(pm.run(module)))
    return failure();
  if (verifyEach)
    return success();
  TimingScope verifying = scope.nest("verify");
  if (succeeded(verify(module)))
    return success();
  llvm::errs() << "muir-compile: the IR after " << name
               << " does not verify; --verify-each names the pass\n";
  return failure();
}

/// Lowers `module` from stage `from` to `to` (muir::loweringPhases: the
/// same pipelines whatever the stage it starts at, so that IR read back
/// gives what the description gives); with `costs` what the report reads
/// of it: the decisions from the planned IR, the per-rank costs from exec.
/// For --emit=object, the packed entry and its argument list (read from
/// the exec IR) are added.
static LogicalResult lowerModule(MLIRContext &context, ModuleOp module,
                                 muir::Stage from, muir::Stage to,
                                 const muir::PipelineOptions &pipeline,
                                 muir::StepCosts *costs) {
  std::string error;
  for (const muir::LoweringPhase &phase :
       muir::loweringPhases(from, to, pipeline, flags.targetOptions())) {
    std::string entryName, manifest;
    if (phase.reaches == muir::Stage::LLVM)
      manifest = muir::runner::entryManifest(module, entryName);
    PassManager pm(&context);
    phase.build(pm);
    if (failed(runPipeline(pm, module, phase.name)))
      return failure();
    if (costs && phase.reaches == muir::Stage::Planned &&
        failed(muir::analyzeDecisions(module, *costs, error))) {
      fail(error);
      return failure();
    }
    if (costs && phase.reaches == muir::Stage::Exec &&
        failed(muir::analyzeStepCosts(module, *costs, error))) {
      fail(error);
      return failure();
    }
    if (phase.reaches == muir::Stage::LLVM && emit == Emit::Object &&
        failed(muir::runner::addPackedEntry(module, entryName, manifest)))
      return failure();
  }
  return success();
}

/// The step compiled apart from the output, for the report.
static LogicalResult compileCosts(MLIRContext &context,
                                  const muir::desc::Description &desc,
                                  const muir::PipelineOptions &pipeline,
                                  muir::StepCosts &costs) {
  OwningOpRef<ModuleOp> module =
      muir::desc::buildModule(context, desc, pipeline.deterministic);
  if (!module || failed(verify(*module)))
    return failure();
  return lowerModule(context, *module, muir::Stage::High, muir::Stage::Exec,
                     pipeline, &costs);
}

/// The report's costs: compiled apart unless --emit reached exec IR
/// (`compile`), and for the JSON (which lists them; the table does not)
/// the calls one Newton-Schulz per matrix makes, from the step compiled
/// with --batch=false.
static LogicalResult completeCosts(MLIRContext &context,
                                   const muir::desc::Description &desc,
                                   const muir::PipelineOptions &pipeline,
                                   bool compile, muir::StepCosts &costs) {
  if (compile && failed(compileCosts(context, desc, pipeline, costs)))
    return failure();
  if (!pipeline.batch || reportFile.empty())
    return success();
  muir::PipelineOptions unbatched = pipeline;
  unbatched.batch = false;
  muir::StepCosts one;
  if (failed(compileCosts(context, desc, unbatched, one)))
    return failure();
  for (auto [c, u] : llvm::zip(costs.ranks, one.ranks))
    c.runtimeCallsUnbatched = u.runtimeCalls;
  return success();
}

/// The step's (or --layer's) module, built and lowered as far as --emit
/// asks (null for --emit=none and description); failure once the
/// diagnostics are printed.
static FailureOr<OwningOpRef<ModuleOp>>
buildIR(MLIRContext &context, const muir::desc::Description &desc,
        const muir::PipelineOptions &pipeline, muir::StepCosts *costs) {
  OwningOpRef<ModuleOp> module;
  std::optional<muir::Stage> to = emitStage();
  if (!to)
    return module;
  {
    TimingScope build = timingRoot->nest("build high-level IR");
    module =
        layerName.empty()
            ? muir::desc::buildModule(context, desc, pipeline.deterministic)
            : muir::desc::buildLayerModule(context, desc, layerName, layerPass);
    if (!module || failed(verify(*module)))
      return failure();
  }
  phase("high-level IR built");
  if (failed(lowerModule(context, *module, muir::Stage::High, *to, pipeline,
                         costs)))
    return failure();
  phase("lowered");
  return module;
}

/// What stops IR of stage `input` from being lowered to --emit's stage,
/// or "": a stage before the input's, an object without the exec IR its
/// argument list is read from, a pipeline flag that no pass run reads.
static std::string checkIRStage(MLIRContext &context, muir::Stage input,
                                const muir::PipelineOptions &pipeline) {
  muir::Stage to = *emitStage();
  std::string stage = (muir::stringify(input) + " IR").str();
  if (to < input)
    return ("--emit=" + emitName() + " is a stage before the input's (" +
            inputFile + " is " + stage +
            "): muir-compile lowers IR, it does not raise it; give --emit=" +
            muir::stringify(input) +
            " or a later stage, or compile the description")
        .str();
  if (emit == Emit::Object && input == muir::Stage::LLVM)
    return "--emit=object reads the step's argument list from exec IR, "
           "which " +
           inputFile +
           " (llvm IR) no longer has: give the exec IR (--emit=exec) or an "
           "earlier stage";
  // Each flag given, by the pipeline option it sets (--cuda-bf16 sets
  // ns-precision unless that is given).
  SmallVector<std::pair<std::string, std::string>> given;
  for (const std::string &name : flags.given())
    given.push_back({name, name});
  if (flags.cudaBf16.getNumOccurrences() &&
      !flags.nsPrecision.getNumOccurrences())
    given.push_back({"cuda-bf16", muir::optionName::nsPrecision});
  for (auto &[flag, option] : given)
    if (!muir::optionChangesLowering(context, option, input, to, pipeline,
                                     flags.targetOptions())
             .value_or(true))
      return ("--" + flag + " has no effect on " + stage +
              " lowered to --emit=" + emitName() +
              ": no pass that runs reads it; give it with the description "
              "or with IR of an earlier stage")
          .str();
  return "";
}

/// The IR input, parsed and verified; its nesting is bounded first, as by
/// every reader of muir's (muir/Support/Nesting.h). Null once the errors
/// are printed.
static OwningOpRef<ModuleOp> readIR(MLIRContext &context,
                                    llvm::SourceMgr &sourceMgr) {
  std::string error;
  auto file = muir::readBoundedFile(inputFile, error);
  if (!file) {
    fail(error);
    return nullptr;
  }
  unsigned id = sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  if (muir::reportTooDeep(sourceMgr, id, muir::NestingSyntax::Mlir, "module"))
    return nullptr;
  return parseSourceFile<ModuleOp>(sourceMgr, ParserConfig(&context));
}

/// The module as --emit asks: an object file, the PTX of its kernels, or
/// the IR. "" once written, else why not.
static std::string writeIR(ModuleOp module, llvm::raw_pwrite_stream &os) {
  if (emit == Emit::Object)
    return muir::runner::emitObject(module, march, os);
  if (emit == Emit::PTX) {
    // Each kernel module's PTX, as embedded in its gpu.binary.
    module->walk([&](gpu::BinaryOp bin) {
      for (Attribute a : bin.getObjects())
        if (auto obj = dyn_cast<gpu::ObjectAttr>(a))
          os << "// gpu.binary @" << bin.getName() << " for "
             << obj.getTarget() << "\n"
             << obj.getObject().getValue() << "\n";
    });
    return "";
  }
  module->print(os);
  os << "\n";
  return "";
}

/// The output of a module without a plan report (--layer's, or an IR
/// input's), as --emit asks.
static int writeModule(ModuleOp module) {
  TimingScope output = timingRoot->nest("output");
  std::string error;
  auto out = muir::AtomicOutput::open(outputFile, error);
  if (!out)
    return fail(error);
  if (std::string why = writeIR(module, out->os()); !why.empty())
    return fail(why);
  if (!out->written(error) || !out->commit(error))
    return fail(error);
  phase("written");
  return 0;
}

/// The step's outputs (the IR or description, the JSON report, the table),
/// each kept only once written completely.
static int writeOutputs(ModuleOp module, const muir::desc::Description &desc,
                        muir::PlanReport &report) {
  TimingScope output = timingRoot->nest("output");
  std::string error;
  std::unique_ptr<muir::AtomicOutput> irOut, jsonOut;
  if (module || emit == Emit::Description) {
    irOut = muir::AtomicOutput::open(outputFile, error);
    if (!irOut)
      return fail(error);
  }
  if (!reportFile.empty()) {
    jsonOut = muir::AtomicOutput::open(reportFile, error);
    if (!jsonOut)
      return fail(error);
  }
  bool stdoutTaken = (irOut && outputFile == "-") || reportFile == "-";
  if (irOut && module) {
    if (std::string why = writeIR(module, irOut->os()); !why.empty())
      return fail(why);
  } else if (irOut) {
    muir::desc::writeDescription(desc, irOut->os());
  }
  if (jsonOut)
    report.writeJSON(jsonOut->os());
  // The description asked for is the output: no plan table beside it.
  if (!quiet && emit != Emit::Description)
    report.printTable(stdoutTaken ? llvm::errs() : llvm::outs());
  // Both outputs are complete before either is put in place.
  if ((irOut && !irOut->written(error)) ||
      (jsonOut && !jsonOut->written(error)) ||
      (irOut && !irOut->commit(error)) || (jsonOut && !jsonOut->commit(error)))
    return fail(error);
  phase("written");
  return 0;
}

/// The IR input lowered from its stage to --emit's and written (no plan
/// report: it is computed from a description).
static int compileIR(MLIRContext &context, llvm::SourceMgr &sourceMgr) {
  OwningOpRef<ModuleOp> module;
  {
    TimingScope parse = timingRoot->nest("parse IR");
    module = readIR(context, sourceMgr);
  }
  if (!module)
    return 1;
  phase("IR read");
  muir::Stage input = muir::detectStage(*module);
  muir::PipelineOptions pipeline = flags.options(false);
  if (std::string bad = checkIRStage(context, input, pipeline); !bad.empty())
    return fail(bad);
  if (failed(lowerModule(context, *module, input, *emitStage(), pipeline,
                         /*costs=*/nullptr)))
    return 1;
  phase("lowered");
  return writeModule(*module);
}

/// The description (or --hf's) compiled as --emit asks, with its plan
/// report.
static int compileDescription(MLIRContext &context,
                              llvm::SourceMgr &sourceMgr) {
  FailureOr<muir::desc::Description> desc = failure();
  {
    TimingScope read = timingRoot->nest("read description");
    desc = readDescription(sourceMgr);
  }
  if (failed(desc))
    return 1;
  phase("description read");
  muir::PipelineOptions pipeline = flags.options(false);
  bool wantReport = layerName.empty() && emit != Emit::Description &&
                    (!quiet || !reportFile.empty());
  bool execOut = emitStage() >= muir::Stage::Exec;
  muir::StepCosts costs;
  FailureOr<OwningOpRef<ModuleOp>> module = buildIR(
      context, *desc, pipeline, wantReport && execOut ? &costs : nullptr);
  if (failed(module))
    return 1;
  if (!layerName.empty())
    return writeModule(**module);
  std::optional<muir::PlanReport> report;
  {
    // The report's own compiles are timed apart from the output's.
    TimingScope reportTiming = timingRoot->nest("plan report");
    TimingScope *outer = std::exchange(timingRoot, &reportTiming);
    LogicalResult costed =
        wantReport ? completeCosts(context, *desc, pipeline, !execOut, costs)
                   : success();
    timingRoot = outer;
    if (failed(costed))
      return 1;
    phase("costs analysed");
    report = muir::PlanReport::compute(
        *desc,
        muir::ReportOptions{pipeline.machine, pipeline.dpAssign, pipeline.syrk,
                            pipeline.nsForm},
        costs);
    phase("report computed");
  }
  return writeOutputs(*module ? **module : ModuleOp(), *desc, *report);
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  // Before the flags are read: --mlir-print-ir-after=PASS names a
  // registered pass.
  registerAllPasses();
  muir::registerMuirPassesAndPipelines();
  registerMLIRFlags();
  // muir::parseToolCommandLine, with MLIR's flags listed beside muir's.
  cl::HideUnrelatedOptions({&muir::muirFlagCategory(), &mlirFlagCategory()});
  muir::setVersionPrinter("muir-compile");
  cl::ParseCommandLineOptions(
      argc, argv,
      "muir-compile: training-step descriptions to muir IR and a plan "
      "report\n\n"
      "The input is a description (.yaml or .json, docs/description.md), or "
      "muir IR (.mlir: high-level, planned, exec or llvm, as muir-compile "
      "writes it), lowered from its stage to --emit's.\n");
  start = std::chrono::steady_clock::now();
  if (std::string bad = checkFlags(); !bad.empty())
    return fail(bad);

  // One --mlir-timing report for the whole compile, printed at the end.
  DefaultTimingManager timing;
  applyDefaultTimingManagerCLOptions(timing);
  TimingScope root = timing.getRootScope();
  timingRoot = &root;

  DialectRegistry registry;
  muir::registerMuirDialects(registry);
  MLIRContext context(registry);
  // Diagnostics point at the description or IR (file:line:col); a whole
  // step's function printed after a note would bury them (unless
  // --mlir-print-op-on-diagnostic asks for it).
  if (cl::Option *o =
          cl::getRegisteredOptions().lookup("mlir-print-op-on-diagnostic");
      !o || !o->getNumOccurrences())
    context.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagHandler(sourceMgr, &context);
  return irInput() ? compileIR(context, sourceMgr)
                   : compileDescription(context, sourceMgr);
}
