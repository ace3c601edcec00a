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
#include "muir-rt/EntryTable.h"

#include "CudaInternal.h"
#include "MoeKernels.h"
#include "muir-rt/Runtime.h"

#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

using namespace muirrt_cuda_detail;

//===----------------------------------------------------------------------===//
// State and errors
//===----------------------------------------------------------------------===//

namespace muirrt_cuda_detail {

State state;
Driver driver;

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

// Reserves the arena for the sequences placed so far (see State).
void planArena() {
  size_t need = state.arenaPlan.need();
  if (need <= state.arenaBytes || !state.arenaPlan.idle())
    return;
  check(cudaStreamSynchronize(state.stream), "cudaStreamSynchronize");
  if (state.arena) {
    // A later step needs more: the smaller arena goes, and with it the
    // graph that points into it (called where a capture follows, or where
    // there is no graph). Every stream's work ends first, not only the
    // step stream's: another step may have replayed into the old arena on
    // its caller's stream.
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    check(cudaFree(state.arena), "cudaFree (the step's temporaries)");
    state.arena = nullptr;
    state.arenaBytes = 0;
    if (state.graphExec) {
      cudaGraphExecDestroy(state.graphExec);
      state.graphExec = nullptr;
    }
  }
  // The pool memory of the runs so far goes back before the arena takes
  // its peak.
  cudaMemPool_t pool;
  if (cudaDeviceGetDefaultMemPool(&pool, state.device) == cudaSuccess)
    cudaMemPoolTrimTo(pool, 0);
  check(cudaMalloc(reinterpret_cast<void **>(&state.arena), need),
        "cudaMalloc (the step's temporaries)");
  state.arenaBytes = need;
}

} // namespace muirrt_cuda_detail

namespace {

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

// After a whole step (every temporary freed again), the placed sequence
// sizes the arena: later steps, captured or not, use the same addresses.
extern "C" int muirrt_cuda_synchronize(void) {
  if (capturing())
    return fail("muirrt_cuda_synchronize inside a graph capture");
  state.countPlace = 0; // a step ends here
  // The first arena; a larger one only where no captured graph points
  // into the old (else the next capture grows it).
  if (!state.arena || !state.graphExec)
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

//===----------------------------------------------------------------------===//
// The table of step entries
//===----------------------------------------------------------------------===//

// muirrt_cuda_entries (muir-rt/EntryTable.h): every Cuda and Both entry of
// muir-rt/Entries.def as its muirrt_cuda_<name>, the Cpu ones NULL.
namespace {
#define MUIR_RT_SLOT_Cpu(NAME) nullptr
#define MUIR_RT_SLOT_Both(NAME) &muirrt_cuda_##NAME
#define MUIR_RT_SLOT_Cuda(NAME) &muirrt_cuda_##NAME
const muirrt_entry_table entryTable = {
    "cuda", "muirrt_cuda_", muirrt_entry_signature,
#define MUIR_RT_ENTRY(NAME, TARGETS, RET, PARAMS) MUIR_RT_SLOT_##TARGETS(NAME),
#include "muir-rt/Entries.def"
};
} // namespace

extern "C" const muirrt_entry_table *muirrt_cuda_entries(void) {
  return &entryTable;
}
