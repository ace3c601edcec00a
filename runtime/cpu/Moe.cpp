//===- Moe.cpp - muir runtime mixture-of-experts kernels ------------------===//
//
// Expert routing (muir.route), its per-token math in muir-rt/RouteMath.h,
// which the CUDA runtime shares. Every sum runs in double in a fixed order
// and ties go to the lower index, so routing is deterministic and the same
// on every rank. See muir-rt/Runtime.h for the contract.
//
//===----------------------------------------------------------------------===//

#include "muir-rt/Runtime.h"

#include "Parallel.h"

#include "muir-rt/RouteMath.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>

using namespace muirrt_route_math;

namespace muirrt_detail {
void countGemm(double flops);
/// Bf16.cpp: C [m, n] (f32) = op(A) op(B) of bf16 operands on oneDNN, on
/// the calling thread, with m (or k, when runtimeK) a run-time dimension;
/// false, nothing written, without a usable oneDNN.
bool bf16ProductToF32(int64_t m, int64_t n, int64_t k, bool transA,
                      const uint16_t *a, bool transB, const uint16_t *b,
                      float *c, bool runtimeK);
} // namespace muirrt_detail

namespace {

[[noreturn]] void routeError(const char *why, int64_t tokens, int64_t experts,
                             int64_t k, int64_t nGroup, int64_t topkGroup) {
  std::string msg = std::string(why) + " (tokens " + std::to_string(tokens) +
                    ", experts " + std::to_string(experts) + ", top_k " +
                    std::to_string(k) + ", n_group " + std::to_string(nGroup) +
                    ", topk_group " + std::to_string(topkGroup) + ")";
  muirrt_abort_run("muirrt_route", msg.c_str());
  std::abort(); // not reached
}

} // namespace

extern "C" void muirrt_route(int64_t tokens, int64_t experts, int64_t k,
                             const float *logits, const float *bias,
                             int32_t scoring, int32_t softmax_after_topk,
                             int32_t normalize, int64_t n_group,
                             int64_t topk_group, float scaling,
                             int64_t *indices, float *weights,
                             int64_t *counts) {
  if (const char *why =
          muirrt_route_shape_error(tokens, experts, k, n_group, topk_group))
    routeError(why, tokens, experts, k, n_group, topk_group);
  RouteParams p{experts,   k,       bias,       scoring, softmax_after_topk,
                normalize, n_group, topk_group, scaling};
  std::vector<double> doubles(
      static_cast<size_t>(routeScratchDoubles(experts, k, n_group)));
  std::vector<uint8_t> bytes(
      static_cast<size_t>(routeScratchBytes(experts, n_group)));
  RouteScratch s =
      routeScratchAt(doubles.data(), bytes.data(), experts, n_group);
  std::fill(counts, counts + experts, int64_t{0});
  for (int64_t t = 0; t < tokens; ++t) {
    int64_t *idx = indices + t * k;
    routeToken(p, logits + t * experts, idx, weights + t * k, s);
    for (int64_t j = 0; j < k; ++j)
      ++counts[idx[j]];
  }
}

namespace {

/// Runs item(e) for every expert e: with several BLAS threads, the
/// experts in parallel, each product on one BLAS thread (taken in turn
/// from a shared counter, so uneven experts balance); else in order. An
/// expert's product is one thread's either way whenever threads > 1, so
/// its bits do not depend on how many experts a rank holds (the layouts of
/// an ep layer agree), and OpenBLAS's threads do not wake and spin for
/// each of many mid-sized products.
template <typename Fn> void forEachExpert(int64_t experts, Fn &&item) {
  muirrt_detail::forEachItem(experts, item, /*oneBlasThread=*/true);
}

/// fn(lo, hi) over [0, count) in blocks of `grain` on the BLAS threads
/// (in order on one): for loops whose iterations write disjoint memory.
template <typename Fn> void forEachBlock(int64_t count, int64_t grain, Fn &&fn) {
  int64_t blocks = (count + grain - 1) / grain;
  muirrt_detail::forEachItem(blocks, [&](int64_t b) {
    fn(b * grain, std::min(count, (b + 1) * grain));
  });
}

/// A staging buffer of `count` floats, left uninitialised (every element
/// used is written first: a zero fill would cost a pass over it).
std::unique_ptr<float[]> staging(int64_t count) {
  return std::unique_ptr<float[]>(new float[static_cast<size_t>(count)]);
}

/// Where an exchange receives: `send` itself within a group of one
/// (muirrt_all_to_allv_bytes exchanges in place there), else `storage`,
/// made to hold `count` floats.
float *receiveBuffer(int64_t groupSize, float *send, int64_t count,
                     std::unique_ptr<float[]> &storage) {
  if (groupSize == 1)
    return send;
  storage = staging(count);
  return storage.get();
}

} // namespace

