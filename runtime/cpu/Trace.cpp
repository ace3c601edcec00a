//===- Trace.cpp - fingerprint records of executed ops --------------------===//
//
// muir_exec.trace calls muirrt_trace_buffer with each buffer an op reads
// (before it runs) and writes (after). Each call becomes a record: the
// step, this step's execution number of the op (seq), the op's id, the
// operand, read or written, its size and the XXH64 hash (seed 0) of its
// bytes. MUIR_TEST_PERTURB="step:rank:seq" (test only) flips the lowest bit
// of the first byte of that execution's first written buffer before it is
// hashed, so later ops see it.
//
//===----------------------------------------------------------------------===//

#include "muir-rt/Runtime.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

struct TraceState {
  bool on = false;
  int64_t step = 0;
  int64_t seq = -1;
  int64_t lastOp = -1;
  bool lastWasOutput = false;
  bool perturbed = false;
  int64_t perturbStep = -1, perturbRank = -1, perturbSeq = -1;
  std::vector<MuirRtTraceRecord> records;
};

TraceState trace;

// XXH64 (seed 0), from its specification: four lanes over 32-byte stripes,
// then the tail and an avalanche. Many gigabytes a second, where FNV-1a's
// one multiply per byte made a traced step of tiny-moe 7 times slower.
constexpr uint64_t kP1 = 0x9E3779B185EBCA87ull, kP2 = 0xC2B2AE3D27D4EB4Full,
                   kP3 = 0x165667B19E3779F9ull, kP4 = 0x85EBCA77C2B2AE63ull,
                   kP5 = 0x27D4EB2F165667C5ull;

inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
inline uint64_t read64(const unsigned char *p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline uint32_t read32(const unsigned char *p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline uint64_t round64(uint64_t acc, uint64_t input) {
  return rotl(acc + input * kP2, 31) * kP1;
}
inline uint64_t merge64(uint64_t h, uint64_t lane) {
  return (h ^ round64(0, lane)) * kP1 + kP4;
}

uint64_t xxh64(const unsigned char *p, int64_t n) {
  const unsigned char *end = p + n;
  uint64_t h;
  if (n >= 32) {
    uint64_t v1 = kP1 + kP2, v2 = kP2, v3 = 0, v4 = 0 - kP1;
    for (; end - p >= 32; p += 32) {
      v1 = round64(v1, read64(p));
      v2 = round64(v2, read64(p + 8));
      v3 = round64(v3, read64(p + 16));
      v4 = round64(v4, read64(p + 24));
    }
    h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
    h = merge64(merge64(merge64(merge64(h, v1), v2), v3), v4);
  } else {
    h = kP5;
  }
  h += static_cast<uint64_t>(n);
  for (; end - p >= 8; p += 8)
    h = rotl(h ^ round64(0, read64(p)), 27) * kP1 + kP4;
  if (end - p >= 4) {
    h = rotl(h ^ (static_cast<uint64_t>(read32(p)) * kP1), 23) * kP2 + kP3;
    p += 4;
  }
  for (; p < end; ++p)
    h = rotl(h ^ (*p * kP5), 11) * kP1;
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  h ^= h >> 32;
  return h;
}

} // namespace

extern "C" void muirrt_trace_enable(int32_t on) {
  trace = TraceState();
  trace.on = on != 0;
  if (const char *spec = std::getenv("MUIR_TEST_PERTURB")) {
    long long s = -1, r = -1, q = -1;
    if (std::sscanf(spec, "%lld:%lld:%lld", &s, &r, &q) == 3) {
      trace.perturbStep = s;
      trace.perturbRank = r;
      trace.perturbSeq = q;
    }
  }
}

extern "C" void muirrt_trace_set_step(int64_t step) {
  trace.step = step;
  trace.seq = -1;
  trace.lastOp = -1;
  trace.lastWasOutput = false;
}

extern "C" void muirrt_trace_buffer(int64_t op_id, int64_t index,
                                    int32_t output, void *data,
                                    int64_t bytes) {
  if (!trace.on)
    return;
  // A new execution: another op, or this op's inputs again after outputs
  // (a loop).
  if (op_id != trace.lastOp || (!output && trace.lastWasOutput))
    ++trace.seq;
  trace.lastOp = op_id;
  trace.lastWasOutput = output != 0;
  if (output && !trace.perturbed && trace.step == trace.perturbStep &&
      trace.seq == trace.perturbSeq &&
      muirrt_dist_rank() == trace.perturbRank && bytes > 0) {
    static_cast<unsigned char *>(data)[0] ^= 1;
    trace.perturbed = true;
  }
  MuirRtTraceRecord r;
  r.step = trace.step;
  r.seq = trace.seq;
  r.op_id = op_id;
  r.index = index;
  r.output = output;
  r.bytes = bytes;
  r.hash = xxh64(static_cast<const unsigned char *>(data), bytes);
  trace.records.push_back(r);
}

extern "C" int64_t muirrt_trace_count(void) {
  return static_cast<int64_t>(trace.records.size());
}

extern "C" const MuirRtTraceRecord *muirrt_trace_records(void) {
  return trace.records.data();
}
