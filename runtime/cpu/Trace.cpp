//===- Trace.cpp - fingerprint records of executed ops --------------------===//
//
// muir_exec.trace calls muirrt_trace_buffer with each buffer an op reads
// (before it runs) and writes (after). Each call becomes a record: the
// step, this step's execution number of the op (seq), the op's id, the
// operand, read or written, its size and a 64-bit FNV-1a hash of its
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

uint64_t fnv1a(const unsigned char *p, int64_t n) {
  uint64_t h = 1469598103934665603ull;
  for (int64_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
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
  r.hash = fnv1a(static_cast<const unsigned char *>(data), bytes);
  trace.records.push_back(r);
}

extern "C" int64_t muirrt_trace_count(void) {
  return static_cast<int64_t>(trace.records.size());
}

extern "C" const MuirRtTraceRecord *muirrt_trace_records(void) {
  return trace.records.data();
}