namespace {

/// The first row of each expert's group (and the total, last), after
/// checking every size against the static bound: a negative size or a
/// total above `rows` ends the run naming the expert and the counts,
/// before anything is written.
std::vector<int64_t> groupStarts(const char *fn, int64_t experts,
                                 int64_t rows, const int64_t *sizes) {
  std::vector<int64_t> first(static_cast<size_t>(experts) + 1, 0);
  for (int64_t e = 0; e < experts; ++e) {
    if (sizes[e] < 0 || sizes[e] > rows - first[e]) {
      std::string why = "expert " + std::to_string(e) + " has " +
                        std::to_string(sizes[e]) +
                        " rows, but the experts before it hold " +
                        std::to_string(first[e]) + " of the " +
                        std::to_string(rows) + "-row bound (sizes:";
      for (int64_t j = 0; j < experts; ++j)
        why += " " + std::to_string(sizes[j]);
      muirrt_abort_run(fn, (why + ")").c_str());
    }
    first[e + 1] = first[e] + sizes[e];
  }
  return first;
}

/// in[0, count) rounded to bf16 as muirrt_bf16_round (to nearest even, a
/// NaN quiet), without branches, so that the loop vectorises.
inline void roundBody(const float *in, int64_t count, uint16_t *out) {
  for (int64_t i = 0; i < count; ++i) {
    uint32_t bits;
    std::memcpy(&bits, in + i, sizeof bits);
    uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
    uint32_t quiet = (bits >> 16) | 0x40u;
    out[i] = static_cast<uint16_t>(
        (bits & 0x7fffffffu) > 0x7f800000u ? quiet : rounded);
  }
}

void roundBase(const float *in, int64_t count, uint16_t *out) {
  roundBody(in, count, out);
}

#if defined(__x86_64__) && defined(__GNUC__)
// 16 floats a step where the CPU has AVX-512 (the runtime is built for
// generic x86-64): 4 times the SSE2 loop's rate on this project's machine.
__attribute__((target("avx512f,avx512bw,avx512vl"))) void
roundAvx512(const float *in, int64_t count, uint16_t *out) {
  roundBody(in, count, out);
}
bool haveAvx512() {
  return __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl");
}
#else
void roundAvx512(const float *in, int64_t count, uint16_t *out) {
  roundBase(in, count, out);
}
bool haveAvx512() { return false; }
#endif

/// `count` floats rounded to bf16 (muirrt_bf16_round's rounding) into
/// `out`, grown to hold them.
const uint16_t *roundedToBf16(const float *in, int64_t count,
                              std::vector<uint16_t> &out) {
  if (out.size() < static_cast<size_t>(count))
    out.resize(static_cast<size_t>(count));
  static const bool avx512 = haveAvx512();
  (avx512 ? roundAvx512 : roundBase)(in, count, out.data());
  return out.data();
}

/// C [m, n] = op(A) op(B) of f32 operands rounded to bf16, accumulated in
/// f32, on the calling thread (muirrt_grouped_gemm_bf16's numerics): on
/// oneDNN's bf16 matmul, else on sgemm of the rounded values widened
/// (exactly) back to f32. `runtimeK`: the ragged dimension is k (a weight
/// gradient's), else m.
void bf16Product(int64_t m, int64_t n, int64_t k, bool transA, const float *a,
                 bool transB, const float *b, float *c, bool runtimeK,
                 bool accumulate = false) {
  thread_local std::vector<uint16_t> ra, rb;
  thread_local std::vector<float> sum;
  const uint16_t *a16 = roundedToBf16(a, m * k, ra);
  const uint16_t *b16 = roundedToBf16(b, k * n, rb);
  // Accumulating: the product into a scratch block, then added (one pass
  // over the block, in cache).
  float *to = c;
  if (accumulate) {
    if (sum.size() < static_cast<size_t>(m * n))
      sum.resize(static_cast<size_t>(m * n));
    to = sum.data();
  }
  auto addInto = [&] {
    if (accumulate)
      for (int64_t i = 0; i < m * n; ++i)
        c[i] += to[i];
  };
  if (muirrt_detail::bf16ProductToF32(m, n, k, transA, a16, transB, b16, to,
                                      runtimeK)) {
    muirrt_detail::countGemm(2.0 * double(m) * double(n) * double(k));
    addInto();
    return;
  }
  std::vector<float> wa(static_cast<size_t>(m * k)),
      wb(static_cast<size_t>(k * n));
  auto widen = [](const uint16_t *in, std::vector<float> &out) {
    for (size_t i = 0; i < out.size(); ++i) {
      uint32_t bits = static_cast<uint32_t>(in[i]) << 16;
      std::memcpy(&out[i], &bits, sizeof bits);
    }
  };
  widen(a16, wa);
  widen(b16, wb);
  muirrt_sgemm(1, transA, transB, m, n, k, 1.0f, wa.data(), wb.data(), 0.0f,
               to, nullptr);
  addInto();
}

/// muirrt_grouped_gemm, its products f32 (sgemm) or of bf16-rounded
/// operands; `accumulate`: added to `out` (muirrt_grouped_gemm_add), the
/// rows past the groups left as they are.
void groupedGemm(const char *fn, bool bf16, int64_t experts, int64_t rows,
                 int64_t k, int64_t n, const float *in, const float *w,
                 int32_t trans_w, const int64_t *sizes, float *out,
                 bool accumulate = false) {
  std::vector<int64_t> first = groupStarts(fn, experts, rows, sizes);
  // One GEMM per expert (sgemm counts it); empty groups cost nothing.
  forEachExpert(experts, [&](int64_t e) {
    int64_t row = first[e];
    if (sizes[e] == 0)
      return;
    if (bf16)
      bf16Product(sizes[e], n, k, false, in + row * k, trans_w, w + e * k * n,
                  out + row * n, false, accumulate);
    else
      muirrt_sgemm(1, 0, trans_w, sizes[e], n, k, 1.0f, in + row * k,
                   w + e * k * n, accumulate ? 1.0f : 0.0f, out + row * n,
                   nullptr);
  });
  if (!accumulate)
    std::fill(out + first[experts] * n, out + rows * n, 0.0f);
}

/// muirrt_grouped_gemm_wgrad, its products f32 or of bf16-rounded
/// operands.
void groupedWgrad(const char *fn, bool bf16, int64_t experts, int64_t rows,
                  int64_t k, int64_t n, const float *in, const float *grad,
                  int32_t trans_w, const int64_t *sizes, float *dw) {
  std::vector<int64_t> first = groupStarts(fn, experts, rows, sizes);
  forEachExpert(experts, [&](int64_t e) {
    int64_t row = first[e], r = sizes[e];
    float *d = dw + e * k * n;
    const float *x = in + row * k, *g = grad + row * n;
    if (r == 0)
      std::fill(d, d + k * n, 0.0f);
    else if (bf16) // [n, k] = grad^T in, or [k, n] = in^T grad
      trans_w ? bf16Product(n, k, r, true, g, false, x, d, true)
              : bf16Product(k, n, r, true, x, false, g, d, true);
    else if (trans_w)
      muirrt_sgemm(1, 1, 0, n, k, r, 1.0f, g, x, 0.0f, d, nullptr);
    else
      muirrt_sgemm(1, 1, 0, k, n, r, 1.0f, x, g, 0.0f, d, nullptr);
  });
}

} // namespace

