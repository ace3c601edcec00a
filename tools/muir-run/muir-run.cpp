//===- muir-run.cpp - compile and execute a muir training step ------------===//
//
// Reads a muir module (high-level or exec IR; without an input, the embedded
// default example), compiles it for the CPU, JIT-compiles the exec function
// and runs it for --steps steps with the runtime owning every named tensor.
// Prints per step the time, each Muon matrix's orthogonality error and the
// update norms; --load / --dump read and write tensors as .npy files.
//
//===----------------------------------------------------------------------===//
#include "muir/Import/Description.h"
#include "muir/Driver/PipelineFlags.h"
#include "muir/Passes.h"
#include "muir-rt/Runtime.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/DialectRegistry.h"
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
static int relaunchUnderMPI(int argc, char **argv) {
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
  SmallVector<StringRef> cmd = {*mpirun, "-n", ranks, "--oversubscribe",
                                "--bind-to", "none", "-x", threads};
  if (geteuid() == 0)
    cmd.push_back("--allow-run-as-root");
  cmd.push_back(self);
  for (int i = 1; i < argc; ++i)
    cmd.push_back(argv[i]);
  std::string error;
  int rc = llvm::sys::ExecuteAndWait(*mpirun, cmd, std::nullopt, {}, 0, 0,
                                     &error);
  if (rc < 0)
    return fail("cannot run mpirun: " + error);
  return rc;
}

//===----------------------------------------------------------------------===//
// Saved state: DIR/<tensor>.npy for every tensor, and DIR/muir-state.json
// with the format, the step's fingerprint (a hash of the step's IR as
// parsed or built, grid included), the steps done and a hash of every
// tensor file's bytes.
//===----------------------------------------------------------------------===//

static const char *kStateFormat = "muir-state-1";
static const char *kStateManifest = "muir-state.json";

static std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx",
                static_cast<unsigned long long>(v));
  return buf;
}

/// The hash of a file's bytes, or nothing if it cannot be read.
static std::optional<std::string> fileHash(const Twine &path) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!buf)
    return std::nullopt;
  return hex64(llvm::xxh3_64bits(llvm::arrayRefFromStringRef(
      (*buf)->getBuffer())));
}

/// The state in `dir` if it was saved for this step (`fingerprint`) and
/// its files are whole; else an error message. `names`: every tensor the
/// step has.
static llvm::Expected<int64_t>
checkState(StringRef dir, StringRef fingerprint,
           const std::vector<std::string> &names) {
  auto err = [&](const Twine &why) {
    return llvm::createStringError("cannot resume from '" + dir + "': " +
                                   why);
  };
  SmallString<256> manifest(dir);
  llvm::sys::path::append(manifest, kStateManifest);
  auto buf = llvm::MemoryBuffer::getFile(manifest);
  if (!buf)
    return err("no " + Twine(kStateManifest) +
               " (not a state saved by --save-state)");
  auto json = llvm::json::parse((*buf)->getBuffer());
  if (!json)
    return err(Twine(kStateManifest) + " is damaged: " +
               llvm::toString(json.takeError()));
  const llvm::json::Object *obj = json->getAsObject();
  auto format = obj ? obj->getString("format") : std::nullopt;
  auto saved = obj ? obj->getString("fingerprint") : std::nullopt;
  auto step = obj ? obj->getInteger("step") : std::nullopt;
  const llvm::json::Object *files = obj ? obj->getObject("tensors") : nullptr;
  if (!format || *format != kStateFormat || !saved || !step || *step < 0 ||
      !files)
    return err(Twine(kStateManifest) + " is damaged or of another format "
                                       "(expected " +
               kStateFormat + ")");
  if (*saved != fingerprint)
    return err("it was saved for another step, grid or build (fingerprint " +
               *saved + ", this step's " + fingerprint + ")");
  for (const std::string &name : names) {
    auto want = files->getString(name);
    if (!want)
      return err("it has no tensor '" + name + "'");
    SmallString<256> path(dir);
    llvm::sys::path::append(path, name + ".npy");
    auto got = fileHash(path);
    if (!got)
      return err("'" + name + ".npy' is missing or unreadable");
    if (*got != *want)
      return err("'" + name + ".npy' has changed since it was saved "
                 "(hash " + *got + ", saved " + *want + ")");
  }
  if (files->size() != names.size())
    return err("it has " + Twine(files->size()) + " tensors, this step " +
               Twine(names.size()));
  return *step;
}

