//===- CudaStep.cpp - graphs, events and the mgpu* ABI --------------------===//
//
// The step as a CUDA graph (captured, updated in place, launched), the
// timing events, and MLIR's mgpu* launch ABI through which compiled
// modules load and launch their kernels on the step stream and place
// their temporaries in the step's arena.
//
//===----------------------------------------------------------------------===//
#include "muir-rt/CudaRuntime.h"

#include "CudaInternal.h"

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

using namespace muirrt_cuda_detail;

//===----------------------------------------------------------------------===//
// Graphs and events
//===----------------------------------------------------------------------===//

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
  if (!state.graphExec)
    return fail("no captured graph to launch (none was, or the arena it "
                "pointed into grew since for another step)");
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
  size_t at = state.arenaPlan.place(size);
  void *ptr = nullptr;
  if (at + size <= state.arenaBytes) {
    ptr = state.arena + at;
  } else {
    if (state.arena && capturing())
      fatal("mgpuMemAlloc: the step allocates more inside a graph capture "
            "than the arena reserved for it holds (" +
            std::to_string(state.arenaBytes) + " bytes)");
    check(cudaMallocAsync(&ptr, size, state.stream), "cudaMallocAsync");
  }
  state.placed[ptr] = at;
  return ptr;
}

extern "C" void mgpuMemFree(void *ptr, void *) {
  char *p = static_cast<char *>(ptr);
  if (auto it = state.placed.find(ptr); it != state.placed.end()) {
    state.arenaPlan.release(it->second);
    state.placed.erase(it);
  }
  if (state.arena && p >= state.arena && p < state.arena + state.arenaBytes)
    return;
  check(cudaFreeAsync(ptr, state.stream), "cudaFreeAsync");
}

extern "C" void mgpuMemcpy(void *dst, void *src, size_t bytes, void *) {
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, state.stream),
        "cudaMemcpyAsync");
}