extern "C" void muirrt_grouped_gemm(int64_t experts, int64_t rows, int64_t k,
                                    int64_t n, const float *in,
                                    const float *w, int32_t trans_w,
                                    const int64_t *sizes, float *out) {
  groupedGemm("muirrt_grouped_gemm", false, experts, rows, k, n, in, w,
              trans_w, sizes, out);
}

extern "C" void muirrt_grouped_gemm_add(int64_t experts, int64_t rows,
                                        int64_t k, int64_t n, const float *in,
                                        const float *w, int32_t trans_w,
                                        int32_t bf16_operands,
                                        const int64_t *sizes, float *out) {
  groupedGemm("muirrt_grouped_gemm_add", bf16_operands != 0, experts, rows, k,
              n, in, w, trans_w, sizes, out, /*accumulate=*/true);
}

extern "C" void muirrt_grouped_gemm_bf16(int64_t experts, int64_t rows,
                                         int64_t k, int64_t n, const float *in,
                                         const float *w, int32_t trans_w,
                                         const int64_t *sizes, float *out) {
  groupedGemm("muirrt_grouped_gemm_bf16", true, experts, rows, k, n, in, w,
              trans_w, sizes, out);
}

//===----------------------------------------------------------------------===//
// Expert dispatch and combine over a group of expert-parallel ranks
//===----------------------------------------------------------------------===//

