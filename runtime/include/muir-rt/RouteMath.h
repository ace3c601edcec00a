//===- muir-rt/RouteMath.h - expert routing per token -----------*- C++ -*-===//
//
// The math of muirrt_route and muirrt_route_grad (Runtime.h) for one token,
// written once for both runtimes: the CPU runtime (cpu/Moe.cpp) loops over
// the tokens, the CUDA runtime (cuda/MoeKernels.cu) runs a thread per token.
// Plain C++17 that both g++ and nvcc compile, for the host and the device:
// no allocation (the caller hands in each token's scratch), no exceptions,
// no library containers, no recursion. Every sum runs in double in a fixed
// order and ties go to the lower index, so a token's results depend on its
// inputs only; the two runtimes can differ only where their exp does
// (glibc's and CUDA's may differ in the last bit). The per-call checks of
// the shapes stay with the callers; nothing here is part of the C API.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_RT_ROUTEMATH_H
#define MUIR_RT_ROUTEMATH_H

#include <cmath>
#include <cstdint>

#ifdef __CUDACC__
#define MUIR_RT_HD __host__ __device__
#else
#define MUIR_RT_HD
#endif

namespace [[gnu::visibility("hidden")]] muirrt_route_math {

/// muir.route's scoring (Runtime.h defines these two only).
constexpr int32_t kSoftmax = 0;
constexpr int32_t kSigmoid = 1;

/// muirrt_route's parameters, which the caller has checked: 1 <= k <=
/// experts, nGroup divides experts, 1 <= topkGroup <= nGroup and k <=
/// topkGroup * (experts / nGroup), so every token finds its k experts.
struct RouteParams {
  int64_t experts, k;
  const float *bias; // [experts], or null
  int32_t scoring, softmaxAfterTopk, normalize;
  int64_t nGroup, topkGroup;
  float scaling;
};

/// One token's working memory for routeToken.
struct RouteScratch {
  double *score, *select, *groupScore, *picked; // experts, experts, nGroup, k
  uint8_t *allowed, *groupAllowed, *chosen;     // experts, nGroup, nGroup
};

/// The doubles and the bytes of one token's RouteScratch.
MUIR_RT_HD inline int64_t routeScratchDoubles(int64_t experts, int64_t k,
                                              int64_t nGroup) {
  return 2 * experts + nGroup + k;
}
MUIR_RT_HD inline int64_t routeScratchBytes(int64_t experts, int64_t nGroup) {
  return experts + 2 * nGroup;
}

/// A RouteScratch laid out over `doubles` and `bytes` of those sizes.
MUIR_RT_HD inline RouteScratch routeScratchAt(double *doubles, uint8_t *bytes,
                                              int64_t experts, int64_t nGroup) {
  RouteScratch s;
  s.score = doubles;
  s.select = s.score + experts;
  s.groupScore = s.select + experts;
  s.picked = s.groupScore + nGroup; // k doubles, the last
  s.allowed = bytes;
  s.groupAllowed = s.allowed + experts;
  s.chosen = s.groupAllowed + nGroup;
  return s;
}

/// muirrt_route_grad's parameters.
struct RouteGradParams {
  int64_t experts, k;
  int32_t scoring, softmaxAfterTopk, normalize;
  float scaling;
};

/// One token's working memory for routeGradToken.
struct RouteGradScratch {
  double *p, *g, *sel, *dsel; // experts, experts, k, k
};

MUIR_RT_HD inline int64_t routeGradScratchDoubles(int64_t experts, int64_t k) {
  return 2 * experts + 2 * k;
}

MUIR_RT_HD inline RouteGradScratch
routeGradScratchAt(double *doubles, int64_t experts, int64_t k) {
  RouteGradScratch s;
  s.p = doubles;
  s.g = s.p + experts;
  s.sel = s.g + experts;
  s.dsel = s.sel + k;
  return s;
}

/// out[j] = softmax of the n logits x[at(j)] (at(j) = idx[j], or j when idx
/// is null), in double, in j order, less the largest logit, searched from
/// `top` on. The forward starts from the first logit and the gradient from
/// -inf, as they always have: they differ only when that logit is NaN, where
/// every result is NaN either way but which NaN (sign, payload) can differ,
/// so each keeps its own start and its bits.
MUIR_RT_HD inline void softmax(const float *x, const int64_t *idx, int64_t n,
                               double top, double *out) {
  for (int64_t j = 0; j < n; ++j) {
    double v = x[idx ? idx[j] : j];
    top = top < v ? v : top;
  }
  double sum = 0.0;
  for (int64_t j = 0; j < n; ++j) {
    out[j] = std::exp(static_cast<double>(x[idx ? idx[j] : j]) - top);
    sum += out[j];
  }
  for (int64_t j = 0; j < n; ++j)
    out[j] /= sum;
}

MUIR_RT_HD inline double sigmoid(float v) {
  return 1.0 / (1.0 + std::exp(-static_cast<double>(v)));
}

/// Index of the largest of v[i] for allowed[i], ties to the lower index;
/// -1 when none is allowed.
MUIR_RT_HD inline int64_t argmax(const double *v, const uint8_t *allowed,
                                 int64_t n) {
  int64_t best = -1;
  for (int64_t i = 0; i < n; ++i)
    if (allowed[i] && (best < 0 || v[i] > v[best]))
      best = i;
  return best;
}

/// One token of muirrt_route: its logits x [experts] give its experts idx
/// [k] and weights w [k]. The caller counts the experts chosen.
MUIR_RT_HD inline void routeToken(const RouteParams &p, const float *x,
                                  int64_t *idx, float *w,
                                  const RouteScratch &s) {
  int64_t experts = p.experts, k = p.k;
  // Scores, in double. (Any scoring but softmax is read as sigmoid here.)
  if (p.scoring == kSoftmax) {
    softmax(x, nullptr, experts, x[0], s.score);
  } else {
    for (int64_t i = 0; i < experts; ++i)
      s.score[i] = sigmoid(x[i]);
  }
  // Selection scores; the bias only steers the choice.
  for (int64_t i = 0; i < experts; ++i) {
    s.select[i] = s.score[i] + (p.bias ? static_cast<double>(p.bias[i]) : 0.0);
    s.allowed[i] = 1;
  }
  // Group-limited: only the topkGroup best groups compete.
  if (p.nGroup > 1) {
    int64_t groupSize = experts / p.nGroup;
    for (int64_t g = 0; g < p.nGroup; ++g) {
      double first = -INFINITY, second = -INFINITY;
      for (int64_t j = g * groupSize; j < (g + 1) * groupSize; ++j) {
        double v = s.select[j];
        if (v > first) {
          second = first;
          first = v;
        } else if (v > second) {
          second = v;
        }
      }
      s.groupScore[g] = groupSize >= 2 ? first + second : first;
      s.groupAllowed[g] = 1;
      s.chosen[g] = 0;
    }
    for (int64_t pick = 0; pick < p.topkGroup; ++pick) {
      int64_t g = argmax(s.groupScore, s.groupAllowed, p.nGroup);
      s.chosen[g] = 1;
      s.groupAllowed[g] = 0;
    }
    for (int64_t i = 0; i < experts; ++i)
      s.allowed[i] = s.chosen[i / groupSize];
  }
  // The k best, in decreasing order, ties to the lower index.
  for (int64_t j = 0; j < k; ++j) {
    int64_t best = argmax(s.select, s.allowed, experts);
    idx[j] = best;
    s.allowed[best] = 0;
    s.picked[j] = s.score[best];
  }
  if (p.softmaxAfterTopk)
    softmax(x, idx, k, x[idx[0]], s.picked);
  if (p.normalize) {
    double sum = 0.0;
    for (int64_t j = 0; j < k; ++j)
      sum += s.picked[j];
    if (sum > 0.0)
      for (int64_t j = 0; j < k; ++j)
        s.picked[j] /= sum;
  }
  for (int64_t j = 0; j < k; ++j)
    w[j] = static_cast<float>(s.picked[j] * static_cast<double>(p.scaling));
}

/// One token of muirrt_route_grad: its logits x [experts], experts idx [k]
/// and weights' gradient dw [k] give its logits' gradient dl [experts].
/// Returns the first slot whose expert is outside [0, experts), for the
/// caller to report (dl is then all zero), or -1.
MUIR_RT_HD inline int64_t routeGradToken(const RouteGradParams &p,
                                         const float *x, const int64_t *idx,
                                         const float *dw, float *dl,
                                         const RouteGradScratch &s) {
  int64_t experts = p.experts, k = p.k;
  for (int64_t i = 0; i < experts; ++i)
    dl[i] = 0.0f;
  for (int64_t j = 0; j < k; ++j)
    if (idx[j] < 0 || idx[j] >= experts)
      return j;
  // The forward's selected scores p_sel (before normalisation). (Any
  // scoring but sigmoid is read as softmax here.)
  if (p.softmaxAfterTopk) {
    softmax(x, idx, k, -INFINITY, s.sel);
  } else if (p.scoring == kSigmoid) {
    for (int64_t j = 0; j < k; ++j)
      s.sel[j] = sigmoid(x[idx[j]]);
  } else {
    softmax(x, nullptr, experts, -INFINITY, s.p);
    for (int64_t j = 0; j < k; ++j)
      s.sel[j] = s.p[idx[j]];
  }
  // Back through the scaling and the normalisation to d p_sel.
  for (int64_t j = 0; j < k; ++j)
    s.dsel[j] = static_cast<double>(p.scaling) * static_cast<double>(dw[j]);
  if (p.normalize) {
    double sum = 0.0, dot = 0.0;
    for (int64_t j = 0; j < k; ++j)
      sum += s.sel[j];
    for (int64_t j = 0; j < k; ++j)
      dot += s.dsel[j] * s.sel[j];
    // The forward leaves weights whose sum is not positive as they are:
    // then so does the gradient.
    if (sum > 0.0)
      for (int64_t j = 0; j < k; ++j)
        s.dsel[j] = (s.dsel[j] - dot / sum) / sum;
  }
  // Back through the scoring to the logits.
  if (p.softmaxAfterTopk) {
    double dot = 0.0;
    for (int64_t j = 0; j < k; ++j)
      dot += s.dsel[j] * s.sel[j];
    for (int64_t j = 0; j < k; ++j)
      dl[idx[j]] += static_cast<float>(s.sel[j] * (s.dsel[j] - dot));
  } else if (p.scoring == kSigmoid) {
    for (int64_t j = 0; j < k; ++j)
      dl[idx[j]] += static_cast<float>(s.dsel[j] * s.sel[j] * (1.0 - s.sel[j]));
  } else {
    double dot = 0.0;
    for (int64_t i = 0; i < experts; ++i)
      s.g[i] = 0.0;
    for (int64_t j = 0; j < k; ++j) {
      s.g[idx[j]] += s.dsel[j];
      dot += s.dsel[j] * s.sel[j];
    }
    for (int64_t i = 0; i < experts; ++i)
      dl[i] = static_cast<float>(s.p[i] * (s.g[i] - dot));
  }
  return -1;
}

} // namespace muirrt_route_math

#endif // MUIR_RT_ROUTEMATH_H
