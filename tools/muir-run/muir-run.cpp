//===- muir-run.cpp - compile and execute a muir training step ------------===//
//
// Reads a description or muir IR (without an input, the embedded default
// example), compiles it with the step library (muir/Runner/Step.h) and runs
// it for --steps steps on tensors the runtime owns (seeded, or --load /
// --resume), printing per step the time, each Muon matrix's orthogonality
// error and the update norms; --dump and --save-state write the tensors.
//
//===----------------------------------------------------------------------===//
#include "muir/Driver/PipelineFlags.h"
#include "muir/Passes.h"
#include "muir/Runner/State.h"
#include "muir/Runner/Step.h"
#include "muir/Support/Files.h"
#include "muir-rt/Runtime.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"

#include <chrono>
#include <cmath>
#include <csignal>
#include <malloc.h>
#include <unistd.h>

using namespace mlir;
namespace cl = llvm::cl;
namespace runner = mlir::muir::runner;

static cl::opt<std::string> inputFile(cl::Positional,
                                      cl::desc("[step.yaml|step.json|step.mlir]"),
                                      cl::init(""),
    cl::cat(muir::muirFlagCategory()));
static cl::opt<int> numSteps("steps", cl::desc("optimizer steps to run"),
                             cl::init(3),
    cl::cat(muir::muirFlagCategory()));
static cl::opt<uint64_t> seed("seed",
                              cl::desc("seed for tensors not loaded"),
                              cl::init(0),
    cl::cat(muir::muirFlagCategory()));
static cl::opt<std::string>
    loadDir("load", cl::desc("read initial tensors from DIR/<name>.npy"),
            cl::value_desc("DIR"), cl::init(""),
    cl::cat(muir::muirFlagCategory()));
static cl::opt<std::string>
    dumpDir("dump",
            cl::desc("write every tensor to DIR/<name>.npy after the last "
                     "step"),
            cl::value_desc("DIR"), cl::init(""),
    cl::cat(muir::muirFlagCategory()));
static cl::opt<std::string> saveState(
    "save-state",
    cl::desc("after the last step, save the whole state (every tensor, the "
             "step counter, the step's fingerprint) to DIR, replacing it "
             "atomically"),
    cl::value_desc("DIR"), cl::init(""),
    cl::cat(muir::muirFlagCategory()));
static cl::opt<std::string> resumeDir(
    "resume",
    cl::desc("continue from a state saved by --save-state (refused if it "
             "was saved for another step, grid or build, or is damaged)"),
    cl::value_desc("DIR"), cl::init(""),
    cl::cat(muir::muirFlagCategory()));
static cl::opt<std::string> traceFile(
    "trace-fingerprints",
    cl::desc("record, for every op each rank executes, its inputs' and "
             "outputs' hashes to FILE (FILE.rank<R> with several ranks); "
             "compare two runs with muir-trace-diff"),
    cl::value_desc("FILE"), cl::init(""),
    cl::cat(muir::muirFlagCategory()));
static cl::opt<bool> nondeterministic(
    "nondeterministic",
    cl::desc("let MPI order the all-reduces (MPI_Allreduce) instead of "
             "summing in rank order; deterministic is the default"),
    cl::init(false), cl::cat(muir::muirFlagCategory()));
static cl::opt<bool> quiet("quiet",
                           cl::desc("print only the closing summary line"),
                           cl::init(false),
    cl::cat(muir::muirFlagCategory()));
static cl::opt<int>
    numRanks("ranks",
             cl::desc("run N ranks as MPI processes: muir-run starts itself "
                      "under `mpirun -n N` (the grid's devices must be N)"),
             cl::init(1),
    cl::cat(muir::muirFlagCategory()));
