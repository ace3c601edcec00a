//===- Moe.cpp - muir runtime mixture-of-experts kernels ------------------===//
//
// Expert routing (muir.route). Every sum runs in double in a fixed order
// and ties go to the lower index, so routing is deterministic and the same
// on every rank. See muir-rt/Runtime.h for the contract.
//
//===----------------------------------------------------------------------===//

#include "muir-rt/Runtime.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

[[noreturn]] void routeError(const char *why, long long a, long long b) {
  std::fprintf(stderr, "muirrt: muirrt_route: %s (%lld, %lld)\n", why, a, b);
  std::abort();
}

/// Index of the largest of v[i] for allowed[i], ties to the lower index;
/// -1 when none is allowed.
int64_t argmax(const std::vector<double> &v, const std::vector<char> &allowed) {
  int64_t best = -1;
  for (size_t i = 0; i < v.size(); ++i)
    if (allowed[i] && (best < 0 || v[i] > v[static_cast<size_t>(best)]))
      best = static_cast<int64_t>(i);
  return best;
}

} // namespace

extern "C" void muirrt_route(int64_t tokens, int64_t experts, int64_t k,
                             const float *logits, const float *bias,
                             int32_t scoring, int32_t softmax_after_topk,
                             int32_t normalize, int64_t n_group,
                             int64_t topk_group, float scaling,
                             int64_t *indices, float *weights,
                             int64_t *counts) {
  if (tokens < 0 || experts < 1)
    routeError("tokens and experts must be >= 0 and >= 1", tokens, experts);
  if (k < 1 || k > experts)
    routeError("top_k out of [1, experts]", k, experts);
  if (n_group < 1 || experts % n_group != 0 || topk_group < 1 ||
      topk_group > n_group || k > topk_group * (experts / n_group))
    routeError("bad expert groups (n_group, topk_group)", n_group,
               topk_group);
  size_t e = static_cast<size_t>(experts);
  int64_t groupSize = experts / n_group;
  for (size_t i = 0; i < e; ++i)
    counts[i] = 0;
  std::vector<double> score(e), select(e), groupScore(
                                               static_cast<size_t>(n_group));
  std::vector<char> allowed(e), groupAllowed(static_cast<size_t>(n_group));
  for (int64_t t = 0; t < tokens; ++t) {
    const float *x = logits + t * experts;
    // Scores, in double.
    if (scoring == 0) {
      double top = x[0];
      for (size_t i = 1; i < e; ++i)
        top = std::max(top, static_cast<double>(x[i]));
      double sum = 0.0;
      for (size_t i = 0; i < e; ++i) {
        score[i] = std::exp(static_cast<double>(x[i]) - top);
        sum += score[i];
      }
      for (size_t i = 0; i < e; ++i)
        score[i] /= sum;
    } else {
      for (size_t i = 0; i < e; ++i)
        score[i] = 1.0 / (1.0 + std::exp(-static_cast<double>(x[i])));
    }
    // Selection scores; the bias only steers the choice.
    for (size_t i = 0; i < e; ++i)
      select[i] = score[i] + (bias ? static_cast<double>(bias[i]) : 0.0);
    // Group-limited: only the topk_group best groups compete.
    std::fill(allowed.begin(), allowed.end(), 1);
    if (n_group > 1) {
      for (int64_t g = 0; g < n_group; ++g) {
        double first = -INFINITY, second = -INFINITY;
        for (int64_t j = g * groupSize; j < (g + 1) * groupSize; ++j) {
          double v = select[static_cast<size_t>(j)];
          if (v > first) {
            second = first;
            first = v;
          } else if (v > second) {
            second = v;
          }
        }
        groupScore[static_cast<size_t>(g)] =
            groupSize >= 2 ? first + second : first;
      }
      std::fill(groupAllowed.begin(), groupAllowed.end(), 1);
      std::vector<char> chosen(static_cast<size_t>(n_group), 0);
      for (int64_t pick = 0; pick < topk_group; ++pick) {
        int64_t g = argmax(groupScore, groupAllowed);
        chosen[static_cast<size_t>(g)] = 1;
        groupAllowed[static_cast<size_t>(g)] = 0;
      }
      for (size_t i = 0; i < e; ++i)
        allowed[i] = chosen[i / static_cast<size_t>(groupSize)];
    }
    // The k best, in decreasing order, ties to the lower index.
    int64_t *idx = indices + t * k;
    float *w = weights + t * k;
    std::vector<double> picked(static_cast<size_t>(k));
    for (int64_t j = 0; j < k; ++j) {
      int64_t best = argmax(select, allowed);
      idx[j] = best;
      allowed[static_cast<size_t>(best)] = 0;
      ++counts[best];
      picked[static_cast<size_t>(j)] = score[static_cast<size_t>(best)];
    }
    if (softmax_after_topk) {
      double top = x[idx[0]];
      for (int64_t j = 1; j < k; ++j)
        top = std::max(top, static_cast<double>(x[idx[j]]));
      double sum = 0.0;
      for (int64_t j = 0; j < k; ++j) {
        picked[static_cast<size_t>(j)] =
            std::exp(static_cast<double>(x[idx[j]]) - top);
        sum += picked[static_cast<size_t>(j)];
      }
      for (double &v : picked)
        v /= sum;
    }
    if (normalize) {
      double sum = 0.0;
      for (double v : picked)
        sum += v;
      if (sum > 0.0)
        for (double &v : picked)
          v /= sum;
    }
    for (int64_t j = 0; j < k; ++j)
      w[j] = static_cast<float>(picked[static_cast<size_t>(j)] *
                                static_cast<double>(scaling));
  }
}

extern "C" void muirrt_grouped_gemm(int64_t experts, int64_t rows, int64_t k,
                                    int64_t n, const float *in,
                                    const float *w, int32_t trans_w,
                                    const int64_t *sizes, float *out) {
  // Check every size before touching the output.
  int64_t total = 0;
  for (int64_t e = 0; e < experts; ++e) {
    if (sizes[e] < 0 || sizes[e] > rows - total) {
      std::fprintf(stderr,
                   "muirrt: muirrt_grouped_gemm: expert %lld has %lld rows, "
                   "but the experts before it hold %lld of the %lld-row "
                   "bound (sizes:",
                   static_cast<long long>(e),
                   static_cast<long long>(sizes[e]),
                   static_cast<long long>(total),
                   static_cast<long long>(rows));
      for (int64_t j = 0; j < experts; ++j)
        std::fprintf(stderr, " %lld", static_cast<long long>(sizes[j]));
      std::fprintf(stderr, ")\n");
      std::abort();
    }
    total += sizes[e];
  }
  int64_t row = 0;
  for (int64_t e = 0; e < experts; ++e) {
    // One GEMM per expert (sgemm counts it); empty groups cost nothing.
    if (sizes[e] > 0)
      muirrt_sgemm(1, 0, trans_w, sizes[e], n, k, 1.0f, in + row * k,
                   w + e * k * n, 0.0f, out + row * n, nullptr);
    row += sizes[e];
  }
  std::fill(out + row * n, out + rows * n, 0.0f);
}
