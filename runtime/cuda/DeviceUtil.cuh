//===- DeviceUtil.cuh - helpers shared by the CUDA runtime's kernels ------===//
#ifndef MUIR_RT_CUDA_DEVICEUTIL_CUH
#define MUIR_RT_CUDA_DEVICEUTIL_CUH

#include <cstdint>

namespace muir_cuda {

constexpr int kThreads = 256;

// Block-wide sum of one double per thread (blocks of kThreads), in a fixed
// tree.
static __device__ __forceinline__ double blockSum(double v) {
  __shared__ double shared[kThreads];
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (static_cast<int>(threadIdx.x) < s)
      shared[threadIdx.x] += shared[threadIdx.x + s];
    __syncthreads();
  }
  return shared[0];
}

// Blocks of kThreads for n threads' work, at most 65535 * 16 (the kernels
// loop over the rest).
static inline unsigned gridFor(int64_t n) {
  int64_t blocks = (n + kThreads - 1) / kThreads;
  if (blocks < 1)
    blocks = 1;
  return static_cast<unsigned>(blocks < 65535 * 16 ? blocks : 65535 * 16);
}

} // namespace muir_cuda

#endif // MUIR_RT_CUDA_DEVICEUTIL_CUH
