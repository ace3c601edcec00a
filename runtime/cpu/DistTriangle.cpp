//===- DistTriangle.cpp - muir runtime symmetric all-reduces -------------===//
//
// The all-reduces of symmetric matrices in the distributed runtime (see
// Dist.cpp): only the upper triangle travels, packed. symmetric_all_reduce
// sums double matrices in one call; triangle_all_reduce_start/wait sum row
// chunks of float matrices, the exchange in flight between the two calls.
//
//===----------------------------------------------------------------------===//

#include "muir-rt/Runtime.h"
#include "DistInternal.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

using namespace muirrt_dist_detail;

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

// Packed upper triangles of `batch` n x n double matrices travel to every
// member (an allgather of the pieces), each member sums them in group-rank
// order and unpacks the sum into both triangles. Bytes: the rank's packed
// triangles to each of the g - 1 others.
extern "C" void muirrt_symmetric_all_reduce(int64_t axes_mask,
                                            const double *in, double *out,
                                            int64_t batch, int64_t n) {
  const char *fn = "muirrt_symmetric_all_reduce";
  guardedCollective(fn, [&] {
    checkNonNegative(fn, "batch", batch);
    checkNonNegative(fn, "n", n);
    int64_t tri = n * (n + 1) / 2, count = mul(fn, batch, tri);
    int64_t whole = mul(fn, batch, mul(fn, n, n));
    checkPointer(fn, "input", in, whole);
    checkPointer(fn, "output", out, whole);
    Group g = groupFor(fn, axes_mask);
    agree(fn, g, axes_mask, "the matrices (batch, n)", batch, n);
    countComm(axes_mask, muirrt_sent_symmetric_all_reduce(batch, n, g.size));
    std::vector<double> packed(static_cast<size_t>(count));
    for (int64_t b = 0; b < batch; ++b) {
      double *p = packed.data() + b * tri;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = i; j < n; ++j)
          *p++ = in[(b * n + i) * n + j];
    }
    std::vector<double> sum = packed;
#if MUIR_RT_HAVE_MPI
    if (g.size > 1) {
      // Chunks of the pieces as the float collectives take them (the
      // runtime's chunk of floats, in doubles).
      int64_t chunk = std::max<int64_t>(1, pieceChunk(g.size) / 2);
      std::vector<double> part(static_cast<size_t>(
          std::min(chunk, count) * g.size));
      for (int64_t s = 0; s < count; s += chunk) {
        int64_t c = std::min(chunk, count - s);
        commAllgather(g, packed.data() + s, c, Elem::F64, part.data());
        for (int64_t i = 0; i < c; ++i) {
          double acc = part[static_cast<size_t>(i)];
          for (int64_t r = 1; r < g.size; ++r)
            acc += part[static_cast<size_t>(r * c + i)];
          sum[static_cast<size_t>(s + i)] = acc;
        }
      }
    }
#endif
    for (int64_t b = 0; b < batch; ++b) {
      const double *p = sum.data() + b * tri;
      double *o = out + b * n * n;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = i; j < n; ++j) {
          o[i * n + j] = *p;
          o[j * n + i] = *p++;
        }
    }
  });
}

namespace {

// A started triangle sum: rows [r0, r1) of `batch` n x n items, `count`
// floats an item.
struct TriangleRequest {
  bool active = false;
  Group group;
  int64_t batch = 0, n = 0, r0 = 0, r1 = 0, count = 0;
  std::vector<float> send, pieces;
#if MUIR_RT_HAVE_MPI
  CommRequest request;
#endif
};

// Requests by handle; a finished one's slot (and buffers) are reused.
std::vector<TriangleRequest> triangleRequests;

} // namespace

