//===- CudaInternal.h - what the CUDA runtime's files share -----*- C++ -*-===//
//
// The CUDA runtime is split by job (CudaRuntime.cpp: device, stream,
// memory and the step's arena; CudaBlas.cpp; CudaCollectives.cpp;
// CudaBootstrap.cpp; CudaMoe.cpp; CudaStep.cpp). These are the state and
// helpers several of them use, defined once in CudaRuntime.cpp; nothing
// here is part of the runtime's C API (muir-rt/CudaRuntime.h).
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_RUNTIME_CUDA_CUDAINTERNAL_H
#define MUIR_RUNTIME_CUDA_CUDAINTERNAL_H

#include "MoeKernels.h"
#include "muir-rt/ArenaPlan.h"

#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

// The launchers of Kernels.cu.
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
cudaError_t muirrt_cuda_detail_mirror_upper(void *c, int64_t batch, int64_t n,
                                            int32_t bytes, cudaStream_t stream);
cudaError_t muirrt_cuda_detail_transpose(const float *in, int64_t batch,
                                         int64_t rows, int64_t cols,
                                         float *out, cudaStream_t stream);
}

// Hidden: shared by the library's files, not exported from it (as when
// they were file-local).
namespace [[gnu::visibility("hidden")]] muirrt_cuda_detail {

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
  // A step's temporaries (mgpuMemAlloc/Free), placed first fit by
  // arenaPlan (muir-rt/ArenaPlan.h): the same sequence at the same offsets at
  // every run. The first step allocates them stream-ordered; between steps (the
  // first graph capture, a synchronize) one arena of the plan's need is
  // reserved, and from then on a temporary whose offset the arena holds
  // lives there: the same pointers every step, so a captured graph holds no
  // memory nodes and a re-capture can update it in place. A later step with
  // a larger peak runs its first time partly outside the arena, and the
  // arena grows to the new need before its capture.
  muirrt_detail::ArenaPlan arenaPlan;
  std::map<void *, size_t> placed; // live temporaries -> their offsets
  char *arena = nullptr;
  size_t arenaBytes = 0;
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
};

/// The runtime's process-global state (one device, one step stream).
extern State state;

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
};

extern Driver driver;

/// Sets the last error (muirrt_cuda_last_error) and returns -1.
int fail(const std::string &why);
/// Prints the message and exits with status 1.
[[noreturn]] void fatal(const std::string &what);
/// fatal() with the call's name and the library's message on an error.
void check(cudaError_t e, const char *call);
void check(CUresult r, const char *call);
void check(cublasStatus_t s, const char *call);
void check(ncclResult_t r, const char *call);
/// Initialises the runtime on first use (muirrt_cuda_init(-1)), or fatal().
void ensureReady(const char *fn);
/// Whether the step stream is being captured as a CUDA graph.
bool capturing();
/// A device scratch of at least `bytes` (see CudaRuntime.cpp).
void *scratch(size_t bytes, const char *fn);
/// `bytes` rounded up to a multiple of 256 (at least 256).
inline size_t aligned(size_t bytes) {
  return (std::max<size_t>(bytes, 1) + 255) / 256 * 256;
}
/// Between steps (no temporary live), reserves an arena of the plan's
/// need if the one reserved so far is smaller (see State).
void planArena();

} // namespace muirrt_cuda_detail

#endif // MUIR_RUNTIME_CUDA_CUDAINTERNAL_H
