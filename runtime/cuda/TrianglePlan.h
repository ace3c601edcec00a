//===- TrianglePlan.h - a Gram product's upper-triangle blocks --*- C++ -*-===//
//
// The CUDA runtime computes a symmetric product C = A A^T (n x n) as the
// upper triangle's blocks of rows only, then mirrors it below the
// diagonal: block row i is rows [r0, r0 + rows) against the columns from
// its diagonal on, [r0, n), one tensor-core GEMM each. With b blocks the
// GEMMs do (b + 1) / (2 b) of the full product's flops (0.55 for b = 10);
// every block but the last is a multiple of 128 rows and at least 512, so
// that each GEMM still fills the GPU. Plain C++, so the unit tests compile it
// without CUDA.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_RUNTIME_CUDA_TRIANGLEPLAN_H
#define MUIR_RUNTIME_CUDA_TRIANGLEPLAN_H

#include <algorithm>
#include <cstdint>
#include <vector>

namespace muirrt_cuda_detail {

/// Below this order a symmetric product runs as one full GEMM.
constexpr int64_t kTriangleFrom = 1024;
/// The blocks a large product is cut into (at most; fewer when the
/// 512-row floor binds).
constexpr int64_t kTriangleBlocks = 10;

struct TriangleBlock {
  int64_t row;  ///< first row, also the first column computed
  int64_t rows; ///< rows of the block; its columns are [row, n)
};

/// The blocks of rows of an n x n symmetric product; one block [0, n) (the
/// full GEMM) below kTriangleFrom.
inline std::vector<TriangleBlock> trianglePlan(int64_t n) {
  if (n < kTriangleFrom)
    return {{0, n}};
  int64_t per = (n + kTriangleBlocks - 1) / kTriangleBlocks;
  per = std::max<int64_t>(512, (per + 127) / 128 * 128);
  std::vector<TriangleBlock> blocks;
  for (int64_t r0 = 0; r0 < n; r0 += per)
    blocks.push_back({r0, std::min(per, n - r0)});
  return blocks;
}

/// The multiply-adds of the plan's GEMMs for a product over k, over those
/// of the full GEMM (n^2 k).
inline double triangleFraction(int64_t n) {
  double done = 0;
  for (TriangleBlock b : trianglePlan(n))
    done += double(b.rows) * double(n - b.row);
  return done / (double(n) * double(n));
}

} // namespace muirrt_cuda_detail

#endif // MUIR_RUNTIME_CUDA_TRIANGLEPLAN_H
