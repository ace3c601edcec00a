//===- RuntimeTest.cpp - unit tests for the muir CPU runtime --------------===//
//
// Checks the runtime's C API against independent references: naive
// double-precision loops for the kernels, hand-computed values for the
// metrics, and hand-written bytes for the .npy format. Never compares the
// runtime against itself, except where determinism is the property tested.
//
//===----------------------------------------------------------------------===//

#include "muir-rt/EntryTable.h"
#include "muir-rt/Runtime.h"
#include "muir-rt/TensorFiles.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;

namespace {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

std::vector<float> randomVector(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(gen);
  return v;
}

// Reference GEMM in double for one batch item; storage conventions as in
// Runtime.h (A stored k x m when transposed, B stored n x k when
// transposed).
void refGemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha,
             const float *a, const float *b, double beta, const float *cIn,
             std::vector<double> &out) {
  out.assign(static_cast<size_t>(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0.0;
      for (int64_t p = 0; p < k; ++p) {
        double av = ta ? a[p * m + i] : a[i * k + p];
        double bv = tb ? b[j * k + p] : b[p * n + j];
        acc += av * bv;
      }
      double r = alpha * acc;
      if (beta != 0.0)
        r += beta * cIn[i * n + j];
      out[static_cast<size_t>(i * n + j)] = r;
    }
}

void expectNear(const float *got, const std::vector<double> &want, double tol,
                const std::string &what) {
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1.0 + std::fabs(want[i])))
        << what << " at " << i;
}

std::string readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in),
                     std::istreambuf_iterator<char>());
}

void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string floatBytes(const std::vector<float> &v) {
  return std::string(reinterpret_cast<const char *>(v.data()),
                     v.size() * sizeof(float));
}

// A NumPy v1.0 file: magic, version, little-endian 16-bit header length,
// header text, data.
std::string npyV1(const std::string &header, const std::string &data) {
  std::string s("\x93NUMPY\x01\x00", 8);
  s += static_cast<char>(header.size() & 0xff);
  s += static_cast<char>(header.size() >> 8);
  return s + header + data;
}

// Every regular file below `dir`, as paths relative to it.
std::vector<std::string> listFiles(const std::string &dir) {
  std::vector<std::string> out;
  for (const auto &e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file())
      out.push_back(fs::relative(e.path(), dir).string());
  std::sort(out.begin(), out.end());
  return out;
}

// A fresh temporary directory per test, removed afterwards.
class TempDirTest : public ::testing::Test {
protected:
  std::string dir;
  void SetUp() override {
    char tmpl[] = "/tmp/muirrt-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string path(const std::string &rel) const { return dir + "/" + rel; }
};

struct CtxDeleter {
  void operator()(MuirRtContext *c) const { muirrt_context_destroy(c); }
};
using Ctx = std::unique_ptr<MuirRtContext, CtxDeleter>;

Ctx makeCtx() { return Ctx(muirrt_context_create()); }

double sampleStd(const float *x, int64_t n) {
  double mean = 0.0;
  for (int64_t i = 0; i < n; ++i)
    mean += x[i];
  mean /= static_cast<double>(n);
  double var = 0.0;
  for (int64_t i = 0; i < n; ++i)
    var += (x[i] - mean) * (x[i] - mean);
  return std::sqrt(var / static_cast<double>(n - 1));
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

TEST(Sgemm, AllTransposeCombosBatchedBothBetas) {
  // Small items of a batch run on parallel threads when OpenBLAS has two
  // or more, else one after another: both ways, whatever the environment.
  const int32_t threads = muirrt_blas_threads();
  for (int32_t t : {1, 2}) {
  muirrt_set_blas_threads(t);
  const int64_t batch = 3, m = 5, n = 7, k = 4;
  std::vector<float> a = randomVector(batch * m * k, 1);
  std::vector<float> b = randomVector(batch * k * n, 2);
  std::vector<float> c0 = randomVector(batch * m * n, 3);
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (float beta : {0.0f, 0.5f, 1.0f})
        for (bool separate : {false, true}) {
          std::vector<float> c = c0;
          // beta == 0 must ignore the accumulator entirely, even NaNs; a
          // separate accumulator means C's input is never read.
          if (beta == 0.0f || separate)
            std::fill(c.begin(), c.end(),
                      std::numeric_limits<float>::quiet_NaN());
          muirrt_sgemm(batch, ta, tb, m, n, k, 1.5f, a.data(), b.data(),
                       beta, c.data(), separate ? c0.data() : nullptr);
          for (int64_t i = 0; i < batch; ++i) {
            std::vector<double> want;
            refGemm(ta, tb, m, n, k, 1.5, a.data() + i * m * k,
                    b.data() + i * k * n, beta, c0.data() + i * m * n, want);
            expectNear(c.data() + i * m * n, want, 1e-5,
                       "ta=" + std::to_string(ta) +
                           " tb=" + std::to_string(tb) +
                           " beta=" + std::to_string(beta) +
                           (separate ? " acc" : "") + " item " +
                           std::to_string(i) + ", " + std::to_string(t) +
                           " BLAS thread(s)");
          }
        }
  }
  muirrt_set_blas_threads(threads);
}

TEST(Sgemm, LargerThanBlasBlocks) {
  const int64_t m = 70, n = 65, k = 130;
  std::vector<float> a = randomVector(m * k, 4), b = randomVector(k * n, 5);
  std::vector<float> c(m * n);
  muirrt_sgemm(1, 1, 0, m, n, k, 1.0f, a.data(), b.data(), 0.0f, c.data(),
               nullptr);
  std::vector<double> want;
  refGemm(true, false, m, n, k, 1.0, a.data(), b.data(), 0.0, nullptr, want);
  expectNear(c.data(), want, 1e-4, "70x65x130");
}

// The row-stable product: every element the float sum of its products in
// ascending order (a float loop written here), whatever the blocking; and
// so a row's bits are the same alone, among other rows, at any position.
TEST(GemmRows, AscendingSumsAndRowsIndependentOfShape) {
  const int64_t n = 70, k = 33;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      const int64_t m = 37;
      std::vector<float> a = randomVector(m * k, 11), b = randomVector(k * n, 12);
      std::vector<float> c(m * n);
      muirrt_gemm_rows(ta, tb, m, n, k, a.data(), b.data(), c.data());
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          float acc = 0.0f;
          for (int64_t p = 0; p < k; ++p) {
            volatile float prod = (ta ? a[p * m + i] : a[i * k + p]) *
                                  (tb ? b[j * k + p] : b[p * n + j]);
            acc = acc + prod;
          }
          ASSERT_EQ(acc, c[i * n + j]) << "ta " << ta << " tb " << tb
                                       << " element " << i << "," << j;
        }
      std::vector<double> want;
      refGemm(ta, tb, m, n, k, 1.0, a.data(), b.data(), 0.0, nullptr, want);
      expectNear(c.data(), want, 1e-5, "gemm_rows 37x70x33");
    }
  // Large enough for two threads, over columns and over rows.
  for (auto [bm, bn, bk] : {std::array<int64_t, 3>{300, 200, 100},
                            std::array<int64_t, 3>{1000, 16, 400}}) {
    std::vector<float> a = randomVector(bm * bk, 15),
                       b = randomVector(bk * bn, 16), c(bm * bn);
    muirrt_gemm_rows(0, 0, bm, bn, bk, a.data(), b.data(), c.data());
    for (int64_t i = 0; i < bm; i += 7)
      for (int64_t j = 0; j < bn; ++j) {
        float acc = 0.0f;
        for (int64_t p = 0; p < bk; ++p) {
          volatile float prod = a[i * bk + p] * b[p * bn + j];
          acc = acc + prod;
        }
        ASSERT_EQ(acc, c[i * bn + j]) << bm << "x" << bn << "x" << bk
                                      << " element " << i << "," << j;
      }
  }
  // Row 5 of a 37-row product, alone (m = 1) and at row 2 of a 9-row one.
  const int64_t m = 37;
  std::vector<float> a = randomVector(m * k, 13), b = randomVector(n * k, 14);
  std::vector<float> all(m * n), one(n), some(9 * n);
  muirrt_gemm_rows(0, 1, m, n, k, a.data(), b.data(), all.data());
  muirrt_gemm_rows(0, 1, 1, n, k, a.data() + 5 * k, b.data(), one.data());
  muirrt_gemm_rows(0, 1, 9, n, k, a.data() + 3 * k, b.data(), some.data());
  for (int64_t j = 0; j < n; ++j) {
    ASSERT_EQ(all[5 * n + j], one[j]) << "column " << j;
    ASSERT_EQ(all[5 * n + j], some[2 * n + j]) << "column " << j;
  }
}

TEST(Ssyrk, BothTrianglesAndBeta) {
  const int64_t batch = 2, n = 37, k = 5; // n spans more than one tile
  std::vector<float> a = randomVector(batch * n * k, 6);
  // A symmetric input C, as the contract assumes when beta != 0.
  std::vector<float> c0(batch * n * n);
  std::vector<float> r = randomVector(batch * n * n, 7);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j)
        c0[b * n * n + i * n + j] =
            i <= j ? r[b * n * n + i * n + j] : r[b * n * n + j * n + i];
  // trans: A is k x n (the same values read as A^T), C = A^T A.
  for (int32_t trans : {0, 1})
    for (float beta : {0.0f, 0.25f})
      for (bool separate : {false, true}) {
      std::vector<float> c = c0;
      if (beta == 0.0f || separate)
        std::fill(c.begin(), c.end(),
                  std::numeric_limits<float>::quiet_NaN());
      muirrt_ssyrk(batch, trans, n, k, 2.0f, a.data(), beta, c.data(),
                   separate ? c0.data() : nullptr);
      for (int64_t b = 0; b < batch; ++b) {
        const float *ab = a.data() + b * n * k;
        auto at = [&](int64_t row, int64_t p) {
          return static_cast<double>(trans ? ab[p * n + row]
                                           : ab[row * k + p]);
        };
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < n; ++j) {
            double acc = 0.0;
            for (int64_t p = 0; p < k; ++p)
              acc += at(i, p) * at(j, p);
            double want = 2.0 * acc;
            if (beta != 0.0f)
              want += beta * static_cast<double>(c0[b * n * n + i * n + j]);
            ASSERT_NEAR(c[b * n * n + i * n + j], want,
                        1e-5 * (1.0 + std::fabs(want)))
                << "trans " << trans << " beta " << beta << " item " << b
                << " (" << i << ", " << j << ")";
          }
      }
    }
}

// Routing: exact indices and counts on hand-built cases.
//===----------------------------------------------------------------------===//
// bf16 products (muirrt_bgemm, muirrt_bsyrk): bf16 operands, f32
// accumulation, the result rounded once to bf16 to nearest even
//===----------------------------------------------------------------------===//

uint16_t bf16Of(float exact) {
  uint32_t bits;
  std::memcpy(&bits, &exact, sizeof bits);
  EXPECT_EQ(bits & 0xffffu, 0u) << exact << " is no bf16 value";
  return static_cast<uint16_t>(bits >> 16);
}

