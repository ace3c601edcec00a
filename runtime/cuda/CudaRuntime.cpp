//===- CudaRuntime.cpp - muir's CUDA runtime ------------------------------===//
//
// See muir-rt/CudaRuntime.h for the contract: one device, its primary
// context, one step stream on which everything of a step is enqueued in
// program order (so no host synchronisation inside a step, and a step can
// be captured as a CUDA graph), cuBLAS for the products, NCCL for the
// collectives, the kernels of Kernels.cu for the reductions the runtime
// owns, and MLIR's mgpu* launch ABI for the generated kernels.
//
//===----------------------------------------------------------------------===//
#include "muir-rt/CudaRuntime.h"

#include "MoeKernels.h"
#include "muir-rt/Runtime.h"

#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime.h>
#include <nccl.h>

#if MUIR_RT_HAVE_MPI
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#include <mpi.h>
#endif

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <string>
#include <vector>

extern "C" {
size_t muirrt_cuda_detail_squares_scratch(int64_t batch);
cudaError_t muirrt_cuda_detail_to_f64(const float *in, int64_t n, double *out,
                                      cudaStream_t stream);
cudaError_t muirrt_cuda_detail_pack_upper(const double *in, int64_t batch,
                                          int64_t n, double *out,
                                          cudaStream_t stream);
cudaError_t muirrt_cuda_detail_sum_unpack(const double *pieces, int64_t g,
                                          int64_t batch, int64_t n,
                                          double *out, cudaStream_t stream);
cudaError_t muirrt_cuda_detail_trace_normalize(const double *in,
                                               int64_t batch, int64_t n,
                                               double eps, double *out,
                                               double *scale,
                                               cudaStream_t stream);
cudaError_t muirrt_cuda_detail_scale_matrices(const double *in,
                                              const double *scale,
                                              int64_t batch, int64_t count,
                                              void *out, int32_t to_f32,
                                              cudaStream_t stream);
cudaError_t muirrt_cuda_detail_sum_squares(const float *in, int64_t batch,
                                           int64_t numel, float *ss,
                                           double *ssDouble, double *scratch,
                                           cudaStream_t stream);
cudaError_t muirrt_cuda_detail_reduce_ordered(const float *pieces, int64_t g,
                                              int64_t n, int32_t op,
                                              float *out,
                                              cudaStream_t stream);
cudaError_t muirrt_cuda_detail_pieces(const float *in, float *out, int64_t g,
                                      int64_t outer, int64_t inner,
                                      int32_t to_columns,
                                      cudaStream_t stream);
cudaError_t muirrt_cuda_detail_to_bf16(const float *in, int64_t n, void *out,
                                       cudaStream_t stream);
cudaError_t muirrt_cuda_detail_transpose(const float *in, int64_t batch,
                                         int64_t rows, int64_t cols,
                                         float *out, cudaStream_t stream);
}

