//===- Kernels.cpp - muir runtime compute kernels -------------------------===//
//
// The kernels that compiled exec modules call: batched SGEMM and SSYRK on
// top of OpenBLAS, Frobenius normalisation, blocked transpose, observation
// slots and the process-global work counters. See muir-rt/Runtime.h for
// the contract.
//
//===----------------------------------------------------------------------===//

#include "muir-rt/Runtime.h"

#include "Parallel.h"

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <limits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

// LAPACK from OpenBLAS (Debian's libopenblas carries it; there is no
// LAPACKE header): the symmetric eigenvalues of a column-major matrix. The
// trailing lengths of the character arguments are gfortran's convention.
extern "C" void dsyevd_(const char *jobz, const char *uplo, const int *n,
                        double *a, const int *lda, double *w, double *work,
                        const int *lwork, int *iwork, const int *liwork,
                        int *info, size_t jobzLen, size_t uploLen);

namespace muirrt_detail {
void setLastError(std::string message);
} // namespace muirrt_detail

namespace {

//===----------------------------------------------------------------------===//
// Counters
//===----------------------------------------------------------------------===//

// One mutex for all counters: a kernel call is far more expensive than the
// lock, and it keeps the snapshot in muirrt_counters_get consistent (C++17
// has no atomic add for double).
std::mutex countersMutex;
MuirRtCounters counters = {0, 0, 0, 0.0};

void countGemm(double flops) {
  std::lock_guard<std::mutex> lock(countersMutex);
  ++counters.gemm_calls;
  counters.flops += flops;
}

void countSyrk(double flops) {
  std::lock_guard<std::mutex> lock(countersMutex);
  ++counters.syrk_calls;
  counters.flops += flops;
}

void countOther() {
  std::lock_guard<std::mutex> lock(countersMutex);
  ++counters.other_calls;
}

} // namespace

// The counters for the kernels of other files (Bf16.cpp).
namespace muirrt_detail {
void countGemm(double flops) { ::countGemm(flops); }
void countSyrk(double flops) { ::countSyrk(flops); }
} // namespace muirrt_detail

