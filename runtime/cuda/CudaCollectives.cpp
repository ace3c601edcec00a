//===- CudaCollectives.cpp - the CUDA runtime's NCCL collectives ----------===//
//
// The collectives over the groups of the grid (an axes mask: the ranks
// that agree outside it), each on a communicator split from the world's:
// on the step stream, deterministic by default (pieces gathered and summed
// in rank order on the device), and the packed exchanges of SYRK
// triangles on their own stream, overlapping the next chunk's product.
//
//===----------------------------------------------------------------------===//
#include "muir-rt/CudaRuntime.h"

#include "CudaInternal.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

using namespace muirrt_cuda_detail;

namespace {

//===----------------------------------------------------------------------===//
// Groups
//===----------------------------------------------------------------------===//

// The group of this rank for an axes mask of the grid (folding 0): the ranks
// that agree on every axis outside the mask; its group rank is the row-major
// index over the mask's axes.
Group &groupFor(int64_t mask, const char *fn) {
  auto it = state.groups.find(mask);
  if (it != state.groups.end())
    return it->second;
  if (muirrt_mask_folding(mask))
    fatal(std::string(fn) + ": axes of another folding (mask " +
          std::to_string(mask) + ") are not supported by the CUDA runtime");
  muirrt_group_place place = muirrt_group_place_of(
      static_cast<int32_t>(state.sizes.size()), state.sizes.data(),
      state.coords.data(), muirrt_mask_axes(mask));
  Group g;
  g.size = place.size;
  g.rank = place.rank;
  int64_t color = place.color;
  if (g.size > 1) {
    if (!state.world)
      fatal(std::string(fn) + ": a group of " + std::to_string(g.size) +
            " ranks, but NCCL was not initialised (muirrt_cuda_dist_init)");
    check(ncclCommSplit(state.world, static_cast<int>(color),
                        static_cast<int>(g.rank), &g.comm, nullptr),
          "ncclCommSplit");
  }
  return state.groups.emplace(mask, g).first->second;
}

ncclRedOp_t ncclOp(int32_t op) {
  return op == MUIRRT_REDUCE_MAX   ? ncclMax
         : op == MUIRRT_REDUCE_MIN ? ncclMin
         : op == MUIRRT_REDUCE_AVG ? ncclAvg
                                   : ncclSum;
}

} // namespace

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

// Gathers every rank's packed chunk on the exchange stream, after what the
// step stream has done so far (the kernel that packed it); the wait sums
// the pieces in rank order into the chunk, on the step stream.
extern "C" int64_t muirrt_cuda_packed_all_reduce_start(int64_t axes_mask,
                                                       const float *buffer,
                                                       int64_t floats) {
  const char *fn = "muirrt_cuda_packed_all_reduce_start";
  ensureReady(fn);
  if (floats < 0)
    fatal(std::string(fn) + ": a negative length");
  Group &g = groupFor(axes_mask, fn);
  state.bytesSent += muirrt_sent_blocks(floats, g.size);
  size_t slot = 0;
  while (slot < state.exchanges.size() && state.exchanges[slot].active)
    ++slot;
  if (slot == state.exchanges.size())
    state.exchanges.emplace_back();
  State::Exchange &t = state.exchanges[slot];
  t.active = true;
  t.groupMask = axes_mask;
  t.floats = floats;
  t.buffer = const_cast<float *>(buffer);
  if (g.size == 1 || floats == 0)
    return static_cast<int64_t>(slot);
  // A slot may serve groups of other sizes in turn.
  if (static_cast<size_t>(floats * g.size) > t.piecesCapacity) {
    if (capturing())
      fatal(std::string(fn) + ": a larger exchange inside a graph capture "
                              "than in the step's first run");
    if (t.pieces)
      state.retired.push_back(t.pieces);
    t.piecesCapacity = static_cast<size_t>(floats * g.size);
    check(cudaMalloc(&t.pieces, sizeof(float) * t.piecesCapacity),
          "cudaMalloc");
  }
  t.deterministic = state.deterministic;
  if (!t.packed) {
    check(cudaEventCreateWithFlags(&t.packed, cudaEventDisableTiming),
          "cudaEventCreate");
    check(cudaEventCreateWithFlags(&t.done, cudaEventDisableTiming),
          "cudaEventCreate");
  }
  if (!state.comm)
    check(cudaStreamCreateWithFlags(&state.comm, cudaStreamNonBlocking),
          "cudaStreamCreate");
  check(cudaEventRecord(t.packed, state.stream), "cudaEventRecord");
  check(cudaStreamWaitEvent(state.comm, t.packed, 0), "cudaStreamWaitEvent");
  if (t.deterministic)
    check(ncclAllGather(buffer, t.pieces, static_cast<size_t>(floats),
                        ncclFloat, g.comm, state.comm),
          "ncclAllGather");
  else // in place: the step does not touch the chunk before the wait
    check(ncclAllReduce(buffer, t.buffer, static_cast<size_t>(floats),
                        ncclFloat, ncclSum, g.comm, state.comm),
          "ncclAllReduce");
  check(cudaEventRecord(t.done, state.comm), "cudaEventRecord");
  return static_cast<int64_t>(slot);
}

