//===- Dist.cpp - muir runtime distributed collectives --------------------===//
//
// The distributed half of the runtime: a grid of ranks with named axes and
// collectives over the groups that an axes mask names. Built on MPI when
// MUIR_RT_HAVE_MPI is set; otherwise a single-rank fallback in which every
// group has one member and every collective is a local copy. See
// muir-rt/Runtime.h for the contract. The bytes move on MPI, or through a
// transport registered by muirrt_dist_set_transport (a torch.distributed
// group: DistComm.cpp), with the same reductions and bits.
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
// muirrt_set_deterministic(0) leaves all_reduce to MPI_Allreduce (on MPI;
// a transport's stays in group-rank order).
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
// fixed function of the arguments (not of MPI's algorithm): each
// collective's muirrt_sent_* of muir-rt/Collectives.h, which the CUDA
// runtime and the plan report count by too.
// A group of one member makes no MPI call and counts 1 call and 0 bytes.
//
//===----------------------------------------------------------------------===//

#include "muir-rt/Runtime.h"
#include "DistInternal.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <utility>
#include <vector>

// Defined in Host.cpp: sets the message muirrt_last_error() returns on this
// thread.
namespace muirrt_detail {
void setLastError(std::string message);
} // namespace muirrt_detail

using namespace muirrt_dist_detail;

namespace {

constexpr int32_t kMaxAxes = kFoldingShift;

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

} // namespace

namespace [[gnu::visibility("hidden")]] muirrt_dist_detail {

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

// Group, Folding and DistState: DistInternal.h.

DistState state;

#if MUIR_RT_HAVE_MPI
// Scratch buffers reused across calls (collectives run on one thread).
std::vector<float> scratchA, scratchB;
#endif

//===----------------------------------------------------------------------===//
// Watchdog: a collective that never completes (a rank died, or ranks took
// different paths) must not hang the run. A thread checks the collective in
// flight; past the timeout (MUIR_RT_COLLECTIVE_TIMEOUT seconds, default 60)
// it reports which collective waited and exits non-zero, which makes mpirun
// end the other ranks.
//===----------------------------------------------------------------------===//

std::atomic<int64_t> inFlightSince{0}; // steady-clock ns; 0 when idle
std::atomic<const char *> inFlightName{nullptr};

} // namespace muirrt_dist_detail

namespace {

std::once_flag watchdogStarted;

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
    if (state.exchange) {
      // The transport's ranks (muirrt_dist_set_transport); MPI stays
      // untouched.
      worldRank = state.transportRank;
      worldSize = state.transportSize;
    } else {
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
    }
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
    if (!state.exchange) {
      checkMpi(MPI_Comm_dup(MPI_COMM_WORLD, &state.world), "MPI_Comm_dup");
      checkMpi(MPI_Comm_set_errhandler(state.world, MPI_ERRORS_RETURN),
               "MPI_Comm_set_errhandler");
    }
#endif
    state.more.clear();
    state.sizes.assign(sizes, sizes + num_axes);
    state.coords.assign(static_cast<size_t>(num_axes), 0);
    muirrt_grid_coords(num_axes, sizes, worldRank, state.coords.data());
    state.rank = worldRank;
    state.size = worldSize;
    state.chunkFloats = chunkFloats;
    state.checkSizes = checkSizes;
    state.ready = true;
    // A transport's collectives wait as its own do (gloo's timeout): a rank
    // of a torchrun job may be evaluating or saving for minutes.
    if (worldSize > 1 && !state.exchange)
      startWatchdog();
    return 0;
  } catch (const std::bad_alloc &) {
    return fail("muirrt_dist_init: out of memory");
  } catch (const std::exception &e) {
    return fail(std::string("muirrt_dist_init: ") + e.what());
  }
}

extern "C" int muirrt_dist_set_transport(muirrt_exchange_fn exchange,
                                         void *context, int32_t rank,
                                         int32_t size) {
  if (state.ready)
    return fail("muirrt_dist_set_transport: the ranks already run a grid "
                "(call it before muirrt_dist_init, or after "
                "muirrt_dist_finalize)");
  if (!exchange) {
    state.exchange = nullptr;
    state.exchangeContext = nullptr;
    state.transportRank = 0;
    state.transportSize = 1;
    return 0;
  }
#if MUIR_RT_HAVE_MPI
  if (size < 1 || rank < 0 || rank >= size)
    return fail("muirrt_dist_set_transport: rank " + std::to_string(rank) +
                " of " + std::to_string(size) +
                " ranks; expected 0 <= rank < size");
  state.exchange = exchange;
  state.exchangeContext = context;
  state.transportRank = rank;
  state.transportSize = size;
  return 0;
#else
  (void)context, (void)rank, (void)size;
  return fail("muirrt_dist_set_transport: this muir runtime was built "
              "without MPI support, whose collectives a transport carries");
#endif
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
  muirrt_grid_coords(num_axes, sizes, state.rank, f.coords.data());
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
  if (!state.ready || state.size <= 1)
    return;
  if (state.exchange) {
    // Nothing but the exchange itself, which every rank must reach.
    int32_t none = 0;
    commAllreduce(worldGroup(), nullptr, &none, 1, Elem::I32, kMin);
    return;
  }
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
      commAllreduce(worldGroup(), nullptr, &first, 1, Elem::I32, kMin);
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
  state.members.clear();
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

extern "C" void muirrt_abort_run(const char *fn, const char *message) {
  fatal(fn, message);
}

extern "C" void muirrt_set_abort_hook(void (*hook)(void)) { abortHook = hook; }

extern "C" void muirrt_set_deterministic(int32_t on) {
  state.deterministic = on != 0;
}

extern "C" int32_t muirrt_deterministic(void) {
  return state.deterministic ? 1 : 0;
}