double valueOf(uint16_t v) {
  uint32_t bits = static_cast<uint32_t>(v) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// v rounded to bf16 (8 significant bits) to nearest, ties to even: by
// scaling, independently of the runtime's bit trick. v is a normal float.
uint16_t roundedToBf16(double v) {
  if (v == 0.0)
    return bf16Of(static_cast<float>(v));
  int exp;
  std::frexp(v, &exp); // |v| in [2^(exp-1), 2^exp)
  double ulp = std::ldexp(1.0, exp - 8);
  return bf16Of(static_cast<float>(std::nearbyint(v / ulp) * ulp));
}

// Integers in [-range, range], which bf16 holds exactly for range <= 256.
std::vector<uint16_t> integerBf16(size_t n, int range, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> dist(-range, range);
  std::vector<uint16_t> v(n);
  for (uint16_t &x : v)
    x = bf16Of(static_cast<float>(dist(gen)));
  return v;
}

// Uniform in [-1, 1), rounded to bf16.
std::vector<uint16_t> randomBf16(size_t n, unsigned seed) {
  std::vector<float> f = randomVector(n, seed);
  std::vector<uint16_t> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = roundedToBf16(f[i]);
  return v;
}

// One item of the bf16 GEMM in double: want = alpha op(A) op(B) + beta
// Acc, and the sum of the magnitudes of its terms (the f32 accumulation's
// error is a small multiple of 2^-24 of it).
void refBgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha,
              const uint16_t *a, const uint16_t *b, double beta,
              const uint16_t *acc, std::vector<double> &want,
              std::vector<double> &magnitude) {
  want.assign(static_cast<size_t>(m * n), 0.0);
  magnitude.assign(static_cast<size_t>(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0.0, abs = 0.0;
      for (int64_t p = 0; p < k; ++p) {
        double term = valueOf(ta ? a[p * m + i] : a[i * k + p]) *
                      valueOf(tb ? b[j * k + p] : b[p * n + j]);
        sum += term;
        abs += std::fabs(term);
      }
      double r = alpha * sum, mag = std::fabs(alpha) * abs;
      if (beta != 0.0) {
        r += beta * valueOf(acc[i * n + j]);
        mag += std::fabs(beta * valueOf(acc[i * n + j]));
      }
      want[static_cast<size_t>(i * n + j)] = r;
      magnitude[static_cast<size_t>(i * n + j)] = mag;
    }
}

// Exact: every term, partial sum and alpha/beta step is exact in f32, so
// the result is the exact value rounded once (the bits are determined).
// Random: within half a bf16 ulp (2^-8 relative) plus the f32
// accumulation's error.
void expectBf16(const uint16_t *got, const std::vector<double> &want,
                const std::vector<double> &magnitude, bool exact,
                const std::string &what) {
  for (size_t i = 0; i < want.size(); ++i) {
    if (exact) {
      // A zero's sign is the library's (OpenBLAS: 0 + -0, oneDNN: -0.5 * 0).
      bool zero = want[i] == 0.0;
      ASSERT_EQ(zero ? got[i] & 0x7fff : got[i],
                zero ? 0 : roundedToBf16(want[i]))
          << what << " at " << i << ": got " << valueOf(got[i]) << ", want "
          << want[i];
      continue;
    }
    double tol =
        std::ldexp(std::fabs(want[i]), -8) + std::ldexp(magnitude[i], -18);
    ASSERT_NEAR(valueOf(got[i]), want[i], tol) << what << " at " << i;
  }
}

struct GemmShape {
  int64_t batch, m, n, k;
};

// Which calls a case makes: its alphas, its accumulator forms (0: beta 0,
// C NaN and ignored; 1: beta 1, C the accumulator (acc NULL); 2: beta 0.25,
// acc == c; 3: beta 0.25, a separate acc, C NaN) and whether it also runs
// random inputs besides the exact ones.
struct BgemmCase {
  GemmShape s;
  std::vector<float> alphas;
  std::vector<int> forms;
  bool random;
};

// Each call on 1 and 2 threads against one reference. Products of 1e8
// flops and more run on two threads when there are two.
TEST(Bgemm, TransposesBatchAlphaBetaAccumulator) {
  const int32_t threads = muirrt_blas_threads();
  const uint16_t nan = 0x7fc0;
  const std::vector<BgemmCase> cases = {
      // Spans the AMX tiles' edges.
      {{3, 37, 70, 33}, {1.0f, -0.5f}, {0, 1, 2, 3}, true},
      // Blocks K.
      {{2, 130, 96, 600}, {-0.5f}, {0, 2, 3}, true},
      // 1.02e8 flops.
      {{1, 256, 200, 1000}, {-0.5f}, {2, 3}, false}};
  for (const BgemmCase &bc : cases)
    for (bool exact : {true, false}) {
      if (!exact && !bc.random)
        continue;
      const GemmShape s = bc.s;
      const int64_t na = s.batch * s.m * s.k, nb = s.batch * s.k * s.n,
                    nc = s.batch * s.m * s.n;
      // |a b| <= 16 and k <= 1000: every partial sum is an integer below
      // 2^24, exact in f32.
      std::vector<uint16_t> a =
          exact ? integerBf16(na, 4, 21) : randomBf16(na, 21);
      std::vector<uint16_t> b =
          exact ? integerBf16(nb, 4, 22) : randomBf16(nb, 22);
      std::vector<uint16_t> acc =
          exact ? integerBf16(nc, 200, 23) : randomBf16(nc, 23);
      for (int ta = 0; ta < 2; ++ta)
        for (int tb = 0; tb < 2; ++tb)
          for (float alpha : bc.alphas)
            for (int form : bc.forms) {
              float beta = form == 0 ? 0.0f : form == 1 ? 1.0f : 0.25f;
              std::vector<std::vector<double>> want(s.batch),
                  magnitude(s.batch);
              for (int64_t i = 0; i < s.batch; ++i)
                refBgemm(ta, tb, s.m, s.n, s.k, alpha, a.data() + i * s.m * s.k,
                         b.data() + i * s.k * s.n, beta,
                         acc.data() + i * s.m * s.n, want[i], magnitude[i]);
              for (int32_t t : {1, 2}) {
                muirrt_set_blas_threads(t);
                std::vector<uint16_t> c(nc, nan);
                const uint16_t *accArg = nullptr;
                if (form == 1 || form == 2)
                  c = acc;
                if (form == 2)
                  accArg = c.data();
                if (form == 3)
                  accArg = acc.data();
                muirrt_bgemm(s.batch, ta, tb, s.m, s.n, s.k, alpha, a.data(),
                             b.data(), beta, c.data(), accArg);
                for (int64_t i = 0; i < s.batch; ++i)
                  expectBf16(
                      c.data() + i * s.m * s.n, want[i], magnitude[i], exact,
                      std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
                          std::to_string(s.k) + (exact ? " exact" : " random") +
                          " ta=" + std::to_string(ta) +
                          " tb=" + std::to_string(tb) +
                          " alpha=" + std::to_string(alpha) + " form " +
                          std::to_string(form) + " item " + std::to_string(i) +
                          ", " + std::to_string(t) + " thread(s)");
              }
            }
    }
  muirrt_set_blas_threads(threads);
}

// A A^T and A^T A (A k x n) against the GEMM's reference on 1 and 2
// threads, C exactly symmetric: n = 37 as one product, n = 1030 in blocks
// of the upper triangle (the last 6 columns wide) run side by side on two
// threads (1.2e8 flops).
TEST(Bsyrk, BothTransposesBlocksAndSymmetry) {
  const int32_t threads = muirrt_blas_threads();
  const uint16_t nan = 0x7fc0;
  for (GemmShape s : {GemmShape{2, 37, 37, 45}, GemmShape{1, 1030, 1030, 100}})
    for (bool exact : {true, false}) {
      const int64_t n = s.n, k = s.k, na = s.batch * n * k,
                    nc = s.batch * n * n;
      std::vector<uint16_t> a =
          exact ? integerBf16(na, 4, 31) : randomBf16(na, 31);
      // A symmetric accumulator, as the contract assumes.
      std::vector<uint16_t> r =
          exact ? integerBf16(nc, 200, 32) : randomBf16(nc, 32);
      std::vector<uint16_t> acc(nc);
      for (int64_t b = 0; b < s.batch; ++b)
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < n; ++j)
            acc[b * n * n + i * n + j] =
                r[b * n * n + std::min(i, j) * n + std::max(i, j)];
      for (int32_t trans : {0, 1})
        // 0: beta 0 (C NaN); 1: beta 1, C the accumulator; 2: a separate
        // accumulator (C NaN). Random inputs of the large case: form 2.
        for (int form = 0; form < 3; ++form) {
          if (!exact && n > 100 && form != 2)
            continue;
          float beta = form == 0 ? 0.0f : form == 1 ? 1.0f : -0.25f;
          // op(A) op(A)^T as a GEMM: A A^T, or A^T A with A k x n.
          std::vector<std::vector<double>> want(s.batch), magnitude(s.batch);
          for (int64_t b = 0; b < s.batch; ++b)
            refBgemm(trans, !trans, n, n, k, 2.0, a.data() + b * n * k,
                     a.data() + b * n * k, beta, acc.data() + b * n * n,
                     want[b], magnitude[b]);
          for (int32_t t : {1, 2}) {
            muirrt_set_blas_threads(t);
            std::vector<uint16_t> c(nc, nan);
            if (form == 1)
              c = acc;
            muirrt_bsyrk(s.batch, trans, n, k, 2.0f, a.data(), beta, c.data(),
                         form == 2 ? acc.data() : nullptr);
            for (int64_t b = 0; b < s.batch; ++b) {
              std::string what = std::to_string(n) + "x" + std::to_string(k) +
                                 (exact ? " exact" : " random") +
                                 " trans=" + std::to_string(trans) + " form " +
                                 std::to_string(form) + " item " +
                                 std::to_string(b) + ", " + std::to_string(t) +
                                 " thread(s)";
              const uint16_t *cb = c.data() + b * n * n;
              expectBf16(cb, want[b], magnitude[b], exact, what);
              for (int64_t i = 0; i < n; ++i)
                for (int64_t j = 0; j < i; ++j)
                  ASSERT_EQ(cb[i * n + j], cb[j * n + i])
                      << what << " symmetric at (" << i << ", " << j << ")";
            }
          }
        }
    }
  muirrt_set_blas_threads(threads);
}

// The layout-invariant mode runs one thread and needs a matrix's bits not
// to depend on the matrices batched with it: a batch's items equal the
// same products called one by one.
TEST(Bgemm, OneThreadItemBitsIndependentOfTheBatch) {
  const int32_t threads = muirrt_blas_threads();
  muirrt_set_blas_threads(1);
  for (GemmShape s : {GemmShape{5, 64, 96, 200}, GemmShape{3, 256, 256, 512}}) {
    const int64_t na = s.batch * s.m * s.k, nb = s.batch * s.k * s.n,
                  nc = s.batch * s.m * s.n;
    std::vector<uint16_t> a = randomBf16(na, 41), b = randomBf16(nb, 42);
    std::vector<uint16_t> all(nc), one(s.m * s.n);
    muirrt_bgemm(s.batch, 0, 1, s.m, s.n, s.k, 1.0f, a.data(), b.data(), 0.0f,
                 all.data(), nullptr);
    for (int64_t i = 0; i < s.batch; ++i) {
      muirrt_bgemm(1, 0, 1, s.m, s.n, s.k, 1.0f, a.data() + i * s.m * s.k,
                   b.data() + i * s.k * s.n, 0.0f, one.data(), nullptr);
      ASSERT_TRUE(
          std::equal(one.begin(), one.end(), all.begin() + i * s.m * s.n))
          << s.m << "x" << s.n << "x" << s.k << " item " << i;
    }
    if (s.m != s.n)
      continue;
    muirrt_bsyrk(s.batch, 0, s.n, s.k, 1.0f, a.data(), 0.0f, all.data(),
                 nullptr);
    for (int64_t i = 0; i < s.batch; ++i) {
      muirrt_bsyrk(1, 0, s.n, s.k, 1.0f, a.data() + i * s.n * s.k, 0.0f,
                   one.data(), nullptr);
      ASSERT_TRUE(
          std::equal(one.begin(), one.end(), all.begin() + i * s.n * s.n))
          << "syrk " << s.n << "x" << s.k << " item " << i;
    }
  }
  muirrt_set_blas_threads(threads);
}

TEST(Bgemm, EmptyProductScalesTheAccumulator) {
  std::vector<uint16_t> acc = {bf16Of(3.0f), bf16Of(-5.0f), bf16Of(0.5f),
                               bf16Of(7.0f)};
  std::vector<uint16_t> c(4, 0x7fc0);
  muirrt_bgemm(1, 0, 0, 2, 2, 0, 1.0f, nullptr, nullptr, 0.5f, c.data(),
               acc.data());
  for (size_t i = 0; i < c.size(); ++i)
    EXPECT_EQ(c[i], roundedToBf16(0.5 * valueOf(acc[i]))) << i;
  muirrt_bsyrk(1, 0, 2, 0, 1.0f, nullptr, 0.0f, c.data(), nullptr);
  for (uint16_t v : c)
    EXPECT_EQ(v, 0);
}

TEST(Route, TiesGoToTheLowerExpertAndCountsAdd) {
  // Token 0: experts 1 and 3 tie for the best logit; token 1: all equal.
  const float logits[] = {1.0f, 3.0f, 2.0f, 3.0f, 0.5f, 0.5f, 0.5f, 0.5f};
  int64_t idx[4] = {-1, -1, -1, -1}, counts[4] = {9, 9, 9, 9};
  float w[4];
  muirrt_route(2, 4, 2, logits, nullptr, /*softmax*/ 0, 0, 0, 1, 1, 1.0f, idx,
               w, counts);
  EXPECT_EQ(idx[0], 1);
  EXPECT_EQ(idx[1], 3);
  EXPECT_EQ(idx[2], 0);
  EXPECT_EQ(idx[3], 1);
  const int64_t wantCounts[4] = {1, 2, 0, 1};
  for (int e = 0; e < 4; ++e)
    EXPECT_EQ(counts[e], wantCounts[e]) << "expert " << e;
  // softmax(1, 3, 2, 3) at expert 1: e^3 / (e + 2 e^3 + e^2).
  double z = std::exp(1.0) + 2 * std::exp(3.0) + std::exp(2.0);
  EXPECT_NEAR(w[0], std::exp(3.0) / z, 1e-7);
  EXPECT_NEAR(w[1], std::exp(3.0) / z, 1e-7);
  EXPECT_NEAR(w[2], 0.25, 1e-7);
  EXPECT_NEAR(w[3], 0.25, 1e-7);
}