namespace {

//===----------------------------------------------------------------------===//
// State and errors
//===----------------------------------------------------------------------===//

struct Group {
  int64_t size = 1, rank = 0;
  ncclComm_t comm = nullptr; // set when size > 1
};

struct State {
  bool ready = false;
  int device = 0;
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  bool bf16 = false;
  bool deterministic = true;
  // The grouped products through cuBLAS's grouped GEMM (sizes on the
  // host) instead of the runtime's kernel (sizes on the device); its
  // per-group pointer arrays in device memory, grown as needed.
  bool groupedCublas = false;
  void **groupedPointers = nullptr;
  size_t groupedPointersCapacity = 0;
  std::string lastError, deviceName;
  // Graph capture.
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t graphExec = nullptr;
  cudaEvent_t events[8] = {};
  // NCCL over the grid.
  std::vector<int64_t> sizes, coords;
  int64_t rank = 0, worldSize = 1;
  ncclComm_t world = nullptr;
  std::map<int64_t, Group> groups; // by axes mask
  int64_t bytesSent = 0;
  // Observation slots: pinned host buffers.
  struct Observation {
    float *data = nullptr; // pinned host memory
    int64_t capacity = 0, numel = 0;
  };
  std::map<int64_t, Observation> observations;
  // cuBLAS's workspace, set once so that it never allocates (in a capture).
  void *blasWorkspace = nullptr;
  // Scratch buffers outgrown: kept until the end, since a captured graph
  // may still point at them.
  std::vector<void *> retired;
  // The packed exchanges (a SYRK triangle's chunks, packed by generated
  // kernels into buffers of the step): their own stream, so that a chunk's
  // exchange runs while the next chunk's product does; one slot a request
  // in flight, its pieces buffer kept (the same sequence every step).
  cudaStream_t comm = nullptr;
  struct Exchange {
    bool active = false;
    int64_t groupMask = 0, floats = 0;
    float *buffer = nullptr;   // the step's packed chunk
    bool deterministic = true; // the mode the exchange started in
    float *pieces = nullptr;
    size_t piecesCapacity = 0; // floats of pieces (g times a chunk)
    cudaEvent_t packed = nullptr, done = nullptr;
  };
  std::vector<Exchange> exchanges;
  // A step's temporaries (mgpuMemAlloc/Free). The first step allocates
  // them stream-ordered and records the sequence; before the first graph
  // capture one arena of the sequence's peak is reserved, and from then on
  // every step places the same sequence first-fit at the same offsets: the
  // same pointers every step, so a captured graph holds no memory nodes
  // and a re-capture can update it in place.
  std::vector<std::pair<int64_t, size_t>> allocTrace; // (+id, bytes)/(-id)
  std::map<void *, int64_t> allocIds;
  int64_t nextAllocId = 1;
  char *arena = nullptr;
  size_t arenaBytes = 0;
  std::map<size_t, size_t> arenaUsed; // offset -> bytes
  // Scratch for the sums of squares and the gathered pieces; grown outside
  // captures only (see scratch()).
  void *scratch = nullptr;
  size_t scratchBytes = 0;
  // Errors only the device sees (MoeKernels.h): a record in device memory
  // the kernels write (first error wins) and muirrt_cuda_synchronize reads
  // back and clears; sites name the calls.
  MuirCudaDeviceError *deviceErrorOnDevice = nullptr;
  std::vector<std::string> sites;
  std::map<std::string, int32_t> siteIds;
  // all_to_allv: each call's counts by its place in the uncaptured step
  // (countPlace counts the calls of the step running or being captured).
  struct CountExchange {
    int64_t mask = 0;
    std::vector<int64_t> send, recv;
  };
  std::vector<CountExchange> countExchanges;
  size_t countPlace = 0;
} state;

// The driver API functions the runtime needs, looked up through cudart
// (cudaGetDriverEntryPointByVersion) so that the library does not link
// libcuda.so.1 and loads, and says why not, where no driver is installed.
struct Driver {
  decltype(&::cuModuleLoadData) moduleLoadData = nullptr;
  decltype(&::cuModuleLoadDataEx) moduleLoadDataEx = nullptr;
  decltype(&::cuModuleUnload) moduleUnload = nullptr;
  decltype(&::cuModuleGetFunction) moduleGetFunction = nullptr;
  decltype(&::cuLaunchKernel) launchKernel = nullptr;
  decltype(&::cuGetErrorString) getErrorString = nullptr;
} driver;

template <typename F> bool lookup(const char *name, F &fn) {
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  void *ptr = nullptr;
#if CUDART_VERSION >= 12050
  cudaError_t e = cudaGetDriverEntryPointByVersion(name, &ptr, 12000,
                                                   cudaEnableDefault, &found);
#else
  cudaError_t e = cudaGetDriverEntryPoint(name, &ptr, cudaEnableDefault,
                                          &found);
#endif
  if (e != cudaSuccess ||
      found != cudaDriverEntryPointSuccess || !ptr)
    return false;
  fn = reinterpret_cast<F>(ptr);
  return true;
}

int fail(const std::string &why) {
  state.lastError = why;
  return -1;
}

[[noreturn]] void fatal(const std::string &what) {
  std::fprintf(stderr, "muir cuda runtime: %s\n", what.c_str());
  std::fflush(stdout);
  std::fflush(stderr);
  // Exit status 1 and the message, nothing else (no abort(): a crash
  // report; under mpirun a non-zero exit ends the other ranks).
  std::_Exit(1);
}

void check(cudaError_t e, const char *call) {
  if (e != cudaSuccess)
    fatal(std::string(call) + ": " + cudaGetErrorString(e));
}

void check(CUresult r, const char *call) {
  if (r != CUDA_SUCCESS) {
    const char *why = nullptr;
    if (driver.getErrorString)
      driver.getErrorString(r, &why);
    fatal(std::string(call) + ": " + (why ? why : "unknown driver error"));
  }
}

void check(cublasStatus_t s, const char *call) {
  if (s != CUBLAS_STATUS_SUCCESS)
    fatal(std::string(call) + ": " + cublasGetStatusString(s));
}

void check(ncclResult_t r, const char *call) {
  if (r != ncclSuccess)
    fatal(std::string(call) + ": " + ncclGetErrorString(r));
}

void ensureReady(const char *fn) {
  if (!state.ready && muirrt_cuda_init(-1) != 0)
    fatal(std::string(fn) + ": " + state.lastError);
}

bool capturing() {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (state.stream)
    cudaStreamIsCapturing(state.stream, &status);
  return status != cudaStreamCaptureStatusNone;
}

// A device scratch of at least `bytes`. Growing frees and allocates, which a
// graph capture cannot record: a capture that needs more than the first
// (uncaptured) run of the step allocated stops with a message.
void *scratch(size_t bytes, const char *fn) {
  if (bytes <= state.scratchBytes)
    return state.scratch;
  if (capturing())
    fatal(std::string(fn) + ": needs " + std::to_string(bytes) +
          " bytes of scratch inside a graph capture (run the step once "
          "uncaptured first)");
  if (state.scratch)
    state.retired.push_back(state.scratch);
  check(cudaStreamSynchronize(state.stream), "cudaStreamSynchronize");
  check(cudaMalloc(&state.scratch, bytes), "cudaMalloc");
  state.scratchBytes = bytes;
  return state.scratch;
}

// The lowest offset where `bytes` fit between the blocks of `used` (or
// after the last one).
size_t firstFit(const std::map<size_t, size_t> &used, size_t bytes) {
  size_t at = 0;
  for (auto [offset, size] : used) {
    if (offset >= at + bytes)
      return at;
    at = std::max(at, offset + size);
  }
  return at;
}

size_t aligned(size_t bytes) { return (std::max<size_t>(bytes, 1) + 255) / 256 * 256; }

// Reserves the arena for the recorded allocation sequence (see State).
void planArena() {
  if (state.arena || state.allocTrace.empty())
    return;
  std::map<size_t, size_t> used;
  std::map<int64_t, size_t> offsets;
  size_t peak = 0;
  for (auto [id, bytes] : state.allocTrace) {
    if (id > 0) {
      size_t at = firstFit(used, bytes);
      used[at] = bytes;
      offsets[id] = at;
      peak = std::max(peak, at + bytes);
    } else if (auto it = offsets.find(-id); it != offsets.end()) {
      used.erase(it->second);
    }
  }
  state.allocTrace.clear();
  if (peak == 0)
    return;
  check(cudaStreamSynchronize(state.stream), "cudaStreamSynchronize");
  // The first step's pool memory goes back before the arena takes its peak.
  cudaMemPool_t pool;
  if (cudaDeviceGetDefaultMemPool(&pool, state.device) == cudaSuccess)
    cudaMemPoolTrimTo(pool, 0);
  check(cudaMalloc(reinterpret_cast<void **>(&state.arena), peak),
        "cudaMalloc (the step's temporaries)");
  state.arenaBytes = peak;
}

//===----------------------------------------------------------------------===//
// Groups
//===----------------------------------------------------------------------===//

// The group of this rank for an axes mask of the grid (folding 0): the ranks
// that agree on every axis outside the mask; its group rank is the row-major
// index over the mask's axes.
Group &groupFor(int64_t mask, const char *fn) {
  auto it = state.groups.find(mask);
  if (it != state.groups.end())
    return it->second;
  if (mask >> 48)
    fatal(std::string(fn) + ": axes of another folding (mask " +
          std::to_string(mask) + ") are not supported by the CUDA runtime");
  Group g;
  int64_t color = 0;
  for (size_t i = 0; i < state.sizes.size(); ++i) {
    if (mask & (int64_t(1) << i)) {
      g.size *= state.sizes[i];
      g.rank = g.rank * state.sizes[i] + state.coords[i];
    } else {
      color = color * state.sizes[i] + state.coords[i];
    }
  }
  if (g.size > 1) {
    if (!state.world)
      fatal(std::string(fn) + ": a group of " + std::to_string(g.size) +
            " ranks, but NCCL was not initialised (muirrt_cuda_dist_init)");
    check(ncclCommSplit(state.world, static_cast<int>(color),
                        static_cast<int>(g.rank), &g.comm, nullptr),
          "ncclCommSplit");
  }
  return state.groups.emplace(mask, g).first->second;
}

ncclRedOp_t ncclOp(int32_t op) {
  return op == 1 ? ncclMax : op == 2 ? ncclMin : op == 3 ? ncclAvg : ncclSum;
}

// The operands of a product in the precision of the run: fp32 as they are;
// with --cuda-bf16, for products of at least kBf16Copy in every dimension,
// rounded to bf16 copies in scratch (one copy when both are the same
// buffer) so that cuBLAS runs its bf16 tensor-core kernels, and for smaller
// ones as they are under CUBLAS_COMPUTE_32F_FAST_16BF (cuBLAS rounds them
// itself). Measured on an H200 (bench/gpu/check.sh): NS5 on 8192^2 took
// 47.4 ms with FAST_16BF on fp32 operands and 29.5 ms on bf16 copies, while
// a Qwen3-30B-A3B layer set (768 x 2048 expert stacks) took 64.9 ms and
// 70.4 ms: the copies cost more than they gain on small products.
constexpr int64_t kBf16Copy = 4096;
struct ProductInputs {
  const void *a, *b;
  cudaDataType_t type;
  cublasComputeType_t compute;
};
ProductInputs productInputs(const float *a, int64_t aCount, const float *b,
                            int64_t bCount, int64_t m, int64_t n, int64_t k,
                            const char *fn) {
  if (!state.bf16)
    return {a, b, CUDA_R_32F, CUBLAS_COMPUTE_32F};
  if (m < kBf16Copy || n < kBf16Copy || k < kBf16Copy)
    return {a, b, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_16BF};
  size_t aBytes = aligned(2 * size_t(aCount));
  bool same = a == b && aCount == bCount;
  auto *base = static_cast<char *>(
      scratch(aBytes + (same ? 0 : aligned(2 * size_t(bCount))), fn));
  check(muirrt_cuda_detail_to_bf16(a, aCount, base, state.stream),
        "bf16 conversion kernel");
  if (same)
    return {base, base, CUDA_R_16BF, CUBLAS_COMPUTE_32F};
  check(muirrt_cuda_detail_to_bf16(b, bCount, base + aBytes, state.stream),
        "bf16 conversion kernel");
  return {base, base + aBytes, CUDA_R_16BF, CUBLAS_COMPUTE_32F};
}

// The index of a call site (function and MoE layer) for device errors.
int32_t site(const char *fn, const char *layer = nullptr) {
  std::string key = fn;
  if (layer && *layer)
    key += std::string(": layer '") + layer + "'";
  auto [it, fresh] = state.siteIds.emplace(
      key, static_cast<int32_t>(state.sites.size()));
  if (fresh)
    state.sites.push_back(key);
  return it->second;
}

std::string deviceErrorMessage(const MuirCudaDeviceError &e) {
  std::string where = e.site >= 0 && e.site < int32_t(state.sites.size())
                          ? state.sites[size_t(e.site)]
                          : std::string("a MoE kernel");
  auto n = [](int64_t v) { return std::to_string(v); };
  switch (e.code) {
  case kMoeBadExpert:
    return where + ": token " + n(e.a) + " slot " + n(e.b) +
           " names expert " + n(e.c) + " (out of range)";
  case kMoeOverBound:
    return where + ": " + n(e.a) + " routed rows but the static bound is " +
           n(e.b);
  case kGroupedBadSize:
    return where + ": expert " + n(e.a) + " has " + n(e.b) +
           " rows, but the experts before it hold " + n(e.c) +
           " (more than the row bound, or negative)";
  case kRouteGradBadExpert:
    return where + ": token " + n(e.a) + " slot " + n(e.b) +
           " names expert " + n(e.c) +
           " (route_grad needs muir.route's own indices, from before "
           "muir.capacity's drops)";
  default:
    return where + ": device error " + n(e.code);
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// Host side
//===----------------------------------------------------------------------===//

extern "C" const char *muirrt_cuda_last_error(void) {
  return state.lastError.c_str();
}

extern "C" int muirrt_cuda_init(int device) {
  if (state.ready)
    return 0;
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess)
    return fail(std::string("cudaGetDeviceCount: ") +
                cudaGetErrorString(e));
  if (count == 0)
    return fail("no CUDA device");
  if (device < 0) {
    const char *local = std::getenv("LOCAL_RANK");
    if (!local)
      local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    device = local ? std::atoi(local) % count : 0;
  }
  if (device >= count)
    return fail("device " + std::to_string(device) + " of " +
                std::to_string(count));
  const char *localSize = std::getenv("LOCAL_WORLD_SIZE");
  if (!localSize)
    localSize = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  if (localSize && std::atoi(localSize) > count)
    return fail(std::string(localSize) + " ranks on this node but " +
                std::to_string(count) +
                " GPU(s): NCCL needs one GPU per rank");
  if ((e = cudaSetDevice(device)) != cudaSuccess ||
      (e = cudaFree(nullptr)) != cudaSuccess)
    return fail(std::string("cannot use device ") + std::to_string(device) +
                ": " + cudaGetErrorString(e));
  if (!lookup("cuModuleLoadData", driver.moduleLoadData) ||
      !lookup("cuModuleLoadDataEx", driver.moduleLoadDataEx) ||
      !lookup("cuModuleUnload", driver.moduleUnload) ||
      !lookup("cuModuleGetFunction", driver.moduleGetFunction) ||
      !lookup("cuLaunchKernel", driver.launchKernel) ||
      !lookup("cuGetErrorString", driver.getErrorString))
    return fail("the CUDA driver lacks the module and launch functions");
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, device);
  state.deviceName = std::string(prop.name) + ", sm_" +
                     std::to_string(prop.major) + std::to_string(prop.minor) +
                     ", " + std::to_string(prop.multiProcessorCount) +
                     " SMs, " +
                     std::to_string(prop.totalGlobalMem >> 20) + " MiB";
  if ((e = cudaStreamCreateWithFlags(&state.stream, cudaStreamNonBlocking)) !=
      cudaSuccess)
    return fail(std::string("cudaStreamCreate: ") + cudaGetErrorString(e));
  if (cublasCreate(&state.blas) != CUBLAS_STATUS_SUCCESS)
    return fail("cublasCreate failed");
  // A fixed workspace: cuBLAS would otherwise allocate one, stream-ordered,
  // inside a graph capture (memory nodes the graph must not hold).
  const size_t workspace = size_t(32) << 20;
  if ((e = cudaMalloc(&state.blasWorkspace, workspace)) != cudaSuccess)
    return fail(std::string("cudaMalloc (cuBLAS workspace): ") +
                cudaGetErrorString(e));
  if (cublasSetStream(state.blas, state.stream) != CUBLAS_STATUS_SUCCESS ||
      cublasSetWorkspace(state.blas, state.blasWorkspace, workspace) !=
          CUBLAS_STATUS_SUCCESS)
    return fail("cublasSetStream/cublasSetWorkspace failed");
  // The first step's stream-ordered temporaries: keep the pool's memory
  // between synchronisations instead of returning it each time.
  cudaMemPool_t pool;
  if (cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess) {
    uint64_t keep = UINT64_MAX;
    cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
  }
  // Pure fp32 unless bf16 is asked for per call (no TF32 behind our back).
  cublasSetMathMode(state.blas, CUBLAS_DEFAULT_MATH);
  for (cudaEvent_t &ev : state.events)
    cudaEventCreate(&ev);
  if ((e = cudaMalloc(reinterpret_cast<void **>(&state.deviceErrorOnDevice),
                      sizeof(MuirCudaDeviceError))) != cudaSuccess ||
      (e = cudaMemset(state.deviceErrorOnDevice, 0,
                      sizeof(MuirCudaDeviceError))) != cudaSuccess)
    return fail(std::string("cudaMalloc (the device error record): ") +
                cudaGetErrorString(e));
  state.device = device;
  state.ready = true;
  return 0;
}

extern "C" const char *muirrt_cuda_device_name(void) {
  return state.deviceName.c_str();
}

extern "C" void muirrt_cuda_set_precision(int32_t bf16) {
  state.bf16 = bf16 != 0;
}

extern "C" void muirrt_cuda_set_deterministic(int32_t on) {
  state.deterministic = on != 0;
}

extern "C" int muirrt_cuda_alloc(void **ptr, size_t bytes) {
  cudaError_t e = cudaMalloc(ptr, bytes ? bytes : 1);
  return e == cudaSuccess ? 0
                          : fail(std::string("cudaMalloc of ") +
                                 std::to_string(bytes) +
                                 " bytes: " + cudaGetErrorString(e));
}

extern "C" int muirrt_cuda_free(void *ptr) {
  cudaError_t e = cudaFree(ptr);
  return e == cudaSuccess ? 0
                          : fail(std::string("cudaFree: ") +
                                 cudaGetErrorString(e));
}

extern "C" int muirrt_cuda_copy_to_device(void *dst, const void *src,
                                          size_t bytes) {
  // On the step stream (non-blocking: it would not wait for the legacy
  // stream's copy), then waited for.
  cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice,
                                  state.stream);
  if (e == cudaSuccess)
    e = cudaStreamSynchronize(state.stream);
  return e == cudaSuccess ? 0
                          : fail(std::string("copy to device: ") +
                                 cudaGetErrorString(e));
}

