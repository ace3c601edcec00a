//===- DistTest.cpp - muir runtime distributed collectives test -----------===//
//
// A standalone MPI program (no GoogleTest: every rank runs it under mpirun)
// that checks the runtime's grid, groups, collectives and communication
// counters. Usage:
//
//   mpirun -n P muir-dist-unittests S0 [S1 ...]
//
// with the grid's axis sizes as arguments (their product must be P). For
// every axes mask (including the empty one) each collective runs on inputs
// that are a function of the global rank and the index, and the result is
// compared with values the test derives on its own from the grid
// coordinates: the group's members are enumerated from the coordinates, and
// the expected values recomputed from their inputs. Inputs are small
// integers, so sums are exact, except in the ordering test, which expects
// the float sum taken in group-rank order bit for bit.
//
// Each rank prints "dist: rank R ok N checks", or "dist: FAIL ..." lines
// and exits non-zero. Setting MUIR_RT_DIST_CHUNK_FLOATS to a small value
// runs the same checks through the runtime's chunked paths. With
// --transport first, the runtime moves its bytes through a registered
// transport (muirrt_dist_set_transport) instead of its own MPI calls: the
// test's, one MPI_Alltoallv of bytes over the world per exchange, as
// muir.torch's torch.distributed one is one all_to_all_single.
//
//===----------------------------------------------------------------------===//

#include "muir-rt/Runtime.h"

#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace {

std::vector<int64_t> gridSizes;
int64_t gridProduct = 1;
int myRank = 0;
int64_t checks = 0;
int64_t failures = 0;

void failure(const std::string &what) {
  ++failures;
  if (failures <= 20)
    std::printf("dist: FAIL rank %d: %s\n", myRank, what.c_str());
  else if (failures == 21)
    std::printf("dist: FAIL rank %d: (further failures not shown)\n",
                myRank);
  std::fflush(stdout);
}

void expect(bool ok, const std::string &what) {
  ++checks;
  if (!ok)
    failure(what);
}

void expectInt(int64_t got, int64_t want, const std::string &what) {
  expect(got == want, what + ": got " + std::to_string(got) + ", want " +
                          std::to_string(want));
}

std::string floatText(float v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.9g", static_cast<double>(v));
  return buf;
}

bool sameFloat(float a, float b) {
  if (std::isnan(a) || std::isnan(b))
    return std::isnan(a) && std::isnan(b);
  return std::memcmp(&a, &b, sizeof(float)) == 0;
}

void expectFloats(const float *got, const std::vector<float> &want,
                  const std::string &what) {
  for (size_t i = 0; i < want.size(); ++i) {
    ++checks;
    if (!sameFloat(got[i], want[i]))
      failure(what + " [" + std::to_string(i) + "]: got " +
              floatText(got[i]) + ", want " + floatText(want[i]));
  }
}

// Coordinates of global rank q: row-major over the axes, last fastest.
std::vector<int64_t> coordsOf(int64_t q) {
  std::vector<int64_t> c(gridSizes.size());
  for (size_t i = gridSizes.size(); i-- > 0;) {
    c[i] = q % gridSizes[i];
    q /= gridSizes[i];
  }
  return c;
}

bool inMask(int64_t mask, size_t axis) { return (mask >> axis) & 1; }

// Row-major index of q's coordinates over the mask's axes.
int64_t groupIndexOf(int64_t q, int64_t mask) {
  std::vector<int64_t> c = coordsOf(q);
  int64_t idx = 0;
  for (size_t i = 0; i < gridSizes.size(); ++i)
    if (inMask(mask, i))
      idx = idx * gridSizes[i] + c[i];
  return idx;
}