TEST(Route, GroupsBiasNormalizeScaling) {
  // 4 experts in 2 groups, 1 group kept, top-2, sigmoid scores. Expert 0
  // has the best single score, but group {2, 3} has the best sum of two,
  // so only 2 and 3 compete. The bias lifts expert 3 over 2 for the
  // choice; the weights stay the unbiased scores, normalised, times 2.
  const float logits[] = {2.0f, -3.0f, 1.0f, 0.9f};
  const float bias[] = {0.0f, 0.0f, 0.0f, 0.1f};
  int64_t idx[2], counts[4];
  float w[2];
  muirrt_route(1, 4, 2, logits, bias, /*sigmoid*/ 1, 0, /*normalize*/ 1, 2, 1,
               2.0f, idx, w, counts);
  EXPECT_EQ(idx[0], 3);
  EXPECT_EQ(idx[1], 2);
  auto sig = [](double x) { return 1.0 / (1.0 + std::exp(-x)); };
  double s3 = sig(0.9), s2 = sig(1.0);
  EXPECT_NEAR(w[0], 2.0 * s3 / (s3 + s2), 1e-6);
  EXPECT_NEAR(w[1], 2.0 * s2 / (s3 + s2), 1e-6);
  const int64_t wantCounts[4] = {0, 0, 1, 1};
  for (int e = 0; e < 4; ++e)
    EXPECT_EQ(counts[e], wantCounts[e]) << "expert " << e;
  // Without groups expert 0 wins.
  muirrt_route(1, 4, 2, logits, bias, 1, 0, 1, 1, 1, 2.0f, idx, w, counts);
  EXPECT_EQ(idx[0], 0);
  EXPECT_EQ(idx[1], 3);
}

// Grouped GEMM: empty groups, zero rows past the total, and an overflow of
// the static bound that names the expert and the counts.
TEST(GroupedGemm, RaggedGroupsAndOverflow) {
  const int64_t experts = 3, rows = 6, k = 4, n = 5;
  std::vector<float> in = randomVector(rows * k, 21);
  std::vector<float> w = randomVector(experts * k * n, 22);
  std::vector<float> out(rows * n, std::numeric_limits<float>::quiet_NaN());
  const int64_t sizes[3] = {2, 0, 3}; // 5 of 6 rows; row 5 stays zero
  muirrt_grouped_gemm(experts, rows, k, n, in.data(), w.data(), 0, sizes,
                      out.data());
  const int64_t expertOf[5] = {0, 0, 2, 2, 2};
  for (int64_t r = 0; r < 5; ++r)
    for (int64_t j = 0; j < n; ++j) {
      double want = 0.0;
      for (int64_t p = 0; p < k; ++p)
        want += static_cast<double>(in[r * k + p]) *
                w[expertOf[r] * k * n + p * n + j];
      ASSERT_NEAR(out[r * n + j], want, 1e-5) << "row " << r;
    }
  for (int64_t j = 0; j < n; ++j)
    EXPECT_EQ(out[5 * n + j], 0.0f);
  const int64_t tooMany[3] = {2, 3, 2};
  EXPECT_DEATH(muirrt_grouped_gemm(experts, rows, k, n, in.data(), w.data(), 0,
                                   tooMany, out.data()),
               "expert 2 has 2 rows, but the experts before it hold 5 of the "
               "6-row bound \\(sizes: 2 3 2\\)");
}

// The bf16-operand grouped products (muirrt_grouped_gemm_bf16, _wgrad_bf16):
// each operand rounded to bf16 to nearest even, the products exact and
// accumulated in f32. Against a double reference on the rounded operands,
// over ragged groups (an empty one, sizes no primitive was made for) in
// both layouts; the f32 reference differs by far more, so the rounding is
// seen.
TEST(GroupedGemm, Bf16OperandsMatchTheRoundedDoubleReference) {
  const int64_t experts = 3, rows = 160, k = 96, n = 40;
  const int64_t sizes[3] = {37, 0, 90}; // 127 of 160 rows
  const int64_t first[4] = {0, 37, 37, 127};
  std::vector<float> in = randomVector(rows * k, 31);
  std::vector<float> w = randomVector(experts * k * n, 32);
  std::vector<float> g = randomVector(rows * n, 33);
  auto r = [](float f) {
    uint32_t bits = static_cast<uint32_t>(muirrt_bf16_round(f)) << 16;
    float v;
    std::memcpy(&v, &bits, sizeof v);
    return static_cast<double>(v);
  };
  for (int32_t trans = 0; trans < 2; ++trans) {
    // w[e] is [k, n], or [n, k] with trans.
    auto wAt = [&](int64_t e, int64_t p, int64_t j) {
      return w[e * k * n + (trans ? j * k + p : p * n + j)];
    };
    std::vector<float> out(rows * n, std::numeric_limits<float>::quiet_NaN());
    muirrt_grouped_gemm_bf16(experts, rows, k, n, in.data(), w.data(), trans,
                             sizes, out.data());
    double worst = 0, roundingSeen = 0;
    for (int64_t e = 0; e < experts; ++e)
      for (int64_t row = first[e]; row < first[e + 1]; ++row)
        for (int64_t j = 0; j < n; ++j) {
          double want = 0, exact = 0;
          for (int64_t p = 0; p < k; ++p) {
            want += r(in[row * k + p]) * r(wAt(e, p, j));
            exact += double(in[row * k + p]) * wAt(e, p, j);
          }
          worst = std::max(worst, std::abs(out[row * n + j] - want));
          roundingSeen = std::max(roundingSeen, std::abs(exact - want));
        }
    EXPECT_LT(worst, 2e-5) << "trans " << trans;
    EXPECT_GT(roundingSeen, 1e-3) << "trans " << trans;
    for (int64_t j = 127 * n; j < rows * n; ++j)
      ASSERT_EQ(out[j], 0.0f) << "a row past the groups, trans " << trans;

    // Weight gradients: [k, n] = in_e^T g_e, or [n, k] = g_e^T in_e.
    std::vector<float> dw(experts * k * n, 7.0f);
    muirrt_grouped_gemm_wgrad_bf16(experts, rows, k, n, in.data(), g.data(),
                                   trans, sizes, dw.data());
    worst = 0;
    for (int64_t e = 0; e < experts; ++e)
      for (int64_t p = 0; p < k; ++p)
        for (int64_t j = 0; j < n; ++j) {
          double want = 0;
          for (int64_t row = first[e]; row < first[e + 1]; ++row)
            want += r(in[row * k + p]) * r(g[row * n + j]);
          float got = dw[e * k * n + (trans ? j * k + p : p * n + j)];
          worst = std::max(worst, std::abs(got - want));
        }
    EXPECT_LT(worst, 2e-5) << "wgrad, trans " << trans;
  }
  const int64_t tooMany[3] = {100, 0, 90};
  std::vector<float> out(rows * n);
  EXPECT_DEATH(muirrt_grouped_gemm_bf16(experts, rows, k, n, in.data(),
                                        w.data(), 0, tooMany, out.data()),
               "muirrt_grouped_gemm_bf16.*expert 2 has 90 rows, but the "
               "experts before it hold 100 of the 160-row bound");
}

// muirrt_grouped_gemm_add: the product added to the output over the
// groups' rows (f32 and bf16 operands), the rows past them untouched.
TEST(GroupedGemm, AddAccumulatesOverTheGroupsOnly) {
  const int64_t experts = 3, rows = 70, k = 24, n = 16;
  const int64_t sizes[3] = {20, 0, 33}; // 53 of 70 rows
  std::vector<float> in = randomVector(rows * k, 41);
  std::vector<float> w = randomVector(experts * n * k, 42);
  std::vector<float> base = randomVector(rows * n, 43);
  for (int32_t bf16 = 0; bf16 < 2; ++bf16) {
    std::vector<float> product(rows * n), sum = base;
    (bf16 ? muirrt_grouped_gemm_bf16 : muirrt_grouped_gemm)(
        experts, rows, k, n, in.data(), w.data(), 1, sizes, product.data());
    muirrt_grouped_gemm_add(experts, rows, k, n, in.data(), w.data(), 1, bf16,
                            sizes, sum.data());
    for (int64_t i = 0; i < 53 * n; ++i)
      ASSERT_NEAR(sum[i], base[i] + product[i], 1e-5)
          << "element " << i << ", bf16 " << bf16;
    for (int64_t i = 53 * n; i < rows * n; ++i)
      ASSERT_EQ(sum[i], base[i]) << "a row past the groups, bf16 " << bf16;
  }
}

TEST(FrobeniusNormalize, MatchesDoubleReferenceAndInPlace) {
  const int64_t batch = 3, numel = 10;
  const float eps = 1e-3f;
  std::vector<float> in = randomVector(batch * numel, 8);
  for (int64_t j = 0; j < numel; ++j)
    in[2 * numel + j] = 0.0f; // an all-zero item stays zero (eps guards)
  std::vector<float> out(in.size());
  muirrt_frobenius_normalize(batch, numel, eps, in.data(), out.data());
  for (int64_t b = 0; b < batch; ++b) {
    double ss = 0.0;
    for (int64_t j = 0; j < numel; ++j)
      ss += static_cast<double>(in[b * numel + j]) * in[b * numel + j];
    double denom = std::sqrt(ss) + eps;
    for (int64_t j = 0; j < numel; ++j)
      ASSERT_NEAR(out[b * numel + j], in[b * numel + j] / denom, 1e-6)
          << "item " << b << " elem " << j;
  }
  std::vector<float> inplace = in;
  muirrt_frobenius_normalize(batch, numel, eps, inplace.data(), inplace.data());
  EXPECT_EQ(inplace, out);
}

// The documented order of the norm's sum (Runtime.h / Kernels.cpp): 16
// partial sums over j mod 16 in ascending j, added pairwise (l + 8 into l,
// then 4, 2, 1). Bit for bit that order, for a length with a tail, on 1 and
// 2 threads.
TEST(FrobeniusNormalize, SumOrderIsTheDocumentedOne) {
  const int64_t batch = 3, numel = 1000 + 7;
  std::vector<float> in = randomVector(batch * numel, 21);
  for (int64_t i = 0; i < batch * numel; i += 5)
    in[i] *= 1e4f; // magnitudes apart, so that orders differ
  int32_t threads = muirrt_blas_threads();
  for (int32_t t : {1, 2}) {
    muirrt_set_blas_threads(t);
    std::vector<float> out(in.size());
    muirrt_frobenius_normalize(batch, numel, 1e-7f, in.data(), out.data());
    for (int64_t b = 0; b < batch; ++b) {
      double lane[16] = {};
      for (int64_t j = 0; j < numel; ++j) {
        double v = in[b * numel + j];
        lane[j % 16] += v * v;
      }
      for (int w = 8; w > 0; w /= 2)
        for (int l = 0; l < w; ++l)
          lane[l] += lane[l + w];
      float scale = static_cast<float>(
          1.0 / (std::sqrt(lane[0]) + static_cast<double>(1e-7f)));
      for (int64_t j = 0; j < numel; ++j)
        ASSERT_EQ(out[b * numel + j], in[b * numel + j] * scale)
            << "threads " << t << " item " << b << " elem " << j;
    }
  }
  muirrt_set_blas_threads(threads);
}

// The bf16 output is the f32 normalisation's elements rounded to nearest
// even: each is one of the two bf16 values around the f32 result, the
// nearer (the even one on a tie), checked in double.
TEST(FrobeniusNormalize, Bf16OutputIsTheF32ResultRoundedToNearestEven) {
  const int64_t batch = 4, numel = 333;
  std::vector<float> in = randomVector(batch * numel, 5);
  in[7] = 0.0f;
  std::vector<float> ref(in.size());
  std::vector<uint16_t> out(in.size());
  muirrt_frobenius_normalize(batch, numel, 1e-7f, in.data(), ref.data());
  muirrt_frobenius_normalize_bf16(batch, numel, 1e-7f, in.data(), out.data());
  auto widen = [](uint16_t h) {
    uint32_t bits = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return static_cast<double>(f);
  };
  for (size_t i = 0; i < in.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &ref[i], sizeof bits);
    uint16_t down = static_cast<uint16_t>(bits >> 16);
    uint16_t up = static_cast<uint16_t>(down + ((bits & 0xffffu) ? 1 : 0));
    double x = ref[i], dd = std::fabs(x - widen(down)),
           du = std::fabs(widen(up) - x);
    uint16_t want = dd < du ? down : du < dd ? up : ((down & 1) ? up : down);
    ASSERT_EQ(out[i], want) << "element " << i << " of " << ref[i];
  }
}

