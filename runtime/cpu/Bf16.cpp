//===- Bf16.cpp - products on bf16 buffers (a bf16 Newton-Schulz) ---------===//
//
// muirrt_bgemm and muirrt_bsyrk: bf16 operands, the products accumulated in
// f32, alpha and beta * Acc applied in f32, the result rounded once to bf16
// to nearest even (the CUDA runtime's tensor cores give the same numerics).
//
// With oneDNN (MUIR_RT_HAVE_DNNL) they run on its bf16 matmul: AMX or
// AVX512-BF16 where the CPU has them (brg:avx512_core_amx_bf16 on this
// project's machine, 700 to 1000 GFLOP/s on one core against OpenBLAS
// sgemm's 100 to 150). One primitive per shape, layout, alpha, beta and
// thread count, made on first use and kept: alpha is the primitive's output
// scale and beta its sum post-op (oneDNN 2.6 runs runtime output scales on
// its slower gemm:jit), a batch is a 3-D matmul and a transpose a memory
// descriptor's strides; each primitive gets the caller's scratchpad. oneDNN
// has no SYRK: see syrkBlock for how the symmetric products run and what
// they cost. oneDNN (Debian's libdnnl, OpenMP) runs on as many threads as
// OpenBLAS (muirrt_blas_threads; one below kParallelFlops), so the
// layout-invariant mode's one thread holds for it too; the caller's OpenMP
// thread count is restored after each call (in a PyTorch process oneDNN
// shares torch's libgomp).
//
// Without oneDNN, or where it offers only its reference implementation, the
// operands are widened to f32 (exactly) and the products run on
// muirrt_sgemm / muirrt_ssyrk: the same numerics at the f32 rate.
//
// The hardware's conversions (VCVTNEPS2BF16, AMX's TDPBF16PS) treat
// subnormal bf16 inputs and results as zero; the widening path keeps them.
// Newton-Schulz iterates are normalised, far from 1e-38.
//
//===----------------------------------------------------------------------===//

#include "muir-rt/Runtime.h"

#include "Parallel.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#if MUIR_RT_HAVE_DNNL
#include <oneapi/dnnl/dnnl.hpp>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <atomic>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <tuple>

// The OpenMP runtime oneDNN runs on (libgomp); declared here because
// clang ships no omp.h without libomp.
extern "C" void omp_set_num_threads(int threads);
extern "C" int omp_get_max_threads(void);
#endif

namespace muirrt_detail {
void countGemm(double flops);
void countSyrk(double flops);
} // namespace muirrt_detail

