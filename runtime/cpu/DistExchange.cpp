//===- DistExchange.cpp - muir runtime gathers, all-to-all, broadcast ----===//
//
// The collectives of the distributed runtime (see Dist.cpp) that move data
// without reducing it: all_gather(v), all_to_all(v), broadcast, the local
// all_slice, and the building blocks of expert dispatch (all_gather_i64,
// all_to_allv_bytes).
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

#if MUIR_RT_HAVE_MPI
namespace {

// A row-major [outer, inner * g] buffer ("wide") holds g pieces of
// [outer, inner]; element t of piece j (t = r * inner + c) lives at
// r * inner * g + j * inner + c. These copy elements [s, s + n) of piece j
// between the wide buffer and a contiguous one, a row segment at a time.
void flatToPiece(const float *flat, float *wide, int64_t j, int64_t s,
                 int64_t n, int64_t inner, int64_t g) {
  for (int64_t t = s, end = s + n; t < end;) {
    int64_t r = t / inner, c = t % inner;
    int64_t len = std::min(inner - c, end - t);
    std::memcpy(wide + r * inner * g + j * inner + c, flat + (t - s),
                static_cast<size_t>(len) * sizeof(float));
    t += len;
  }
}

} // namespace
#endif

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

extern "C" void muirrt_all_gather(int64_t axes_mask, const float *in,
                                  float *out, int64_t outer, int64_t inner) {
  const char *fn = "muirrt_all_gather";
  guardedCollective(fn, [&] {
    checkNonNegative(fn, "outer", outer);
    checkNonNegative(fn, "inner", inner);
    Group g = groupFor(fn, axes_mask);
    agree(fn, g, axes_mask, "the shard shape (outer, inner)", outer, inner);
    int64_t block = mul(fn, outer, inner);
    checkPointer(fn, "input", in, block);
    checkPointer(fn, "output", out, mul(fn, block, g.size));
    countComm(axes_mask, muirrt_sent_blocks(block, g.size));
    if (g.size == 1) {
      copyFloats(out, in, block);
      return;
    }
#if MUIR_RT_HAVE_MPI
    int64_t chunk = pieceChunk(g.size);
    if (outer == 1 && block <= chunk) {
      // Pieces are whole rows of out: gather in place.
      commAllgather(g, in, block, Elem::F32, out);
      return;
    }
    // Gather a chunk of every member's block, then place piece j's rows at
    // column offset j * inner of out's rows.
    float *pieces = scratch(scratchA, chunk * g.size);
    for (int64_t s = 0; s < block; s += chunk) {
      int64_t n = std::min(chunk, block - s);
      commAllgather(g, in + s, n, Elem::F32, pieces);
      for (int64_t j = 0; j < g.size; ++j)
        flatToPiece(pieces + j * n, out, j, s, n, inner, g.size);
    }
#endif
  });
}

