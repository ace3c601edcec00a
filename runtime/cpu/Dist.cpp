//===- Dist.cpp - muir runtime distributed collectives --------------------===//
//
// The distributed half of the runtime: a grid of ranks with named axes and
// collectives over the groups that an axes mask names. Built on MPI when
// MUIR_RT_HAVE_MPI is set; otherwise a single-rank fallback in which every
// group has one member and every collective is a local copy. See
// muir-rt/Runtime.h for the contract.
//
// Groups. The ranks form a grid, row-major over the axes (last axis
// fastest); further foldings (muirrt_dist_add_folding) factor the same
// ranks into other axes, and a mask's bits 48-62 say which folding its axis
// bits refer to. The group of a rank for a mask is the ranks whose coordinates
// agree on every axis NOT in the mask; its group rank is the row-major index
// of its coordinates over the mask's axes (in axis order). The communicator
// of a group is created on the first collective on its mask with
// MPI_Comm_create_group (collective over the group only, so a collective on
// a mask never synchronises ranks outside the group) and cached per mask.
//
// Determinism. Sums (and avg, max, min) are never left to the MPI library's
// reduction tree: the pieces of the group are exchanged and reduced locally
// in group-rank order 0, 1, ..., g-1 in float. The result depends only on
// the inputs, and every rank of the group computes bit-identical values.
// all_reduce gathers every member's whole piece (MPI_Allgather) on 2 ranks
// and for small counts; on 3 or more ranks, once every member's slice holds
// MUIR_RT_SCATTER_MIN_PER_MEMBER floats, it sends slice j of its piece to member j
// (MPI_Alltoallv), which reduces its slice in rank order, and gathers the
// reduced slices (MPI_Allgatherv): the bytes of a ring all-reduce, the same
// bits. reduce_scatter exchanges slices (MPI_Alltoall).
// muirrt_set_deterministic(0) leaves all_reduce to MPI_Allreduce.
//
// Large buffers. Collectives that need a temporary or whose counts could
// exceed MPI's int counts run in chunks; all ranks of a group derive the
// same chunking from the same arguments. The temporary holds at most
// kDefaultChunkFloats floats (256 MiB); MUIR_RT_DIST_CHUNK_FLOATS (read by
// muirrt_dist_init, and identical on every rank) lowers it, which the unit
// tests use to exercise the chunked paths with small buffers. The one
// collective that cannot be chunked, all_gatherv (int displacements), fails
// loudly when a count or displacement exceeds INT_MAX.
//
// Errors. muirrt_dist_init and the queries report through
// muirrt_last_error. The collectives return void: invalid arguments print
// "muir runtime: <function>: <why>" and abort the run, and an MPI error
// prints "muir runtime: MPI error in <call>: <MPI_Error_string>" and calls
// MPI_Abort (our communicators use MPI_ERRORS_RETURN so that the error
// reaches us). MPI calls are made from the thread that called
// muirrt_dist_init (MPI_THREAD_FUNNELED).
//
// Sizes. Before moving data, every collective checks that the members of
// its group agree on its sizes (see agree()); shards of different sizes
// stop every rank of the group with one message instead of a hang or mixed
// data. MUIR_RT_CHECK_SIZES=0 turns the check off.
//
// Counters. Per mask: collective calls and the bytes this rank SENT, a
// fixed function of the arguments (not of MPI's algorithm), with g the group
// size and 4 bytes per float:
//   all_reduce      count * 4 * (g - 1)          (its piece to every peer)
//                   or, when it scatters (g >= 3, count >= 256 g, count <=
//                   INT_MAX), 4 * (count - mine) + mine * 4 * (g - 1) with
//                   mine = floor(count (r + 1) / g) - floor(count r / g)
//                   the floats of its slice at group rank r: about
//                   8 (g - 1) / g bytes a float
//   all_gather      outer * inner * 4 * (g - 1)
//   all_gatherv     counts[me] * 4 * (g - 1)
//   reduce_scatter  outer * inner * 4 * (g - 1)  (slice j to group rank j)
//   all_to_all      count * 4 * (g - 1)
//   all_to_allv     4 * row * (rows sent to the g - 1 others) + 8 * (g - 1)
//                   (the payload and one i64 count to every peer)
//   triangle_all_reduce_start  (one call a chunk) batch * (the chunk's
//                   floats of the packed triangle) * 4 * (g - 1); over all
//                   chunks batch * n (n + 1) / 2 * 4 * (g - 1)
//   broadcast       count * 4 * (g - 1) on the root, 0 elsewhere
//   all_gather_i64  count * 8 * (g - 1)
//   all_to_allv_bytes  row_bytes * (rows sent to the g - 1 others)
// A group of one member makes no MPI call and counts 1 call and 0 bytes.
//
//===----------------------------------------------------------------------===//

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
#include <mutex>
#include <thread>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <utility>
#include <vector>

// Defined in Host.cpp: sets the message muirrt_last_error() returns on this
// thread.
namespace muirrt_detail {
void setLastError(std::string message);
} // namespace muirrt_detail

