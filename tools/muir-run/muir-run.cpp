//===- muir-run.cpp - compile and execute a muir training step ------------===//
//
// Reads a muir module (high-level or exec IR; without an input, the embedded
// default example), compiles it for the CPU, JIT-compiles the exec function
// and runs it for --steps steps with the runtime owning every named tensor.
// Prints per step the time, each Muon matrix's orthogonality error and the
// update norms; --load / --dump read and write tensors as .npy files.
//
//===----------------------------------------------------------------------===//
#include "muir/Driver/Diagnostics.h"
#include "muir/Driver/PipelineFlags.h"
#include "muir/Import/Description.h"
#include "muir/Passes.h"
#include "muir/Runner/State.h"
#include "muir/Support/Files.h"
#include "muir/Version.h"
#include "muir-rt/Runtime.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/xxhash.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/WithColor.h"

#include <chrono>
#include <cmath>
#include <fcntl.h>
#include <fstream>
#include <sys/prctl.h>
#include <poll.h>
#include <sys/wait.h>
#include <csignal>
#include <thread>
#include <set>
#include <cstring>
#include <dlfcn.h>
#include <malloc.h>
#include <unistd.h>

using namespace mlir;
namespace cl = llvm::cl;

static cl::opt<std::string> inputFile(cl::Positional,
                                      cl::desc("[input.mlir]"),
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
  llvm::WithColor::error(llvm::errs(), "muir-run") << msg << "\n";
  return 1;
}

namespace {
/// A dimension of a tensor split over the group of a grid axis.
struct Split {
  int64_t dim;
  int64_t mask; ///< the axis as a runtime axes mask
};

/// One argument of the exec entry function.
struct EntryArg {
  std::string name;     // empty for the step counter
  int32_t tensor = -1;  // this rank's shard in the local context
  int32_t global = -1;  // the whole tensor in the global context
  SmallVector<Split> splits;
};

/// Copies between a whole tensor and this rank's shard: to the shard by
/// slicing (rank-local), back by all-gathers over each split's group (every
/// rank must call it, in the same order).
void copyShard(MuirRtContext *global, const EntryArg &a, MuirRtContext *local,
               bool toShard) {
  int32_t rank = muirrt_tensor_rank(local, a.tensor);
  ArrayRef<int64_t> shape(muirrt_tensor_shape(local, a.tensor), rank);
  ArrayRef<int64_t> whole(muirrt_tensor_shape(global, a.global), rank);
  float *shard = muirrt_tensor_data(local, a.tensor);
  float *full = muirrt_tensor_data(global, a.global);
  int64_t numel = muirrt_tensor_numel(local, a.tensor);
  if (a.splits.empty()) {
    if (toShard)
      std::copy(full, full + numel, shard);
    else
      std::copy(shard, shard + numel, full);
    return;
  }
  if (!toShard) {
    // Gather one split dimension at a time, growing the tensor.
    std::vector<float> cur(shard, shard + numel);
    SmallVector<int64_t> curShape(shape);
    for (const Split &s : a.splits) {
      int64_t outer = 1, inner = 1;
      for (int64_t d = 0; d < rank; ++d)
        (d < s.dim ? outer : inner) *= curShape[d];
      int64_t g = muirrt_dist_group_size(s.mask);
      std::vector<float> next(cur.size() * g);
      muirrt_all_gather(s.mask, cur.data(), next.data(), outer, inner);
      cur.swap(next);
      curShape[s.dim] *= g;
    }
    std::copy(cur.begin(), cur.end(), full);
    return;
  }
  // Slice: offset of this rank's block along each split dimension; copy
  // row by row (the last dimension is contiguous in both).
  SmallVector<int64_t> offset(rank, 0);
  for (const Split &s : a.splits)
    offset[s.dim] = muirrt_dist_group_rank(s.mask) * shape[s.dim];
  int64_t rowLen = shape.back(), rows = numel / std::max<int64_t>(1, rowLen);
  SmallVector<int64_t> idx(rank, 0);
  for (int64_t r = 0; r < rows; ++r) {
    // idx holds the local coordinates of row r (all but the last dim).
    int64_t rem = r;
    for (int64_t d = rank - 2; d >= 0; --d) {
      idx[d] = rem % shape[d];
      rem /= shape[d];
    }
    int64_t src = 0;
    for (int64_t d = 0; d < rank; ++d)
      src = src * whole[d] + (d == rank - 1 ? offset[d] : idx[d] + offset[d]);
    std::copy(full + src, full + src + rowLen, shard + r * rowLen);
  }
}

/// What the host needs to know about an observation slot.
struct Observation {
  std::string label;
  SmallVector<int64_t> shape;
};

int32_t roleOf(StringRef name, StringAttr explicitRole) {
  StringRef role = explicitRole ? explicitRole.getValue() : "";
  if (role == "data")
    return MUIRRT_ROLE_DATA;
  if (role == "grad" || (role.empty() && name.ends_with(".grad")))
    return MUIRRT_ROLE_GRAD;
  if (role == "state" ||
      (role.empty() &&
       (name.ends_with(".momentum") || name.ends_with(".exp_avg") ||
        name.ends_with(".exp_avg_sq"))))
    return MUIRRT_ROLE_STATE;
  return MUIRRT_ROLE_PARAM;
}

std::string shapeString(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::interleave(shape, os, "x");
  return s.empty() ? "scalar" : s;
}

void registerRuntimeSymbols(ExecutionEngine &engine) {
  engine.registerSymbols([](llvm::orc::MangleAndInterner interner) {
    llvm::orc::SymbolMap map;
    auto add = [&](const char *name, void *fn) {
      map[interner(name)] = {llvm::orc::ExecutorAddr::fromPtr(fn),
                             llvm::JITSymbolFlags::Exported};
    };
    add("muirrt_sgemm", reinterpret_cast<void *>(&muirrt_sgemm));
    add("muirrt_ssyrk", reinterpret_cast<void *>(&muirrt_ssyrk));
    add("muirrt_frobenius_normalize",
        reinterpret_cast<void *>(&muirrt_frobenius_normalize));
    add("muirrt_transpose", reinterpret_cast<void *>(&muirrt_transpose));
    add("muirrt_sum_squares", reinterpret_cast<void *>(&muirrt_sum_squares));
    add("muirrt_scale_by_norm",
        reinterpret_cast<void *>(&muirrt_scale_by_norm));
    add("muirrt_observe", reinterpret_cast<void *>(&muirrt_observe));
    add("muirrt_all_reduce", reinterpret_cast<void *>(&muirrt_all_reduce));
    add("muirrt_all_gather", reinterpret_cast<void *>(&muirrt_all_gather));
    add("muirrt_all_gatherv", reinterpret_cast<void *>(&muirrt_all_gatherv));
    add("muirrt_reduce_scatter",
        reinterpret_cast<void *>(&muirrt_reduce_scatter));
    add("muirrt_all_to_all", reinterpret_cast<void *>(&muirrt_all_to_all));
    add("muirrt_all_to_allv", reinterpret_cast<void *>(&muirrt_all_to_allv));
    add("muirrt_ssyrk_rows", reinterpret_cast<void *>(&muirrt_ssyrk_rows));
    add("muirrt_route", reinterpret_cast<void *>(&muirrt_route));
    add("muirrt_grouped_gemm",
        reinterpret_cast<void *>(&muirrt_grouped_gemm));
    add("muirrt_grouped_gemm_wgrad",
        reinterpret_cast<void *>(&muirrt_grouped_gemm_wgrad));
    add("muirrt_route_grad", reinterpret_cast<void *>(&muirrt_route_grad));
    add("muirrt_mse_loss", reinterpret_cast<void *>(&muirrt_mse_loss));
    add("muirrt_trace_buffer",
        reinterpret_cast<void *>(&muirrt_trace_buffer));
    add("muirrt_capacity", reinterpret_cast<void *>(&muirrt_capacity));
    add("muirrt_moe_dispatch",
        reinterpret_cast<void *>(&muirrt_moe_dispatch));
    add("muirrt_moe_combine", reinterpret_cast<void *>(&muirrt_moe_combine));
    add("muirrt_moe_combine_weights_grad",
        reinterpret_cast<void *>(&muirrt_moe_combine_weights_grad));
    add("muirrt_triangle_all_reduce_start",
        reinterpret_cast<void *>(&muirrt_triangle_all_reduce_start));
    add("muirrt_triangle_all_reduce_wait",
        reinterpret_cast<void *>(&muirrt_triangle_all_reduce_wait));
    add("muirrt_dist_group_rank",
        reinterpret_cast<void *>(&muirrt_dist_group_rank));
    add("muirrt_broadcast", reinterpret_cast<void *>(&muirrt_broadcast));
    add("muirrt_all_slice", reinterpret_cast<void *>(&muirrt_all_slice));
    return map;
  });
}
} // namespace

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