extern "C" void muirrt_all_gatherv(int64_t axes_mask, const float *in,
                                   float *out, const int64_t *counts) {
  const char *fn = "muirrt_all_gatherv";
  guardedCollective(fn, [&] {
    Group g = groupFor(fn, axes_mask);
    if (!counts)
      fatal(fn, "null counts");
    int64_t total = 0;
    for (int64_t j = 0; j < g.size; ++j) {
      checkNonNegative(fn, "count", counts[j]);
      if (__builtin_add_overflow(total, counts[j], &total))
        fatal(fn, "total count overflows int64");
    }
    // The counts as a whole: their total and a position-weighted sum.
    int64_t weighted = 0;
    for (int64_t j = 0; j < g.size; ++j)
      weighted += (j + 1) * counts[j];
    agree(fn, g, axes_mask, "the counts (total, weighted sum)", total,
          weighted);
    int64_t mine = counts[g.rank];
    checkPointer(fn, "input", in, mine);
    checkPointer(fn, "output", out, total);
    countComm(axes_mask, muirrt_sent_blocks(mine, g.size));
    if (g.size == 1) {
      copyFloats(out, in, mine);
      return;
    }
#if MUIR_RT_HAVE_MPI
    // MPI_Allgatherv takes int counts and displacements; a ragged gather
    // cannot be split into equal chunks, so larger ones are refused.
    std::vector<int> recvCounts(static_cast<size_t>(g.size));
    std::vector<int> displs(static_cast<size_t>(g.size));
    int64_t offset = 0;
    for (int64_t j = 0; j < g.size; ++j) {
      if (counts[j] > kIntMax || offset > kIntMax)
        fatal(fn, "group rank " + std::to_string(j) + " contributes " +
                      std::to_string(counts[j]) + " floats at offset " +
                      std::to_string(offset) +
                      "; MPI_Allgatherv counts and displacements must fit "
                      "in int (at most " +
                      std::to_string(kIntMax) + ")");
      recvCounts[static_cast<size_t>(j)] = asInt(counts[j]);
      displs[static_cast<size_t>(j)] = asInt(offset);
      offset += counts[j];
    }
    commAllgatherv(g, in, mine, recvCounts.data(), displs.data(), Elem::F32,
                   out);
#endif
  });
}

extern "C" void muirrt_all_to_all(int64_t axes_mask, const float *in,
                                  float *out, int64_t count) {
  const char *fn = "muirrt_all_to_all";
  guardedCollective(fn, [&] {
    checkNonNegative(fn, "count", count);
    Group g = groupFor(fn, axes_mask);
    agree(fn, g, axes_mask, "the block size", count);
    int64_t total = mul(fn, count, g.size);
    checkPointer(fn, "input", in, total);
    checkPointer(fn, "output", out, total);
    countComm(axes_mask, muirrt_sent_blocks(count, g.size));
    if (g.size == 1) {
      copyFloats(out, in, count);
      return;
    }
#if MUIR_RT_HAVE_MPI
    int64_t chunk = pieceChunk(g.size);
    if (count <= chunk && in != out) {
      commAlltoall(g, in, count, Elem::F32, out);
      return;
    }
    // Chunked through temporaries (also the in == out case: each chunk
    // reads and writes the same positions of every block, after the
    // exchange).
    float *send = scratch(scratchA, chunk * g.size);
    float *recv = scratch(scratchB, chunk * g.size);
    for (int64_t s = 0; s < count; s += chunk) {
      int64_t n = std::min(chunk, count - s);
      for (int64_t j = 0; j < g.size; ++j)
        std::memcpy(send + j * n, in + j * count + s,
                    static_cast<size_t>(n) * sizeof(float));
      commAlltoall(g, send, n, Elem::F32, recv);
      for (int64_t i = 0; i < g.size; ++i)
        std::memcpy(out + i * count + s, recv + i * n,
                    static_cast<size_t>(n) * sizeof(float));
    }
#endif
  });
}