namespace {

constexpr int64_t kIntMax = INT_MAX;
// Largest temporary a collective allocates, in floats (256 MiB).
constexpr int64_t kDefaultChunkFloats = int64_t{1} << 26;
// Masks are int64 with bit i = axis i of a folding (i < 48) and the
// folding's index in bits 48-62 (0: the grid of muirrt_dist_init).
constexpr int32_t kFoldingShift = 48;
constexpr int32_t kMaxAxes = kFoldingShift;

enum ReduceOp : int32_t { kSum = 0, kMax = 1, kMin = 2, kAvg = 3 };

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

int fail(std::string message) {
  muirrt_detail::setLastError(std::move(message));
  return 1;
}

// Ends the run: there is no error return from a collective, and the other
// ranks would wait for this one forever.
// muirrt_set_abort_hook's function, run once before the run ends.
void (*abortHook)(void) = nullptr;

// The run ends with exit status 1 and the message already printed, nothing
// else: no abort() (a crash report, a core), no MPI_Abort (its banner).
// Under mpirun, a rank that exits non-zero makes mpirun end the others.
[[noreturn]] void abortRun() {
  if (void (*hook)(void) = abortHook) {
    abortHook = nullptr;
    hook();
  }
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(1);
}

[[noreturn]] void fatal(const char *fn, const std::string &why) {
  std::fprintf(stderr, "muir runtime: %s: %s\n", fn, why.c_str());
  abortRun();
}

#if MUIR_RT_HAVE_MPI
void checkMpi(int rc, const char *call) {
  if (rc == MPI_SUCCESS)
    return;
  char text[MPI_MAX_ERROR_STRING + 1] = {};
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS)
    std::snprintf(text, sizeof(text), "error code %d", rc);
  std::fprintf(stderr, "muir runtime: MPI error in %s: %s\n", call, text);
  abortRun();
}
#endif

//===----------------------------------------------------------------------===//
// State
//===----------------------------------------------------------------------===//

struct Group {
  int64_t size = 1;
  int64_t rank = 0;
#if MUIR_RT_HAVE_MPI
  MPI_Comm comm = MPI_COMM_NULL; // set only when size > 1
#endif
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
  // library chooses).
  bool deterministic = true;
#if MUIR_RT_HAVE_MPI
  bool weInitialisedMpi = false;
  MPI_Comm world = MPI_COMM_NULL;    // dup of MPI_COMM_WORLD, ERRORS_RETURN
  std::map<int64_t, MPI_Comm> comms; // per mask, groups of size > 1
#endif
};

DistState state;

#if MUIR_RT_HAVE_MPI
// Scratch buffers reused across calls (collectives run on one thread).
std::vector<float> scratchA, scratchB;

float *scratch(std::vector<float> &buf, int64_t n) {
  if (static_cast<int64_t>(buf.size()) < n)
    buf.resize(static_cast<size_t>(n));
  return buf.data();
}
#endif

struct Counter {
  int64_t bytes = 0;
  int64_t calls = 0;
};

std::mutex countersMutex;
std::map<int64_t, Counter> counters;

void countComm(int64_t mask, int64_t bytes) {
  std::lock_guard<std::mutex> lock(countersMutex);
  Counter &c = counters[mask];
  c.bytes += bytes;
  ++c.calls;
}

std::string maskString(int64_t mask) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%llx",
                static_cast<unsigned long long>(mask));
  return buf;
}

int64_t foldingOf(int64_t mask) { return mask >> kFoldingShift; }
int64_t axisBits(int64_t mask) {
  return mask & ((int64_t(1) << kFoldingShift) - 1);
}
const std::vector<int64_t> &sizesOf(int64_t folding) {
  return folding == 0 ? state.sizes
                      : state.more[static_cast<size_t>(folding - 1)].sizes;
}
const std::vector<int64_t> &coordsOf(int64_t folding) {
  return folding == 0 ? state.coords
                      : state.more[static_cast<size_t>(folding - 1)].coords;
}

// Empty if the mask names a registered folding and only its axes, else why
// not. Before muirrt_dist_init the run is one rank and every mask names a
// group of one.
std::string checkMask(int64_t mask) {
  if (!state.ready)
    return "";
  if (mask < 0)
    return "negative axes mask " + std::to_string(mask);
  int64_t folding = foldingOf(mask);
  if (folding > static_cast<int64_t>(state.more.size()))
    return "axes mask " + maskString(mask) + " names folding " +
           std::to_string(folding) + " but " +
           std::to_string(state.more.size() + 1) +
           " folding(s) are registered";
  int64_t bits = axisBits(mask);
  int64_t numAxes = static_cast<int64_t>(sizesOf(folding).size());
  if ((bits >> numAxes) != 0) {
    int32_t axis = 0;
    while (axis < kFoldingShift && (bits >> axis) >> 1 != 0)
      ++axis;
    return "axes mask " + maskString(mask) + " names axis " +
           std::to_string(axis) + " but " +
           (folding ? "folding " + std::to_string(folding) : "the grid") +
           " has " + std::to_string(numAxes) + " axes";
  }
  return "";
}