/// Starts this very command line again as `mpirun -n N muir-run ...`; each
/// rank then sees OMPI_COMM_WORLD_SIZE and runs its part. OpenBLAS threads
/// are divided among the ranks unless the environment sets them.
///
/// SIGINT, SIGTERM and SIGHUP are passed on to mpirun, which ends its
/// ranks; if it has not ended within kStopSeconds, its ranks and it are
/// killed, so that no process of the run outlives muir-run by more.
///
/// mpirun's own banners (framed by lines of dashes on its stderr) would
/// bury the ranks' messages: they are dropped, except that a rank ended by
/// a signal is named in one line.
static volatile sig_atomic_t launchedPid = 0;
static volatile sig_atomic_t stopSignal = 0;

static void forwardSignal(int sig) {
  stopSignal = sig;
  if (launchedPid > 0)
    ::kill(static_cast<pid_t>(launchedPid), sig);
}

/// Kills `parent`'s children (mpirun's ranks have process groups of
/// their own), then `parent`.
static void killTree(pid_t parent) {
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it("/proc", ec), end;
       it != end && !ec; it.increment(ec)) {
    StringRef name = llvm::sys::path::filename(it->path());
    pid_t pid = 0;
    if (name.getAsInteger(10, pid))
      continue;
    // /proc files report size 0: read them as a stream.
    std::ifstream in(it->path() + "/stat");
    std::string line;
    if (!std::getline(in, line))
      continue;
    // "pid (comm) state ppid ...": the command may hold spaces.
    StringRef text = line;
    SmallVector<StringRef> fields;
    text.drop_front(text.rfind(')') + 1).split(fields, ' ', -1, false);
    pid_t ppid = 0;
    if (fields.size() > 1 && !fields[1].getAsInteger(10, ppid) &&
        ppid == parent)
      ::kill(pid, SIGKILL);
  }
  ::kill(parent, SIGKILL);
}

namespace {
/// Passes mpirun's stderr through, line by line, without the banners
/// (framed by lines of dashes) that only repeat what a rank said: that a
/// rank exited non-zero, which its own message explains. A rank ended by a
/// signal is named in one line; any other banner (mpirun's own trouble)
/// passes through whole.
class StderrFilter {
public:
  void feed(StringRef chunk) {
    pending += chunk.str();
    size_t nl;
    while ((nl = pending.find('\n')) != std::string::npos) {
      line(StringRef(pending).take_front(nl));
      pending.erase(0, nl + 1);
    }
  }
  void finish() {
    if (!pending.empty())
      line(pending);
    pending.clear();
    if (inBanner)
      endBanner();
    inBanner = false;
  }

private:
  void line(StringRef text) {
    if (text.size() >= 10 && text.find_first_not_of('-') == StringRef::npos) {
      if (inBanner)
        endBanner();
      inBanner = !inBanner;
      return;
    }
    if (inBanner) {
      banner += text.str() + "\n";
      return;
    }
    llvm::errs() << text << "\n";
    llvm::errs().flush();
  }
  void endBanner() {
    // "mpirun noticed that process rank 1 with PID 0 on node x exited on
    // signal 9 (Killed)."
    StringRef b = banner;
    size_t at = b.find("process rank ");
    size_t sig = b.find("exited on signal ");
    if (at != StringRef::npos && sig != StringRef::npos) {
      StringRef rank = b.substr(at + 13).take_while(llvm::isDigit);
      StringRef what = b.substr(sig + 17).take_until(
          [](char c) { return c == '.' || c == '\n'; });
      llvm::WithColor::error(llvm::errs(), "muir-run")
          << "rank " << rank << " ended on signal " << what.rtrim() << "\n";
    } else if (!b.contains("Primary job  terminated normally") &&
               !b.contains("exited with non-zero status")) {
      std::string dashes(74, '-');
      llvm::errs() << dashes << "\n" << b << dashes << "\n";
    }
    llvm::errs().flush();
    banner.clear();
  }

  std::string pending, banner;
  bool inBanner = false;
};
} // namespace

