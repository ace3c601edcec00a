//===- gram_rate.cpp - a Gram product's triangle against the full GEMM ----===//
//
// The device check's figure for triangle-only Gram products: C = X X^T of
// an n x n X through the CUDA runtime, as muirrt_cuda_bsyrk / _ssyrk (the
// upper triangle's blocks of rows, then mirrored) and as the full GEMM
// (muirrt_cuda_bgemm / _sgemm of X with itself), the median of 10 timed
// calls each on the step stream; then the triangle's result against the
// full one (max |difference| over max |C|) and whether it is exactly
// symmetric. Links libmuir_rt_cuda.so; bench/gpu/check.sh builds and runs
// it on the lent GPU:
//   gram-rate [n ...]     (default 8192 4096)
//
//===----------------------------------------------------------------------===//
#include "muir-rt/CudaRuntime.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

namespace {

[[noreturn]] void die(const char *what) {
  std::fprintf(stderr, "gram-rate: %s: %s\n", what, muirrt_cuda_last_error());
  std::exit(1);
}

uint16_t toBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

float fromBf16(uint16_t v) {
  uint32_t bits = static_cast<uint32_t>(v) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

/// The median milliseconds of `run` on the step stream, after one warm-up.
double medianMs(const std::function<void()> &run) {
  run();
  std::vector<double> ms;
  for (int i = 0; i < 10; ++i) {
    if (muirrt_cuda_event_record(0) || (run(), muirrt_cuda_event_record(1)))
      die("event");
    if (muirrt_cuda_synchronize())
      die("synchronize");
    ms.push_back(muirrt_cuda_elapsed_ms(0, 1));
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

/// Both results to the host as float; the triangle's error against the
/// full product, and whether it is symmetric bitwise.
void compare(const char *what, int64_t n, const void *tri, const void *full,
             bool bf16) {
  size_t count = size_t(n) * size_t(n), bytes = count * (bf16 ? 2 : 4);
  std::vector<char> t(bytes), f(bytes);
  if (muirrt_cuda_copy_to_host(t.data(), tri, bytes) ||
      muirrt_cuda_copy_to_host(f.data(), full, bytes))
    die("copy to host");
  auto at = [&](const std::vector<char> &v, size_t i) {
    return bf16 ? fromBf16(reinterpret_cast<const uint16_t *>(v.data())[i])
                : reinterpret_cast<const float *>(v.data())[i];
  };
  double diff = 0, scale = 0;
  bool symmetric = true;
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < n; ++c) {
      size_t i = size_t(r) * n + c;
      diff = std::max(diff, std::fabs(double(at(t, i)) - at(f, i)));
      scale = std::max(scale, std::fabs(double(at(f, i))));
      if (c < r)
        symmetric &= std::memcmp(&t[i * (bf16 ? 2 : 4)],
                                 &t[(size_t(c) * n + r) * (bf16 ? 2 : 4)],
                                 bf16 ? 2 : 4) == 0;
    }
  std::printf("%s: triangle vs full max|diff|/max|C| %.2e, symmetric %s\n",
              what, diff / scale, symmetric ? "yes" : "NO");
}

} // namespace

int main(int argc, char **argv) {
  std::vector<int64_t> sizes;
  for (int i = 1; i < argc; ++i)
    sizes.push_back(std::atoll(argv[i]));
  if (sizes.empty())
    sizes = {8192, 4096};
  if (muirrt_cuda_init(-1))
    die("init");
  muirrt_cuda_set_precision(0);
  for (int64_t n : sizes) {
    size_t count = size_t(n) * size_t(n);
    std::vector<float> x(count);
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (float &v : x) { // uniform in [-1, 1)
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      v = float(int64_t(s >> 40) - (int64_t(1) << 23)) / float(1 << 23);
    }
    std::vector<uint16_t> xb(count);
    for (size_t i = 0; i < count; ++i)
      xb[i] = toBf16(x[i]);
    void *dx, *dxb, *c1, *c2;
    if (muirrt_cuda_alloc(&dx, 4 * count) ||
        muirrt_cuda_alloc(&dxb, 2 * count) ||
        muirrt_cuda_alloc(&c1, 4 * count) ||
        muirrt_cuda_alloc(&c2, 4 * count) ||
        muirrt_cuda_copy_to_device(dx, x.data(), 4 * count) ||
        muirrt_cuda_copy_to_device(dxb, xb.data(), 2 * count))
      die("device memory");
    double flops = 2.0 * double(n) * double(n) * double(n);
    auto *fx = static_cast<const float *>(dx);
    auto *bx = static_cast<const uint16_t *>(dxb);
    for (bool bf16 : {true, false}) {
      double full, tri;
      if (bf16) {
        full = medianMs([&] {
          muirrt_cuda_bgemm(1, 0, 1, n, n, n, 1.0f, bx, bx, 0.0f,
                            static_cast<uint16_t *>(c1), nullptr);
        });
        tri = medianMs([&] {
          muirrt_cuda_bsyrk(1, 0, n, n, 1.0f, bx, 0.0f,
                            static_cast<uint16_t *>(c2), nullptr);
        });
      } else {
        full = medianMs([&] {
          muirrt_cuda_sgemm(1, 0, 1, n, n, n, 1.0f, fx, fx, 0.0f,
                            static_cast<float *>(c1), nullptr);
        });
        tri = medianMs([&] {
          muirrt_cuda_ssyrk(1, 0, n, n, 1.0f, fx, 0.0f,
                            static_cast<float *>(c2), nullptr);
        });
      }
      std::printf("gram %lld %s: full GEMM %.3f ms (%.1f TFLOP/s), triangle "
                  "%.3f ms, triangle/full %.3f\n",
                  static_cast<long long>(n), bf16 ? "bf16" : "fp32", full,
                  flops / (full * 1e-3) / 1e12, tri, tri / full);
      char what[64];
      std::snprintf(what, sizeof what, "gram %lld %s",
                    static_cast<long long>(n), bf16 ? "bf16" : "fp32");
      compare(what, n, c2, c1, bf16);
    }
    muirrt_cuda_free(dx);
    muirrt_cuda_free(dxb);
    muirrt_cuda_free(c1);
    muirrt_cuda_free(c2);
  }
  return 0;
}