static muir::PipelineFlags flags;
static cl::opt<std::string> lrSchedule(
    "lr-schedule",
    cl::desc("multiply every group's learning rate, step by step: "
             "'constant' (1), 'cosine:W:T[:MIN]' (linear warmup over W "
             "steps, cosine decay to MIN (default 0) at step T, MIN after), "
             "'file:PATH' (one factor per line, line s for step s); the "
             "step reads its learning rates at run time, nothing recompiles"),
    cl::value_desc("SCHEDULE"), cl::init("constant"),
    cl::cat(muir::muirFlagCategory()));
static cl::opt<bool> commStats(
    "comm-stats",
    cl::desc("after the last step, every rank prints the bytes it sent and "
             "the collectives it ran per grid-axis group (runtime counters)"),
    cl::init(false),
    cl::cat(muir::muirFlagCategory()));
static cl::opt<bool> cudaBf16(
    "cuda-bf16",
    cl::desc("with --target=cuda, matrix products with bf16 inputs and fp32 "
             "accumulation (tensor cores) instead of fp32"),
    cl::init(false), cl::cat(muir::muirFlagCategory()));
static cl::opt<bool> cudaGraph(
    "cuda-graph",
    cl::desc("with --target=cuda, run steps after the first as one captured "
             "CUDA graph (--cuda-graph=false: launch op by op)"),
    cl::init(true), cl::cat(muir::muirFlagCategory()));
static cl::opt<bool> cudaCublasGrouped(
    "cuda-cublas-grouped-gemm",
    cl::desc("with --target=cuda, run MoE layers' grouped products with "
             "cuBLAS's grouped GEMM, which takes the expert sizes on the "
             "host (each call waits for the GPU, so steps run op by op, "
             "without a CUDA graph), instead of the runtime's kernel that "
             "reads them on the device"),
    cl::init(false), cl::cat(muir::muirFlagCategory()));
static cl::opt<bool> checkFinite(
    "check-finite",
    cl::desc("stop, naming the tensor, the step and the rank, when a "
             "gradient holds a NaN or infinity before a step or a trained "
             "MoE layer's loss is not finite after it; nothing is written "
             "(--check-finite=false: no check)"),
    cl::init(true), cl::cat(muir::muirFlagCategory()));
static cl::opt<bool> noProbes(
    "no-probes",
    cl::desc("do not record Newton-Schulz outputs (no orthogonality error)"),
    cl::init(false),
    cl::cat(muir::muirFlagCategory()));