/// Writes the state of `ctx` (whole tensors) to `dir`: into a temporary
/// sibling first, then renamed into place, so that `dir` holds either the
/// old state or the new one, whole.
static llvm::Error saveStateTo(MuirRtContext *ctx, StringRef dir,
                               StringRef fingerprint, int64_t step) {
  std::string tmp = (dir + ".tmp-" + Twine(::getpid())).str();
  std::string old = (dir + ".old-" + Twine(::getpid())).str();
  auto err = [&](const Twine &why) {
    llvm::sys::fs::remove_directories(tmp);
    return llvm::createStringError("cannot save the state to '" + dir +
                                   "': " + why);
  };
  llvm::sys::fs::remove_directories(tmp);
  if (muirrt_dump_dir(ctx, tmp.c_str()))
    return err(muirrt_last_error());
  llvm::json::Object files;
  for (int32_t i = 0; i < muirrt_tensor_count(ctx); ++i) {
    std::string name = muirrt_tensor_name(ctx, i);
    SmallString<256> path(tmp);
    llvm::sys::path::append(path, name + ".npy");
    auto hash = fileHash(path);
    if (!hash)
      return err("cannot read back '" + name + ".npy'");
    files[name] = *hash;
  }
  llvm::json::Object manifest{{"format", kStateFormat},
                              {"fingerprint", fingerprint},
                              {"step", step},
                              {"tensors", std::move(files)}};
  {
    SmallString<256> path(tmp);
    llvm::sys::path::append(path, kStateManifest);
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    if (ec)
      return err(ec.message());
    os << llvm::formatv("{0:2}", llvm::json::Value(std::move(manifest)))
       << "\n";
    os.close();
    if (os.has_error())
      return err(os.error().message());
  }
  bool had = llvm::sys::fs::exists(dir);
  if (had)
    if (std::error_code ec = llvm::sys::fs::rename(dir, old))
      return err("cannot move the old state aside: " + ec.message());
  if (std::error_code ec = llvm::sys::fs::rename(tmp, dir)) {
    if (had)
      llvm::sys::fs::rename(old, dir);
    return err(ec.message());
  }
  if (had)
    llvm::sys::fs::remove_directories(old);
  return llvm::Error::success();
}

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

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  // --help lists muir's flags only (LLVM's and MLIR's are hidden).
  cl::HideUnrelatedOptions(muir::muirFlagCategory());
  cl::ParseCommandLineOptions(
      argc, argv,
      "muir-run: compile and execute a muir training step on the CPU\n\n"
      "Without an input file, runs the embedded default example.\n");
  if (numSteps < 1)
    return fail("--steps must be at least 1, got " + Twine(numSteps));
  if (numRanks < 1)
    return fail("--ranks must be at least 1, got " + Twine(numRanks));
  if (std::string bad = flags.check(); !bad.empty())
    return fail(bad);
  if (!resumeDir.empty() && !loadDir.empty())
    return fail("give either --load or --resume, not both");
  if (numRanks > 1 && !getenv("OMPI_COMM_WORLD_SIZE"))
    return relaunchUnderMPI(argc, argv);

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
  // function printed after a note would bury them.
  context.printOpOnDiagnostic(false);

  // Parse: errors carry file:line:col through the source manager.
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagHandler(sourceMgr, &context);
  if (inputFile.empty()) {
    sourceMgr.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBuffer(kDefaultModule, "<default>"),
        llvm::SMLoc());
  } else {
    std::string err;
    auto file = openInputFile(inputFile, &err);
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
  } else {
    module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  }
  if (!module)
    return 1;

  // High-level IR -> exec IR.
  PassManager toExec(&context);
  muir::buildToExecPipeline(toExec,
                            flags.options(!noProbes, "cpu"));
  // The step's fingerprint for saved states: its IR as parsed or built
  // (grid, shapes, settings) and the pipeline with its options.
  std::string fingerprint;
  {
    std::string text;
    llvm::raw_string_ostream os(text);
    module->print(os, OpPrintingFlags().enableDebugInfo(false));
    os << "\n";
    toExec.printAsTextualPipeline(os);
    fingerprint = hex64(llvm::xxh3_64bits(llvm::arrayRefFromStringRef(text)));
  }
  if (failed(toExec.run(*module)))
    return 1;

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

  bool cuda = flags.target == "cuda";
  if (cuda && (!traceFile.empty() || commStats))
    return fail(Twine(!traceFile.empty() ? "--trace-fingerprints"
                                         : "--comm-stats") +
                " is not available with --target=cuda yet");
  if (!cuda && (cudaBf16 || cudaCublasGrouped))
    return fail(Twine(cudaBf16 ? "--cuda-bf16" : "--cuda-cublas-grouped-gemm") +
                " needs --target=cuda");

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
    devices *= size;
  if (devices > 1 || getenv("OMPI_COMM_WORLD_SIZE")) {
    if (devices > 1 && !getenv("OMPI_COMM_WORLD_SIZE") && numRanks == 1)
      return fail("the grid has " + Twine(devices) +
                  " devices; run it with --ranks " + Twine(devices));
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

  // Check the dump directory before any work, so a bad path costs nothing
  // and leaves nothing behind.
  bool dumpDirIsNew =
      !dumpDir.empty() && !llvm::sys::fs::exists(dumpDir.getValue());
  // Every rank has looked before rank 0 creates it, so all agree.
  if (!dumpDir.empty())
    muirrt_dist_barrier();
  if (rank == 0 && !dumpDir.empty() && muirrt_check_dump_dir(dumpDir.c_str()))
    return fail(muirrt_last_error());
  // The state is written next to where it goes: its folder must exist and
  // be writable before any work.
  if (!saveState.empty()) {
    SmallString<256> parent(saveState.getValue());
    llvm::sys::path::remove_dots(parent, /*remove_dot_dot=*/true);
    llvm::sys::path::remove_filename(parent);
    if (parent.empty())
      parent = ".";
    if (!llvm::sys::fs::is_directory(parent) ||
        llvm::sys::fs::access(parent, llvm::sys::fs::AccessMode::Write))
      return fail("cannot save the state to '" + saveState + "': '" +
                  parent + "' is not a writable directory");
  }
  // A run that fails later leaves no trace: not even the (empty) dump
  // directory the check created.
  bool succeeded = false;
  llvm::scope_exit removeNewDumpDir([&] {
    if (dumpDirIsNew && !succeeded)
      ::rmdir(dumpDir.c_str());
  });
  // A fatal runtime error (a routed-rows bound too small) ends the run
  // from inside the step: remove the new, still empty directory then too
  // (on every rank, as any of them may end the run first).
  static std::string newDumpDir;
  if (dumpDirIsNew) {
    newDumpDir = dumpDir.getValue();
    muirrt_set_abort_hook([] { ::rmdir(newDumpDir.c_str()); });
  }
  int32_t loaded = 0;
  if (!loadDir.empty() && muirrt_load_dir(global, loadDir.c_str(), &loaded))
    return fail(muirrt_last_error());
  // Resuming: a state saved for this very step, whole, replaces every
  // tensor, and the step counter continues from it.
  int64_t firstStep = 1;
  if (!resumeDir.empty()) {
    std::vector<std::string> names;
    for (int32_t i = 0; i < muirrt_tensor_count(global); ++i)
      names.push_back(muirrt_tensor_name(global, i));
    auto saved = checkState(resumeDir, fingerprint, names);
    if (!saved)
      return fail(llvm::toString(saved.takeError()));
    if (muirrt_load_dir(global, resumeDir.c_str(), &loaded))
      return fail(muirrt_last_error());
    firstStep = *saved + 1;
  }
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

  // Per-step snapshots of the parameters give the update norms.
  std::vector<std::vector<float>> before(count);
  std::vector<void *> pointers(args.size());
  std::vector<int64_t> stepValue(1);
  double totalMs = 0, minMs = 1e300;
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
    auto start = std::chrono::steady_clock::now();
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
    double ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - start)
                    .count();
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
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    if (ec)
      return fail("cannot write the trace '" + path + "': " + ec.message());
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
    os.close();
    if (os.has_error())
      return fail("cannot write the trace '" + path + "': " +
                  os.error().message());
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
    if (llvm::Error e = saveStateTo(global, saveState, fingerprint,
                                    firstStep + numSteps - 1))
      return fail(llvm::toString(std::move(e)));
    if (printing)
      llvm::outs() << "muir-run: saved the state after step "
                   << firstStep + numSteps - 1 << " to " << saveState << "\n";
  }
  succeeded = true;
  if (rank != 0)
    return 0;
  llvm::outs() << "muir-run: steps " << numSteps << " mean_ms "
               << llvm::format("%.3f", totalMs / numSteps) << " min_ms "
               << llvm::format("%.3f", minMs) << "\n";
  return 0;
}