TEST(FrobeniusNormalize, F64ExactConstructionAndInPlace) {
  // Items whose norms are exact: (3, 4) * 2^k has norm 5 * 2^k, so with
  // eps = 0 each element divides exactly (x / 5 in double, rounded once:
  // the reference is computed the same way, 1 / (5 * 2^k) times x).
  const int64_t batch = 3, numel = 2;
  std::vector<double> in = {3.0, 4.0, 0.75, 1.0, 0.0, 0.0};
  std::vector<double> out(in.size(), -1.0);
  muirrt_frobenius_normalize_f64(batch, numel, 0.0, in.data(), out.data());
  const double norms[2] = {5.0, 1.25};
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t j = 0; j < numel; ++j)
      EXPECT_EQ(out[b * numel + j], in[b * numel + j] * (1.0 / norms[b]))
          << "item " << b << " elem " << j;
  // An all-zero item with eps > 0 stays zero.
  muirrt_frobenius_normalize_f64(batch, numel, 1e-12, in.data(), out.data());
  EXPECT_EQ(out[4], 0.0);
  EXPECT_EQ(out[5], 0.0);
  // Against a long double reference on random data, and in place.
  std::vector<float> r = randomVector(4 * 50, 11);
  std::vector<double> x(r.begin(), r.end()), y(x.size());
  muirrt_frobenius_normalize_f64(4, 50, 1e-7, x.data(), y.data());
  for (int64_t b = 0; b < 4; ++b) {
    long double ss = 0.0L;
    for (int64_t j = 0; j < 50; ++j)
      ss += static_cast<long double>(x[b * 50 + j]) * x[b * 50 + j];
    long double denom = std::sqrt(ss) + 1e-7L;
    for (int64_t j = 0; j < 50; ++j)
      ASSERT_NEAR(y[b * 50 + j],
                  static_cast<double>(x[b * 50 + j] / denom), 1e-15)
          << "item " << b << " elem " << j;
  }
  std::vector<double> inplace = x;
  muirrt_frobenius_normalize_f64(4, 50, 1e-7, inplace.data(), inplace.data());
  EXPECT_EQ(inplace, y);
}

// The parts of muirrt_parallel_range cover [0, count) once, whatever the
// thread count; a call from a second thread while one runs still covers its
// range (on its own thread); after the call every part has run.
TEST(ParallelRange, PartsCoverTheRangeOnce) {
  int32_t threads = muirrt_blas_threads();
  struct Marks {
    std::vector<std::atomic<int>> seen;
    std::atomic<int64_t> parts{0};
    explicit Marks(int64_t n) : seen(static_cast<size_t>(n)) {}
  };
  auto mark = [](void *ctx, int64_t lo, int64_t hi) {
    auto &m = *static_cast<Marks *>(ctx);
    ASSERT_LT(lo, hi);
    for (int64_t i = lo; i < hi; ++i)
      m.seen[static_cast<size_t>(i)]++;
    m.parts++;
  };
  for (int32_t t : {1, 2, 3, 8})
    for (int64_t count : {1, 2, 3, 7, 1000}) {
      muirrt_set_blas_threads(t);
      Marks m(count);
      muirrt_parallel_range(mark, &m, count);
      for (int64_t i = 0; i < count; ++i)
        ASSERT_EQ(m.seen[static_cast<size_t>(i)].load(), 1)
            << "threads " << t << " count " << count << " index " << i;
      EXPECT_EQ(m.parts.load(), std::min<int64_t>(t, count));
    }
  muirrt_set_blas_threads(2);
  Marks a(100000), b(100000);
  std::thread other([&] {
    for (int r = 0; r < 50; ++r)
      muirrt_parallel_range(mark, &b, 100000);
  });
  for (int r = 0; r < 50; ++r)
    muirrt_parallel_range(mark, &a, 100000);
  other.join();
  for (size_t i = 0; i < a.seen.size(); ++i) {
    ASSERT_EQ(a.seen[i].load(), 50) << i;
    ASSERT_EQ(b.seen[i].load(), 50) << i;
  }
  muirrt_parallel_range(mark, &a, 0); // nothing to run
  muirrt_set_blas_threads(threads);
}

TEST(Transpose, NonSquareBatch) {
  const int64_t batch = 2, rows = 37, cols = 70;
  std::vector<float> in = randomVector(batch * rows * cols, 9);
  std::vector<float> out(in.size(), -7.0f);
  muirrt_transpose(batch, rows, cols, in.data(), out.data());
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        ASSERT_EQ(out[b * rows * cols + j * rows + i],
                  in[b * rows * cols + i * cols + j]);
}

TEST(Observations, StoreReadAndClear) {
  muirrt_observations_clear();
  int64_t numel = -1;
  EXPECT_EQ(muirrt_observation(3, &numel), nullptr);
  EXPECT_EQ(numel, 0);
  float data[3] = {1.0f, 2.0f, 3.0f};
  muirrt_observe(3, data, 3);
  data[0] = 9.0f; // the runtime must have copied
  const float *got = muirrt_observation(3, &numel);
  ASSERT_NE(got, nullptr);
  ASSERT_EQ(numel, 3);
  EXPECT_EQ(got[0], 1.0f);
  EXPECT_EQ(got[2], 3.0f);
  EXPECT_EQ(muirrt_observation(0, &numel), nullptr);
  muirrt_observe(3, data, 1);
  got = muirrt_observation(3, &numel);
  ASSERT_EQ(numel, 1);
  EXPECT_EQ(got[0], 9.0f);
  muirrt_observations_clear();
  EXPECT_EQ(muirrt_observation(3, &numel), nullptr);
}

TEST(Counters, CountCallsAndFlops) {
  muirrt_counters_reset();
  const int64_t m = 4, n = 3, k = 5;
  std::vector<float> a(2 * m * k, 1.0f), b(2 * k * n, 1.0f), c(2 * m * n);
  muirrt_sgemm(2, 0, 0, m, n, k, 1.0f, a.data(), b.data(), 0.0f, c.data(),
               nullptr);
  std::vector<float> s(3 * 4 * 4);
  std::vector<float> sa(3 * 4 * 6, 1.0f);
  muirrt_ssyrk(3, 0, 4, 6, 1.0f, sa.data(), 0.0f, s.data(), nullptr);
  muirrt_frobenius_normalize(1, 4, 0.0f, sa.data(), sa.data());
  muirrt_transpose(1, 2, 2, sa.data(), s.data());
  MuirRtCounters got;
  muirrt_counters_get(&got);
  EXPECT_EQ(got.gemm_calls, 1);
  EXPECT_EQ(got.syrk_calls, 1);
  EXPECT_EQ(got.other_calls, 2);
  // 2 * 2*4*3*5 for the GEMM, 3 * 4*5*6 for the SYRK.
  EXPECT_DOUBLE_EQ(got.flops, 240.0 + 360.0);
  muirrt_counters_reset();
  muirrt_counters_get(&got);
  EXPECT_EQ(got.gemm_calls, 0);
  EXPECT_EQ(got.syrk_calls, 0);
  EXPECT_EQ(got.other_calls, 0);
  EXPECT_EQ(got.flops, 0.0);
}

//===----------------------------------------------------------------------===//
// Tensors and seeded init
//===----------------------------------------------------------------------===//

TEST(Tensors, AddFindAndErrors) {
  Ctx ctx = makeCtx();
  int64_t shape[2] = {3, 5};
  int32_t w = muirrt_tensor_add(ctx.get(), "w", 2, shape, MUIRRT_ROLE_PARAM);
  ASSERT_EQ(w, 0);
  EXPECT_EQ(muirrt_tensor_find(ctx.get(), "w"), 0);
  EXPECT_EQ(muirrt_tensor_find(ctx.get(), "nope"), -1);
  EXPECT_STREQ(muirrt_tensor_name(ctx.get(), 0), "w");
  EXPECT_EQ(muirrt_tensor_rank(ctx.get(), 0), 2);
  EXPECT_EQ(muirrt_tensor_shape(ctx.get(), 0)[1], 5);
  EXPECT_EQ(muirrt_tensor_numel(ctx.get(), 0), 15);
  EXPECT_EQ(muirrt_tensor_role(ctx.get(), 0), MUIRRT_ROLE_PARAM);
  float *d = muirrt_tensor_data(ctx.get(), 0);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(d) % 64, 0u);
  for (int i = 0; i < 15; ++i)
    EXPECT_EQ(d[i], 0.0f);

  EXPECT_EQ(muirrt_tensor_add(ctx.get(), "w", 2, shape, 0), -1);
  EXPECT_NE(std::string(muirrt_last_error()).find("'w'"), std::string::npos);
  int64_t big[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  EXPECT_EQ(muirrt_tensor_add(ctx.get(), "r9", 9, big, 0), -1);
  int64_t zero[2] = {3, 0};
  EXPECT_EQ(muirrt_tensor_add(ctx.get(), "z", 2, zero, 0), -1);
  EXPECT_EQ(muirrt_tensor_count(ctx.get()), 1);
  // Scalars are fine.
  EXPECT_EQ(muirrt_tensor_add(ctx.get(), "s", 0, nullptr, 2), 1);
  EXPECT_EQ(muirrt_tensor_numel(ctx.get(), 1), 1);
}

TEST(SeededInit, DeterministicAndRoleDependent) {
  const int64_t shape[2] = {100, 100};
  auto build = [&](bool extraFirst) {
    Ctx ctx = makeCtx();
    if (extraFirst)
      muirrt_tensor_add(ctx.get(), "extra", 2, shape, MUIRRT_ROLE_PARAM);
    muirrt_tensor_add(ctx.get(), "p", 2, shape, MUIRRT_ROLE_PARAM);
    muirrt_tensor_add(ctx.get(), "g", 2, shape, MUIRRT_ROLE_GRAD);
    muirrt_tensor_add(ctx.get(), "s", 2, shape, MUIRRT_ROLE_STATE);
    return ctx;
  };
  Ctx c1 = build(false), c2 = build(true), c3 = build(false);
  // State must be zeroed even if it held something.
  muirrt_tensor_data(c1.get(), 2)[17] = 5.0f;
  muirrt_init_from_seed(c1.get(), 42);
  muirrt_init_from_seed(c2.get(), 42);
  muirrt_init_from_seed(c3.get(), 43);
  const int64_t n = 10000;
  auto data = [&](const Ctx &c, const char *name) {
    const float *p = muirrt_tensor_data(const_cast<MuirRtContext *>(c.get()),
                                        muirrt_tensor_find(c.get(), name));
    return std::vector<float>(p, p + n);
  };
  // Same seed and name: same values, regardless of other tensors.
  EXPECT_EQ(data(c1, "p"), data(c2, "p"));
  EXPECT_EQ(data(c1, "g"), data(c2, "g"));
  // Different seed or different name: different values.
  EXPECT_NE(data(c1, "p"), data(c3, "p"));
  EXPECT_NE(data(c2, "p"), data(c2, "extra"));

  std::vector<float> s = data(c1, "s");
  for (float v : s)
    ASSERT_EQ(v, 0.0f);
  std::vector<float> g = data(c1, "g"), p = data(c1, "p");
  EXPECT_NEAR(sampleStd(g.data(), n), 1.0, 0.05);
  EXPECT_NEAR(sampleStd(p.data(), n), 0.02, 0.001);
  double mean = 0.0;
  for (float v : g)
    mean += v;
  EXPECT_NEAR(mean / n, 0.0, 0.05);
}

// A tensor of more than a million values is filled by several threads,
// each starting at its own pair of the stream: the values must be exactly
// the single stream's, written here from the runtime's contract (splitmix64
// seeded with the mixed seed xor FNV-1a of the name; Box-Muller pairs,
// u1 = (bits + 1) 2^-53, u2 = bits 2^-53).
TEST(SeededInit, ThreadedFillIsTheSingleStream) {
  const int64_t shape[1] = {3 * (int64_t(1) << 20) + 3}; // odd: a lone last
  Ctx ctx = makeCtx();
  muirrt_tensor_add(ctx.get(), "big.grad", 1, shape, MUIRRT_ROLE_GRAD);
  muirrt_tensor_set_init_std(ctx.get(), 0, 0.5);
  muirrt_init_from_seed(ctx.get(), 9);
  const float *got = muirrt_tensor_data(ctx.get(), 0);

  auto mix = [](uint64_t &state) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  uint64_t seedState = 9;
  uint64_t state = mix(seedState);
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : std::string("big.grad"))
    h = (h ^ c) * 0x100000001b3ULL;
  state ^= h;
  int64_t mismatches = 0;
  for (int64_t i = 0; i < shape[0]; i += 2) {
    double u1 = static_cast<double>((mix(state) >> 11) + 1) * 0x1.0p-53;
    double u2 = static_cast<double>(mix(state) >> 11) * 0x1.0p-53;
    double r = std::sqrt(-2.0 * std::log(u1));
    const double twoPi = 6.283185307179586476925286766559;
    mismatches += got[i] != static_cast<float>(0.5 * r * std::cos(twoPi * u2));
    if (i + 1 < shape[0])
      mismatches +=
          got[i + 1] != static_cast<float>(0.5 * r * std::sin(twoPi * u2));
  }
  EXPECT_EQ(mismatches, 0);
}

