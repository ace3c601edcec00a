//===- CudaBlas.cpp - the CUDA runtime's products -------------------------===//
//
// The products of compiled modules through cuBLAS on the step stream
// (fp32, bf16 copies with --cuda-bf16, and the double products of the
// Gram form of Newton-Schulz), and the sums of squares, normalisations
// and layouts of Kernels.cu that go with them.
//
//===----------------------------------------------------------------------===//
#include "muir-rt/CudaRuntime.h"

#include "CudaInternal.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

using namespace muirrt_cuda_detail;

namespace {

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

} // namespace

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