namespace {

[[noreturn]] void moeError(const char *fn, const char *layer,
                           const std::string &why) {
  std::string msg = std::string("layer '") + (layer && *layer ? layer : "?") +
                    "': " + why;
  muirrt_abort_run(fn, msg.c_str());
  std::abort(); // not reached
}

/// Who is who in an exchange: g ranks, rank `me`, `el` experts per rank
/// (expert e lives on rank e / el).
struct Ep {
  int64_t g, me, el, experts, tokens, k;
  int64_t dest(int64_t e) const { return e / el; }
};

Ep epOf(const char *fn, const char *layer, int64_t mask, int64_t tokens,
        int64_t k, int64_t experts) {
  Ep ep;
  ep.g = muirrt_dist_group_size(mask);
  ep.me = muirrt_dist_group_rank(mask);
  if (ep.g < 1 || experts < 1 || experts % ep.g != 0)
    moeError(fn, layer, std::to_string(experts) +
                            " experts do not divide over " +
                            std::to_string(ep.g) + " ranks");
  ep.el = experts / ep.g;
  ep.experts = experts;
  ep.tokens = tokens;
  ep.k = k;
  return ep;
}

/// The plan's fields (see muirrt_moe_dispatch).
struct PlanView {
  int64_t *p;
  int64_t bound, g;
  int64_t &recvToken(int64_t r) { return p[r]; }
  int64_t &pairWire(int64_t r) { return p[bound + r]; }
  int64_t &tokensFrom(int64_t s) { return p[2 * bound + s]; }
  int64_t &pairsFrom(int64_t s) { return p[2 * bound + g + s]; }
  int64_t &tokensTo(int64_t d) { return p[2 * bound + 2 * g + d]; }
  int64_t &pairsTo(int64_t d) { return p[2 * bound + 3 * g + d]; }
};

/// Calls fn(d, t) for every (destination rank, token) in wire order: d
/// ascending, then the tokens with at least one expert on d, ascending.
template <typename Fn>
void forEachSent(const Ep &ep, const int64_t *indices, Fn &&fn) {
  for (int64_t d = 0; d < ep.g; ++d)
    for (int64_t t = 0; t < ep.tokens; ++t)
      for (int64_t j = 0; j < ep.k; ++j) {
        int64_t e = indices[t * ep.k + j];
        if (e >= 0 && ep.dest(e) == d) {
          fn(d, t);
          break;
        }
      }
}

/// Calls fn(t, j) for every routed pair in the order the combine's rows
/// come home: by destination rank, then token, then slot.
template <typename Fn>
void forEachPairHome(const Ep &ep, const int64_t *indices, Fn &&fn) {
  forEachSent(ep, indices, [&](int64_t d, int64_t t) {
    for (int64_t j = 0; j < ep.k; ++j) {
      int64_t e = indices[t * ep.k + j];
      if (e >= 0 && ep.dest(e) == d)
        fn(t, j);
    }
  });
}

/// Stops (moeError) when a rank of the ep group would receive more routed
/// rows than the static `bound`, naming its experts' rows; `at(s, e)`: the
/// pairs rank s routes to expert e (every rank's counts, all-gathered).
template <typename At>
void checkBound(const char *fn, const char *layer, const Ep &ep, int64_t bound,
                At at) {
  for (int64_t d = 0; d < ep.g; ++d) {
    int64_t total = 0;
    for (int64_t e = d * ep.el; e < (d + 1) * ep.el; ++e)
      for (int64_t s = 0; s < ep.g; ++s)
        total += at(s, e);
    if (total <= bound)
      continue;
    std::string why = "rank " + std::to_string(d) + " would receive " +
                      std::to_string(total) +
                      " routed rows but the static bound is " +
                      std::to_string(bound) + " (rows per expert:";
    for (int64_t e = d * ep.el; e < (d + 1) * ep.el; ++e) {
      int64_t n = 0;
      for (int64_t s = 0; s < ep.g; ++s)
        n += at(s, e);
      why += " expert " + std::to_string(e) + ": " + std::to_string(n);
    }
    moeError(fn, layer, why + ")");
  }
}

} // namespace