bool inMask(int64_t mask, size_t axis) { return (axisBits(mask) >> axis) & 1; }

// Size and this rank's index in the group of `mask` (valid mask).
Group groupShape(int64_t mask) {
  Group g;
  if (!state.ready)
    return g;
  const std::vector<int64_t> &sizes = sizesOf(foldingOf(mask));
  const std::vector<int64_t> &coords = coordsOf(foldingOf(mask));
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (!inMask(mask, i))
      continue;
    g.size *= sizes[i];
    g.rank = g.rank * sizes[i] + coords[i];
  }
  return g;
}

#if MUIR_RT_HAVE_MPI
// The world ranks of this rank's group for `mask`, in group-rank order.
std::vector<int> groupMembers(int64_t mask) {
  std::vector<int> members;
  const std::vector<int64_t> &sizes = sizesOf(foldingOf(mask));
  const std::vector<int64_t> &coords = coordsOf(foldingOf(mask));
  for (int32_t r = 0; r < state.size; ++r) {
    bool same = true;
    int64_t rest = r;
    for (size_t i = sizes.size(); i-- > 0;) {
      int64_t c = rest % sizes[i];
      rest /= sizes[i];
      if (!inMask(mask, i) && c != coords[i]) {
        same = false;
        break;
      }
    }
    // Increasing world rank with the non-mask coordinates fixed is
    // row-major order over the mask's axes, i.e. group-rank order.
    if (same)
      members.push_back(r);
  }
  return members;
}

MPI_Comm groupComm(int64_t mask, const Group &g) {
  auto it = state.comms.find(mask);
  if (it != state.comms.end())
    return it->second;
  std::vector<int> members = groupMembers(mask);
  if (static_cast<int64_t>(members.size()) != g.size)
    fatal("group", "internal error: group of mask " + maskString(mask) +
                       " has " + std::to_string(members.size()) +
                       " members, expected " + std::to_string(g.size));
  MPI_Group worldGroup = MPI_GROUP_NULL, group = MPI_GROUP_NULL;
  checkMpi(MPI_Comm_group(state.world, &worldGroup), "MPI_Comm_group");
  checkMpi(MPI_Group_incl(worldGroup, static_cast<int>(members.size()),
                          members.data(), &group),
           "MPI_Group_incl");
  MPI_Comm comm = MPI_COMM_NULL;
  // The tag only tells apart concurrent creations by the same ranks; ours
  // happen one at a time, in program order.
  checkMpi(MPI_Comm_create_group(state.world, group,
                                 static_cast<int>(mask & 0x7fff), &comm),
           "MPI_Comm_create_group");
  checkMpi(MPI_Group_free(&group), "MPI_Group_free");
  checkMpi(MPI_Group_free(&worldGroup), "MPI_Group_free");
  checkMpi(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN),
           "MPI_Comm_set_errhandler");
  int commSize = 0, commRank = 0;
  checkMpi(MPI_Comm_size(comm, &commSize), "MPI_Comm_size");
  checkMpi(MPI_Comm_rank(comm, &commRank), "MPI_Comm_rank");
  if (commSize != g.size || commRank != g.rank)
    fatal("group", "internal error: communicator of mask " +
                       maskString(mask) + " has rank " +
                       std::to_string(commRank) + " of " +
                       std::to_string(commSize) + ", expected " +
                       std::to_string(g.rank) + " of " +
                       std::to_string(g.size));
  state.comms.emplace(mask, comm);
  return comm;
}

void freeComms() {
  for (auto &entry : state.comms)
    checkMpi(MPI_Comm_free(&entry.second), "MPI_Comm_free");
  state.comms.clear();
  if (state.world != MPI_COMM_NULL)
    checkMpi(MPI_Comm_free(&state.world), "MPI_Comm_free");
  state.world = MPI_COMM_NULL;
}
#endif

// The group of a collective on `mask`, its communicator created if needed;
// aborts on an invalid mask.
Group groupFor(const char *fn, int64_t mask) {
  std::string why = checkMask(mask);
  if (!why.empty())
    fatal(fn, why);
  Group g = groupShape(mask);
#if MUIR_RT_HAVE_MPI
  if (g.size > 1)
    g.comm = groupComm(mask, g);
#endif
  return g;
}

