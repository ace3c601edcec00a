//===- CudaBlas.cpp - the CUDA runtime's products -------------------------===//
//
// The products of compiled modules through cuBLAS on the step stream
// (fp32, with --cuda-bf16 on bf16 copies; bf16 buffers of a bf16
// Newton-Schulz iterate; the double products of the Gram form), the
// symmetric ones as upper-triangle blocks mirrored (TrianglePlan.h), and
// the sums of squares, normalisations and layouts of Kernels.cu that go
// with them.
//
//===----------------------------------------------------------------------===//
#include "muir-rt/CudaRuntime.h"

#include "CudaInternal.h"
#include "TrianglePlan.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

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

namespace {

size_t elementBytes(cudaDataType_t t) {
  return t == CUDA_R_16BF ? 2 : t == CUDA_R_64F ? 8 : 4;
}

const char *at(const void *p, int64_t elements, cudaDataType_t t) {
  return static_cast<const char *>(p) + elements * elementBytes(t);
}

/// The element types of a product: its operands', its result's and the
/// accumulation's.
struct Types {
  cudaDataType_t in, out;
  cublasComputeType_t compute;
};

/// One strided-batched cuBLAS product of row-major matrices: C (leading
/// dimension ldc, batch stride sc) = alpha op(A) op(B) + beta C, op(A) m x
/// k, op(B) k x n. Row-major C = op(A) op(B) is column-major C^T = op(B)^T
/// op(A)^T: B is cuBLAS's first operand.
void rowMajorGemm(int64_t batch, bool ta, bool tb, int64_t m, int64_t n,
                  int64_t k, const float *alpha, const void *a, int64_t lda,
                  int64_t sa, const void *b, int64_t ldb, int64_t sb,
                  const float *beta, void *c, int64_t ldc, int64_t sc,
                  Types t) {
  check(cublasGemmStridedBatchedEx(
            state.blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
            ta ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(n),
            static_cast<int>(m), static_cast<int>(k), alpha, b, t.in,
            static_cast<int>(ldb), sb, a, t.in, static_cast<int>(lda), sa, beta,
            c, t.out, static_cast<int>(ldc), sc, static_cast<int>(batch),
            t.compute, CUBLAS_GEMM_DEFAULT),
        "cublasGemmStridedBatchedEx");
}

/// C = beta Acc without a product (k = 0; cuBLAS rejects leading
/// dimensions of 0), or, with `copyOnly`, Acc copied into C when beta
/// reads it from elsewhere.
void accumulatorInto(void *c, const void *acc, float beta, int64_t count,
                     cudaDataType_t type, bool copyOnly) {
  size_t bytes = elementBytes(type) * size_t(count);
  if (!copyOnly && beta == 0.0f) {
    check(cudaMemsetAsync(c, 0, bytes, state.stream), "cudaMemsetAsync");
    return;
  }
  if (beta != 0.0f && acc && acc != c)
    check(
        cudaMemcpyAsync(c, acc, bytes, cudaMemcpyDeviceToDevice, state.stream),
        "cudaMemcpyAsync");
  if (!copyOnly)
    check(cublasScalEx(state.blas, static_cast<int>(count), &beta, CUDA_R_32F,
                       c, type, 1, CUDA_R_32F),
          "cublasScalEx");
}

/// C = alpha op(A) op(B) + beta Acc, all row-major and contiguous.
void gemm(int64_t batch, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
          float alpha, const void *a, const void *b, float beta, void *c,
          const void *acc, Types t) {
  if (batch <= 0 || m <= 0 || n <= 0)
    return;
  accumulatorInto(c, acc, beta, batch * m * n, t.out, /*copyOnly=*/k > 0);
  if (k <= 0)
    return;
  rowMajorGemm(batch, ta, tb, m, n, k, &alpha, a, ta ? m : k, m * k, b,
               tb ? k : n, k * n, &beta, c, n, m * n, t);
}

/// C = alpha A A^T + beta Acc (A n x k; with trans, A^T A of a k x n A):
/// the upper triangle's blocks of rows (TrianglePlan.h), each one GEMM of
/// its rows against the columns from its diagonal on, then the lower
/// triangle mirrored from the upper. Below kTriangleFrom, one GEMM.
void symmetricProduct(int64_t batch, bool trans, int64_t n, int64_t k,
                      float alpha, const void *a, float beta, void *c,
                      const void *acc, Types t) {
  std::vector<TriangleBlock> blocks = trianglePlan(n);
  if (blocks.size() == 1 || k <= 0 || batch <= 0) {
    gemm(batch, trans, !trans, n, n, k, alpha, a, a, beta, c, acc, t);
    return;
  }
  accumulatorInto(c, acc, beta, batch * n * n, t.out, /*copyOnly=*/true);
  int64_t lda = trans ? n : k;
  for (TriangleBlock blk : blocks) {
    // Rows blk.row.. of op(A), and op(A)'s rows from blk.row on as op(B)'s
    // columns: the same elements of A (columns with trans).
    const char *ai = at(a, trans ? blk.row : blk.row * k, t.in);
    void *ci = const_cast<char *>(at(c, blk.row * n + blk.row, t.out));
    rowMajorGemm(batch, trans, !trans, blk.rows, n - blk.row, k, &alpha, ai,
                 lda, n * k, ai, lda, n * k, &beta, ci, n, n * n, t);
  }
  check(muirrt_cuda_detail_mirror_upper(
            c, batch, n, int32_t(elementBytes(t.out)), state.stream),
        "the triangle mirror kernel");
}

} // namespace

