//===- Checks.cpp - what a run checks before it starts --------------------===//
//
// The outputs a run writes (distinct from its inputs and each other,
// writable), the learning-rate schedule, and the one-line report of a
// non-finite value: everything a runner checks before the first step, so
// that a bad flag costs no work and writes nothing.
//
//===----------------------------------------------------------------------===//
#include "muir/Tooling/RunChecks.h"

#include "muir/Support/Files.h"
#include "muir-rt/Runtime.h"
#include "muir-rt/TensorFiles.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"

#include <algorithm>
#include <cmath>
#include <set>

using namespace mlir::muir;
using namespace mlir::muir::runner;
using namespace mlir::muir::tooling;
using llvm::SmallVector;
using llvm::StringRef;
using llvm::Twine;


llvm::Error tooling::checkRanks(const Step &step, int64_t ranks) {
  int64_t devices = step.devices();
  if (devices == ranks)
    return llvm::Error::success();
  const std::string &grid = step.identity().grid;
  if (ranks == 1)
    return error("the grid (" + grid + ") has " + Twine(devices) +
                 " devices; run it with --ranks " + Twine(devices));
  return error("--ranks " + Twine(ranks) + " does not match the " +
               Twine(devices) + " devices of the grid (" + grid +
               "); run it with --ranks " + Twine(devices));
}

llvm::Error tooling::checkLoadDir(StringRef flag, StringRef dir) {
  if (llvm::sys::fs::is_directory(dir))
    return llvm::Error::success();
  std::error_code why =
      llvm::sys::fs::exists(dir)
          ? std::make_error_code(std::errc::not_a_directory)
          : std::make_error_code(std::errc::no_such_file_or_directory);
  return error(flag + ": cannot open directory '" + dir + "': " +
               why.message());
}

std::vector<std::string> tooling::loadDirWarnings(StringRef flag, StringRef dir,
                                                 const Step &step) {
  // The tensors with a file (what the runtime's loader stats, links
  // followed), and the .npy files under DIR that name none (links not
  // followed: a linked folder could loop).
  std::set<std::string> names;
  int64_t matched = 0;
  std::string example;
  for (const Argument &a : step.arguments()) {
    if (!a.isTensor())
      continue;
    names.insert(a.name);
    if (example.empty())
      example = a.name;
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, a.name + ".npy");
    matched += llvm::sys::fs::exists(path);
  }
  // A look, not a search: a huge tree (a --load of the wrong folder) is
  // only partly listed.
  constexpr int64_t kMaxEntries = 100000;
  std::vector<std::string> unmatched;
  std::error_code ec;
  int64_t entries = 0;
  for (llvm::sys::fs::recursive_directory_iterator
           it(dir, ec, /*follow_symlinks=*/false),
       end;
       it != end && !ec && entries++ < kMaxEntries; it.increment(ec)) {
    StringRef path = it->path();
    if (!path.ends_with(".npy") ||
        it->type() == llvm::sys::fs::file_type::directory_file)
      continue;
    StringRef rel = path.drop_front(dir.size()).ltrim('/');
    if (!names.count(rel.drop_back(4).str()))
      unmatched.push_back(rel.str());
  }
  std::sort(unmatched.begin(), unmatched.end());
  std::string list;
  constexpr size_t kShown = 5;
  for (size_t i = 0; i < std::min(unmatched.size(), kShown); ++i)
    list += (i ? ", " : "") + unmatched[i];
  if (unmatched.size() > kShown)
    list += ", ... (" + std::to_string(unmatched.size() - kShown) + " more)";
  std::vector<std::string> warnings;
  std::string where = (flag + " " + dir).str();
  if (matched == 0)
    warnings.push_back(
        where +
        ": no file matches a tensor, so every tensor "
        "is seeded; a tensor is read from " +
        (Twine(dir) + "/<name>.npy, e.g. " + example + ".npy").str());
  if (!unmatched.empty())
    warnings.push_back(
        where + ": " + std::to_string(unmatched.size()) +
        (unmatched.size() == 1 ? " file matches" : " files match") +
        " no tensor of the step and " + (unmatched.size() == 1 ? "is" : "are") +
        " not read: " + list);
  return warnings;
}