extern "C" int muirrt_cuda_copy_to_host(void *dst, const void *src,
                                        size_t bytes) {
  cudaError_t e = cudaStreamSynchronize(state.stream);
  if (e == cudaSuccess)
    e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost,
                        state.stream);
  if (e == cudaSuccess)
    e = cudaStreamSynchronize(state.stream);
  return e == cudaSuccess ? 0
                          : fail(std::string("copy to host: ") +
                                 cudaGetErrorString(e));
}

// After a whole step (every temporary freed again), the recorded sequence
// sizes the arena: later steps, captured or not, use the same addresses.
extern "C" int muirrt_cuda_synchronize(void) {
  if (capturing())
    return fail("muirrt_cuda_synchronize inside a graph capture");
  state.countPlace = 0; // a step ends here
  if (state.allocIds.empty())
    planArena();
  cudaError_t e = cudaStreamSynchronize(state.stream);
  if (e != cudaSuccess)
    return fail(std::string("cudaStreamSynchronize: ") +
                cudaGetErrorString(e));
  // What the kernels of the step found (a small copy, after the step).
  MuirCudaDeviceError found{};
  if (state.deviceErrorOnDevice &&
      (e = cudaMemcpy(&found, state.deviceErrorOnDevice, sizeof(found),
                      cudaMemcpyDeviceToHost)) != cudaSuccess)
    return fail(std::string("reading the device error record: ") +
                cudaGetErrorString(e));
  if (found.code != 0) {
    cudaMemset(state.deviceErrorOnDevice, 0, sizeof(found));
    return fail(deviceErrorMessage(found));
  }
  return 0;
}

extern "C" int muirrt_cuda_graph_begin(void) {
  planArena();
  state.countPlace = 0;
  cudaError_t e =
      cudaStreamBeginCapture(state.stream, cudaStreamCaptureModeGlobal);
  return e == cudaSuccess ? 0
                          : fail(std::string("cudaStreamBeginCapture: ") +
                                 cudaGetErrorString(e));
}

// A new capture of the same step (one whose kernel arguments changed, such
// as the step counter's) updates the instantiated graph in place; another
// topology instantiates it anew.
extern "C" int muirrt_cuda_graph_end(void) {
  cudaGraph_t graph = nullptr;
  cudaError_t e = cudaStreamEndCapture(state.stream, &graph);
  if (e != cudaSuccess)
    return fail(std::string("capturing the step as a CUDA graph: ") +
                cudaGetErrorString(e));
  bool updated = false;
  if (state.graphExec) {
    cudaGraphExecUpdateResultInfo info;
    updated = cudaGraphExecUpdate(state.graphExec, graph, &info) ==
              cudaSuccess;
    if (!updated) {
      cudaGetLastError(); // the failed update's error is not sticky
      cudaGraphExecDestroy(state.graphExec);
      state.graphExec = nullptr;
    }
  }
  if (!updated && (e = cudaGraphInstantiate(&state.graphExec, graph, 0)) !=
                      cudaSuccess)
    return fail(std::string("instantiating the step's CUDA graph: ") +
                cudaGetErrorString(e));
  if (state.graph)
    cudaGraphDestroy(state.graph);
  state.graph = graph;
  return 0;
}

extern "C" int muirrt_cuda_graph_launch(void) {
  cudaError_t e = cudaGraphLaunch(state.graphExec, state.stream);
  return e == cudaSuccess ? 0
                          : fail(std::string("cudaGraphLaunch: ") +
                                 cudaGetErrorString(e));
}

extern "C" int muirrt_cuda_event_record(int32_t i) {
  if (i < 0 || i >= 8)
    return fail("event index out of range");
  cudaError_t e = cudaEventRecord(state.events[i], state.stream);
  return e == cudaSuccess ? 0 : fail(cudaGetErrorString(e));
}

extern "C" double muirrt_cuda_elapsed_ms(int32_t i, int32_t j) {
  if (i < 0 || i >= 8 || j < 0 || j >= 8)
    return -1;
  cudaEventSynchronize(state.events[j]);
  float ms = -1;
  cudaEventElapsedTime(&ms, state.events[i], state.events[j]);
  return ms;
}