extern "C" void muirrt_moe_dispatch(int64_t axes_mask, int64_t tokens,
                                    int64_t k, int64_t experts,
                                    int64_t hidden, const float *x,
                                    const int64_t *indices,
                                    const float *weights, int64_t bound,
                                    float *out, int64_t *counts,
                                    int64_t *plan, const char *layer) {
  const char *fn = "muirrt_moe_dispatch";
  // Buffers are sized by the routing: running out of memory stops every
  // rank with a message instead of escaping through the JIT frames.
  try {
    Ep ep = epOf(fn, layer, axes_mask, tokens, k, experts);
    size_t g = static_cast<size_t>(ep.g);
    // This rank's pairs per expert and tokens per destination, then
    // everybody's: [g][experts + g].
    int64_t width = experts + ep.g;
    std::vector<int64_t> mine(static_cast<size_t>(width), 0);
    for (int64_t t = 0; t < tokens; ++t) {
      std::vector<char> to(g, 0);
      for (int64_t j = 0; j < k; ++j) {
        int64_t e = indices[t * k + j];
        if (e < -1 || e >= experts)
          moeError(fn, layer, "token " + std::to_string(t) + " slot " +
                                  std::to_string(j) + " names expert " +
                                  std::to_string(e) + " of " +
                                  std::to_string(experts));
        if (e < 0)
          continue; // dropped (capacity)
        ++mine[static_cast<size_t>(e)];
        to[static_cast<size_t>(ep.dest(e))] = 1;
      }
      for (size_t d = 0; d < g; ++d)
        mine[static_cast<size_t>(experts) + d] += to[d];
    }
    std::vector<int64_t> all(g * static_cast<size_t>(width));
    muirrt_all_gather_i64(axes_mask, mine.data(), all.data(), width);
    auto at = [&](int64_t s, int64_t col) {
      return all[static_cast<size_t>(s * width + col)];
    };
    // Every rank checks every rank's bound, so all stop together.
    checkBound(fn, layer, ep, bound, at);
    PlanView pv{plan, bound, ep.g};
    std::vector<int64_t> sendTokens(g), recvTokens(g);
    for (int64_t s = 0; s < ep.g; ++s) {
      pv.tokensFrom(s) = recvTokens[static_cast<size_t>(s)] =
          at(s, experts + ep.me);
      int64_t pairs = 0;
      for (int64_t e = ep.me * ep.el; e < (ep.me + 1) * ep.el; ++e)
        pairs += at(s, e);
      pv.pairsFrom(s) = pairs;
      pv.tokensTo(s) = sendTokens[static_cast<size_t>(s)] =
          mine[static_cast<size_t>(experts + s)];
      int64_t sentPairs = 0;
      for (int64_t e = s * ep.el; e < (s + 1) * ep.el; ++e)
        sentPairs += mine[static_cast<size_t>(e)];
      pv.pairsTo(s) = sentPairs;
    }
    // A token travels once to each rank holding one of its experts: its row,
    // then per slot the receiver's local expert (or -1) as int32, then (with
    // weights) per slot its weight.
    int64_t rowFloats = hidden + k + (weights ? k : 0);
    int64_t rowBytes = 4 * rowFloats;
    int64_t sent = 0, received = 0;
    for (size_t s = 0; s < g; ++s)
      sent += sendTokens[s], received += recvTokens[s];
    std::unique_ptr<float[]> sendBuf = staging(sent * rowFloats), recvStore;
    float *recvBuf =
        receiveBuffer(ep.g, sendBuf.get(), received * rowFloats, recvStore);
    int64_t row = 0;
    forEachSent(ep, indices, [&](int64_t d, int64_t t) {
      float *dst = sendBuf.get() + row * rowFloats;
      std::copy(x + t * hidden, x + (t + 1) * hidden, dst);
      auto *meta = reinterpret_cast<int32_t *>(dst + hidden);
      for (int64_t j = 0; j < k; ++j) {
        int64_t e = indices[t * k + j];
        meta[j] = e >= 0 && ep.dest(e) == d
                      ? static_cast<int32_t>(e - d * ep.el)
                      : -1;
        if (weights)
          dst[hidden + k + j] = weights[t * k + j];
      }
      ++row;
    });
    muirrt_all_to_allv_bytes(axes_mask, sendBuf.get(), sendTokens.data(),
                             recvBuf, recvTokens.data(), rowBytes);
    // Expert-major: local expert, then source rank, then the source's token
    // order, so an expert's rows are the same rows in the same order for any
    // number of ranks.
    std::vector<int64_t> cursor(static_cast<size_t>(ep.el));
    int64_t total = 0;
    for (int64_t le = 0; le < ep.el; ++le) {
      int64_t n = 0;
      for (int64_t s = 0; s < ep.g; ++s)
        n += at(s, ep.me * ep.el + le);
      counts[le] = n;
      cursor[static_cast<size_t>(le)] = total;
      total += n;
    }
    // The plan first (each pair's row, in order), then the rows, side by
    // side: each row written once, from its arrived token.
    int64_t wire = 0;
    std::vector<int64_t> slotOf(static_cast<size_t>(total));
    for (int64_t tok = 0; tok < received; ++tok) {
      const auto *meta =
          reinterpret_cast<const int32_t *>(recvBuf + tok * rowFloats + hidden);
      for (int64_t j = 0; j < k; ++j) {
        int32_t le = meta[j];
        if (le < 0)
          continue;
        int64_t r = cursor[static_cast<size_t>(le)]++;
        pv.recvToken(r) = tok;
        pv.pairWire(r) = wire++;
        slotOf[static_cast<size_t>(r)] = j;
      }
    }
    forEachBlock(total, 256, [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) {
        const float *src = recvBuf + pv.recvToken(r) * rowFloats;
        float *dst = out + r * hidden;
        if (weights) {
          float w = src[hidden + k + slotOf[static_cast<size_t>(r)]];
          for (int64_t h = 0; h < hidden; ++h)
            dst[h] = w * src[h];
        } else {
          std::copy(src, src + hidden, dst);
        }
      }
    });
    std::fill(out + total * hidden, out + bound * hidden, 0.0f);
    for (int64_t r = total; r < bound; ++r)
      pv.recvToken(r) = pv.pairWire(r) = -1;
  } catch (const std::bad_alloc &) {
    moeError(fn, layer, "out of memory");
  }
}