namespace {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

// OpenBLAS (LP64 build) takes 32-bit dimensions. The kernels return void, so
// there is no way to report an oversized operand; failing loudly beats
// silently truncating a dimension.
blasint toBlas(int64_t v, const char *kernel) {
  if (v < 0 || v > static_cast<int64_t>(INT_MAX)) {
    std::string why = "dimension " + std::to_string(v) + " out of BLAS range";
    muirrt_abort_run(kernel, why.c_str());
  }
  return static_cast<blasint>(v);
}

// C = beta * acc (acc may be c): what a BLAS call then adds its product to
// with beta 1. beta == 0 clears C, so that garbage (NaN/Inf) in an
// uninitialised output can never leak through a 0 * NaN product.
template <typename T>
void scaleInto(T *c, const T *acc, int64_t count, T beta) {
  if (beta == T(0)) {
    std::memset(c, 0, static_cast<size_t>(count) * sizeof(T));
    return;
  }
  if (acc == c && beta == T(1))
    return;
  for (int64_t i = 0; i < count; ++i)
    c[i] = beta * acc[i];
}

constexpr int64_t kTile = 32;

// Copies the upper triangle of the n x n row-major matrix c onto its lower
// triangle. Tiled so that the strided (column) side of the copy stays in
// cache.
template <typename T> void mirrorUpperToLower(T *c, int64_t n) {
  for (int64_t ib = 0; ib < n; ib += kTile) {
    int64_t iEnd = std::min(ib + kTile, n);
    // Lower-triangle rows [ib, iEnd) read columns [ib...] of earlier rows.
    for (int64_t jb = 0; jb <= ib; jb += kTile) {
      int64_t jEnd = std::min(jb + kTile, n);
      for (int64_t i = ib; i < iEnd; ++i) {
        int64_t jStop = std::min(jEnd, i);
        for (int64_t j = jb; j < jStop; ++j)
          c[i * n + j] = c[j * n + i];
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// Observation slots
//===----------------------------------------------------------------------===//

struct Slot {
  bool set = false;
  std::vector<float> data;
};

std::mutex slotsMutex;
std::vector<Slot> slots;

// Non-null pointer for a slot observed with zero elements, so callers can
// tell "observed, empty" from "never observed".
const float emptyObservation = 0.0f;

} // namespace

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

namespace {

// Items of a batch smaller than this many flops run in parallel, each on
// one BLAS thread: OpenBLAS's own threads cannot split a small product
// well (MindSpore's 24x10240 matrices), but a batch of them splits by item.
// Bits: OpenBLAS's result depends on its thread count (Debian's 0.3.21 on
// this project's 2-core machine: sgemm of 512 x 512 x 256 differs in 5% of
// the elements between 1 and 2 threads, 1024 x 8 x 256 in 0.4%), so a
// step's bits hold for one thread count: the same machine and the same
// ranks per node (muir-run --ranks gives each rank cores / ranks threads).
// The split by items does not change an item's bits only when OpenBLAS
// runs one thread anyway.
constexpr double kParallelItemFlops = 2.0e8;

template <typename Fn>
void forEachSmallItem(int64_t batch, double itemFlops, Fn &&item) {
  if (batch < 2 || itemFlops >= kParallelItemFlops) {
    for (int64_t i = 0; i < batch; ++i)
      item(i);
    return;
  }
  muirrt_detail::forEachItem(batch, item, /*oneBlasThread=*/true);
}


} // namespace

extern "C" int32_t muirrt_blas_threads(void) {
  return openblas_get_num_threads();
}

extern "C" void muirrt_set_blas_threads(int32_t threads) {
  openblas_set_num_threads(threads < 1 ? 1 : threads);
}

namespace {

// The BLAS products by element type.
void blasGemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, blasint m, blasint n,
              blasint k, float alpha, const float *a, blasint lda,
              const float *b, blasint ldb, float *c, blasint ldc) {
  cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, 1.0f, c,
              ldc);
}
void blasGemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, blasint m, blasint n,
              blasint k, double alpha, const double *a, blasint lda,
              const double *b, blasint ldb, double *c, blasint ldc) {
  cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, 1.0, c,
              ldc);
}
void blasSyrk(CBLAS_TRANSPOSE t, blasint n, blasint k, float alpha,
              const float *a, blasint lda, float *c, blasint ldc) {
  cblas_ssyrk(CblasRowMajor, CblasUpper, t, n, k, alpha, a, lda, 1.0f, c,
              ldc);
}
void blasSyrk(CBLAS_TRANSPOSE t, blasint n, blasint k, double alpha,
              const double *a, blasint lda, double *c, blasint ldc) {
  cblas_dsyrk(CblasRowMajor, CblasUpper, t, n, k, alpha, a, lda, 1.0, c,
              ldc);
}

template <typename T>
void gemm(const char *name, int64_t batch, int32_t trans_a, int32_t trans_b,
          int64_t m, int64_t n, int64_t k, T alpha, const T *a, const T *b,
          T beta, T *c, const T *acc) {
  if (batch <= 0 || m <= 0 || n <= 0 || k < 0)
    return;
  countGemm(2.0 * static_cast<double>(batch) * static_cast<double>(m) *
            static_cast<double>(n) * static_cast<double>(k));
  if (!acc)
    acc = c;

  int64_t cSize = m * n;
  if (k == 0) {
    // OpenBLAS rejects lda == 0; the product is empty, so C = beta * Acc.
    scaleInto(c, acc, batch * cSize, beta);
    return;
  }

  blasint bm = toBlas(m, name), bn = toBlas(n, name), bk = toBlas(k, name);
  // Leading dimensions are the row lengths of the stored (not op()) shapes.
  blasint lda = trans_a ? bm : bk;
  blasint ldb = trans_b ? bk : bn;
  CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans;
  CBLAS_TRANSPOSE tb = trans_b ? CblasTrans : CblasNoTrans;
  int64_t aSize = m * k, bSize = k * n;
  double itemFlops = 2.0 * static_cast<double>(m) * static_cast<double>(n) *
                     static_cast<double>(k);
  forEachSmallItem(batch, itemFlops, [&](int64_t i) {
    T *ci = c + i * cSize;
    // beta * Acc into C in one pass (no copy, and no BLAS scaling pass),
    // then BLAS adds the product with beta 1.
    scaleInto(ci, acc + i * cSize, cSize, beta);
    blasGemm(ta, tb, bm, bn, bk, alpha, a + i * aSize, lda, b + i * bSize,
             ldb, ci, bn);
  });
}

template <typename T>
void syrk(const char *name, int64_t batch, int32_t trans, int64_t n,
          int64_t k, T alpha, const T *a, T beta, T *c, const T *acc) {
  if (batch <= 0 || n <= 0 || k < 0)
    return;
  countSyrk(static_cast<double>(batch) * static_cast<double>(n) *
            static_cast<double>(n + 1) * static_cast<double>(k));
  if (!acc)
    acc = c;

  int64_t cSize = n * n;
  if (k == 0) {
    scaleInto(c, acc, batch * cSize, beta);
    return;
  }

  blasint bn = toBlas(n, name), bk = toBlas(k, name);
  int64_t aSize = n * k;
  double itemFlops = static_cast<double>(n) * static_cast<double>(n + 1) *
                     static_cast<double>(k);
  forEachSmallItem(batch, itemFlops, [&](int64_t i) {
    T *ci = c + i * cSize;
    // SYRK only reads and writes the upper triangle; the lower one is
    // treated as equal to it (C symmetric) and rebuilt by the mirror.
    // (Row blocks of the triangle as GEMMs measured slower here than
    // OpenBLAS's ssyrk.)
    scaleInto(ci, acc + i * cSize, cSize, beta);
    blasSyrk(trans ? CblasTrans : CblasNoTrans, bn, bk, alpha, a + i * aSize,
             trans ? bn : bk, ci, bn);
    mirrorUpperToLower(ci, n);
  });
}

} // namespace