namespace {

// Sends or receives exactly n bytes; false on error or EOF.
bool sendAll(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k <= 0)
      return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

bool recvAll(int fd, char *p, size_t n) {
  while (n > 0) {
    ssize_t k = ::recv(fd, p, n, 0);
    if (k <= 0)
      return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

// The address and port of the id exchange: MASTER_ADDR and, so as not to
// collide with torchrun's own store on MASTER_PORT, MUIR_NCCL_PORT or else
// MASTER_PORT + 1.
bool exchangeEndpoint(std::string &host, int &port, std::string &why) {
  const char *addr = std::getenv("MASTER_ADDR");
  const char *own = std::getenv("MUIR_NCCL_PORT");
  const char *master = std::getenv("MASTER_PORT");
  if (!addr || (!own && !master)) {
    why = "MASTER_ADDR and MASTER_PORT (or MUIR_NCCL_PORT) must be set";
    return false;
  }
  host = addr;
  port = own ? std::atoi(own) : std::atoi(master) + 1;
  if (port <= 0 || port > 65535) {
    why = "bad port " + std::to_string(port);
    return false;
  }
  return true;
}

} // namespace

// The NCCL unique id for a run started by torchrun (or any launcher that
// sets RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT): rank 0 makes it and
// serves it over TCP to the other world - 1 ranks, which connect (retrying
// for MUIR_NCCL_TIMEOUT seconds, 120 by default). Exported for the tests.
extern "C" int muirrt_cuda_exchange_unique_id(int64_t rank, int64_t world,
                                              void *id) {
  std::string host, why;
  int port = 0;
  if (!exchangeEndpoint(host, port, why))
    return fail("NCCL bootstrap: " + why);
  const char *t = std::getenv("MUIR_NCCL_TIMEOUT");
  double timeout = t ? std::atof(t) : 120.0;
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(static_cast<int64_t>(timeout * 1e3));
  char *bytes = static_cast<char *>(id);
  const size_t n = sizeof(ncclUniqueId);
  if (rank == 0) {
    ncclResult_t r = ncclGetUniqueId(static_cast<ncclUniqueId *>(id));
    if (r != ncclSuccess)
      return fail(std::string("ncclGetUniqueId: ") + ncclGetErrorString(r));
    int server = ::socket(AF_INET, SOCK_STREAM, 0);
    int yes = 1;
    setsockopt(server, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(static_cast<uint16_t>(port));
    if (server < 0 || ::bind(server, reinterpret_cast<sockaddr *>(&a),
                             sizeof(a)) != 0 ||
        ::listen(server, 128) != 0) {
      if (server >= 0)
        ::close(server);
      return fail("NCCL bootstrap: cannot listen on port " +
                  std::to_string(port) + ": " + std::strerror(errno));
    }
    for (int64_t served = 1; served < world; ++served) {
      int peer = ::accept(server, nullptr, nullptr);
      bool ok = peer >= 0 && sendAll(peer, bytes, n);
      if (peer >= 0)
        ::close(peer);
      if (!ok) {
        ::close(server);
        return fail("NCCL bootstrap: sending the id failed");
      }
    }
    ::close(server);
    return 0;
  }
  addrinfo hints{}, *found = nullptr;
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints,
                  &found) != 0 ||
      !found)
    return fail("NCCL bootstrap: cannot resolve MASTER_ADDR '" + host + "'");
  for (;;) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) == 0) {
      bool ok = recvAll(fd, bytes, n);
      ::close(fd);
      freeaddrinfo(found);
      return ok ? 0 : fail("NCCL bootstrap: receiving the id failed");
    }
    if (fd >= 0)
      ::close(fd);
    if (std::chrono::steady_clock::now() > deadline) {
      freeaddrinfo(found);
      return fail("NCCL bootstrap: rank 0 at " + host + ":" +
                  std::to_string(port) + " did not answer within " +
                  std::to_string(timeout) + " s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

/// This process's place on the grid (state.sizes): rank and coordinates;
/// -1 when `size` processes cannot run the grid.
static int placeOnGrid(int64_t rank, int64_t size) {
  int64_t world = 1;
  for (int64_t s : state.sizes)
    world *= s;
  if (size != world)
    return fail("the grid has " + std::to_string(world) + " ranks but " +
                std::to_string(size) + " processes run");
  state.rank = rank;
  state.worldSize = size;
  state.coords.assign(state.sizes.size(), 0);
  for (size_t i = state.sizes.size(), r = rank; i-- > 0;) {
    state.coords[i] = static_cast<int64_t>(r) % state.sizes[i];
    r /= state.sizes[i];
  }
  return 0;
}

/// The world communicator from the job's unique id (once per process).
static int joinWorld(const ncclUniqueId &id, int64_t rank, int64_t size) {
  if (state.world)
    return fail("NCCL is initialised already in this process");
  ncclResult_t r = ncclCommInitRank(&state.world, static_cast<int>(size), id,
                                    static_cast<int>(rank));
  if (r != ncclSuccess)
    return fail(std::string("ncclCommInitRank: ") + ncclGetErrorString(r));
  return 0;
}

extern "C" int muirrt_cuda_dist_init(const int64_t *sizes, int32_t num_axes) {
  if (muirrt_cuda_init(-1) != 0)
    return -1;
  state.sizes.assign(sizes, sizes + num_axes);
  int rank = 0, size = 1;
  bool viaMpi = false;
#if MUIR_RT_HAVE_MPI
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    viaMpi = size > 1;
  }
#endif
  if (!viaMpi && std::getenv("WORLD_SIZE") && std::getenv("RANK")) {
    size = std::atoi(std::getenv("WORLD_SIZE"));
    rank = std::atoi(std::getenv("RANK"));
  }
  if (placeOnGrid(rank, size) != 0)
    return -1;
  if (size == 1)
    return 0;
  ncclUniqueId id;
  if (viaMpi) {
#if MUIR_RT_HAVE_MPI
    if (rank == 0 && ncclGetUniqueId(&id) != ncclSuccess)
      return fail("ncclGetUniqueId failed");
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
#endif
  } else if (muirrt_cuda_exchange_unique_id(rank, size, &id) != 0) {
    return -1;
  }
  return joinWorld(id, rank, size);
}

/// NCCL from a unique id the caller distributed (a PyTorch job through its
/// own process group): rank 0 makes it with muirrt_cuda_unique_id.
extern "C" int muirrt_cuda_unique_id(void *out) {
  if (muirrt_cuda_init(-1) != 0)
    return -1;
  ncclResult_t r = ncclGetUniqueId(static_cast<ncclUniqueId *>(out));
  if (r != ncclSuccess)
    return fail(std::string("ncclGetUniqueId: ") + ncclGetErrorString(r));
  return 0;
}

extern "C" int muirrt_cuda_dist_init_with_id(const int64_t *sizes,
                                             int32_t num_axes, int64_t rank,
                                             int64_t size, const void *id) {
  if (muirrt_cuda_init(-1) != 0)
    return -1;
  state.sizes.assign(sizes, sizes + num_axes);
  if (placeOnGrid(rank, size) != 0)
    return -1;
  if (size == 1)
    return 0;
  ncclUniqueId nid;
  std::memcpy(&nid, id, sizeof(nid));
  return joinWorld(nid, rank, size);
}

/// Runs later steps on `stream` (a cudaStream_t of the caller's; null: the
/// runtime's own, which then first waits for the work queued on the legacy
/// default stream: PyTorch's default stream is that one, and the runtime's
/// own is non-blocking, so without the wait it could read gradients the
/// backward pass is still writing).
extern "C" void muirrt_cuda_set_stream(void *stream) {
  if (muirrt_cuda_init(-1) != 0)
    return;
  static cudaStream_t own = nullptr;
  static cudaEvent_t legacyDone = nullptr;
  if (!own)
    own = state.stream;
  cudaStream_t next = stream ? static_cast<cudaStream_t>(stream) : own;
  if (next != state.stream) {
    state.stream = next;
    cublasSetStream(state.blas, state.stream);
  }
  if (!stream) {
    if (!legacyDone)
      cudaEventCreateWithFlags(&legacyDone, cudaEventDisableTiming);
    cudaEventRecord(legacyDone, cudaStreamLegacy);
    cudaStreamWaitEvent(own, legacyDone, 0);
  }
}

extern "C" void muirrt_cuda_dist_finalize(void) {
  for (auto &[mask, g] : state.groups)
    if (g.comm)
      ncclCommDestroy(g.comm);
  state.groups.clear();
  state.countExchanges.clear();
  if (state.world)
    ncclCommDestroy(state.world);
  state.world = nullptr;
}

extern "C" const float *muirrt_cuda_observation(int64_t slot,
                                                int64_t *numel) {
  auto it = state.observations.find(slot);
  if (it == state.observations.end()) {
    *numel = 0;
    return nullptr;
  }
  *numel = it->second.numel;
  return it->second.data;
}

extern "C" int64_t muirrt_cuda_bytes_sent(void) { return state.bytesSent; }

//===----------------------------------------------------------------------===//
// Called by compiled modules
//===----------------------------------------------------------------------===//

extern "C" void muirrt_cuda_sgemm(int64_t batch, int32_t trans_a,
                                  int32_t trans_b, int64_t m, int64_t n,
                                  int64_t k, float alpha, const float *a,
                                  const float *b, float beta, float *c,
                                  const float *acc) {
  ensureReady("muirrt_cuda_sgemm");
  if (batch <= 0 || m <= 0 || n <= 0)
    return;
  if (k <= 0) {
    // No product: C = beta Acc (cuBLAS rejects leading dimensions of 0).
    size_t bytes = sizeof(float) * batch * m * n;
    if (beta == 0.0f) {
      check(cudaMemsetAsync(c, 0, bytes, state.stream), "cudaMemsetAsync");
      return;
    }
    if (acc && acc != c)
      check(cudaMemcpyAsync(c, acc, bytes, cudaMemcpyDeviceToDevice,
                            state.stream),
            "cudaMemcpyAsync");
    check(cublasSscal(state.blas, static_cast<int>(batch * m * n), &beta, c,
                      1),
          "cublasSscal");
    return;
  }
  if (beta != 0.0f && acc && acc != c)
    check(cudaMemcpyAsync(c, acc, sizeof(float) * batch * m * n,
                          cudaMemcpyDeviceToDevice, state.stream),
          "cudaMemcpyAsync");
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: B is
  // the first cuBLAS operand. Stored row-major, B is k x n (n x k when
  // trans_b), i.e. column-major n x k with leading dimension n (k).
  cublasOperation_t opB = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opA = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  int64_t ldb = trans_b ? k : n, lda = trans_a ? m : k;
  ProductInputs in = productInputs(a, batch * m * k, b, batch * k * n, m, n,
                                   k, "muirrt_cuda_sgemm");
  check(cublasGemmStridedBatchedEx(
            state.blas, opB, opA, static_cast<int>(n), static_cast<int>(m),
            static_cast<int>(k), &alpha, in.b, in.type, static_cast<int>(ldb),
            k * n, in.a, in.type, static_cast<int>(lda), m * k, &beta, c,
            CUDA_R_32F, static_cast<int>(n), m * n, static_cast<int>(batch),
            in.compute, CUBLAS_GEMM_DEFAULT),
        "cublasGemmStridedBatchedEx");
}

// The symmetric product as a GEMM of A with itself: on Hopper cuBLAS's
// GEMM runs well above its SYRK, and both triangles are written.
extern "C" void muirrt_cuda_ssyrk(int64_t batch, int32_t trans, int64_t n,
                                  int64_t k, float alpha, const float *a,
                                  float beta, float *c, const float *acc) {
  // A A^T (A n x k) or A^T A (A k x n).
  muirrt_cuda_sgemm(batch, trans, !trans, n, n, k, alpha, a, a, beta, c, acc);
}

// The double products of the Gram form of Newton-Schulz (small matrices):
// cublasDgemmStridedBatched, on the FP64 tensor cores of Hopper; the
// symmetric product as a GEMM of A with itself, as in single precision.
extern "C" void muirrt_cuda_dgemm(int64_t batch, int32_t trans_a,
                                  int32_t trans_b, int64_t m, int64_t n,
                                  int64_t k, double alpha, const double *a,
                                  const double *b, double beta, double *c,
                                  const double *acc) {
  ensureReady("muirrt_cuda_dgemm");
  if (batch <= 0 || m <= 0 || n <= 0)
    return;
  size_t bytes = sizeof(double) * batch * m * n;
  if (beta != 0.0 && acc && acc != c)
    check(cudaMemcpyAsync(c, acc, bytes, cudaMemcpyDeviceToDevice,
                          state.stream),
          "cudaMemcpyAsync");
  if (k <= 0) {
    // No product: C = beta Acc (cuBLAS rejects leading dimensions of 0).
    if (beta == 0.0)
      check(cudaMemsetAsync(c, 0, bytes, state.stream), "cudaMemsetAsync");
    else
      check(cublasDscal(state.blas, static_cast<int>(batch * m * n), &beta,
                        c, 1),
            "cublasDscal");
    return;
  }
  // Row-major C = op(A) op(B) as column-major C^T = op(B)^T op(A)^T.
  cublasOperation_t opB = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opA = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  int64_t ldb = trans_b ? k : n, lda = trans_a ? m : k;
  check(cublasDgemmStridedBatched(
            state.blas, opB, opA, static_cast<int>(n), static_cast<int>(m),
            static_cast<int>(k), &alpha, b, static_cast<int>(ldb), k * n, a,
            static_cast<int>(lda), m * k, &beta, c, static_cast<int>(n),
            m * n, static_cast<int>(batch)),
        "cublasDgemmStridedBatched");
}

// cuBLAS computes the whole product (as fast on Hopper's FP64 tensor cores).
extern "C" void muirrt_cuda_dgemm_sym(int64_t batch, int32_t trans_a,
                                      int32_t trans_b, int64_t m, int64_t n,
                                      int64_t k, double alpha, const double *a,
                                      const double *b, double beta, double *c,
                                      const double *acc) {
  muirrt_cuda_dgemm(batch, trans_a, trans_b, m, n, k, alpha, a, b, beta, c,
                    acc);
}

extern "C" void muirrt_cuda_dsyrk(int64_t batch, int32_t trans, int64_t n,
                                  int64_t k, double alpha, const double *a,
                                  double beta, double *c, const double *acc) {
  muirrt_cuda_dgemm(batch, trans, !trans, n, n, k, alpha, a, a, beta, c, acc);
}

// f32 A into f64 C: A converted to double in the runtime's scratch, then
// the double product.
extern "C" void muirrt_cuda_ssyrk_f64(int64_t batch, int32_t trans,
                                      int64_t n, int64_t k, double alpha,
                                      const float *a, double beta, double *c,
                                      const double *acc) {
  ensureReady("muirrt_cuda_ssyrk_f64");
  int64_t count = batch * n * k;
  if (count <= 0) {
    muirrt_cuda_dgemm(batch, trans, !trans, n, n, k, alpha, nullptr, nullptr,
                      beta, c, acc);
    return;
  }
  auto *wide = static_cast<double *>(
      scratch(sizeof(double) * count, "muirrt_cuda_ssyrk_f64"));
  check(muirrt_cuda_detail_to_f64(a, count, wide, state.stream),
        "the f64 copy kernel");
  muirrt_cuda_dgemm(batch, trans, !trans, n, n, k, alpha, wide, wide, beta, c,
                    acc);
}

extern "C" void muirrt_cuda_trace_normalize(int64_t batch, int64_t n,
                                            double eps, const double *in,
                                            double *out, double *scale) {
  ensureReady("muirrt_cuda_trace_normalize");
  check(muirrt_cuda_detail_trace_normalize(in, batch, n, eps, out, scale,
                                           state.stream),
        "the trace normalisation kernel");
}

namespace {
void scaleMatrices(const char *fn, int64_t batch, int64_t count,
                   const double *in, const double *scale, void *out,
                   bool toF32) {
  ensureReady(fn);
  check(muirrt_cuda_detail_scale_matrices(in, scale, batch, count, out,
                                          toF32 ? 1 : 0, state.stream),
        "the matrix scaling kernel");
}
} // namespace

extern "C" void muirrt_cuda_scale_matrices_f32(int64_t batch, int64_t count,
                                               const double *in,
                                               const double *scale,
                                               float *out) {
  scaleMatrices("muirrt_cuda_scale_matrices_f32", batch, count, in, scale,
                out, true);
}

extern "C" void muirrt_cuda_scale_matrices_f64(int64_t batch, int64_t count,
                                               const double *in,
                                               const double *scale,
                                               double *out) {
  scaleMatrices("muirrt_cuda_scale_matrices_f64", batch, count, in, scale,
                out, false);
}

// Rows [row_begin, row_end) of the upper triangle of alpha A A^T (A n x k)
// or alpha A^T A (trans: A k x n), as one strided-batched GEMM of the rows'
// block against the rows from row_begin on, written at c[r][r0..n). Unlike
// the CPU's, it also writes the chunk's diagonal block below the diagonal
// (c[r][r0..r)); the triangle exchange's wait mirrors the rows over those
// entries, so in the emitted sequence (syrk_rows, start, wait) nothing
// reads them first.
extern "C" void muirrt_cuda_ssyrk_rows(int64_t batch, int32_t trans,
                                       int64_t n, int64_t k, float alpha,
                                       const float *a, float *c,
                                       int64_t row_begin, int64_t row_end) {
  ensureReady("muirrt_cuda_ssyrk_rows");
  if (row_begin < 0 || row_begin > row_end || row_end > n)
    fatal("muirrt_cuda_ssyrk_rows: rows [" + std::to_string(row_begin) +
          ", " + std::to_string(row_end) + ") are not within [0, " +
          std::to_string(n) + "]");
  int64_t rows = row_end - row_begin, cols = n - row_begin;
  if (batch <= 0 || rows <= 0)
    return;
  if (k <= 0) {
    // An empty product: the rows' entries are 0.
    for (int64_t b = 0; b < batch; ++b)
      check(cudaMemset2DAsync(c + b * n * n + row_begin * n + row_begin,
                              sizeof(float) * n, 0, sizeof(float) * cols,
                              rows, state.stream),
            "cudaMemset2DAsync");
    return;
  }
  // Column-major, C^T's block (cols x rows, ld n) = op(X) op(Y) with X and
  // Y the same rows of A: without trans, A is column-major k x n (ld k),
  // C^T = A[:, r0:]^T A[:, r0:r1]; with trans, A is n x k (ld n),
  // C^T = A[r0:, :] A[r0:r1, :]^T.
  ProductInputs in = productInputs(a, batch * n * k, a, batch * n * k, rows,
                                   cols, k, "muirrt_cuda_ssyrk_rows");
  const char *base = static_cast<const char *>(in.a);
  size_t elem = in.type == CUDA_R_16BF ? 2 : 4;
  const void *x = base + elem * size_t(trans ? row_begin : row_begin * k);
  float beta = 0.0f;
  check(cublasGemmStridedBatchedEx(
            state.blas, trans ? CUBLAS_OP_N : CUBLAS_OP_T,
            trans ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(cols),
            static_cast<int>(rows), static_cast<int>(k), &alpha, x,
            in.type, static_cast<int>(trans ? n : k), n * k, x, in.type,
            static_cast<int>(trans ? n : k), n * k, &beta,
            c + row_begin * n + row_begin, CUDA_R_32F, static_cast<int>(n),
            n * n, static_cast<int>(batch), in.compute, CUBLAS_GEMM_DEFAULT),
        "cublasGemmStridedBatchedEx (syrk rows)");
}

// Gathers every rank's packed chunk on the exchange stream, after what the
// step stream has done so far (the kernel that packed it); the wait sums
// the pieces in rank order into the chunk, on the step stream.
extern "C" int64_t muirrt_cuda_packed_all_reduce_start(int64_t axes_mask,
                                                       const float *buffer,
                                                       int64_t floats) {
  const char *fn = "muirrt_cuda_packed_all_reduce_start";
  ensureReady(fn);
  if (floats < 0)
    fatal(std::string(fn) + ": a negative length");
  Group &g = groupFor(axes_mask, fn);
  state.bytesSent += floats * 4 * (g.size - 1);
  size_t slot = 0;
  while (slot < state.exchanges.size() && state.exchanges[slot].active)
    ++slot;
  if (slot == state.exchanges.size())
    state.exchanges.emplace_back();
  State::Exchange &t = state.exchanges[slot];
  t.active = true;
  t.groupMask = axes_mask;
  t.floats = floats;
  t.buffer = const_cast<float *>(buffer);
  if (g.size == 1 || floats == 0)
    return static_cast<int64_t>(slot);
  // A slot may serve groups of other sizes in turn.
  if (static_cast<size_t>(floats * g.size) > t.piecesCapacity) {
    if (capturing())
      fatal(std::string(fn) + ": a larger exchange inside a graph capture "
                              "than in the step's first run");
    if (t.pieces)
      state.retired.push_back(t.pieces);
    t.piecesCapacity = static_cast<size_t>(floats * g.size);
    check(cudaMalloc(&t.pieces, sizeof(float) * t.piecesCapacity),
          "cudaMalloc");
  }
  t.deterministic = state.deterministic;
  if (!t.packed) {
    check(cudaEventCreateWithFlags(&t.packed, cudaEventDisableTiming),
          "cudaEventCreate");
    check(cudaEventCreateWithFlags(&t.done, cudaEventDisableTiming),
          "cudaEventCreate");
  }
  if (!state.comm)
    check(cudaStreamCreateWithFlags(&state.comm, cudaStreamNonBlocking),
          "cudaStreamCreate");
  check(cudaEventRecord(t.packed, state.stream), "cudaEventRecord");
  check(cudaStreamWaitEvent(state.comm, t.packed, 0), "cudaStreamWaitEvent");
  if (t.deterministic)
    check(ncclAllGather(buffer, t.pieces, static_cast<size_t>(floats),
                        ncclFloat, g.comm, state.comm),
          "ncclAllGather");
  else // in place: the step does not touch the chunk before the wait
    check(ncclAllReduce(buffer, t.buffer, static_cast<size_t>(floats),
                        ncclFloat, ncclSum, g.comm, state.comm),
          "ncclAllReduce");
  check(cudaEventRecord(t.done, state.comm), "cudaEventRecord");
  return static_cast<int64_t>(slot);
}

extern "C" void muirrt_cuda_packed_all_reduce_wait(int64_t request,
                                                   float *buffer,
                                                   int64_t floats) {
  const char *fn = "muirrt_cuda_packed_all_reduce_wait";
  ensureReady(fn);
  if (request < 0 ||
      request >= static_cast<int64_t>(state.exchanges.size()) ||
      !state.exchanges[static_cast<size_t>(request)].active)
    fatal(std::string(fn) + ": request " + std::to_string(request) +
          " was not started or was already waited for");
  State::Exchange &t = state.exchanges[static_cast<size_t>(request)];
  if (buffer != t.buffer || floats != t.floats)
    fatal(std::string(fn) + ": request " + std::to_string(request) +
          " started on another buffer (" + std::to_string(t.floats) +
          " floats) than the wait's (" + std::to_string(floats) + ")");
  t.active = false;
  Group &g = groupFor(t.groupMask, fn);
  if (g.size == 1 || floats == 0)
    return;
  check(cudaStreamWaitEvent(state.stream, t.done, 0), "cudaStreamWaitEvent");
  if (t.deterministic)
    check(muirrt_cuda_detail_reduce_ordered(t.pieces, g.size, floats, 0,
                                            buffer, state.stream),
          "ordered sum kernel");
}

// The sums of squares, in double (the scaling of a normalisation, a
// generated kernel, reads them) or rounded to float.
namespace {
void sumSquares(const char *fn, int64_t batch, int64_t numel,
                const float *in, float *ss, double *ssDouble) {
  ensureReady(fn);
  if (batch <= 0)
    return;
  if (numel < 0)
    fatal(std::string(fn) + ": a negative size");
  auto *s = static_cast<double *>(
      scratch(muirrt_cuda_detail_squares_scratch(batch), fn));
  check(muirrt_cuda_detail_sum_squares(in, batch, numel, ss, ssDouble, s,
                                       state.stream),
        "sum of squares kernel");
}
} // namespace

extern "C" void muirrt_cuda_sum_squares(int64_t batch, int64_t numel,
                                        const float *in, float *ss) {
  sumSquares("muirrt_cuda_sum_squares", batch, numel, in, ss, nullptr);
}

extern "C" void muirrt_cuda_sum_squares_f64(int64_t batch, int64_t numel,
                                            const float *in, double *ss) {
  sumSquares("muirrt_cuda_sum_squares_f64", batch, numel, in, nullptr, ss);
}

extern "C" void muirrt_cuda_transpose(int64_t batch, int64_t rows,
                                      int64_t cols, const float *in,
                                      float *out) {
  ensureReady("muirrt_cuda_transpose");
  if (batch <= 0 || rows <= 0 || cols <= 0)
    return;
  check(muirrt_cuda_detail_transpose(in, batch, rows, cols, out,
                                     state.stream),
        "transpose kernel");
}

//===----------------------------------------------------------------------===//
// Mixture of experts (a group of one; MoeKernels.cu)
//===----------------------------------------------------------------------===//

extern "C" void muirrt_cuda_route(int64_t tokens, int64_t experts, int64_t k,
                                  const float *logits, const float *bias,
                                  int32_t scoring, int32_t softmax_after_topk,
                                  int32_t normalize, int64_t n_group,
                                  int64_t topk_group, float scaling,
                                  int64_t *indices, float *weights,
                                  int64_t *counts) {
  const char *fn = "muirrt_cuda_route";
  ensureReady(fn);
  // The CPU runtime's checks, on the host: they depend on shapes only.
  if (tokens < 0 || experts < 1 || k < 1 || k > experts || n_group < 1 ||
      experts % n_group != 0 || topk_group < 1 || topk_group > n_group ||
      k > topk_group * (experts / n_group))
    fatal(std::string(fn) + ": bad routing shape (tokens " +
          std::to_string(tokens) + ", experts " + std::to_string(experts) +
          ", top_k " + std::to_string(k) + ", n_group " +
          std::to_string(n_group) + ", topk_group " +
          std::to_string(topk_group) + ")");
  void *s = scratch(
      muirrt_cuda_detail_route_scratch(tokens, experts, k, n_group), fn);
  check(muirrt_cuda_detail_route(tokens, experts, k, logits, bias, scoring,
                                 softmax_after_topk, normalize, n_group,
                                 topk_group, scaling, indices, weights,
                                 counts, s, state.stream),
        "routing kernel");
}

extern "C" void muirrt_cuda_route_grad(int64_t tokens, int64_t experts,
                                       int64_t k, const float *logits,
                                       int32_t scoring,
                                       int32_t softmax_after_topk,
                                       int32_t normalize, float scaling,
                                       const int64_t *indices,
                                       const float *dweights,
                                       float *dlogits) {
  const char *fn = "muirrt_cuda_route_grad";
  ensureReady(fn);
  void *s =
      scratch(muirrt_cuda_detail_route_grad_scratch(tokens, experts, k), fn);
  check(muirrt_cuda_detail_route_grad(
            tokens, experts, k, logits, scoring, softmax_after_topk,
            normalize, scaling, indices, dweights, dlogits, s,
            state.deviceErrorOnDevice, site(fn), state.stream),
        "routing gradient kernel");
}

extern "C" void muirrt_cuda_capacity(int64_t tokens, int64_t k,
                                     int64_t experts, double capacity_factor,
                                     int32_t policy, int64_t group_tokens,
                                     const int64_t *indices,
                                     const float *weights,
                                     int64_t *kept_indices,
                                     float *kept_weights, int64_t *counts) {
  const char *fn = "muirrt_cuda_capacity";
  ensureReady(fn);
  int64_t group = group_tokens > 0 ? group_tokens : tokens;
  if (group <= 0 || tokens % group != 0 || !(capacity_factor > 0.0) ||
      experts < 1)
    fatal(std::string(fn) + ": bad capacity factor or token group (" +
          std::to_string(capacity_factor) + ", " +
          std::to_string(group_tokens) + " of " + std::to_string(tokens) +
          " tokens)");
  // As the CPU runtime: ceil(factor * G * k / experts), in double.
  auto capacity = static_cast<int64_t>(
      std::ceil(capacity_factor * static_cast<double>(group * k) /
                static_cast<double>(experts)));
  void *s =
      scratch(muirrt_cuda_detail_capacity_scratch(tokens, k, experts), fn);
  check(muirrt_cuda_detail_capacity(tokens, k, experts, capacity, policy,
                                    group, indices, weights, kept_indices,
                                    kept_weights, counts, s, state.stream),
        "capacity kernel");
}

extern "C" void muirrt_cuda_mse_loss(int64_t n, const float *in,
                                     const float *target, float scale,
                                     float *loss, float *grad) {
  const char *fn = "muirrt_cuda_mse_loss";
  ensureReady(fn);
  void *s = scratch(muirrt_cuda_detail_mse_scratch(), fn);
  check(muirrt_cuda_detail_mse_loss(n, in, target, scale, loss, grad, s,
                                    state.stream),
        "MSE loss kernel");
}

extern "C" void muirrt_cuda_set_grouped_gemm(int32_t cublas) {
  state.groupedCublas = cublas != 0;
}

namespace {

/// The expert sizes on the host, for cuBLAS's grouped GEMM: copied back
/// after the step stream's work so far, then checked as the CPU runtime
/// checks them (every size >= 0, their total within the bound).
std::vector<int64_t> expertSizesOnHost(const char *fn, const int64_t *sizes,
                                       int64_t experts, int64_t rows) {
  if (capturing())
    fatal(std::string(fn) +
          ": cuBLAS's grouped GEMM (muirrt_cuda_set_grouped_gemm(1)) takes "
          "the expert sizes on the host, which a CUDA graph capture cannot "
          "wait for: run the step op by op, or with the runtime's grouped "
          "GEMM");
  std::vector<int64_t> h(static_cast<size_t>(experts));
  if (experts > 0) {
    check(cudaMemcpyAsync(h.data(), sizes, sizeof(int64_t) * h.size(),
                          cudaMemcpyDeviceToHost, state.stream),
          "cudaMemcpyAsync (expert sizes)");
    check(cudaStreamSynchronize(state.stream), "cudaStreamSynchronize");
  }
  int64_t total = 0;
  for (int64_t e = 0; e < experts; ++e) {
    int64_t v = h[static_cast<size_t>(e)];
    if (v < 0 || v > rows - total) {
      std::string why = std::string(fn) + ": expert " + std::to_string(e) +
                        " has " + std::to_string(v) +
                        " rows, but the experts before it hold " +
                        std::to_string(total) + " of the " +
                        std::to_string(rows) + "-row bound (sizes:";
      for (int64_t x : h)
        why += " " + std::to_string(x);
      fatal(why + ")");
    }
    total += v;
  }
  return h;
}

/// One group a non-empty expert, as cublasGemmGroupedBatchedEx takes them
/// (column-major: a row-major [r, c] buffer is a column-major c x r
/// matrix of leading dimension c).
struct Groups {
  std::vector<cublasOperation_t> ta, tb;
  std::vector<int> m, n, k, lda, ldb, ldc, size;
  std::vector<float> alpha, beta;
  std::vector<const void *> a, b;
  std::vector<void *> c;
  void add(cublasOperation_t opA, cublasOperation_t opB, int64_t gm,
           int64_t gn, int64_t gk, const float *pa, int64_t la,
           const float *pb, int64_t lb, float *pc, int64_t lc) {
    for (int64_t v : {gm, gn, gk, la, lb, lc})
      if (v > INT32_MAX)
        fatal("cuBLAS's grouped GEMM: a size of " + std::to_string(v) +
              " over its int range");
    ta.push_back(opA);
    tb.push_back(opB);
    m.push_back(int(gm));
    n.push_back(int(gn));
    k.push_back(int(gk));
    lda.push_back(int(la));
    ldb.push_back(int(lb));
    ldc.push_back(int(lc));
    size.push_back(1);
    alpha.push_back(1.0f);
    beta.push_back(0.0f);
    a.push_back(pa);
    b.push_back(pb);
    c.push_back(pc);
  }
  /// The product of every group, fp32 (no TF32), on the step stream.
  void run(const char *fn) {
    size_t g = m.size();
    if (g == 0)
      return;
    if (3 * g > state.groupedPointersCapacity) {
      if (state.groupedPointers)
        state.retired.push_back(state.groupedPointers);
      state.groupedPointersCapacity = 3 * g;
      check(cudaMalloc(reinterpret_cast<void **>(&state.groupedPointers),
                       sizeof(void *) * 3 * g),
            "cudaMalloc");
    }
    // The pointer arrays live on the device; a copy from pageable memory
    // has read it when the call returns, in stream order.
    std::vector<const void *> all;
    all.insert(all.end(), a.begin(), a.end());
    all.insert(all.end(), b.begin(), b.end());
    all.insert(all.end(), c.begin(), c.end());
    check(cudaMemcpyAsync(state.groupedPointers, all.data(),
                          sizeof(void *) * all.size(),
                          cudaMemcpyHostToDevice, state.stream),
          "cudaMemcpyAsync (grouped GEMM pointers)");
    void **dev = state.groupedPointers;
#if CUBLAS_VERSION < 120500
    (void)dev;
    fatal(std::string(fn) + ": cuBLAS's grouped GEMM needs cuBLAS 12.5 or "
                            "newer; this runtime was built with " +
          std::to_string(CUBLAS_VERSION));
#else
    check(cublasGemmGroupedBatchedEx(
              state.blas, ta.data(), tb.data(), m.data(), n.data(), k.data(),
              alpha.data(), dev, CUDA_R_32F, lda.data(), dev + g, CUDA_R_32F,
              ldb.data(), beta.data(), dev + 2 * g, CUDA_R_32F, ldc.data(),
              int(g), size.data(), CUBLAS_COMPUTE_32F),
          (std::string("cublasGemmGroupedBatchedEx (") + fn + ")").c_str());
#endif
  }
};

/// The grouped product through cuBLAS: addGroup(groups, e, first row,
/// rows) for each expert, from the host copy of the sizes, then the
/// groups' products; returns the experts' total rows.
template <typename AddGroup>
int64_t cublasGrouped(const char *fn, const int64_t *sizes, int64_t experts,
                      int64_t rows, AddGroup addGroup) {
  std::vector<int64_t> h = expertSizesOnHost(fn, sizes, experts, rows);
  Groups groups;
  int64_t at = 0;
  for (int64_t e = 0; e < experts; ++e) {
    addGroup(groups, e, at, h[static_cast<size_t>(e)]);
    at += h[static_cast<size_t>(e)];
  }
  groups.run(fn);
  return at;
}

} // namespace

extern "C" void muirrt_cuda_grouped_gemm(int64_t experts, int64_t rows,
                                         int64_t k, int64_t n,
                                         const float *in, const float *w,
                                         int32_t trans_w,
                                         const int64_t *sizes, float *out) {
  const char *fn = "muirrt_cuda_grouped_gemm";
  ensureReady(fn);
  if (state.groupedCublas) {
    // out_e (row-major [rows_e, n]) = in_e op(w_e), column-major: the n x
    // rows_e out_e^T = op(w_e)^T in_e^T.
    int64_t at = cublasGrouped(
        fn, sizes, experts, rows,
        [&](Groups &groups, int64_t e, int64_t first, int64_t r) {
          if (r > 0)
            groups.add(trans_w ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, n, r,
                       k, w + e * k * n, trans_w ? k : n, in + first * k, k,
                       out + first * n, n);
        });
    if (at < rows)
      check(cudaMemsetAsync(out + at * n, 0,
                            sizeof(float) * size_t((rows - at) * n),
                            state.stream),
            "cudaMemsetAsync");
    return;
  }
  void *s = scratch(muirrt_cuda_detail_grouped_scratch(experts), fn);
  check(muirrt_cuda_detail_grouped_gemm(experts, rows, k, n, in, w, trans_w,
                                        sizes, out, s,
                                        state.deviceErrorOnDevice, site(fn),
                                        state.stream),
        "grouped GEMM kernel");
}

extern "C" void muirrt_cuda_grouped_gemm_wgrad(
    int64_t experts, int64_t rows, int64_t k, int64_t n, const float *in,
    const float *grad, int32_t trans_w, const int64_t *sizes, float *dw) {
  const char *fn = "muirrt_cuda_grouped_gemm_wgrad";
  ensureReady(fn);
  if (state.groupedCublas) {
    // dw_e = in_e^T grad_e (row-major [k, n]; column-major, its n x k
    // transpose grad_e^T in_e), or with trans_w grad_e^T in_e ([n, k]:
    // in_e^T grad_e); an empty expert's is zero.
    cublasGrouped(
        fn, sizes, experts, rows,
        [&](Groups &groups, int64_t e, int64_t first, int64_t r) {
          float *d = dw + e * k * n;
          if (r == 0)
            check(cudaMemsetAsync(d, 0, sizeof(float) * size_t(k * n),
                                  state.stream),
                  "cudaMemsetAsync");
          else if (!trans_w)
            groups.add(CUBLAS_OP_N, CUBLAS_OP_T, n, k, r, grad + first * n,
                       n, in + first * k, k, d, n);
          else
            groups.add(CUBLAS_OP_N, CUBLAS_OP_T, k, n, r, in + first * k, k,
                       grad + first * n, n, d, k);
        });
    return;
  }
  void *s = scratch(muirrt_cuda_detail_grouped_scratch(experts), fn);
  check(muirrt_cuda_detail_grouped_gemm_wgrad(
            experts, rows, k, n, in, grad, trans_w, sizes, dw, s,
            state.deviceErrorOnDevice, site(fn), state.stream),
        "grouped GEMM weight-gradient kernel");
}

extern "C" void muirrt_cuda_moe_plan(int64_t tokens, int64_t k,
                                     int64_t experts, int64_t bound,
                                     const int64_t *indices, int64_t *counts,
                                     int64_t *plan, const char *layer) {
  // Errors name the op the plan belongs to.
  const char *fn = "muirrt_cuda_moe_dispatch";
  ensureReady(fn);
  if (bound < tokens * k)
    fatal(std::string(fn) + ": layer '" + (layer ? layer : "?") +
          "': a bound of " + std::to_string(bound) + " rows under " +
          std::to_string(tokens) + " tokens x top-" + std::to_string(k));
  check(muirrt_cuda_detail_moe_plan(tokens, k, experts, bound, indices,
                                    counts, plan, state.deviceErrorOnDevice,
                                    site(fn, layer), state.stream),
        "dispatch plan kernels");
}

extern "C" void muirrt_cuda_observe(int64_t slot, const float *data,
                                    int64_t numel) {
  ensureReady("muirrt_cuda_observe");
  auto &o = state.observations[slot];
  if (o.capacity < numel) {
    if (capturing())
      fatal("muirrt_cuda_observe: a new observation slot inside a graph "
            "capture (run the step once uncaptured first)");
    if (o.data)
      cudaFreeHost(o.data);
    check(cudaMallocHost(reinterpret_cast<void **>(&o.data),
                         sizeof(float) * (numel ? numel : 1)),
          "cudaMallocHost");
    o.capacity = numel;
  }
  o.numel = numel;
  if (numel > 0)
    check(cudaMemcpyAsync(o.data, data, sizeof(float) * numel,
                          cudaMemcpyDeviceToHost, state.stream),
          "cudaMemcpyAsync");
}

extern "C" void muirrt_cuda_all_reduce(int64_t axes_mask, int32_t op,
                                       const float *in, float *out,
                                       int64_t count) {
  ensureReady("muirrt_cuda_all_reduce");
  Group &g = groupFor(axes_mask, "muirrt_cuda_all_reduce");
  state.bytesSent += count * 4 * (g.size - 1);
  if (count <= 0)
    return;
  if (g.size == 1) {
    if (in != out)
      check(cudaMemcpyAsync(out, in, sizeof(float) * count,
                            cudaMemcpyDeviceToDevice, state.stream),
            "cudaMemcpyAsync");
    return;
  }
  if (!state.deterministic) {
    check(ncclAllReduce(in, out, static_cast<size_t>(count), ncclFloat,
                        ncclOp(op), g.comm, state.stream),
          "ncclAllReduce");
    return;
  }
  // Every piece to every rank, then the rank-order sum on the device.
  auto *pieces = static_cast<float *>(
      scratch(sizeof(float) * count * g.size, "muirrt_cuda_all_reduce"));
  check(ncclAllGather(in, pieces, static_cast<size_t>(count), ncclFloat,
                      g.comm, state.stream),
        "ncclAllGather");
  check(muirrt_cuda_detail_reduce_ordered(pieces, g.size, count, op, out,
                                          state.stream),
        "ordered sum kernel");
}

// Packed triangles gathered from every member (ncclAllGather), summed in
// group-rank order and unpacked on the device: the same bits on every rank
// and run (as the CPU runtime's).
extern "C" void muirrt_cuda_symmetric_all_reduce(int64_t axes_mask,
                                                 const double *in,
                                                 double *out, int64_t batch,
                                                 int64_t n) {
  const char *fn = "muirrt_cuda_symmetric_all_reduce";
  ensureReady(fn);
  Group &g = groupFor(axes_mask, fn);
  int64_t count = batch * n * (n + 1) / 2;
  state.bytesSent += count * 8 * (g.size - 1);
  if (count <= 0)
    return;
  auto *buf = static_cast<double *>(
      scratch(sizeof(double) * count * (g.size + 1), fn));
  double *packed = buf, *pieces = buf + count;
  check(muirrt_cuda_detail_pack_upper(in, batch, n, packed, state.stream),
        "the triangle packing kernel");
  if (g.size > 1)
    check(ncclAllGather(packed, pieces, static_cast<size_t>(count),
                        ncclDouble, g.comm, state.stream),
          "ncclAllGather");
  else
    pieces = packed;
  check(muirrt_cuda_detail_sum_unpack(pieces, g.size, batch, n, out,
                                      state.stream),
        "the ordered triangle sum kernel");
}

namespace {
// The common start of a collective that sends one block of `block` floats
// to every peer: its group, the bytes counted, and for a group of one the
// block copied to the output (the whole collective).
Group &blockCollective(const char *fn, int64_t mask, const float *in,
                       float *out, int64_t block) {
  ensureReady(fn);
  Group &g = groupFor(mask, fn);
  state.bytesSent += block * 4 * (g.size - 1);
  if (g.size == 1 && block > 0 && in != out)
    check(cudaMemcpyAsync(out, in, sizeof(float) * block,
                          cudaMemcpyDeviceToDevice, state.stream),
          "cudaMemcpyAsync");
  return g;
}
} // namespace

extern "C" void muirrt_cuda_all_gather(int64_t axes_mask, const float *in,
                                       float *out, int64_t outer,
                                       int64_t inner) {
  Group &g = blockCollective("muirrt_cuda_all_gather", axes_mask, in, out,
                             outer * inner);
  int64_t block = outer * inner;
  if (g.size == 1 || block <= 0)
    return;
  if (outer == 1) {
    check(ncclAllGather(in, out, static_cast<size_t>(block), ncclFloat,
                        g.comm, state.stream),
          "ncclAllGather");
    return;
  }
  // Rank-major pieces, then piece j to columns [j inner, (j + 1) inner).
  auto *pieces = static_cast<float *>(
      scratch(sizeof(float) * block * g.size, "muirrt_cuda_all_gather"));
  check(ncclAllGather(in, pieces, static_cast<size_t>(block), ncclFloat,
                      g.comm, state.stream),
        "ncclAllGather");
  check(muirrt_cuda_detail_pieces(pieces, out, g.size, outer, inner, 1,
                                  state.stream),
        "pieces kernel");
}

namespace {
/// Block j (`block` floats) of `send` to group rank j and block i of
/// `recv` from group rank i: grouped sends and receives on the step stream.
void exchangeBlocks(Group &g, const float *send, float *recv, int64_t block) {
  check(ncclGroupStart(), "ncclGroupStart");
  for (int64_t j = 0; j < g.size; ++j) {
    check(ncclSend(send + j * block, static_cast<size_t>(block), ncclFloat,
                   static_cast<int>(j), g.comm, state.stream),
          "ncclSend");
    check(ncclRecv(recv + j * block, static_cast<size_t>(block), ncclFloat,
                   static_cast<int>(j), g.comm, state.stream),
          "ncclRecv");
  }
  check(ncclGroupEnd(), "ncclGroupEnd");
}
} // namespace

extern "C" void muirrt_cuda_reduce_scatter(int64_t axes_mask, int32_t op,
                                           const float *in, float *out,
                                           int64_t outer, int64_t inner) {
  Group &g = blockCollective("muirrt_cuda_reduce_scatter", axes_mask, in,
                             out, outer * inner);
  int64_t block = outer * inner;
  if (g.size == 1 || block <= 0)
    return;
  // Column blocks to rank-major pieces; member j's slice of every rank
  // arrives at j (grouped send/recv), and is summed in rank order.
  auto *buf = static_cast<float *>(scratch(
      sizeof(float) * block * g.size * 2, "muirrt_cuda_reduce_scatter"));
  float *send = buf, *recv = buf + block * g.size;
  check(muirrt_cuda_detail_pieces(in, send, g.size, outer, inner, 0,
                                  state.stream),
        "pieces kernel");
  exchangeBlocks(g, send, recv, block);
  check(muirrt_cuda_detail_reduce_ordered(recv, g.size, block, op, out,
                                          state.stream),
        "ordered sum kernel");
}

extern "C" void muirrt_cuda_broadcast(int64_t axes_mask, int64_t root,
                                      float *buf, int64_t count) {
  ensureReady("muirrt_cuda_broadcast");
  Group &g = groupFor(axes_mask, "muirrt_cuda_broadcast");
  if (g.rank == root)
    state.bytesSent += count * 4 * (g.size - 1);
  if (g.size == 1 || count <= 0)
    return;
  check(ncclBroadcast(buf, buf, static_cast<size_t>(count), ncclFloat,
                      static_cast<int>(root), g.comm, state.stream),
        "ncclBroadcast");
}

// Block j (count floats) to group rank j, block i from group rank i: grouped
// sends and receives (the input is staged first when it is the output).
extern "C" void muirrt_cuda_all_to_all(int64_t axes_mask, const float *in,
                                       float *out, int64_t count) {
  Group &g = blockCollective("muirrt_cuda_all_to_all", axes_mask, in, out,
                             count);
  if (g.size == 1 || count <= 0)
    return;
  const float *send = in;
  if (in == out) {
    auto *staged = static_cast<float *>(
        scratch(sizeof(float) * count * g.size, "muirrt_cuda_all_to_all"));
    check(cudaMemcpyAsync(staged, in, sizeof(float) * count * g.size,
                          cudaMemcpyDeviceToDevice, state.stream),
          "cudaMemcpyAsync");
    send = staged;
  }
  exchangeBlocks(g, send, out, count);
}

// Ragged rows to each group rank. The counts are host memory (FSDP's shard
// sizes). An uncaptured call exchanges what each rank receives over NCCL
// (one int64 each way, then a stream synchronisation: every rank runs the
// same uncaptured steps) and records it by the call's place in the step; a
// captured call takes the record of the same place, so a captured step
// posts the same sends and receives with no host synchronisation. A
// capture whose counts differ from the uncaptured step's stops.
extern "C" void muirrt_cuda_all_to_allv(int64_t axes_mask, const float *in,
                                        int64_t in_rows,
                                        const int64_t *send_counts, float *out,
                                        int64_t out_rows,
                                        int64_t *recv_counts, int64_t row) {
  const char *fn = "muirrt_cuda_all_to_allv";
  ensureReady(fn);
  Group &g = groupFor(axes_mask, fn);
  if (!send_counts || !recv_counts || row < 0 || in_rows < 0 || out_rows < 0)
    fatal(std::string(fn) + ": null counts or negative sizes");
  std::vector<int64_t> send(send_counts, send_counts + g.size);
  int64_t sent = 0, toOthers = 0;
  for (int64_t j = 0; j < g.size; ++j) {
    if (send[size_t(j)] < 0)
      fatal(std::string(fn) + ": negative send count");
    sent += send[size_t(j)];
    if (j != g.rank)
      toOthers += send[size_t(j)];
  }
  if (sent > in_rows)
    fatal(std::string(fn) + ": send counts total " + std::to_string(sent) +
          " rows but the input holds " + std::to_string(in_rows));
  std::vector<int64_t> recv(size_t(g.size), 0);
  size_t place = state.countPlace++;
  if (g.size == 1) {
    recv[0] = send[0];
  } else if (capturing()) {
    if (place >= state.countExchanges.size() ||
        state.countExchanges[place].mask != axes_mask ||
        state.countExchanges[place].send != send)
      fatal(std::string(fn) + ": the captured step's counts differ from "
                              "the uncaptured step's (call " +
            std::to_string(place) + ")");
    recv = state.countExchanges[place].recv;
  } else {
    {
      // One int64 to and from each rank, on the device.
      auto *d = static_cast<int64_t *>(
          scratch(sizeof(int64_t) * 2 * g.size, fn));
      check(cudaMemcpyAsync(d, send.data(), sizeof(int64_t) * g.size,
                            cudaMemcpyHostToDevice, state.stream),
            "cudaMemcpyAsync");
      check(ncclGroupStart(), "ncclGroupStart");
      for (int64_t j = 0; j < g.size; ++j) {
        check(ncclSend(d + j, 1, ncclInt64, int(j), g.comm, state.stream),
              "ncclSend");
        check(ncclRecv(d + g.size + j, 1, ncclInt64, int(j), g.comm,
                       state.stream),
              "ncclRecv");
      }
      check(ncclGroupEnd(), "ncclGroupEnd");
      check(cudaMemcpyAsync(recv.data(), d + g.size,
                            sizeof(int64_t) * g.size, cudaMemcpyDeviceToHost,
                            state.stream),
            "cudaMemcpyAsync");
      check(cudaStreamSynchronize(state.stream), "cudaStreamSynchronize");
      state.bytesSent += 8 * (g.size - 1);
    }
    if (state.countExchanges.size() <= place)
      state.countExchanges.resize(place + 1);
    state.countExchanges[place] = {axes_mask, send, recv};
  }
  int64_t received = 0;
  for (int64_t r : recv)
    received += r;
  if (received > out_rows)
    fatal(std::string(fn) + ": receives " + std::to_string(received) +
          " rows but the output holds " + std::to_string(out_rows) +
          " (the static bound is too small)");
  std::copy(recv.begin(), recv.end(), recv_counts);
  state.bytesSent += toOthers * row * 4;
  // A group of one copies its rows; an input that overlaps the output
  // (the same buffer included, unless nothing moves) is read from a
  // staged copy.
  if (g.size == 1 && in == out)
    return;
  const float *from = in;
  if (sent * row > 0 && in < out + out_rows * row && out < in + sent * row) {
    auto *staged =
        static_cast<float *>(scratch(sizeof(float) * sent * row, fn));
    check(cudaMemcpyAsync(staged, in, sizeof(float) * sent * row,
                          cudaMemcpyDeviceToDevice, state.stream),
          "cudaMemcpyAsync");
    from = staged;
  }
  if (g.size == 1) {
    if (send[0] * row > 0)
      check(cudaMemcpyAsync(out, from, sizeof(float) * send[0] * row,
                            cudaMemcpyDeviceToDevice, state.stream),
            "cudaMemcpyAsync");
    return;
  }
  check(ncclGroupStart(), "ncclGroupStart");
  int64_t at = 0, back = 0;
  for (int64_t j = 0; j < g.size; ++j) {
    if (send[size_t(j)] > 0)
      check(ncclSend(from + at * row, size_t(send[size_t(j)] * row),
                     ncclFloat, int(j), g.comm, state.stream),
            "ncclSend");
    if (recv[size_t(j)] > 0)
      check(ncclRecv(out + back * row, size_t(recv[size_t(j)] * row),
                     ncclFloat, int(j), g.comm, state.stream),
            "ncclRecv");
    at += send[size_t(j)];
    back += recv[size_t(j)];
  }
  check(ncclGroupEnd(), "ncclGroupEnd");
}

// Ragged all-gather as grouped broadcasts: rank j's counts[j] floats to
// offset sum(counts[0..j)) of every rank's output.
extern "C" void muirrt_cuda_all_gatherv(int64_t axes_mask, const float *in,
                                        float *out, const int64_t *counts) {
  ensureReady("muirrt_cuda_all_gatherv");
  Group &g = groupFor(axes_mask, "muirrt_cuda_all_gatherv");
  if (!counts)
    fatal("muirrt_cuda_all_gatherv: null counts");
  state.bytesSent += counts[g.rank] * 4 * (g.size - 1);
  if (g.size == 1) {
    if (counts[0] > 0 && in != out)
      check(cudaMemcpyAsync(out, in, sizeof(float) * counts[0],
                            cudaMemcpyDeviceToDevice, state.stream),
            "cudaMemcpyAsync");
    return;
  }
  int64_t total = 0, mine = 0;
  for (int64_t j = 0; j < g.size; ++j) {
    if (j == g.rank)
      mine = total;
    total += counts[j];
  }
  // The broadcasts are not ordered: an input inside the output anywhere
  // but at this rank's own place is staged first.
  if (in < out + total && out < in + counts[g.rank] && in != out + mine) {
    auto *staged = static_cast<float *>(scratch(
        sizeof(float) * counts[g.rank], "muirrt_cuda_all_gatherv"));
    check(cudaMemcpyAsync(staged, in, sizeof(float) * counts[g.rank],
                          cudaMemcpyDeviceToDevice, state.stream),
          "cudaMemcpyAsync");
    in = staged;
  }
  check(ncclGroupStart(), "ncclGroupStart");
  int64_t offset = 0;
  for (int64_t j = 0; j < g.size; ++j) {
    if (counts[j] > 0)
      check(ncclBroadcast(j == g.rank ? static_cast<const void *>(in)
                                      : static_cast<const void *>(out + offset),
                          out + offset, static_cast<size_t>(counts[j]),
                          ncclFloat, static_cast<int>(j), g.comm,
                          state.stream),
            "ncclBroadcast");
    offset += counts[j];
  }
  check(ncclGroupEnd(), "ncclGroupEnd");
}

// No communication: every rank holds the whole [outer, inner * g] tensor
// and keeps column block r (a strided copy).
extern "C" void muirrt_cuda_all_slice(int64_t axes_mask, const float *in,
                                      float *out, int64_t outer,
                                      int64_t inner) {
  ensureReady("muirrt_cuda_all_slice");
  Group &g = groupFor(axes_mask, "muirrt_cuda_all_slice");
  if (outer <= 0 || inner <= 0)
    return;
  check(cudaMemcpy2DAsync(out, sizeof(float) * inner, in + g.rank * inner,
                          sizeof(float) * inner * g.size,
                          sizeof(float) * inner, outer,
                          cudaMemcpyDeviceToDevice, state.stream),
        "cudaMemcpy2DAsync");
}

extern "C" int64_t muirrt_cuda_dist_group_rank(int64_t axes_mask) {
  return groupFor(axes_mask, "muirrt_cuda_dist_group_rank").rank;
}

//===----------------------------------------------------------------------===//
// MLIR's GPU runtime ABI
//===----------------------------------------------------------------------===//

extern "C" void *mgpuModuleLoad(void *data, size_t /*size*/) {
  ensureReady("mgpuModuleLoad");
  CUmodule module = nullptr;
  check(driver.moduleLoadData(&module, data), "cuModuleLoadData");
  return module;
}

extern "C" void *mgpuModuleLoadJIT(void *data, int opt_level) {
  ensureReady("mgpuModuleLoadJIT");
  CUmodule module = nullptr;
  char log[8192] = {0};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                            CU_JIT_OPTIMIZATION_LEVEL};
  void *values[] = {log, reinterpret_cast<void *>(sizeof(log)),
                    reinterpret_cast<void *>(static_cast<intptr_t>(
                        opt_level < 0 ? 0 : opt_level > 4 ? 4 : opt_level))};
  CUresult r = driver.moduleLoadDataEx(&module, data, 3, options, values);
  if (r != CUDA_SUCCESS)
    fatal(std::string("cuModuleLoadDataEx (the kernels' PTX): ") + log);
  return module;
}