extern "C" void muirrt_moe_combine(int64_t axes_mask, int64_t tokens,
                                   int64_t k, int64_t experts,
                                   int64_t hidden, const float *rows,
                                   int64_t bound, const int64_t *indices,
                                   const int64_t *plan, const float *weights,
                                   float *out, const char *layer) {
  const char *fn = "muirrt_moe_combine";
  // Buffers are sized by the routing: running out of memory stops every
  // rank with a message instead of escaping through the JIT frames.
  try {
    Ep ep = epOf(fn, layer, axes_mask, tokens, k, experts);
    PlanView pv{const_cast<int64_t *>(plan), bound, ep.g};
    std::vector<int64_t> sendPairs(static_cast<size_t>(ep.g)),
        recvPairs(static_cast<size_t>(ep.g));
    int64_t sent = 0, received = 0;
    for (int64_t s = 0; s < ep.g; ++s) {
      sent += sendPairs[static_cast<size_t>(s)] = pv.pairsFrom(s);
      received += recvPairs[static_cast<size_t>(s)] = pv.pairsTo(s);
    }
    // Each expert row goes back to its token's rank, in the order its pair
    // arrived (source rank, token, slot).
    for (int64_t r = 0; r < bound; ++r)
      if (pv.pairWire(r) >= sent)
        moeError(fn, layer, "plan names wire row " +
                                std::to_string(pv.pairWire(r)) + " of " +
                                std::to_string(sent) +
                                " (a plan from another dispatch?)");
    std::unique_ptr<float[]> sendBuf = staging(sent * hidden), recvStore;
    forEachBlock(bound, 256, [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r)
        if (int64_t w = pv.pairWire(r); w >= 0)
          std::copy(rows + r * hidden, rows + (r + 1) * hidden,
                    sendBuf.get() + w * hidden);
    });
    float *recvBuf =
        receiveBuffer(ep.g, sendBuf.get(), received * hidden, recvStore);
    muirrt_all_to_allv_bytes(axes_mask, sendBuf.get(), sendPairs.data(),
                             recvBuf, recvPairs.data(), 4 * hidden);
    // Home: the slot each arrived row belongs to.
    std::vector<int64_t> where(static_cast<size_t>(tokens * k), -1);
    int64_t c = 0;
    forEachPairHome(ep, indices, [&](int64_t t, int64_t j) {
      where[static_cast<size_t>(t * k + j)] = c++;
    });
    if (c != received)
      moeError(fn, layer, "the routing routes " + std::to_string(c) +
                              " pairs but dispatch's plan brings back " +
                              std::to_string(received));
    // The weighted sum over the slots in slot order, in double: the same
    // operations whatever the number of ranks (or threads).
    // (An allocation failing on a worker thread is caught there: thrown
    // through the thread pool it would end the process, not reach
    // moeError.)
    std::atomic<bool> outOfMemory{false};
    forEachBlock(tokens, 64, [&](int64_t lo, int64_t hi) {
      std::vector<double> acc;
      try {
        acc.resize(static_cast<size_t>(hidden));
      } catch (const std::bad_alloc &) {
        outOfMemory = true;
        return;
      }
      for (int64_t t = lo; t < hi; ++t) {
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t j = 0; j < k; ++j) {
          int64_t at = where[static_cast<size_t>(t * k + j)];
          if (at < 0)
            continue;
          double w = weights ? static_cast<double>(weights[t * k + j]) : 1.0;
          const float *src = recvBuf + at * hidden;
          for (int64_t h = 0; h < hidden; ++h)
            acc[static_cast<size_t>(h)] += w * static_cast<double>(src[h]);
        }
        for (int64_t h = 0; h < hidden; ++h)
          out[t * hidden + h] =
              static_cast<float>(acc[static_cast<size_t>(h)]);
      }
    });
    if (outOfMemory)
      moeError(fn, layer, "out of memory");
  } catch (const std::bad_alloc &) {
    moeError(fn, layer, "out of memory");
  }
}

