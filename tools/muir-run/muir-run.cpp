//===- muir-run.cpp - compile and execute a muir training step ------------===//
//
// Reads a description or muir IR (without an input, the embedded default
// example), compiles it with the step library (muir/Runner/Step.h) and runs
// it for --steps steps on tensors the runtime owns (seeded, or --load /
// --resume), printing per step the time, each Muon matrix's singular-value
// band and the norms (the same table for any number of ranks); --dump and
// --save-state write the tensors.
//
//===----------------------------------------------------------------------===//
#include "muir-rt/Runtime.h"
#include "muir/Driver/PipelineFlags.h"
#include "muir/Runner/State.h"
#include "muir/Runner/Step.h"
#include "muir/Support/Files.h"
#include "muir/Support/VersionPrinter.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"

#include <chrono>
#include <cmath>

using namespace mlir;
namespace cl = llvm::cl;
namespace runner = mlir::muir::runner;

static cl::OptionCategory &muirCat = muir::muirFlagCategory();

static cl::opt<std::string>
    inputFile(cl::Positional, cl::desc("[step.yaml|step.json|step.mlir]"),
              cl::init(""), cl::cat(muirCat));
static cl::opt<int> numSteps("steps", cl::desc("optimizer steps to run"),
                             cl::init(3), cl::cat(muirCat));
static cl::opt<uint64_t> seed("seed", cl::desc("seed for tensors not loaded"),
                              cl::init(0), cl::cat(muirCat));
static cl::opt<std::string>
    loadDir("load", cl::desc("read initial tensors from DIR/<name>.npy"),
            cl::value_desc("DIR"), cl::init(""), cl::cat(muirCat));
static cl::opt<std::string>
    dumpDir("dump",
            cl::desc("write every tensor to DIR/<name>.npy after the last "
                     "step"),
            cl::value_desc("DIR"), cl::init(""), cl::cat(muirCat));
static cl::opt<std::string> saveState(
    "save-state",
    cl::desc("after the last step, save the whole state (every tensor, the "
             "step counter, the step's fingerprint) to DIR, replacing it "
             "atomically"),
    cl::value_desc("DIR"), cl::init(""), cl::cat(muirCat));
static cl::opt<std::string> resumeDir(
    "resume",
    cl::desc("continue from a state saved by --save-state (refused if it "
             "was saved for another step, grid or build, or is damaged)"),
    cl::value_desc("DIR"), cl::init(""), cl::cat(muirCat));
static cl::opt<std::string> traceFile(
    "trace-fingerprints",
    cl::desc("record, for every op each rank executes, its inputs' and "
             "outputs' hashes to FILE (FILE.rank<R> with several ranks); "
             "compare two runs with muir-trace-diff"),
    cl::value_desc("FILE"), cl::init(""), cl::cat(muirCat));
static cl::opt<bool> nondeterministic(
    "nondeterministic",
    cl::desc("let MPI order the all-reduces (MPI_Allreduce) instead of "
             "summing in rank order; deterministic is the default"),
    cl::init(false), cl::cat(muirCat));
static cl::opt<bool> quiet("quiet",
                           cl::desc("print only the closing summary line"),
                           cl::init(false), cl::cat(muirCat));
static cl::opt<int>
    numRanks("ranks",
             cl::desc("run N ranks as MPI processes: muir-run starts itself "
                      "under `mpirun -n N` (the grid's devices must be N)"),
             cl::init(1), cl::cat(muirCat));
static muir::PipelineFlags flags;
static cl::opt<std::string> lrSchedule(
    "lr-schedule",
    cl::desc("multiply every group's learning rate, step by step: "
             "'constant' (1), 'cosine:W:T[:MIN]' (linear warmup over W "
             "steps, cosine decay to MIN (default 0) at step T, MIN after), "
             "'file:PATH' (one factor per line, line s for step s); the "
             "step reads its learning rates at run time, nothing recompiles"),
    cl::value_desc("SCHEDULE"), cl::init("constant"), cl::cat(muirCat));
