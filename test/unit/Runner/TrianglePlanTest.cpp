//===- TrianglePlanTest.cpp - a Gram product's upper-triangle blocks ------===//
//
// trianglePlan (runtime/cuda/TrianglePlan.h), which cuts the CUDA runtime's
// symmetric products into blocks of rows of the upper triangle: the blocks
// computed as the runtime computes them (each block's rows against the
// columns from its diagonal on), then mirrored, give A A^T exactly; they
// write nothing below the diagonal blocks; their flops are about 0.55 of
// the GEMM's on large matrices.
//
//===----------------------------------------------------------------------===//
#include "TrianglePlan.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

using muirrt_cuda_detail::kTriangleFrom;
using muirrt_cuda_detail::TriangleBlock;
using muirrt_cuda_detail::triangleFraction;
using muirrt_cuda_detail::trianglePlan;

namespace {

TEST(TrianglePlan, SmallProductsAreOneGemm) {
  for (int64_t n : {int64_t(1), int64_t(64), int64_t(768), kTriangleFrom - 1}) {
    std::vector<TriangleBlock> blocks = trianglePlan(n);
    ASSERT_EQ(blocks.size(), 1u) << n;
    EXPECT_EQ(blocks[0].row, 0);
    EXPECT_EQ(blocks[0].rows, n);
    EXPECT_EQ(triangleFraction(n), 1.0);
  }
}

TEST(TrianglePlan, BlocksTileTheRowsInWholeTiles) {
  for (int64_t n : std::vector<int64_t>{1024, 1536, 2048, 4096, 5120, 7168,
                                        8192, 8193, 16384}) {
    std::vector<TriangleBlock> blocks = trianglePlan(n);
    int64_t next = 0;
    for (size_t i = 0; i < blocks.size(); ++i) {
      EXPECT_EQ(blocks[i].row, next) << n;
      if (i + 1 < blocks.size()) {
        EXPECT_EQ(blocks[i].rows % 128, 0) << n;
        EXPECT_GE(blocks[i].rows, 512) << n;
      }
      next += blocks[i].rows;
    }
    EXPECT_EQ(next, n);
    EXPECT_LE(blocks.size(), 10u) << n;
  }
}

// The figure: a Gram product costs about 0.55 of the GEMM.
TEST(TrianglePlan, LargeProductsDoAboutHalfTheFlops) {
  EXPECT_NEAR(triangleFraction(8192), 0.554, 0.001);
  EXPECT_NEAR(triangleFraction(16384), 0.550, 0.001);
  EXPECT_LE(triangleFraction(4096), 0.57);
  // (b + 1) / (2 b) for b equal blocks: 1024 is two blocks of 512.
  EXPECT_DOUBLE_EQ(triangleFraction(1024), 0.75);
}

// C = A A^T by the plan's blocks in double, then the lower triangle
// mirrored from the upper, against the product summed directly: equal
// bitwise (each entry is the same sum, in the same order), and nothing
// written below the diagonal blocks before the mirror.
TEST(TrianglePlan, BlocksThenMirrorGiveTheProduct) {
  const int64_t n = 1536, k = 3;
  std::vector<double> a(n * k);
  for (int64_t i = 0; i < n * k; ++i)
    a[i] = std::sin(0.37 * double(i)) + 0.01 * double(i % 7);
  auto dot = [&](int64_t r, int64_t c) {
    double s = 0;
    for (int64_t q = 0; q < k; ++q)
      s += a[r * k + q] * a[c * k + q];
    return s;
  };
  const double unset = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> c(n * n, unset);
  std::vector<TriangleBlock> blocks = trianglePlan(n);
  ASSERT_EQ(blocks.size(), 3u);
  for (TriangleBlock b : blocks)
    for (int64_t r = b.row; r < b.row + b.rows; ++r)
      for (int64_t col = b.row; col < n; ++col)
        c[r * n + col] = dot(r, col);
  int64_t belowWritten = 0, upperMissing = 0;
  for (int64_t r = 0; r < n; ++r)
    for (int64_t col = 0; col < n; ++col) {
      bool written = !std::isnan(c[r * n + col]);
      if (col >= r && !written)
        ++upperMissing;
      // Below the diagonal, only inside a diagonal block.
      int64_t blockOfR = 0, blockOfC = 0;
      for (size_t i = 0; i < blocks.size(); ++i) {
        if (r >= blocks[i].row)
          blockOfR = int64_t(i);
        if (col >= blocks[i].row)
          blockOfC = int64_t(i);
      }
      if (col < r && written && blockOfR != blockOfC)
        ++belowWritten;
    }
  EXPECT_EQ(upperMissing, 0);
  EXPECT_EQ(belowWritten, 0);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t col = 0; col < r; ++col)
      c[r * n + col] = c[col * n + r];
  int64_t wrong = 0;
  for (int64_t r = 0; r < n; ++r)
    for (int64_t col = 0; col < n; ++col)
      wrong += c[r * n + col] != dot(std::min(r, col), std::max(r, col));
  EXPECT_EQ(wrong, 0);
}

} // namespace