extern "C" void mgpuModuleUnload(void *module) {
  if (driver.moduleUnload)
    driver.moduleUnload(static_cast<CUmodule>(module));
}

extern "C" void *mgpuModuleGetFunction(void *module, const char *name) {
  CUfunction fn = nullptr;
  check(driver.moduleGetFunction(&fn, static_cast<CUmodule>(module), name),
        "cuModuleGetFunction");
  return fn;
}

extern "C" void mgpuLaunchKernel(void *function, intptr_t grid_x,
                                 intptr_t grid_y, intptr_t grid_z,
                                 intptr_t block_x, intptr_t block_y,
                                 intptr_t block_z, int32_t smem,
                                 void * /*stream: the step stream*/,
                                 void **params, void **extra,
                                 size_t /*param_count*/) {
  check(driver.launchKernel(static_cast<CUfunction>(function),
                       static_cast<unsigned>(grid_x),
                       static_cast<unsigned>(grid_y),
                       static_cast<unsigned>(grid_z),
                       static_cast<unsigned>(block_x),
                       static_cast<unsigned>(block_y),
                       static_cast<unsigned>(block_z),
                       static_cast<unsigned>(smem),
                       reinterpret_cast<CUstream>(state.stream), params,
                       extra),
        "cuLaunchKernel");
}

