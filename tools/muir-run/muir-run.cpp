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
#include "RunFlags.h"
#include "muir-rt/Runtime.h"
#include "muir/Driver/PipelineFlags.h"
#include "muir/Runner/State.h"
#include "muir/Runner/Step.h"
#include "muir/Support/Files.h"
#include "muir/Support/VersionPrinter.h"
#include "muir/Tooling/HostTensors.h"
#include "muir/Tooling/Launcher.h"
#include "muir/Tooling/Resume.h"
#include "muir/Tooling/RunChecks.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>

using namespace mlir;
namespace cl = llvm::cl;
namespace runner = mlir::muir::runner;
namespace tooling = mlir::muir::tooling;

static muir_run::RunFlags opt;
static muir::PipelineFlags flags;

// The embedded default example: examples/default.mlir.
#include "DefaultExample.inc"

static int fail(const Twine &msg) {
  if (!msg.isTriviallyEmpty() && !msg.str().empty())
    llvm::WithColor::error(llvm::errs(), "muir-run") << msg << "\n";
  return 1;
}

/// The compile flags given on the command line (for StepOptions::given).
static std::vector<std::string> givenCompileFlags() {
  std::vector<std::string> given = flags.given();
  if (opt.noProbes.getNumOccurrences())
    given.push_back(opt.noProbes.ArgStr.str());
  return given;
}

/// The step of the input (or of the embedded default example), compiled
/// with the flags' options.
static llvm::Expected<std::unique_ptr<runner::Step>> loadStep(
    std::string &name) {
  std::string source = kDefaultModule;
  name = "<default>";
  if (!opt.inputFile.empty()) {
    std::string err;
    auto file = muir::readBoundedFile(opt.inputFile, err);
    if (!file)
      return llvm::createStringError(err);
    source = file->getBuffer().str();
    name = opt.inputFile;
  }
  runner::StepOptions options;
  options.pipeline = flags.options(!opt.noProbes);
  options.target = flags.targetOptions();
  options.cudaBf16 = flags.cudaBf16;
  // muir-run's own step flags (Options.def: cuda-graph, deterministic,
  // jit-listeners).
#define MUIR_RUN_FLAG(FIELD, TYPE, NAME, DEFAULT, HELP)                        \
  options.FIELD = opt.FIELD;
#include "muir/Driver/Options.def"
  options.cudaCublasGrouped = opt.cudaCublasGrouped;
  options.trace = !opt.traceFile.empty();
  options.given = givenCompileFlags();
  return runner::Step::load(source, name, options, llvm::errs());
}

/// Everything that can fail before a step runs, checked before any work
/// (for several ranks, before mpirun starts): the ranks and the --load,
/// --save-state, --trace-fingerprints and --dump targets.
static llvm::Error checkTargets(runner::Step &step) {
  if (runner::underMPI())
    return llvm::Error::success();
  if (auto e = tooling::checkRanks(step, opt.numRanks))
    return e;
  if (auto e = opt.loadDir.empty()
                   ? llvm::Error::success()
                   : tooling::checkLoadDir("--load", opt.loadDir))
    return e;
  if (auto e = opt.saveState.empty()
                   ? llvm::Error::success()
                   : muir::state::checkSaveTarget(opt.saveState))
    return e;
  if (auto e = opt.traceFile.empty()
                   ? llvm::Error::success()
                   : tooling::checkTraceTarget(opt.traceFile, step.devices()))
    return e;
  return opt.dumpDir.empty() ? llvm::Error::success()
                             : tooling::checkDumpTarget(opt.dumpDir, step);
}

/// Every rank looks; if any found a non-finite value, the lowest such rank
/// says where (one line) and all of them stop, writing nothing.
static bool stopOnNonFinite(runner::Step &step, int64_t at, StringRef what,
                            StringRef when,
                            const tooling::HostTensors::NonFinite &found) {
  return tooling::stopOnNonFinite(step, "muir-run", at, what, when, found,
                                 what != "loss of MoE layer");
}

using Roles = std::initializer_list<int32_t>;

struct Timing {
  double totalMs = 0, minMs = 1e300, checkMs = 0;
};