extern "C" void muirrt_moe_combine_weights_grad(
    int64_t axes_mask, int64_t tokens, int64_t k, int64_t experts,
    int64_t hidden, const float *grad, const float *rows, int64_t bound,
    const int64_t *indices, const int64_t *plan, float *dweights,
    const char *layer) {
  const char *fn = "muirrt_moe_combine_weights_grad";
  // Buffers are sized by the routing: running out of memory stops every
  // rank with a message instead of escaping through the JIT frames.
  try {
    Ep ep = epOf(fn, layer, axes_mask, tokens, k, experts);
    PlanView pv{const_cast<int64_t *>(plan), bound, ep.g};
    size_t g = static_cast<size_t>(ep.g);
    std::vector<int64_t> sendTokens(g), recvTokens(g), sendPairs(g),
        recvPairs(g);
    int64_t sent = 0, received = 0, pairsHere = 0, pairsHome = 0;
    for (int64_t s = 0; s < ep.g; ++s) {
      size_t i = static_cast<size_t>(s);
      sent += sendTokens[i] = pv.tokensTo(s);
      received += recvTokens[i] = pv.tokensFrom(s);
      pairsHere += sendPairs[i] = pv.pairsFrom(s);
      pairsHome += recvPairs[i] = pv.pairsTo(s);
    }
    // The output gradient travels as the tokens did (once per rank)...
    std::unique_ptr<float[]> sendBuf = staging(sent * hidden), recvStore;
    int64_t row = 0;
    forEachSent(ep, indices, [&](int64_t, int64_t t) {
      if (row < sent)
        std::copy(grad + t * hidden, grad + (t + 1) * hidden,
                  sendBuf.get() + row * hidden);
      ++row;
    });
    if (row != sent)
      moeError(fn, layer, "the routing sends " + std::to_string(row) +
                              " tokens but dispatch's plan sent " +
                              std::to_string(sent));
    float *recvBuf =
        receiveBuffer(ep.g, sendBuf.get(), received * hidden, recvStore);
    muirrt_all_to_allv_bytes(axes_mask, sendBuf.get(), sendTokens.data(),
                             recvBuf, recvTokens.data(), 4 * hidden);
    // ... each expert row's dot product with it (double) comes back as one
    // float per pair.
    for (int64_t r = 0; r < bound; ++r) {
      int64_t tok = pv.recvToken(r), w = pv.pairWire(r);
      if (tok >= 0 && (tok >= received || w < 0 || w >= pairsHere))
        moeError(fn, layer, "plan does not match the routing");
    }
    std::vector<float> dots(static_cast<size_t>(pairsHere));
    forEachBlock(bound, 256, [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) {
        int64_t tok = pv.recvToken(r);
        if (tok < 0)
          continue;
        double dot = 0.0;
        const float *a = recvBuf + tok * hidden, *b = rows + r * hidden;
        for (int64_t h = 0; h < hidden; ++h)
          dot += static_cast<double>(a[h]) * static_cast<double>(b[h]);
        dots[static_cast<size_t>(pv.pairWire(r))] = static_cast<float>(dot);
      }
    });
    std::vector<float> home(static_cast<size_t>(pairsHome));
    muirrt_all_to_allv_bytes(axes_mask, dots.data(), sendPairs.data(),
                             home.data(), recvPairs.data(), 4);
    int64_t pairs = 0;
    forEachPairHome(ep, indices, [&](int64_t, int64_t) { ++pairs; });
    if (pairs != pairsHome)
      moeError(fn, layer, "the routing routes " + std::to_string(pairs) +
                              " pairs but dispatch's plan brings back " +
                              std::to_string(pairsHome) +
                              " (indices other than the dispatched ones?)");
    std::fill(dweights, dweights + tokens * k, 0.0f);
    int64_t c = 0;
    forEachPairHome(ep, indices, [&](int64_t t, int64_t j) {
      dweights[t * k + j] = home[static_cast<size_t>(c++)];
    });
  } catch (const std::bad_alloc &) {
    moeError(fn, layer, "out of memory");
  }
}

extern "C" void muirrt_grouped_gemm_wgrad(int64_t experts, int64_t rows,
                                          int64_t k, int64_t n,
                                          const float *in, const float *grad,
                                          int32_t trans_w,
                                          const int64_t *sizes, float *dw) {
  groupedWgrad("muirrt_grouped_gemm_wgrad", false, experts, rows, k, n, in,
               grad, trans_w, sizes, dw);
}