static int relaunchUnderMPI(int argc, char **argv) {
  constexpr int kStopSeconds = 5;
  auto mpirun = llvm::sys::findProgramByName("mpirun");
  if (!mpirun)
    return fail("--ranks " + Twine(numRanks) +
                " needs mpirun (Debian: openmpi-bin)");
  std::string self = llvm::sys::fs::getMainExecutable(argv[0],
                                                      (void *)&fail);
  std::string ranks = std::to_string(numRanks);
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  std::string threads =
      "OPENBLAS_NUM_THREADS=" +
      std::string(getenv("OPENBLAS_NUM_THREADS")
                      ? getenv("OPENBLAS_NUM_THREADS")
                      : std::to_string(std::max(1u, cores / numRanks)));
  std::vector<std::string> cmd = {*mpirun, "-n", ranks, "--oversubscribe",
                                  "--bind-to", "none", "-x", threads};
  if (geteuid() == 0)
    cmd.push_back("--allow-run-as-root");
  cmd.push_back(self);
  for (int i = 1; i < argc; ++i)
    cmd.push_back(argv[i]);
  std::vector<char *> cargv;
  for (std::string &a : cmd)
    cargv.push_back(a.data());
  cargv.push_back(nullptr);

  struct sigaction action = {};
  action.sa_handler = forwardSignal;
  sigemptyset(&action.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP})
    ::sigaction(sig, &action, nullptr);
  int errPipe[2];
  if (::pipe2(errPipe, O_CLOEXEC) != 0)
    return fail("cannot run mpirun: " + Twine(std::strerror(errno)));
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = ::fork();
  if (pid < 0)
    return fail("cannot run mpirun: " + Twine(std::strerror(errno)));
  if (pid == 0) {
    ::dup2(errPipe[1], STDERR_FILENO);
    ::execv(cargv[0], cargv.data());
    std::fprintf(stderr, "muir-run: error: cannot run %s: %s\n", cargv[0],
                 std::strerror(errno));
    std::_Exit(127);
  }
  launchedPid = pid;
  ::close(errPipe[1]);
  StderrFilter filter;
  auto drain = [&](int timeoutMs) {
    struct pollfd pfd = {errPipe[0], POLLIN, 0};
    if (::poll(&pfd, 1, timeoutMs) <= 0)
      return false;
    char buf[4096];
    ssize_t n = ::read(errPipe[0], buf, sizeof(buf));
    if (n > 0)
      filter.feed(StringRef(buf, n));
    return n > 0;
  };
  int status = 0;
  auto stopAt = std::chrono::steady_clock::time_point::max();
  while (true) {
    pid_t got = ::waitpid(pid, &status, WNOHANG);
    if (got == pid)
      break;
    if (got < 0 && errno != EINTR)
      return fail("waiting for mpirun: " + Twine(std::strerror(errno)));
    if (stopSignal && stopAt == std::chrono::steady_clock::time_point::max())
      stopAt = std::chrono::steady_clock::now() +
               std::chrono::seconds(kStopSeconds);
    if (std::chrono::steady_clock::now() > stopAt) {
      killTree(pid);
      ::waitpid(pid, &status, 0);
      break;
    }
    drain(50);
  }
  // What the ranks wrote last (the pipe closes when the last one ends).
  while (drain(stopSignal ? 100 : 1000))
    ;
  filter.finish();
  ::close(errPipe[0]);
  if (stopSignal)
    return 128 + stopSignal;
  if (WIFSIGNALED(status))
    return 128 + WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

using muir::state::hex64;

// The CUDA runtime (libmuir_rt_cuda.so), loaded only for --target=cuda so
// that the CPU path never needs CUDA's libraries or a driver.
struct CudaLib {
  void *handle = nullptr;
  int (*init)(int) = nullptr;
  const char *(*lastError)() = nullptr;
  const char *(*deviceName)() = nullptr;
  int (*distInit)(const int64_t *, int32_t) = nullptr;
  void (*distFinalize)() = nullptr;
  void (*setDeterministic)(int32_t) = nullptr;
  void (*setPrecision)(int32_t) = nullptr;
  void (*setGroupedGemm)(int32_t) = nullptr;
  int (*alloc)(void **, size_t) = nullptr;
  int (*free)(void *) = nullptr;
  int (*toDevice)(void *, const void *, size_t) = nullptr;
  int (*toHost)(void *, const void *, size_t) = nullptr;
  int (*synchronize)() = nullptr;
  int (*graphBegin)() = nullptr;
  int (*graphEnd)() = nullptr;
  int (*graphLaunch)() = nullptr;
  const float *(*observation)(int64_t, int64_t *) = nullptr;

  /// Loads the library (MUIR_CUDA_RUNTIME, else lib/ beside bin/muir-run);
  /// an empty string on success, else why not.
  std::string load(const char *argv0) {
    std::string path;
    if (const char *env = getenv("MUIR_CUDA_RUNTIME")) {
      path = env;
    } else {
      std::string exe = llvm::sys::fs::getMainExecutable(
          argv0, reinterpret_cast<void *>(&muirrt_sgemm));
      SmallString<256> p(llvm::sys::path::parent_path(
          llvm::sys::path::parent_path(exe)));
      llvm::sys::path::append(p, "lib", "libmuir_rt_cuda.so");
      path = p.str().str();
    }
    handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle)
      return std::string("cannot load the CUDA runtime: ") + dlerror() +
             " (build with the CUDA toolkit, or set MUIR_CUDA_RUNTIME)";
    std::string missing;
    auto sym = [&](const char *name, auto &fn) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
          dlsym(handle, name));
      if (!fn)
        missing += std::string(missing.empty() ? "" : ", ") + name;
    };
    sym("muirrt_cuda_init", init);
    sym("muirrt_cuda_last_error", lastError);
    sym("muirrt_cuda_device_name", deviceName);
    sym("muirrt_cuda_dist_init", distInit);
    sym("muirrt_cuda_dist_finalize", distFinalize);
    sym("muirrt_cuda_set_deterministic", setDeterministic);
    sym("muirrt_cuda_set_precision", setPrecision);
    sym("muirrt_cuda_set_grouped_gemm", setGroupedGemm);
    sym("muirrt_cuda_alloc", alloc);
    sym("muirrt_cuda_free", free);
    sym("muirrt_cuda_copy_to_device", toDevice);
    sym("muirrt_cuda_copy_to_host", toHost);
    sym("muirrt_cuda_synchronize", synchronize);
    sym("muirrt_cuda_graph_begin", graphBegin);
    sym("muirrt_cuda_graph_end", graphEnd);
    sym("muirrt_cuda_graph_launch", graphLaunch);
    sym("muirrt_cuda_observation", observation);
    if (!missing.empty())
      return path + " lacks " + missing;
    return "";
  }

  /// JIT symbols: the module's muirrt_cuda_* declarations and MLIR's
  /// mgpu* launch ABI (called by the translated gpu.launch_func).
  void registerSymbols(ExecutionEngine &engine,
                       const std::vector<std::string> &names) {
    engine.registerSymbols([&](llvm::orc::MangleAndInterner interner) {
      llvm::orc::SymbolMap map;
      std::vector<std::string> all = names;
      for (const char *n :
           {"mgpuModuleLoad", "mgpuModuleLoadJIT", "mgpuModuleUnload",
            "mgpuModuleGetFunction", "mgpuLaunchKernel", "mgpuStreamCreate",
            "mgpuStreamDestroy", "mgpuStreamSynchronize", "mgpuMemAlloc",
            "mgpuMemFree", "mgpuMemcpy"})
        all.push_back(n);
      for (const std::string &n : all)
        if (void *fn = dlsym(handle, n.c_str()))
          map[interner(n)] = {llvm::orc::ExecutorAddr::fromPtr(fn),
                              llvm::JITSymbolFlags::Exported};
      return map;
    });
  }
};

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