/// Runs steps firstStep .. firstStep + factors.size() - 1, each with its
/// lr factor, checking the gradients before it and a trained layer's loss
/// after it, printing the table (unless --quiet); non-zero on failure.
static int runSteps(runner::Step &step, tooling::HostTensors &tensors,
                    int64_t firstStep, ArrayRef<double> factors, bool cuda,
                    Timing &t) {
  bool table = !opt.quiet;
  bool printing = table && step.rank() == 0;
  bool hasLoss = llvm::any_of(step.observations(), [](const auto &kv) {
    return StringRef(kv.second.label).starts_with("loss ");
  });
  std::vector<double> hyper = step.defaultHyper();
  auto msSince = [](std::chrono::steady_clock::time_point from) {
    return std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now() - from)
        .count();
  };
  muirrt_comm_reset();
  muirrt_trace_enable(!opt.traceFile.empty());
  for (auto [k, factor] : llvm::enumerate(factors)) {
    int64_t s = firstStep + static_cast<int64_t>(k);
    muirrt_trace_set_step(s);
    if (table)
      tensors.snapshot();
    for (const runner::Argument &a : step.arguments())
      if (a.hyperIndex >= 0)
        hyper[a.hyperIndex] =
            a.defaultValue * (StringRef(a.name).ends_with(".lr") ? factor : 1);
    muirrt_observations_clear();
    tooling::testFault(step.rank(), s);
    // The step's time includes its checks. Gradients are checked before
    // the step applies them (on the GPU, once: they were uploaded).
    auto start = std::chrono::steady_clock::now();
    if (opt.checkFinite && (!cuda || s == firstStep) &&
        stopOnNonFinite(step, s, "gradient", "before the step",
                        tensors.firstNonFinite(Roles{1})))
      return 1;
    t.checkMs += msSince(start);
    if (llvm::Error e = step.run(s, hyper))
      return fail(llvm::toString(std::move(e)));
    auto lossCheck = std::chrono::steady_clock::now();
    if (opt.checkFinite && hasLoss &&
        stopOnNonFinite(step, s, "loss of MoE layer", "after the step",
                        tensors.nonFiniteLoss()))
      return 1;
    t.checkMs += msSince(lossCheck);
    double ms = msSince(start);
    t.totalMs += ms;
    t.minMs = std::min(t.minMs, ms);
    if (!table)
      continue;
    if (llvm::Error e = tensors.download())
      return fail(llvm::toString(std::move(e)));
    if (printing) {
      bool scheduled = opt.lrSchedule != "constant";
      llvm::outs() << "step " << s << ": " << llvm::format("%.2f", ms)
                   << " ms" << (scheduled ? ", lr x" : "");
      if (scheduled)
        llvm::outs() << llvm::format("%g", factor);
      llvm::outs() << "\n";
    }
    tensors.printStep(llvm::outs());
  }
  return 0;
}

/// After the last step: nothing non-finite is written, then the comm
/// stats, the trace, the dump and the saved state; non-zero on failure.
static int writeResults(runner::Step &step, tooling::HostTensors &tensors,
                        int64_t lastStep) {
  int64_t rank = step.rank();
  bool printing = !opt.quiet && rank == 0;
  if (llvm::Error e = tensors.download())
    return fail(llvm::toString(std::move(e)));
  // A finite gradient can still overflow (an update scale of 1e308): the
  // updated tensors are checked after the last step whether or not the
  // run writes them, so such a run never ends with exit 0.
  if (opt.checkFinite &&
      stopOnNonFinite(step, lastStep, "updated tensor", "after the step",
                      tensors.firstNonFinite(Roles{0, 2})))
    return 1;
  // Before the dump, whose gathers are counted too.
  if (opt.commStats)
    tooling::printCommStats(step, llvm::outs());
  if (!opt.traceFile.empty())
    if (llvm::Error e = step.writeTrace(
            opt.traceFile + (muirrt_dist_size() > 1
                                 ? ".rank" + std::to_string(rank)
                                 : std::string())))
      return fail(llvm::toString(std::move(e)));
  // Whole tensors for --dump: every rank takes part in the gathers, rank
  // 0 writes.
  if (!opt.dumpDir.empty())
    if (llvm::Error e = tensors.gather())
      return fail(llvm::toString(std::move(e)));
  // A state is written by every rank, its parts (streamed); before the
  // dump, which rank 0 alone writes, so that no rank waits on another
  // that failed.
  if (!opt.saveState.empty()) {
    if (llvm::Error e = tensors.save(opt.saveState, lastStep))
      return fail(llvm::toString(std::move(e)));
    if (printing && rank == 0)
      llvm::outs() << "muir-run: saved the state after step " << lastStep
                   << " to " << opt.saveState << "\n";
  }
  if (!opt.dumpDir.empty() && rank == 0) {
    if (llvm::Error e = tensors.dump(opt.dumpDir))
      return fail(llvm::toString(std::move(e)));
    if (printing)
      llvm::outs() << "muir-run: wrote " << tensors.count() << " tensors to "
                   << opt.dumpDir << "\n";
  }
  return 0;
}