extern "C" void muirrt_cuda_packed_all_reduce_wait(int64_t request,
                                                   float *buffer,
                                                   int64_t floats) {
  const char *fn = "muirrt_cuda_packed_all_reduce_wait";
  ensureReady(fn);
  if (request < 0 ||
      request >= static_cast<int64_t>(state.exchanges.size()) ||
      !state.exchanges[static_cast<size_t>(request)].active)
    fatal(std::string(fn) + ": request " + std::to_string(request) +
          " was not started or was already waited for");
  State::Exchange &t = state.exchanges[static_cast<size_t>(request)];
  if (buffer != t.buffer || floats != t.floats)
    fatal(std::string(fn) + ": request " + std::to_string(request) +
          " started on another buffer (" + std::to_string(t.floats) +
          " floats) than the wait's (" + std::to_string(floats) + ")");
  t.active = false;
  Group &g = groupFor(t.groupMask, fn);
  if (g.size == 1 || floats == 0)
    return;
  check(cudaStreamWaitEvent(state.stream, t.done, 0), "cudaStreamWaitEvent");
  if (t.deterministic)
    check(muirrt_cuda_detail_reduce_ordered(t.pieces, g.size, floats, 0,
                                            buffer, state.stream),
          "ordered sum kernel");
}

extern "C" void muirrt_cuda_all_reduce(int64_t axes_mask, int32_t op,
                                       const float *in, float *out,
                                       int64_t count) {
  ensureReady("muirrt_cuda_all_reduce");
  Group &g = groupFor(axes_mask, "muirrt_cuda_all_reduce");
  // Every piece to every peer (the deterministic gather's bytes, and what
  // the counters promise for NCCL's own all-reduce too): never scattered.
  state.bytesSent += muirrt_sent_blocks(count, g.size);
  if (count <= 0)
    return;
  if (g.size == 1) {
    if (in != out)
      check(cudaMemcpyAsync(out, in, sizeof(float) * count,
                            cudaMemcpyDeviceToDevice, state.stream),
            "cudaMemcpyAsync");
    return;
  }
  if (!state.deterministic) {
    check(ncclAllReduce(in, out, static_cast<size_t>(count), ncclFloat,
                        ncclOp(op), g.comm, state.stream),
          "ncclAllReduce");
    return;
  }
  // Every piece to every rank, then the rank-order sum on the device.
  auto *pieces = static_cast<float *>(
      scratch(sizeof(float) * count * g.size, "muirrt_cuda_all_reduce"));
  check(ncclAllGather(in, pieces, static_cast<size_t>(count), ncclFloat,
                      g.comm, state.stream),
        "ncclAllGather");
  check(muirrt_cuda_detail_reduce_ordered(pieces, g.size, count, op, out,
                                          state.stream),
        "ordered sum kernel");
}

// Packed triangles gathered from every member (ncclAllGather), summed in
// group-rank order and unpacked on the device: the same bits on every rank
// and run (as the CPU runtime's).
extern "C" void muirrt_cuda_symmetric_all_reduce(int64_t axes_mask,
                                                 const double *in,
                                                 double *out, int64_t batch,
                                                 int64_t n) {
  const char *fn = "muirrt_cuda_symmetric_all_reduce";
  ensureReady(fn);
  Group &g = groupFor(axes_mask, fn);
  int64_t count = batch * n * (n + 1) / 2;
  state.bytesSent += muirrt_sent_symmetric_all_reduce(batch, n, g.size);
  if (count <= 0)
    return;
  auto *buf = static_cast<double *>(
      scratch(sizeof(double) * count * (g.size + 1), fn));
  double *packed = buf, *pieces = buf + count;
  check(muirrt_cuda_detail_pack_upper(in, batch, n, packed, state.stream),
        "the triangle packing kernel");
  if (g.size > 1)
    check(ncclAllGather(packed, pieces, static_cast<size_t>(count),
                        ncclDouble, g.comm, state.stream),
          "ncclAllGather");
  else
    pieces = packed;
  check(muirrt_cuda_detail_sum_unpack(pieces, g.size, batch, n, out,
                                      state.stream),
        "the ordered triangle sum kernel");
}