//===----------------------------------------------------------------------===//
// .npy files
//===----------------------------------------------------------------------===//

using Npy = TempDirTest;

TEST_F(Npy, RoundTripShapes) {
  const std::vector<std::vector<int64_t>> shapes = {{}, {5}, {3, 4}, {2, 3, 4}};
  for (const auto &shape : shapes) {
    int64_t numel = 1;
    for (int64_t d : shape)
      numel *= d;
    std::vector<float> v = randomVector(numel, 10 + shape.size());
    std::string p = path("t" + std::to_string(shape.size()) + ".npy");
    ASSERT_EQ(muirrt_npy_write_atomic(p.c_str(), v.data(),
                                      static_cast<int32_t>(shape.size()),
                                      shape.data()),
              0)
        << muirrt_last_error();
    // Data starts at a multiple of 64, right after the header.
    std::string bytes = readBytes(p);
    ASSERT_GE(bytes.size(), 10u);
    size_t hlen = static_cast<unsigned char>(bytes[8]) |
                  (static_cast<unsigned char>(bytes[9]) << 8);
    EXPECT_EQ((10 + hlen) % 64, 0u);
    EXPECT_EQ(bytes.size(), 10 + hlen + numel * sizeof(float));
    EXPECT_EQ(bytes.substr(10 + hlen), floatBytes(v));

    float *data = nullptr;
    int32_t rank = -1;
    int64_t got[8];
    ASSERT_EQ(muirrt_npy_read(p.c_str(), &data, &rank, got), 0)
        << muirrt_last_error();
    ASSERT_EQ(rank, static_cast<int32_t>(shape.size()));
    for (size_t i = 0; i < shape.size(); ++i)
      EXPECT_EQ(got[i], shape[i]);
    EXPECT_EQ(std::memcmp(data, v.data(), numel * sizeof(float)), 0);
    std::free(data);
  }
  // No temporaries left behind.
  EXPECT_EQ(listFiles(dir).size(), shapes.size());
}

TEST_F(Npy, WriterIsByteExact) {
  // What numpy.save writes for float32 shape (2, 3): sorted keys, 20 spare
  // spaces (21 growth digits minus len('2')) then 38 of padding, so the
  // data starts at byte 128.
  std::string header =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }" +
      std::string(58, ' ') + "\n";
  ASSERT_EQ(header.size(), 118u);
  std::vector<float> v = {1, 2, 3, 4, 5, 6};
  std::string want = npyV1(header, floatBytes(v));
  int64_t shape[2] = {2, 3};
  std::string p = path("x.npy");
  ASSERT_EQ(muirrt_npy_write_atomic(p.c_str(), v.data(), 2, shape), 0);
  EXPECT_EQ(readBytes(p), want);
}

TEST_F(Npy, ReadsHandWrittenV1AndV2) {
  std::vector<float> v = {0.5f, -1.0f, 2.0f, 3.25f, -4.0f, 8.0f};
  // Older NumPy aligned to 16 bytes: data at offset 80, not 64.
  std::string h1 =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }" +
      std::string(10, ' ') + "\n";
  std::string p1 = path("v1.npy");
  writeBytes(p1, npyV1(h1, floatBytes(v)));
  // Version 2.0: 32-bit header length; also other key order, double quotes
  // and no trailing comma.
  std::string h2 = "{\"shape\": (3, 2), \"fortran_order\": False, "
                   "\"descr\": \"<f4\"}";
  h2 += std::string(128 - 12 - h2.size() - 1, ' ') + "\n";
  std::string v2("\x93NUMPY\x02\x00", 8);
  uint32_t len = static_cast<uint32_t>(h2.size());
  for (int i = 0; i < 4; ++i)
    v2 += static_cast<char>((len >> (8 * i)) & 0xff);
  std::string p2 = path("v2.npy");
  writeBytes(p2, v2 + h2 + floatBytes(v));

  struct Case {
    std::string path;
    int64_t rows, cols;
  };
  for (const Case &c : {Case{p1, 2, 3}, Case{p2, 3, 2}}) {
    float *data = nullptr;
    int32_t rank = 0;
    int64_t shape[8];
    ASSERT_EQ(muirrt_npy_read(c.path.c_str(), &data, &rank, shape), 0)
        << muirrt_last_error();
    EXPECT_EQ(rank, 2);
    EXPECT_EQ(shape[0], c.rows);
    EXPECT_EQ(shape[1], c.cols);
    for (size_t i = 0; i < v.size(); ++i)
      EXPECT_EQ(data[i], v[i]) << c.path << " elem " << i;
    std::free(data);
  }
}

TEST_F(Npy, RejectsBadFilesNamingThem) {
  auto pad = [](std::string h) {
    h += std::string(64 - (10 + h.size() + 1) % 64, ' ');
    return h + "\n";
  };
  std::vector<float> six(6, 1.0f);
  std::vector<double> sixD(6, 1.0);
  std::string f8 = path("f8.npy");
  writeBytes(
      f8, npyV1(pad("{'descr': '<f8', 'fortran_order': False, "
                    "'shape': (2, 3), }"),
                std::string(reinterpret_cast<const char *>(sixD.data()), 48)));
  std::string fo = path("fortran.npy");
  writeBytes(fo, npyV1(pad("{'descr': '<f4', 'fortran_order': True, "
                           "'shape': (2, 3), }"),
                       floatBytes(six)));
  std::string tr = path("truncated.npy");
  writeBytes(tr, npyV1(pad("{'descr': '<f4', 'fortran_order': False, "
                           "'shape': (2, 3), }"),
                       floatBytes(six).substr(0, 20)));
  std::string th = path("shortheader.npy");
  writeBytes(th, npyV1(pad("{'descr': '<f4', 'fortran_order': False, "
                           "'shape': (2, 3), }"),
                       "")
                     .substr(0, 30));
  std::string bm = path("magic.npy");
  writeBytes(bm, "PK\x03\x04 this is a zip, not an npy file");
  std::string mal = path("malformed.npy");
  writeBytes(mal, npyV1(pad("{'descr': '<f4', 'fortran_order': False, "
                            "'shape': [2, 3], }"),
                        floatBytes(six)));

  struct Case {
    std::string path, needle;
  };
  for (const Case &c :
       {Case{f8, "'<f8'"}, Case{fo, "fortran_order"}, Case{tr, "truncated"},
        Case{th, "truncated"}, Case{bm, "magic"}, Case{mal, "malformed"},
        Case{path("missing.npy"), "No such file"}}) {
    float *data = reinterpret_cast<float *>(0x1);
    int32_t rank = 0;
    int64_t shape[8];
    EXPECT_NE(muirrt_npy_read(c.path.c_str(), &data, &rank, shape), 0)
        << c.path;
    EXPECT_EQ(data, nullptr);
    std::string msg = muirrt_last_error();
    EXPECT_EQ(msg.rfind(c.path + ": ", 0), 0u) << msg;
    EXPECT_NE(msg.find(c.needle), std::string::npos) << msg;
  }
}

//===----------------------------------------------------------------------===//
// Directories
//===----------------------------------------------------------------------===//

using Dirs = TempDirTest;

TEST_F(Dirs, LoadDirReadsPresentFilesAndKeepsThem) {
  int64_t s44[2] = {4, 4}, s3[1] = {3};
  std::vector<float> w(16), b = {1.0f, 2.0f, 3.0f};
  for (int i = 0; i < 16; ++i)
    w[i] = static_cast<float>(i);
  ASSERT_EQ(fs::create_directories(path("layers/0")), true);
  ASSERT_EQ(muirrt_npy_write_atomic(path("w0.npy").c_str(), w.data(), 2, s44),
            0);
  ASSERT_EQ(
      muirrt_npy_write_atomic(path("layers/0/b.npy").c_str(), b.data(), 1, s3),
      0);
  Ctx ctx = makeCtx();
  muirrt_tensor_add(ctx.get(), "w0", 2, s44, MUIRRT_ROLE_PARAM);
  muirrt_tensor_add(ctx.get(), "layers/0/b", 1, s3, MUIRRT_ROLE_PARAM);
  muirrt_tensor_add(ctx.get(), "absent", 1, s3, MUIRRT_ROLE_PARAM);
  int32_t loaded = -1;
  ASSERT_EQ(muirrt_load_dir(ctx.get(), dir.c_str(), &loaded), 0)
      << muirrt_last_error();
  EXPECT_EQ(loaded, 2);
  muirrt_init_from_seed(ctx.get(), 7); // must not overwrite loaded tensors
  const float *gw = muirrt_tensor_data(ctx.get(), 0);
  const float *gb = muirrt_tensor_data(ctx.get(), 1);
  const float *ga = muirrt_tensor_data(ctx.get(), 2);
  for (int i = 0; i < 16; ++i)
    EXPECT_EQ(gw[i], w[i]);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(gb[i], b[i]);
  EXPECT_NE(ga[0], 0.0f); // seeded, not loaded
}

TEST_F(Dirs, LoadDirShapeMismatchAndMissingDir) {
  int64_t s42[2] = {4, 2}, s44[2] = {4, 4};
  std::vector<float> w(8, 1.0f);
  ASSERT_EQ(muirrt_npy_write_atomic(path("w0.npy").c_str(), w.data(), 2, s42),
            0);
  Ctx ctx = makeCtx();
  muirrt_tensor_add(ctx.get(), "w0", 2, s44, MUIRRT_ROLE_PARAM);
  int32_t loaded = -1;
  EXPECT_NE(muirrt_load_dir(ctx.get(), dir.c_str(), &loaded), 0);
  EXPECT_EQ(std::string(muirrt_last_error()),
            path("w0.npy") + ": expected shape (4, 4), found (4, 2)");
  EXPECT_EQ(muirrt_tensor_data(ctx.get(), 0)[0], 0.0f); // untouched

  std::string missing = path("nope");
  EXPECT_NE(muirrt_load_dir(ctx.get(), missing.c_str(), &loaded), 0);
  EXPECT_EQ(std::string(muirrt_last_error()),
            "cannot open directory '" + missing +
                "': No such file or directory");
}

