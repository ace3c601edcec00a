//===- muir-trace-diff.cpp - the first op where two runs diverge ----------===//
//
// Reads two fingerprint traces (muir-run --trace-fingerprints: FILE, or
// FILE.rank0, FILE.rank1, ... for several ranks) and prints the first op
// whose inputs or outputs differ between the runs (type, byte count or
// hash), with the ops around it on its rank; or says the runs are
// identical. "First" is in (step, execution number, rank) order: every
// rank runs the same program, so an op's execution number is comparable
// across ranks, and a collective that receives another rank's divergent
// data comes after the op that made it. An op whose inputs already differ
// is named as such (the runs started from different state, or an untraced
// op changed a buffer); one whose inputs agree but outputs do not made the
// difference. A trace must start with muir-run's header, hold at least one
// record, and each record's byte count must be its buffer type's size.
// Exit status: 0 identical, 1 divergent, 2 an error (bad arguments too).
//
//===----------------------------------------------------------------------===//
#include "muir/Support/Files.h"
#include "muir/Support/VersionPrinter.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>

using namespace llvm;

static cl::opt<std::string> traceA(cl::Positional, cl::Required,
                                   cl::desc("<trace A>"));
static cl::opt<std::string> traceB(cl::Positional, cl::Required,
                                   cl::desc("<trace B>"));
static cl::opt<unsigned> context("context",
                                 cl::desc("ops shown before and after"),
                                 cl::init(3));

