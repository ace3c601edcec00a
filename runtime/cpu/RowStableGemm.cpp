//===- RowStableGemm.cpp - a matrix product with shape-independent bits ---===//
//
// muirrt_gemm_rows: C = op(A) op(B) where every element is the sum of its k
// products in ascending order, each product rounded, then added (no fused
// multiply-add: this file is compiled with -ffp-contract=off, and without
// fast-math nothing is reassociated). Blocking and vector width change
// which elements are computed together, never the operations of one
// element, so a row's result is the same for any M, any position and any
// machine: what BLAS does not promise (OpenBLAS rounds a row differently
// for another number of rows or another position in the call). An MoE
// layer's products over token rows use it (muir.matmul row_stable).
//
//===----------------------------------------------------------------------===//
#include "muir-rt/Runtime.h"

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace {

constexpr int64_t kRows = 4;  // rows of C per block
constexpr int64_t kCols = 64; // columns of C per block

/// C rows [i, i + Rows) x columns [j, j + cols) from op(A) and B as k x n
/// row-major; Cols > 0: exactly Cols columns, a width the compiler keeps
/// in registers (an MoE router's 16 experts: 4 times the rate of the
/// general block). Inlined into one variant per instruction set: the
/// vector width changes which elements share an instruction, not their
/// operations.
template <int64_t Rows, int64_t Cols = 0>
__attribute__((always_inline)) inline void
blockBody(int64_t i, int64_t j, int64_t cols, int64_t n, int64_t k,
          const float *a, bool transA, int64_t m, const float *bn, float *c) {
  constexpr int64_t kWidth = Cols ? Cols : kCols;
  const int64_t width = Cols ? Cols : cols;
  float acc[Rows][kWidth];
  for (int64_t r = 0; r < Rows; ++r)
    for (int64_t jj = 0; jj < kWidth; ++jj)
      acc[r][jj] = 0.0f;
  for (int64_t p = 0; p < k; ++p) {
    const float *brow = bn + p * n + j;
    for (int64_t r = 0; r < Rows; ++r) {
      float av = transA ? a[p * m + i + r] : a[(i + r) * k + p];
      float *ar = acc[r];
      for (int64_t jj = 0; jj < width; ++jj) {
        float prod = av * brow[jj];
        ar[jj] = ar[jj] + prod;
      }
    }
  }
  for (int64_t r = 0; r < Rows; ++r)
    std::copy(acc[r], acc[r] + width, c + (i + r) * n + j);
}

/// Columns [j0, j1) x rows [i0, i1) of C (whole column blocks), inlined
/// into each instruction-set variant below.
__attribute__((always_inline)) inline void
columnsBody(int64_t j0, int64_t j1, int64_t i0, int64_t i1, int64_t m,
            int64_t n, int64_t k, const float *a, bool transA,
            const float *bn, float *c) {
  for (int64_t j = j0; j < j1; j += kCols) {
    int64_t cols = std::min(kCols, j1 - j);
    int64_t i = i0;
    if (cols == 16) {
      // Eight rows: eight independent sums hide the adds' latency.
      for (; i + 8 <= i1; i += 8)
        blockBody<8, 16>(i, j, cols, n, k, a, transA, m, bn, c);
    } else if (cols == kCols) {
      for (; i + kRows <= i1; i += kRows)
        blockBody<kRows, kCols>(i, j, cols, n, k, a, transA, m, bn, c);
    } else {
      for (; i + kRows <= i1; i += kRows)
        blockBody<kRows>(i, j, cols, n, k, a, transA, m, bn, c);
    }
    for (; i < i1; ++i)
      blockBody<1>(i, j, cols, n, k, a, transA, m, bn, c);
  }
}

void columnsBase(int64_t j0, int64_t j1, int64_t i0, int64_t i1, int64_t m,
                 int64_t n, int64_t k, const float *a, bool transA,
                 const float *bn, float *c) {
  columnsBody(j0, j1, i0, i1, m, n, k, a, transA, bn, c);
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2"))) void
columnsAvx2(int64_t j0, int64_t j1, int64_t i0, int64_t i1, int64_t m,
            int64_t n, int64_t k, const float *a, bool transA,
            const float *bn, float *c) {
  columnsBody(j0, j1, i0, i1, m, n, k, a, transA, bn, c);
}
bool haveAvx2() { return __builtin_cpu_supports("avx2"); }
__attribute__((target("avx512f"))) void
columnsAvx512(int64_t j0, int64_t j1, int64_t i0, int64_t i1, int64_t m,
              int64_t n, int64_t k, const float *a, bool transA,
              const float *bn, float *c) {
  columnsBody(j0, j1, i0, i1, m, n, k, a, transA, bn, c);
}
bool haveAvx512() { return __builtin_cpu_supports("avx512f"); }
#else
void columnsAvx512(int64_t j0, int64_t j1, int64_t i0, int64_t i1, int64_t m,
                   int64_t n, int64_t k, const float *a, bool transA,
                   const float *bn, float *c) {
  columnsBase(j0, j1, i0, i1, m, n, k, a, transA, bn, c);
}
bool haveAvx512() { return false; }
void columnsAvx2(int64_t j0, int64_t j1, int64_t i0, int64_t i1, int64_t m,
                 int64_t n, int64_t k, const float *a, bool transA,
                 const float *bn, float *c) {
  columnsBase(j0, j1, i0, i1, m, n, k, a, transA, bn, c);
}
bool haveAvx2() { return false; }
#endif

} // namespace

extern "C" void muirrt_gemm_rows(int32_t trans_a, int32_t trans_b, int64_t m,
                                 int64_t n, int64_t k, const float *a,
                                 const float *b, float *c) {
  if (m <= 0 || n <= 0)
    return;
  if (k <= 0) {
    std::fill(c, c + m * n, 0.0f);
    return;
  }
  // op(B) as k x n row-major.
  std::vector<float> transposed;
  const float *bn = b;
  if (trans_b) {
    transposed.resize(static_cast<size_t>(k * n));
    for (int64_t q = 0; q < n; ++q)
      for (int64_t p = 0; p < k; ++p)
        transposed[static_cast<size_t>(p * n + q)] = b[q * k + p];
    bn = transposed.data();
  }
  static const auto columns = haveAvx512() ? columnsAvx512
                              : haveAvx2()   ? columnsAvx2
                                             : columnsBase;
  auto run = [&](int64_t j0, int64_t j1, int64_t i0, int64_t i1) {
    columns(j0, j1, i0, i1, m, n, k, a, trans_a != 0, bn, c);
  };
  // A large product on two threads, over disjoint column blocks or row
  // blocks (each element is computed as it would be on one).
  int64_t blocks = (n + kCols - 1) / kCols;
  if (static_cast<double>(m) * n * k < 4e6) {
    run(0, n, 0, m);
  } else if (blocks >= 2) {
    int64_t half = (blocks / 2) * kCols;
    std::thread other(run, half, n, 0, m);
    run(0, half, 0, m);
    other.join();
  } else {
    int64_t half = (m / 2 / kRows) * kRows;
    std::thread other(run, 0, n, half, m);
    run(0, n, 0, half);
    other.join();
  }
}