// A rank's part of a whole tensor: seeded with the values the whole tensor
// gets there (its stream from the pair each run starts in, odd starts
// too), float32 and float64; and read from the whole tensor's file, its
// rows only, refused on a file of another whole shape. The whole tensor's
// seeding is checked against the single stream above; its values here are
// exact integers for the file.
TEST_F(Dirs, PartsSeedAndLoadAsTheWholeTensor) {
  const int64_t whole[3] = {3, 5, 7};
  struct Part {
    int64_t shape[3], offset[3];
  };
  const Part parts[] = {{{3, 5, 7}, {0, 0, 0}},  // the whole
                        {{1, 5, 7}, {2, 0, 0}},  // rows: one run
                        {{3, 5, 3}, {0, 0, 3}},  // columns, odd starts
                        {{3, 1, 4}, {0, 4, 1}},  // a block of each
                        {{3, 5, 1}, {0, 0, 6}}}; // the last column
  for (int32_t dtype : {MUIRRT_DTYPE_F32, MUIRRT_DTYPE_F64}) {
    Ctx all = makeCtx();
    muirrt_tensor_add_typed(all.get(), "w.grad", 3, whole, MUIRRT_ROLE_GRAD,
                            dtype);
    muirrt_tensor_set_init_std(all.get(), 0, 0.5);
    muirrt_init_from_seed(all.get(), 11);
    auto at = [&](const Ctx &c, int64_t i) {
      void *d = muirrt_tensor_storage(c.get(), 0);
      return dtype == MUIRRT_DTYPE_F64 ? static_cast<double *>(d)[i]
                                       : static_cast<float *>(d)[i];
    };
    for (const Part &p : parts) {
      Ctx part = makeCtx();
      muirrt_tensor_add_typed(part.get(), "w.grad", 3, p.shape,
                              MUIRRT_ROLE_GRAD, dtype);
      muirrt_tensor_set_init_std(part.get(), 0, 0.5);
      muirrt_init_part_from_seed(part.get(), 0, 11, whole, p.offset);
      for (int64_t a = 0; a < p.shape[0]; ++a)
        for (int64_t b = 0; b < p.shape[1]; ++b)
          for (int64_t c = 0; c < p.shape[2]; ++c) {
            int64_t w = ((a + p.offset[0]) * 5 + b + p.offset[1]) * 7 + c +
                        p.offset[2];
            ASSERT_EQ(at(part, (a * p.shape[1] + b) * p.shape[2] + c),
                      at(all, w))
                << "dtype " << dtype << " element " << w;
          }
    }
  }

  // The file: element i of the whole tensor is i.
  Ctx all = makeCtx();
  muirrt_tensor_add(all.get(), "w", 3, whole, MUIRRT_ROLE_PARAM);
  float *v = muirrt_tensor_data(all.get(), 0);
  for (int i = 0; i < 105; ++i)
    v[i] = static_cast<float>(i);
  std::string out = path("whole");
  ASSERT_EQ(muirrt_dump_dir(all.get(), out.c_str()), 0) << muirrt_last_error();
  for (const Part &p : parts) {
    Ctx part = makeCtx();
    muirrt_tensor_add(part.get(), "w", 3, p.shape, MUIRRT_ROLE_PARAM);
    const int64_t *shapes[1] = {whole}, *offsets[1] = {p.offset};
    int32_t loaded = -1;
    ASSERT_EQ(muirrt_load_dir_parts(part.get(), out.c_str(), shapes, offsets,
                                    &loaded),
              0)
        << muirrt_last_error();
    EXPECT_EQ(loaded, 1);
    const float *got = muirrt_tensor_data(part.get(), 0);
    for (int64_t a = 0; a < p.shape[0]; ++a)
      for (int64_t b = 0; b < p.shape[1]; ++b)
        for (int64_t c = 0; c < p.shape[2]; ++c)
          ASSERT_EQ(got[(a * p.shape[1] + b) * p.shape[2] + c],
                    static_cast<float>(((a + p.offset[0]) * 5 + b +
                                        p.offset[1]) * 7 +
                                       c + p.offset[2]));
    // A loaded part keeps its values when the rest is seeded.
    muirrt_init_part_from_seed(part.get(), 0, 3, whole, p.offset);
    EXPECT_EQ(got[0], static_cast<float>((p.offset[0] * 5 + p.offset[1]) * 7 +
                                         p.offset[2]));
  }
  // The file must hold the whole shape.
  const int64_t other[3] = {3, 5, 8}, zero[3] = {0, 0, 0};
  Ctx part = makeCtx();
  muirrt_tensor_add(part.get(), "w", 3, parts[1].shape, MUIRRT_ROLE_PARAM);
  const int64_t *shapes[1] = {other}, *offsets[1] = {zero};
  int32_t loaded = -1;
  EXPECT_NE(muirrt_load_dir_parts(part.get(), out.c_str(), shapes, offsets,
                                  &loaded),
            0);
  EXPECT_EQ(std::string(muirrt_last_error()),
            out + "/w.npy: expected shape (3, 5, 8), found (3, 5, 7)");
  EXPECT_EQ(loaded, 0);

  // Written back by parts (a saved state's way): the file made whole with
  // zeros, then the column blocks of three "ranks" and the rows of a
  // fourth, in a folder the name makes, read whole: element i is i.
  std::string parted = path("parted");
  ASSERT_EQ(::mkdir(parted.c_str(), 0777), 0);
  ASSERT_EQ(muirrt_npy_create(parted.c_str(), "l0/w", MUIRRT_DTYPE_F32, 3,
                              whole),
            0)
      << muirrt_last_error();
  EXPECT_NE(muirrt_npy_create(parted.c_str(), "l0/w", MUIRRT_DTYPE_F32, 3,
                              whole),
            0); // exists
  const Part writers[] = {{{3, 5, 3}, {0, 0, 0}},
                          {{3, 5, 3}, {0, 0, 3}},
                          {{3, 5, 1}, {0, 0, 6}},
                          {{1, 5, 7}, {2, 0, 0}}};
  for (const Part &p : writers) {
    Ctx part = makeCtx();
    muirrt_tensor_add(part.get(), "l0/w", 3, p.shape, MUIRRT_ROLE_PARAM);
    const int64_t *shapes[1] = {whole}, *offsets[1] = {p.offset};
    int32_t n = -1;
    ASSERT_EQ(muirrt_load_dir_parts(part.get(), out.c_str(), shapes, offsets,
                                    &n),
              0);
    EXPECT_EQ(n, 0); // no l0/w.npy there: the part keeps its values
    float *d = muirrt_tensor_data(part.get(), 0);
    for (int64_t a = 0; a < p.shape[0]; ++a)
      for (int64_t b = 0; b < p.shape[1]; ++b)
        for (int64_t c = 0; c < p.shape[2]; ++c)
          d[(a * p.shape[1] + b) * p.shape[2] + c] = static_cast<float>(
              ((a + p.offset[0]) * 5 + b + p.offset[1]) * 7 + c +
              p.offset[2]);
    ASSERT_EQ(muirrt_npy_write_part(part.get(), 0, parted.c_str(), whole,
                                    p.offset),
              0)
        << muirrt_last_error();
  }
  Ctx back = makeCtx();
  muirrt_tensor_add(back.get(), "l0/w", 3, whole, MUIRRT_ROLE_PARAM);
  ASSERT_EQ(muirrt_load_dir(back.get(), parted.c_str(), &loaded), 0)
      << muirrt_last_error();
  const float *b = muirrt_tensor_data(back.get(), 0);
  for (int i = 0; i < 105; ++i)
    ASSERT_EQ(b[i], static_cast<float>(i)) << i;
  // A part of another whole shape (or dtype) is refused, naming the file.
  Ctx odd = makeCtx();
  muirrt_tensor_add(odd.get(), "l0/w", 3, parts[1].shape, MUIRRT_ROLE_PARAM);
  EXPECT_NE(muirrt_npy_write_part(odd.get(), 0, parted.c_str(), other, zero),
            0);
  EXPECT_EQ(std::string(muirrt_last_error()),
            parted + "/l0/w.npy: expected shape (3, 5, 8) of '<f4' (float32), "
                     "found (3, 5, 7) of '<f4' (float32)");
}

// float64 tensors: '<f8' files both ways, refused for a float32 tensor
// (and a float32 file for a float64 one), seeded with the values whose
// float32 rounding a float32 tensor of that name gets.
TEST_F(Dirs, Float64TensorsLoadDumpAndSeed) {
  int64_t s23[2] = {2, 3};
  Ctx ctx = makeCtx();
  ASSERT_EQ(muirrt_tensor_add_typed(ctx.get(), "w", 2, s23, MUIRRT_ROLE_PARAM,
                                    MUIRRT_DTYPE_F64),
            0);
  ASSERT_EQ(muirrt_tensor_add(ctx.get(), "v", 2, s23, MUIRRT_ROLE_PARAM), 1);
  EXPECT_EQ(muirrt_tensor_dtype(ctx.get(), 0), MUIRRT_DTYPE_F64);
  EXPECT_EQ(muirrt_tensor_dtype(ctx.get(), 1), MUIRRT_DTYPE_F32);
  EXPECT_EQ(muirrt_tensor_data(ctx.get(), 0), nullptr); // not float32
  EXPECT_EQ(muirrt_tensor_add_typed(ctx.get(), "x", 2, s23, MUIRRT_ROLE_PARAM,
                                    7),
            -1);
  EXPECT_EQ(std::string(muirrt_last_error()), "tensor 'x': invalid dtype 7");
  auto *w = static_cast<double *>(muirrt_tensor_storage(ctx.get(), 0));
  for (int i = 0; i < 6; ++i)
    w[i] = 1.0 / 3.0 + i; // not a float32 value
  std::string out = path("dump");
  ASSERT_EQ(muirrt_dump_dir(ctx.get(), out.c_str()), 0) << muirrt_last_error();
  std::string bytes = readBytes(out + "/w.npy");
  EXPECT_NE(bytes.find("'descr': '<f8'"), std::string::npos);
  ASSERT_EQ(bytes.size(), 128u + 6 * 8);
  EXPECT_EQ(std::memcmp(bytes.data() + 128, w, 48), 0);

  // Loaded back into a float64 tensor; refused by a float32 one.
  Ctx back = makeCtx();
  muirrt_tensor_add_typed(back.get(), "w", 2, s23, MUIRRT_ROLE_PARAM,
                          MUIRRT_DTYPE_F64);
  int32_t loaded = -1;
  ASSERT_EQ(muirrt_load_dir(back.get(), out.c_str(), &loaded), 0)
      << muirrt_last_error();
  EXPECT_EQ(loaded, 1);
  EXPECT_EQ(std::memcmp(muirrt_tensor_storage(back.get(), 0), w, 48), 0);
  Ctx narrow = makeCtx();
  muirrt_tensor_add(narrow.get(), "w", 2, s23, MUIRRT_ROLE_PARAM);
  EXPECT_NE(muirrt_load_dir(narrow.get(), out.c_str(), &loaded), 0);
  EXPECT_EQ(std::string(muirrt_last_error()),
            out + "/w.npy: expected dtype '<f4' (float32) for tensor 'w', "
                  "found '<f8' (float64)");
  Ctx wide = makeCtx();
  muirrt_tensor_add_typed(wide.get(), "v", 2, s23, MUIRRT_ROLE_PARAM,
                          MUIRRT_DTYPE_F64);
  EXPECT_NE(muirrt_load_dir(wide.get(), out.c_str(), &loaded), 0);
  EXPECT_EQ(std::string(muirrt_last_error()),
            out + "/v.npy: expected dtype '<f8' (float64) for tensor 'v', "
                  "found '<f4' (float32)");

  // Seeded: a float32 tensor of the same name holds the rounding.
  int64_t big[1] = {3001};
  for (int32_t role : {MUIRRT_ROLE_PARAM, MUIRRT_ROLE_GRAD, MUIRRT_ROLE_DATA}) {
    Ctx a = makeCtx(), b = makeCtx();
    muirrt_tensor_add_typed(a.get(), "t", 1, big, role, MUIRRT_DTYPE_F64);
    muirrt_tensor_add(b.get(), "t", 1, big, role);
    muirrt_init_from_seed(a.get(), 11);
    muirrt_init_from_seed(b.get(), 11);
    auto *da = static_cast<const double *>(muirrt_tensor_storage(a.get(), 0));
    const float *db = muirrt_tensor_data(b.get(), 0);
    int wider = 0;
    for (int i = 0; i < 3001; ++i) {
      ASSERT_EQ(static_cast<float>(da[i]), db[i]) << "role " << role << " " << i;
      wider += da[i] != static_cast<double>(db[i]);
    }
    EXPECT_GT(wider, 2900) << "role " << role;
  }
}

// An alias is the owner's tensor under another context: the same storage,
// name, shape, role, dtype and init std; destroying its context frees
// nothing of the owner's.
TEST(Tensors, AliasSharesTheOwnersStorage) {
  int64_t s23[2] = {2, 3};
  Ctx owner = makeCtx();
  ASSERT_EQ(muirrt_tensor_add_typed(owner.get(), "w", 2, s23,
                                    MUIRRT_ROLE_GRAD, MUIRRT_DTYPE_F64),
            0);
  ASSERT_EQ(muirrt_tensor_set_init_std(owner.get(), 0, 0.5), 0);
  {
    Ctx view = makeCtx();
    ASSERT_EQ(muirrt_tensor_add_alias(view.get(), owner.get(), 0), 0);
    EXPECT_EQ(muirrt_tensor_storage(view.get(), 0),
              muirrt_tensor_storage(owner.get(), 0));
    EXPECT_EQ(std::string(muirrt_tensor_name(view.get(), 0)), "w");
    EXPECT_EQ(muirrt_tensor_role(view.get(), 0), MUIRRT_ROLE_GRAD);
    EXPECT_EQ(muirrt_tensor_dtype(view.get(), 0), MUIRRT_DTYPE_F64);
    EXPECT_EQ(muirrt_tensor_numel(view.get(), 0), 6);
    muirrt_init_from_seed(view.get(), 3); // N(0, 0.5^2), the owner's std
    Ctx fresh = makeCtx();
    muirrt_tensor_add_typed(fresh.get(), "w", 2, s23, MUIRRT_ROLE_GRAD,
                            MUIRRT_DTYPE_F64);
    muirrt_tensor_set_init_std(fresh.get(), 0, 0.5);
    muirrt_init_from_seed(fresh.get(), 3);
    EXPECT_EQ(std::memcmp(muirrt_tensor_storage(owner.get(), 0),
                          muirrt_tensor_storage(fresh.get(), 0), 48),
              0);
    EXPECT_EQ(muirrt_tensor_add_alias(view.get(), owner.get(), 1), -1);
    EXPECT_EQ(std::string(muirrt_last_error()),
              "muirrt_tensor_add_alias: bad tensor index 1");
  }
  // The view's context is gone; the owner's storage is intact (ASan
  // would report a use after free).
  auto *w = static_cast<double *>(muirrt_tensor_storage(owner.get(), 0));
  w[5] = 1.0;
  EXPECT_EQ(w[5], 1.0);
}

