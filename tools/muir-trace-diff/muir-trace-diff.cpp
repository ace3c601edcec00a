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
// difference.
//
// A trace says what it is of and how long it is: its first line names the
// program (a hash of the step's IR hash, grid and compile flags, what a
// resume compares but the build), the rank and the number of ranks;
// "# ir", "# grid", "# flag" and "# build" lines spell it out (and
// "# blas-threads", OpenBLAS's thread count, on which the bits depend but
// not the program: two runs on other counts are compared, with a note;
// "# hash", how buffers are hashed: XXH64 since it has the line, FNV-1a
// before, and two traces hashed two ways are refused);
// its last
// line is "# end <N> records". A trace without that line, or whose count
// is not its records', is cut (the run that wrote it was killed while
// writing) and is refused; so are two traces of different programs
// (naming what differs) and rank files of different runs. Two builds of
// one program are compared, with a note: where their bits part is what a
// trace is for. A trace from before traces said this (its first line
// names no program) is compared with a warning that neither can be
// checked. Each record's byte count must be its buffer type's size, and a
// trace must hold at least one record.
// Exit status: 0 identical, 1 divergent, 2 an error (bad arguments too).
//
//===----------------------------------------------------------------------===//
#include "muir/Support/Files.h"
#include "muir/Support/FlagDifferences.h"
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
#include <vector>

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

/// What a trace file says it is of (its header); `old` when it says
/// nothing (written before traces recorded their program).
struct Header {
  bool old = true;
  std::string program, ir, grid, build;
  /// OpenBLAS's threads on this rank ("" for a CUDA step or an older
  /// trace): not the program's, but its bits depend on it.
  std::string blasThreads;
  /// How buffers are hashed ("# hash"): xxh64; a trace without the line
  /// hashed them with FNV-1a.
  std::string hash = "fnv1a";
  std::map<std::string, std::string> flags;
  int64_t rank = 0, ranks = 1;
};

std::string cut(StringRef path, const Twine &how) {
  return (path + ": the trace is cut: " + how +
          "; the run that wrote it was probably killed while writing; "
          "rerun it")
      .str();
}

