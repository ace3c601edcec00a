//===- DistInternal.h - what the Dist*.cpp files share ----------*- C++ -*-===//
//
// The runtime's distributed half is six files: Dist.cpp (errors, state,
// the watchdog, setup and queries; its header comment describes the
// design), DistGroups.cpp (groups, communicators, size agreement,
// counters), DistComm.cpp (the byte movers: MPI or a transport), DistReduce.cpp (all_reduce, reduce_scatter), DistExchange.cpp
// (gathers, all-to-all, broadcast, slices) and DistTriangle.cpp (the
// symmetric and packed-triangle all-reduces). These are the state and
// helpers more than one of them uses; nothing here is part of the
// runtime's C API.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_RUNTIME_CPU_DISTINTERNAL_H
#define MUIR_RUNTIME_CPU_DISTINTERNAL_H

#include "muir-rt/Runtime.h"

#if MUIR_RT_HAVE_MPI
// The C API only: OpenMPI's deprecated C++ bindings do not build warning-free.
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstring>
#include <exception>
#include <map>
#include <new>
#include <string>
#include <vector>

namespace [[gnu::visibility("hidden")]] muirrt_dist_detail {

constexpr int64_t kIntMax = INT_MAX;
// Largest temporary a collective allocates, in floats (256 MiB).
constexpr int64_t kDefaultChunkFloats = int64_t{1} << 26;
// Masks: muir-rt/GroupMask.h.
constexpr int32_t kFoldingShift = MUIRRT_FOLDING_SHIFT;

// The reduction codes (muir-rt/Collectives.h).
constexpr int32_t kSum = MUIRRT_REDUCE_SUM, kMax = MUIRRT_REDUCE_MAX,
                  kMin = MUIRRT_REDUCE_MIN, kAvg = MUIRRT_REDUCE_AVG;

//===----------------------------------------------------------------------===//
// Errors (Dist.cpp)
//===----------------------------------------------------------------------===//

// Prints "muir runtime: <fn>: <why>" and ends the run.
[[noreturn]] void fatal(const char *fn, const std::string &why);

#if MUIR_RT_HAVE_MPI
// Ends the run with the MPI error's text unless rc is MPI_SUCCESS.
void checkMpi(int rc, const char *call);
#endif

//===----------------------------------------------------------------------===//
// State
//===----------------------------------------------------------------------===//

struct Group {
  int64_t size = 1;
  int64_t rank = 0;
#if MUIR_RT_HAVE_MPI
  MPI_Comm comm = MPI_COMM_NULL; // set only when size > 1 (MPI's ranks)
#endif
  // Under a transport (muirrt_dist_set_transport), the world ranks of the
  // group in group-rank order (also increasing), when size > 1.
  const std::vector<int> *members = nullptr;
};

// One factorisation of the world's ranks into named axes, row-major.
struct Folding {
  std::vector<int64_t> sizes;
  std::vector<int64_t> coords; // of this rank
};

struct DistState {
  bool ready = false; // muirrt_dist_init succeeded (and not finalized)
  std::vector<int64_t> sizes;  // folding 0, the grid
  std::vector<int64_t> coords;
  std::vector<Folding> more;   // foldings 1, 2, ... (muirrt_dist_add_folding)
  int32_t rank = 0;
  int32_t size = 1;
  int64_t chunkFloats = kDefaultChunkFloats;
  bool checkSizes = true; // MUIR_RT_CHECK_SIZES=0 turns the check off
  // Reductions in group-rank order (the default), or MPI's own
  // (muirrt_set_deterministic(0): MPI_Allreduce, whose order the MPI
  // library chooses; under a transport the order stays group-rank order).
  bool deterministic = true;
  // The transport that moves the bytes instead of MPI (muirrt_dist_set_
  // transport), its rank and size; the members of each mask's group.
  muirrt_exchange_fn exchange = nullptr;
  void *exchangeContext = nullptr;
  int32_t transportRank = 0, transportSize = 1;
  std::map<int64_t, std::vector<int>> members;
#if MUIR_RT_HAVE_MPI
  bool weInitialisedMpi = false;
  MPI_Comm world = MPI_COMM_NULL;    // dup of MPI_COMM_WORLD, ERRORS_RETURN
  std::map<int64_t, MPI_Comm> comms; // per mask, groups of size > 1
#endif
};

// Defined in Dist.cpp.
extern DistState state;

#if MUIR_RT_HAVE_MPI
// Scratch buffers reused across calls (collectives run on one thread).
// Defined in Dist.cpp.
extern std::vector<float> scratchA, scratchB;

inline float *scratch(std::vector<float> &buf, int64_t n) {
  if (static_cast<int64_t>(buf.size()) < n)
    buf.resize(static_cast<size_t>(n));
  return buf.data();
}
#endif

//===----------------------------------------------------------------------===//
// Groups, size agreement and counters (DistGroups.cpp)
//===----------------------------------------------------------------------===//

// Adds one call and `bytes` sent to the counters of `mask`.
void countComm(int64_t mask, int64_t bytes);

// Empty if the mask names a registered folding and only its axes, else why
// not.
std::string checkMask(int64_t mask);

// Size and this rank's index in the group of `mask` (valid mask).
Group groupShape(int64_t mask);

#if MUIR_RT_HAVE_MPI
// Frees the cached communicators and the world's duplicate.
void freeComms();
#endif

// The group of a collective on `mask`, its communicator created if needed;
// aborts on an invalid mask.
Group groupFor(const char *fn, int64_t mask);

#if MUIR_RT_HAVE_MPI
//===----------------------------------------------------------------------===//
// Moving the bytes (DistComm.cpp): every collective's data goes through
// these, on the group's MPI communicator or, when a transport is registered
// (muirrt_dist_set_transport), as one all-to-all of bytes over the world's
// ranks in which only the group's members send to each other. The
// arguments are MPI's (counts within int, checked by the callers); `in`
// null means MPI_IN_PLACE where MPI allows it.
//===----------------------------------------------------------------------===//

enum class Elem { F32, F64, I32, I64, Byte };

void commAllgather(const Group &g, const void *in, int64_t n, Elem e,
                   void *out);
// In place (in null): this member's piece is at out + displs[g.rank].
void commAllgatherv(const Group &g, const void *in, int64_t n,
                    const int *counts, const int *displs, Elem e, void *out);
void commAlltoall(const Group &g, const void *in, int64_t n, Elem e,
                  void *out);
// Counts and displacements in units of `unit` elements of `e`.
void commAlltoallv(const Group &g, const void *in, const int *sendCounts,
                   const int *sendDispls, void *out, const int *recvCounts,
                   const int *recvDispls, Elem e, int64_t unit);
void commBcast(const Group &g, void *buf, int64_t n, Elem e, int64_t root);
// MPI's reduction order (MPI_Allreduce), or the members' values gathered
// and reduced in group-rank order under a transport (small counts: the
// size agreement, muirrt_dist_first). op: kSum, kMax, kMin.
void commAllreduce(const Group &g, const void *in, void *out, int64_t n,
                   Elem e, int32_t op);

// A started all-gather (MPI_Iallgather); a transport's completes at once.
struct CommRequest {
  MPI_Request request = MPI_REQUEST_NULL;
};
void commIallgather(const Group &g, const void *in, int64_t n, Elem e,
                    void *out, CommRequest &request);
void commWait(CommRequest &request);

// The group of all ranks (MPI: the world's duplicate).
Group worldGroup();
#endif

// Stops every rank of the group when its members disagree on (a, b), the
// sizes of a collective (see its definition).
void agree(const char *fn, const Group &g, int64_t mask, const char *what,
           int64_t a, int64_t b = 0);

//===----------------------------------------------------------------------===//
// Argument checks and local helpers
//===----------------------------------------------------------------------===//

inline void checkNonNegative(const char *fn, const char *what, int64_t v) {
  if (v < 0)
    fatal(fn, std::string("negative ") + what + " " + std::to_string(v));
}

inline void checkPointer(const char *fn, const char *what,
                         const void *p, int64_t n) {
  if (n > 0 && !p)
    fatal(fn, std::string("null ") + what + " for " + std::to_string(n) +
                  " floats");
}

// a * b, aborting on int64 overflow.
inline int64_t mul(const char *fn, int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r))
    fatal(fn, "size " + std::to_string(a) + " x " + std::to_string(b) +
                  " overflows int64");
  return r;
}