namespace {
// The common start of a collective that sends one block of `block` floats
// to every peer: its group, the bytes counted, and for a group of one the
// block copied to the output (the whole collective).
Group &blockCollective(const char *fn, int64_t mask, const float *in,
                       float *out, int64_t block) {
  ensureReady(fn);
  Group &g = groupFor(mask, fn);
  state.bytesSent += muirrt_sent_blocks(block, g.size);
  if (g.size == 1 && block > 0 && in != out)
    check(cudaMemcpyAsync(out, in, sizeof(float) * block,
                          cudaMemcpyDeviceToDevice, state.stream),
          "cudaMemcpyAsync");
  return g;
}
} // namespace

extern "C" void muirrt_cuda_all_gather(int64_t axes_mask, const float *in,
                                       float *out, int64_t outer,
                                       int64_t inner) {
  Group &g = blockCollective("muirrt_cuda_all_gather", axes_mask, in, out,
                             outer * inner);
  int64_t block = outer * inner;
  if (g.size == 1 || block <= 0)
    return;
  if (outer == 1) {
    check(ncclAllGather(in, out, static_cast<size_t>(block), ncclFloat,
                        g.comm, state.stream),
          "ncclAllGather");
    return;
  }
  // Rank-major pieces, then piece j to columns [j inner, (j + 1) inner).
  auto *pieces = static_cast<float *>(
      scratch(sizeof(float) * block * g.size, "muirrt_cuda_all_gather"));
  check(ncclAllGather(in, pieces, static_cast<size_t>(block), ncclFloat,
                      g.comm, state.stream),
        "ncclAllGather");
  check(muirrt_cuda_detail_pieces(pieces, out, g.size, outer, inner, 1,
                                  state.stream),
        "pieces kernel");
}

namespace {
/// Block j (`block` floats) of `send` to group rank j and block i of
/// `recv` from group rank i: grouped sends and receives on the step stream.
void exchangeBlocks(Group &g, const float *send, float *recv, int64_t block) {
  check(ncclGroupStart(), "ncclGroupStart");
  for (int64_t j = 0; j < g.size; ++j) {
    check(ncclSend(send + j * block, static_cast<size_t>(block), ncclFloat,
                   static_cast<int>(j), g.comm, state.stream),
          "ncclSend");
    check(ncclRecv(recv + j * block, static_cast<size_t>(block), ncclFloat,
                   static_cast<int>(j), g.comm, state.stream),
          "ncclRecv");
  }
  check(ncclGroupEnd(), "ncclGroupEnd");
}
} // namespace

extern "C" void muirrt_cuda_reduce_scatter(int64_t axes_mask, int32_t op,
                                           const float *in, float *out,
                                           int64_t outer, int64_t inner) {
  Group &g = blockCollective("muirrt_cuda_reduce_scatter", axes_mask, in,
                             out, outer * inner);
  int64_t block = outer * inner;
  if (g.size == 1 || block <= 0)
    return;
  // Column blocks to rank-major pieces; member j's slice of every rank
  // arrives at j (grouped send/recv), and is summed in rank order.
  auto *buf = static_cast<float *>(scratch(
      sizeof(float) * block * g.size * 2, "muirrt_cuda_reduce_scatter"));
  float *send = buf, *recv = buf + block * g.size;
  check(muirrt_cuda_detail_pieces(in, send, g.size, outer, inner, 0,
                                  state.stream),
        "pieces kernel");
  exchangeBlocks(g, send, recv, block);
  check(muirrt_cuda_detail_reduce_ordered(recv, g.size, block, op, out,
                                          state.stream),
        "ordered sum kernel");
}

extern "C" void muirrt_cuda_broadcast(int64_t axes_mask, int64_t root,
                                      float *buf, int64_t count) {
  ensureReady("muirrt_cuda_broadcast");
  Group &g = groupFor(axes_mask, "muirrt_cuda_broadcast");
  state.bytesSent += muirrt_sent_broadcast(count, g.size, g.rank == root);
  if (g.size == 1 || count <= 0)
    return;
  check(ncclBroadcast(buf, buf, static_cast<size_t>(count), ncclFloat,
                      static_cast<int>(root), g.comm, state.stream),
        "ncclBroadcast");
}