/// Reads one rank's file (`rank`: the rank its records must be of) into
/// `t` and its header into `h`; an empty string on success, else why not.
std::string readFile(StringRef path, int64_t rank, Trace &t, Header &h) {
  std::string why;
  auto buf = mlir::muir::readBoundedFile(path, why);
  if (!buf)
    return why;
  StringRef text = buf->getBuffer();
  auto notTrace = [&] {
    return path.str() + ": not a fingerprint trace (no '" + kHeader.str() +
           "' header line; write one with muir-run --trace-fingerprints)";
  };
  // Cut inside its first line.
  if (!text.empty() && !text.contains('\n') && kHeader.starts_with(text))
    return cut(path, "it ends inside its first line");
  if (!text.starts_with(kHeader))
    return notTrace();
  SmallVector<StringRef> lines;
  text.split(lines, '\n', -1, /*KeepEmpty=*/false);
  // muir-run ends every line, the last one too.
  if (!text.ends_with("\n"))
    return cut(path, "its last line (line " + Twine(lines.size()) +
                         ") is incomplete and the '# end <N> records' "
                         "line is missing");
  // "program <hash> rank <r> of <n>" after the header's colon, or (an
  // older trace) the fields' names.
  StringRef first = lines.front().drop_front(kHeader.size()).trim();
  if (first.starts_with("program ")) {
    SmallVector<StringRef> f;
    first.split(f, ' ', -1, /*KeepEmpty=*/false);
    if (f.size() != 6 || f[2] != "rank" || f[4] != "of" ||
        f[3].getAsInteger(10, h.rank) || f[5].getAsInteger(10, h.ranks) ||
        h.rank < 0 || h.ranks < 1 || h.rank >= h.ranks)
      return path.str() + ":1: a damaged header line: " + lines.front().str();
    h.old = false;
    h.program = f[1].str();
    if (h.rank != rank)
      return path.str() + ": the trace of rank " + std::to_string(h.rank) +
             ", named as rank " + std::to_string(rank) + "'s";
  }
  // Whole: the last line is the only end line and counts the records.
  if (!h.old) {
    size_t held = 0, ends = 0;
    for (StringRef line : lines) {
      if (!line.starts_with("#"))
        ++held;
      else if (line.starts_with("# end "))
        ++ends;
    }
    SmallVector<StringRef> f;
    lines.back().split(f, ' ', -1, /*KeepEmpty=*/false);
    uint64_t counted;
    bool isEnd = f.size() == 4 && f[0] == "#" && f[1] == "end" &&
                 f[3] == "records" && !f[2].getAsInteger(10, counted);
    if (!isEnd && ends == 0)
      return cut(path, "the '# end <N> records' line is missing (it stops "
                       "after line " +
                           Twine(lines.size()) +
                           (held ? ", a record" : ", in its header") + ")");
    if (ends > 1)
      return path.str() + ": the trace is damaged: it holds " +
             std::to_string(ends) +
             " '# end' lines (two traces joined?); rerun the run that "
             "wrote it";
    if (!isEnd)
      return path.str() + ": the trace is damaged: lines follow its "
             "'# end' line (appended to?); rerun the run that wrote it";
    if (counted != held)
      return path.str() + ": the trace is cut or damaged: its end line " +
             "counts " + std::to_string(counted) + " records, it holds " +
             std::to_string(held) + "; rerun the run that wrote it";
  }
  size_t records = 0;
  for (auto [n, line] : llvm::enumerate(lines)) {
    if (line.starts_with("#")) {
      // The program spelled out (a header line muir-run did not write is
      // skipped: a comment).
      if (h.old)
        continue;
      auto [key, value] = line.drop_front(1).ltrim().split(' ');
      if (key == "ir")
        h.ir = value.str();
      else if (key == "grid")
        h.grid = value.str();
      else if (key == "build")
        h.build = value.str();
      else if (key == "blas-threads")
        h.blasThreads = value.str();
      else if (key == "hash")
        h.hash = value.str();
      else if (key == "flag") {
        auto [name, setting] = value.split('=');
        h.flags[name.str()] = setting.str();
      }
      continue;
    }
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

std::string ofRun(const Header &h) {
  return "program " + h.program + ", rank " + std::to_string(h.rank) +
         " of " + std::to_string(h.ranks);
}

/// FILE, or FILE.rank0, FILE.rank1, ...; `h` gets rank 0's header, whose
/// run every other rank's file must be of.
std::string readTrace(StringRef base, Trace &t, int64_t &ranks, Header &h) {
  ranks = 0;
  if (sys::fs::exists(base) && !sys::fs::is_directory(base)) {
    ranks = 1;
    if (std::string why = readFile(base, 0, t, h); !why.empty())
      return why;
    if (!h.old && h.ranks != 1)
      return base.str() + ": the trace of rank " + std::to_string(h.rank) +
             " of a run on " + std::to_string(h.ranks) +
             " ranks, named as a one-rank run's (its ranks' traces are " +
             base.str() + ".rank<R>)";
    return "";
  }
  for (;; ++ranks) {
    std::string path = (base + ".rank" + Twine(ranks)).str();
    if (!sys::fs::exists(path))
      break;
    Header mine;
    Header &got = ranks ? mine : h;
    if (std::string why = readFile(path, ranks, t, got); !why.empty())
      return why;
    // Every rank's file of one run (a file left from an earlier run
    // beside it is no part of it).
    if (ranks && (mine.old != h.old || mine.program != h.program ||
                  mine.ranks != h.ranks))
      return path + " is not of the run that wrote " + base.str() +
             ".rank0 (" + (mine.old ? "no program recorded" : ofRun(mine)) +
             "; " + base.str() + ".rank0: " +
             (h.old ? "no program recorded" : ofRun(h)) +
             "): left from an earlier run? remove it, or rerun";
  }
  if (ranks == 0)
    return "no trace '" + base.str() + "' (nor '" + base.str() + ".rank0')";
  if (!h.old && ranks < h.ranks)
    return "no trace '" + base.str() + ".rank" + std::to_string(ranks) +
           "': the run that wrote " + base.str() + ".rank0 had " +
           std::to_string(h.ranks) + " ranks";
  return "";
}

/// One line per difference between two traces' programs, as a resume
/// names them; empty when they are of the same program.
std::vector<std::string> differences(const Header &a, const Header &b) {
  std::vector<std::string> out;
  if (a.ranks != b.ranks)
    out.push_back("the ranks: " + std::to_string(a.ranks) + " in A, " +
                  std::to_string(b.ranks) + " in B");
  if (a.grid != b.grid)
    out.push_back("the grid: '" + a.grid + "' in A, '" + b.grid + "' in B");
  mlir::muir::forEachFlagDifference(
      a.flags, b.flags,
      [&](const std::string &name, const std::string &was,
          const std::string &is) {
        out.push_back("the flag --" + name + ": '" + was + "' in A, '" + is +
                      "' in B");
      });
  // The IR's hash covers the grid too: named alone only if nothing more
  // specific explains the difference.
  if (a.ir != b.ir && out.size() == size_t(a.ranks != b.ranks))
    out.push_back("the step: its IR (shapes, optimizer settings, "
                  "parameters) differs (hash " +
                  a.ir + " in A, " + b.ir + " in B)");
  if (out.empty() && a.program != b.program)
    out.push_back("only the program's hash (its header lines agree)");
  return out;
}

std::string where(const Key &k, const Exec &e) {
  return "step " + std::to_string(std::get<0>(k)) + ", rank " +
         std::to_string(std::get<2>(k)) + ", op " +
         std::to_string(std::get<1>(k)) + " of the step: #" +
         std::to_string(e.opId) + " " + e.name + " at " + e.loc;
}

} // namespace

/// What the two traces' headers say of comparing them: why they cannot be
/// compared (different programs, buffers hashed two ways), or "" with notes
/// (other builds, other BLAS threads) and warnings (a trace from before the
/// headers) printed.
static std::string compareHeaders(const Header &ha, const Header &hb) {
  // Two programs' traces: no op is "divergent".
  if (!ha.old && !hb.old && (ha.program != hb.program || ha.ranks != hb.ranks)) {
    std::string text = "A (" + traceA + ") and B (" + traceB +
                       ") are traces of different programs (" + ha.program +
                       " on " + std::to_string(ha.ranks) + " rank(s), " +
                       hb.program + " on " + std::to_string(hb.ranks) +
                       " rank(s)); what differs:";
    for (const std::string &line : differences(ha, hb))
      text += "\n  " + line;
    text += "\ncompare two runs of one program (the same description, grid "
            "and compile flags, as --resume requires)";
    return text;
  }
  // Buffers hashed two ways: every hash would differ.
  if (!ha.old && !hb.old && ha.hash != hb.hash)
    return "A (" + traceA + ") hashes buffers with " + ha.hash + ", B (" +
           traceB + ") with " + hb.hash +
           " (written by builds before and after muir's traces moved "
           "to XXH64): no two hashes could agree; rerun the run of "
           "the older trace with this build";
  // One program built twice: compared (where the builds' bits part is what
  // a trace is for), with a note. A resume also requires the build.
  if (!ha.old && !hb.old && ha.build != hb.build)
    WithColor::note(errs(), "muir-trace-diff")
        << "A and B are of one program, written by different builds ('"
        << ha.build << "' and '" << hb.build
        << "'): an op that differs may be one whose kernel changed\n";
  // One program on other BLAS threads: compared, with a note that says why
  // products may part.
  if (!ha.blasThreads.empty() && !hb.blasThreads.empty() &&
      ha.blasThreads != hb.blasThreads)
    WithColor::note(errs(), "muir-trace-diff")
        << "A ran OpenBLAS on " << ha.blasThreads << " thread(s) a rank, B on "
        << hb.blasThreads
        << ": OpenBLAS's results depend on its thread count, so products "
           "(gemm, syrk) may differ where nothing else does (run both with "
           "one OPENBLAS_NUM_THREADS)\n";
  auto warnOld = [](const Header &h, const char *which, StringRef path,
                    const char *other) {
    if (h.old)
      WithColor::warning(errs(), "muir-trace-diff")
          << which << " (" << path
          << ") is from a muir from before traces recorded their program "
             "and length: whether it is whole and of the same program as "
          << other
          << " cannot be checked; comparing anyway (rerun it with this "
             "muir-run to check)\n";
  };
  warnOld(ha, "A", traceA, "B");
  warnOld(hb, "B", traceB, "A");
  return "";
}

/// The operands of kind `kind` ("input", "output") whose hashes differ
/// between x (A's) and y (B's), one line each.
static std::string describe(const char *kind,
                            const std::map<int64_t, Buffer> &x,
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
    text += "\n  " + std::string(kind) + " operand " + std::to_string(index) +
            " " + any.type + ": " +
            (ix == x.end() ? "none" : show(ix->second)) + " in A, " +
            (iy == y.end() ? "none" : show(iy->second)) + " in B";
  }
  return text;
}

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
  Header ha, hb;
  if (std::string why = readTrace(traceA, a, ranksA, ha); !why.empty())
    return error(why);
  if (std::string why = readTrace(traceB, b, ranksB, hb); !why.empty())
    return error(why);
  if (std::string why = compareHeaders(ha, hb); !why.empty())
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
