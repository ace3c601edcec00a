//===- DistReduce.cpp - muir runtime fixed-order reductions --------------===//
//
// The reductions of the distributed runtime (see Dist.cpp): pieces reduced
// locally in group-rank order (reduceOrdered), all_reduce (whole pieces
// gathered, or slices scattered, reduced and gathered back, or MPI's own
// reduction when not deterministic) and reduce_scatter.
//
//===----------------------------------------------------------------------===//

#include "muir-rt/Runtime.h"
#include "DistInternal.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

using namespace muirrt_dist_detail;

namespace {

void checkOp(const char *fn, int32_t op) {
  if (op < kSum || op > kAvg)
    fatal(fn, "unknown reduction op " + std::to_string(op) +
                  " (0 sum, 1 max, 2 min, 3 avg)");
}

// Slice j of an all_reduce of count floats over g members is
// [sliceBegin(count, j, g), sliceBegin(count, j + 1, g)).
int64_t sliceBegin(int64_t count, int64_t j, int64_t g) {
  return static_cast<int64_t>(static_cast<__int128>(count) * j / g);
}

// muirrt_all_reduce_scatters (Collectives.h): 3 or more members, every
// slice at least MUIR_RT_SCATTER_MIN_PER_MEMBER floats, MPI's int
// displacements.
bool allReduceScatters(int64_t count, const Group &g) {
  return muirrt_all_reduce_scatters(count, g.size) != 0;
}

#if MUIR_RT_HAVE_MPI
// A row-major [outer, inner * g] buffer ("wide") holds g pieces of
// [outer, inner]; element t of piece j (t = r * inner + c) lives at
// r * inner * g + j * inner + c. These copy elements [s, s + n) of piece j
// between the wide buffer and a contiguous one, a row segment at a time.
void pieceToFlat(const float *wide, float *flat, int64_t j, int64_t s,
                 int64_t n, int64_t inner, int64_t g) {
  for (int64_t t = s, end = s + n; t < end;) {
    int64_t r = t / inner, c = t % inner;
    int64_t len = std::min(inner - c, end - t);
    std::memcpy(flat + (t - s), wide + r * inner * g + j * inner + c,
                static_cast<size_t>(len) * sizeof(float));
    t += len;
  }
}
#endif

} // namespace

// (Without MPI too: the triangle all-reduce's wait sums its pieces with it.)
namespace [[gnu::visibility("hidden")]] muirrt_dist_detail {

// out[k] = op over j = 0, 1, ..., g-1 (in that order) of pieces[j * n + k]
// (muirrt_reduce_step, muir-rt/Collectives.h, which the CUDA runtime's
// kernel takes too; each loop has its op fixed, so it vectorises).
template <int32_t Op>
void reducePieces(const float *pieces, int64_t g, int64_t n, float *out) {
  std::memcpy(out, pieces, static_cast<size_t>(n) * sizeof(float));
  for (int64_t j = 1; j < g; ++j) {
    const float *p = pieces + j * n;
    for (int64_t k = 0; k < n; ++k)
      out[k] = muirrt_reduce_step(Op, out[k], p[k]);
  }
  if (Op == kAvg)
    for (int64_t k = 0; k < n; ++k)
      out[k] = muirrt_reduce_finish(Op, out[k], g);
}

void reduceOrdered(int32_t op, const float *pieces, int64_t g, int64_t n,
                   float *out) {
  switch (op) {
  case kSum:
    return reducePieces<kSum>(pieces, g, n, out);
  case kAvg:
    return reducePieces<kAvg>(pieces, g, n, out);
  case kMax:
    return reducePieces<kMax>(pieces, g, n, out);
  case kMin:
    return reducePieces<kMin>(pieces, g, n, out);
  }
}

} // namespace muirrt_dist_detail

#if MUIR_RT_HAVE_MPI
namespace {

// The deterministic all_reduce of allReduceScatters' sizes, in rounds of at
// most pieceChunk floats of every slice: an all-to-all sends slice j's
// round to member j, which reduces the g pieces in group-rank order into
// its slice of out; an in-place all-gather then brings every reduced slice
// to every member. Every member computes its slice as the gather-then-sum
// path would compute it, so both give the same bits. in == out is fine: a
// round writes only elements that it (or an earlier round) has sent.
void allReduceScattered(int32_t op, const float *in, float *out,
                        int64_t count, const Group &g) {
  int64_t members = g.size;
  std::vector<int64_t> lo(static_cast<size_t>(members) + 1);
  for (int64_t j = 0; j <= members; ++j)
    lo[static_cast<size_t>(j)] = sliceBegin(count, j, members);
  int64_t largest = 0;
  for (int64_t j = 0; j < members; ++j)
    largest = std::max(largest, lo[static_cast<size_t>(j) + 1] -
                                    lo[static_cast<size_t>(j)]);
  int64_t chunk = pieceChunk(members);
  float *recv = scratch(scratchA, chunk * members);
  std::vector<int> counts(static_cast<size_t>(members)),
      displs(static_cast<size_t>(members)),
      recvCounts(static_cast<size_t>(members)),
      recvDispls(static_cast<size_t>(members));
  size_t me = static_cast<size_t>(g.rank);
  for (int64_t t = 0; t < largest; t += chunk) {
    for (size_t j = 0; j < counts.size(); ++j) {
      int64_t size = lo[j + 1] - lo[j];
      counts[j] = asInt(std::clamp<int64_t>(size - t, 0, chunk));
      displs[j] = asInt(lo[j] + std::min(t, size));
    }
    int n = counts[me];
    for (size_t j = 0; j < counts.size(); ++j) {
      recvCounts[j] = n;
      recvDispls[j] = asInt(static_cast<int64_t>(j) * n);
    }
    commAlltoallv(g, in, counts.data(), displs.data(), recv,
                  recvCounts.data(), recvDispls.data(), Elem::F32, 1);
    reduceOrdered(op, recv, members, n, out + displs[me]);
    commAllgatherv(g, nullptr, 0, counts.data(), displs.data(), Elem::F32,
                   out);
  }
}

} // namespace
#endif

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

