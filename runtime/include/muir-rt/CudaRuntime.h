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

/* The host calls, muirrt_cuda_<name>, and MLIR's mgpu* launch ABI on the
 * step stream: declared once, with their documentation, in
 * muir-rt/CudaHost.def. */
#define MUIR_RT_CUDA_HOST(NAME, RET, PARAMS) RET muirrt_cuda_##NAME PARAMS;
#define MUIR_RT_CUDA_MGPU(NAME, RET, PARAMS) RET NAME PARAMS;
#include "muir-rt/CudaHost.def"

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

#ifdef __cplusplus
}
#endif

#endif /* MUIR_RT_CUDARUNTIME_H */