static cl::opt<bool> commStats(
    "comm-stats",
    cl::desc("after the last step, every rank prints the bytes it sent and "
             "the collectives it ran per grid-axis group (runtime counters)"),
    cl::init(false), cl::cat(muirCat));
static cl::opt<bool> cudaGraph(
    "cuda-graph",
    cl::desc("with --target=cuda, run steps after the first as one captured "
             "CUDA graph (--cuda-graph=false: launch op by op)"),
    cl::init(true), cl::cat(muirCat));
static cl::opt<bool> cudaCublasGrouped(
    "cuda-cublas-grouped-gemm",
    cl::desc("with --target=cuda, run MoE layers' grouped products with "
             "cuBLAS's grouped GEMM, which takes the expert sizes on the "
             "host (each call waits for the GPU, so steps run op by op, "
             "without a CUDA graph), instead of the runtime's kernel that "
             "reads them on the device"),
    cl::init(false), cl::cat(muirCat));
static cl::opt<bool> checkFinite(
    "check-finite",
    cl::desc("stop, naming the tensor, the step and the rank, when a "
             "gradient holds a NaN or infinity before a step or a trained "
             "MoE layer's loss is not finite after it; nothing is written "
             "(--check-finite=false: no check)"),
    cl::init(true), cl::cat(muirCat));
static cl::opt<bool> jitListeners(
    "jit-listeners",
    cl::desc("register the JIT-compiled step with gdb and perf (perf's "
             "listener writes dumps under $TMPDIR/.debug/jit); off by "
             "default: the JIT writes no file"),
    cl::init(false), cl::cat(muirCat));
static cl::opt<bool> noProbes(
    "no-probes",
    cl::desc("do not record Newton-Schulz outputs (no singular values in "
             "the table)"),
    cl::init(false), cl::cat(muirCat));

// The embedded default example: examples/default.mlir.
#include "DefaultExample.inc"

static int fail(const Twine &msg) {
  if (!msg.isTriviallyEmpty() && !msg.str().empty())
    llvm::WithColor::error(llvm::errs(), "muir-run") << msg << "\n";
  return 1;
}

/// The compile flags given on the command line (for StepOptions::given).
static std::vector<std::string> givenCompileFlags() {
  std::vector<std::string> given;
  for (const cl::Option *o : std::initializer_list<const cl::Option *>{
           &flags.nsMode, &flags.nsForm, &flags.machine, &flags.dpAssign,
           &flags.syrk, &flags.batch, &flags.fuseAllReduce, &flags.chunkRows,
           &flags.nsPrecision, &noProbes})
    if (o->getNumOccurrences())
      given.push_back(o->ArgStr.str());
  return given;
}