extern "C" void muirrt_sgemm(int64_t batch, int32_t trans_a, int32_t trans_b,
                             int64_t m, int64_t n, int64_t k, float alpha,
                             const float *a, const float *b, float beta,
                             float *c, const float *acc) {
  gemm("muirrt_sgemm", batch, trans_a, trans_b, m, n, k, alpha, a, b, beta, c,
       acc);
}

extern "C" void muirrt_dgemm(int64_t batch, int32_t trans_a, int32_t trans_b,
                             int64_t m, int64_t n, int64_t k, double alpha,
                             const double *a, const double *b, double beta,
                             double *c, const double *acc) {
  gemm("muirrt_dgemm", batch, trans_a, trans_b, m, n, k, alpha, a, b, beta, c,
       acc);
}

// A product known to be symmetric: the upper triangle in blocks of rows,
// each a GEMM of its rows against the columns from its diagonal on (about
// 0.6 of the flops with 4 blocks; smaller blocks measured slower), then
// mirrored.
extern "C" void muirrt_dgemm_sym(int64_t batch, int32_t trans_a,
                                 int32_t trans_b, int64_t m, int64_t n,
                                 int64_t k, double alpha, const double *a,
                                 const double *b, double beta, double *c,
                                 const double *acc) {
  const char *name = "muirrt_dgemm_sym";
  if (m != n || trans_a || trans_b || m < 128) {
    gemm(name, batch, trans_a, trans_b, m, n, k, alpha, a, b, beta, c, acc);
    return;
  }
  if (batch <= 0 || k < 0)
    return;
  if (!acc)
    acc = c;
  int64_t block = muirrt_symmetric_gemm_block(n);
  double flops = muirrt_symmetric_gemm_flops(n, k);
  countGemm(double(batch) * flops);
  blasint bn = toBlas(n, name), bk = toBlas(k, name);
  int64_t size = n * n, aSize = n * k, bSize = k * n;
  forEachSmallItem(batch, flops, [&](int64_t i) {
    double *ci = c + i * size;
    scaleInto(ci, acc + i * size, size, beta);
    for (int64_t r0 = 0; r0 < n; r0 += block) {
      int64_t rows = std::min(block, n - r0);
      blasGemm(CblasNoTrans, CblasNoTrans, toBlas(rows, name),
               toBlas(n - r0, name), bk, alpha, a + i * aSize + r0 * k, bk,
               b + i * bSize + r0, bn, ci + r0 * n + r0, bn);
    }
    mirrorUpperToLower(ci, n);
  });
}

