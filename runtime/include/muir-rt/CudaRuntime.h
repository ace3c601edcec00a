/*===- CudaRuntime.h - muir's CUDA runtime C API ------------------*- C -*-===*
 *
 * The CUDA backend's runtime (libmuir_rt_cuda.so, built when the CUDA
 * toolkit is found): what a module compiled with `muir-compile
 * --target=cuda` calls, and what a host program (muir-run) uses to run it.
 *
 * Execution model. One device per process, its primary context, and one
 * stream, "the step stream": every kernel launch (the mgpu* functions that
 * MLIR's gpu-to-llvm lowering calls), every cuBLAS product, every NCCL
 * collective and every device allocation of a step (stream-ordered,
 * cuMemAllocAsync) is enqueued on it, in program order. So a step needs no
 * host synchronisation inside it: mgpuStreamCreate hands out the step
 * stream, mgpuStreamSynchronize is a no-op, and the host waits once, in
 * muirrt_cuda_synchronize, after the step. That also makes a whole step
 * capturable as one CUDA graph (muirrt_cuda_graph_begin / _end) and
 * replayable (muirrt_cuda_graph_launch). The one exception, the fused Gram
 * exchange (packed_all_reduce_start / _wait), runs on a second stream
 * forked from and joined to the step stream with events, which a capture
 * records as well.
 *
 * The muirrt_cuda_* kernels take the same arguments as the CPU runtime's
 * muirrt_* (muir-rt/Runtime.h), with device pointers.
 *
 * Errors: the init and host functions return 0 on success and set
 * muirrt_cuda_last_error(); a failing CUDA, cuBLAS or NCCL call inside a
 * step prints "muir cuda runtime: <call>: <why>" and ends the process
 * with exit status 1 (there is nobody to return an error to inside
 * compiled code).
 *
 * Determinism. Every reduction the runtime owns runs in a fixed order: the
 * norms are two-pass sums in double over a partition fixed by the size,
 * and in the deterministic mode (the default) an all-reduce gathers every
 * rank's piece (ncclAllGather) and sums the pieces in rank order on the
 * device. cuBLAS returns the same bits run to run on one GPU model with the
 * same SM count and one stream (its documented guarantee), which is how
 * the runtime uses it; results differ between GPU models. NCCL's own
 * all-reduce (muirrt_cuda_set_deterministic(0)) sums in the order of its
 * ring or tree, which depends on the topology and on NCCL's algorithm
 * choice; it is not rank order.
 *
 *===----------------------------------------------------------------------===*/
#ifndef MUIR_RT_CUDARUNTIME_H
#define MUIR_RT_CUDARUNTIME_H

#include "muir-rt/Collectives.h"
#include "muir-rt/GroupMask.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*===----------------------------- host side ------------------------------===*/

/* Why the last host-side call failed ("" if none). */
const char *muirrt_cuda_last_error(void);

/* Loads the driver, picks `device` (-1: LOCAL_RANK, else 0), makes its
 * primary context current and creates the step stream and the cuBLAS
 * handle. Returns 0, or -1 with muirrt_cuda_last_error() saying why (no
 * driver, no device, ...). Idempotent. */
int muirrt_cuda_init(int device);

/* "<name>, sm_<major><minor>, <N> SMs, <M> MiB" of the current device. */
const char *muirrt_cuda_device_name(void);

/* Newton-Schulz products: 0 fp32 (CUBLAS_COMPUTE_32F), 1 bf16 inputs with
 * fp32 accumulation and output: products of at least 4096 in every
 * dimension on bf16 copies of the operands (rounded to nearest even; bf16
 * tensor-core kernels), smaller ones under CUBLAS_COMPUTE_32F_FAST_16BF
 * (FAST_16BF ran at half the bf16 GEMM rate on large products on an H200;
 * on small ones the copies cost more than they gain). */
void muirrt_cuda_set_precision(int32_t bf16);

/* 1 (default): all-reduces gather and sum in rank order; 0: ncclAllReduce. */
void muirrt_cuda_set_deterministic(int32_t on);

/* Device memory (synchronous, outside steps). */
int muirrt_cuda_alloc(void **ptr, size_t bytes);
int muirrt_cuda_free(void *ptr);
int muirrt_cuda_copy_to_device(void *dst, const void *src, size_t bytes);
int muirrt_cuda_copy_to_host(void *dst, const void *src, size_t bytes);

/* Waits for everything enqueued on the step stream. */
int muirrt_cuda_synchronize(void);

/* CUDA graphs: begin capturing the step stream (global capture mode),
 * end the capture and instantiate it, launch the instantiated graph. */
int muirrt_cuda_graph_begin(void);
int muirrt_cuda_graph_end(void);
int muirrt_cuda_graph_launch(void);

