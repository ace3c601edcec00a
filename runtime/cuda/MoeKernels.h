//===- MoeKernels.h - the CUDA runtime's MoE kernels (internal) -----------===//
//
// Launchers of the device kernels behind the muirrt_cuda_* MoE calls
// (MoeKernels.cu), used by CudaMoe.cpp. Each enqueues on `stream` and
// returns the launch error. Errors that only the device can see (an expert
// index out of range, ragged sizes over the static bound) are recorded in a
// MuirCudaDeviceError in device memory, first error wins, and reported by
// muirrt_cuda_synchronize after the step: no host synchronisation inside
// the step, so the step stays capturable as a CUDA graph.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_RT_CUDA_MOEKERNELS_H
#define MUIR_RT_CUDA_MOEKERNELS_H

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

/// What went wrong on the device. `site` indexes the host's table of
/// calls (function and layer); a, b, c are the code's values.
struct MuirCudaDeviceError {
  int32_t code; // 0: none
  int32_t site;
  int64_t a, b, c;
};

enum MuirCudaDeviceErrorCode : int32_t {
  kMoeBadExpert = 1,  // a token, b slot, c the expert named
  kMoeOverBound = 2,  // a rows routed, b the static bound
  kGroupedBadSize = 3, // a expert, b its rows, c rows before it
  kRouteGradBadExpert = 4, // a token, b slot, c the expert named
};

extern "C" {

/// Bytes of device scratch muirrt_cuda_detail_route needs.
size_t muirrt_cuda_detail_route_scratch(int64_t tokens, int64_t experts,
                                        int64_t k, int64_t n_group);
cudaError_t muirrt_cuda_detail_route(
    int64_t tokens, int64_t experts, int64_t k, const float *logits,
    const float *bias, int32_t scoring, int32_t softmax_after_topk,
    int32_t normalize, int64_t n_group, int64_t topk_group, float scaling,
    int64_t *indices, float *weights, int64_t *counts, void *scratch,
    cudaStream_t stream);

size_t muirrt_cuda_detail_route_grad_scratch(int64_t tokens, int64_t experts,
                                             int64_t k);
cudaError_t muirrt_cuda_detail_route_grad(
    int64_t tokens, int64_t experts, int64_t k, const float *logits,
    int32_t scoring, int32_t softmax_after_topk, int32_t normalize,
    float scaling, const int64_t *indices, const float *dweights,
    float *dlogits, void *scratch, MuirCudaDeviceError *err, int32_t site,
    cudaStream_t stream);

size_t muirrt_cuda_detail_capacity_scratch(int64_t tokens, int64_t k,
                                           int64_t experts);
cudaError_t muirrt_cuda_detail_capacity(
    int64_t tokens, int64_t k, int64_t experts, int64_t capacity,
    int32_t policy, int64_t group, const int64_t *indices,
    const float *weights, int64_t *kept_indices, float *kept_weights,
    int64_t *counts, void *scratch, cudaStream_t stream);

/// C = op(A) op(B), each element's products summed in ascending order,
/// never fused (muirrt_cuda_gemm_rows).
cudaError_t muirrt_cuda_detail_gemm_rows(int32_t trans_a, int32_t trans_b,
                                         int64_t m, int64_t n, int64_t k,
                                         const float *a, const float *b,
                                         float *c, cudaStream_t stream);

size_t muirrt_cuda_detail_mse_scratch(void);
cudaError_t muirrt_cuda_detail_mse_loss(int64_t n, const float *in,
                                        const float *target, float scale,
                                        float *loss, float *grad,
                                        void *scratch, cudaStream_t stream);

/// Scratch of the grouped products: row and tile offsets per expert.
size_t muirrt_cuda_detail_grouped_scratch(int64_t experts);
cudaError_t muirrt_cuda_detail_grouped_gemm(
    int64_t experts, int64_t rows, int64_t k, int64_t n, const float *in,
    const float *w, int32_t trans_w, const int64_t *sizes, float *out,
    void *scratch, MuirCudaDeviceError *err, int32_t site,
    cudaStream_t stream);
cudaError_t muirrt_cuda_detail_grouped_gemm_wgrad(
    int64_t experts, int64_t rows, int64_t k, int64_t n, const float *in,
    const float *grad, int32_t trans_w, const int64_t *sizes, float *dw,
    void *scratch, MuirCudaDeviceError *err, int32_t site,
    cudaStream_t stream);

cudaError_t muirrt_cuda_detail_moe_plan(int64_t tokens, int64_t k,
                                        int64_t experts, int64_t bound,
                                        const int64_t *indices,
                                        int64_t *counts, int64_t *plan,
                                        MuirCudaDeviceError *err,
                                        int32_t site, cudaStream_t stream);

} // extern "C"

#endif // MUIR_RT_CUDA_MOEKERNELS_H