inline void copyFloats(float *dst, const float *src, int64_t n) {
  if (n > 0 && dst != src)
    std::memmove(dst, src, static_cast<size_t>(n) * sizeof(float));
}

#if MUIR_RT_HAVE_MPI
// Floats per group member in one chunk of a collective whose temporary holds
// one chunk from every member of a group of g: at most the budget in total,
// and every MPI count (and count * g) within int.
inline int64_t pieceChunk(int64_t g) {
  int64_t total = std::min(state.chunkFloats, kIntMax);
  return std::max<int64_t>(1, total / g);
}

inline int asInt(int64_t v) { return static_cast<int>(v); }

#endif

// out[k] = op over j = 0, 1, ..., g-1 (in that order) of pieces[j * n + k].
// Max and min propagate NaN. Defined in DistReduce.cpp (with or without
// MPI: the triangle all-reduce's wait uses it either way).
void reduceOrdered(int32_t op, const float *pieces, int64_t g, int64_t n,
                   float *out);

//===----------------------------------------------------------------------===//
// Watchdog (Dist.cpp): the collective in flight, which a thread started by
// muirrt_dist_init checks against MUIR_RT_COLLECTIVE_TIMEOUT.
//===----------------------------------------------------------------------===//

extern std::atomic<int64_t> inFlightSince; // steady-clock ns; 0 when idle
extern std::atomic<const char *> inFlightName;

inline int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Runs a collective's body, turning an escaping exception (out of memory)
// into a fatal error: no exception crosses the C boundary.
template <typename Fn> void guardedCollective(const char *fn, Fn &&body) {
  try {
    inFlightName = fn;
    inFlightSince = nowNs();
    body();
    inFlightSince = 0;
  } catch (const std::bad_alloc &) {
    fatal(fn, "out of memory");
  } catch (const std::exception &e) {
    fatal(fn, e.what());
  } catch (...) {
    fatal(fn, "unknown error");
  }
}

} // namespace muirrt_dist_detail

#endif // MUIR_RUNTIME_CPU_DISTINTERNAL_H
