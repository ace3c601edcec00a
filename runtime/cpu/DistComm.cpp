//===- DistComm.cpp - the byte movers under the collectives ---------------===//
//
// Every collective of the distributed runtime (see Dist.cpp) moves its data
// through the functions here: on the group's MPI communicator (the MPI call
// of the same name), or, when a transport is registered
// (muirrt_dist_set_transport: muir.torch's torch.distributed process group
// under torchrun), as one all-to-all of bytes over the transport's ranks.
//
// A transport offers one primitive: every rank of the world calls it at
// the same point with a byte count to and from every rank. A collective on
// a mask is called by every rank at the same point of the same compiled
// program (each rank in its own group of the mask), so a group's exchange
// is a world exchange in which only the group's members send to each
// other. Members are listed in group-rank order, which is increasing world
// rank (DistGroups.cpp), so a group's pieces keep their order in the
// world's rank-ordered buffers. The reductions stay muir's own (in
// group-rank order, DistReduce.cpp), so the bits are those of the MPI path.
//
//===----------------------------------------------------------------------===//

#include "muir-rt/Runtime.h"
#include "DistInternal.h"

#if MUIR_RT_HAVE_MPI

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

using namespace muirrt_dist_detail;

namespace {

MPI_Datatype mpiType(Elem e) {
  switch (e) {
  case Elem::F32:
    return MPI_FLOAT;
  case Elem::F64:
    return MPI_DOUBLE;
  case Elem::I32:
    return MPI_INT32_T;
  case Elem::I64:
    return MPI_INT64_T;
  case Elem::Byte:
    break;
  }
  return MPI_BYTE;
}

int64_t bytesOf(Elem e) {
  switch (e) {
  case Elem::F32:
  case Elem::I32:
    return 4;
  case Elem::F64:
  case Elem::I64:
    return 8;
  case Elem::Byte:
    break;
  }
  return 1;
}

bool viaTransport() { return state.exchange != nullptr; }

// One piece of an exchange: `bytes` at `at`.
struct Piece {
  const char *at = nullptr;
  int64_t bytes = 0;
};

// Whether `pieces` (but this member's) follow one another in member order;
// the first one's address and their bytes in all.
bool contiguous(const std::vector<Piece> &pieces, size_t me,
                const char *&first, int64_t &total) {
  first = nullptr;
  total = 0;
  bool follow = true;
  for (size_t j = 0; j < pieces.size(); ++j) {
    if (j == me || pieces[j].bytes == 0)
      continue;
    if (!first)
      first = pieces[j].at;
    else if (pieces[j].at != first + total)
      follow = false;
    total += pieces[j].bytes;
  }
  return follow;
}

// The one transport call of a group's exchange: send[j] goes to member j,
// member j's piece to us lands at recv[j]. This member's own piece is
// copied here, not handed to the transport. Pieces that do not follow one
// another in member order, or a receive span that overlaps the send span,
// go through temporaries; with one other member (2 ranks) nothing is
// copied.
void exchangePieces(const Group &g, const std::vector<Piece> &send,
                    const std::vector<Piece> &recv) {
  const std::vector<int> &members = *g.members;
  size_t me = static_cast<size_t>(g.rank);
  if (send[me].bytes != recv[me].bytes)
    fatal("the transport", "internal error: this member sends itself " +
                               std::to_string(send[me].bytes) +
                               " bytes but receives " +
                               std::to_string(recv[me].bytes));
  size_t world = static_cast<size_t>(state.size);
  std::vector<int64_t> sb(world, 0), rb(world, 0);
  for (size_t j = 0; j < members.size(); ++j)
    if (j != me) {
      sb[static_cast<size_t>(members[j])] = send[j].bytes;
      rb[static_cast<size_t>(members[j])] = recv[j].bytes;
    }
  const char *from = nullptr, *into = nullptr;
  int64_t sendTotal = 0, recvTotal = 0;
  bool sendPacked = contiguous(send, me, from, sendTotal);
  bool recvPacked = contiguous(recv, me, into, recvTotal);
  char *to = const_cast<char *>(into);
  // Only a send span used as it is can be overwritten: by the others'
  // pieces landing (a receive span used as it is) or by this member's own
  // piece, copied before the exchange.
  auto overlaps = [](const char *a, int64_t an, const char *b, int64_t bn) {
    return an && bn && a < b + bn && b < a + an;
  };
  bool overlap =
      sendPacked &&
      (overlaps(from, sendTotal, to, recvPacked ? recvTotal : 0) ||
       (send[me].at != recv[me].at &&
        overlaps(from, sendTotal, recv[me].at, recv[me].bytes)));
  std::vector<char> sendTemp, recvTemp;
  if (!sendPacked || overlap) {
    sendTemp.resize(static_cast<size_t>(sendTotal));
    int64_t at = 0;
    for (size_t j = 0; j < send.size(); ++j)
      if (j != me && send[j].bytes) {
        std::memcpy(sendTemp.data() + at, send[j].at,
                    static_cast<size_t>(send[j].bytes));
        at += send[j].bytes;
      }
    from = sendTemp.data();
  }
  // This member's own piece, before anything lands (an in-place caller's
  // piece is where it goes already).
  if (send[me].bytes && send[me].at != recv[me].at)
    std::memmove(const_cast<char *>(recv[me].at), send[me].at,
                 static_cast<size_t>(send[me].bytes));
  if (!recvPacked) {
    recvTemp.resize(static_cast<size_t>(recvTotal));
    to = recvTemp.data();
  }
  // A valid address even for nothing.
  char none = 0;
  int32_t rc = state.exchange(state.exchangeContext, from ? from : &none,
                              sb.data(), to ? to : &none, rb.data());
  if (rc != 0)
    fatal("the transport", "its exchange failed on rank " +
                               std::to_string(state.rank) + " (status " +
                               std::to_string(rc) + ")");
  if (!recvPacked) {
    int64_t at = 0;
    for (size_t j = 0; j < recv.size(); ++j)
      if (j != me && recv[j].bytes) {
        std::memcpy(const_cast<char *>(recv[j].at), recvTemp.data() + at,
                    static_cast<size_t>(recv[j].bytes));
        at += recv[j].bytes;
      }
  }
}

// `count` pieces of `bytes` at base + j * bytes.
std::vector<Piece> evenPieces(const char *base, size_t count,
                              int64_t bytes) {
  std::vector<Piece> pieces(count);
  for (size_t j = 0; j < count; ++j)
    pieces[j] = {base + static_cast<int64_t>(j) * bytes, bytes};
  return pieces;
}

// Every member's `bytes` from `in` (the same piece to each) into `out`, in
// group-rank order.
void gatherBytes(const Group &g, const char *in, int64_t bytes, char *out) {
  size_t m = static_cast<size_t>(g.size);
  exchangePieces(g, std::vector<Piece>(m, Piece{in, bytes}),
                 evenPieces(out, m, bytes));
}

} // namespace