namespace {

/// One buffer of an op execution: its type, byte count and hash.
struct Buffer {
  std::string type;
  int64_t bytes = 0;
  std::string hash;
  bool operator==(const Buffer &o) const {
    return type == o.type && bytes == o.bytes && hash == o.hash;
  }
  bool operator!=(const Buffer &o) const { return !(*this == o); }
};

struct Exec {
  int64_t opId = -1;
  std::string name, loc;
  std::map<int64_t, Buffer> in, out; // by operand index
};

constexpr StringLiteral kHeader = "# muir fingerprint trace:";

/// The bytes of a static memref type as the trace writes it
/// ("memref<4x8xf32,strided<[8,1]>>"); nothing when it cannot tell.
std::optional<int64_t> typeBytes(StringRef type) {
  if (!type.consume_front("memref<"))
    return std::nullopt;
  int64_t elements = 1;
  while (true) {
    auto [dim, rest] = type.split('x');
    int64_t n;
    if (rest.empty() || dim.getAsInteger(10, n))
      break;
    if (n < 0 || (n && elements > INT64_MAX / n))
      return std::nullopt;
    elements *= n;
    type = rest;
  }
  StringRef element = type.take_until([](char c) { return c == ',' || c == '>'; });
  int64_t size = StringSwitch<int64_t>(element)
                     .Cases({"f32", "i32"}, 4)
                     .Cases({"f64", "i64", "index"}, 8)
                     .Cases({"f16", "bf16", "i16"}, 2)
                     .Cases({"i8", "i1"}, 1)
                     .Default(0);
  if (!size || elements > INT64_MAX / size)
    return std::nullopt;
  return elements * size;
}

using Key = std::tuple<int64_t, int64_t, int64_t>; // step, seq, rank
using Trace = std::map<Key, Exec>;

int error(const Twine &msg) {
  WithColor::error(errs(), "muir-trace-diff") << msg << "\n";
  return 2;
}

/// Reads one file into `t`; an empty string on success, else why not.
/// Reads one rank's file (`rank`: the rank its records must be of).
std::string readFile(StringRef path, int64_t rank, Trace &t) {
  std::string why;
  auto buf = mlir::muir::readBoundedFile(path, why);
  if (!buf)
    return why;
  SmallVector<StringRef> lines;
  buf->getBuffer().split(lines, '\n', -1, /*KeepEmpty=*/false);
  if (lines.empty() || !lines.front().starts_with(kHeader))
    return path.str() + ": not a fingerprint trace (no '" + kHeader.str() +
           "' header line; write one with muir-run --trace-fingerprints)";
  size_t records = 0;
  for (auto [n, line] : llvm::enumerate(lines)) {
    if (line.starts_with("#"))
      continue;
    // step rank seq op_id name loc in|out operand type bytes hash, where
    // only the location may hold spaces (a path): the fields around it are
    // counted from both ends.
    SmallVector<StringRef> f;
    line.split(f, ' ', -1, /*KeepEmpty=*/false);
    if (f.size() > 11) {
      StringRef first = f[5], last = f[f.size() - 6];
      f[5] = StringRef(first.data(), last.end() - first.data());
      f.erase(f.begin() + 6, f.end() - 5);
    }
    int64_t step, recordRank, seq, op, index, bytes;
    std::string where = path.str() + ":" + std::to_string(n + 1) + ": ";
    if (f.size() != 11 || f[0].getAsInteger(10, step) ||
        f[1].getAsInteger(10, recordRank) || f[2].getAsInteger(10, seq) ||
        f[3].getAsInteger(10, op) || f[7].getAsInteger(10, index) ||
        f[9].getAsInteger(10, bytes) || (f[6] != "in" && f[6] != "out") ||
        step < 0 || recordRank < 0 || seq < 0 || index < 0 || bytes < 0)
      return where + "not a trace line: " + line.str();
    if (recordRank != rank)
      return where + "a record of rank " + std::to_string(recordRank) +
             " in the trace of rank " + std::to_string(rank);
    if (auto want = typeBytes(f[8]); want && *want != bytes)
      return where + "the byte count " + std::to_string(bytes) +
             " is not the size of " + f[8].str() + " (" +
             std::to_string(*want) + ")";
    Exec &e = t[{step, seq, recordRank}];
    if (e.opId >= 0 && (e.opId != op || e.name != f[4]))
      return where + "execution " + std::to_string(seq) + " of step " +
             std::to_string(step) + " on rank " + std::to_string(rank) +
             " is already op #" + std::to_string(e.opId);
    e.opId = op;
    e.name = f[4].str();
    e.loc = f[5].str();
    auto &buffers = f[6] == "in" ? e.in : e.out;
    if (!buffers.emplace(index, Buffer{f[8].str(), bytes, f[10].str()})
             .second)
      return where + "a second record of " + f[6].str() + " operand " +
             std::to_string(index) + " of execution " + std::to_string(seq) +
             " of step " + std::to_string(step);
    ++records;
  }
  if (!records)
    return path.str() + ": the trace holds no op executions";
  return "";
}

/// FILE, or FILE.rank0, FILE.rank1, ...
std::string readTrace(StringRef base, Trace &t, int64_t &ranks) {
  ranks = 0;
  if (sys::fs::exists(base) && !sys::fs::is_directory(base)) {
    ranks = 1;
    return readFile(base, 0, t);
  }
  for (;; ++ranks) {
    std::string path = (base + ".rank" + Twine(ranks)).str();
    if (!sys::fs::exists(path))
      break;
    if (std::string why = readFile(path, ranks, t); !why.empty())
      return why;
  }
  if (ranks == 0)
    return "no trace '" + base.str() + "' (nor '" + base.str() + ".rank0')";
  return "";
}

std::string where(const Key &k, const Exec &e) {
  return "step " + std::to_string(std::get<0>(k)) + ", rank " +
         std::to_string(std::get<2>(k)) + ", op " +
         std::to_string(std::get<1>(k)) + " of the step: #" +
         std::to_string(e.opId) + " " + e.name + " at " + e.loc;
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  mlir::muir::setVersionPrinter("muir-trace-diff");
  // Bad arguments are errors (2), not "divergent" (1).
  if (!cl::ParseCommandLineOptions(
          argc, argv,
          "muir-trace-diff: the first op where two fingerprint traces "
          "diverge\n\nExit status: 0 identical, 1 divergent, 2 an error.\n",
          &errs()))
    return 2;
  Trace a, b;
  int64_t ranksA, ranksB;
  if (std::string why = readTrace(traceA, a, ranksA); !why.empty())
    return error(why);
  if (std::string why = readTrace(traceB, b, ranksB); !why.empty())
    return error(why);
  if (ranksA != ranksB)
    return error("the traces come from " + Twine(ranksA) + " and " +
                 Twine(ranksB) + " ranks");

  std::set<Key> keys;
  for (auto &kv : a)
    keys.insert(kv.first);
  for (auto &kv : b)
    keys.insert(kv.first);
  // The first execution that differs in any way.
  const Key *found = nullptr;
  std::string what;
  auto describe = [](const char *kind, const std::map<int64_t, Buffer> &x,
                     const std::map<int64_t, Buffer> &y) {
    std::string text;
    std::set<int64_t> indices;
    for (auto &kv : x)
      indices.insert(kv.first);
    for (auto &kv : y)
      indices.insert(kv.first);
    for (int64_t index : indices) {
      auto ix = x.find(index), iy = y.find(index);
      auto show = [](const Buffer &b) {
        return b.hash + " (" + std::to_string(b.bytes) + " bytes)";
      };
      if (ix != x.end() && iy != y.end() && ix->second == iy->second)
        continue;
      const Buffer &any = ix != x.end() ? ix->second : iy->second;
      text += "\n  " + std::string(kind) + " operand " +
              std::to_string(index) + " " + any.type + ": " +
              (ix == x.end() ? "none" : show(ix->second)) + " in A, " +
              (iy == y.end() ? "none" : show(iy->second)) + " in B";
    }
    return text;
  };
  for (const Key &k : keys) {
    auto ia = a.find(k), ib = b.find(k);
    if (ia == a.end() || ib == b.end() || ia->second.opId != ib->second.opId) {
      found = &k;
      what = "the runs execute different ops here (" +
             (ia == a.end() ? std::string("none") : ia->second.name) +
             " in A, " +
             (ib == b.end() ? std::string("none") : ib->second.name) +
             " in B)";
      break;
    }
    const Exec &ea = ia->second, &eb = ib->second;
    if (ea.in != eb.in) {
      found = &k;
      what = "its inputs already differ (the runs started from different "
             "state, or an untraced op changed a buffer):" +
             describe("input", ea.in, eb.in);
      break;
    }
    if (ea.out != eb.out) {
      found = &k;
      what = "its " + std::to_string(ea.in.size()) +
             " input(s) are the same in both runs, its output(s) are not:" +
             describe("output", ea.out, eb.out);
      break;
    }
  }
  if (!found) {
    std::set<int64_t> steps;
    for (const Key &k : keys)
      steps.insert(std::get<0>(k));
    outs() << "identical: " << keys.size() << " op executions over "
           << steps.size() << " step(s) on " << ranksA
           << " rank(s), every input and output hash equal\n";
    return 0;
  }
  const Exec &e = a.count(*found) ? a[*found] : b[*found];
  outs() << "first divergent op: " << where(*found, e) << "\n" << what
         << "\n";
  // The ops around it on its rank, marked = (same hashes) or ! (not).
  int64_t step = std::get<0>(*found), seq = std::get<1>(*found),
          rank = std::get<2>(*found);
  outs() << "around it on rank " << rank << ":\n";
  int64_t around = std::min<int64_t>(context, 1000);
  for (int64_t s = std::max<int64_t>(0, seq - around); s <= seq + around;
       ++s) {
    Key k{step, s, rank};
    auto ia = a.find(k), ib = b.find(k);
    if (ia == a.end() && ib == b.end())
      continue;
    const Exec &x = ia != a.end() ? ia->second : ib->second;
    bool same = ia != a.end() && ib != b.end() &&
                ia->second.in == ib->second.in &&
                ia->second.out == ib->second.out;
    outs() << (s == seq ? "> " : "  ") << (same ? "= " : "! ") << "op " << s
           << ": #" << x.opId << " " << x.name << " at " << x.loc << "\n";
  }
  return 1;
}