namespace {

float widen(uint16_t v) {
  uint32_t bits = static_cast<uint32_t>(v) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

std::vector<float> widened(const uint16_t *in, int64_t count) {
  std::vector<float> out(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    out[i] = widen(in[i]);
  return out;
}

void narrowInto(const std::vector<float> &in, uint16_t *out) {
  for (size_t i = 0; i < in.size(); ++i)
    out[i] = muirrt_bf16_round(in[i]);
}

/// The f32 accumulator of a product into `c`: `acc` (or c) widened, or
/// zeros when beta is 0 (which ignores the accumulator).
std::vector<float> accumulator(const uint16_t *c, const uint16_t *acc,
                               float beta, int64_t count) {
  if (beta == 0.0f)
    return std::vector<float>(static_cast<size_t>(count), 0.0f);
  return widened(acc ? acc : c, count);
}

/// The products on f32 copies (muirrt_sgemm / muirrt_ssyrk count them).
void widenedGemm(int64_t batch, int32_t trans_a, int32_t trans_b, int64_t m,
                 int64_t n, int64_t k, float alpha, const uint16_t *a,
                 const uint16_t *b, float beta, uint16_t *c,
                 const uint16_t *acc) {
  std::vector<float> fa = widened(a, batch * m * k);
  // X X^T reads one buffer twice: widen it once.
  bool same = b == a && k * n == m * k;
  std::vector<float> fb =
      same ? std::vector<float>() : widened(b, batch * k * n);
  std::vector<float> fc = accumulator(c, acc, beta, batch * m * n);
  muirrt_sgemm(batch, trans_a, trans_b, m, n, k, alpha, fa.data(),
               same ? fa.data() : fb.data(), beta, fc.data(), nullptr);
  narrowInto(fc, c);
}

void widenedSyrk(int64_t batch, int32_t trans, int64_t n, int64_t k,
                 float alpha, const uint16_t *a, float beta, uint16_t *c,
                 const uint16_t *acc) {
  std::vector<float> fa = widened(a, batch * n * k);
  std::vector<float> fc = accumulator(c, acc, beta, batch * n * n);
  muirrt_ssyrk(batch, trans, n, k, alpha, fa.data(), beta, fc.data(), nullptr);
  narrowInto(fc, c);
}

/// C = beta * Acc rounded to bf16 (an empty product: k == 0).
void scaleOnly(int64_t count, float beta, uint16_t *c, const uint16_t *acc) {
  const uint16_t *from = acc ? acc : c;
  for (int64_t i = 0; i < count; ++i)
    c[i] = beta == 0.0f ? 0 : muirrt_bf16_round(beta * widen(from[i]));
}

#if MUIR_RT_HAVE_DNNL

#if defined(__SSE2__)
/// The 8 x 8 block at src (row stride srcStride) transposed to dst.
void transpose8x8(const uint16_t *src, int64_t srcStride, uint16_t *dst,
                  int64_t dstStride) {
  __m128i r[8], p[8], q[8];
  for (int i = 0; i < 8; ++i)
    r[i] =
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i * srcStride));
  // Interleave pairs of rows, then pairs of pairs, then halves: after the
  // third step vector j holds column j.
  for (int i = 0; i < 4; ++i) {
    p[2 * i] = _mm_unpacklo_epi16(r[2 * i], r[2 * i + 1]);
    p[2 * i + 1] = _mm_unpackhi_epi16(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 2; ++i)
    for (int h = 0; h < 2; ++h) {
      q[4 * i + 2 * h] = _mm_unpacklo_epi32(p[4 * i + h], p[4 * i + h + 2]);
      q[4 * i + 2 * h + 1] = _mm_unpackhi_epi32(p[4 * i + h], p[4 * i + h + 2]);
    }
  for (int j = 0; j < 4; ++j) {
    _mm_storeu_si128(reinterpret_cast<__m128i *>(dst + 2 * j * dstStride),
                     _mm_unpacklo_epi64(q[j], q[j + 4]));
    _mm_storeu_si128(reinterpret_cast<__m128i *>(dst + (2 * j + 1) * dstStride),
                     _mm_unpackhi_epi64(q[j], q[j + 4]));
  }
}
#endif

/// dst[c * dstStride + r] = src[r * srcStride + c] for r < rows, c < cols:
/// in 16 x 16 tiles (larger ones measured slower: with a power-of-two
/// stride a tile's rows share few L1 sets), 8 x 8 blocks in SSE2 registers.
constexpr int64_t kTransposeTile = 16;
void transposeBlock(const uint16_t *src, int64_t srcStride, uint16_t *dst,
                    int64_t dstStride, int64_t rows, int64_t cols) {
  constexpr int64_t kTile = kTransposeTile;
  for (int64_t rb = 0; rb < rows; rb += kTile)
    for (int64_t cb = 0; cb < cols; cb += kTile) {
      int64_t rEnd = std::min(rb + kTile, rows);
      int64_t cEnd = std::min(cb + kTile, cols);
      int64_t r = rb;
#if defined(__SSE2__)
      for (; r + 8 <= rEnd; r += 8) {
        int64_t c = cb;
        for (; c + 8 <= cEnd; c += 8)
          transpose8x8(src + r * srcStride + c, srcStride,
                       dst + c * dstStride + r, dstStride);
        for (; c < cEnd; ++c)
          for (int64_t i = r; i < r + 8; ++i)
            dst[c * dstStride + i] = src[i * srcStride + c];
      }
#endif
      for (; r < rEnd; ++r)
        for (int64_t c = cb; c < cEnd; ++c)
          dst[c * dstStride + r] = src[r * srcStride + c];
    }
}

/// Copies the upper triangle of each n x n bf16 matrix onto its lower one:
/// tiles of transposeBlock, walked in squares of 128 that stay in L2 (n =
/// 1024: 0.06 ms, against 0.19 in tiles of 64).
void mirrorUpperToLower(uint16_t *c, int64_t batch, int64_t n) {
  constexpr int64_t kOuter = 128, kTile = kTransposeTile;
  for (int64_t i = 0; i < batch; ++i) {
    uint16_t *ci = c + i * n * n;
    // Lower tile (ib, jb) is the transpose of upper tile (jb, ib), for the
    // tiles below the diagonal.
    for (int64_t ob = 0; ob < n; ob += kOuter)
      for (int64_t pb = 0; pb <= ob; pb += kOuter)
        for (int64_t ib = ob; ib < std::min(ob + kOuter, n); ib += kTile)
          for (int64_t jb = pb; jb < std::min(pb + kOuter, ib); jb += kTile)
            transposeBlock(ci + jb * n + ib, n, ci + ib * n + jb, n, kTile,
                           std::min(kTile, n - ib));
    for (int64_t ib = 0; ib < n; ib += kTile)
      for (int64_t r = ib; r < std::min(ib + kTile, n); ++r)
        for (int64_t col = ib; col < r; ++col)
          ci[r * n + col] = ci[col * n + r];
  }
}

/// Where element (i, r, c) of a [batch, rows, cols] bf16 operand lies:
/// i * batch + r * row + c * col elements from its pointer.
struct Strides {
  int64_t batch, row, col;
  auto tie() const { return std::tie(batch, row, col); }
};

/// Row-major rows x cols items packed back to back, or (transposed) the
/// transpose of row-major cols x rows items, read in place.
Strides packed(int64_t rows, int64_t cols, bool transposed) {
  return transposed ? Strides{rows * cols, 1, rows}
                    : Strides{rows * cols, cols, 1};
}

/// One matmul's shape, layout and constants: what a primitive is made for.
struct MatmulKey {
  int64_t batch, m, n, k;
  Strides a, b, c;
  uint32_t alphaBits, betaBits;
  int32_t threads;
  auto tie() const {
    return std::tuple_cat(std::tie(batch, m, n, k), a.tie(), b.tie(), c.tie(),
                          std::tie(alphaBits, betaBits, threads));
  }
  bool operator<(const MatmulKey &o) const { return tie() < o.tie(); }
};

/// A made primitive, or none (oneDNN failed or offered only "ref": the
/// call takes the widening path).
struct Matmul {
  bool usable = false;
  dnnl::matmul primitive;
  dnnl::memory::desc a, b, c, scratchpad;
};

uint32_t bitsOf(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

dnnl::memory::desc bf16Desc(int64_t batch, int64_t rows, int64_t cols,
                            const Strides &s) {
  return dnnl::memory::desc({batch, rows, cols}, dnnl::memory::data_type::bf16,
                            {s.batch, s.row, s.col});
}

/// Runs oneDNN on muirrt_blas_threads() threads for one call, then gives
/// the calling thread its OpenMP thread count back (a process with
/// PyTorch may share the OpenMP runtime with it).
class OmpThreads {
public:
  explicit OmpThreads(int threads) : saved(omp_get_max_threads()) {
    if (threads != saved)
      omp_set_num_threads(threads);
  }
  ~OmpThreads() {
    if (omp_get_max_threads() != saved)
      omp_set_num_threads(saved);
  }

private:
  int saved;
};

class Matmuls {
public:
  /// The primitive of `key`, made on first use. Shared: a caller keeps it
  /// while another call clears the cache.
  std::shared_ptr<const Matmul> get(const MatmulKey &key) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = made.find(key);
    if (it != made.end())
      return it->second;
    // A step has a few shapes and constants; a process that keeps making
    // new ones (an interactive session) starts over rather than grow.
    if (made.size() >= kMaxPrimitives)
      made.clear();
    auto mm = std::make_shared<const Matmul>(make(key));
    made.emplace(key, mm);
    return mm;
  }

  const dnnl::engine &cpu() { return engine; }

private:
  static constexpr size_t kMaxPrimitives = 1024;

  Matmul make(const MatmulKey &key) {
    Matmul mm;
    mm.a = bf16Desc(key.batch, key.m, key.k, key.a);
    mm.b = bf16Desc(key.batch, key.k, key.n, key.b);
    mm.c = bf16Desc(key.batch, key.m, key.n, key.c);
    float alpha, beta;
    std::memcpy(&alpha, &key.alphaBits, sizeof alpha);
    std::memcpy(&beta, &key.betaBits, sizeof beta);
    dnnl::primitive_attr attr;
    // The caller's scratchpad: oneDNN's own (library mode, Debian's build)
    // is shared by every primitive and tied to the thread that made it.
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (alpha != 1.0f)
      attr.set_output_scales(0, {alpha});
    if (beta != 0.0f) {
      dnnl::post_ops ops;
      ops.append_sum(beta);
      attr.set_post_ops(ops);
    }
    try {
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(mm.a, mm.b, mm.c),
                                      attr, engine);
      if (std::strncmp(pd.impl_info_str(), "ref", 3) == 0)
        return mm;
      mm.primitive = dnnl::matmul(pd);
      mm.scratchpad = pd.scratchpad_desc();
      mm.usable = true;
    } catch (const dnnl::error &) {
      // Unsupported here (an old CPU): the widening path.
    }
    return mm;
  }

  std::mutex mutex;
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  std::map<MatmulKey, std::shared_ptr<const Matmul>> made;
};

/// The process's primitives, or null when oneDNN has no CPU engine. Never
/// destroyed: a step may still run while the process exits.
Matmuls *matmuls() {
  static Matmuls *instance = []() -> Matmuls * {
    try {
      return new Matmuls;
    } catch (const dnnl::error &) {
      return nullptr;
    }
  }();
  return instance;
}

/// One product of a call: C = alpha A B + beta C, [batch, m, k] x
/// [batch, k, n] -> [batch, m, n] at the given places. The thread that runs
/// it first copies `accFrom` (when set: the packed accumulator, batch m n
/// elements) into C, and afterwards mirrors each n x n result's upper
/// triangle onto its lower one when `mirror`: both on the product's own
/// matrices while they are in its cache, side by side with the others.
struct Product {
  int64_t batch, m, n, k;
  const uint16_t *a;
  Strides aStrides;
  const uint16_t *b;
  Strides bStrides;
  uint16_t *c;
  Strides cStrides;
  const uint16_t *accFrom = nullptr;
  bool mirror = false;
};

/// Runs one product on the calling thread, with its own stream and
/// scratchpad (kept for the thread's next products).
void execute(const Matmul &mm, const Product &p, const dnnl::engine &cpu) {
  if (p.accFrom && p.accFrom != p.c)
    std::memmove(p.c, p.accFrom,
                 static_cast<size_t>(p.batch * p.m * p.n) * sizeof *p.c);
  struct FreeDeleter {
    void operator()(void *q) const { std::free(q); }
  };
  thread_local std::unique_ptr<void, FreeDeleter> scratch;
  thread_local size_t scratchBytes = 0;
  constexpr size_t kAlign = 64;
  size_t need = (mm.scratchpad.get_size() + kAlign - 1) / kAlign * kAlign;
  if (need > scratchBytes) {
    scratch.reset(std::aligned_alloc(kAlign, need));
    if (!scratch)
      throw std::bad_alloc();
    scratchBytes = need;
  }
  dnnl::stream stream(cpu);
  mm.primitive.execute(
      stream,
      {{DNNL_ARG_SRC, dnnl::memory(mm.a, cpu, const_cast<uint16_t *>(p.a))},
       {DNNL_ARG_WEIGHTS, dnnl::memory(mm.b, cpu, const_cast<uint16_t *>(p.b))},
       {DNNL_ARG_DST, dnnl::memory(mm.c, cpu, p.c)},
       {DNNL_ARG_SCRATCHPAD, dnnl::memory(mm.scratchpad, cpu, scratch.get())}});
  stream.wait();
  if (p.mirror)
    mirrorUpperToLower(p.c, p.batch, p.n);
}

/// Calls of fewer flops run on one thread: threads cost more than they
/// save there (Newton-Schulz of 256 x 256, 2^25-flop products: 0.60 ms
/// on one thread, 0.71 on two; 256 x 512, 2^26: 0.91 and 1.03; 384 x 384,
/// 1.1e8 flops, gains from two).
constexpr double kParallelFlops = 1.0e8;

/// Runs `products` (of one alpha and beta) on oneDNN; false, with nothing
/// written, when it has no usable primitive for one of them. With
/// `spread`, the products run side by side, each on one of the threads
/// (several small products keep every thread busy, where oneDNN splitting
/// each one waits at its end for the slowest thread), else one after the
/// other on all of them.
bool runOnDnnl(const char *fn, float alpha, float beta,
               const std::vector<Product> &products, bool spread) {
  Matmuls *all = matmuls();
  if (!all)
    return false;
  int threads = muirrt_blas_threads();
  double flops = 0;
  for (const Product &p : products)
    flops += 2.0 * double(p.batch) * double(p.m) * double(p.n) * double(p.k);
  if (flops < kParallelFlops)
    threads = 1;
  int team = spread ? static_cast<int>(std::min<size_t>(
                          static_cast<size_t>(threads), products.size()))
                    : 1;
  int each = team > 1 ? 1 : threads;
  // oneDNN sizes a primitive's blocking for the threads it is made with.
  OmpThreads scope(each);
  // -0.0 and 0.0 are one beta; beta 0 never reads C.
  uint32_t betaBits = bitsOf(beta == 0.0f ? 0.0f : beta);
  std::vector<std::shared_ptr<const Matmul>> prims;
  for (const Product &p : products) {
    prims.push_back(all->get({p.batch, p.m, p.n, p.k, p.aStrides, p.bStrides,
                              p.cStrides, bitsOf(alpha), betaBits, each}));
    if (!prims.back()->usable)
      return false;
  }
  std::string why;
  if (team <= 1) {
    try {
      for (size_t i = 0; i < products.size(); ++i)
        execute(*prims[i], products[i], all->cpu());
    } catch (const std::exception &e) {
      why = e.what();
    }
  } else {
    // Each product a part, the largest first (the last ones taken are the
    // small ones), on runParts' threads (libgomp's team).
    struct Spread {
      const std::vector<Product> *products;
      const std::vector<std::shared_ptr<const Matmul>> *prims;
      std::vector<size_t> order;
      const dnnl::engine *cpu;
      std::mutex whyMutex;
      std::string why;
    } t;
    t.products = &products;
    t.prims = &prims;
    t.cpu = &all->cpu();
    t.order.resize(products.size());
    for (size_t i = 0; i < t.order.size(); ++i)
      t.order[i] = i;
    auto flops = [&](size_t i) {
      return double(products[i].m) * double(products[i].n) *
             double(products[i].k);
    };
    std::sort(t.order.begin(), t.order.end(), [&](size_t x, size_t y) {
      return flops(x) != flops(y) ? flops(x) > flops(y) : x < y;
    });
    muirrt_detail::runParts(
        [](void *ctx, int64_t lo, int64_t hi) {
          Spread &s = *static_cast<Spread *>(ctx);
          for (int64_t at = lo; at < hi; ++at) {
            size_t i = s.order[static_cast<size_t>(at)];
            try {
              execute(*(*s.prims)[i], (*s.products)[i], *s.cpu);
            } catch (const std::exception &e) {
              std::lock_guard<std::mutex> lock(s.whyMutex);
              s.why = e.what();
            }
          }
        },
        &t, static_cast<int64_t>(products.size()),
        static_cast<int64_t>(products.size()), team);
    why = t.why;
  }
  if (!why.empty()) {
    why = "oneDNN matmul failed: " + why;
    muirrt_abort_run(fn, why.c_str());
  }
  return true;
}

/// A batch of products as one product per thread, each of a share of the
/// matrices (with its share of the accumulator copy and the mirroring),
/// run side by side: one product on all the threads leaves the copy and
/// the mirror to one thread while the others wait. A single matrix, or a
/// product of too few flops, stays whole.
std::vector<Product> perThread(const Product &whole) {
  int64_t threads = muirrt_blas_threads();
  double flops = 2.0 * double(whole.batch) * double(whole.m) *
                 double(whole.n) * double(whole.k);
  if (threads < 2 || whole.batch < 2 || flops < kParallelFlops)
    return {whole};
  int64_t parts = std::min(threads, whole.batch);
  std::vector<Product> out;
  for (int64_t i = 0, first = 0; i < parts; ++i) {
    Product p = whole;
    p.batch = whole.batch / parts + (i < whole.batch % parts ? 1 : 0);
    p.a += first * whole.aStrides.batch;
    p.b += first * whole.bStrides.batch;
    p.c += first * whole.cStrides.batch;
    if (p.accFrom)
      p.accFrom += first * whole.m * whole.n;
    out.push_back(p);
    first += p.batch;
  }
  return out;
}

/// Whether [p, p + count) and [q, q + qCount) share an element.
bool overlaps(const uint16_t *p, int64_t count, const uint16_t *q,
              int64_t qCount) {
  auto lo = reinterpret_cast<uintptr_t>(p),
       qLo = reinterpret_cast<uintptr_t>(q);
  return lo < qLo + 2 * uint64_t(qCount) && qLo < lo + 2 * uint64_t(count);
}

bool dnnlGemm(int64_t batch, int32_t trans_a, int32_t trans_b, int64_t m,
              int64_t n, int64_t k, float alpha, const uint16_t *a,
              const uint16_t *b, float beta, uint16_t *c, const uint16_t *acc) {
  // oneDNN reads its operands while it writes C; the widening path reads
  // copies (a C that is an operand is no call the compiler makes).
  if (overlaps(c, batch * m * n, a, batch * m * k) ||
      overlaps(c, batch * m * n, b, batch * k * n))
    return false;
  // The sum post-op adds beta times what C holds: the thread running a
  // product copies acc there first. (Without a primitive the widening path
  // reads acc, unchanged.)
  Product whole{batch, m, n, k, a, packed(m, k, trans_a != 0), b,
                packed(k, n, trans_b != 0), c, packed(m, n, false)};
  if (beta != 0.0f && acc && acc != c)
    whole.accFrom = acc;
  std::vector<Product> parts = perThread(whole);
  return runOnDnnl("muirrt_bgemm", alpha, beta, parts, parts.size() > 1);
}

/// Columns per block of a symmetric product's upper triangle, or 0 for the
/// full GEMM (2 n^2 k flops; blocks of 128: 0.625 of that at n = 512,
/// 0.5625 at 1024). The blocks are oneDNN products on dense buffers (on
/// strided ones it leaves AMX for gemm:jit, 3x slower), A A^T on A read in
/// place, A^T A on A transposed first, spread over the threads. Measured
/// (ms, full GEMM and mirror -> blocks; 2 threads, then 1): A A^T n = k =
/// 512 0.17 -> 0.14, 0.27 -> 0.21; 1024 0.93 -> 0.86, 2.4 -> 1.4; 2048
/// 9 to 12 -> 6.0, 24 -> 15; A^T A n = k = 512 0.17 -> 0.22, 0.25 -> 0.28;
/// 1024 1.5 -> 1.2, 3.6 -> 2.3; n = 1024, k = 2048 3.0 -> 3.4, 6.5 -> 4.9.
int64_t syrkBlock(int64_t n, bool trans) {
  constexpr int64_t kBlock = 128;
  return n >= (trans ? 1024 : 512) ? kBlock : 0;
}

/// The elements of one n x n matrix's upper-triangle column blocks of
/// `block` columns (0: the whole matrix): the products' m n, their flops
/// over k twice that times k.
int64_t syrkElements(int64_t n, int64_t block) {
  if (block <= 0)
    return n * n;
  int64_t elements = 0;
  for (int64_t c0 = 0; c0 < n; c0 += block)
    elements += (c0 + std::min(block, n - c0)) * std::min(block, n - c0);
  return elements;
}

/// Each n x k matrix of `batch` (stored k x n) transposed into `out`.
void transposeInto(const uint16_t *a, int64_t batch, int64_t n, int64_t k,
                   uint16_t *out) {
  for (int64_t i = 0; i < batch; ++i)
    transposeBlock(a + i * n * k, n, out + i * n * k, k, k, n);
}

/// C = alpha op(A) op(A)^T + beta Acc, upper triangle then mirrored (C
/// exactly symmetric, as muirrt_ssyrk's). Returns the flops, or -1 (nothing
/// written) when oneDNN has no usable primitive.
double dnnlSyrk(int64_t batch, int32_t trans, int64_t n, int64_t k, float alpha,
                const uint16_t *a, float beta, uint16_t *c,
                const uint16_t *acc) {
  int64_t count = batch * n * n;
  if (overlaps(c, count, a, batch * n * k))
    return -1;
  int64_t block = syrkBlock(n, trans != 0);
  if (block == 0) {
    // op(A) is n x k: A stored n x k, or k x n read transposed; op(A)^T
    // is the same elements with the roles of the strides swapped.
    Strides opA = packed(n, k, trans != 0);
    Strides opAT{opA.batch, opA.col, opA.row};
    Product whole{batch, n, n, k, a, opA, a, opAT, c, packed(n, n, false)};
    if (beta != 0.0f && acc && acc != c)
      whole.accFrom = acc;
    whole.mirror = true;
    std::vector<Product> parts = perThread(whole);
    if (!runOnDnnl("muirrt_bsyrk", alpha, beta, parts, parts.size() > 1))
      return -1;
    return 2.0 * double(batch) * double(n * n) * double(k);
  }

  // Column block [c0, c0 + cols) of the upper triangle: rows [0, c0 + cols)
  // of op(A) against rows [c0, c0 + cols) of it, into a dense temporary
  // that holds Acc's block first when beta reads it. (Scratch is left
  // uninitialised: a zero fill would cost a pass over it.)
  std::unique_ptr<uint16_t[]> transposed;
  const uint16_t *rows = a;
  if (trans) {
    transposed.reset(new uint16_t[static_cast<size_t>(batch * n * k)]);
    transposeInto(a, batch, n, k, transposed.get());
    rows = transposed.get();
  }
  const uint16_t *from = acc ? acc : c;
  std::unique_ptr<uint16_t[]> blocks(
      new uint16_t[static_cast<size_t>(batch * syrkElements(n, block))]);
  std::vector<Product> products;
  uint16_t *next = blocks.get();
  for (int64_t i = 0; i < batch; ++i)
    for (int64_t c0 = 0; c0 < n; c0 += block) {
      int64_t cols = std::min(block, n - c0), height = c0 + cols;
      if (beta != 0.0f)
        for (int64_t r = 0; r < height; ++r)
          std::memcpy(next + r * cols, from + i * n * n + r * n + c0,
                      static_cast<size_t>(cols) * sizeof *c);
      const uint16_t *ai = rows + i * n * k;
      products.push_back({1, height, cols, k, ai, packed(height, k, false),
                          ai + c0 * k, packed(k, cols, true), next,
                          packed(height, cols, false)});
      next += height * cols;
    }
  if (!runOnDnnl("muirrt_bsyrk", alpha, beta, products, true))
    return -1;
  const uint16_t *stored = blocks.get();
  for (int64_t i = 0; i < batch; ++i)
    for (int64_t c0 = 0; c0 < n; c0 += block) {
      int64_t cols = std::min(block, n - c0), height = c0 + cols;
      for (int64_t r = 0; r < height; ++r)
        std::memcpy(c + i * n * n + r * n + c0, stored + r * cols,
                    static_cast<size_t>(cols) * sizeof *c);
      stored += height * cols;
    }
  mirrorUpperToLower(c, batch, n);
  return 2.0 * double(batch) * double(syrkElements(n, block)) * double(k);
}

#endif // MUIR_RT_HAVE_DNNL

} // namespace