int main(int argc, char **argv) {
  tooling::restartWithHugePages(argv);
  llvm::InitLLVM initLLVM(argc, argv);
  muir::parseToolCommandLine(
      argc, argv, "muir-run",
      "muir-run: compile and execute a muir training step on the CPU or a "
      "GPU\n\nThe input is a description (.yaml or .json, "
      "docs/description.md) or muir IR (.mlir: high-level, planned or exec, "
      "as muir-compile writes it). Without an input, runs the embedded "
      "default example (examples/default.mlir).\n");
  // The launcher (more than one rank, not yet under mpirun) checks
  // everything it can before mpirun starts, once.
  bool launcher = opt.numRanks > 1 && !runner::underMPI();
  if (runner::underMPI())
    tooling::watchLauncher();
  bool cuda = flags.target == muir::Target::Cuda;
  if (std::string bad = opt.check(flags, launcher, cuda); !bad.empty())
    return fail(bad);
  std::string name;
  auto loaded = loadStep(name);
  if (!loaded)
    return fail(llvm::toString(loaded.takeError()));
  runner::Step &step = **loaded;
  if (llvm::Error e = checkTargets(step))
    return fail(llvm::toString(std::move(e)));
  // A load directory that gives nothing, or holds files no tensor reads,
  // is most likely a mistake: said once (before mpirun), even with
  // --quiet.
  if (!runner::underMPI() && !opt.loadDir.empty())
    for (const std::string &w :
         tooling::loadDirWarnings("--load", opt.loadDir, step))
      llvm::WithColor::warning(llvm::errs(), "muir-run") << w << "\n";
  // Resuming: a state saved for this very step; its counter continues.
  int64_t firstStep = 1;
  std::optional<muir::state::OpenedState> resumed;
  if (!opt.resumeDir.empty()) {
    auto first =
        tooling::openResumed(step, opt.resumeDir, opt.numSteps, resumed);
    if (!first)
      return fail(llvm::toString(first.takeError()));
    firstStep = *first;
  }
  int64_t lastStep = firstStep + opt.numSteps - 1;
  auto factors = tooling::lrSchedule(opt.lrSchedule, firstStep, lastStep);
  if (!factors)
    return fail(llvm::toString(factors.takeError()));
  if (opt.lrSchedule != "constant" &&
      llvm::none_of(step.arguments(), [](const runner::Argument &a) {
        return a.hyperIndex >= 0 && StringRef(a.name).ends_with(".lr");
      }))
    return fail("--lr-schedule: the step has no run-time learning rate (an "
                "f64 argument with muir.role = #muir.role<hyper> named *.lr); its "
                "rates are constants in the IR");
  if (launcher) {
    int rc = tooling::relaunchUnderMPI(opt.numRanks, argc, argv, "muir-run");
    // Every rank has ended: a staging directory one left (killed before
    // its own cleanup ran) is removed here, so that the ranks and the
    // launcher together leave none under any timing of a signal.
    for (const std::string &dir : {std::string(opt.saveState),
                                   std::string(opt.dumpDir)})
      if (!dir.empty())
        muirrt_stage_sweep(dir.c_str());
    return rc;
  }

  if (llvm::Error e = step.prepare(llvm::errs()))
    return fail(llvm::toString(std::move(e)));
  tooling::HostTensors tensors(step);
  if (llvm::Error e = tensors.create())
    return fail(llvm::toString(std::move(e)));
  // --load reads what it finds; a resumed state replaces every tensor,
  // read through the directory checkState checked.
  int32_t numLoaded = 0;
  if (resumed) {
    if (llvm::Error e =
            tooling::loadResumed(step, tensors, *resumed, numLoaded))
      return fail(llvm::toString(std::move(e)));
    resumed.reset();
  } else if (!opt.loadDir.empty()) {
    if (llvm::Error e = tensors.load(opt.loadDir, numLoaded))
      return fail(llvm::toString(std::move(e)));
  }
  tensors.seed(opt.seed);
  if (llvm::Error e = tensors.bind())
    return fail(llvm::toString(std::move(e)));
  if (!opt.quiet && step.rank() == 0) {
    int64_t devices = step.devices();
    llvm::outs() << "muir-run: " << name << ": " << tensors.numParams()
                 << " parameters (" << tensors.numMuon() << " with Muon), "
                 << tensors.count() << " tensors, " << numLoaded
                 << " loaded, seed " << opt.seed << ", " << opt.numSteps
                 << " steps"
                 << (devices > 1 ? ", " + std::to_string(devices) + " ranks"
                                 : std::string())
                 << "\n";
    if (tensors.numMuon() > 0 && !opt.noProbes)
      for (const std::string &line : tensors.legend())
        llvm::outs() << "muir-run: " << line << "\n";
    if (cuda)
      llvm::outs() << "muir-run: CUDA device " << step.deviceDescription()
                   << "\n";
  }
  if (opt.checkFinite && numLoaded > 0 &&
      stopOnNonFinite(step, firstStep, "loaded tensor", "before the step",
                      tensors.firstNonFinite(Roles{0, 1, 2, 3})))
    return 1;
  Timing t;
  if (int rc = runSteps(step, tensors, firstStep, *factors, cuda, t))
    return rc;
  if (int rc = writeResults(step, tensors, lastStep))
    return rc;
  if (step.rank() != 0)
    return 0;
  llvm::outs() << "muir-run: steps " << opt.numSteps << " mean_ms "
               << llvm::format("%.3f", t.totalMs / opt.numSteps) << " min_ms "
               << llvm::format("%.3f", t.minMs);
  // What the non-finite checks cost, part of each step's time.
  if (opt.checkFinite)
    llvm::outs() << " check_ms "
                 << llvm::format("%.3f", t.checkMs / opt.numSteps);
  llvm::outs() << "\n";
  return 0;
}