// Block j (count floats) to group rank j, block i from group rank i: grouped
// sends and receives (the input is staged first when it is the output).
extern "C" void muirrt_cuda_all_to_all(int64_t axes_mask, const float *in,
                                       float *out, int64_t count) {
  Group &g = blockCollective("muirrt_cuda_all_to_all", axes_mask, in, out,
                             count);
  if (g.size == 1 || count <= 0)
    return;
  const float *send = in;
  if (in == out) {
    auto *staged = static_cast<float *>(
        scratch(sizeof(float) * count * g.size, "muirrt_cuda_all_to_all"));
    check(cudaMemcpyAsync(staged, in, sizeof(float) * count * g.size,
                          cudaMemcpyDeviceToDevice, state.stream),
          "cudaMemcpyAsync");
    send = staged;
  }
  exchangeBlocks(g, send, out, count);
}

// Ragged rows to each group rank. The counts are host memory (FSDP's shard
// sizes). An uncaptured call exchanges what each rank receives over NCCL
// (one int64 each way, then a stream synchronisation: every rank runs the
// same uncaptured steps) and records it by the call's place in the step; a
// captured call takes the record of the same place, so a captured step
// posts the same sends and receives with no host synchronisation. A
// capture whose counts differ from the uncaptured step's stops.
extern "C" void muirrt_cuda_all_to_allv(int64_t axes_mask, const float *in,
                                        int64_t in_rows,
                                        const int64_t *send_counts, float *out,
                                        int64_t out_rows,
                                        int64_t *recv_counts, int64_t row) {
  const char *fn = "muirrt_cuda_all_to_allv";
  ensureReady(fn);
  Group &g = groupFor(axes_mask, fn);
  if (!send_counts || !recv_counts || row < 0 || in_rows < 0 || out_rows < 0)
    fatal(std::string(fn) + ": null counts or negative sizes");
  std::vector<int64_t> send(send_counts, send_counts + g.size);
  int64_t sent = 0, toOthers = 0;
  for (int64_t j = 0; j < g.size; ++j) {
    if (send[size_t(j)] < 0)
      fatal(std::string(fn) + ": negative send count");
    sent += send[size_t(j)];
    if (j != g.rank)
      toOthers += send[size_t(j)];
  }
  if (sent > in_rows)
    fatal(std::string(fn) + ": send counts total " + std::to_string(sent) +
          " rows but the input holds " + std::to_string(in_rows));
  std::vector<int64_t> recv(size_t(g.size), 0);
  size_t place = state.countPlace++;
  bool countsTravel = false;
  if (g.size == 1) {
    recv[0] = send[0];
  } else if (capturing()) {
    if (place >= state.countExchanges.size() ||
        state.countExchanges[place].mask != axes_mask ||
        state.countExchanges[place].send != send)
      fatal(std::string(fn) + ": the captured step's counts differ from "
                              "the uncaptured step's (call " +
            std::to_string(place) + ")");
    recv = state.countExchanges[place].recv;
  } else {
    {
      // One int64 to and from each rank, on the device.
      auto *d = static_cast<int64_t *>(
          scratch(sizeof(int64_t) * 2 * g.size, fn));
      check(cudaMemcpyAsync(d, send.data(), sizeof(int64_t) * g.size,
                            cudaMemcpyHostToDevice, state.stream),
            "cudaMemcpyAsync");
      check(ncclGroupStart(), "ncclGroupStart");
      for (int64_t j = 0; j < g.size; ++j) {
        check(ncclSend(d + j, 1, ncclInt64, int(j), g.comm, state.stream),
              "ncclSend");
        check(ncclRecv(d + g.size + j, 1, ncclInt64, int(j), g.comm,
                       state.stream),
              "ncclRecv");
      }
      check(ncclGroupEnd(), "ncclGroupEnd");
      check(cudaMemcpyAsync(recv.data(), d + g.size,
                            sizeof(int64_t) * g.size, cudaMemcpyDeviceToHost,
                            state.stream),
            "cudaMemcpyAsync");
      check(cudaStreamSynchronize(state.stream), "cudaStreamSynchronize");
      countsTravel = true;
    }
    if (state.countExchanges.size() <= place)
      state.countExchanges.resize(place + 1);
    state.countExchanges[place] = {axes_mask, send, recv};
  }
  int64_t received = 0;
  for (int64_t r : recv)
    received += r;
  if (received > out_rows)
    fatal(std::string(fn) + ": receives " + std::to_string(received) +
          " rows but the output holds " + std::to_string(out_rows) +
          " (the static bound is too small)");
  std::copy(recv.begin(), recv.end(), recv_counts);
  // The counts travel in the step's first run only (a captured run reuses
  // them).
  state.bytesSent +=
      muirrt_sent_all_to_allv(toOthers, row * 4, g.size, countsTravel);
  // A group of one copies its rows; an input that overlaps the output
  // (the same buffer included, unless nothing moves) is read from a
  // staged copy.
  if (g.size == 1 && in == out)
    return;
  const float *from = in;
  if (sent * row > 0 && in < out + out_rows * row && out < in + sent * row) {
    auto *staged =
        static_cast<float *>(scratch(sizeof(float) * sent * row, fn));
    check(cudaMemcpyAsync(staged, in, sizeof(float) * sent * row,
                          cudaMemcpyDeviceToDevice, state.stream),
          "cudaMemcpyAsync");
    from = staged;
  }
  if (g.size == 1) {
    if (send[0] * row > 0)
      check(cudaMemcpyAsync(out, from, sizeof(float) * send[0] * row,
                            cudaMemcpyDeviceToDevice, state.stream),
            "cudaMemcpyAsync");
    return;
  }
  check(ncclGroupStart(), "ncclGroupStart");
  int64_t at = 0, back = 0;
  for (int64_t j = 0; j < g.size; ++j) {
    if (send[size_t(j)] > 0)
      check(ncclSend(from + at * row, size_t(send[size_t(j)] * row),
                     ncclFloat, int(j), g.comm, state.stream),
            "ncclSend");
    if (recv[size_t(j)] > 0)
      check(ncclRecv(out + back * row, size_t(recv[size_t(j)] * row),
                     ncclFloat, int(j), g.comm, state.stream),
            "ncclRecv");
    at += send[size_t(j)];
    back += recv[size_t(j)];
  }
  check(ncclGroupEnd(), "ncclGroupEnd");
}