int main(int argc, char **argv) {
  runner::restartWithHugePages(argv);
  llvm::InitLLVM initLLVM(argc, argv);
  // --help lists muir's flags only (LLVM's and MLIR's are hidden).
  cl::HideUnrelatedOptions(muir::muirFlagCategory());
  muir::setVersionPrinter("muir-run");
  cl::ParseCommandLineOptions(
      argc, argv,
      "muir-run: compile and execute a muir training step on the CPU or a "
      "GPU\n\nThe input is a description (.yaml or .json, "
      "docs/description.md) or muir IR (.mlir: high-level, planned or exec, "
      "as muir-compile writes it). Without an input, runs the embedded "
      "default example (examples/default.mlir).\n");
  // The launcher (more than one rank, not yet under mpirun) checks
  // everything it can before mpirun starts, once.
  bool launcher = numRanks > 1 && !runner::underMPI();
  if (runner::underMPI())
    runner::watchLauncher();
  bool cuda = flags.target == muir::Target::Cuda;
  if (numSteps < 1)
    return fail("--steps must be at least 1, got " + Twine(numSteps));
  if (numRanks < 1)
    return fail("--ranks must be at least 1, got " + Twine(numRanks));
  if (std::string bad = flags.check(); !bad.empty())
    return fail(bad);
  if (!resumeDir.empty() && !loadDir.empty())
    return fail("give either --load or --resume, not both");
  if (!resumeDir.empty() && seed.getNumOccurrences())
    return fail("--seed has no effect with --resume: the saved state holds "
                "every tensor; leave --seed out");
  if (launcher && inputFile == "-")
    return fail("--ranks needs an input file, not stdin");
  if (cuda && (!traceFile.empty() || commStats))
    return fail(
        Twine(!traceFile.empty() ? "--trace-fingerprints" : "--comm-stats") +
        " is not available with --target=cuda yet");
  if (!cuda && cudaCublasGrouped)
    return fail("--cuda-cublas-grouped-gemm needs --target=cuda");
  // Every path of the run, checked at once before anything runs: no
  // output overwrites an input or another output or lies in a folder that
  // is read or replaced; --save-state into the state being resumed
  // continues a run (replaced atomically).
  {
    using muir::PathKind;
    auto given = [](const cl::opt<std::string> &o) {
      return o.getNumOccurrences() > 0;
    };
    std::vector<muir::PathUse> paths = {
        {"the input", inputFile, PathKind::InputFile, given(inputFile)},
        {"--load", loadDir, PathKind::InputDir, given(loadDir)},
        {"--resume", resumeDir, PathKind::InputDir, given(resumeDir)},
        {"--dump", dumpDir, PathKind::OutputDir, given(dumpDir)},
        {"--save-state", saveState, PathKind::OutputDir, given(saveState)}};
    if (StringRef(lrSchedule).starts_with("file:"))
      paths.push_back({"--lr-schedule", lrSchedule.substr(5),
                       PathKind::InputFile, true});
    // With several ranks each writes its own FILE.rank<R>.
    if (numRanks > 1 && !traceFile.empty())
      for (int r = 0; r < numRanks; ++r)
        paths.push_back({"--trace-fingerprints",
                         traceFile + ".rank" + std::to_string(r),
                         PathKind::OutputFile, true});
    else
      paths.push_back({"--trace-fingerprints", traceFile, PathKind::OutputFile,
                       given(traceFile)});
    if (std::string bad =
            muir::checkPathUses(paths, {{"--save-state", "--resume"}});
        !bad.empty())
      return fail(bad);
  }

  std::string source = kDefaultModule, name = "<default>";
  if (!inputFile.empty()) {
    std::string err;
    auto file = muir::readBoundedFile(inputFile, err);
    if (!file)
      return fail(err);
    source = file->getBuffer().str();
    name = inputFile;
  }
  runner::StepOptions options;
  options.pipeline = flags.options(!noProbes);
  options.target = flags.targetOptions();
  options.cudaBf16 = flags.cudaBf16;
  options.cudaGraph = cudaGraph;
  options.cudaCublasGrouped = cudaCublasGrouped;
  options.deterministic = !nondeterministic;
  options.trace = !traceFile.empty();
  options.jitListeners = jitListeners;
  options.given = givenCompileFlags();
  auto loaded = runner::Step::load(source, name, options, llvm::errs());
  if (!loaded)
    return fail(llvm::toString(loaded.takeError()));
  runner::Step &step = **loaded;
  int64_t devices = step.devices();
  std::vector<std::string> names;
  for (const runner::Argument &a : step.arguments())
    if (a.isTensor())
      names.push_back(a.name);
  // Everything that can fail before a step runs, checked before any work
  // (for several ranks, before mpirun starts).
  auto preChecks = [&]() -> llvm::Error {
    if (runner::underMPI())
      return llvm::Error::success();
    if (auto e = runner::checkRanks(step, numRanks))
      return e;
    if (auto e = loadDir.empty() ? llvm::Error::success()
                                 : runner::checkLoadDir("--load", loadDir))
      return e;
    if (auto e = saveState.empty() ? llvm::Error::success()
                                   : muir::state::checkSaveTarget(saveState))
      return e;
    if (auto e = traceFile.empty()
                     ? llvm::Error::success()
                     : runner::checkTraceTarget(traceFile, devices))
      return e;
    return dumpDir.empty() ? llvm::Error::success()
                           : runner::checkDumpTarget(dumpDir, step);
  };
  if (llvm::Error e = preChecks())
    return fail(llvm::toString(std::move(e)));
  // A load directory that gives nothing, or holds files no tensor reads,
  // is most likely a mistake: said once (before mpirun), even with
  // --quiet.
  if (!runner::underMPI() && !loadDir.empty())
    for (const std::string &w :
         runner::loadDirWarnings("--load", loadDir, step))
      llvm::WithColor::warning(llvm::errs(), "muir-run") << w << "\n";
  // Resuming: a state saved for this very step; its counter continues.
  int64_t firstStep = 1;
  if (!resumeDir.empty()) {
    auto saved =
        muir::state::checkState(resumeDir, step.identity(), names, numSteps);
    if (!saved)
      return fail(llvm::toString(saved.takeError()));
    firstStep = *saved + 1;
  }
  int64_t lastStep = firstStep + numSteps - 1;
  auto factors = runner::lrSchedule(lrSchedule, firstStep, lastStep);
  if (!factors)
    return fail(llvm::toString(factors.takeError()));
  if (lrSchedule != "constant" &&
      llvm::none_of(step.arguments(), [](const runner::Argument &a) {
        return a.hyperIndex >= 0 && StringRef(a.name).ends_with(".lr");
      }))
    return fail("--lr-schedule: the step has no run-time learning rate (an "
                "f64 argument with muir.role = \"hyper\" named *.lr); its "
                "rates are constants in the IR");
  if (launcher)
    return runner::relaunchUnderMPI(numRanks, argc, argv, "muir-run");

  if (llvm::Error e = step.prepare(llvm::errs()))
    return fail(llvm::toString(std::move(e)));
  int64_t rank = step.rank();
  // Every rank takes part in the table (it gathers), rank 0 prints it.
  bool table = !quiet;
  bool printing = table && rank == 0;
  runner::HostTensors tensors(step);
  if (llvm::Error e = tensors.create())
    return fail(llvm::toString(std::move(e)));
  // --load reads what it finds; a resumed state replaces every tensor.
  int32_t numLoaded = 0;
  StringRef readDir = resumeDir.empty() ? StringRef(loadDir) : resumeDir;
  if (!readDir.empty())
    if (llvm::Error e = tensors.load(readDir, numLoaded))
      return fail(llvm::toString(std::move(e)));
  tensors.seed(seed);
  tensors.scatter();
  if (llvm::Error e = tensors.bind())
    return fail(llvm::toString(std::move(e)));
  if (printing) {
    llvm::outs() << "muir-run: " << name << ": " << tensors.numParams()
                 << " parameters (" << tensors.numMuon() << " with Muon), "
                 << tensors.count() << " tensors, " << numLoaded
                 << " loaded, seed " << seed << ", " << numSteps << " steps"
                 << (devices > 1 ? ", " + std::to_string(devices) + " ranks"
                                 : std::string())
                 << "\n";
    if (tensors.numMuon() > 0 && !noProbes)
      for (const std::string &line : tensors.legend())
        llvm::outs() << "muir-run: " << line << "\n";
    if (cuda)
      llvm::outs() << "muir-run: CUDA device " << step.deviceDescription()
                   << "\n";
  }
  // Every rank looks; if any found a non-finite value, the lowest such rank
  // says where (one line) and all of them stop, writing nothing.
  auto stopOnNonFinite = [&](int64_t at, StringRef what, StringRef when,
                             const runner::HostTensors::NonFinite &found) {
    return runner::stopOnNonFinite(step, "muir-run", at, what, when, found,
                                   what != "loss of MoE layer");
  };
  using Role = std::initializer_list<int32_t>;
  if (checkFinite && numLoaded > 0 &&
      stopOnNonFinite(firstStep, "loaded tensor", "before the step",
                      tensors.firstNonFinite(Role{0, 1, 2, 3})))
    return 1;
  bool hasLoss = llvm::any_of(step.observations(), [](const auto &kv) {
    return StringRef(kv.second.label).starts_with("loss ");
  });
  std::vector<double> hyper = step.defaultHyper();
  double totalMs = 0, minMs = 1e300, checkMs = 0;
  auto msSince = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now() - t)
        .count();
  };
  muirrt_comm_reset();
  muirrt_trace_enable(!traceFile.empty());
  for (int64_t s = firstStep; s <= lastStep; ++s) {
    muirrt_trace_set_step(s);
    if (table)
      tensors.snapshot();
    double factor = (*factors)[s - firstStep];
    for (auto [k, a] : llvm::enumerate(step.arguments()))
      if (a.hyperIndex >= 0)
        hyper[a.hyperIndex] =
            a.defaultValue * (StringRef(a.name).ends_with(".lr") ? factor : 1);
    muirrt_observations_clear();
    runner::testFault(rank, s);
    // The step's time includes its checks. Gradients are checked before
    // the step applies them (on the GPU, once: they were uploaded).
    auto start = std::chrono::steady_clock::now();
    if (checkFinite && (!cuda || s == firstStep) &&
        stopOnNonFinite(s, "gradient", "before the step",
                        tensors.firstNonFinite(Role{1})))
      return 1;
    checkMs += msSince(start);
    if (llvm::Error e = step.run(s, hyper))
      return fail(llvm::toString(std::move(e)));
    auto lossCheck = std::chrono::steady_clock::now();
    if (checkFinite && hasLoss &&
        stopOnNonFinite(s, "loss of MoE layer", "after the step",
                        tensors.nonFiniteLoss()))
      return 1;
    checkMs += msSince(lossCheck);
    double ms = msSince(start);
    totalMs += ms;
    minMs = std::min(minMs, ms);
    if (!table)
      continue;
    if (llvm::Error e = tensors.download())
      return fail(llvm::toString(std::move(e)));
    if (printing) {
      llvm::outs() << "step " << s << ": " << llvm::format("%.2f", ms) << " ms"
                   << (lrSchedule != "constant" ? ", lr x" : "");
      if (lrSchedule != "constant")
        llvm::outs() << llvm::format("%g", factor);
      llvm::outs() << "\n";
    }
    tensors.printStep(llvm::outs());
  }
  if (llvm::Error e = tensors.download())
    return fail(llvm::toString(std::move(e)));
  // Nothing non-finite is written (a finite gradient can still overflow).
  if (checkFinite && (!dumpDir.empty() || !saveState.empty()) &&
      stopOnNonFinite(lastStep, "updated tensor", "after the step",
                      tensors.firstNonFinite(Role{0, 2})))
    return 1;
  // Before the dump, whose gathers are counted too.
  if (commStats)
    runner::printCommStats(step, llvm::outs());
  if (!traceFile.empty())
    if (llvm::Error e = step.writeTrace(
            traceFile + (muirrt_dist_size() > 1 ? ".rank" + std::to_string(rank)
                                                : std::string())))
      return fail(llvm::toString(std::move(e)));
  // Whole tensors again: every rank takes part in the gathers, rank 0
  // writes.
  if (!dumpDir.empty() || !saveState.empty())
    tensors.gather();
  if (!dumpDir.empty() && rank == 0) {
    if (llvm::Error e = tensors.dump(dumpDir))
      return fail(llvm::toString(std::move(e)));
    if (printing)
      llvm::outs() << "muir-run: wrote " << tensors.count() << " tensors to "
                   << dumpDir << "\n";
  }
  if (!saveState.empty() && rank == 0) {
    if (llvm::Error e = tensors.save(saveState, lastStep))
      return fail(llvm::toString(std::move(e)));
    if (printing)
      llvm::outs() << "muir-run: saved the state after step " << lastStep
                   << " to " << saveState << "\n";
  }
  if (rank != 0)
    return 0;
  llvm::outs() << "muir-run: steps " << numSteps << " mean_ms "
               << llvm::format("%.3f", totalMs / numSteps) << " min_ms "
               << llvm::format("%.3f", minMs);
  // What the non-finite checks cost, part of each step's time.
  if (checkFinite)
    llvm::outs() << " check_ms " << llvm::format("%.3f", checkMs / numSteps);
  llvm::outs() << "\n";
  return 0;
}