/// The run's grid and its foldings as text ("dp=2,tp=2; @moe: edp=1,ep=2")
/// for a saved state's identity.
static std::string gridText(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  bool first = true;
  for (auto grid : module.getOps<muir::GridOp>()) {
    if (!first)
      os << "; @" << grid.getSymName() << ": ";
    first = false;
    for (auto [i, pair] :
         llvm::enumerate(llvm::zip(grid.getAxes(), grid.getShape())))
      os << (i ? "," : "") << cast<StringAttr>(std::get<0>(pair)).getValue()
         << "=" << std::get<1>(pair);
  }
  // No grid: one device, as the runtime runs it.
  return text.empty() ? "dp=1" : text;
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  // --help lists muir's flags only (LLVM's and MLIR's are hidden).
  cl::HideUnrelatedOptions(muir::muirFlagCategory());
  cl::ParseCommandLineOptions(
      argc, argv,
      "muir-run: compile and execute a muir training step on the CPU\n\n"
      "Without an input file, runs the embedded default example.\n");
  // The launcher (more than one rank, not yet under mpirun) checks
  // everything it can before mpirun starts, once; the ranks repeat only
  // what they need.
  bool underMPI = getenv("OMPI_COMM_WORLD_SIZE") != nullptr;
  bool launcher = numRanks > 1 && !underMPI;
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
  bool cuda = flags.target == muir::Target::Cuda;
  if (cuda && (!traceFile.empty() || commStats))
    return fail(Twine(!traceFile.empty() ? "--trace-fingerprints"
                                         : "--comm-stats") +
                " is not available with --target=cuda yet");
  if (!cuda && (cudaBf16 || cudaCublasGrouped))
    return fail(Twine(cudaBf16 ? "--cuda-bf16" : "--cuda-cublas-grouped-gemm") +
                " needs --target=cuda");
  // No output may overwrite an input or another output. --save-state into
  // the state being resumed is the way to continue a run (the old state is
  // replaced atomically), so it is allowed.
  {
    std::string input = inputFile.empty() ? std::string("<default>")
                                          : inputFile.getValue();
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

  // Exec IR allocates its Newton-Schulz temporaries every step. Keep freed
  // blocks in the heap instead of returning them to the kernel, so later
  // steps reuse warm pages rather than faulting in fresh ones.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);

  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();

  DialectRegistry registry;
  muir::registerMuirDialects(registry);
  registerAllPasses();
  MLIRContext context(registry);
  // Diagnostics point at the description (file:line:col); a whole step's
  // function printed after a note would bury them, and a long source line
  // (an exec module's signature) is shown as an excerpt.
  context.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  muir::ExcerptDiagnosticHandler diagHandler(sourceMgr, &context);
  if (inputFile.empty()) {
    sourceMgr.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBuffer(kDefaultModule, "<default>"),
        llvm::SMLoc());
  } else {
    std::string err;
    auto file = muir::readBoundedFile(inputFile, err);
    if (!file)
      return fail(err);
    sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  }
  // A training-step description (YAML/JSON) is compiled first; anything
  // else is read as MLIR.
  OwningOpRef<ModuleOp> module;
  StringRef ext = llvm::sys::path::extension(inputFile.getValue());
  if (ext == ".yaml" || ext == ".yml" || ext == ".json") {
    auto desc = muir::desc::parseDescription(sourceMgr, 1);
    if (failed(desc))
      return 1;
    module = muir::desc::buildModule(context, *desc);
    if (module && failed(verify(*module)))
      return 1;
  } else {
    module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  }
  if (!module)
    return 1;

  // What muir-compile wrote runs from its stage: high-level and planned
  // IR through the rest of the pipeline (muir-distribute leaves a per-rank
  // program alone), exec IR as it is.
  muir::Stage stage = muir::detectStage(*module);
  if (stage == muir::Stage::LLVM)
    return fail("the input is LLVM-dialect IR (muir-compile --emit=llvm), "
                "which muir-run cannot bind tensors to; run the description "
                "or the exec IR (--emit=exec)");
  if (SmallVector<StringRef> given = givenCompileFlags(stage);
      !given.empty())
    return fail("--" + given.front() + " has no effect on " +
                (stage == muir::Stage::Exec ? "exec IR, which is compiled"
                                            : "planned IR, which is "
                                              "distributed") +
                " already; give it to muir-compile with the description");
  PassManager toExec(&context);
  muir::buildToExecPipeline(toExec,
                            flags.options(!noProbes, muir::Machine::Cpu));
  // What a saved state is for: the step's IR as parsed or built (grid,
  // shapes, settings), the grid, the compile flags.
  muir::state::StepIdentity identity;
  {
    std::string text;
    llvm::raw_string_ostream os(text);
    module->print(os, OpPrintingFlags().enableDebugInfo(false));
    identity.stepHash =
        hex64(llvm::xxh3_64bits(llvm::arrayRefFromStringRef(text)));
    identity.grid = gridText(*module);
    identity.flags = flags.identity();
    identity.build = MUIR_VERSION_STRING;
  }
  // Gradients the step computes itself (a trained MoE layer's, returned
  // with muir.updates) are not inputs to check before a step: they are
  // overwritten by it, and a NaN there shows in the layer's loss.
  std::set<std::string> computedGrads;
  for (auto f : module->getOps<func::FuncOp>()) {
    std::set<std::string> grads;
    for (unsigned i = 0; i < f.getNumArguments(); ++i)
      if (auto name = f.getArgAttrOfType<StringAttr>(i, "muir.name"))
        if (roleOf(name, f.getArgAttrOfType<StringAttr>(i, "muir.role")) ==
            MUIRRT_ROLE_GRAD)
          grads.insert(name.str());
    for (unsigned r = 0; r < f.getNumResults(); ++r)
      if (auto name = f.getResultAttrOfType<StringAttr>(r, "muir.updates"))
        if (grads.count(name.str()))
          computedGrads.insert(name.str());
  }
  if (stage != muir::Stage::Exec && failed(toExec.run(*module)))
    return 1;

  func::FuncOp entry;
  for (auto f : module->getOps<func::FuncOp>())
    if (f->hasAttr("muir.entry")) {
      if (entry)
        return fail("more than one entry function ('" + entry.getName() +
                    "' and '" + f.getName() + "')");
      entry = f;
    }
  if (!entry)
    return fail("no entry function: expected a function whose arguments "
                "carry 'muir.name'");

  // The run's ranks are the devices of the module's first grid; later
  // grids fold the same ranks into other axes (MoE: edp x ep).
  struct Folding {
    std::string name;
    SmallVector<std::string> axes;
    SmallVector<int64_t> sizes;
  };
  SmallVector<Folding> foldings;
  for (auto grid : module->getOps<muir::GridOp>()) {
    Folding f;
    f.name = grid.getSymName().str();
    for (auto [name, size] : llvm::zip(grid.getAxes(), grid.getShape())) {
      f.axes.push_back(cast<StringAttr>(name).getValue().str());
      f.sizes.push_back(size);
    }
    foldings.push_back(std::move(f));
  }
  SmallVector<int64_t> gridSizes;
  SmallVector<std::string> gridAxes;
  if (!foldings.empty()) {
    gridSizes = foldings.front().sizes;
    gridAxes = foldings.front().axes;
  }
  int64_t devices = 1;
  for (int64_t size : gridSizes)
    if (size < 1 || llvm::MulOverflow(devices, size, devices) ||
        devices > muir::kMaxDevices)
      return fail("the grid " + identity.grid + " has more than " +
                  Twine(muir::kMaxDevices) + " devices");
  if (!underMPI && devices != numRanks)
    return fail(numRanks == 1
                    ? "the grid (" + identity.grid + ") has " +
                          Twine(devices) + " devices; run it with --ranks " +
                          Twine(devices)
                    : "--ranks " + Twine(numRanks) + " does not match the " +
                          Twine(devices) + " devices of the grid (" +
                          identity.grid + "); run it with --ranks " +
                          Twine(devices));

  // Everything that can fail before a step runs, checked before any work
  // (and, for several ranks, before mpirun starts): the folders read and
  // written, the dump's targets, the state to resume.
  std::vector<std::string> names;
  for (unsigned i = 0; i < entry.getNumArguments(); ++i)
    if (auto name = entry.getArgAttrOfType<StringAttr>(i, "muir.name"))
      names.push_back(name.str());
  if (!underMPI) {
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
          return fail("--trace-fingerprints: '" + path +
                      "' is a directory");
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
  // Resuming: a state saved for this very step, whole; its step counter
  // continues. Every rank needs the counter.
  int64_t firstStep = 1;
  if (!resumeDir.empty()) {
    auto saved =
        muir::state::checkState(resumeDir, identity, names, numSteps);
    if (!saved)
      return fail(llvm::toString(saved.takeError()));
    firstStep = *saved + 1;
  }
  if (launcher)
    return relaunchUnderMPI(argc, argv);

  // Fingerprint tracing: a muir_exec.trace around every executed op; the
  // ops' names, locations and operand types are kept for the trace file.
  struct TracedOp {
    std::string name, loc;
    std::map<int64_t, std::string> types; // operand index -> type
  };
  std::map<int64_t, TracedOp> tracedOps;
  if (!traceFile.empty()) {
    PassManager pm(&context);
    pm.addPass(muir::createMuirTraceBuffers());
    if (failed(pm.run(*module)))
      return 1;
    module->walk([&](muir_exec::TraceOp t) {
      TracedOp &op = tracedOps[t.getOpId()];
      op.name = t.getOp().str();
      op.loc = t.getLoc().str();
      std::string type;
      llvm::raw_string_ostream os(type);
      os << t.getBuffer().getType();
      // One token in the trace line: "memref<4xf32, strided<[1]>>" loses
      // its spaces.
      llvm::erase(type, ' ');
      op.types[t.getIndex()] = type;
    });
  }

  if (devices > 1 || underMPI) {
    if (muirrt_dist_init(gridSizes.size(), gridSizes.data()))
      return fail(muirrt_last_error());
    for (size_t f = 1; f < foldings.size(); ++f)
      if (muirrt_dist_add_folding(foldings[f].sizes.size(),
                                  foldings[f].sizes.data()) !=
          static_cast<int32_t>(f))
        return fail("grid @" + foldings[f].name + ": " +
                    muirrt_last_error());
  }
  llvm::scope_exit finalize([] { muirrt_dist_finalize(); });
  muirrt_set_deterministic(!nondeterministic);
  int rank = muirrt_dist_rank();
  bool printing = !quiet && rank == 0;

  // Every named tensor lives twice: whole in `global` (what --load reads,
  // the seed fills and --dump writes, identical on every rank) and as this
  // rank's shard in `rt` (what the step updates). `muir.split = ["tp:0"]`
  // says dimension 0 is split over the group of axis tp.
  MuirRtContext *rt = muirrt_context_create();
  MuirRtContext *global = muirrt_context_create();
  llvm::scope_exit cleanup([&] {
    muirrt_context_destroy(rt);
    muirrt_context_destroy(global);
  });
  SmallVector<EntryArg> args;
  for (unsigned i = 0; i < entry.getNumArguments(); ++i) {
    Type t = entry.getArgument(i).getType();
    EntryArg a;
    if (auto mt = dyn_cast<MemRefType>(t)) {
      auto name = entry.getArgAttrOfType<StringAttr>(i, "muir.name");
      if (!name)
        return fail("entry argument " + Twine(i) + " has no muir.name");
      a.name = name.str();
      SmallVector<int64_t> globalShape(mt.getShape());
      if (auto splits = entry.getArgAttrOfType<ArrayAttr>(i, "muir.split")) {
        for (Attribute attr : splits) {
          auto [axisText, dimText] =
              cast<StringAttr>(attr).getValue().split(':');
          // "axis" on the run's grid, "grid.axis" on another folding;
          // "a+b" splits the dimension over both axes (row-major).
          size_t f = 0;
          StringRef axisList = axisText;
          if (axisText.contains('.')) {
            auto [gridName, rest] = axisText.split('.');
            f = foldings.size();
            for (size_t i = 0; i < foldings.size(); ++i)
              if (foldings[i].name == gridName)
                f = i;
            axisList = rest;
          }
          int64_t dim = -1, bits = 0;
          const SmallVector<std::string> *axes =
              f < foldings.size() ? &foldings[f].axes : nullptr;
          bool bad = !axes || dimText.getAsInteger(10, dim) || dim < 0 ||
                     dim >= mt.getRank();
          SmallVector<StringRef> names;
          axisList.split(names, '+');
          for (StringRef axis : names) {
            auto it = axes ? llvm::find(*axes, axis.str()) : nullptr;
            if (!axes || it == axes->end())
              bad = true;
            else
              bits |= int64_t(1) << (it - axes->begin());
          }
          if (bad)
            return fail("tensor '" + a.name + "': bad muir.split entry '" +
                        cast<StringAttr>(attr).getValue() +
                        "' (expected axis:dim with an axis of the run's "
                        "grid, or grid.axis:dim for another folding; "
                        "axes joined by '+' split one dim over all)");
          for (const Split &other : a.splits)
            if (other.dim == dim)
              return fail("tensor '" + a.name + "' is split twice on dim " +
                          Twine(dim));
          int64_t mask = bits | (static_cast<int64_t>(f) << 48);
          a.splits.push_back({dim, mask});
          globalShape[dim] *= muirrt_dist_group_size(mask);
        }
      }
      int32_t role =
          roleOf(a.name, entry.getArgAttrOfType<StringAttr>(i, "muir.role"));
      a.tensor = muirrt_tensor_add(rt, a.name.c_str(), mt.getRank(),
                                   mt.getShape().data(), role);
      a.global = muirrt_tensor_add(global, a.name.c_str(), mt.getRank(),
                                   globalShape.data(), role);
      if (a.tensor < 0 || a.global < 0)
        return fail(muirrt_last_error());
      // `muir.init_std`: the seeded values' standard deviation (teacher
      // weights scaled by their fan-in).
      if (auto std = entry.getArgAttrOfType<FloatAttr>(i, "muir.init_std"))
        if (muirrt_tensor_set_init_std(global, a.global,
                                       std.getValueAsDouble()))
          return fail(muirrt_last_error());
    } else if (!t.isInteger(64)) {
      return fail("entry argument " + Twine(i) + " has unsupported type");
    }
    args.push_back(a);
  }
  std::map<int64_t, Observation> observations;
  module->walk([&](muir_exec::ObserveOp op) {
    auto t = cast<MemRefType>(op.getInput().getType());
    observations[op.getSlot()] = {op.getLabel().str(),
                                  SmallVector<int64_t>(t.getShape())};
  });

  // --load reads what it finds; a resumed state (checked whole above)
  // replaces every tensor.
  int32_t loaded = 0;
  StringRef readDir = resumeDir.empty() ? StringRef(loadDir) : resumeDir;
  if (!readDir.empty() && muirrt_load_dir(global, readDir.data(), &loaded))
    return fail(muirrt_last_error());
  muirrt_init_from_seed(global, seed);
  for (const EntryArg &a : args)
    if (a.tensor >= 0)
      copyShard(global, a, rt, /*toShard=*/true);

  // Exec IR -> LLVM -> native code. The muir.* argument attributes have
  // been read; LLVM IR translation has no meaning for them.
  std::string entryName = entry.getName().str();
  muir::dropMuirArgAttrs(entry);
  // Whether the step reads its step counter (AdamW's bias corrections,
  // host scalars baked into a captured CUDA graph's kernel arguments).
  bool readsStep = llvm::any_of(entry.getArguments(), [&](BlockArgument a) {
    return !isa<MemRefType>(a.getType()) && !a.use_empty();
  });
  PassManager toLLVM(&context);
  muir::buildExecToLLVMPipeline(toLLVM, flags.targetOptions());
  if (failed(toLLVM.run(*module)))
    return 1;
  CudaLib cudaLib;
  std::vector<std::string> cudaNames;
  // cuBLAS's grouped GEMM waits for the GPU inside the step: no graph.
  bool useGraph = cudaGraph && !cudaCublasGrouped;
  if (cuda) {
    if (std::string why = cudaLib.load(argv[0]); !why.empty())
      return fail("--target=cuda: " + why);
    if (cudaLib.init(-1))
      return fail(Twine("--target=cuda: no usable GPU: ") +
                  cudaLib.lastError());
    if (cudaLib.distInit(gridSizes.data(),
                         static_cast<int32_t>(gridSizes.size())))
      return fail(Twine("--target=cuda: NCCL: ") + cudaLib.lastError());
    cudaLib.setDeterministic(!nondeterministic);
    cudaLib.setPrecision(cudaBf16);
    cudaLib.setGroupedGemm(cudaCublasGrouped);
    module->walk([&](LLVM::LLVMFuncOp f) {
      if (f.isExternal() && f.getName().starts_with("muirrt_cuda_"))
        cudaNames.push_back(f.getName().str());
    });
  }
  llvm::scope_exit cudaFinalize([&] {
    if (cuda)
      cudaLib.distFinalize();
  });
  // The optimizer needs the host's target machine: without it LLVM's cost
  // model knows no vector registers and the fused element-wise kernels stay
  // scalar.
  auto hostBuilder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!hostBuilder)
    return fail("cannot detect the host target: " +
                llvm::toString(hostBuilder.takeError()));
  auto optimizerTM = hostBuilder->createTargetMachine();
  auto engineTM = hostBuilder->createTargetMachine();
  if (!optimizerTM || !engineTM)
    return fail("cannot create a target machine for the host");
  auto transformer = makeOptimizingTransformer(3, 0, optimizerTM->get());
  ExecutionEngineOptions engineOptions;
  engineOptions.transformer = transformer;
  auto engineOrError =
      ExecutionEngine::create(*module, engineOptions, std::move(*engineTM));
  if (!engineOrError)
    return fail("JIT compilation failed: " +
                llvm::toString(engineOrError.takeError()));
  auto &engine = *engineOrError;
  registerRuntimeSymbols(*engine);
  if (cuda)
    cudaLib.registerSymbols(*engine, cudaNames);
  engine->initialize();
  // The JIT materialises code on first lookup; do it here so that step 1's
  // time is the step's, not the compiler's.
  if (auto fn = engine->lookupPacked(entryName); !fn)
    return fail("JIT compilation failed: " + llvm::toString(fn.takeError()));

  int32_t count = muirrt_tensor_count(rt);
  int numMuon = 0, numParams = 0;
  for (int32_t i = 0; i < count; ++i)
    numParams += muirrt_tensor_role(rt, i) == MUIRRT_ROLE_PARAM;
  std::set<std::string> observed;
  for (auto &kv : observations)
    observed.insert(StringRef(kv.second.label).split('[').first.str());
  for (const std::string &name : observed)
    numMuon += muirrt_tensor_find(rt, name.c_str()) >= 0;
  if (printing)
    llvm::outs() << "muir-run: " << (inputFile.empty() ? "<default>"
                                                       : inputFile.getValue())
                 << ": " << numParams << " parameters (" << numMuon
                 << " with Muon), " << count << " tensors, " << loaded
                 << " loaded, seed " << seed << ", " << numSteps
                 << " steps" << (devices > 1 ? ", " + std::to_string(devices) +
                                                   " ranks (rank 0 shown)"
                                             : std::string())
                 << "\n";

  // With --target=cuda every tensor argument lives in device memory for
  // the whole run: copied there now, back after the steps (and after each
  // printed step, for its norms).
  std::vector<void *> device(args.size(), nullptr);
  llvm::scope_exit freeDevice([&] {
    for (void *p : device)
      if (p)
        cudaLib.free(p);
  });
  auto tensorBytes = [&](int32_t t) {
    return static_cast<size_t>(muirrt_tensor_numel(rt, t)) * sizeof(float);
  };
  auto copyBack = [&]() -> bool {
    for (auto [i, a] : llvm::enumerate(args))
      if (a.tensor >= 0 &&
          cudaLib.toHost(muirrt_tensor_data(rt, a.tensor), device[i],
                         tensorBytes(a.tensor)))
        return false;
    return true;
  };
  if (cuda) {
    for (auto [i, a] : llvm::enumerate(args))
      if (a.tensor >= 0 &&
          (cudaLib.alloc(&device[i], tensorBytes(a.tensor)) ||
           cudaLib.toDevice(device[i], muirrt_tensor_data(rt, a.tensor),
                            tensorBytes(a.tensor))))
        return fail(Twine("--target=cuda: ") + cudaLib.lastError());
    if (printing)
      llvm::outs() << "muir-run: CUDA device " << cudaLib.deviceName()
                   << (cudaBf16 ? ", bf16 products" : ", fp32 products")
                   << (useGraph ? ", CUDA graph" : "")
                   << (cudaCublasGrouped ? ", cuBLAS grouped GEMM" : "")
                   << "\n";
  }
  bool captured = false;

  // Whether the step observes a trained MoE layer's loss (every rank runs
  // the same program, so all agree).
  bool hasLoss = llvm::any_of(observations, [](const auto &kv) {
    return StringRef(kv.second.label).starts_with("loss ");
  });
  // The first NaN or infinity in this rank's tensors whose role is in
  // `roles` (a trained layer's computed gradients aside): the tensor's name,
  // the element's index and value (index -1: none).
  auto firstNonFinite = [&](MuirRtContext *ctx,
                            std::initializer_list<int32_t> roles) {
    for (int32_t i = 0; i < muirrt_tensor_count(ctx); ++i) {
      if (!llvm::is_contained(roles, muirrt_tensor_role(ctx, i)) ||
          computedGrads.count(muirrt_tensor_name(ctx, i)))
        continue;
      const float *d = muirrt_tensor_data(ctx, i);
      int64_t at = muirrt_first_nonfinite(d, muirrt_tensor_numel(ctx, i));
      if (at >= 0)
        return std::make_pair(std::string(muirrt_tensor_name(ctx, i)),
                              std::make_pair(at, d[at]));
    }
    return std::make_pair(std::string(), std::make_pair(int64_t(-1), 0.0f));
  };
  // Every rank looks (`find`); if any found a non-finite value, the
  // lowest such rank says where (one line, also when every rank holds the
  // same values) and all of them stop: "rank R, step S: <what> 'name'
  // holds nan at element k; stopped <when>, nothing written".
  auto stopOnNonFinite = [&](int64_t step, StringRef what, StringRef when,
                             bool element, auto find) {
    auto [name, where] = find();
    int32_t first = muirrt_dist_first(where.first >= 0);
    if (first < 0)
      return false;
    if (first == rank) {
      float v = where.second;
      llvm::WithColor::error(llvm::errs(), "muir-run")
          << "rank " << rank << ", step " << step << ": " << what << " '"
          << name << "' holds "
          << (std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf")
          << (element ? " at element " + std::to_string(where.first) +
                            (devices > 1 ? " of the rank's part" : "")
                      : std::string())
          << "; stopped " << when
          << ", nothing written (--check-finite=false turns this check "
             "off)\n";
    }
    return true;
  };
  // What was loaded (--load, --resume) is checked once, every tensor.
  if (checkFinite && loaded > 0 &&
      stopOnNonFinite(firstStep, "loaded tensor", "before the step", true,
                      [&] {
                        return firstNonFinite(
                            rt, {MUIRRT_ROLE_PARAM, MUIRRT_ROLE_GRAD,
                                 MUIRRT_ROLE_STATE, MUIRRT_ROLE_DATA});
                      }))
    return 1;

  // Per-step snapshots of the parameters give the update norms.
  std::vector<std::vector<float>> before(count);
  std::vector<void *> pointers(args.size());
  std::vector<int64_t> stepValue(1);
  double totalMs = 0, minMs = 1e300, checkMs = 0;
  auto msSince = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now() - t)
        .count();
  };
  muirrt_comm_reset();
  muirrt_trace_enable(!traceFile.empty());
  for (int64_t step = firstStep; step < firstStep + numSteps; ++step) {
    muirrt_trace_set_step(step);
    for (int32_t i = 0; i < count; ++i)
      if (muirrt_tensor_role(rt, i) == MUIRRT_ROLE_PARAM) {
        const float *d = muirrt_tensor_data(rt, i);
        before[i].assign(d, d + muirrt_tensor_numel(rt, i));
      }
    stepValue[0] = step;
    SmallVector<void *> packed;
    for (auto [i, a] : llvm::enumerate(args)) {
      if (a.tensor >= 0) {
        pointers[i] = cuda ? device[i] : muirrt_tensor_data(rt, a.tensor);
        packed.push_back(&pointers[i]);
      } else {
        packed.push_back(stepValue.data());
      }
    }
    muirrt_observations_clear();
    testFault(rank, step);
    // The step's time includes its checks.
    auto start = std::chrono::steady_clock::now();
    // Non-finite gradients stop the run before the step applies them
    // (host tensors; on the GPU they were checked before the upload).
    if (checkFinite && (!cuda || step == firstStep) &&
        stopOnNonFinite(step, "gradient", "before the step", true, [&] {
          return firstNonFinite(rt, {MUIRRT_ROLE_GRAD});
        }))
      return 1;
    checkMs += msSince(start);
    if (!cuda) {
      if (llvm::Error err = engine->invokePacked(entryName, packed))
        return fail("execution failed: " + llvm::toString(std::move(err)));
    } else {
      // The first step runs op by op (it creates communicators and
      // scratch); later ones replay one CUDA graph. A step that reads its
      // counter is captured again each step (the counter is a kernel
      // argument) and the graph updated in place.
      bool graph = useGraph && step > firstStep;
      if (graph && (!captured || readsStep)) {
        if (cudaLib.graphBegin())
          return fail(Twine("--target=cuda: ") + cudaLib.lastError());
        if (llvm::Error err = engine->invokePacked(entryName, packed))
          return fail("execution failed: " + llvm::toString(std::move(err)));
        if (cudaLib.graphEnd())
          return fail(Twine("--target=cuda: ") + cudaLib.lastError());
        captured = true;
      }
      if (graph) {
        if (cudaLib.graphLaunch())
          return fail(Twine("--target=cuda: ") + cudaLib.lastError());
      } else if (llvm::Error err = engine->invokePacked(entryName, packed)) {
        return fail("execution failed: " + llvm::toString(std::move(err)));
      }
      if (cudaLib.synchronize())
        return fail(Twine("--target=cuda: ") + cudaLib.lastError());
    }
    // A trained MoE layer's loss: a NaN or infinity ends the run before
    // anything is written.
    auto lossCheck = std::chrono::steady_clock::now();
    if (checkFinite && hasLoss &&
        stopOnNonFinite(step, "loss of MoE layer", "after the step", false,
                        [&] {
          for (auto &[slot, obs] : observations) {
            int64_t numel = 0;
            const float *data = cuda ? cudaLib.observation(slot, &numel)
                                     : muirrt_observation(slot, &numel);
            StringRef label = obs.label;
            if (data && numel > 0 && label.consume_front("loss ") &&
                !std::isfinite(data[0]))
              return std::make_pair(label.str(),
                                    std::make_pair(int64_t(0), data[0]));
          }
          return std::make_pair(std::string(),
                                std::make_pair(int64_t(-1), 0.0f));
        }))
      return 1;
    checkMs += msSince(lossCheck);
    double ms = msSince(start);
    totalMs += ms;
    minMs = std::min(minMs, ms);
    if (!printing)
      continue;
    if (cuda && !copyBack())
      return fail(Twine("--target=cuda: ") + cudaLib.lastError());

    llvm::outs() << "step " << step << ": "
                 << llvm::format("%.2f", ms) << " ms\n";
    std::map<std::string, double> orth;
    for (auto &[slot, obs] : observations) {
      int64_t numel = 0;
      const float *data = cuda ? cudaLib.observation(slot, &numel)
                               : muirrt_observation(slot, &numel);
      if (!data)
        continue;
      // A trained MoE layer's loss ("loss <layer>", one float).
      if (StringRef(obs.label).starts_with("loss ")) {
        llvm::outs() << "  " << obs.label << " "
                     << llvm::format("%.6e", static_cast<double>(data[0]))
                     << "\n";
        continue;
      }
      if (obs.shape.size() < 2)
        continue;
      int64_t m = obs.shape[obs.shape.size() - 2];
      int64_t n = obs.shape.back();
      double worst = 0;
      for (int64_t off = 0; off + m * n <= numel; off += m * n)
        worst = std::max(worst, muirrt_orthogonality_error(data + off, m, n));
      // Blocks of a split update ("name[0:128]") report under their
      // parameter, with the worst block's error.
      std::string key = StringRef(obs.label).split('[').first.str();
      orth[key] = std::max(orth[key], worst);
    }
    for (int32_t i = 0; i < count; ++i) {
      if (muirrt_tensor_role(rt, i) != MUIRRT_ROLE_PARAM)
        continue;
      std::string name = muirrt_tensor_name(rt, i);
      const float *d = muirrt_tensor_data(rt, i);
      int64_t numel = muirrt_tensor_numel(rt, i);
      llvm::outs() << "  " << llvm::left_justify(name, 20) << " "
                   << llvm::left_justify(
                          shapeString(ArrayRef<int64_t>(
                              muirrt_tensor_shape(rt, i),
                              muirrt_tensor_rank(rt, i))),
                          11);
      auto it = orth.find(name);
      if (it != orth.end())
        llvm::outs() << " orth_err " << llvm::format("%.3e", it->second);
      else
        llvm::outs() << "                   ";
      llvm::outs() << "  |dW| "
                   << llvm::format("%.3e",
                                   muirrt_diff_norm(before[i].data(), d, numel))
                   << "  |W| " << llvm::format("%.3e", muirrt_norm(d, numel))
                   << "\n";
    }
  }

  if (cuda && !copyBack())
    return fail(Twine("--target=cuda: ") + cudaLib.lastError());
  // Nothing non-finite is written: the parameters and their optimizer
  // state after the last step (a finite gradient can still overflow).
  if (checkFinite && (!dumpDir.empty() || !saveState.empty()) &&
      stopOnNonFinite(firstStep + numSteps - 1, "updated tensor",
                      "after the step", true, [&] {
                        return firstNonFinite(
                            rt, {MUIRRT_ROLE_PARAM, MUIRRT_ROLE_STATE});
                      }))
    return 1;

  if (commStats) {
    // Before the dump, whose gathers are counted too. Rank 0 prints every
    // rank's counters, gathered over the whole grid (the int64 counters
    // travel as raw bytes), so that no rank's lines can get lost or mixed.
    // Every axes subset of every folding, as the runtime's masks.
    struct MaskName {
      int64_t mask;
      std::string axes;
    };
    std::vector<MaskName> masks;
    for (auto [f, folding] : llvm::enumerate(foldings)) {
      int64_t all = (int64_t(1) << folding.axes.size()) - 1;
      for (int64_t bits = 1; bits <= all; ++bits) {
        // Axes of later foldings as grid.axis (muir.split's spelling).
        std::string axes;
        for (auto [i, name] : llvm::enumerate(folding.axes))
          if (bits & (int64_t(1) << i))
            axes += (axes.empty() ? "" : ",") +
                    (f ? folding.name + "." + name : name);
        masks.push_back({bits | (static_cast<int64_t>(f) << 48), axes});
      }
    }
    int64_t world = (int64_t(1) << gridAxes.size()) - 1;
    int64_t ranks = muirrt_dist_group_size(world);
    // Snapshot first: the gather below is a collective and counts too.
    // Two more per rank: its GEMM calls and flops (no Newton-Schulz may run
    // twice across data-parallel ranks; tests add them up).
    int64_t n = static_cast<int64_t>(masks.size());
    int64_t width = 2 * n + 3;
    std::vector<int64_t> mine(width), every(width * ranks);
    for (int64_t k = 0; k < n; ++k) {
      mine[2 * k] = muirrt_comm_bytes(masks[k].mask);
      mine[2 * k + 1] = muirrt_comm_calls(masks[k].mask);
    }
    MuirRtCounters counters;
    muirrt_counters_get(&counters);
    mine[2 * n] = counters.gemm_calls + counters.syrk_calls;
    mine[2 * n + 1] = static_cast<int64_t>(counters.flops);
    mine[2 * n + 2] = counters.other_calls;
    static_assert(sizeof(int64_t) == 2 * sizeof(float), "int64 = 2 floats");
    muirrt_all_gather(world, reinterpret_cast<const float *>(mine.data()),
                      reinterpret_cast<float *>(every.data()), 1,
                      2 * mine.size());
    for (int64_t k = 0; rank == 0 && k < n; ++k)
      for (int64_t r = 0; r < ranks; ++r) {
        const int64_t *c = &every[r * width + 2 * k];
        if (c[1])
          llvm::outs() << "comm: rank " << r << " axes " << masks[k].axes
                       << " bytes " << c[0] << " calls " << c[1] << "\n";
      }
    for (int64_t r = 0; rank == 0 && r < ranks; ++r)
      llvm::outs() << "compute: rank " << r << " gemm_calls "
                   << every[r * width + 2 * n] << " flops "
                   << every[r * width + 2 * n + 1] << " other_calls "
                   << every[r * width + 2 * n + 2] << "\n";
    muirrt_comm_reset();
  }
  if (!traceFile.empty()) {
    // One line per buffer of each executed op, in execution order.
    std::string path = traceFile.getValue();
    if (muirrt_dist_size() > 1)
      path += ".rank" + std::to_string(rank);
    // Written whole or not at all.
    std::string error;
    auto out = muir::AtomicOutput::open(path, error);
    if (!out)
      return fail("cannot write the trace: " + error);
    llvm::raw_fd_ostream &os = out->os();
    os << "# muir fingerprint trace: step rank seq op_id name loc in|out "
          "operand type bytes hash\n";
    const MuirRtTraceRecord *rec = muirrt_trace_records();
    for (int64_t i = 0, n = muirrt_trace_count(); i < n; ++i) {
      const MuirRtTraceRecord &r = rec[i];
      const TracedOp &op = tracedOps[r.op_id];
      auto type = op.types.find(r.index);
      os << r.step << " " << rank << " " << r.seq << " " << r.op_id << " "
         << op.name << " " << op.loc << " " << (r.output ? "out" : "in")
         << " " << r.index << " "
         << (type == op.types.end() ? "?" : type->second) << " " << r.bytes
         << " " << hex64(r.hash) << "\n";
    }
    if (!out->commit(error))
      return fail("cannot write the trace: " + error);
  }
  if (!dumpDir.empty() || !saveState.empty()) {
    // Whole tensors again: every rank takes part in the gathers, rank 0
    // writes.
    for (const EntryArg &a : args)
      if (a.tensor >= 0)
        copyShard(global, a, rt, /*toShard=*/false);
  }
  if (!dumpDir.empty()) {
    if (rank == 0 && muirrt_dump_dir(global, dumpDir.c_str()))
      return fail(muirrt_last_error());
    if (printing)
      llvm::outs() << "muir-run: wrote " << count << " tensors to " << dumpDir
                   << "\n";
  }
  if (!saveState.empty() && rank == 0) {
    if (llvm::Error e = muir::state::saveState(global, saveState, identity,
                                               firstStep + numSteps - 1))
      return fail(llvm::toString(std::move(e)));
    if (printing)
      llvm::outs() << "muir-run: saved the state after step "
                   << firstStep + numSteps - 1 << " to " << saveState << "\n";
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