TEST_F(Dirs, DumpDirSubfoldersAndDots) {
  Ctx ctx = makeCtx();
  int64_t s23[2] = {2, 3}, s1[1] = {1};
  muirrt_tensor_add(ctx.get(), "layers/0/w", 2, s23, MUIRRT_ROLE_PARAM);
  muirrt_tensor_add(ctx.get(), "w0.momentum", 1, s1, MUIRRT_ROLE_STATE);
  float *w = muirrt_tensor_data(ctx.get(), 0);
  for (int i = 0; i < 6; ++i)
    w[i] = static_cast<float>(i) - 2.5f;
  muirrt_tensor_data(ctx.get(), 1)[0] = 42.0f;
  std::string out = path("dump/run1");
  ASSERT_EQ(muirrt_dump_dir(ctx.get(), out.c_str()), 0) << muirrt_last_error();
  EXPECT_EQ(listFiles(out),
            (std::vector<std::string>{"layers/0/w.npy", "w0.momentum.npy"}));

  float *data = nullptr;
  int32_t rank = 0;
  int64_t shape[8];
  ASSERT_EQ(
      muirrt_npy_read((out + "/layers/0/w.npy").c_str(), &data, &rank, shape),
      0);
  EXPECT_EQ(rank, 2);
  EXPECT_EQ(shape[0], 2);
  EXPECT_EQ(shape[1], 3);
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(data[i], static_cast<float>(i) - 2.5f);
  std::free(data);
  ASSERT_EQ(
      muirrt_npy_read((out + "/w0.momentum.npy").c_str(), &data, &rank, shape),
      0);
  EXPECT_EQ(data[0], 42.0f);
  std::free(data);

  // A dump reloads into a fresh context.
  Ctx again = makeCtx();
  muirrt_tensor_add(again.get(), "layers/0/w", 2, s23, MUIRRT_ROLE_PARAM);
  muirrt_tensor_add(again.get(), "w0.momentum", 1, s1, MUIRRT_ROLE_STATE);
  int32_t loaded = 0;
  ASSERT_EQ(muirrt_load_dir(again.get(), out.c_str(), &loaded), 0);
  EXPECT_EQ(loaded, 2);
  EXPECT_EQ(muirrt_tensor_data(again.get(), 1)[0], 42.0f);
}

TEST_F(Dirs, DumpToUnwritablePathLeavesNothing) {
  writeBytes(path("file"), "x");
  Ctx ctx = makeCtx();
  int64_t s2[1] = {2};
  muirrt_tensor_add(ctx.get(), "a", 1, s2, MUIRRT_ROLE_PARAM);
  // DIR itself is below a regular file.
  std::string bad = path("file/sub");
  EXPECT_NE(muirrt_dump_dir(ctx.get(), bad.c_str()), 0);
  EXPECT_NE(std::string(muirrt_last_error()).find("file"), std::string::npos);
  EXPECT_NE(muirrt_check_dump_dir(bad.c_str()), 0);
  EXPECT_EQ(listFiles(dir), (std::vector<std::string>{"file"}));

  // Failure after a first tensor was written: "b" is a regular file, so the
  // folder for "b/c" cannot be made; a.npy's temporary must be removed.
  std::string out = path("out");
  ASSERT_TRUE(fs::create_directory(out));
  writeBytes(out + "/b", "not a folder");
  muirrt_tensor_add(ctx.get(), "b/c", 1, s2, MUIRRT_ROLE_PARAM);
  EXPECT_NE(muirrt_dump_dir(ctx.get(), out.c_str()), 0);
  EXPECT_EQ(listFiles(out), (std::vector<std::string>{"b"}));
}

// A dump is all or nothing: a target in the way (a directory named like a
// tensor's file) fails it before anything is written, and the previous
// files keep their bytes.
TEST_F(Dirs, DumpIsAllOrNothing) {
  Ctx ctx = makeCtx();
  int64_t s2[1] = {2};
  for (const char *name : {"a", "b", "c"})
    muirrt_tensor_add(ctx.get(), name, 1, s2, MUIRRT_ROLE_PARAM);
  std::string out = path("out");
  ASSERT_EQ(muirrt_dump_dir(ctx.get(), out.c_str()), 0) << muirrt_last_error();
  std::string before = readBytes(out + "/a.npy");
  ASSERT_TRUE(fs::remove(out + "/c.npy"));
  ASSERT_TRUE(fs::create_directory(out + "/c.npy"));
  muirrt_tensor_data(ctx.get(), 0)[0] = 7.0f;
  EXPECT_NE(muirrt_dump_dir(ctx.get(), out.c_str()), 0);
  EXPECT_EQ(std::string(muirrt_last_error()),
            out + "/c.npy: is a directory; muir replaces only a regular file");
  EXPECT_EQ(readBytes(out + "/a.npy"), before);
  EXPECT_EQ(listFiles(out), (std::vector<std::string>{"a.npy", "b.npy"}));
  EXPECT_TRUE(fs::is_directory(out + "/c.npy"));
  const char *names[] = {"a", "b", "c"};
  EXPECT_NE(muirrt_check_dump(out.c_str(), names, 3), 0);
  EXPECT_EQ(muirrt_check_dump(out.c_str(), names, 2), 0)
      << muirrt_last_error();
}

// Inside the dump directory no symbolic link is followed.
TEST_F(Dirs, DumpDoesNotFollowLinks) {
  std::string elsewhere = path("elsewhere"), out = path("out");
  ASSERT_TRUE(fs::create_directory(elsewhere));
  ASSERT_TRUE(fs::create_directory(out));
  fs::create_directory_symlink(elsewhere, out + "/sub");
  Ctx ctx = makeCtx();
  int64_t s2[1] = {2};
  muirrt_tensor_add(ctx.get(), "sub/x", 1, s2, MUIRRT_ROLE_PARAM);
  EXPECT_NE(muirrt_dump_dir(ctx.get(), out.c_str()), 0);
  EXPECT_EQ(std::string(muirrt_last_error()),
            out + "/sub: is a symbolic link; muir does not follow links "
                  "inside the dump directory");
  EXPECT_TRUE(listFiles(elsewhere).empty());
  const char *names[] = {"sub/x"};
  EXPECT_NE(muirrt_check_dump(out.c_str(), names, 1), 0);
  // A link as the tensor's file itself is refused too.
  fs::remove(out + "/sub");
  writeBytes(path("target.npy"), "x");
  fs::create_symlink(path("target.npy"), out + "/y.npy");
  Ctx other = makeCtx();
  muirrt_tensor_add(other.get(), "y", 1, s2, MUIRRT_ROLE_PARAM);
  EXPECT_NE(muirrt_dump_dir(other.get(), out.c_str()), 0);
  EXPECT_EQ(readBytes(path("target.npy")), "x");
}

// The check before a run changes nothing: a directory that does not exist
// yet is not created.
TEST_F(Dirs, CheckDumpCreatesNothing) {
  std::string out = path("new/dump");
  const char *names[] = {"a"};
  EXPECT_EQ(muirrt_check_dump(out.c_str(), names, 1), 0)
      << muirrt_last_error();
  EXPECT_TRUE(listFiles(dir).empty());
  writeBytes(path("file"), "x");
  std::string under = path("file/dump");
  EXPECT_NE(muirrt_check_dump(under.c_str(), names, 1), 0);
}

// A header that claims more than NumPy reads is refused before it is
// allocated.
TEST_F(Dirs, NpyHugeHeaderRefused) {
  std::string huge("\x93NUMPY\x02\x00\xf0\xff\xff\xff{}", 14);
  writeBytes(path("h.npy"), huge);
  float *data = nullptr;
  int32_t rank = 0;
  int64_t shape[8];
  EXPECT_NE(muirrt_npy_read(path("h.npy").c_str(), &data, &rank, shape), 0);
  EXPECT_EQ(std::string(muirrt_last_error()),
            path("h.npy") + ": .npy header of 4294967280 bytes is larger "
                            "than the 10000 NumPy reads");
  EXPECT_EQ(data, nullptr);
}

TEST(Metrics, FirstNonFiniteF64) {
  std::vector<double> x(10000, 1.0);
  EXPECT_EQ(muirrt_first_nonfinite_f64(x.data(), 10000), -1);
  x[9000] = std::numeric_limits<double>::infinity();
  EXPECT_EQ(muirrt_first_nonfinite_f64(x.data(), 10000), 9000);
  x[4097] = std::nan("");
  EXPECT_EQ(muirrt_first_nonfinite_f64(x.data(), 10000), 4097);
  x[1] = std::numeric_limits<double>::max(); // finite, float32's infinity
  EXPECT_EQ(muirrt_first_nonfinite_f64(x.data(), 3), -1);
}

TEST(Metrics, FirstNonFinite) {
  std::vector<float> x(10000, 1.0f);
  EXPECT_EQ(muirrt_first_nonfinite(x.data(), 10000), -1);
  x[9000] = std::numeric_limits<float>::infinity();
  x[9999] = std::nanf("");
  EXPECT_EQ(muirrt_first_nonfinite(x.data(), 10000), 9000);
  x[4097] = -std::numeric_limits<float>::infinity();
  EXPECT_EQ(muirrt_first_nonfinite(x.data(), 10000), 4097);
  x[3] = std::nanf("");
  EXPECT_EQ(muirrt_first_nonfinite(x.data(), 10000), 3);
  EXPECT_EQ(muirrt_first_nonfinite(x.data(), 3), -1);
  x[1] = std::numeric_limits<float>::max(); // finite
  EXPECT_EQ(muirrt_first_nonfinite(x.data(), 3), -1);
}