// Global ranks of the group of rank `me` for `mask`, in group-rank order.
std::vector<int64_t> groupOf(int64_t me, int64_t mask) {
  std::vector<int64_t> mine = coordsOf(me);
  std::vector<std::pair<int64_t, int64_t>> byIndex;
  for (int64_t q = 0; q < gridProduct; ++q) {
    std::vector<int64_t> c = coordsOf(q);
    bool same = true;
    for (size_t i = 0; i < gridSizes.size(); ++i)
      if (!inMask(mask, i) && c[i] != mine[i])
        same = false;
    if (same)
      byIndex.emplace_back(groupIndexOf(q, mask), q);
  }
  std::sort(byIndex.begin(), byIndex.end());
  std::vector<int64_t> members;
  for (size_t j = 0; j < byIndex.size(); ++j) {
    if (byIndex[j].first != static_cast<int64_t>(j)) {
      failure("test: group indices are not 0..g-1");
      break;
    }
    members.push_back(byIndex[j].second);
  }
  return members;
}

// Input element i of global rank q; `salt` varies the data between calls.
// Small integers in [-8, 8], so sums over a group are exact in float.
float inputOf(int64_t q, int64_t i, int64_t salt) {
  return static_cast<float>((q * 7 + i * 3 + salt * 5) % 17 - 8);
}

// Non-integer inputs for the summation-order test.
float fractionOf(int64_t q, int64_t i) {
  return 1.0f / static_cast<float>(3 + 2 * q + i) +
         static_cast<float>(i % 5) * 1e-3f * static_cast<float>(q + 1);
}

std::vector<float> inputVector(int64_t q, int64_t n, int64_t salt) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = inputOf(q, i, salt);
  return v;
}

const char *opName(int32_t op) {
  static const char *names[] = {"sum", "max", "min", "avg"};
  return names[op];
}

float reduceExpected(int32_t op, const std::vector<float> &values) {
  float acc = values[0];
  for (size_t j = 1; j < values.size(); ++j) {
    float v = values[j];
    if (op == 0 || op == 3)
      acc = acc + v;
    else if (std::isnan(acc) || std::isnan(v))
      acc = std::numeric_limits<float>::quiet_NaN();
    else if (op == 1)
      acc = std::max(acc, v);
    else
      acc = std::min(acc, v);
  }
  if (op == 3)
    acc = acc / static_cast<float>(values.size());
  return acc;
}

struct Expected {
  int64_t bytes = 0;
  int64_t calls = 0;
  void add(int64_t b) {
    bytes += b;
    ++calls;
  }
};