// Every member of a group must call a collective with the same sizes (what
// the same compiled program does). Shards of different sizes, from ranks
// that run different programs or descriptions, would otherwise hang or
// mix data silently: each collective first compares two numbers that
// describe its sizes over the group (one MPI_Allreduce of 4 int64, not
// counted as payload) and every rank of the group stops with the same
// message when they differ. MUIR_RT_CHECK_SIZES=0 turns the check off.
void agree(const char *fn, const Group &g, int64_t mask, const char *what,
           int64_t a, int64_t b = 0) {
#if MUIR_RT_HAVE_MPI
  if (!state.checkSizes || g.size == 1)
    return;
  int64_t mine[4] = {a, -a, b, -b}, range[4] = {0, 0, 0, 0};
  checkMpi(MPI_Allreduce(mine, range, 4, MPI_INT64_T, MPI_MAX, g.comm),
           "MPI_Allreduce");
  if (range[0] != -range[1] || range[2] != -range[3])
    fatal(fn, std::string("the ranks of group ") + maskString(mask) +
                  " disagree on " + what + ": this rank (world rank " +
                  std::to_string(state.rank) + ") has " + std::to_string(a) +
                  ", " + std::to_string(b) + "; the group ranges over [" +
                  std::to_string(-range[1]) + ", " +
                  std::to_string(range[0]) + "], [" +
                  std::to_string(-range[3]) + ", " +
                  std::to_string(range[2]) +
                  "] (shards of different sizes: were all ranks compiled "
                  "from the same description and grid?)");
#else
  (void)fn, (void)g, (void)mask, (void)what, (void)a, (void)b;
#endif
}

//===----------------------------------------------------------------------===//
// Argument checks and local helpers
//===----------------------------------------------------------------------===//

void checkNonNegative(const char *fn, const char *what, int64_t v) {
  if (v < 0)
    fatal(fn, std::string("negative ") + what + " " + std::to_string(v));
}

void checkOp(const char *fn, int32_t op) {
  if (op < kSum || op > kAvg)
    fatal(fn, "unknown reduction op " + std::to_string(op) +
                  " (0 sum, 1 max, 2 min, 3 avg)");
}

void checkPointer(const char *fn, const char *what, const void *p,
                  int64_t n) {
  if (n > 0 && !p)
    fatal(fn, std::string("null ") + what + " for " + std::to_string(n) +
                  " floats");
}

// a * b, aborting on int64 overflow.
int64_t mul(const char *fn, int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r))
    fatal(fn, "size " + std::to_string(a) + " x " + std::to_string(b) +
                  " overflows int64");
  return r;
}

void copyFloats(float *dst, const float *src, int64_t n) {
  if (n > 0 && dst != src)
    std::memmove(dst, src, static_cast<size_t>(n) * sizeof(float));
}

// Slice j of an all_reduce of count floats over g members is
// [sliceBegin(count, j, g), sliceBegin(count, j + 1, g)).
int64_t sliceBegin(int64_t count, int64_t j, int64_t g) {
  return static_cast<int64_t>(static_cast<__int128>(count) * j / g);
}

// muirrt_all_reduce_scatters (Runtime.h): 3 or more members, every slice
// at least MUIR_RT_SCATTER_MIN_PER_MEMBER floats, MPI's int displacements.
bool allReduceScatters(int64_t count, const Group &g) {
  return muirrt_all_reduce_scatters(count, g.size) != 0;
}

// The bytes this rank sends in an all_reduce (see the file comment).
int64_t allReduceBytes(const char *fn, int64_t count, const Group &g) {
  if (!allReduceScatters(count, g))
    return mul(fn, mul(fn, count, 4), g.size - 1);
  int64_t mine = sliceBegin(count, g.rank + 1, g.size) -
                 sliceBegin(count, g.rank, g.size);
  return 4 * (count - mine) + mul(fn, mul(fn, mine, 4), g.size - 1);
}

#if MUIR_RT_HAVE_MPI
// Floats per group member in one chunk of a collective whose temporary holds
// one chunk from every member of a group of g: at most the budget in total,
// and every MPI count (and count * g) within int.
int64_t pieceChunk(int64_t g) {
  int64_t total = std::min(state.chunkFloats, kIntMax);
  return std::max<int64_t>(1, total / g);
}

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

// out[k] = op over j = 0, 1, ..., g-1 (in that order) of pieces[j * n + k].
// Max and min propagate NaN.
void reduceOrdered(int32_t op, const float *pieces, int64_t g, int64_t n,
                   float *out) {
  std::memcpy(out, pieces, static_cast<size_t>(n) * sizeof(float));
  for (int64_t j = 1; j < g; ++j) {
    const float *p = pieces + j * n;
    switch (op) {
    case kSum:
    case kAvg:
      for (int64_t k = 0; k < n; ++k)
        out[k] += p[k];
      break;
    case kMax:
      for (int64_t k = 0; k < n; ++k)
        if (p[k] > out[k] || std::isnan(p[k]))
          out[k] = std::isnan(out[k]) ? out[k] : p[k];
      break;
    case kMin:
      for (int64_t k = 0; k < n; ++k)
        if (p[k] < out[k] || std::isnan(p[k]))
          out[k] = std::isnan(out[k]) ? out[k] : p[k];
      break;
    }
  }
  if (op == kAvg) {
    float denom = static_cast<float>(g);
    for (int64_t k = 0; k < n; ++k)
      out[k] = out[k] / denom;
  }
}

int asInt(int64_t v) { return static_cast<int>(v); }

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
    checkMpi(MPI_Alltoallv(in, counts.data(), displs.data(), MPI_FLOAT, recv,
                           recvCounts.data(), recvDispls.data(), MPI_FLOAT,
                           g.comm),
             "MPI_Alltoallv");
    reduceOrdered(op, recv, members, n, out + displs[me]);
    checkMpi(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, out,
                            counts.data(), displs.data(), MPI_FLOAT, g.comm),
             "MPI_Allgatherv");
  }
}
#endif