//===----------------------------------------------------------------------===//
// f32 results of bf16 operands (muirrt_grouped_gemm_bf16's products)
//===----------------------------------------------------------------------===//

namespace muirrt_detail {

#if MUIR_RT_HAVE_DNNL
namespace {

/// A product with one run-time dimension (M, or K when `runtimeK`): one
/// primitive per layout and fixed sizes serves every ragged group, where a
/// primitive per shape would be made again for each new group size (0.6 to
/// 3.5 ms each). oneDNN 2.6 runs these on gemm:jit (500 to 680 GFLOP/s on
/// one core of this project's machine, against brgemm's 590 to 670 for a
/// fixed shape and OpenBLAS sgemm's 150 to 170).
struct RowsKey {
  int64_t fixedA, n; ///< k (run-time M) or m (run-time K); n
  bool transA, transB, runtimeK;
  auto tie() const { return std::tie(fixedA, n, transA, transB, runtimeK); }
  bool operator<(const RowsKey &o) const { return tie() < o.tie(); }
};

struct RowsMatmul {
  bool usable = false;
  dnnl::matmul primitive;
  dnnl::memory::desc scratchpad;
};

dnnl::memory::desc f32RowsDesc(int64_t rows, int64_t cols,
                               dnnl::memory::data_type type, bool trans) {
  // [rows, cols] stored row-major, or (trans) its transpose stored
  // row-major: [cols, rows].
  dnnl::memory::dims strides =
      trans ? dnnl::memory::dims{1, rows} : dnnl::memory::dims{cols, 1};
  if (rows == DNNL_RUNTIME_DIM_VAL || cols == DNNL_RUNTIME_DIM_VAL)
    strides = trans ? dnnl::memory::dims{1, DNNL_RUNTIME_DIM_VAL}
                    : dnnl::memory::dims{DNNL_RUNTIME_DIM_VAL, 1};
  return dnnl::memory::desc({rows, cols}, type, strides);
}

std::shared_ptr<const RowsMatmul> rowsMatmul(const RowsKey &key) {
  static std::mutex mutex;
  static auto *made = new std::map<RowsKey, std::shared_ptr<const RowsMatmul>>;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = made->find(key);
  if (it != made->end())
    return it->second;
  if (made->size() >= 256)
    made->clear();
  auto mm = std::make_shared<RowsMatmul>();
  if (Matmuls *all = matmuls()) {
    constexpr int64_t kRun = DNNL_RUNTIME_DIM_VAL;
    int64_t m = key.runtimeK ? key.fixedA : kRun;
    int64_t k = key.runtimeK ? kRun : key.fixedA;
    using T = dnnl::memory::data_type;
    try {
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      dnnl::matmul::primitive_desc pd(
          dnnl::matmul::desc(f32RowsDesc(m, k, T::bf16, key.transA),
                             f32RowsDesc(k, key.n, T::bf16, key.transB),
                             f32RowsDesc(m, key.n, T::f32, false)),
          attr, all->cpu());
      if (std::strncmp(pd.impl_info_str(), "ref", 3) != 0) {
        mm->primitive = dnnl::matmul(pd);
        mm->scratchpad = pd.scratchpad_desc();
        mm->usable = true;
      }
    } catch (const dnnl::error &) {
      // Unsupported here: the caller widens.
    }
  }
  made->emplace(key, mm);
  return mm;
}

} // namespace
#endif // MUIR_RT_HAVE_DNNL

bool bf16ProductToF32(int64_t m, int64_t n, int64_t k, bool transA,
                      const uint16_t *a, bool transB, const uint16_t *b,
                      float *c, bool runtimeK) {
#if MUIR_RT_HAVE_DNNL
  std::shared_ptr<const RowsMatmul> mm =
      rowsMatmul({runtimeK ? m : k, n, transA, transB, runtimeK});
  if (!mm->usable)
    return false;
  using T = dnnl::memory::data_type;
  const dnnl::engine &cpu = matmuls()->cpu();
  struct FreeDeleter {
    void operator()(void *q) const { std::free(q); }
  };
  thread_local std::unique_ptr<void, FreeDeleter> scratch;
  thread_local size_t scratchBytes = 0;
  constexpr size_t kAlign = 64;
  size_t need = (mm->scratchpad.get_size() + kAlign - 1) / kAlign * kAlign;
  if (need > scratchBytes) {
    scratch.reset(std::aligned_alloc(kAlign, need ? need : kAlign));
    if (!scratch)
      throw std::bad_alloc();
    scratchBytes = need;
  }
  // One thread: the product's bits never depend on the thread count (the
  // caller runs the experts side by side).
  OmpThreads one(1);
  dnnl::stream stream(cpu);
  mm->primitive.execute(
      stream,
      {{DNNL_ARG_SRC, dnnl::memory(f32RowsDesc(m, k, T::bf16, transA), cpu,
                                   const_cast<uint16_t *>(a))},
       {DNNL_ARG_WEIGHTS, dnnl::memory(f32RowsDesc(k, n, T::bf16, transB),
                                       cpu, const_cast<uint16_t *>(b))},
       {DNNL_ARG_DST, dnnl::memory(f32RowsDesc(m, n, T::f32, false), cpu, c)},
       {DNNL_ARG_SCRATCHPAD,
        dnnl::memory(mm->scratchpad, cpu, scratch.get())}});
  stream.wait();
  return true;
#else
  (void)m, (void)n, (void)k, (void)transA, (void)a, (void)transB, (void)b,
      (void)c, (void)runtimeK;
  return false;
#endif
}

} // namespace muirrt_detail