extern "C" void muirrt_ssyrk(int64_t batch, int32_t trans, int64_t n,
                             int64_t k, float alpha, const float *a,
                             float beta, float *c, const float *acc) {
  syrk("muirrt_ssyrk", batch, trans, n, k, alpha, a, beta, c, acc);
}

extern "C" void muirrt_dsyrk(int64_t batch, int32_t trans, int64_t n,
                             int64_t k, double alpha, const double *a,
                             double beta, double *c, const double *acc) {
  syrk("muirrt_dsyrk", batch, trans, n, k, alpha, a, beta, c, acc);
}

// f32 A, the products accumulated in double: A converted to double a
// block of columns (rows with trans) at a time, each block one dsyrk
// adding into C, so the double copy never exceeds one block (it stays in
// cache) and X is read once.
extern "C" void muirrt_ssyrk_f64(int64_t batch, int32_t trans, int64_t n,
                                 int64_t k, double alpha, const float *a,
                                 double beta, double *c, const double *acc) {
  const char *name = "muirrt_ssyrk_f64";
  if (batch <= 0 || n <= 0 || k < 0)
    return;
  countSyrk(static_cast<double>(batch) * static_cast<double>(n) *
            static_cast<double>(n + 1) * static_cast<double>(k));
  if (!acc)
    acc = c;
  int64_t cSize = n * n, aSize = n * k;
  blasint bn = toBlas(n, name);
  // Blocks of about 4 MiB of doubles, at least 256 of the k: each block's
  // dsyrk reads and writes all of C, so few, long blocks (measured).
  int64_t block = std::max<int64_t>(256, (int64_t(1) << 19) / n);
  double itemFlops = static_cast<double>(n) * static_cast<double>(n + 1) *
                     static_cast<double>(k);
  forEachSmallItem(batch, itemFlops, [&](int64_t i) {
    double *ci = c + i * cSize;
    const float *ai = a + i * aSize;
    scaleInto(ci, acc + i * cSize, cSize, beta);
    std::vector<double> buf(static_cast<size_t>(n * std::min(block, k)));
    for (int64_t k0 = 0; k0 < k; k0 += block) {
      int64_t kb = std::min(block, k - k0);
      // The block as its own contiguous matrix: n x kb (kb x n with
      // trans), row-major.
      for (int64_t r = 0; r < (trans ? kb : n); ++r)
        for (int64_t j = 0; j < (trans ? n : kb); ++j)
          buf[static_cast<size_t>(r * (trans ? n : kb) + j)] =
              trans ? ai[(k0 + r) * n + j] : ai[r * k + k0 + j];
      blasSyrk(trans ? CblasTrans : CblasNoTrans, bn, toBlas(kb, name),
               alpha, buf.data(), trans ? bn : toBlas(kb, name), ci, bn);
    }
    mirrorUpperToLower(ci, n);
  });
}