// Runs a collective's body, turning an escaping exception (out of memory)
// into a fatal error: no exception crosses the C boundary.
//===----------------------------------------------------------------------===//
// Watchdog: a collective that never completes (a rank died, or ranks took
// different paths) must not hang the run. A thread checks the collective in
// flight; past the timeout (MUIR_RT_COLLECTIVE_TIMEOUT seconds, default 60)
// it reports which collective waited and exits non-zero, which makes mpirun
// end the other ranks.
//===----------------------------------------------------------------------===//

std::atomic<int64_t> inFlightSince{0}; // steady-clock ns; 0 when idle
std::atomic<const char *> inFlightName{nullptr};
std::once_flag watchdogStarted;

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void startWatchdog() {
  std::call_once(watchdogStarted, [] {
    double timeout = 60;
    if (const char *env = std::getenv("MUIR_RT_COLLECTIVE_TIMEOUT"))
      timeout = std::max(0.1, std::atof(env));
    std::thread([timeout] {
      for (;;) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        int64_t since = inFlightSince.load();
        if (since && (nowNs() - since) * 1e-9 > timeout) {
          const char *name = inFlightName.load();
          std::fprintf(stderr,
                       "muir runtime: rank %d: %s did not complete within "
                       "%g s (another rank died or took a different path); "
                       "aborting\n",
                       static_cast<int>(state.rank), name ? name : "?",
                       timeout);
          std::fflush(stderr);
          std::_Exit(1);
        }
      }
    }).detach();
  });
}

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

} // namespace

//===----------------------------------------------------------------------===//
// Setup and queries
//===----------------------------------------------------------------------===//

extern "C" int muirrt_dist_init(int32_t num_axes, const int64_t *sizes) {
  try {
    if (num_axes < 0 || num_axes > kMaxAxes)
      return fail("muirrt_dist_init: number of axes " +
                  std::to_string(num_axes) + " out of range [0, " +
                  std::to_string(kMaxAxes) + "]");
    if (num_axes > 0 && !sizes)
      return fail("muirrt_dist_init: null sizes");
    int64_t product = 1;
    for (int32_t i = 0; i < num_axes; ++i) {
      if (sizes[i] < 1)
        return fail("muirrt_dist_init: axis " + std::to_string(i) +
                    " has size " + std::to_string(sizes[i]) +
                    "; sizes must be positive");
      if (__builtin_mul_overflow(product, sizes[i], &product) ||
          product > kIntMax)
        return fail("muirrt_dist_init: the grid has more than " +
                    std::to_string(kIntMax) + " devices");
    }

    int64_t chunkFloats = kDefaultChunkFloats;
    if (const char *env = std::getenv("MUIR_RT_DIST_CHUNK_FLOATS")) {
      char *end = nullptr;
      long long v = std::strtoll(env, &end, 10);
      if (!*env || *end || v < 1)
        return fail("muirrt_dist_init: MUIR_RT_DIST_CHUNK_FLOATS='" +
                    std::string(env) + "' is not a positive integer");
      chunkFloats = std::min<int64_t>(v, kDefaultChunkFloats);
    }
    bool checkSizes = true;
    if (const char *env = std::getenv("MUIR_RT_CHECK_SIZES"))
      checkSizes = std::string(env) != "0";

    int32_t worldRank = 0, worldSize = 1;
#if MUIR_RT_HAVE_MPI
    int initialized = 0, finalized = 0;
    checkMpi(MPI_Finalized(&finalized), "MPI_Finalized");
    if (finalized)
      return fail("muirrt_dist_init: MPI has already been finalized");
    checkMpi(MPI_Initialized(&initialized), "MPI_Initialized");
    if (!initialized) {
      int provided = 0;
      checkMpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED,
                               &provided),
               "MPI_Init_thread");
      state.weInitialisedMpi = true;
    }
    int r = 0, w = 1;
    checkMpi(MPI_Comm_rank(MPI_COMM_WORLD, &r), "MPI_Comm_rank");
    checkMpi(MPI_Comm_size(MPI_COMM_WORLD, &w), "MPI_Comm_size");
    worldRank = r;
    worldSize = w;
#endif
    if (product != worldSize)
      return fail("grid has " + std::to_string(product) +
                  " devices but the run has " + std::to_string(worldSize) +
                  " ranks"
#if !MUIR_RT_HAVE_MPI
                  " (this muir runtime was built without MPI; only "
                  "1-device grids can run)"
#endif
      );

    // (Re)initialise: drop the communicators of an earlier grid.
#if MUIR_RT_HAVE_MPI
    freeComms();
    checkMpi(MPI_Comm_dup(MPI_COMM_WORLD, &state.world), "MPI_Comm_dup");
    checkMpi(MPI_Comm_set_errhandler(state.world, MPI_ERRORS_RETURN),
             "MPI_Comm_set_errhandler");