llvm::Error tooling::checkTraceTarget(StringRef file, int64_t ranks) {
  // FILE, or FILE.rank<R>: written at the end, so checked now.
  llvm::SmallString<256> parent(file);
  llvm::sys::path::remove_filename(parent);
  if (parent.empty())
    parent = ".";
  for (int64_t r = 0; r < (ranks > 1 ? ranks : 1); ++r) {
    std::string path =
        file.str() + (ranks > 1 ? ".rank" + std::to_string(r) : "");
    if (llvm::sys::fs::is_directory(path))
      return error("--trace-fingerprints: '" + path + "' is a directory");
  }
  if (!llvm::sys::fs::is_directory(parent) ||
      llvm::sys::fs::access(parent, llvm::sys::fs::AccessMode::Write))
    return error("--trace-fingerprints: '" + parent +
                 "' is not a writable directory");
  return llvm::Error::success();
}

llvm::Error tooling::checkDumpTarget(StringRef dir, const Step &step) {
  std::vector<const char *> names;
  for (const Argument &a : step.arguments())
    if (a.isTensor())
      names.push_back(a.name.c_str());
  if (muirrt_check_dump(dir.str().c_str(), names.data(),
                        static_cast<int32_t>(names.size())))
    return error("--dump: " + Twine(muirrt_last_error()));
  return llvm::Error::success();
}

llvm::Expected<std::vector<double>>
tooling::lrSchedule(StringRef spec, int64_t first, int64_t last) {
  auto bad = [](const Twine &why) { return error("--lr-schedule: " + why); };
  std::string given = spec.str();
  std::vector<double> factors;
  if (spec == "constant")
    return std::vector<double>(last - first + 1, 1.0);
  if (spec.consume_front("cosine:")) {
    SmallVector<StringRef> parts;
    spec.split(parts, ':');
    double w = 0, t = 0, lo = 0;
    if (parts.size() < 2 || parts.size() > 3 || parts[0].getAsDouble(w) ||
        parts[1].getAsDouble(t) ||
        (parts.size() == 3 && parts[2].getAsDouble(lo)) ||
        !std::isfinite(w) || !std::isfinite(t) || !std::isfinite(lo) ||
        w < 0 || t <= w || lo < 0 || lo > 1)
      return bad("expected cosine:WARMUP:TOTAL[:MIN] with finite numbers, "
                 "0 <= WARMUP < TOTAL and 0 <= MIN <= 1, got '" + given +
                 "'");
    for (int64_t s = first; s <= last; ++s)
      factors.push_back(
          s <= w   ? s / w
          : s >= t ? lo
                   : lo + (1 - lo) * 0.5 *
                              (1 + std::cos(M_PI * (s - w) / (t - w))));
    return factors;
  }
  if (spec.consume_front("file:")) {
    std::string why;
    auto buffer = readBoundedFile(spec, why);
    if (!buffer)
      return bad(why);
    // Line s is step s: an empty line is an error, not skipped (only the
    // last line's newline ends the list).
    SmallVector<StringRef> lines;
    StringRef text = buffer->getBuffer();
    text.consume_back("\n");
    if (!text.empty())
      text.split(lines, '\n', -1, true);
    for (auto [i, line] : llvm::enumerate(lines)) {
      double f;
      if (line.trim().getAsDouble(f) || !std::isfinite(f) || f < 0)
        return bad(spec + ":" + Twine(i + 1) +
                   ": expected a finite factor >= 0, got '" + line.trim() +
                   "'");
      int64_t s = static_cast<int64_t>(i) + 1;
      if (s >= first && s <= last)
        factors.push_back(f);
    }
    if (static_cast<int64_t>(lines.size()) < last)
      return bad(spec + " has " + Twine(lines.size()) +
                 " factors, but the run ends at step " + Twine(last));
    return factors;
  }
  return bad("expected constant, cosine:WARMUP:TOTAL[:MIN] or file:PATH, "
             "got '" + given + "'");
}

bool tooling::stopOnNonFinite(const Step &step, StringRef tool, int64_t at,
                             StringRef what, StringRef when,
                             const HostTensors::NonFinite &found,
                             bool element) {
  int32_t first = muirrt_dist_first(found.index >= 0);
  if (first < 0)
    return false;
  int64_t rank = step.rank();
  if (first == rank) {
    float v = found.value;
    llvm::WithColor::error(llvm::errs(), tool)
        << "rank " << rank << ", step " << at << ": " << what << " '"
        << found.name << "' holds "
        << (std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf")
        << (element ? " at element " + std::to_string(found.index) +
                          (step.devices() > 1 ? " of the rank's part" : "")
                    : std::string())
        << "; stopped " << when
        << ", nothing written (--check-finite=false turns this check off)\n";
  }
  return true;
}