extern "C" void muirrt_bgemm(int64_t batch, int32_t trans_a, int32_t trans_b,
                             int64_t m, int64_t n, int64_t k, float alpha,
                             const uint16_t *a, const uint16_t *b, float beta,
                             uint16_t *c, const uint16_t *acc) {
  if (batch <= 0 || m <= 0 || n <= 0 || k < 0)
    return;
  if (k == 0) {
    muirrt_detail::countGemm(0.0);
    scaleOnly(batch * m * n, beta, c, acc);
    return;
  }
#if MUIR_RT_HAVE_DNNL
  if (dnnlGemm(batch, trans_a, trans_b, m, n, k, alpha, a, b, beta, c, acc)) {
    muirrt_detail::countGemm(2.0 * double(batch) * double(m) * double(n) *
                             double(k));
    return;
  }
#endif
  widenedGemm(batch, trans_a, trans_b, m, n, k, alpha, a, b, beta, c, acc);
}

extern "C" void muirrt_bsyrk(int64_t batch, int32_t trans, int64_t n, int64_t k,
                             float alpha, const uint16_t *a, float beta,
                             uint16_t *c, const uint16_t *acc) {
  if (batch <= 0 || n <= 0 || k < 0)
    return;
  if (k == 0) {
    muirrt_detail::countSyrk(0.0);
    scaleOnly(batch * n * n, beta, c, acc);
    return;
  }
#if MUIR_RT_HAVE_DNNL
  double flops = dnnlSyrk(batch, trans, n, k, alpha, a, beta, c, acc);
  if (flops >= 0) {
    muirrt_detail::countSyrk(flops);
    return;
  }
#endif
  widenedSyrk(batch, trans, n, k, alpha, a, beta, c, acc);
}