#endif
    state.more.clear();
    state.sizes.assign(sizes, sizes + num_axes);
    state.coords.assign(static_cast<size_t>(num_axes), 0);
    int64_t rest = worldRank;
    for (int32_t i = num_axes; i-- > 0;) {
      state.coords[static_cast<size_t>(i)] = rest % sizes[i];
      rest /= sizes[i];
    }
    state.rank = worldRank;
    state.size = worldSize;
    state.chunkFloats = chunkFloats;
    state.checkSizes = checkSizes;
    state.ready = true;
    if (worldSize > 1)
      startWatchdog();
    return 0;
  } catch (const std::bad_alloc &) {
    return fail("muirrt_dist_init: out of memory");
  } catch (const std::exception &e) {
    return fail(std::string("muirrt_dist_init: ") + e.what());
  }
}

extern "C" int32_t muirrt_dist_add_folding(int32_t num_axes,
                                           const int64_t *sizes) {
  auto error = [](const std::string &why) {
    fail("muirrt_dist_add_folding: " + why);
    return int32_t{-1};
  };
  if (!state.ready)
    return error("call muirrt_dist_init first");
  if (num_axes < 0 || num_axes > kMaxAxes || (num_axes > 0 && !sizes))
    return error("number of axes " + std::to_string(num_axes) +
                 " out of range [0, " + std::to_string(kMaxAxes) + "]");
  if (state.more.size() + 1 >= (size_t(1) << (62 - kFoldingShift)))
    return error("too many foldings");
  int64_t product = 1;
  for (int32_t i = 0; i < num_axes; ++i) {
    if (sizes[i] < 1)
      return error("axis " + std::to_string(i) + " has size " +
                   std::to_string(sizes[i]));
    product *= sizes[i];
    if (product > state.size)
      break;
  }
  if (product != state.size)
    return error("the folding covers " + std::to_string(product) +
                 " devices but the run has " + std::to_string(state.size) +
                 " ranks");
  Folding f;
  f.sizes.assign(sizes, sizes + num_axes);
  f.coords.assign(static_cast<size_t>(num_axes), 0);
  int64_t rest = state.rank;
  for (int32_t i = num_axes; i-- > 0;) {
    f.coords[static_cast<size_t>(i)] = rest % sizes[i];
    rest /= sizes[i];
  }
  state.more.push_back(std::move(f));
  return static_cast<int32_t>(state.more.size());
}

extern "C" int32_t muirrt_dist_rank(void) { return state.rank; }

extern "C" int32_t muirrt_dist_size(void) { return state.size; }

// 0 before init (a one-rank run); -1 for an axis outside the grid.
extern "C" int64_t muirrt_dist_coord(int32_t axis) {
  if (!state.ready)
    return 0;
  if (axis < 0 || static_cast<size_t>(axis) >= state.sizes.size()) {
    fail("muirrt_dist_coord: axis " + std::to_string(axis) +
         " out of range; the grid has " +
         std::to_string(state.sizes.size()) + " axes");
    return -1;
  }
  return state.coords[static_cast<size_t>(axis)];
}

// -1 (see muirrt_last_error) for a mask naming an axis outside the grid.
extern "C" int64_t muirrt_dist_group_size(int64_t axes_mask) {
  std::string why = checkMask(axes_mask);
  if (!why.empty()) {
    fail("muirrt_dist_group_size: " + why);
    return -1;
  }
  return groupShape(axes_mask).size;
}

extern "C" int64_t muirrt_dist_group_rank(int64_t axes_mask) {
  std::string why = checkMask(axes_mask);
  if (!why.empty()) {
    fail("muirrt_dist_group_rank: " + why);
    return -1;
  }
  return groupShape(axes_mask).rank;
}

extern "C" void muirrt_dist_barrier(void) {
#if MUIR_RT_HAVE_MPI
  if (state.ready && state.size > 1)
    checkMpi(MPI_Barrier(state.world), "MPI_Barrier");
#endif
}

// Control, not data: not counted in the collectives' counters.
extern "C" int32_t muirrt_dist_first(int32_t mine) {
  int32_t first = mine ? state.rank : INT32_MAX;
#if MUIR_RT_HAVE_MPI
  if (state.ready && state.size > 1) {
    // Under the watchdog: a rank that never comes must not hang the others.
    guardedCollective("muirrt_dist_first", [&] {
      checkMpi(MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT32_T, MPI_MIN,
                             state.world),
               "MPI_Allreduce");
    });
  }
#endif
  return first == INT32_MAX ? -1 : first;
}

// Frees our communicators; finalizes MPI only if muirrt_dist_init
// initialised it. Afterwards the run is back to one rank (MPI cannot be
// initialised twice, so a later muirrt_dist_init with MPI fails).
extern "C" void muirrt_dist_finalize(void) {
#if MUIR_RT_HAVE_MPI
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) {
    freeComms();
    if (state.weInitialisedMpi)
      checkMpi(MPI_Finalize(), "MPI_Finalize");
  }
  state.weInitialisedMpi = false;
  std::vector<float>().swap(scratchA);
  std::vector<float>().swap(scratchB);
