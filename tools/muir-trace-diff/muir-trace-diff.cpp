//===- muir-trace-diff.cpp - the first op where two runs diverge ----------===//
//
// Reads two fingerprint traces (muir-run --trace-fingerprints: FILE, or
// FILE.rank0, FILE.rank1, ... for several ranks) and prints the first op
// whose inputs hash the same in both runs but whose outputs do not, with
// the ops around it on its rank; or says the runs are identical. "First"
// is in (step, execution number, rank) order: every rank runs the same
// program, so an op's execution number is comparable across ranks, and a
// collective that receives another rank's divergent data comes after the
// op that made it. Exit status: 0 identical, 1 divergent, 2 an error.
//
//===----------------------------------------------------------------------===//
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
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

struct Exec {
  int64_t opId = -1;
  std::string name, loc;
  std::map<int64_t, std::pair<std::string, std::string>> in, out; // type, hash
};

using Key = std::tuple<int64_t, int64_t, int64_t>; // step, seq, rank
using Trace = std::map<Key, Exec>;

int error(const Twine &msg) {
  WithColor::error(errs(), "muir-trace-diff") << msg << "\n";
  return 2;
}

/// Reads one file into `t`; an empty string on success, else why not.
std::string readFile(StringRef path, Trace &t) {
  auto buf = MemoryBuffer::getFile(path);
  if (!buf)
    return "cannot read '" + path.str() + "': " + buf.getError().message();
  SmallVector<StringRef> lines;
  (*buf)->getBuffer().split(lines, '\n', -1, /*KeepEmpty=*/false);
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
    int64_t step, rank, seq, op, index;
    if (f.size() != 11 || f[0].getAsInteger(10, step) ||
        f[1].getAsInteger(10, rank) || f[2].getAsInteger(10, seq) ||
        f[3].getAsInteger(10, op) || f[7].getAsInteger(10, index) ||
        (f[6] != "in" && f[6] != "out"))
      return path.str() + ":" + std::to_string(n + 1) +
             ": not a trace line: " + line.str();
    Exec &e = t[{step, seq, rank}];
    e.opId = op;
    e.name = f[4].str();
    e.loc = f[5].str();
    (f[6] == "in" ? e.in : e.out)[index] = {f[8].str(), f[10].str()};
  }
  return "";
}

/// FILE, or FILE.rank0, FILE.rank1, ...
std::string readTrace(StringRef base, Trace &t, int64_t &ranks) {
  ranks = 0;
  if (sys::fs::exists(base) && !sys::fs::is_directory(base)) {
    ranks = 1;
    return readFile(base, t);
  }
  for (;; ++ranks) {
    std::string path = (base + ".rank" + Twine(ranks)).str();
    if (!sys::fs::exists(path))
      break;
    if (std::string why = readFile(path, t); !why.empty())
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
  cl::ParseCommandLineOptions(
      argc, argv,
      "muir-trace-diff: the first op where two fingerprint traces diverge\n");
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
  const Key *found = nullptr, *inputsDiffer = nullptr;
  std::string what;
  for (const Key &k : keys) {
    auto ia = a.find(k), ib = b.find(k);
    if (ia == a.end() || ib == b.end() || ia->second.opId != ib->second.opId) {
      // The programs took different paths: report it unless an earlier op
      // already diverged.
      if (!found) {
        found = &k;
        what = "the runs execute different ops here (" +
               (ia == a.end() ? std::string("none") : ia->second.name) +
               " in A, " +
               (ib == b.end() ? std::string("none") : ib->second.name) +
               " in B)";
      }
      break;
    }
    const Exec &ea = ia->second, &eb = ib->second;
    bool inEqual = ea.in == eb.in;
    if (inEqual && ea.out != eb.out) {
      found = &k;
      what = "its " + std::to_string(ea.in.size()) +
             " input(s) are the same in both runs, its output(s) are not:";
      for (auto &[index, typeHash] : ea.out) {
        auto other = eb.out.find(index);
        if (other == eb.out.end() || other->second != typeHash)
          what += "\n  output operand " + std::to_string(index) + " " +
                  typeHash.first + ": " + typeHash.second + " in A, " +
                  (other == eb.out.end() ? "none" : other->second.second) +
                  " in B";
      }
      break;
    }
    if (!inEqual && !inputsDiffer)
      inputsDiffer = &k;
  }
  if (!found && !inputsDiffer) {
    std::set<int64_t> steps;
    for (const Key &k : keys)
      steps.insert(std::get<0>(k));
    outs() << "identical: " << keys.size() << " op executions over "
           << steps.size() << " step(s) on " << ranksA
           << " rank(s), every input and output hash equal\n";
    return 0;
  }
  if (!found) {
    found = inputsDiffer;
    what = "its inputs already differ (the runs started from different "
           "state, or an untraced op changed a buffer)";
  }
  const Exec &e = a.count(*found) ? a[*found] : b[*found];
  outs() << "first divergent op: " << where(*found, e) << "\n" << what
         << "\n";
  // The ops around it on its rank, marked = (same hashes) or ! (not).
  int64_t step = std::get<0>(*found), seq = std::get<1>(*found),
          rank = std::get<2>(*found);
  outs() << "around it on rank " << rank << ":\n";
  for (int64_t s = seq - context; s <= seq + static_cast<int64_t>(context);
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