void testMask(int64_t mask) {
  const int64_t me = myRank;
  std::vector<int64_t> members = groupOf(me, mask);
  const int64_t g = static_cast<int64_t>(members.size());
  const int64_t gr = groupIndexOf(me, mask);
  const std::string m = "mask " + std::to_string(mask);

  expectInt(muirrt_dist_group_size(mask), g, m + " group size");
  expectInt(muirrt_dist_group_rank(mask), gr, m + " group rank");

  muirrt_comm_reset();
  Expected ex;

  // all_reduce: every op, out of place; NaN at the last index from the
  // last member for max/min.
  {
    const int64_t count = 37;
    for (int32_t op = 0; op < 4; ++op) {
      std::vector<float> in = inputVector(me, count, op);
      bool nan = op == 1 || op == 2;
      if (nan && gr == g - 1)
        in.back() = std::numeric_limits<float>::quiet_NaN();
      std::vector<float> out(static_cast<size_t>(count), -99.0f);
      muirrt_all_reduce(mask, op, in.data(), out.data(), count);
      ex.add(count * 4 * (g - 1));
      std::vector<float> want(static_cast<size_t>(count));
      for (int64_t i = 0; i < count; ++i) {
        std::vector<float> values;
        for (int64_t j = 0; j < g; ++j)
          values.push_back(nan && j == g - 1 && i == count - 1
                               ? std::numeric_limits<float>::quiet_NaN()
                               : inputOf(members[static_cast<size_t>(j)], i,
                                         op));
        want[static_cast<size_t>(i)] = reduceExpected(op, values);
      }
      expectFloats(out.data(), want, m + " all_reduce " + opName(op));
    }
  }

  // all_reduce in place, and the float sum of non-integers in group-rank
  // order (bit for bit).
  {
    const int64_t count = 29;
    std::vector<float> buf = inputVector(me, count, 7);
    muirrt_all_reduce(mask, 0, buf.data(), buf.data(), count);
    ex.add(count * 4 * (g - 1));
    std::vector<float> want(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) {
      float acc = 0;
      for (int64_t j = 0; j < g; ++j)
        acc += inputOf(members[static_cast<size_t>(j)], i, 7);
      want[static_cast<size_t>(i)] = acc;
    }
    expectFloats(buf.data(), want, m + " all_reduce in place");

    std::vector<float> in(static_cast<size_t>(count)), out(in.size());
    for (int64_t i = 0; i < count; ++i)
      in[static_cast<size_t>(i)] = fractionOf(me, i);
    muirrt_all_reduce(mask, 0, in.data(), out.data(), count);
    ex.add(count * 4 * (g - 1));
    for (int64_t i = 0; i < count; ++i) {
      float acc = fractionOf(members[0], i);
      for (int64_t j = 1; j < g; ++j)
        acc = acc + fractionOf(members[static_cast<size_t>(j)], i);
      want[static_cast<size_t>(i)] = acc;
    }
    expectFloats(out.data(), want, m + " all_reduce order");

    muirrt_all_reduce(mask, 0, nullptr, nullptr, 0); // empty
    ex.add(0);
  }

  // all_reduce of larger counts: from 256 floats a member on, groups of 3
  // or more send slices and gather the reduced ones (a ring's bytes), with
  // the same bits as the gather-then-sum order; just below, whole pieces.
  // Every op, in place and not; fractions for the sum's order; NaN at the
  // last index from the last member for max/min.
  for (int64_t count : {256 * g + 7, 256 * g - 1}) {
    bool scatters = g >= 3 && count >= 256 * g;
    int64_t lo = count * gr / g, hi = count * (gr + 1) / g;
    int64_t bytes = scatters ? 4 * (count - (hi - lo)) + (hi - lo) * 4 * (g - 1)
                             : count * 4 * (g - 1);
    for (int32_t op = 0; op < 4; ++op)
      for (int inPlace = 0; inPlace < 2; ++inPlace) {
        std::vector<float> in(static_cast<size_t>(count));
        for (int64_t i = 0; i < count; ++i)
          in[static_cast<size_t>(i)] = fractionOf(me, i + op);
        bool nan = op == 1 || op == 2;
        if (nan && gr == g - 1)
          in.back() = std::numeric_limits<float>::quiet_NaN();
        std::vector<float> out(static_cast<size_t>(count), -99.0f);
        float *dst = inPlace ? in.data() : out.data();
        muirrt_all_reduce(mask, op, in.data(), dst, count);
        ex.add(bytes);
        std::vector<float> want(static_cast<size_t>(count));
        for (int64_t i = 0; i < count; ++i) {
          std::vector<float> values;
          for (int64_t j = 0; j < g; ++j)
            values.push_back(nan && j == g - 1 && i == count - 1
                                 ? std::numeric_limits<float>::quiet_NaN()
                                 : fractionOf(members[static_cast<size_t>(j)],
                                              i + op));
          want[static_cast<size_t>(i)] = reduceExpected(op, values);
        }
        expectFloats(dst, want,
                     m + " all_reduce " + std::to_string(count) + " " +
                         opName(op) + (inPlace ? " in place" : ""));
      }
  }

  // all_gather: outer = 1 (dimension 0) and outer > 1.
  for (int64_t outer : {int64_t{1}, int64_t{3}}) {
    const int64_t inner = 5;
    std::vector<float> in = inputVector(me, outer * inner, 11 + outer);
    std::vector<float> out(static_cast<size_t>(outer * inner * g), -99.0f);
    muirrt_all_gather(mask, in.data(), out.data(), outer, inner);
    ex.add(outer * inner * 4 * (g - 1));
    std::vector<float> want(out.size());
    for (int64_t r = 0; r < outer; ++r)
      for (int64_t j = 0; j < g; ++j)
        for (int64_t c = 0; c < inner; ++c)
          want[static_cast<size_t>(r * inner * g + j * inner + c)] =
              inputOf(members[static_cast<size_t>(j)], r * inner + c,
                      11 + outer);
    expectFloats(out.data(), want,
                 m + " all_gather outer " + std::to_string(outer));
  }

  // all_gatherv: uneven counts, with a zero (group rank 0) and without.
  for (int pattern = 0; pattern < 2; ++pattern) {
    std::vector<int64_t> counts(static_cast<size_t>(g));
    int64_t total = 0;
    for (int64_t j = 0; j < g; ++j) {
      counts[static_cast<size_t>(j)] = pattern == 0 ? j % 3 : 3 - j % 3;
      total += counts[static_cast<size_t>(j)];
    }
    int64_t mine = counts[static_cast<size_t>(gr)];
    // The input may be longer than this rank's count; only the first
    // counts[me] floats are sent.
    std::vector<float> in = inputVector(me, mine + 2, 23 + pattern);
    std::vector<float> out(static_cast<size_t>(total) + 1, -99.0f);
    muirrt_all_gatherv(mask, in.data(), out.data(), counts.data());
    ex.add(mine * 4 * (g - 1));
    std::vector<float> want;
    for (int64_t j = 0; j < g; ++j)
      for (int64_t i = 0; i < counts[static_cast<size_t>(j)]; ++i)
        want.push_back(
            inputOf(members[static_cast<size_t>(j)], i, 23 + pattern));
    want.push_back(-99.0f); // nothing written past the end
    expectFloats(out.data(), want,
                 m + " all_gatherv pattern " + std::to_string(pattern));
  }

  // reduce_scatter: every op, outer = 1 and outer > 1.
  for (int64_t outer : {int64_t{1}, int64_t{3}}) {
    const int64_t inner = 4;
    for (int32_t op = 0; op < 4; ++op) {
      int64_t salt = 31 + outer * 4 + op;
      std::vector<float> in = inputVector(me, outer * inner * g, salt);
      std::vector<float> out(static_cast<size_t>(outer * inner), -99.0f);
      muirrt_reduce_scatter(mask, op, in.data(), out.data(), outer, inner);
      ex.add(outer * inner * 4 * (g - 1));
      std::vector<float> want(out.size());
      for (int64_t r = 0; r < outer; ++r)
        for (int64_t c = 0; c < inner; ++c) {
          std::vector<float> values;
          for (int64_t j = 0; j < g; ++j)
            values.push_back(inputOf(members[static_cast<size_t>(j)],
                                     r * inner * g + gr * inner + c, salt));
          want[static_cast<size_t>(r * inner + c)] =
              reduceExpected(op, values);
        }
      expectFloats(out.data(), want,
                   m + " reduce_scatter " + opName(op) + " outer " +
                       std::to_string(outer));
    }
  }

  // all_to_all: out of place and in place.
  for (int inPlace = 0; inPlace < 2; ++inPlace) {
    const int64_t count = 6;
    int64_t salt = 41 + inPlace;
    std::vector<float> in = inputVector(me, count * g, salt);
    std::vector<float> out(in.size(), -99.0f);
    float *dst = inPlace ? in.data() : out.data();
    muirrt_all_to_all(mask, in.data(), dst, count);
    ex.add(count * 4 * (g - 1));
    std::vector<float> want(out.size());
    for (int64_t i = 0; i < g; ++i)
      for (int64_t k = 0; k < count; ++k)
        want[static_cast<size_t>(i * count + k)] =
            inputOf(members[static_cast<size_t>(i)], gr * count + k, salt);
    expectFloats(dst, want,
                 m + " all_to_all" + (inPlace ? " in place" : ""));
  }

  // all_to_allv: ragged rows of 3 floats; group rank i sends (i + j) % 3
  // rows to group rank j (zero rows included), with room to spare in out.
  {
    const int64_t row = 3, salt = 45;
    auto rowsFrom = [&](int64_t i, int64_t j) { return (i + j) % 3; };
    std::vector<int64_t> send(static_cast<size_t>(g)),
        recv(static_cast<size_t>(g), -1);
    int64_t sent = 0, toOthers = 0, received = 0;
    for (int64_t j = 0; j < g; ++j) {
      send[static_cast<size_t>(j)] = rowsFrom(gr, j);
      sent += rowsFrom(gr, j);
      if (j != gr)
        toOthers += rowsFrom(gr, j);
      received += rowsFrom(j, gr);
    }
    std::vector<float> in = inputVector(me, sent * row, salt);
    std::vector<float> out(static_cast<size_t>((received + 2) * row), -99.0f);
    muirrt_all_to_allv(mask, in.data(), sent, send.data(), out.data(),
                       received + 2, recv.data(), row);
    ex.add(toOthers * row * 4 + 8 * (g - 1));
    std::vector<float> want(out.size(), -99.0f);
    int64_t at = 0;
    for (int64_t i = 0; i < g; ++i) {
      expectInt(recv[static_cast<size_t>(i)], rowsFrom(i, gr),
                m + " all_to_allv recv count");
      // Sender i's rows for us start after its rows for group ranks < gr.
      int64_t offset = 0;
      for (int64_t j = 0; j < gr; ++j)
        offset += rowsFrom(i, j);
      for (int64_t k = 0; k < rowsFrom(i, gr) * row; ++k)
        want[static_cast<size_t>(at++)] =
            inputOf(members[static_cast<size_t>(i)], offset * row + k, salt);
    }
    expectFloats(out.data(), want, m + " all_to_allv");
  }

  // broadcast: from the last group rank (non-zero when g > 1), then from 0.
  for (int64_t root : {g - 1, int64_t{0}}) {
    const int64_t count = 11;
    int64_t salt = 51 + root;
    std::vector<float> buf = inputVector(me, count, salt);
    muirrt_broadcast(mask, root, buf.data(), count);
    ex.add(gr == root ? count * 4 * (g - 1) : 0);
    std::vector<float> want =
        inputVector(members[static_cast<size_t>(root)], count, salt);
    expectFloats(buf.data(), want,
                 m + " broadcast root " + std::to_string(root));
  }

  // Counters: this mask's, and nothing on any other.
  expectInt(muirrt_comm_bytes(mask), ex.bytes, m + " comm bytes");
  expectInt(muirrt_comm_calls(mask), ex.calls, m + " comm calls");
  int64_t numMasks = int64_t{1} << gridSizes.size();
  for (int64_t other = 0; other < numMasks; ++other)
    if (other != mask) {
      expectInt(muirrt_comm_calls(other), 0,
                m + " comm calls on mask " + std::to_string(other));
      expectInt(muirrt_comm_bytes(other), 0,
                m + " comm bytes on mask " + std::to_string(other));
    }
}

} // namespace