#endif
  state.ready = false;
  state.sizes.clear();
  state.coords.clear();
  state.more.clear();
  state.rank = 0;
  state.size = 1;
  state.chunkFloats = kDefaultChunkFloats;
}

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
    countComm(axes_mask, allReduceBytes(fn, count, g));
    if (g.size == 1) {
      copyFloats(out, in, count); // sum/max/min/avg of one piece
      return;
    }
#if MUIR_RT_HAVE_MPI
    if (!state.deterministic) {
      // MPI's reduction, in the order its algorithm picks.
      MPI_Op mpiOp = op == kMax ? MPI_MAX : op == kMin ? MPI_MIN : MPI_SUM;
      for (int64_t s = 0; s < count; s += kIntMax) {
        int64_t n = std::min<int64_t>(kIntMax, count - s);
        checkMpi(MPI_Allreduce(in == out ? MPI_IN_PLACE : in + s, out + s,
                               asInt(n), MPI_FLOAT, mpiOp, g.comm),
                 "MPI_Allreduce");
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
      checkMpi(MPI_Allgather(in + s, asInt(n), MPI_FLOAT, pieces, asInt(n),
                             MPI_FLOAT, g.comm),
               "MPI_Allgather");
      reduceOrdered(op, pieces, g.size, n, out + s);
    }
#endif
  });
}

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
    countComm(axes_mask, count * 8 * (g.size - 1));
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
        checkMpi(MPI_Allgather(packed.data() + s, asInt(c), MPI_DOUBLE,
                               part.data(), asInt(c), MPI_DOUBLE, g.comm),
                 "MPI_Allgather");
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
    // Bytes: this rank's block to each of the g - 1 others.
    countComm(axes_mask, mul(fn, mul(fn, block, 4), g.size - 1));
    if (g.size == 1) {
      copyFloats(out, in, block);
      return;
    }
#if MUIR_RT_HAVE_MPI
    int64_t chunk = pieceChunk(g.size);
    if (outer == 1 && block <= chunk) {
      // Pieces are whole rows of out: gather in place.
      checkMpi(MPI_Allgather(in, asInt(block), MPI_FLOAT, out, asInt(block),
                             MPI_FLOAT, g.comm),
               "MPI_Allgather");
      return;
    }
    // Gather a chunk of every member's block, then place piece j's rows at
    // column offset j * inner of out's rows.
    float *pieces = scratch(scratchA, chunk * g.size);
    for (int64_t s = 0; s < block; s += chunk) {
      int64_t n = std::min(chunk, block - s);
      checkMpi(MPI_Allgather(in + s, asInt(n), MPI_FLOAT, pieces, asInt(n),
                             MPI_FLOAT, g.comm),
               "MPI_Allgather");
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
    // Bytes: this rank's counts[me] floats to each of the g - 1 others.
    countComm(axes_mask, mul(fn, mul(fn, mine, 4), g.size - 1));
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
    checkMpi(MPI_Allgatherv(in, asInt(mine), MPI_FLOAT, out, recvCounts.data(),
                            displs.data(), MPI_FLOAT, g.comm),
             "MPI_Allgatherv");
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
    // Bytes: slice j (outer * inner floats) to group rank j, for the g - 1
    // others.
    countComm(axes_mask, mul(fn, mul(fn, block, 4), g.size - 1));
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
      checkMpi(MPI_Alltoall(in, asInt(block), MPI_FLOAT, recv, asInt(block),
                            MPI_FLOAT, g.comm),
               "MPI_Alltoall");
      reduceOrdered(op, recv, g.size, block, out);
      return;
    }
    float *send = scratch(scratchB, chunk * g.size);
    for (int64_t s = 0; s < block; s += chunk) {
      int64_t n = std::min(chunk, block - s);
      for (int64_t j = 0; j < g.size; ++j)
        pieceToFlat(in, send + j * n, j, s, n, inner, g.size);
      checkMpi(MPI_Alltoall(send, asInt(n), MPI_FLOAT, recv, asInt(n),
                            MPI_FLOAT, g.comm),
               "MPI_Alltoall");
      // Element t of our slice is out[t] (out is [outer, inner]).
      reduceOrdered(op, recv, g.size, n, out + s);
    }
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
    // Bytes: block j (count floats) to group rank j, for the g - 1 others.
    countComm(axes_mask, mul(fn, mul(fn, count, 4), g.size - 1));
    if (g.size == 1) {
      copyFloats(out, in, count);
      return;
    }
