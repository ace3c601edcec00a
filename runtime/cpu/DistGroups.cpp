//===- DistGroups.cpp - muir runtime groups, communicators, counters -----===//
//
// The groups of the distributed runtime (see Dist.cpp): which ranks an axes
// mask names, their communicators (created on a group's first collective
// and cached per mask), the check that a group's members agree on a
// collective's sizes, and the per-mask counters of calls and bytes sent.
//
//===----------------------------------------------------------------------===//

#include "muir-rt/Runtime.h"
#include "DistInternal.h"

#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <vector>

using namespace muirrt_dist_detail;

namespace {

struct Counter {
  int64_t bytes = 0;
  int64_t calls = 0;
};

std::mutex countersMutex;
std::map<int64_t, Counter> counters;

std::string maskString(int64_t mask) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%llx",
                static_cast<unsigned long long>(mask));
  return buf;
}

int64_t foldingOf(int64_t mask) { return muirrt_mask_folding(mask); }
int64_t axisBits(int64_t mask) { return muirrt_mask_axes(mask); }
const std::vector<int64_t> &sizesOf(int64_t folding) {
  return folding == 0 ? state.sizes
                      : state.more[static_cast<size_t>(folding - 1)].sizes;
}
const std::vector<int64_t> &coordsOf(int64_t folding) {
  return folding == 0 ? state.coords
                      : state.more[static_cast<size_t>(folding - 1)].coords;
}

// Where the rank at `coords` of the folding of `mask` stands in the group
// of `mask` (muir-rt/Collectives.h).
muirrt_group_place placeIn(int64_t mask, const std::vector<int64_t> &coords) {
  const std::vector<int64_t> &sizes = sizesOf(foldingOf(mask));
  return muirrt_group_place_of(static_cast<int32_t>(sizes.size()),
                               sizes.data(), coords.data(), axisBits(mask));
}

#if MUIR_RT_HAVE_MPI
// The world ranks of this rank's group for `mask`, in group-rank order.
std::vector<int> groupMembers(int64_t mask) {
  std::vector<int> members;
  const std::vector<int64_t> &sizes = sizesOf(foldingOf(mask));
  int64_t color = placeIn(mask, coordsOf(foldingOf(mask))).color;
  std::vector<int64_t> coords(sizes.size());
  for (int32_t r = 0; r < state.size; ++r) {
    muirrt_grid_coords(static_cast<int32_t>(sizes.size()), sizes.data(), r,
                       coords.data());
    // Increasing world rank with the non-mask coordinates fixed is
    // row-major order over the mask's axes, i.e. group-rank order.
    if (placeIn(mask, coords).color == color)
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
#endif

} // namespace

namespace [[gnu::visibility("hidden")]] muirrt_dist_detail {

void countComm(int64_t mask, int64_t bytes) {
  std::lock_guard<std::mutex> lock(countersMutex);
  Counter &c = counters[mask];
  c.bytes += bytes;
  ++c.calls;
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

// Size and this rank's index in the group of `mask` (valid mask).
Group groupShape(int64_t mask) {
  Group g;
  if (!state.ready)
    return g;
  muirrt_group_place p = placeIn(mask, coordsOf(foldingOf(mask)));
  g.size = p.size;
  g.rank = p.rank;
  return g;
}

#if MUIR_RT_HAVE_MPI
void freeComms() {
  state.members.clear();
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
  if (g.size > 1 && state.exchange) {
    // A transport's group is its members (DistComm.cpp).
    auto it = state.members.find(mask);
    if (it == state.members.end()) {
      std::vector<int> members = groupMembers(mask);
      if (static_cast<int64_t>(members.size()) != g.size)
        fatal(fn, "internal error: group of mask " + maskString(mask) +
                      " has " + std::to_string(members.size()) +
                      " members, expected " + std::to_string(g.size));
      it = state.members.emplace(mask, std::move(members)).first;
    }
    g.members = &it->second;
  } else if (g.size > 1) {
    g.comm = groupComm(mask, g);
  }
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
           int64_t a, int64_t b) {
#if MUIR_RT_HAVE_MPI
  if (!state.checkSizes || g.size == 1)
    return;
  int64_t mine[4] = {a, -a, b, -b}, range[4] = {0, 0, 0, 0};
  commAllreduce(g, mine, range, 4, Elem::I64, kMax);
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

} // namespace muirrt_dist_detail

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

