//===- CostModelTest.cpp - lib/Analysis/CostModel against closed forms ----===//
//
// The cost model's prices and choices, checked against formulas written
// out here from the flop and byte counts of the IR each mode emits (and the
// runtime counts): not the model's code run twice.
//
//===----------------------------------------------------------------------===//
#include "muir/Analysis/CostModel.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace mlir::muir;

namespace {

NSCostModel cpu() { return NSCostModel(MachineProfile::get(Machine::Cpu)); }
NSCostModel h200() { return NSCostModel(MachineProfile::get(Machine::H200)); }

TEST(CostModel, StandardFormFlops) {
  // r = 24, c = 10240, NS5 with SYRK: per step the Gram SYRK r (r + 1) c,
  // A A as SYRK r (r + 1) r and B X as GEMM 2 r^2 c.
  double r = 24, c = 10240;
  double want = 5 * (r * (r + 1) * c + r * (r + 1) * r + 2 * r * r * c);
  EXPECT_DOUBLE_EQ(cpu().formCost(24, 10240, 1, 5).standardFlops, want);
  // Tall: the same, as its transpose; a batch multiplies.
  EXPECT_DOUBLE_EQ(cpu().formCost(10240, 24, 3, 5).standardFlops, 3 * want);
  // Without SYRK every symmetric product is a GEMM.
  double gemm = 5 * (2 * r * r * c + 2 * r * r * r + 2 * r * r * c);
  EXPECT_DOUBLE_EQ(cpu().formCost(24, 10240, 1, 5, false).standardFlops,
                   gemm);
}

TEST(CostModel, GramFormFlopsSmall) {
  // r < 128: the symmetric products are whole GEMMs. A0 as SYRK over c,
  // per step A A (SYRK), after the first Q <- P Q (2 r^3), before the
  // last P^2 (SYRK) and A P^2 (2 r^3); then X = Q X0 in f32 (2 r^2 c).
  double r = 24, c = 10240, k = 5;
  double sym = r * (r + 1) * r;
  double want64 = r * (r + 1) * c + k * sym + (k - 1) * 2 * r * r * r +
                  (k - 1) * (sym + 2 * r * r * r);
  FormCost f = cpu().formCost(24, 10240, 1, 5);
  EXPECT_DOUBLE_EQ(f.gramFp64Flops, want64);
  EXPECT_DOUBLE_EQ(f.gramFp32Flops, 2 * r * r * c);
  // Seconds: f64 flops at 0.43 of the CPU's 150 GFLOP/s, f32 at 150.
  EXPECT_NEAR(f.gramSeconds, want64 / (0.43 * 150e9) + 2 * r * r * c / 150e9,
              1e-15);
  EXPECT_NEAR(f.standardSeconds, f.standardFlops / 150e9, 1e-15);
}

TEST(CostModel, GramFormFlopsTriangular) {
  // r = 512 on the CPU: the runtime computes a symmetric product's upper
  // triangle in 4 blocks of 128 rows: 2 * 128 * (512 + 384 + 256 + 128) * k
  // flops, 0.625 of the GEMM's 2 * 512^3.
  double r = 512, k = 5;
  double tri = 2 * 128.0 * (512 + 384 + 256 + 128) * 512;
  EXPECT_DOUBLE_EQ(tri / (2 * r * r * r), 0.625);
  double sym = r * (r + 1) * r;
  double want = r * (r + 1) * 4096 + k * sym + (k - 1) * tri +
                (k - 1) * (sym + tri);
  EXPECT_DOUBLE_EQ(cpu().formCost(512, 4096, 1, 5).gramFp64Flops, want);
  // cuBLAS computes the whole product.
  double whole = r * (r + 1) * 4096 + k * sym + (k - 1) * 2 * r * r * r +
                 (k - 1) * (sym + 2 * r * r * r);
  EXPECT_DOUBLE_EQ(h200().formCost(512, 4096, 1, 5).gramFp64Flops, whole);
}

TEST(CostModel, PreferGram) {
  // Square never; the MindSpore shape and 512 x 4096 on the CPU profile;
  // Qwen3's 768 x 2048 experts and a 256 x 1024 not on the CPU (f64 at
  // 0.43 of f32), but on the H200 profile (f64 at 67 TFLOP/s).
  EXPECT_FALSE(cpu().preferGram(512, 512, 1, 5));
  EXPECT_FALSE(h200().preferGram(512, 512, 1, 5));
  EXPECT_TRUE(cpu().preferGram(24, 10240, 74, 5));
  EXPECT_TRUE(cpu().preferGram(512, 4096, 1, 5));
  EXPECT_FALSE(cpu().preferGram(768, 2048, 8, 5));
  EXPECT_FALSE(cpu().preferGram(256, 1024, 1, 5));
  EXPECT_TRUE(h200().preferGram(256, 1024, 1, 5));
  // The choice does not depend on the batch (both forms scale with it).
  for (int64_t b : {1, 7, 74})
    EXPECT_EQ(cpu().preferGram(64, 640, b, 5),
              cpu().preferGram(64, 640, 1, 5));
}

TEST(CostModel, DistributedBytes) {
  // A 512 x 2048 matrix split on its columns over tp = 4: the standard
  // form all-reduces the norm and, every step, the packed 512-triangle
  // (ring: 2 (g - 1) / g of the bytes); the Gram form sends its packed f64
  // triangle whole to each of the g - 1 peers, once.
  NSProblem p{512, 2048, 1, 5, /*splitDim=*/1, 4, "tp"};
  double g = 4, tri = 512.0 * 513 / 2;
  EXPECT_DOUBLE_EQ(cpu().distributed(p).commBytes,
                   5 * 2 * (g - 1) / g * 4 * tri + 2 * (g - 1) / g * 4);
  EXPECT_DOUBLE_EQ(cpu().distributedGram(p).commBytes, (g - 1) * 8 * tri);
}

TEST(CostModel, ChooseForm) {
  NSProblem p{256, 1024, 1, 5, /*splitDim=*/1, 4, "tp"};
  bool gram = true;
  llvm::SmallVector<NSCandidate> weighed;
  auto priced = [&](NewtonSchulzMode mode, bool g) {
    return llvm::any_of(weighed, [&](const NSCandidate &c) {
      return c.mode == mode && c.gram == g;
    });
  };
  // The CPU keeps the standard distributed form; the H200 profile takes
  // the Gram form's single all-reduce.
  EXPECT_EQ(cpu().choose(p, &weighed, NSFormOption::Auto, &gram),
            NewtonSchulzMode::distributed);
  EXPECT_FALSE(gram);
  EXPECT_TRUE(priced(NewtonSchulzMode::distributed, true));
  EXPECT_NE(describe(weighed, "cpu").find("distributed (gram)"),
            std::string::npos);
  // The reason lists each candidate with its cost: the chosen one is the
  // cheapest.
  for (const NSCandidate &c : weighed)
    EXPECT_GE(c.cost.seconds, cpu().distributed(p).seconds);
  EXPECT_EQ(h200().choose(p, &weighed, NSFormOption::Auto, &gram),
            NewtonSchulzMode::distributed);
  EXPECT_TRUE(gram);
  // Standard only: the Gram candidates are not priced.
  EXPECT_EQ(h200().choose(p, &weighed, NSFormOption::Standard, &gram),
            NewtonSchulzMode::duplicated);
  EXPECT_FALSE(gram);
  EXPECT_FALSE(priced(NewtonSchulzMode::distributed, true));
  EXPECT_EQ(describe(weighed, "h200").find("(gram)"), std::string::npos);
  // A requested mode's form.
  EXPECT_TRUE(
      cpu().gramForMode(NewtonSchulzMode::distributed, p, NSFormOption::Gram));
  EXPECT_FALSE(
      cpu().gramForMode(NewtonSchulzMode::duplicated, p, NSFormOption::Gram));
  EXPECT_FALSE(
      cpu().gramForMode(NewtonSchulzMode::distributed, p, NSFormOption::Auto));
}

TEST(CostModel, SymbolizeForm) {
  EXPECT_EQ(symbolizeNSFormOption("gram"), NSFormOption::Gram);
  EXPECT_EQ(symbolizeNSFormOption("standard"), NSFormOption::Standard);
  EXPECT_EQ(symbolizeNSFormOption("auto"), NSFormOption::Auto);
  EXPECT_FALSE(symbolizeNSFormOption("Gram").has_value());
  for (NSFormOption o :
       {NSFormOption::Auto, NSFormOption::Standard, NSFormOption::Gram})
    EXPECT_EQ(symbolizeNSFormOption(stringify(o)), o);
}

} // namespace