extern "C" void muirrt_cuda_sgemm(int64_t batch, int32_t trans_a,
                                  int32_t trans_b, int64_t m, int64_t n,
                                  int64_t k, float alpha, const float *a,
                                  const float *b, float beta, float *c,
                                  const float *acc) {
  ensureReady("muirrt_cuda_sgemm");
  if (batch <= 0 || m <= 0 || n <= 0)
    return;
  ProductInputs in = k > 0
                         ? productInputs(a, batch * m * k, b, batch * k * n, m,
                                         n, k, "muirrt_cuda_sgemm")
                         : ProductInputs{a, b, CUDA_R_32F, CUBLAS_COMPUTE_32F};
  gemm(batch, trans_a, trans_b, m, n, k, alpha, in.a, in.b, beta, c, acc,
       {in.type, CUDA_R_32F, in.compute});
}

// The symmetric product as the upper triangle's blocks of rows: on Hopper
// cuBLAS's GEMM runs well above its SYRK, and the blocks do about 0.55 of
// the full GEMM's flops on large matrices.
extern "C" void muirrt_cuda_ssyrk(int64_t batch, int32_t trans, int64_t n,
                                  int64_t k, float alpha, const float *a,
                                  float beta, float *c, const float *acc) {
  ensureReady("muirrt_cuda_ssyrk");
  if (batch <= 0 || n <= 0)
    return;
  int64_t count = batch * n * k;
  ProductInputs in =
      k > 0 ? productInputs(a, count, a, count, n, n, k, "muirrt_cuda_ssyrk")
            : ProductInputs{a, a, CUDA_R_32F, CUBLAS_COMPUTE_32F};
  symmetricProduct(batch, trans, n, k, alpha, in.a, beta, c, acc,
                   {in.type, CUDA_R_32F, in.compute});
}

// A bf16 Newton-Schulz iterate: bf16 operands and result, fp32
// accumulation, on the bf16 tensor cores with no copies.
extern "C" void muirrt_cuda_bgemm(int64_t batch, int32_t trans_a,
                                  int32_t trans_b, int64_t m, int64_t n,
                                  int64_t k, float alpha, const uint16_t *a,
                                  const uint16_t *b, float beta, uint16_t *c,
                                  const uint16_t *acc) {
  ensureReady("muirrt_cuda_bgemm");
  gemm(batch, trans_a, trans_b, m, n, k, alpha, a, b, beta, c, acc,
       {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F});
}

extern "C" void muirrt_cuda_bsyrk(int64_t batch, int32_t trans, int64_t n,
                                  int64_t k, float alpha, const uint16_t *a,
                                  float beta, uint16_t *c,
                                  const uint16_t *acc) {
  ensureReady("muirrt_cuda_bsyrk");
  if (batch <= 0 || n <= 0)
    return;
  symmetricProduct(batch, trans, n, k, alpha, a, beta, c, acc,
                   {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F});
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
