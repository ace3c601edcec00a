//===- muir-compile.cpp - training-step descriptions to muir IR -----------===//
//
// Reads a description (YAML/JSON) or a Hugging Face config.json, applies a
// layout, builds the high-level IR and lowers it to the requested stage;
// prints a plan report (readable table, optional JSON). Output files are
// written only when everything succeeded.
//
//===----------------------------------------------------------------------===//
#include "muir/Analysis/PlanReport.h"
#include "muir/Import/Description.h"
#include "muir/Driver/PipelineFlags.h"
#include "muir/Passes.h"

#include "mlir/IR/Verifier.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
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
enum class Emit { Description, High, Planned, Exec, LLVM, PTX, None };
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
static cl::opt<std::string>
    machine("machine", cl::desc("cost-model machine profile: cpu or h200"),
            cl::init("cpu"),
    cl::cat(muir::muirFlagCategory()));
static cl::opt<bool> quiet("quiet", cl::desc("no readable report table"),
                           cl::init(false),
    cl::cat(muir::muirFlagCategory()));
static cl::opt<bool> timing("timing",
                            cl::desc("print wall time per phase to stderr"),
                            cl::init(false),
    cl::cat(muir::muirFlagCategory()));

static int fail(const Twine &msg) {
  llvm::WithColor::error(llvm::errs(), "muir-compile") << msg << "\n";
  return 1;
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  // --help lists muir's flags only (LLVM's and MLIR's are hidden).
  cl::HideUnrelatedOptions(muir::muirFlagCategory());
  cl::ParseCommandLineOptions(
      argc, argv,
      "muir-compile: training-step descriptions to muir IR and a plan "
      "report\n");
  if (std::string bad = flags.check(); !bad.empty())
    return fail(bad);
  auto start = std::chrono::steady_clock::now();
  auto phase = [&](StringRef name) {
    if (timing)
      llvm::errs() << "muir-compile: " << name << " at "
                   << std::chrono::duration<double>(
                          std::chrono::steady_clock::now() - start)
                          .count()
                   << " s\n";
  };

  if (emit == Emit::PTX && flags.target != "cuda")
    return fail("--emit=ptx needs --target=cuda");
  if (inputFile.empty() == hfConfig.empty())
    return fail(inputFile.empty()
                    ? "no input: give a description file or --hf config.json"
                    : "give either a description file or --hf, not both");

  // Read the description.
  llvm::SourceMgr sourceMgr;
  FailureOr<muir::desc::Description> desc = failure();
  if (!hfConfig.empty()) {
    std::string error;
    desc = muir::desc::importHFConfig(hfConfig, error);
    if (failed(desc))
      return fail(error);
  } else {
    std::string error;
    auto file = openInputFile(inputFile, &error);
    if (!file)
      return fail(error);
    unsigned id = sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
    desc = muir::desc::parseDescription(sourceMgr, id);
    if (failed(desc))
      return 1;
  }
  if (!layout.empty()) {
    std::string error;
    FailureOr<muir::desc::Grid> grid = muir::desc::parseLayout(layout, error);
    if (failed(grid))
      return fail("--layout: " + error);
    std::vector<std::string> errors;
    if (failed(muir::desc::applyLayout(*desc, *grid, errors))) {
      for (const std::string &e : errors)
        llvm::WithColor::error(llvm::errs(), "muir-compile") << e << "\n";
      return 1;
    }
  }
  phase("description read");

  // Build and lower the IR.
  DialectRegistry registry;
  muir::registerMuirDialects(registry);
  registerAllPasses();
  MLIRContext context(registry);
  // Diagnostics point at the description (file:line:col); a whole step's
  // function printed after a note would bury them.
  context.printOpOnDiagnostic(false);
  SourceMgrDiagnosticHandler diagHandler(sourceMgr, &context);
  OwningOpRef<ModuleOp> module;
  muir::PipelineOptions pipeline = flags.options(false, machine);
  if (emit != Emit::None && emit != Emit::Description) {
    module = muir::desc::buildModule(context, *desc);
    if (failed(verify(*module)))
      return 1;
    phase("high-level IR built");
    PassManager pm(&context);
    if (emit == Emit::Planned) {
      muir::MuirDistributeOptions distribute;
      distribute.nsMode = pipeline.nsMode;
      distribute.machine = pipeline.machine;
      distribute.dpAssign = pipeline.dpAssign;
      pm.addPass(muir::createMuirDistribute(distribute));
      pm.addPass(muir::createMuirDecomposeOptimizers());
      pm.addPass(muir::createMuirExpandNewtonSchulz());
    } else if (emit == Emit::Exec || emit == Emit::LLVM ||
               emit == Emit::PTX) {
      muir::buildToExecPipeline(pm, pipeline);
      if (emit != Emit::Exec)
        muir::buildExecToLLVMPipeline(pm, flags.targetOptions());
    }
    if (failed(pm.run(*module)))
      return 1;
    phase("lowered");
  }

  std::string reportError;
  FailureOr<muir::PlanReport> planned = muir::PlanReport::compute(
      *desc,
      muir::ReportOptions{pipeline.nsMode, pipeline.machine,
                          pipeline.dpAssign, pipeline.syrk,
                          pipeline.fuseAllReduce, pipeline.chunkRows,
                          pipeline.batch},
      reportError);
  if (failed(planned))
    return fail(reportError);
  muir::PlanReport &report = *planned;
  phase("report computed");

  // Outputs, each kept only once written completely.
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> irOut, jsonOut;
  if (module || emit == Emit::Description) {
    irOut = openOutputFile(outputFile, &error);
    if (!irOut)
      return fail(error);
  }
  if (!reportFile.empty()) {
    jsonOut = openOutputFile(reportFile, &error);
    if (!jsonOut)
      return fail(error);
  }
  bool stdoutTaken = (irOut && outputFile == "-") || reportFile == "-";
  if (irOut && module && emit == Emit::PTX) {
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
    muir::desc::writeDescription(*desc, irOut->os());
  }
  if (jsonOut)
    report.writeJSON(jsonOut->os());
  if (!quiet)
    report.printTable(stdoutTaken ? llvm::errs() : llvm::outs());
  if (irOut)
    irOut->keep();
  if (jsonOut)
    jsonOut->keep();
  phase("written");
  return 0;
}