namespace [[gnu::visibility("hidden")]] muirrt_dist_detail {

void commAllgather(const Group &g, const void *in, int64_t n, Elem e,
                   void *out) {
  if (!viaTransport()) {
    checkMpi(MPI_Allgather(in, asInt(n), mpiType(e), out, asInt(n),
                           mpiType(e), g.comm),
             "MPI_Allgather");
    return;
  }
  gatherBytes(g, static_cast<const char *>(in), n * bytesOf(e),
              static_cast<char *>(out));
}

void commAllgatherv(const Group &g, const void *in, int64_t n,
                    const int *counts, const int *displs, Elem e, void *out) {
  if (!viaTransport()) {
    checkMpi(MPI_Allgatherv(in ? in : MPI_IN_PLACE, in ? asInt(n) : 0,
                            in ? mpiType(e) : MPI_DATATYPE_NULL, out, counts,
                            displs, mpiType(e), g.comm),
             "MPI_Allgatherv");
    return;
  }
  int64_t b = bytesOf(e);
  size_t m = static_cast<size_t>(g.size);
  char *o = static_cast<char *>(out);
  std::vector<Piece> recv(m);
  for (size_t j = 0; j < m; ++j)
    recv[j] = {o + int64_t{displs[j]} * b, int64_t{counts[j]} * b};
  Piece mine = in ? Piece{static_cast<const char *>(in), n * b}
                  : recv[static_cast<size_t>(g.rank)];
  exchangePieces(g, std::vector<Piece>(m, mine), recv);
}

void commAlltoall(const Group &g, const void *in, int64_t n, Elem e,
                  void *out) {
  if (!viaTransport()) {
    checkMpi(MPI_Alltoall(in, asInt(n), mpiType(e), out, asInt(n),
                          mpiType(e), g.comm),
             "MPI_Alltoall");
    return;
  }
  int64_t bytes = n * bytesOf(e);
  size_t m = static_cast<size_t>(g.size);
  exchangePieces(g, evenPieces(static_cast<const char *>(in), m, bytes),
                 evenPieces(static_cast<char *>(out), m, bytes));
}

void commAlltoallv(const Group &g, const void *in, const int *sendCounts,
                   const int *sendDispls, void *out, const int *recvCounts,
                   const int *recvDispls, Elem e, int64_t unit) {
  if (!viaTransport()) {
    MPI_Datatype type = mpiType(e);
    bool derived = unit != 1;
    if (derived) {
      checkMpi(MPI_Type_contiguous(asInt(unit), mpiType(e), &type),
               "MPI_Type_contiguous");
      checkMpi(MPI_Type_commit(&type), "MPI_Type_commit");
    }
    int rc = MPI_Alltoallv(in, sendCounts, sendDispls, type, out, recvCounts,
                           recvDispls, type, g.comm);
    if (derived)
      MPI_Type_free(&type);
    checkMpi(rc, "MPI_Alltoallv");
    return;
  }
  int64_t b = unit * bytesOf(e);
  size_t m = static_cast<size_t>(g.size);
  const char *i = static_cast<const char *>(in);
  char *o = static_cast<char *>(out);
  std::vector<Piece> send(m), recv(m);
  for (size_t j = 0; j < m; ++j) {
    send[j] = {i + int64_t{sendDispls[j]} * b, int64_t{sendCounts[j]} * b};
    recv[j] = {o + int64_t{recvDispls[j]} * b, int64_t{recvCounts[j]} * b};
  }
  exchangePieces(g, send, recv);
}

void commBcast(const Group &g, void *buf, int64_t n, Elem e, int64_t root) {
  if (!viaTransport()) {
    checkMpi(MPI_Bcast(buf, asInt(n), mpiType(e), asInt(root), g.comm),
             "MPI_Bcast");
    return;
  }
  int64_t bytes = n * bytesOf(e);
  size_t m = static_cast<size_t>(g.size);
  size_t r = static_cast<size_t>(root);
  bool isRoot = g.rank == root;
  char *b = static_cast<char *>(buf);
  // The root sends its buffer to every other member; the others receive.
  std::vector<Piece> send(m), recv(m);
  for (size_t j = 0; j < m; ++j) {
    if (isRoot && j != r)
      send[j] = {b, bytes};
    if (!isRoot && j == r)
      recv[j] = {b, bytes};
  }
  exchangePieces(g, send, recv);
}

void commAllreduce(const Group &g, const void *in, void *out, int64_t n,
                   Elem e, int32_t op) {
  if (!viaTransport()) {
    MPI_Op mpiOp = op == kMax ? MPI_MAX : op == kMin ? MPI_MIN : MPI_SUM;
    checkMpi(MPI_Allreduce(in ? in : MPI_IN_PLACE, out, asInt(n), mpiType(e),
                           mpiOp, g.comm),
             "MPI_Allreduce");
    return;
  }
  // The members' values, reduced in group-rank order.
  int64_t b = n * bytesOf(e);
  std::vector<char> pieces(static_cast<size_t>(b * g.size));
  gatherBytes(g, static_cast<const char *>(in ? in : out), b, pieces.data());
  auto reduce = [&](auto *values, auto *result) {
    for (int64_t i = 0; i < n; ++i) {
      auto acc = values[i];
      for (int64_t j = 1; j < g.size; ++j) {
        auto v = values[j * n + i];
        acc = op == kMax ? std::max(acc, v)
              : op == kMin ? std::min(acc, v)
                           : static_cast<decltype(acc)>(acc + v);
      }
      result[i] = acc;
    }
  };
  switch (e) {
  case Elem::F32:
    reduceOrdered(op, reinterpret_cast<const float *>(pieces.data()), g.size,
                  n, static_cast<float *>(out));
    return;
  case Elem::F64:
    reduce(reinterpret_cast<const double *>(pieces.data()),
           static_cast<double *>(out));
    return;
  case Elem::I32:
    reduce(reinterpret_cast<const int32_t *>(pieces.data()),
           static_cast<int32_t *>(out));
    return;
  case Elem::I64:
    reduce(reinterpret_cast<const int64_t *>(pieces.data()),
           static_cast<int64_t *>(out));
    return;
  case Elem::Byte:
    break;
  }
  fatal("commAllreduce", "no reduction of bytes");
}

void commIallgather(const Group &g, const void *in, int64_t n, Elem e,
                    void *out, CommRequest &request) {
  if (!viaTransport()) {
    checkMpi(MPI_Iallgather(in, asInt(n), mpiType(e), out, asInt(n),
                            mpiType(e), g.comm, &request.request),
             "MPI_Iallgather");
    return;
  }
  // The transport has no requests: the gather completes here.
  commAllgather(g, in, n, e, out);
  request.request = MPI_REQUEST_NULL;
}

void commWait(CommRequest &request) {
  if (request.request == MPI_REQUEST_NULL)
    return;
  checkMpi(MPI_Wait(&request.request, MPI_STATUS_IGNORE), "MPI_Wait");
}

Group worldGroup() {
  Group g;
  g.size = state.size;
  g.rank = state.rank;
  if (viaTransport()) {
    std::vector<int> &all = state.members[-1];
    if (static_cast<int32_t>(all.size()) != state.size) {
      all.resize(static_cast<size_t>(state.size));
      for (int32_t r = 0; r < state.size; ++r)
        all[static_cast<size_t>(r)] = r;
    }
    g.members = &all;
  } else {
    g.comm = state.world;
  }
  return g;
}

} // namespace muirrt_dist_detail

#endif // MUIR_RT_HAVE_MPI