// Every "stream" a compiled module asks for is the step stream; its
// synchronisations are deferred to the end of the step (see the header).
extern "C" void *mgpuStreamCreate(void) {
  ensureReady("mgpuStreamCreate");
  return state.stream;
}

extern "C" void mgpuStreamDestroy(void *) {}

extern "C" void mgpuStreamSynchronize(void *) {}

extern "C" void *mgpuMemAlloc(uint64_t bytes, void *, int8_t host_shared) {
  ensureReady("mgpuMemAlloc");
  if (host_shared)
    fatal("mgpuMemAlloc: host-shared memory is not used by muir");
  size_t size = aligned(bytes);
  if (state.arena) {
    size_t at = firstFit(state.arenaUsed, size);
    if (at + size <= state.arenaBytes) {
      state.arenaUsed[at] = size;
      return state.arena + at;
    }
    if (capturing())
      fatal("mgpuMemAlloc: the step allocates more inside a graph capture "
            "than its first run did (" +
            std::to_string(state.arenaBytes) + " bytes)");
  }
  void *ptr = nullptr;
  check(cudaMallocAsync(&ptr, size, state.stream), "cudaMallocAsync");
  if (!state.arena) {
    int64_t id = state.nextAllocId++;
    state.allocIds[ptr] = id;
    state.allocTrace.push_back({id, size});
  }
  return ptr;
}

extern "C" void mgpuMemFree(void *ptr, void *) {
  char *p = static_cast<char *>(ptr);
  if (state.arena && p >= state.arena && p < state.arena + state.arenaBytes) {
    state.arenaUsed.erase(static_cast<size_t>(p - state.arena));
    return;
  }
  if (auto it = state.allocIds.find(ptr); it != state.allocIds.end()) {
    if (!state.arena)
      state.allocTrace.push_back({-it->second, 0});
    state.allocIds.erase(it);
  }
  check(cudaFreeAsync(ptr, state.stream), "cudaFreeAsync");
}

extern "C" void mgpuMemcpy(void *dst, void *src, size_t bytes, void *) {
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, state.stream),
        "cudaMemcpyAsync");
}