extern "C" void muirrt_grouped_gemm_wgrad_bf16(
    int64_t experts, int64_t rows, int64_t k, int64_t n, const float *in,
    const float *grad, int32_t trans_w, const int64_t *sizes, float *dw) {
  groupedWgrad("muirrt_grouped_gemm_wgrad_bf16", true, experts, rows, k, n,
               in, grad, trans_w, sizes, dw);
}

extern "C" void muirrt_route_grad(int64_t tokens, int64_t experts, int64_t k,
                                  const float *logits, int32_t scoring,
                                  int32_t softmax_after_topk,
                                  int32_t normalize, float scaling,
                                  const int64_t *indices,
                                  const float *dweights, float *dlogits) {
  RouteGradParams p{experts, k, scoring, softmax_after_topk, normalize,
                    scaling};
  std::vector<double> doubles(
      static_cast<size_t>(routeGradScratchDoubles(experts, k)));
  RouteGradScratch s = routeGradScratchAt(doubles.data(), experts, k);
  for (int64_t t = 0; t < tokens; ++t) {
    const int64_t *idx = indices + t * k;
    int64_t j = routeGradToken(p, logits + t * experts, idx, dweights + t * k,
                               dlogits + t * experts, s);
    if (j >= 0) {
      std::string msg = "token " + std::to_string(t) + " slot " +
                        std::to_string(j) + " names expert " +
                        std::to_string(idx[j]) + " of " +
                        std::to_string(experts) +
                        " (route_grad needs muir.route's own indices, "
                        "from before muir.capacity's drops)";
      muirrt_abort_run("muirrt_route_grad", msg.c_str());
    }
  }
}

extern "C" void muirrt_mse_loss(int64_t n, const float *in,
                                const float *target, float scale, float *loss,
                                float *grad) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    float d = in[i] - target[i];
    sum += static_cast<double>(d) * static_cast<double>(d);
    grad[i] = scale * d;
  }
  loss[0] = static_cast<float>(0.5 * static_cast<double>(scale) * sum);
}

extern "C" void muirrt_capacity(int64_t tokens, int64_t k, int64_t experts,
                                double capacity_factor, int32_t policy,
                                int64_t group_tokens, const int64_t *indices,
                                const float *weights, int64_t *kept_indices,
                                float *kept_weights, int64_t *counts) {
  int64_t group = group_tokens > 0 ? group_tokens : tokens;
  if (tokens == 0 && group_tokens == 0) { // a layer called on no tokens
    std::fill(counts, counts + experts, int64_t{0});
    return;
  }
  if (group <= 0 || tokens % group != 0 || !(capacity_factor > 0.0))
    muirrt_abort_run("muirrt_capacity",
                     ("bad capacity factor or token group (" +
                      std::to_string(capacity_factor) + ", " +
                      std::to_string(group_tokens) + " of " +
                      std::to_string(tokens) + " tokens)")
                         .c_str());
  int64_t capacity = static_cast<int64_t>(std::ceil(
      capacity_factor * static_cast<double>(group * k) /
      static_cast<double>(experts)));
  std::fill(counts, counts + experts, int64_t{0});
  std::vector<std::vector<int64_t>> chosen(static_cast<size_t>(experts));
  for (int64_t start = 0; start < tokens; start += group) {
    for (auto &c : chosen)
      c.clear();
    // The pairs of this block per expert, in token order.
    for (int64_t t = start; t < start + group; ++t)
      for (int64_t j = 0; j < k; ++j) {
        int64_t pair = t * k + j, e = indices[pair];
        kept_indices[pair] = -1;
        kept_weights[pair] = 0.0f;
        if (e >= 0 && e < experts)
          chosen[static_cast<size_t>(e)].push_back(pair);
      }
    for (int64_t e = 0; e < experts; ++e) {
      std::vector<int64_t> &c = chosen[static_cast<size_t>(e)];
      // Highest weight first, ties in token order (c holds the pairs in
      // increasing order): a total order, so std::sort gives what a stable
      // sort by weight would.
      if (policy == 0)
        std::sort(c.begin(), c.end(), [&](int64_t a, int64_t b) {
          return weights[a] > weights[b] ||
                 (weights[a] == weights[b] && a < b);
        });
      int64_t keep = std::min<int64_t>(capacity, static_cast<int64_t>(c.size()));
      for (int64_t i = 0; i < keep; ++i) {
        int64_t pair = c[static_cast<size_t>(i)];
        kept_indices[pair] = e;
        kept_weights[pair] = weights[pair];
      }
      counts[e] += keep;
    }
  }
}