extern "C" void muirrt_all_to_allv(int64_t axes_mask, const float *in,
                                   int64_t in_rows,
                                   const int64_t *send_counts, float *out,
                                   int64_t out_rows, int64_t *recv_counts,
                                   int64_t row) {
  const char *fn = "muirrt_all_to_allv";
  guardedCollective(fn, [&] {
    checkNonNegative(fn, "row size", row);
    checkNonNegative(fn, "input rows", in_rows);
    checkNonNegative(fn, "output rows", out_rows);
    Group g = groupFor(fn, axes_mask);
    if (!send_counts || !recv_counts)
      fatal(fn, "null counts");
    agree(fn, g, axes_mask, "the row size", row);
    int64_t sent = 0, toOthers = 0;
    for (int64_t j = 0; j < g.size; ++j) {
      checkNonNegative(fn, "send count", send_counts[j]);
      if (__builtin_add_overflow(sent, send_counts[j], &sent))
        fatal(fn, "total send count overflows int64");
      if (j != g.rank)
        toOthers += send_counts[j];
    }
    if (sent > in_rows)
      fatal(fn, "send counts total " + std::to_string(sent) +
                    " rows but the input holds " + std::to_string(in_rows));
    checkPointer(fn, "input", in, mul(fn, in_rows, row));
    checkPointer(fn, "output", out, mul(fn, out_rows, row));
    countComm(axes_mask, muirrt_sent_all_to_allv(toOthers, mul(fn, row, 4),
                                                 g.size, /*with_counts=*/1));
    auto checkFits = [&](int64_t received) {
      if (received > out_rows)
        fatal(fn, "receives " + std::to_string(received) +
                      " rows but the output holds " +
                      std::to_string(out_rows) +
                      " (the static bound is too small)");
    };
    if (g.size == 1) {
      recv_counts[0] = send_counts[0];
      checkFits(send_counts[0]);
      copyFloats(out, in, mul(fn, send_counts[0], row));
      return;
    }
#if MUIR_RT_HAVE_MPI
    commAlltoall(g, send_counts, 1, Elem::I64, recv_counts);
    int64_t received = 0;
    for (int64_t j = 0; j < g.size; ++j) {
      if (recv_counts[j] < 0)
        fatal(fn, "group rank " + std::to_string(j) + " sends a negative "
                  "count");
      received += recv_counts[j];
    }
    checkFits(received);
    // Counts and displacements in rows (a contiguous row datatype), which
    // must fit MPI's int.
    size_t n = static_cast<size_t>(g.size);
    std::vector<int> sc(n), sd(n), rc(n), rd(n);
    int64_t so = 0, ro = 0;
    for (size_t j = 0; j < n; ++j) {
      if (send_counts[j] > kIntMax || recv_counts[j] > kIntMax ||
          so > kIntMax || ro > kIntMax)
        fatal(fn, "row counts and displacements must fit in int (at most " +
                      std::to_string(kIntMax) + ")");
      sc[j] = asInt(send_counts[j]);
      sd[j] = asInt(so);
      rc[j] = asInt(recv_counts[j]);
      rd[j] = asInt(ro);
      so += send_counts[j];
      ro += recv_counts[j];
    }
    if (row > kIntMax)
      fatal(fn, "row of " + std::to_string(row) + " floats exceeds int");
    commAlltoallv(g, in, sc.data(), sd.data(), out, rc.data(), rd.data(),
                  Elem::F32, row);
#endif
  });
}

extern "C" void muirrt_broadcast(int64_t axes_mask, int64_t root, float *buf,
                                 int64_t count) {
  const char *fn = "muirrt_broadcast";
  guardedCollective(fn, [&] {
    checkNonNegative(fn, "count", count);
    checkPointer(fn, "buffer", buf, count);
    Group g = groupFor(fn, axes_mask);
    if (root < 0 || root >= g.size)
      fatal(fn, "root " + std::to_string(root) + " out of range for a group "
                "of " + std::to_string(g.size));
    agree(fn, g, axes_mask, "the count and the root", count, root);
    countComm(axes_mask, muirrt_sent_broadcast(count, g.size, g.rank == root));
    if (g.size == 1)
      return;
#if MUIR_RT_HAVE_MPI
    // A transport's root sends a chunk to each member at once: the
    // runtime's chunk in all.
    int64_t chunk = state.exchange ? pieceChunk(g.size)
                                   : std::min(state.chunkFloats, kIntMax);
    for (int64_t s = 0; s < count; s += chunk) {
      int64_t n = std::min(chunk, count - s);
      commBcast(g, buf + s, n, Elem::F32, root);
    }
#endif
  });
}

void muirrt_all_slice(int64_t axes_mask, const float *in, float *out,
                      int64_t outer, int64_t inner) {
  // Local: every rank already holds the whole tensor; keep block r.
  int64_t g = muirrt_dist_group_size(axes_mask);
  int64_t r = muirrt_dist_group_rank(axes_mask);
  for (int64_t row = 0; row < outer; ++row)
    std::copy(in + (row * g + r) * inner, in + (row * g + r + 1) * inner,
              out + row * inner);
}