#if MUIR_RT_HAVE_MPI
    int64_t chunk = pieceChunk(g.size);
    if (count <= chunk && in != out) {
      checkMpi(MPI_Alltoall(in, asInt(count), MPI_FLOAT, out, asInt(count),
                            MPI_FLOAT, g.comm),
               "MPI_Alltoall");
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
      checkMpi(MPI_Alltoall(send, asInt(n), MPI_FLOAT, recv, asInt(n),
                            MPI_FLOAT, g.comm),
               "MPI_Alltoall");
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
    // Bytes: the rows for the g - 1 others, and one i64 count to each.
    countComm(axes_mask, mul(fn, mul(fn, toOthers, row), 4) +
                             8 * (g.size - 1));
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
    checkMpi(MPI_Alltoall(send_counts, 1, MPI_INT64_T, recv_counts, 1,
                          MPI_INT64_T, g.comm),
             "MPI_Alltoall");
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
    MPI_Datatype rowType;
    checkMpi(MPI_Type_contiguous(asInt(row), MPI_FLOAT, &rowType),
             "MPI_Type_contiguous");
    checkMpi(MPI_Type_commit(&rowType), "MPI_Type_commit");
    int rcAll = MPI_Alltoallv(in, sc.data(), sd.data(), rowType, out,
                              rc.data(), rd.data(), rowType, g.comm);
    MPI_Type_free(&rowType);
    checkMpi(rcAll, "MPI_Alltoallv");
#endif
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
  MPI_Request request = MPI_REQUEST_NULL;
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
    // Bytes: the packed rows to each of the g - 1 others.
    countComm(axes_mask, mul(fn, mul(fn, floats, 4), g.size - 1));
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
    checkMpi(MPI_Iallgather(t.send.data(), asInt(floats), MPI_FLOAT,
                            t.pieces.data(), asInt(floats), MPI_FLOAT, g.comm,
                            &t.request),
             "MPI_Iallgather");
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
      checkMpi(MPI_Wait(&t.request, MPI_STATUS_IGNORE), "MPI_Wait");
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
    // Bytes: the root sends its buffer to each of the g - 1 others.
    countComm(axes_mask,
          g.rank == root ? mul(fn, mul(fn, count, 4), g.size - 1) : 0);
    if (g.size == 1)
      return;
#if MUIR_RT_HAVE_MPI
    int64_t chunk = std::min(state.chunkFloats, kIntMax);
    for (int64_t s = 0; s < count; s += chunk) {
      int64_t n = std::min(chunk, count - s);
      checkMpi(MPI_Bcast(buf + s, asInt(n), MPI_FLOAT, asInt(root), g.comm),
               "MPI_Bcast");
    }
#endif
  });
}

//===----------------------------------------------------------------------===//
// Counters
//===----------------------------------------------------------------------===//

extern "C" int64_t muirrt_comm_bytes(int64_t axes_mask) {
  std::lock_guard<std::mutex> lock(countersMutex);
  auto it = counters.find(axes_mask);
  return it == counters.end() ? 0 : it->second.bytes;
}

extern "C" int64_t muirrt_comm_calls(int64_t axes_mask) {
  std::lock_guard<std::mutex> lock(countersMutex);
  auto it = counters.find(axes_mask);
  return it == counters.end() ? 0 : it->second.calls;
}

extern "C" void muirrt_comm_reset(void) {
  std::lock_guard<std::mutex> lock(countersMutex);
  counters.clear();
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
    // Bytes: this rank's count int64s to each of the g - 1 others.
    countComm(axes_mask, mul(fn, mul(fn, count, 8), g.size - 1));
    if (g.size == 1) {
      std::copy(in, in + count, out);
      return;
    }
#if MUIR_RT_HAVE_MPI
    if (count > kIntMax)
      fatal(fn, "count " + std::to_string(count) + " exceeds int");
    checkMpi(MPI_Allgather(in, asInt(count), MPI_INT64_T, out, asInt(count),
                           MPI_INT64_T, g.comm),
             "MPI_Allgather");
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
    // Bytes: the rows for the g - 1 others (the counts are known already).
    countComm(axes_mask, mul(fn, toOthers, row_bytes));
    if (g.size == 1) {
      if (send_rows[0] != recv_rows[0])
        fatal(fn, "a group of one sends " + std::to_string(send_rows[0]) +
                      " rows to itself but expects " +
                      std::to_string(recv_rows[0]));
      if (sent)
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
    MPI_Datatype rowType;
    checkMpi(MPI_Type_contiguous(asInt(std::max<int64_t>(row_bytes, 1)),
                                 MPI_BYTE, &rowType),
             "MPI_Type_contiguous");
    checkMpi(MPI_Type_commit(&rowType), "MPI_Type_commit");
    if (row_bytes == 0)
      std::fill(sc.begin(), sc.end(), 0), std::fill(rc.begin(), rc.end(), 0);
    int rcAll = MPI_Alltoallv(in, sc.data(), sd.data(), rowType, out,
                              rc.data(), rd.data(), rowType, g.comm);
    MPI_Type_free(&rowType);
    checkMpi(rcAll, "MPI_Alltoallv");
#endif
  });
}

extern "C" void muirrt_abort_run(const char *fn, const char *message) {
  fatal(fn, message);
}

extern "C" void muirrt_set_abort_hook(void (*hook)(void)) { abortHook = hook; }

extern "C" void muirrt_set_deterministic(int32_t on) {
  state.deterministic = on != 0;
}