extern "C" void muirrt_trace_normalize(int64_t batch, int64_t n, double eps,
                                       const double *in, double *out,
                                       double *scale) {
  if (batch < 0 || n < 0 || (batch * n > 0 && (!in || !out || !scale)))
    muirrt_abort_run("muirrt_trace_normalize",
                     "negative sizes or a null buffer");
  for (int64_t b = 0; b < batch; ++b) {
    const double *a = in + b * n * n;
    double trace = 0;
    for (int64_t i = 0; i < n; ++i)
      trace += a[i * n + i];
    // A rounding below zero (an all-zero X) counts as zero.
    double s = 1.0 / (std::sqrt(std::max(trace, 0.0)) + eps);
    scale[b] = s;
    double s2 = s * s;
    double *o = out + b * n * n;
    for (int64_t i = 0; i < n * n; ++i)
      o[i] = s2 * a[i];
  }
}

namespace {
template <typename T>
void scaleMatrices(const char *name, int64_t batch, int64_t count,
                   const double *in, const double *scale, T *out) {
  if (batch < 0 || count < 0 || (batch * count > 0 && (!in || !scale || !out)))
    muirrt_abort_run(name, "negative sizes or a null buffer");
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < count; ++i)
      out[b * count + i] = static_cast<T>(scale[b] * in[b * count + i]);
}
} // namespace

extern "C" void muirrt_scale_matrices_f32(int64_t batch, int64_t count,
                                          const double *in,
                                          const double *scale, float *out) {
  scaleMatrices("muirrt_scale_matrices_f32", batch, count, in, scale, out);
}

extern "C" void muirrt_scale_matrices_f64(int64_t batch, int64_t count,
                                          const double *in,
                                          const double *scale, double *out) {
  scaleMatrices("muirrt_scale_matrices_f64", batch, count, in, scale, out);
}

extern "C" void muirrt_ssyrk_rows(int64_t batch, int32_t trans, int64_t n,
                                  int64_t k, float alpha, const float *a,
                                  float *c, int64_t row_begin,
                                  int64_t row_end) {
  const char *name = "muirrt_ssyrk_rows";
  if (row_begin < 0 || row_begin > row_end || row_end > n) {
    std::string why = "rows [" + std::to_string(row_begin) + ", " +
                      std::to_string(row_end) + ") not within [0, " +
                      std::to_string(n) + "]";
    muirrt_abort_run(name, why.c_str());
  }
  if (batch <= 0 || n <= 0 || k < 0 || row_begin == row_end)
    return;
  int64_t rows = row_end - row_begin, right = n - row_end;
  // The chunk's entries: its diagonal block's triangle and the block to
  // its right, 2k flops each.
  double itemFlops =
      static_cast<double>(k) *
      (static_cast<double>(rows) * static_cast<double>(rows + 1) +
       2.0 * static_cast<double>(rows) * static_cast<double>(right));
  countSyrk(static_cast<double>(batch) * itemFlops);
  int64_t cSize = n * n, aSize = n * k;
  forEachSmallItem(batch, itemFlops, [&](int64_t i) {
    float *ci = c + i * cSize;
    // Cleared first, as in muirrt_ssyrk: nothing in C leaks through.
    for (int64_t r = row_begin; r < row_end; ++r)
      std::memset(ci + r * n + r, 0,
                  static_cast<size_t>(n - r) * sizeof(float));
    if (k == 0)
      return;
    blasint bk = toBlas(k, name), bn = toBlas(n, name);
    blasint bRows = toBlas(rows, name), bRight = toBlas(right, name);
    const float *ai = a + i * aSize;
    // Row r of op(A): A's row r (lda k), or with trans A's column r (lda n).
    auto opRow = [&](int64_t r) { return trans ? ai + r : ai + r * k; };
    blasint lda = trans ? bn : bk;
    cblas_ssyrk(CblasRowMajor, CblasUpper, trans ? CblasTrans : CblasNoTrans,
                bRows, bk, alpha, opRow(row_begin), lda, 0.0f,
                ci + row_begin * n + row_begin, bn);
    if (right > 0)
      cblas_sgemm(CblasRowMajor, trans ? CblasTrans : CblasNoTrans,
                  trans ? CblasNoTrans : CblasTrans, bRows, bRight, bk, alpha,
                  opRow(row_begin), lda, opRow(row_end), lda, 0.0f,
                  ci + row_begin * n + row_end, bn);
  });
}

