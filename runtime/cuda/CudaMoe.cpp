//===- CudaMoe.cpp - the CUDA runtime's mixture of experts ----------------===//
//
// The host side of the MoE calls (routing, capacity, the dispatch plan,
// the grouped products, the MSE loss): checks of the shapes on the host,
// then MoeKernels.cu's kernels on the step stream, or cuBLAS's grouped
// GEMM on host-side expert sizes (muirrt_cuda_set_grouped_gemm(1)).
//
//===----------------------------------------------------------------------===//
#include "muir-rt/CudaRuntime.h"
#include "muir-rt/Shapes.h"

#include "CudaInternal.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

using namespace muirrt_cuda_detail;

namespace {

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

} // namespace

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
  if (const char *why =
          muirrt_route_shape_error(tokens, experts, k, n_group, topk_group))
    fatal(std::string(fn) + ": " + why + " (tokens " +
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
  if (tokens == 0 && group_tokens == 0) { // a layer called on no tokens
    check(cudaMemsetAsync(counts, 0,
                          static_cast<size_t>(experts) * sizeof(int64_t),
                          state.stream),
          "cudaMemsetAsync");
    return;
  }
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

extern "C" void muirrt_cuda_gemm_rows(int32_t trans_a, int32_t trans_b,
                                      int64_t m, int64_t n, int64_t k,
                                      const float *a, const float *b,
                                      float *c) {
  const char *fn = "muirrt_cuda_gemm_rows";
  ensureReady(fn);
  check(muirrt_cuda_detail_gemm_rows(trans_a, trans_b, m, n, k, a, b, c,
                                     state.stream),
        "row-stable product kernel");
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