// The test's transport: the runtime's exchange as one MPI_Alltoallv of
// bytes over the world, counted.
int64_t exchanges = 0;

int32_t exchangeOverMpi(void *context, const void *send,
                        const int64_t *sendBytes, void *recv,
                        const int64_t *recvBytes) {
  expect(context == &exchanges, "the transport's context comes back");
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<int> sc(size), sd(size), rc(size), rd(size);
  int64_t so = 0, ro = 0;
  for (int j = 0; j < size; ++j) {
    sc[j] = static_cast<int>(sendBytes[j]);
    sd[j] = static_cast<int>(so);
    rc[j] = static_cast<int>(recvBytes[j]);
    rd[j] = static_cast<int>(ro);
    so += sendBytes[j];
    ro += recvBytes[j];
  }
  expect(static_cast<const char *>(send) + so <= static_cast<char *>(recv) ||
             static_cast<char *>(recv) + ro <=
                 static_cast<const char *>(send) ||
             so == 0 || ro == 0,
         "the transport's send and receive buffers do not overlap");
  ++exchanges;
  return MPI_Alltoallv(send, sc.data(), sd.data(), MPI_BYTE, recv, rc.data(),
                       rd.data(), MPI_BYTE, MPI_COMM_WORLD) == MPI_SUCCESS
             ? 0
             : 1;
}