namespace {

/// The sum of x[j]^2 for j < n, in double, in one order on every machine
/// and thread count: 16 partial sums, sum l taking the j = l (mod 16) in
/// ascending order, then added pairwise (l + 8 into l, l + 4, l + 2, l +
/// 1). For floats the products are exact in double (24-bit significands),
/// so FMA or not gives the same bits; for doubles the compiler's
/// contraction is fixed per build. Sixteen independent chains where one
/// sequential sum waits for each add (about 4 cycles an element: 15 ms of
/// tiny-moe's 80 ms bf16 step).
template <typename T> double sumOfSquares(const T *x, int64_t n) {
  constexpr int kLanes = 16;
  double lane[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int l = 0; l < kLanes; ++l) {
      double v = static_cast<double>(x[j + l]);
      lane[l] += v * v;
    }
  for (int l = 0; j < n; ++j, ++l) {
    double v = static_cast<double>(x[j]);
    lane[l] += v * v;
  }
  for (int width = kLanes / 2; width > 0; width /= 2)
    for (int l = 0; l < width; ++l)
      lane[l] += lane[l + width];
  return lane[0];
}

/// out[i] = store(in[i] * scale) per item, scale = 1 / (||in[i]|| + eps)
/// (rounded to T for floats), the items side by side: each one's bits are
/// a serial run's.
template <typename T, typename Out, typename Store>
void normalizeEach(int64_t batch, int64_t numel, T eps, const T *in, Out *out,
                   Store store) {
  if (batch <= 0 || numel < 0)
    return;
  countOther();
  muirrt_detail::forEachItem(batch, [&](int64_t i) {
    const T *x = in + i * numel;
    Out *y = out + i * numel;
    // One reciprocal, then a plain multiply loop the compiler vectorises.
    T scale = static_cast<T>(
        1.0 / (std::sqrt(sumOfSquares(x, numel)) + static_cast<double>(eps)));
    for (int64_t j = 0; j < numel; ++j)
      y[j] = store(x[j] * scale);
  });
}

} // namespace

extern "C" void muirrt_frobenius_normalize(int64_t batch, int64_t numel,
                                           float eps, const float *in,
                                           float *out) {
  normalizeEach(batch, numel, eps, in, out, [](float v) { return v; });
}

extern "C" void muirrt_frobenius_normalize_bf16(int64_t batch, int64_t numel,
                                                float eps, const float *in,
                                                uint16_t *out) {
  normalizeEach(batch, numel, eps, in, out,
                [](float v) { return muirrt_bf16_round(v); });
}

extern "C" void muirrt_frobenius_normalize_f64(int64_t batch, int64_t numel,
                                               double eps, const double *in,
                                               double *out) {
  normalizeEach(batch, numel, eps, in, out, [](double v) { return v; });
}

extern "C" void muirrt_sum_squares(int64_t batch, int64_t numel,
                                   const float *in, float *ss) {
  if (batch <= 0 || numel < 0)
    return;
  countOther();
  for (int64_t i = 0; i < batch; ++i)
    ss[i] = static_cast<float>(sumOfSquares(in + i * numel, numel));
}