extern "C" int64_t muirrt_triangle_all_reduce_start(int64_t axes_mask,
                                                    int64_t batch, int64_t n,
                                                    const float *c,
                                                    int64_t row_begin,
                                                    int64_t row_end) {
  const char *fn = "muirrt_triangle_all_reduce_start";
  int64_t handle = 0;
  guardedCollective(fn, [&] {
    checkNonNegative(fn, "batch", batch);
    checkNonNegative(fn, "n", n);
    if (row_begin < 0 || row_begin > row_end || row_end > n)
      fatal(fn, "rows [" + std::to_string(row_begin) + ", " +
                    std::to_string(row_end) + ") are not within [0, " +
                    std::to_string(n) + "]");
    checkPointer(fn, "matrix", c, mul(fn, mul(fn, n, n), batch));
    Group g = groupFor(fn, axes_mask);
    agree(fn, g, axes_mask, "the matrix size and the batch", n, batch);
    agree(fn, g, axes_mask, "the rows of the chunk", row_begin, row_end);
    // Row r carries its n - r entries from the diagonal on.
    int64_t count = muirrt_triangle_rows_floats(n, row_begin, row_end);
    int64_t floats = mul(fn, count, batch);
    if (floats > kIntMax)
      fatal(fn, "a chunk of " + std::to_string(floats) +
                    " floats exceeds MPI's int counts; use fewer rows per "
                    "chunk");
    countComm(axes_mask, muirrt_sent_triangle_rows(batch, n, row_begin,
                                                   row_end, g.size));
    size_t slot = 0;
    while (slot < triangleRequests.size() && triangleRequests[slot].active)
      ++slot;
    if (slot == triangleRequests.size())
      triangleRequests.emplace_back();
    TriangleRequest &t = triangleRequests[slot];
    t.active = true;
    t.group = g;
    t.batch = batch;
    t.n = n;
    t.r0 = row_begin;
    t.r1 = row_end;
    t.count = count;
    handle = static_cast<int64_t>(slot);
    if (g.size == 1)
      return;
    t.send.resize(static_cast<size_t>(floats));
    t.pieces.resize(static_cast<size_t>(floats) * static_cast<size_t>(g.size));
    float *out = t.send.data();
    for (int64_t i = 0; i < batch; ++i) {
      const float *ci = c + i * n * n;
      for (int64_t r = row_begin; r < row_end; ++r) {
        std::memcpy(out, ci + r * n + r,
                    static_cast<size_t>(n - r) * sizeof(float));
        out += n - r;
      }
    }
#if MUIR_RT_HAVE_MPI
    commIallgather(g, t.send.data(), floats, Elem::F32, t.pieces.data(),
                   t.request);
#endif
  });
  return handle;
}

extern "C" void muirrt_triangle_all_reduce_wait(int64_t request, float *c,
                                                int64_t row_begin,
                                                int64_t row_end) {
  const char *fn = "muirrt_triangle_all_reduce_wait";
  guardedCollective(fn, [&] {
    if (request < 0 ||
        request >= static_cast<int64_t>(triangleRequests.size()) ||
        !triangleRequests[static_cast<size_t>(request)].active)
      fatal(fn, "request " + std::to_string(request) +
                    " was not started or was already waited for");
    TriangleRequest &t = triangleRequests[static_cast<size_t>(request)];
    if (row_begin != t.r0 || row_end != t.r1)
      fatal(fn, "request " + std::to_string(request) + " started rows [" +
                    std::to_string(t.r0) + ", " + std::to_string(t.r1) +
                    "), not the wait's [" + std::to_string(row_begin) + ", " +
                    std::to_string(row_end) + ")");
    t.active = false;
    int64_t n = t.n;
    checkPointer(fn, "matrix", c, mul(fn, mul(fn, n, n), t.batch));
    std::vector<float> sum;
    if (t.group.size > 1) {
#if MUIR_RT_HAVE_MPI
      commWait(t.request);
#endif
      sum.resize(t.send.size());
      reduceOrdered(kSum, t.pieces.data(), t.group.size,
                    static_cast<int64_t>(t.send.size()), sum.data());
    }
    const float *in = sum.data();
    for (int64_t i = 0; i < t.batch; ++i) {
      float *ci = c + i * n * n;
      for (int64_t r = t.r0; r < t.r1; ++r) {
        if (t.group.size > 1) {
          std::memcpy(ci + r * n + r, in,
                      static_cast<size_t>(n - r) * sizeof(float));
          in += n - r;
        }
        for (int64_t col = r + 1; col < n; ++col)
          ci[col * n + r] = ci[r * n + col];
      }
    }
  });
}