// Ragged all-gather as grouped broadcasts: rank j's counts[j] floats to
// offset sum(counts[0..j)) of every rank's output.
extern "C" void muirrt_cuda_all_gatherv(int64_t axes_mask, const float *in,
                                        float *out, const int64_t *counts) {
  ensureReady("muirrt_cuda_all_gatherv");
  Group &g = groupFor(axes_mask, "muirrt_cuda_all_gatherv");
  if (!counts)
    fatal("muirrt_cuda_all_gatherv: null counts");
  state.bytesSent += muirrt_sent_blocks(counts[g.rank], g.size);
  if (g.size == 1) {
    if (counts[0] > 0 && in != out)
      check(cudaMemcpyAsync(out, in, sizeof(float) * counts[0],
                            cudaMemcpyDeviceToDevice, state.stream),
            "cudaMemcpyAsync");
    return;
  }
  int64_t total = 0, mine = 0;
  for (int64_t j = 0; j < g.size; ++j) {
    if (j == g.rank)
      mine = total;
    total += counts[j];
  }
  // The broadcasts are not ordered: an input inside the output anywhere
  // but at this rank's own place is staged first.
  if (in < out + total && out < in + counts[g.rank] && in != out + mine) {
    auto *staged = static_cast<float *>(scratch(
        sizeof(float) * counts[g.rank], "muirrt_cuda_all_gatherv"));
    check(cudaMemcpyAsync(staged, in, sizeof(float) * counts[g.rank],
                          cudaMemcpyDeviceToDevice, state.stream),
          "cudaMemcpyAsync");
    in = staged;
  }
  check(ncclGroupStart(), "ncclGroupStart");
  int64_t offset = 0;
  for (int64_t j = 0; j < g.size; ++j) {
    if (counts[j] > 0)
      check(ncclBroadcast(j == g.rank ? static_cast<const void *>(in)
                                      : static_cast<const void *>(out + offset),
                          out + offset, static_cast<size_t>(counts[j]),
                          ncclFloat, static_cast<int>(j), g.comm,
                          state.stream),
            "ncclBroadcast");
    offset += counts[j];
  }
  check(ncclGroupEnd(), "ncclGroupEnd");
}

// No communication: every rank holds the whole [outer, inner * g] tensor
// and keeps column block r (a strided copy).
extern "C" void muirrt_cuda_all_slice(int64_t axes_mask, const float *in,
                                      float *out, int64_t outer,
                                      int64_t inner) {
  ensureReady("muirrt_cuda_all_slice");
  Group &g = groupFor(axes_mask, "muirrt_cuda_all_slice");
  if (outer <= 0 || inner <= 0)
    return;
  check(cudaMemcpy2DAsync(out, sizeof(float) * inner, in + g.rank * inner,
                          sizeof(float) * inner * g.size,
                          sizeof(float) * inner, outer,
                          cudaMemcpyDeviceToDevice, state.stream),
        "cudaMemcpy2DAsync");
}

extern "C" int64_t muirrt_cuda_dist_group_rank(int64_t axes_mask) {
  return groupFor(axes_mask, "muirrt_cuda_dist_group_rank").rank;
}
