//===- CudaArenaTest.cpp - the CUDA runtime's arena placement -------------===//
//
// ArenaPlan (muir-rt/ArenaPlan.h), which places a CUDA step's
// temporaries, on sequences written in the test: first fit at the lowest
// free offset, the same offsets at every run, and the need of a later,
// larger step, which then fits the grown arena at its own offsets.
//
//===----------------------------------------------------------------------===//
#include "muir-rt/ArenaPlan.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

using muirrt_detail::ArenaPlan;

namespace {

/// One run of a step: +n allocates n bytes, -k frees the k-th allocation
/// (0-based, made before). Returns the offsets; `end` gets the highest
/// block end.
std::vector<size_t> run(ArenaPlan &plan, const std::vector<long> &sequence,
                        size_t &end) {
  std::vector<size_t> offsets, sizes;
  end = 0;
  for (long op : sequence) {
    if (op > 0) {
      offsets.push_back(plan.place(static_cast<size_t>(op)));
      sizes.push_back(static_cast<size_t>(op));
      end = std::max(end, offsets.back() + sizes.back());
    } else {
      plan.release(offsets.at(static_cast<size_t>(-op)));
    }
  }
  return offsets;
}

TEST(ArenaPlan, FirstFitReusesTheLowestGap) {
  ArenaPlan plan;
  EXPECT_EQ(plan.place(256), 0u);
  EXPECT_EQ(plan.place(512), 256u);
  EXPECT_EQ(plan.place(256), 768u);
  plan.release(256);                 // a 512-byte gap at 256
  EXPECT_EQ(plan.place(768), 1024u); // does not fit the gap
  EXPECT_EQ(plan.place(256), 256u);  // fits it, lowest first
  EXPECT_EQ(plan.place(256), 512u);
  EXPECT_EQ(plan.need(), 1792u);
  EXPECT_FALSE(plan.idle());
}

TEST(ArenaPlan, TheSameSequenceLandsAtTheSameOffsets) {
  // Frees out of order leave gaps that later blocks fill.
  std::vector<long> step = {1024, 256, 512, -1, 128, -0,
                            2048, -2,  -3,  -4, 256, -5};
  ArenaPlan plan;
  size_t end1 = 0, end2 = 0;
  std::vector<size_t> first = run(plan, step, end1);
  EXPECT_TRUE(plan.idle());
  std::vector<size_t> second = run(plan, step, end2);
  EXPECT_EQ(first, second);
  EXPECT_EQ(plan.need(), end1);
}

TEST(ArenaPlan, ALargerLaterStepRaisesTheNeedAndFitsIt) {
  // Step A sizes the arena; step B, compiled later, peaks higher. Within
  // an arena of A's need, B's first run places blocks beyond it (the
  // runtime allocates those outside the arena); the need then covers B,
  // and B's later runs (its capture) fit at the same offsets.
  ArenaPlan plan;
  size_t endA = 0, endB = 0, endB2 = 0;
  run(plan, {4096, 4096, -0, -1}, endA);
  size_t arena = plan.need();
  EXPECT_EQ(arena, 8192u);
  std::vector<size_t> b = run(plan, {4096, 8192, 1024, -1, -0, -2}, endB);
  EXPECT_GT(endB, arena);
  EXPECT_EQ(plan.need(), endB);
  EXPECT_EQ(plan.need(), 13312u);
  EXPECT_EQ(run(plan, {4096, 8192, 1024, -1, -0, -2}, endB2), b);
  EXPECT_LE(endB2, plan.need());
  // A still fits the grown arena, at its old offsets.
  size_t endA2 = 0;
  EXPECT_EQ(run(plan, {4096, 4096, -0, -1}, endA2),
            (std::vector<size_t>{0, 4096}));
  EXPECT_EQ(plan.need(), 13312u);
}

} // namespace