extern "C" void muirrt_all_reduce(int64_t axes_mask, int32_t op,
                                  const float *in, float *out,
                                  int64_t count) {
  const char *fn = "muirrt_all_reduce";
  guardedCollective(fn, [&] {
    checkOp(fn, op);
    checkNonNegative(fn, "count", count);
    checkPointer(fn, "input", in, count);
    checkPointer(fn, "output", out, count);
    Group g = groupFor(fn, axes_mask);
    agree(fn, g, axes_mask, "the count and the reduction", count, op);
    // Bytes: see the file comment (whole pieces to every peer, or slices
    // scattered and the reduced slice gathered).
    countComm(axes_mask, muirrt_sent_all_reduce(count, g.size, g.rank));
    if (g.size == 1) {
      copyFloats(out, in, count); // sum/max/min/avg of one piece
      return;
    }
#if MUIR_RT_HAVE_MPI
    if (!state.deterministic && !state.exchange) {
      // MPI's reduction, in the order its algorithm picks.
      int32_t reduce = op == kAvg ? kSum : op;
      for (int64_t s = 0; s < count; s += kIntMax) {
        int64_t n = std::min<int64_t>(kIntMax, count - s);
        commAllreduce(g, in == out ? nullptr : in + s, out + s, n, Elem::F32,
                      reduce);
      }
      if (op == kAvg)
        for (int64_t i = 0; i < count; ++i)
          out[i] /= static_cast<float>(g.size);
      return;
    }
    if (allReduceScatters(count, g)) {
      allReduceScattered(op, in, out, count, g);
      return;
    }
    // Allgather a chunk of every member's input, then reduce it locally in
    // group-rank order. in == out is fine: a chunk is read (sent) before
    // its output is written, and later chunks read further on.
    int64_t chunk = pieceChunk(g.size);
    float *pieces = scratch(scratchA, chunk * g.size);
    for (int64_t s = 0; s < count; s += chunk) {
      int64_t n = std::min(chunk, count - s);
      commAllgather(g, in + s, n, Elem::F32, pieces);
      reduceOrdered(op, pieces, g.size, n, out + s);
    }
#endif
  });
}

extern "C" void muirrt_reduce_scatter(int64_t axes_mask, int32_t op,
                                      const float *in, float *out,
                                      int64_t outer, int64_t inner) {
  const char *fn = "muirrt_reduce_scatter";
  guardedCollective(fn, [&] {
    checkOp(fn, op);
    checkNonNegative(fn, "outer", outer);
    checkNonNegative(fn, "inner", inner);
    Group g = groupFor(fn, axes_mask);
    agree(fn, g, axes_mask, "the slice shape (outer, inner)", outer, inner);
    int64_t block = mul(fn, outer, inner);
    checkPointer(fn, "input", in, mul(fn, block, g.size));
    checkPointer(fn, "output", out, block);
    countComm(axes_mask, muirrt_sent_blocks(block, g.size));
    if (g.size == 1) {
      copyFloats(out, in, block);
      return;
    }
#if MUIR_RT_HAVE_MPI
    // Send every member its slice (chunk by chunk), receive every member's
    // slice of ours, and reduce them locally in group-rank order.
    int64_t chunk = pieceChunk(g.size);
    float *recv = scratch(scratchA, chunk * g.size);
    if (outer == 1 && block <= chunk) {
      // Slice j is already contiguous at in + j * inner.
      commAlltoall(g, in, block, Elem::F32, recv);
      reduceOrdered(op, recv, g.size, block, out);
      return;
    }
    float *send = scratch(scratchB, chunk * g.size);
    for (int64_t s = 0; s < block; s += chunk) {
      int64_t n = std::min(chunk, block - s);
      for (int64_t j = 0; j < g.size; ++j)
        pieceToFlat(in, send + j * n, j, s, n, inner, g.size);
      commAlltoall(g, send, n, Elem::F32, recv);
      // Element t of our slice is out[t] (out is [outer, inner]).
      reduceOrdered(op, recv, g.size, n, out + s);
    }
#endif
  });
}

