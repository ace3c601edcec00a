//===- sgemm_rate.cpp - measure the machine's OpenBLAS SGEMM rate ---------===//
//
// Prints the best-of-R single-precision GEMM rate for square N x N matrices
// as one parseable line:
//
//   sgemm_gflops <value> n <N> threads <T>
//
// Used as the roofline reference when judging how close compiled kernels
// get to the BLAS. Usage: muir-sgemm-rate [--n N] [--reps R]
//
//===----------------------------------------------------------------------===//

#include <cblas.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

// Stop timing after this many seconds even if fewer than R reps ran, so the
// benchmark stays quick on small machines or with a large --n.
constexpr double kTimeBudgetSeconds = 3.0;

bool parsePositive(const char *text, long &out) {
  char *end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (!end || *end != '\0' || v <= 0)
    return false;
  out = v;
  return true;
}

void usage(const char *argv0) {
  std::fprintf(stderr, "usage: %s [--n N] [--reps R]\n", argv0);
}

} // namespace

int main(int argc, char **argv) {
  long n = 2048, reps = 5;
  for (int i = 1; i < argc; i += 2) {
    long *target = nullptr;
    if (!std::strcmp(argv[i], "--n"))
      target = &n;
    else if (!std::strcmp(argv[i], "--reps"))
      target = &reps;
    if (!target || i + 1 >= argc || !parsePositive(argv[i + 1], *target)) {
      usage(argv[0]);
      return 2;
    }
  }
  if (n > 46340) { // n * n must fit in an int for the BLAS
    std::fprintf(stderr, "--n too large\n");
    return 2;
  }

  size_t count = static_cast<size_t>(n) * static_cast<size_t>(n);
  std::vector<float> a(count), b(count), c(count, 0.0f);
  // Cheap deterministic non-trivial values (denormals or zeros could make
  // some BLAS kernels take unrepresentative paths).
  for (size_t i = 0; i < count; ++i) {
    a[i] = static_cast<float>((i * 7 + 3) % 17) / 17.0f - 0.5f;
    b[i] = static_cast<float>((i * 5 + 1) % 13) / 13.0f - 0.5f;
  }
  int bn = static_cast<int>(n);
  auto run = [&]() {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, bn, bn, bn, 1.0f,
                a.data(), bn, b.data(), bn, 0.0f, c.data(), bn);
  };

  // Warm-up: starts the OpenBLAS thread pool and faults in the pages.
  run();

  using Clock = std::chrono::steady_clock;
  double best = 0.0, total = 0.0;
  for (long r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    run();
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (r == 0 || s < best)
      best = s;
    total += s;
    if (total > kTimeBudgetSeconds)
      break;
  }
  double flops = 2.0 * static_cast<double>(n) * static_cast<double>(n) *
                 static_cast<double>(n);
  std::printf("sgemm_gflops %.2f n %ld threads %d\n", flops / best / 1e9, n,
              openblas_get_num_threads());
  return 0;
}