extern "C" void muirrt_scale_by_norm(int64_t batch, int64_t numel, float eps,
                                     const float *in, const float *ss,
                                     float *out) {
  if (batch <= 0 || numel < 0)
    return;
  countOther();
  for (int64_t i = 0; i < batch; ++i) {
    double denom =
        std::sqrt(static_cast<double>(ss[i])) + static_cast<double>(eps);
    float scale = static_cast<float>(1.0 / denom);
    const float *x = in + i * numel;
    float *y = out + i * numel;
    for (int64_t j = 0; j < numel; ++j)
      y[j] = x[j] * scale;
  }
}

extern "C" void muirrt_transpose(int64_t batch, int64_t rows, int64_t cols,
                                 const float *in, float *out) {
  if (batch <= 0 || rows <= 0 || cols <= 0)
    return;
  countOther();
  int64_t size = rows * cols;
  for (int64_t b = 0; b < batch; ++b) {
    const float *x = in + b * size;
    float *y = out + b * size;
    // 32x32 tiles: both the source rows and destination rows of a tile fit
    // in L1, so neither side is walked with a cache-missing stride.
    for (int64_t ib = 0; ib < rows; ib += kTile) {
      int64_t iEnd = std::min(ib + kTile, rows);
      for (int64_t jb = 0; jb < cols; jb += kTile) {
        int64_t jEnd = std::min(jb + kTile, cols);
        for (int64_t i = ib; i < iEnd; ++i)
          for (int64_t j = jb; j < jEnd; ++j)
            y[j * rows + i] = x[i * cols + j];
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// Observations
//===----------------------------------------------------------------------===//

extern "C" void muirrt_observe(int64_t slot, const float *data, int64_t numel) {
  if (slot < 0 || numel < 0 || (numel > 0 && !data))
    return;
  std::lock_guard<std::mutex> lock(slotsMutex);
  try {
    if (static_cast<size_t>(slot) >= slots.size())
      slots.resize(static_cast<size_t>(slot) + 1);
    Slot &s = slots[static_cast<size_t>(slot)];
    s.data.assign(data, data + numel);
    s.set = true;
  } catch (...) {
    // Out of memory: the observation is lost, but nothing may unwind into
    // compiled code.
  }
}

extern "C" const float *muirrt_observation(int64_t slot, int64_t *numel) {
  std::lock_guard<std::mutex> lock(slotsMutex);
  if (slot < 0 || static_cast<size_t>(slot) >= slots.size() ||
      !slots[static_cast<size_t>(slot)].set) {
    if (numel)
      *numel = 0;
    return nullptr;
  }
  const Slot &s = slots[static_cast<size_t>(slot)];
  if (numel)
    *numel = static_cast<int64_t>(s.data.size());
  return s.data.empty() ? &emptyObservation : s.data.data();
}

extern "C" void muirrt_observations_clear(void) {
  std::lock_guard<std::mutex> lock(slotsMutex);
  slots.clear();
}

//===----------------------------------------------------------------------===//
// Counters
//===----------------------------------------------------------------------===//

extern "C" void muirrt_counters_get(MuirRtCounters *out) {
  if (!out)
    return;
  std::lock_guard<std::mutex> lock(countersMutex);
  *out = counters;
}

extern "C" void muirrt_counters_reset(void) {
  std::lock_guard<std::mutex> lock(countersMutex);
  counters = MuirRtCounters{0, 0, 0, 0.0};
}

//===----------------------------------------------------------------------===//
// Metrics that need BLAS (the others are in Host.cpp, which has none: the
// GPU machine's step runner compiles it)
//===----------------------------------------------------------------------===//

namespace {

/// The Gram matrix of row-major X (m x n) in double, accumulated in double:
/// X^T X (n x n) when tall (m > n), else X X^T (m x m), upper triangle of
/// its row-major g x g storage.
std::vector<double> gramMatrix(const float *x, int64_t m, int64_t n) {
  std::vector<double> xd(static_cast<size_t>(m * n));
  for (size_t i = 0; i < xd.size(); ++i)
    xd[i] = static_cast<double>(x[i]);
  bool tall = m > n;
  int g = static_cast<int>(tall ? n : m);
  int kk = static_cast<int>(tall ? m : n);
  std::vector<double> gram(static_cast<size_t>(g) * g, 0.0);
  cblas_dsyrk(CblasRowMajor, CblasUpper, tall ? CblasTrans : CblasNoTrans, g,
              kk, 1.0, xd.data(), static_cast<int>(n), 0.0, gram.data(), g);
  return gram;
}

} // namespace

extern "C" int muirrt_singular_values(const float *x, int64_t m, int64_t n,
                                      double *sigma) {
  if (m < 0 || n < 0 || (m > 0 && n > 0 && (!x || !sigma))) {
    muirrt_detail::setLastError("muirrt_singular_values: bad arguments");
    return -1;
  }
  if (m == 0 || n == 0)
    return 0;
  if (m > std::numeric_limits<int>::max() ||
      n > std::numeric_limits<int>::max()) {
    muirrt_detail::setLastError("muirrt_singular_values: a dimension is "
                                "larger than LAPACK's int");
    return -1;
  }
  try {
    // The eigenvalues of the small Gram matrix are the squared singular
    // values: one SYRK and a tridiagonal reduction of min(m, n)^2, about
    // five times faster than an SVD of X. Row-major upper is column-major
    // lower.
    std::vector<double> gram = gramMatrix(x, m, n);
    int g = static_cast<int>(std::min(m, n)), lwork = -1, liwork = -1;
    int info = 0, iworkSize = 0;
    double workSize = 0;
    dsyevd_("N", "L", &g, gram.data(), &g, sigma, &workSize, &lwork, &iworkSize,
            &liwork, &info, 1, 1);
    if (info == 0) {
      lwork = static_cast<int>(workSize);
      liwork = std::max(iworkSize, 1);
      std::vector<double> work(static_cast<size_t>(std::max(lwork, 1)));
      std::vector<int> iwork(static_cast<size_t>(liwork));
      dsyevd_("N", "L", &g, gram.data(), &g, sigma, work.data(), &lwork,
              iwork.data(), &liwork, &info, 1, 1);
    }
    if (info != 0) {
      muirrt_detail::setLastError("muirrt_singular_values: LAPACK dsyevd "
                                  "failed (info " +
                                  std::to_string(info) + ")");
      return -1;
    }
    // Ascending eigenvalues; rounding can leave a zero one slightly
    // negative.
    for (int i = 0; i < g; ++i)
      sigma[i] = std::sqrt(std::max(sigma[i], 0.0));
    return 0;
  } catch (...) {
    muirrt_detail::setLastError("muirrt_singular_values: out of memory");
    return -1;
  }
}

extern "C" double muirrt_orthogonality_error(const float *x, int64_t m,
                                             int64_t n) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (m < 0 || n < 0 || (m > 0 && n > 0 && !x))
    return nan;
  if (m == 0 || n == 0)
    return 0.0; // the Gram matrix is 0 x 0
  if (m > std::numeric_limits<int>::max() ||
      n > std::numeric_limits<int>::max())
    return nan;
  try {
    // The Gram matrix is accumulated in double: the error of a nearly
    // orthogonal float matrix is below float resolution of its entries.
    std::vector<double> gram = gramMatrix(x, m, n);
    int g = static_cast<int>(std::min(m, n));
    double sum = 0.0;
    for (int i = 0; i < g; ++i) {
      double d = gram[static_cast<size_t>(i) * g + i] - 1.0;
      sum += d * d;
      for (int j = i + 1; j < g; ++j) {
        double v = gram[static_cast<size_t>(i) * g + j];
        sum += 2.0 * v * v; // each off-diagonal entry appears twice
      }
    }
    return std::sqrt(sum);
  } catch (...) {
    return nan;
  }
}