// The embedded default: a slice of a small transformer with real aspect
// ratios (square attention projection, wide and tall MLP matrices) and one
// 1-D norm weight that AdamW takes.
static const char *kDefaultModule = R"mlir(
muir.grid @world axes = ["dp"] shape = [1]
func.func @step(
    %wq: tensor<512x512xf32> {muir.name = "attn.wq"},
    %wq_g: tensor<512x512xf32> {muir.name = "attn.wq.grad"},
    %wq_m: tensor<512x512xf32> {muir.name = "attn.wq.momentum"},
    %up: tensor<2048x512xf32> {muir.name = "mlp.up"},
    %up_g: tensor<2048x512xf32> {muir.name = "mlp.up.grad"},
    %up_m: tensor<2048x512xf32> {muir.name = "mlp.up.momentum"},
    %down: tensor<512x2048xf32> {muir.name = "mlp.down"},
    %down_g: tensor<512x2048xf32> {muir.name = "mlp.down.grad"},
    %down_m: tensor<512x2048xf32> {muir.name = "mlp.down.momentum"},
    %nw: tensor<512xf32> {muir.name = "norm.weight"},
    %nw_g: tensor<512xf32> {muir.name = "norm.weight.grad"},
    %nw_m: tensor<512xf32> {muir.name = "norm.weight.exp_avg"},
    %nw_v: tensor<512xf32> {muir.name = "norm.weight.exp_avg_sq"},
    %t: i64 {muir.role = "step"})
    -> (tensor<512x512xf32> {muir.updates = "attn.wq"},
        tensor<512x512xf32> {muir.updates = "attn.wq.momentum"},
        tensor<2048x512xf32> {muir.updates = "mlp.up"},
        tensor<2048x512xf32> {muir.updates = "mlp.up.momentum"},
        tensor<512x2048xf32> {muir.updates = "mlp.down"},
        tensor<512x2048xf32> {muir.updates = "mlp.down.momentum"},
        tensor<512xf32> {muir.updates = "norm.weight"},
        tensor<512xf32> {muir.updates = "norm.weight.exp_avg"},
        tensor<512xf32> {muir.updates = "norm.weight.exp_avg_sq"}) {
  %wq1, %wq_m1 = muir.muon_update %wq, %wq_g, %wq_m
      {lr = 0.02, weight_decay = 0.1} : tensor<512x512xf32>
  %up1, %up_m1 = muir.muon_update %up, %up_g, %up_m
      {lr = 0.02, weight_decay = 0.1} : tensor<2048x512xf32>
  %down1, %down_m1 = muir.muon_update %down, %down_g, %down_m
      {lr = 0.02, weight_decay = 0.1} : tensor<512x2048xf32>
  %nw1, %nw_m1, %nw_v1 = muir.adamw_update %nw, %nw_g, %nw_m, %nw_v step %t
      {lr = 0.001, beta2 = 0.95} : tensor<512xf32>
  return %wq1, %wq_m1, %up1, %up_m1, %down1, %down_m1, %nw1, %nw_m1, %nw_v1
      : tensor<512x512xf32>, tensor<512x512xf32>, tensor<2048x512xf32>,
        tensor<2048x512xf32>, tensor<512x2048xf32>, tensor<512x2048xf32>,
        tensor<512xf32>, tensor<512xf32>, tensor<512xf32>
}
)mlir";


static int fail(const Twine &msg) {
  if (!msg.isTriviallyEmpty() && !msg.str().empty())
    llvm::WithColor::error(llvm::errs(), "muir-run") << msg << "\n";
  return 1;
}

/// The learning-rate factor of each step from --lr-schedule, for steps
/// first..last; an error says what is wrong with the flag.
static llvm::Expected<std::vector<double>> lrFactors(int64_t first,
                                                     int64_t last) {
  auto bad = [](const Twine &why) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "--lr-schedule: " + why);
  };
  std::vector<double> factors;
  StringRef spec = lrSchedule;
  if (spec == "constant")
    return std::vector<double>(last - first + 1, 1.0);
  if (spec.consume_front("cosine:")) {
    SmallVector<StringRef> parts;
    spec.split(parts, ':');
    double w = 0, t = 0, lo = 0;
    if (parts.size() < 2 || parts.size() > 3 || parts[0].getAsDouble(w) ||
        parts[1].getAsDouble(t) ||
        (parts.size() == 3 && parts[2].getAsDouble(lo)) || w < 0 || t <= w ||
        lo < 0 || lo > 1)
      return bad("expected cosine:WARMUP:TOTAL[:MIN] with 0 <= WARMUP < "
                 "TOTAL and 0 <= MIN <= 1, got '" + lrSchedule + "'");
    for (int64_t s = first; s <= last; ++s)
      factors.push_back(
          s <= w    ? s / w
          : s >= t  ? lo
                    : lo + (1 - lo) * 0.5 *
                               (1 + std::cos(M_PI * (s - w) / (t - w))));
    return factors;
  }
  if (spec.consume_front("file:")) {
    std::string why;
    auto buffer = muir::readBoundedFile(spec, why);
    if (!buffer)
      return bad(why);
    SmallVector<StringRef> lines;
    buffer->getBuffer().split(lines, '\n', -1, false);
    for (auto [i, line] : llvm::enumerate(lines)) {
      double f;
      if (line.trim().getAsDouble(f) || !std::isfinite(f) || f < 0)
        return bad(spec + ":" + Twine(i + 1) + ": expected a factor >= 0, "
                   "got '" + line.trim() + "'");
      if (static_cast<int64_t>(i) + 1 >= first &&
          static_cast<int64_t>(i) + 1 <= last)
        factors.push_back(f);
    }
    if (static_cast<int64_t>(lines.size()) < last)
      return bad(spec + " has " + Twine(lines.size()) +
                 " factors, but the run ends at step " + Twine(last));
    return factors;
  }
  return bad("expected constant, cosine:WARMUP:TOTAL[:MIN] or file:PATH, "
             "got '" + lrSchedule + "'");
}