int main(int argc, char **argv) {
  bool transport = argc > 1 && std::string(argv[1]) == "--transport";
  if (transport) {
    --argc;
    ++argv;
  }
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s [--transport] SIZE0 [SIZE1 ...]\n",
                 argv[0]);
    return 2;
  }
  if (transport) {
    // The job is the transport's: MPI started by the test, which the
    // runtime must leave alone.
    MPI_Init(nullptr, nullptr);
    int r = 0, w = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &w);
    expect(muirrt_dist_set_transport(exchangeOverMpi, &exchanges, w, w) != 0,
           "a transport rank outside [0, size) is refused");
    expect(std::string(muirrt_last_error()).find("expected 0 <= rank") !=
               std::string::npos,
           "transport message: " + std::string(muirrt_last_error()));
    expectInt(muirrt_dist_set_transport(exchangeOverMpi, &exchanges, r, w), 0,
              "muirrt_dist_set_transport");
  }
  for (int i = 1; i < argc; ++i) {
    char *end = nullptr;
    long long v = std::strtoll(argv[i], &end, 10);
    if (!*argv[i] || *end || v < 1) {
      std::fprintf(stderr, "dist: FAIL: bad axis size '%s'\n", argv[i]);
      return 2;
    }
    gridSizes.push_back(v);
    gridProduct *= v;
  }
  const int32_t numAxes = static_cast<int32_t>(gridSizes.size());

  // Before init: one rank.
  expectInt(muirrt_dist_rank(), 0, "rank before init");
  expectInt(muirrt_dist_size(), 1, "size before init");
  expectInt(muirrt_dist_group_size(1), 1, "group size before init");

  // A grid that does not match the run fails with a clear message (this
  // call already initialises MPI).
  {
    int64_t wrong = gridProduct + 1;
    expect(muirrt_dist_init(1, &wrong) != 0, "init with a wrong grid fails");
    std::string want = "grid has " + std::to_string(wrong) +
                       " devices but the run has " +
                       std::to_string(gridProduct) + " ranks";
    std::string got = muirrt_last_error();
    expect(got.find(want) != std::string::npos,
           "wrong-grid message: got '" + got + "', want '" + want + "'");
    int64_t zero[2] = {gridProduct, 0};
    expect(muirrt_dist_init(2, zero) != 0, "init with a zero size fails");
  }

  if (muirrt_dist_init(numAxes, gridSizes.data()) != 0) {
    std::printf("dist: FAIL: muirrt_dist_init: %s\n", muirrt_last_error());
    return 1;
  }
  int worldRank = -1, worldSize = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &worldRank);
  MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
  myRank = worldRank;
  expectInt(muirrt_dist_rank(), worldRank, "rank");
  expectInt(muirrt_dist_size(), worldSize, "size");
  expectInt(worldSize, gridProduct, "world size");
  std::vector<int64_t> coords = coordsOf(worldRank);
  for (int32_t i = 0; i < numAxes; ++i)
    expectInt(muirrt_dist_coord(i), coords[static_cast<size_t>(i)],
              "coord " + std::to_string(i));
  expectInt(muirrt_dist_coord(numAxes), -1, "coord out of range");
  expectInt(muirrt_dist_group_size(int64_t{1} << numAxes), -1,
            "group size of a mask outside the grid");
  expect(std::string(muirrt_last_error()).find("names axis") !=
             std::string::npos,
         "mask error message: " + std::string(muirrt_last_error()));
  expectInt(muirrt_dist_group_size(0), 1, "group size of the empty mask");

  for (int64_t mask = 0; mask < (int64_t{1} << numAxes); ++mask) {
    testMask(mask);
    muirrt_dist_barrier();
  }

  // A second folding of the same ranks (as MoE's edp x ep): groups follow
  // its coordinates, row-major, whatever the grid's axes are.
  {
    std::vector<int64_t> fsizes = {gridProduct};
    if (gridProduct % 2 == 0 && gridProduct > 2)
      fsizes = {2, gridProduct / 2};
    int64_t wrong = gridProduct + 1;
    expectInt(muirrt_dist_add_folding(1, &wrong), -1,
              "a folding of the wrong size");
    int32_t f = muirrt_dist_add_folding(static_cast<int32_t>(fsizes.size()),
                                        fsizes.data());
    expectInt(f, 1, "folding index");
    auto fcoords = [&](int64_t q) {
      std::vector<int64_t> c(fsizes.size());
      for (size_t i = fsizes.size(); i-- > 0;) {
        c[i] = q % fsizes[i];
        q /= fsizes[i];
      }
      return c;
    };
    std::vector<int64_t> mine = fcoords(worldRank);
    for (int64_t bits = 1; bits < (int64_t{1} << fsizes.size()); ++bits) {
      int64_t mask = (int64_t{f} << 48) | bits;
      std::vector<int64_t> members;
      for (int64_t q = 0; q < gridProduct; ++q) {
        std::vector<int64_t> c = fcoords(q);
        bool same = true;
        for (size_t i = 0; i < fsizes.size(); ++i)
          if (!((bits >> i) & 1) && c[i] != mine[i])
            same = false;
        if (same)
          members.push_back(q);
      }
      std::string m = "folding mask " + std::to_string(bits);
      expectInt(muirrt_dist_group_size(mask),
                static_cast<int64_t>(members.size()), m + " group size");
      int64_t index = std::find(members.begin(), members.end(), worldRank) -
                      members.begin();
      expectInt(muirrt_dist_group_rank(mask), index, m + " group rank");
      float v = static_cast<float>(worldRank + 1), sum = 0;
      muirrt_all_reduce(mask, 0, &v, &sum, 1);
      float want = 0;
      for (int64_t q : members)
        want += static_cast<float>(q + 1);
      expect(sum == want, m + " all_reduce: got " + std::to_string(sum) +
                              ", want " + std::to_string(want));
      muirrt_dist_barrier();
    }
    expectInt(muirrt_dist_group_size((int64_t{2} << 48) | 1), -1,
              "a mask naming an unregistered folding");
  }

  muirrt_dist_finalize();
  expectInt(muirrt_dist_size(), 1, "size after finalize");
  if (transport) {
    if (gridProduct > 1)
      expect(exchanges > 0, "the collectives went through the transport");
    int finalized = 1;
    MPI_Finalized(&finalized);
    expectInt(finalized, 0, "the runtime left the test's MPI running");
    expectInt(muirrt_dist_set_transport(nullptr, nullptr, 0, 1), 0,
              "removing the transport");
    MPI_Finalize();
  }

  if (failures) {
    std::printf("dist: FAIL rank %d: %lld of %lld checks failed\n", myRank,
                static_cast<long long>(failures),
                static_cast<long long>(checks));
    return 1;
  }
  std::printf("dist: rank %d ok %lld checks\n", myRank,
              static_cast<long long>(checks));
  return 0;
}
