//===- muir-compile.cpp - training-step descriptions to muir IR -----------===//
//
// Reads a description (YAML/JSON) or a Hugging Face config.json, applies a
// layout, builds the high-level IR and lowers it to the requested stage;
// prints a plan report (readable table, optional JSON). Output files are
// written only when everything succeeded.
//
//===----------------------------------------------------------------------===//
#include "muir/Analysis/PlanReport.h"
#include "muir/Analysis/StepCost.h"
#include "muir/Import/Description.h"
#include "muir/Driver/PipelineFlags.h"
#include "muir/Passes.h"
#include "muir/Runner/Step.h"
#include "muir/Support/Files.h"
#include "muir/Support/VersionPrinter.h"

#include "mlir/ExecutionEngine/OptUtils.h"
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
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

#include <chrono>

using namespace mlir;
namespace cl = llvm::cl;

static cl::opt<std::string> inputFile(cl::Positional,
                                      cl::desc("[description.yaml|.json]"),
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
static cl::opt<bool> layerBackward(
    "layer-backward", cl::desc("with --layer: the backward pass"),
    cl::init(false), cl::cat(muir::muirFlagCategory()));
static cl::opt<bool> timing("timing",
                            cl::desc("print wall time per phase to stderr"),
                            cl::init(false),
    cl::cat(muir::muirFlagCategory()));

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
  if (layerBackward && layerName.empty())
    return "--layer-backward needs --layer NAME";
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

/// The step's pipeline to exec IR, and with `costs` what the report reads
/// of it: the decisions from the planned IR, the per-rank costs from exec.
static LogicalResult toExec(MLIRContext &context, ModuleOp module,
                            const muir::PipelineOptions &pipeline,
                            muir::StepCosts *costs) {
  std::string error;
  PassManager planned(&context), exec(&context);
  muir::buildPlannedPipeline(planned, pipeline);
  muir::buildPlannedToExecPipeline(exec, pipeline);
  if (failed(planned.run(module)))
    return failure();
  if (costs && failed(muir::analyzeDecisions(module, *costs, error))) {
    fail(error);
    return failure();
  }
  if (failed(exec.run(module)))
    return failure();
  if (costs && failed(muir::analyzeStepCosts(module, *costs, error))) {
    fail(error);
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
  return toExec(context, *module, pipeline, &costs);
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
  std::string manifest, entryName;
  if (emit == Emit::None || emit == Emit::Description)
    return module;
  module = layerName.empty()
               ? muir::desc::buildModule(context, desc, pipeline.deterministic)
               : muir::desc::buildLayerModule(
                                   context, desc, layerName, layerBackward);
  if (!module || failed(verify(*module)))
    return failure();
  phase("high-level IR built");
  if (emit == Emit::Planned) {
    // The to-exec pipeline's front, so that planned IR, run, gives the
    // description's bits.
    PassManager pm(&context);
    muir::buildPlannedPipeline(pm, pipeline);
    if (failed(pm.run(*module)))
      return failure();
  } else if (emit == Emit::Exec || emit == Emit::LLVM || emit == Emit::PTX ||
             emit == Emit::Object) {
    if (failed(toExec(context, *module, pipeline, costs)))
      return failure();
  }
  if (emit == Emit::LLVM || emit == Emit::PTX || emit == Emit::Object) {
    manifest = muir::runner::entryManifest(*module, entryName);
    PassManager toLLVM(&context);
    muir::buildExecToLLVMPipeline(toLLVM, flags.targetOptions());
    if (failed(toLLVM.run(*module)))
      return failure();
    if (emit == Emit::Object &&
        failed(muir::runner::addPackedEntry(*module, entryName, manifest)))
      return failure();
  }
  phase("lowered");
  return module;
}

/// --layer's output: the layer's module as --emit asks.
static int writeLayer(ModuleOp module) {
  std::string error;
  auto out = muir::AtomicOutput::open(outputFile, error);
  if (!out)
    return fail(error);
  if (emit == Emit::Object) {
    if (std::string why = muir::runner::emitObject(module, march, out->os());
        !why.empty())
      return fail(why);
  } else {
    module->print(out->os());
    out->os() << "\n";
  }
  if (!out->written(error) || !out->commit(error))
    return fail(error);
  return 0;
}

/// The step's outputs (the IR or description, the JSON report, the table),
/// each kept only once written completely.
static int writeOutputs(ModuleOp module, const muir::desc::Description &desc,
                        muir::PlanReport &report) {
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
  if (irOut && module && emit == Emit::Object) {
    if (std::string why = muir::runner::emitObject(module, march, irOut->os());
        !why.empty())
      return fail(why);
  } else if (irOut && module && emit == Emit::PTX) {
    // Each kernel module's PTX, as embedded in its gpu.binary.
    module->walk([&](gpu::BinaryOp bin) {
      for (Attribute a : bin.getObjects())
        if (auto obj = dyn_cast<gpu::ObjectAttr>(a))
          irOut->os() << "// gpu.binary @" << bin.getName() << " for "
                      << obj.getTarget() << "\n"
                      << obj.getObject().getValue() << "\n";
    });
  } else if (irOut && module) {
    module->print(irOut->os());
    irOut->os() << "\n";
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
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  muir::parseToolCommandLine(
      argc, argv, "muir-compile",
      "muir-compile: training-step descriptions to muir IR and a plan "
      "report\n");
  start = std::chrono::steady_clock::now();
  if (std::string bad = checkFlags(); !bad.empty())
    return fail(bad);
  llvm::SourceMgr sourceMgr;
  FailureOr<muir::desc::Description> desc = readDescription(sourceMgr);
  if (failed(desc))
    return 1;
  phase("description read");

  DialectRegistry registry;
  muir::registerMuirDialects(registry);
  registerAllPasses();
  MLIRContext context(registry);
  // Diagnostics point at the description (file:line:col); a whole step's
  // function printed after a note would bury them.
  context.printOpOnDiagnostic(false);
  SourceMgrDiagnosticHandler diagHandler(sourceMgr, &context);
  muir::PipelineOptions pipeline = flags.options(false);
  bool wantReport = layerName.empty() && emit != Emit::Description &&
                    (!quiet || !reportFile.empty());
  bool execOut = emit == Emit::Exec || emit == Emit::LLVM ||
                 emit == Emit::PTX || emit == Emit::Object;
  muir::StepCosts costs;
  FailureOr<OwningOpRef<ModuleOp>> module = buildIR(
      context, *desc, pipeline, wantReport && execOut ? &costs : nullptr);
  if (failed(module))
    return 1;
  if (!layerName.empty())
    return writeLayer(**module);
  if (wantReport &&
      failed(completeCosts(context, *desc, pipeline, !execOut, costs)))
    return 1;
  phase("costs analysed");
  muir::PlanReport report = muir::PlanReport::compute(
      *desc,
      muir::ReportOptions{pipeline.machine, pipeline.dpAssign, pipeline.syrk,
                          pipeline.nsForm},
      costs);
  phase("report computed");

  if (int rc = writeOutputs(*module ? **module : ModuleOp(), *desc, report))
    return rc;
  phase("written");
  return 0;
}