//===----------------------------------------------------------------------===//
// Building blocks of expert dispatch (runtime/cpu/Moe.cpp): integer counts
// gathered over the group, and rows of raw bytes exchanged with counts that
// every rank already knows.
//===----------------------------------------------------------------------===//

extern "C" void muirrt_all_gather_i64(int64_t axes_mask, const int64_t *in,
                                      int64_t *out, int64_t count) {
  const char *fn = "muirrt_all_gather_i64";
  guardedCollective(fn, [&] {
    checkNonNegative(fn, "count", count);
    Group g = groupFor(fn, axes_mask);
    agree(fn, g, axes_mask, "the count", count);
    checkPointer(fn, "input", in, count);
    checkPointer(fn, "output", out, mul(fn, count, g.size));
    countComm(axes_mask, muirrt_sent_elements(count, 8, g.size));
    if (g.size == 1) {
      std::copy(in, in + count, out);
      return;
    }
#if MUIR_RT_HAVE_MPI
    if (count > kIntMax)
      fatal(fn, "count " + std::to_string(count) + " exceeds int");
    commAllgather(g, in, count, Elem::I64, out);
#endif
  });
}

extern "C" void muirrt_all_to_allv_bytes(int64_t axes_mask, const void *in,
                                         const int64_t *send_rows, void *out,
                                         const int64_t *recv_rows,
                                         int64_t row_bytes) {
  const char *fn = "muirrt_all_to_allv_bytes";
  guardedCollective(fn, [&] {
    checkNonNegative(fn, "row size", row_bytes);
    Group g = groupFor(fn, axes_mask);
    if (!send_rows || !recv_rows)
      fatal(fn, "null counts");
    agree(fn, g, axes_mask, "the row size", row_bytes);
    int64_t sent = 0, received = 0, toOthers = 0;
    for (int64_t j = 0; j < g.size; ++j) {
      checkNonNegative(fn, "send count", send_rows[j]);
      checkNonNegative(fn, "receive count", recv_rows[j]);
      sent += send_rows[j];
      received += recv_rows[j];
      if (j != g.rank)
        toOthers += send_rows[j];
    }
    checkPointer(fn, "input", in, mul(fn, sent, row_bytes));
    checkPointer(fn, "output", out, mul(fn, received, row_bytes));
    countComm(axes_mask, muirrt_sent_all_to_allv(toOthers, row_bytes, g.size,
                                                 /*with_counts=*/0));
    if (g.size == 1) {
      if (send_rows[0] != recv_rows[0])
        fatal(fn, "a group of one sends " + std::to_string(send_rows[0]) +
                      " rows to itself but expects " +
                      std::to_string(recv_rows[0]));
      // A caller may exchange in place within a group of one.
      if (sent && in != out)
        std::memcpy(out, in, static_cast<size_t>(sent * row_bytes));
      return;
    }
#if MUIR_RT_HAVE_MPI
    if (row_bytes > kIntMax || sent > kIntMax || received > kIntMax)
      fatal(fn, "row counts and the row size must fit in int");
    size_t n = static_cast<size_t>(g.size);
    std::vector<int> sc(n), sd(n), rc(n), rd(n);
    int64_t so = 0, ro = 0;
    for (size_t j = 0; j < n; ++j) {
      sc[j] = asInt(send_rows[j]);
      sd[j] = asInt(so);
      rc[j] = asInt(recv_rows[j]);
      rd[j] = asInt(ro);
      so += send_rows[j];
      ro += recv_rows[j];
    }
    // Zero-byte rows still take part (every rank must call).
    if (row_bytes == 0)
      std::fill(sc.begin(), sc.end(), 0), std::fill(rc.begin(), rc.end(), 0);
    commAlltoallv(g, in, sc.data(), sd.data(), out, rc.data(), rd.data(),
                  Elem::Byte, std::max<int64_t>(row_bytes, 1));
#endif
  });
}