/// Test-only fault injection for the fault tests: MUIR_TEST_FAULT =
/// "kill:R:S" makes rank R die (SIGKILL) before step S, "hang:R:S" makes it
/// stop taking part (sleep) there.
static void testFault(int rank, int step) {
  const char *spec = getenv("MUIR_TEST_FAULT");
  if (!spec)
    return;
  SmallVector<StringRef> parts;
  StringRef(spec).split(parts, ':');
  int r = -1, s = -1;
  if (parts.size() != 3 || parts[1].getAsInteger(10, r) ||
      parts[2].getAsInteger(10, s) || r != rank || s != step)
    return;
  if (parts[0] == "kill")
    ::raise(SIGKILL);
  if (parts[0] == "hang")
    for (;;)
      ::sleep(1000);
}

/// The flags that choose how a step compiles; exec IR was compiled
/// already, and a planned module distributed, so they are refused there.
static SmallVector<StringRef> givenCompileFlags(muir::Stage stage) {
  SmallVector<StringRef> given;
  auto check = [&](const cl::Option &o, bool distributeOnly) {
    if (o.getNumOccurrences() &&
        (stage == muir::Stage::Exec ||
         (stage == muir::Stage::Planned && distributeOnly)))
      given.push_back(o.ArgStr);
  };
  check(flags.nsMode, true);
  check(flags.dpAssign, true);
  if (stage == muir::Stage::Exec) {
    check(flags.syrk, false);
    check(flags.batch, false);
    check(flags.fuseAllReduce, false);
    check(flags.chunkRows, false);
    check(noProbes, false);
  }
  return given;
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  // --help lists muir's flags only (LLVM's and MLIR's are hidden).
  cl::HideUnrelatedOptions(muir::muirFlagCategory());
  cl::ParseCommandLineOptions(
      argc, argv,
      "muir-run: compile and execute a muir training step on the CPU or a "
      "GPU\n\nWithout an input file, runs the embedded default example.\n");
  // The launcher (more than one rank, not yet under mpirun) checks
  // everything it can before mpirun starts, once.
  bool launcher = numRanks > 1 && !runner::underMPI();
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
    return fail(Twine(!traceFile.empty() ? "--trace-fingerprints"
                                         : "--comm-stats") +
                " is not available with --target=cuda yet");
  if (!cuda && (cudaBf16 || cudaCublasGrouped))
    return fail(Twine(cudaBf16 ? "--cuda-bf16" : "--cuda-cublas-grouped-gemm") +
                " needs --target=cuda");
  // No output may overwrite an input or another output; --save-state into
  // the state being resumed continues a run (replaced atomically).
  {
    std::string input = inputFile.empty() ? "<default>" : inputFile.getValue();
    std::vector<std::pair<std::string, std::string>> inputs = {
        {"the input", input}, {"--load", loadDir}, {"--resume", resumeDir}};
    std::vector<std::pair<std::string, std::string>> outputs = {
        {"--dump", dumpDir},
        {"--save-state", saveState},
        {"--trace-fingerprints", traceFile}};
    for (size_t i = 0; i < outputs.size(); ++i) {
      const auto &[flag, path] = outputs[i];
      if (path.empty())
        continue;
      for (const auto &[what, in] : inputs)
        if (!in.empty() && muir::samePath(path, in) &&
            !(flag == "--save-state" && what == "--resume"))
          return fail(flag + " '" + path + "' is also " + what +
                      "; write it elsewhere");
      for (size_t j = 0; j < i; ++j)
        if (!outputs[j].second.empty() &&
            muir::samePath(path, outputs[j].second))
          return fail(outputs[j].first + " and " + flag + " both write '" +
                      path + "'; give them different paths");
    }
  }
  // Exec IR allocates its Newton-Schulz temporaries every step: keep freed
  // blocks in the heap, so later steps reuse warm pages.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);

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
  options.pipeline = flags.options(!noProbes, muir::Machine::Cpu);
  options.target = flags.targetOptions();
  options.cudaBf16 = cudaBf16;
  options.cudaGraph = cudaGraph;
  options.cudaCublasGrouped = cudaCublasGrouped;
  options.deterministic = !nondeterministic;
  options.trace = !traceFile.empty();
  options.identity = flags.identity();
  // What muir-compile wrote runs from its stage; flags that would change
  // nothing there are refused.
  {
    MLIRContext probe(MLIRContext::Threading::DISABLED);
    DialectRegistry registry;
    muir::registerMuirDialects(registry);
    probe.appendDialectRegistry(registry);
    probe.allowUnregisteredDialects();
    ScopedDiagnosticHandler quietHandler(&probe,
                                         [](Diagnostic &) { return success(); });
    StringRef ext = llvm::sys::path::extension(name);
    if (ext != ".yaml" && ext != ".yml" && ext != ".json")
      if (auto m = parseSourceString<ModuleOp>(source, &probe))
        if (SmallVector<StringRef> given =
                givenCompileFlags(muir::detectStage(*m));
            !given.empty())
          return fail("--" + given.front() + " has no effect on " +
                      (muir::detectStage(*m) == muir::Stage::Exec
                           ? "exec IR, which is compiled"
                           : "planned IR, which is distributed") +
                      " already; give it to muir-compile with the description");
  }
  auto loaded = runner::Step::load(source, name, options, llvm::errs());
  if (!loaded)
    return fail(llvm::toString(loaded.takeError()));
  runner::Step &step = **loaded;
  int64_t devices = step.devices();
  if (!runner::underMPI() && devices != numRanks)
    return fail(numRanks == 1
                    ? "the grid (" + step.identity().grid + ") has " +
                          Twine(devices) + " devices; run it with --ranks " +
                          Twine(devices)
                    : "--ranks " + Twine(numRanks) + " does not match the " +
                          Twine(devices) + " devices of the grid (" +
                          step.identity().grid + "); run it with --ranks " +
                          Twine(devices));
  std::vector<std::string> names;
  for (const runner::Argument &a : step.arguments())
    if (a.isTensor())
      names.push_back(a.name);
  // Everything that can fail before a step runs, checked before any work
  // (for several ranks, before mpirun starts).
  if (!runner::underMPI()) {
    if (!loadDir.empty() && !llvm::sys::fs::is_directory(loadDir))
      return fail("--load: cannot open directory '" + loadDir + "': " +
                  (llvm::sys::fs::exists(loadDir)
                       ? std::make_error_code(std::errc::not_a_directory)
                       : std::make_error_code(
                             std::errc::no_such_file_or_directory))
                      .message());
    if (!saveState.empty())
      if (llvm::Error e = muir::state::checkSaveTarget(saveState))
        return fail(llvm::toString(std::move(e)));
    if (!traceFile.empty()) {
      // FILE, or FILE.rank<R>: written at the end, so checked now.
      SmallString<256> parent(traceFile.getValue());
      llvm::sys::path::remove_filename(parent);
      if (parent.empty())
        parent = ".";
      for (int r = 0; r < (devices > 1 ? devices : 1); ++r) {
        std::string path = traceFile.getValue() +
                           (devices > 1 ? ".rank" + std::to_string(r) : "");
        if (llvm::sys::fs::is_directory(path))
          return fail("--trace-fingerprints: '" + path + "' is a directory");
      }
      if (!llvm::sys::fs::is_directory(parent) ||
          llvm::sys::fs::access(parent, llvm::sys::fs::AccessMode::Write))
        return fail("--trace-fingerprints: '" + parent +
                    "' is not a writable directory");
    }
    if (!dumpDir.empty()) {
      std::vector<const char *> cnames;
      for (const std::string &n : names)
        cnames.push_back(n.c_str());
      if (muirrt_check_dump(dumpDir.c_str(), cnames.data(),
                            static_cast<int32_t>(cnames.size())))
        return fail("--dump: " + Twine(muirrt_last_error()));
    }
  }
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
  auto factors = lrFactors(firstStep, lastStep);
  if (!factors)
    return fail(llvm::toString(factors.takeError()));
  if (launcher)
    return runner::relaunchUnderMPI(numRanks, argc, argv, "muir-run");

  if (llvm::Error e = step.prepare())
    return fail(llvm::toString(std::move(e)));
  int64_t rank = step.rank();
  bool printing = !quiet && rank == 0;
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
                 << (devices > 1 ? ", " + std::to_string(devices) +
                                       " ranks (rank 0 shown)"
                                 : std::string())
                 << "\n";
    if (cuda)
      llvm::outs() << "muir-run: CUDA device " << step.deviceDescription()
                   << "\n";
  }
  // Every rank looks; if any found a non-finite value, the lowest such rank
  // says where (one line) and all of them stop, writing nothing.
  auto stopOnNonFinite = [&](int64_t at, StringRef what, StringRef when,
                             const runner::HostTensors::NonFinite &found) {
    int32_t first = muirrt_dist_first(found.index >= 0);
    if (first < 0)
      return false;
    if (first == rank)
      llvm::WithColor::error(llvm::errs(), "muir-run")
          << "rank " << rank << ", step " << at << ": " << what << " '"
          << found.name << "' holds "
          << (std::isnan(found.value) ? "nan" : found.value > 0 ? "inf" : "-inf")
          << (what != "loss of MoE layer"
                  ? " at element " + std::to_string(found.index) +
                        (devices > 1 ? " of the rank's part" : "")
                  : std::string())
          << "; stopped " << when
          << ", nothing written (--check-finite=false turns this check off)\n";
    return true;
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
    if (printing)
      tensors.snapshot();
    double factor = (*factors)[s - firstStep];
    for (auto [k, a] : llvm::enumerate(step.arguments()))
      if (a.hyperIndex >= 0)
        hyper[a.hyperIndex] = a.defaultValue *
                              (StringRef(a.name).ends_with(".lr") ? factor : 1);
    muirrt_observations_clear();
    testFault(rank, s);
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
    runner::HostTensors::NonFinite loss;
    for (auto &[slot, obs] : step.observations()) {
      int64_t numel = 0;
      const float *data = step.observation(slot, numel);
      StringRef label = obs.label;
      if (checkFinite && hasLoss && data && numel > 0 &&
          label.consume_front("loss ") && !std::isfinite(data[0]) &&
          loss.index < 0)
        loss = {label.str(), 0, data[0]};
    }
    if (checkFinite && hasLoss &&
        stopOnNonFinite(s, "loss of MoE layer", "after the step", loss))
      return 1;
    checkMs += msSince(lossCheck);
    double ms = msSince(start);
    totalMs += ms;
    minMs = std::min(minMs, ms);
    if (!printing)
      continue;
    if (llvm::Error e = tensors.download())
      return fail(llvm::toString(std::move(e)));
    llvm::outs() << "step " << s << ": " << llvm::format("%.2f", ms) << " ms"
                 << (lrSchedule != "constant" ? ", lr x" : "");
    if (lrSchedule != "constant")
      llvm::outs() << llvm::format("%g", factor);
    llvm::outs() << "\n";
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