/* Milliseconds between two points of the step stream: event_record(i)
 * records event i (0..7), elapsed(i, j) waits for j and returns the time. */
int muirrt_cuda_event_record(int32_t i);
double muirrt_cuda_elapsed_ms(int32_t i, int32_t j);

/* NCCL over the ranks of the grid. The unique id is broadcast over MPI
 * when the process runs under MPI with several ranks; else, when RANK and
 * WORLD_SIZE are set (torchrun's variables), rank 0 serves it over TCP on
 * MASTER_ADDR, port MUIR_NCCL_PORT or MASTER_PORT + 1 (torchrun's store
 * holds MASTER_PORT); else one rank. Axis sizes as muirrt_dist_init's
 * (row-major, last axis fastest); their product must be the world size. */
int muirrt_cuda_dist_init(const int64_t *sizes, int32_t num_axes);

/* The torchrun bootstrap's exchange alone: rank 0 makes the NCCL unique id
 * (128 bytes at `id`) and serves it to the other world - 1 ranks, which
 * receive it (retrying for MUIR_NCCL_TIMEOUT seconds, default 120). */
int muirrt_cuda_exchange_unique_id(int64_t rank, int64_t world, void *id);
void muirrt_cuda_dist_finalize(void);

/* NCCL from a unique id the caller distributes (e.g. a PyTorch job through
 * its own process group): rank 0 makes the 128 bytes with
 * muirrt_cuda_unique_id, every rank passes them with its rank and the
 * world size. */
int muirrt_cuda_unique_id(void *id);
int muirrt_cuda_dist_init_with_id(const int64_t *sizes, int32_t num_axes,
                                  int64_t rank, int64_t size, const void *id);
/* Later steps run on `stream` (a cudaStream_t; NULL: the runtime's own). */
void muirrt_cuda_set_stream(void *stream);

/* The last data observed in `slot` (host memory, valid after
 * muirrt_cuda_synchronize), or NULL; *numel receives its length. */
const float *muirrt_cuda_observation(int64_t slot, int64_t *numel);

/* Bytes this rank sent in collectives since the last reset, as the CPU
 * runtime counts them (its piece to every peer). */
int64_t muirrt_cuda_bytes_sent(void);

/* The grouped products of MoE layers (grouped_gemm and its weight
 * gradient): 0 (the default) the runtime's kernel, which reads the expert
 * sizes on the device, so a step with MoE layers is captured as one CUDA
 * graph; 1 cuBLAS's grouped GEMM (cublasGemmGroupedBatchedEx, fp32, one
 * group a non-empty expert), which takes the sizes on the host: each call
 * copies them back and waits for the step stream, so such a step runs op
 * by op (a capture is an error). Both give the same bits run to run. */
void muirrt_cuda_set_grouped_gemm(int32_t cublas);

/*===------------------- called by compiled modules ----------------------===*/

/* The kernels and collectives compiled steps call, muirrt_cuda_<name> on
 * device buffers: declared once, with their documentation, in
 * muir-rt/Entries.def (as the CPU runtime's muirrt_<name>). */
#define MUIR_RT_CUDA_Cpu(DECLARATION)
#define MUIR_RT_CUDA_Both(DECLARATION) DECLARATION
#define MUIR_RT_CUDA_Cuda(DECLARATION) DECLARATION
#define MUIR_RT_ENTRY(NAME, TARGETS, RET, PARAMS)                              \
  MUIR_RT_CUDA_##TARGETS(RET muirrt_cuda_##NAME PARAMS;)
#include "muir-rt/Entries.def"
#undef MUIR_RT_CUDA_Cpu
#undef MUIR_RT_CUDA_Both
#undef MUIR_RT_CUDA_Cuda

/* MLIR's GPU runtime ABI (gpu-to-llvm and gpu.binary's translation), on
 * the step stream. */
void *mgpuModuleLoad(void *data, size_t size);
void *mgpuModuleLoadJIT(void *data, int opt_level);
void mgpuModuleUnload(void *module);
void *mgpuModuleGetFunction(void *module, const char *name);
void mgpuLaunchKernel(void *function, intptr_t grid_x, intptr_t grid_y,
                      intptr_t grid_z, intptr_t block_x, intptr_t block_y,
                      intptr_t block_z, int32_t smem, void *stream,
                      void **params, void **extra, size_t param_count);
void *mgpuStreamCreate(void);
void mgpuStreamDestroy(void *stream);
void mgpuStreamSynchronize(void *stream);
void *mgpuMemAlloc(uint64_t bytes, void *stream, int8_t host_shared);
void mgpuMemFree(void *ptr, void *stream);
void mgpuMemcpy(void *dst, void *src, size_t bytes, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* MUIR_RT_CUDARUNTIME_H */