TEST_F(Dirs, CheckDumpDirCreatesAndLeavesNothing) {
  std::string out = path("x/y/z");
  ASSERT_EQ(muirrt_check_dump_dir(out.c_str()), 0) << muirrt_last_error();
  struct stat st;
  ASSERT_EQ(::stat(out.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_TRUE(listFiles(dir).empty());
}

//===----------------------------------------------------------------------===//
// Metrics
//===----------------------------------------------------------------------===//

TEST(Metrics, OrthogonalityOfOrthogonalMatrices) {
  // Permutation matrix.
  const int p[5] = {3, 0, 4, 1, 2};
  std::vector<float> perm(25, 0.0f);
  for (int i = 0; i < 5; ++i)
    perm[i * 5 + p[i]] = 1.0f;
  EXPECT_NEAR(muirrt_orthogonality_error(perm.data(), 5, 5), 0.0, 1e-12);
  // Hadamard / 2 (exact in float), and its first two columns (tall) and
  // first two rows (wide).
  const float h[16] = {1, 1, 1, 1, 1, -1, 1, -1, 1, 1, -1, -1, 1, -1, -1, 1};
  std::vector<float> hs(16), tall(8), wide(8);
  for (int i = 0; i < 16; ++i)
    hs[i] = 0.5f * h[i];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j)
      tall[i * 2 + j] = hs[i * 4 + j];
  for (int i = 0; i < 8; ++i)
    wide[i] = hs[i];
  EXPECT_NEAR(muirrt_orthogonality_error(hs.data(), 4, 4), 0.0, 1e-12);
  EXPECT_NEAR(muirrt_orthogonality_error(tall.data(), 4, 2), 0.0, 1e-12);
  EXPECT_NEAR(muirrt_orthogonality_error(wide.data(), 2, 4), 0.0, 1e-12);
}

TEST(Metrics, OrthogonalityHandComputed) {
  // X X^T = [[5, 11], [11, 25]]; minus I: 4, 11, 11, 24 -> sqrt(834).
  const float sq[4] = {1, 2, 3, 4};
  EXPECT_NEAR(muirrt_orthogonality_error(sq, 2, 2), std::sqrt(834.0), 1e-12);
  // Tall 3x2: X^T X = [[2, 1], [1, 2]]; minus I is all ones -> 2.
  const float tall[6] = {1, 0, 0, 1, 1, 1};
  EXPECT_NEAR(muirrt_orthogonality_error(tall, 3, 2), 2.0, 1e-12);
  // Wide 2x3: X X^T = [[2, 1], [1, 2]] -> 2.
  const float wide[6] = {1, 0, 1, 0, 1, 1};
  EXPECT_NEAR(muirrt_orthogonality_error(wide, 2, 3), 2.0, 1e-12);
  // 1x1 [1 + 2^-12]: the Gram entry 1 + 2^-11 + 2^-24 needs more than
  // float's 24 bits, so only a double accumulation gives the exact answer.
  const float one[1] = {1.0f + 1.0f / 4096.0f};
  EXPECT_EQ(muirrt_orthogonality_error(one, 1, 1),
            1.0 / 2048.0 + 1.0 / 16777216.0);
}

TEST(Metrics, SingularValuesExact) {
  // diag(1, 2, 3, 4) times Hadamard / 2 (orthogonal, exact in float): the
  // singular values are the diagonal, in ascending order.
  const float h[16] = {1, 1, 1, 1, 1, -1, 1, -1, 1, 1, -1, -1, 1, -1, -1, 1};
  std::vector<float> dq(16);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      dq[i * 4 + j] = 0.5f * static_cast<float>(i + 1) * h[i * 4 + j];
  double s[4];
  ASSERT_EQ(muirrt_singular_values(dq.data(), 4, 4, s), 0);
  for (int i = 0; i < 4; ++i)
    EXPECT_NEAR(s[i], i + 1.0, 1e-12);
  // Tall 3x2 and wide 2x3 with Gram matrix [[2, 1], [1, 2]]: eigenvalues
  // 1 and 3, singular values 1 and sqrt(3).
  const float tall[6] = {1, 0, 0, 1, 1, 1}, wide[6] = {1, 0, 1, 0, 1, 1};
  ASSERT_EQ(muirrt_singular_values(tall, 3, 2, s), 0);
  EXPECT_NEAR(s[0], 1.0, 1e-12);
  EXPECT_NEAR(s[1], std::sqrt(3.0), 1e-12);
  ASSERT_EQ(muirrt_singular_values(wide, 2, 3, s), 0);
  EXPECT_NEAR(s[0], 1.0, 1e-12);
  EXPECT_NEAR(s[1], std::sqrt(3.0), 1e-12);
  // Rank 1 (every entry 1): one singular value sqrt(6) (the
  // Frobenius norm), the other zero, not NaN.
  const float rank1[6] = {1, 1, 1, 1, 1, 1};
  ASSERT_EQ(muirrt_singular_values(rank1, 3, 2, s), 0);
  EXPECT_NEAR(s[0], 0.0, 1e-7);
  EXPECT_NEAR(s[1], std::sqrt(6.0), 1e-12);
  // Empty: nothing to write.
  EXPECT_EQ(muirrt_singular_values(nullptr, 0, 5, nullptr), 0);
}

TEST(Metrics, SingularValuesBadArguments) {
  double s[1];
  EXPECT_EQ(muirrt_singular_values(nullptr, 1, 1, s), -1);
  EXPECT_NE(std::string(muirrt_last_error()).find("bad arguments"),
            std::string::npos);
  const float one[1] = {1};
  EXPECT_EQ(muirrt_singular_values(one, -1, 1, s), -1);
  EXPECT_EQ(muirrt_singular_values(one, 1, 1, nullptr), -1);
}

TEST(Metrics, Norms) {
  const float x[2] = {3.0f, 4.0f}, y[2] = {0.0f, 8.0f};
  EXPECT_DOUBLE_EQ(muirrt_norm(x, 2), 5.0);
  EXPECT_DOUBLE_EQ(muirrt_diff_norm(x, y, 2), 5.0);
  // Large values would overflow a float accumulator.
  const float big[2] = {3e30f, 4e30f};
  EXPECT_NEAR(muirrt_norm(big, 2), 5e30, 5e30 * 1e-6);
}

//===----------------------------------------------------------------------===//
// The table of step entries
//===----------------------------------------------------------------------===//

TEST(EntryTable, TheCpuTableHoldsItsFunctionsAndNoCudaOnes) {
  const muirrt_entry_table *t = muirrt_cpu_entries();
  ASSERT_NE(t, nullptr);
  EXPECT_STREQ(t->target, "cpu");
  EXPECT_STREQ(t->prefix, "muirrt_");
  EXPECT_STREQ(t->signature, muirrt_entry_signature);
  // Both targets', the CPU's only, the CUDA's only.
  EXPECT_EQ(t->sgemm, &muirrt_sgemm);
  EXPECT_EQ(t->all_to_allv, &muirrt_all_to_allv);
  EXPECT_EQ(t->moe_dispatch, &muirrt_moe_dispatch);
  EXPECT_EQ(t->triangle_all_reduce_wait, &muirrt_triangle_all_reduce_wait);
  EXPECT_EQ(t->packed_all_reduce_start, nullptr);
  EXPECT_EQ(t->moe_plan, nullptr);
}

TEST(EntryTable, ASignatureMismatchNamesTheFirstEntryThatDiffers) {
  char differs[64] = "unchanged";
  EXPECT_EQ(muirrt_entry_signature_mismatch(muirrt_entry_signature, differs,
                                            sizeof(differs)),
            0);
  EXPECT_STREQ(differs, "unchanged");
  // The signature begins with sgemm's line.
  std::string mine = muirrt_entry_signature;
  ASSERT_EQ(mine.rfind("sgemm Both void (int64_t batch, ", 0), 0u);
  size_t firstEnd = mine.find('\n') + 1;
  std::string second = mine.substr(firstEnd, mine.find('\n', firstEnd) -
                                                 firstEnd);
  // Another second entry: ours is named.
  std::string other = mine.substr(0, firstEnd) + "gemm_rows Both void (int)\n";
  EXPECT_EQ(muirrt_entry_signature_mismatch(other.c_str(), differs,
                                            sizeof(differs)),
            1);
  EXPECT_EQ(std::string(differs), second.substr(0, sizeof(differs) - 1));
  // One entry more: it is named.
  other = mine + "extra Cuda void (void)\n";
  EXPECT_EQ(muirrt_entry_signature_mismatch(other.c_str(), differs,
                                            sizeof(differs)),
            1);
  EXPECT_STREQ(differs, "extra Cuda void (void)");
  // None: the first.
  EXPECT_EQ(muirrt_entry_signature_mismatch(nullptr, differs, 6), 1);
  EXPECT_STREQ(differs, "sgemm");
}

// A traced buffer's hash is XXH64 with seed 0: against LLVM's xxHash64
// (llvm/Support/xxhash.h) of bytes (37 i + 11) mod 256, printed once by a
// program linked with LLVM, for lengths that take each path (no stripe, a
// tail of 8-, 4- and 1-byte pieces, whole and partial 32-byte stripes).
TEST(Trace, BufferHashIsXXH64) {
  std::vector<unsigned char> bytes(200);
  for (int i = 0; i < 200; ++i)
    bytes[i] = static_cast<unsigned char>(i * 37 + 11);
  const std::pair<int64_t, uint64_t> want[] = {
      {0, 0xef46db3751d8e999ull},   {1, 0xf592c0c7639c4cb6ull},
      {3, 0x22c08528601d4f27ull},   {4, 0xfb1e5cf2f1ae4d95ull},
      {7, 0x5613ac510496c04eull},   {8, 0x57cb2b7521f3e21aull},
      {31, 0xe4a0e629e519a4aeull},  {32, 0xcc6b8aaada790b2dull},
      {33, 0x35ec49850475a832ull},  {63, 0xbf9f0ba3cf95b28aull},
      {64, 0x155ccce4bf32befcull},  {100, 0x4826e367566ea023ull},
      {200, 0x2f074b6dd9094e34ull}};
  muirrt_trace_enable(1);
  for (auto [n, hash] : want)
    muirrt_trace_buffer(/*op_id=*/n, 0, 0, bytes.data(), n);
  ASSERT_EQ(muirrt_trace_count(), static_cast<int64_t>(std::size(want)));
  const MuirRtTraceRecord *records = muirrt_trace_records();
  for (size_t k = 0; k < std::size(want); ++k) {
    EXPECT_EQ(records[k].bytes, want[k].first);
    EXPECT_EQ(records[k].hash, want[k].second) << want[k].first << " bytes";
  }
  muirrt_trace_enable(0);
}

//===----------------------------------------------------------------------===//
// The CPU steps' arena (muirrt_alloc, muirrt_free)
//===----------------------------------------------------------------------===//

/// Whether blocks of 64 KiB and more come from the arena (not under a
/// sanitizer, which puts every block on malloc to see its own life).
bool arenaOn() {
  muirrt_arena_release_memory();
  void *p = muirrt_alloc(1 << 20);
  bool on = muirrt_arena_bytes() > 0;
  muirrt_free(p);
  muirrt_arena_release_memory();
  return on;
}

TEST(Arena, SameSequenceSameOffsetsFirstFit) {
  if (!arenaOn())
    GTEST_SKIP() << "the arena is off (a sanitizer build)";
  const int64_t MiB = 1 << 20;
  std::vector<char *> first, second;
  for (int round = 0; round < 2; ++round) {
    std::vector<char *> &got = round ? second : first;
    char *a = static_cast<char *>(muirrt_alloc(MiB));
    char *b = static_cast<char *>(muirrt_alloc(2 * MiB));
    muirrt_free(a);
    // A smaller block takes the hole a left (first fit), a larger one goes
    // past b.
    char *c = static_cast<char *>(muirrt_alloc(MiB / 2));
    char *d = static_cast<char *>(muirrt_alloc(3 * MiB));
    EXPECT_EQ(c, a);
    EXPECT_EQ(d, b + 2 * MiB);
    // Every byte of each block is usable, and the live blocks do not
    // overlap.
    std::memset(b, 1, 2 * MiB);
    std::memset(c, 2, MiB / 2);
    std::memset(d, 3, 3 * MiB);
    EXPECT_EQ(b[2 * MiB - 1], 1);
    EXPECT_EQ(c[MiB / 2 - 1], 2);
    got = {a, b, c, d};
    muirrt_free(b);
    muirrt_free(c);
    muirrt_free(d);
    // The highest end reached: 1 + 2 + 3 MiB, held between runs.
    EXPECT_EQ(muirrt_arena_bytes(), static_cast<size_t>(6 * MiB));
  }
  // A second run of the same sequence lands at the same offsets.
  EXPECT_EQ(first, second);
  // Its pages go back on request (none is in use), and are usable again.
  EXPECT_EQ(muirrt_arena_release_memory(), static_cast<size_t>(6 * MiB));
  EXPECT_EQ(muirrt_arena_bytes(), 0u);
  char *again = static_cast<char *>(muirrt_alloc(MiB));
  EXPECT_EQ(again, first[0]);
  std::memset(again, 4, MiB);
  muirrt_free(again);
  muirrt_arena_release_memory();
}

TEST(Arena, SmallBlocksAreMallocs) {
  muirrt_arena_release_memory();
  void *small = muirrt_alloc(100);
  ASSERT_NE(small, nullptr);
  std::memset(small, 0, 100);
  EXPECT_EQ(muirrt_arena_bytes(), 0u);
  muirrt_free(small);
  muirrt_free(nullptr); // no-op
  // A zero-byte request still gives a pointer that can be freed.
  void *none = muirrt_alloc(0);
  EXPECT_NE(none, nullptr);
  muirrt_free(none);
}

TEST(Arena, ReleaseKeepsTheLiveBlocks) {
  if (!arenaOn())
    GTEST_SKIP() << "the arena is off (a sanitizer build)";
  const int64_t MiB = 1 << 20;
  char *low = static_cast<char *>(muirrt_alloc(MiB));
  char *high = static_cast<char *>(muirrt_alloc(4 * MiB));
  std::memset(low, 7, MiB);
  std::memset(high, 8, 4 * MiB);
  muirrt_free(high);
  // Only the pages past the live block go back; its bytes stay.
  EXPECT_EQ(muirrt_arena_release_memory(), static_cast<size_t>(4 * MiB));
  EXPECT_EQ(muirrt_arena_bytes(), static_cast<size_t>(MiB));
  EXPECT_EQ(low[0], 7);
  EXPECT_EQ(low[MiB - 1], 7);
  muirrt_free(low);
  muirrt_arena_release_memory();
}

TEST(Arena, ThreadsGetDisjointBlocks) {
  // Two threads allocating and freeing at once (a step's parallel loops,
  // or two steps): every block is theirs alone while it lives.
  std::atomic<int> bad{0};
  auto work = [&](char fill) {
    for (int i = 0; i < 200; ++i) {
      size_t bytes = (64 << 10) * static_cast<size_t>(1 + i % 5);
      char *p = static_cast<char *>(muirrt_alloc(static_cast<int64_t>(bytes)));
      std::memset(p, fill, bytes);
      std::this_thread::yield();
      for (size_t j = 0; j < bytes; j += 4096)
        if (p[j] != fill)
          ++bad;
      muirrt_free(p);
    }
  };
  std::thread a(work, 'a'), b(work, 'b');
  a.join();
  b.join();
  EXPECT_EQ(bad.load(), 0);
  muirrt_arena_release_memory();
}

} // namespace
