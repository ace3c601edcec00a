//===- State.cpp - saved training states (--save-state, --resume) ---------===//
//
// See muir/Runner/State.h. The manifest (muir-state.json):
//   {"format": "muir-state-3", "step": 12,
//    "identity": {"step_hash": "...", "layout_free_hash": "...",
//                 "grid": "dp=2,tp=2",
//                 "flags": {"ns-mode": "auto", ...}, "build": "..."},
//    "tensors": {"<name>": "<xxh3 of the .npy file's bytes>", ...}}
//
//===----------------------------------------------------------------------===//
#include "muir/Runner/State.h"
#include "muir/Support/Files.h"
#include "muir/Support/FlagDifferences.h"
#include "muir/Support/Nesting.h"
#include "muir-rt/Runtime.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

using namespace mlir::muir::state;
namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;
namespace json = llvm::json;
using llvm::StringRef;
using llvm::Twine;

namespace {

/// A message for the tool's "error:" line (as the step library's).
llvm::Error error(const Twine &message) {
  return llvm::createStringError(message);
}

std::string inDir(StringRef dir, StringRef name) {
  llvm::SmallString<256> p(dir);
  path::append(p, name);
  return std::string(p);
}

/// The manifest in `dir`, read (within the input size limit, a regular
/// file only) and parsed; `bytesHash`, if given, gets the hash of its
/// bytes.
llvm::Expected<Manifest> readManifest(StringRef dir,
                                      uint64_t *bytesHash = nullptr) {
  if (!fs::exists(inDir(dir, kManifestName)))
    return error("no " + Twine(kManifestName));
  std::string why;
  auto buffer = mlir::muir::readBoundedFile(
      inDir(dir, kManifestName), why, mlir::muir::kMaxInputBytes,
      mlir::muir::FileOrigin::Found);
  if (!buffer)
    return error("no readable " + Twine(kManifestName) + " (" + why + ")");
  if (bytesHash)
    *bytesHash = llvm::xxh3_64bits(
        llvm::arrayRefFromStringRef(buffer->getBuffer()));
  auto manifest = parseManifest(buffer->getBuffer());
  if (!manifest)
    return error(Twine(kManifestName) + " is damaged: " +
                 llvm::toString(manifest.takeError()));
  return manifest;
}

/// The entries of `dir` (recursively, relative paths) that are neither the
/// manifest nor a tensor file it names nor a folder on the way to one.
std::vector<std::string> strangers(StringRef dir, const Manifest &manifest) {
  llvm::StringSet<> expected, folders;
  expected.insert(kManifestName);
  for (const auto &[name, hash] : manifest.tensors) {
    expected.insert(name + ".npy");
    for (StringRef p = path::parent_path(name, path::Style::posix);
         !p.empty(); p = path::parent_path(p, path::Style::posix))
      folders.insert(p);
  }
  std::vector<std::string> found;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec, /*follow_symlinks=*/false),
       end;
       it != end && !ec; it.increment(ec)) {
    StringRef full = it->path();
    std::string rel = full.drop_front(dir.size()).ltrim('/').str();
    bool isDir = it->type() == fs::file_type::directory_file;
    if (isDir ? folders.contains(rel)
              : expected.contains(rel) &&
                    it->type() == fs::file_type::regular_file)
      continue;
    found.push_back(rel);
    if (isDir)
      it.no_push();
  }
  if (ec)
    found.push_back("(unreadable: " + ec.message() + ")");
  return found;
}

/// The shape in a .npy file's header ("'shape': (64, 48)"), if it reads.
std::optional<std::vector<int64_t>> npyShape(StringRef file) {
  // The header only: its first 4 KiB, not the tensor's data.
  auto fd = fs::openNativeFileForRead(file);
  if (!fd) {
    llvm::consumeError(fd.takeError());
    return std::nullopt;
  }
  char head[4096];
  auto got = fs::readNativeFile(*fd, llvm::MutableArrayRef<char>(head));
  fs::closeFile(*fd);
  if (!got) {
    llvm::consumeError(got.takeError());
    return std::nullopt;
  }
  StringRef text(head, *got);
  size_t at = text.find("'shape': (");
  if (at == StringRef::npos)
    return std::nullopt;
  StringRef dims = text.drop_front(at + 10);
  dims = dims.take_until([](char c) { return c == ')'; });
  std::vector<int64_t> shape;
  llvm::SmallVector<StringRef> parts;
  dims.split(parts, ',', -1, /*KeepEmpty=*/false);
  for (StringRef p : parts) {
    int64_t d;
    if (p.trim().getAsInteger(10, d))
      return std::nullopt;
    shape.push_back(d);
  }
  return shape;
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// How the state's tensors differ from a step's: names only one has, and
/// shapes (from the .npy headers) that differ. At most a few, in order.
std::vector<std::string>
tensorDifferences(StringRef dir, const Manifest &manifest,
                  const std::vector<StateTensor> &tensors) {
  std::vector<std::string> out;
  std::set<std::string> mine;
  for (const StateTensor &t : tensors) {
    mine.insert(t.name);
    if (!manifest.tensors.count(t.name)) {
      out.push_back("this step's tensor '" + t.name + "' is not in it");
      continue;
    }
    auto saved = npyShape(inDir(dir, t.name + ".npy"));
    if (saved && *saved != t.shape)
      out.push_back("the tensor '" + t.name + "': " + shapeText(*saved) +
                    " in it, " + shapeText(t.shape) + " in this step");
  }
  for (const auto &[name, hash] : manifest.tensors)
    if (!mine.count(name))
      out.push_back("its tensor '" + name + "' is not this step's");
  if (out.size() > 4) {
    size_t more = out.size() - 3;
    out.resize(3);
    out.push_back("(and " + std::to_string(more) + " more)");
  }
  return out;
}

} // namespace

llvm::Expected<Manifest> mlir::muir::state::parseManifest(StringRef text) {
  if (std::optional<size_t> at =
          mlir::muir::findTooDeep(text, mlir::muir::NestingSyntax::Yaml)) {
    auto [line, column] = mlir::muir::lineAndColumn(text, *at);
    return error("line " + Twine(line) + ", column " + Twine(column) +
                 ": " + mlir::muir::tooDeepMessage());
  }
  auto parsed = json::parse(text);
  if (!parsed)
    return error(llvm::toString(parsed.takeError()));
  const json::Object *obj = parsed->getAsObject();
  if (!obj)
    return error("expected a JSON object");
  auto format = obj->getString("format");
  if (!format || *format != kFormat)
    return error("expected \"format\": \"" + Twine(kFormat) + "\"" +
                 (format ? ", got \"" + *format + "\"" : Twine()));
  Manifest m;
  auto step = obj->getInteger("step");
  if (!step || *step < 0 || *step >= kMaxStep)
    return error("expected \"step\": an integer in [0, 2^53)");
  m.step = *step;
  const json::Object *identity = obj->getObject("identity");
  if (!identity)
    return error("expected an \"identity\" object");
  auto stepHash = identity->getString("step_hash");
  auto layoutFree = identity->getString("layout_free_hash");
  auto grid = identity->getString("grid");
  auto build = identity->getString("build");
  const json::Object *flags = identity->getObject("flags");
  if (!stepHash || !layoutFree || !grid || !build || !flags)
    return error("expected \"identity\" to hold \"step_hash\", "
                 "\"layout_free_hash\", \"grid\", \"build\" (strings) and "
                 "\"flags\" (an object)");
  m.identity.stepHash = stepHash->str();
  m.identity.layoutFreeHash = layoutFree->str();
  m.identity.grid = grid->str();
  m.identity.build = build->str();
  for (const auto &[name, value] : *flags) {
    auto text = value.getAsString();
    if (!text)
      return error("flag '" + Twine(StringRef(name)) + "' is not a string");
    m.identity.flags[name.str()] = text->str();
  }
  const json::Object *tensors = obj->getObject("tensors");
  if (!tensors)
    return error("expected a \"tensors\" object");
  for (const auto &[name, value] : *tensors) {
    auto hash = value.getAsString();
    StringRef n = name;
    // Tensor names become relative paths inside the state.
    bool safe = !n.empty() && !n.starts_with("/") &&
                llvm::none_of(llvm::split(n, "/"), [](StringRef part) {
                  return part.empty() || part == "." || part == "..";
                });
    if (!hash || !safe)
      return error("tensor entry '" + Twine(n) +
                   "' is not a relative name with a hash string");
    m.tensors[n.str()] = hash->str();
  }
  return m;
}

std::string mlir::muir::state::printManifest(const Manifest &m) {
  json::Object flags, tensors;
  for (const auto &[name, value] : m.identity.flags)
    flags[name] = value;
  for (const auto &[name, hash] : m.tensors)
    tensors[name] = hash;
  json::Object root{
      {"format", kFormat},
      {"step", m.step},
      {"identity", json::Object{{"step_hash", m.identity.stepHash},
                                {"layout_free_hash", m.identity.layoutFreeHash},
                                {"grid", m.identity.grid},
                                {"flags", std::move(flags)},
                                {"build", m.identity.build}}},
      {"tensors", std::move(tensors)}};
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", json::Value(std::move(root))) << "\n";
  return text;
}

std::vector<std::string>
mlir::muir::state::differences(const StepIdentity &saved,
                               const StepIdentity &now) {
  std::vector<std::string> out;
  // Another layout of the same step resumes (the tensors are saved whole):
  // the grid is a difference only when the rest of the IR differs too.
  bool sameStep = saved.layoutFreeHash == now.layoutFreeHash;
  if (saved.grid != now.grid && !sameStep)
    out.push_back("the grid: saved on '" + saved.grid + "', this run's is '" +
                  now.grid + "' (and the step differs beyond its layout)");
  mlir::muir::forEachFlagDifference(
      saved.flags, now.flags,
      [&](const std::string &name, const std::string &was,
          const std::string &is) {
        out.push_back("the flag --" + name + ": saved with '" + was +
                      "', this run has '" + is + "'");
      });
  // Another build may compute other bits (a changed kernel, another
  // schedule): a state continues only on the build that saved it.
  if (saved.build != now.build)
    out.push_back("the build: saved by '" + saved.build + "', this run is '" +
                  now.build + "' (resume with the build that saved it)");
  // The IR hash covers the grid too: name it alone only if nothing more
  // specific explains the difference.
  if (!sameStep && out.empty())
    out.push_back("the step: its IR (shapes, optimizer settings, "
                  "parameters) differs from the one saved (hash " +
                  saved.layoutFreeHash + ", this run's " +
                  now.layoutFreeHash + ")");
  return out;
}

std::string mlir::muir::state::hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx",
                static_cast<unsigned long long>(v));
  return buf;
}

llvm::Expected<std::string> mlir::muir::state::fileHash(StringRef p) {
  // A state's file: regular only (a FIFO would block, a device not end).
  std::string why;
  int fd = mlir::muir::openFoundFile(p, mlir::muir::FileOrigin::Found, why);
  if (fd < 0)
    return error(why);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return error("cannot stat '" + p + "'");
  }
  auto buf = llvm::MemoryBuffer::getOpenFile(fd, p, st.st_size,
                                             /*RequiresNullTerminator=*/false);
  ::close(fd);
  if (!buf)
    return error("cannot read '" + p + "': " + buf.getError().message());
  return hex64(
      llvm::xxh3_64bits(llvm::arrayRefFromStringRef((*buf)->getBuffer())));
}

llvm::Error mlir::muir::state::checkSaveTarget(StringRef given) {
  auto refuse = [&](const Twine &why) {
    return error("--save-state '" + given + "': " + why);
  };
  // "s/" is "s" (a trailing slash would make lstat follow a link); the
  // state is a directory of its own, not "." or "..", which cannot be
  // renamed.
  StringRef dir = given.rtrim('/');
  if (dir.empty() || path::filename(dir) == "." || path::filename(dir) == "..")
    return refuse("give the state's directory by its name (not '.', '..' "
                  "or '/')");
  // The new state is staged beside it and renamed into place: the parent
  // must take new entries, whether or not a state is there.
  llvm::SmallString<256> parent(dir);
  path::remove_dots(parent, /*remove_dot_dot=*/true);
  path::remove_filename(parent);
  if (parent.empty())
    parent = ".";
  if (!fs::is_directory(parent) || fs::access(parent, fs::AccessMode::Write))
    return refuse("its folder '" + parent + "' is not a writable directory");
  fs::file_status st;
  if (fs::status(dir, st, /*follow=*/false))
    return llvm::Error::success();
  if (fs::is_symlink_file(st))
    return refuse("it is a symbolic link; give the state's own directory");
  // The new state takes the directory's place by a rename, which a mount
  // point refuses (after the whole run): refused now.
  {
    struct stat here, up;
    std::string parentDir = (dir + "/..").str();
    if (::stat(dir.str().c_str(), &here) == 0 &&
        ::stat(parentDir.c_str(), &up) == 0 &&
        (here.st_dev != up.st_dev || here.st_ino == up.st_ino))
      return refuse("it is a mount point, which the saved state cannot "
                    "replace; save it in a folder inside it");
  }
  if (!fs::is_directory(st))
    return refuse("it exists and is not a directory; muir replaces only a "
                  "state it saved before");
  auto manifest = readManifest(dir);
  if (!manifest) {
    llvm::consumeError(manifest.takeError());
    // An empty directory holds nothing to lose.
    std::error_code ec;
    if (fs::directory_iterator(dir, ec) == fs::directory_iterator() && !ec)
      return llvm::Error::success();
    return refuse("it is a directory that is not a muir state (no valid " +
                  Twine(kManifestName) +
                  "); muir replaces only a state it saved before");
  }
  std::vector<std::string> others = strangers(dir, *manifest);
  if (!others.empty()) {
    std::string list;
    for (size_t i = 0; i < others.size() && i < 3; ++i)
      list += (i ? ", '" : "'") + others[i] + "'";
    if (others.size() > 3)
      list += " and " + std::to_string(others.size() - 3) + " more";
    return refuse("the state directory also holds " + list +
                  ", not part of the state; move " +
                  (others.size() > 1 ? "them" : "it") +
                  " away or save elsewhere");
  }
  return llvm::Error::success();
}

llvm::Expected<OpenedState> OpenedState::open(StringRef dir) {
  int fd = ::open(dir.str().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return error("cannot resume from '" + dir + "': " +
                 (errno == ENOENT || errno == ENOTDIR
                      ? std::string("no such directory")
                      : std::string(std::strerror(errno))));
  return OpenedState(dir.str(), fd);
}

OpenedState::OpenedState(OpenedState &&other)
    : manifestHash(other.manifestHash), dir(std::move(other.dir)),
      fd(other.fd) {
  other.fd = -1;
}

OpenedState::~OpenedState() {
  if (fd >= 0)
    ::close(fd);
}

std::string OpenedState::path() const {
  return "/proc/self/fd/" + std::to_string(fd);
}

llvm::Expected<int64_t>
mlir::muir::state::checkState(OpenedState &opened,
                              const StepIdentity &identity,
                              const std::vector<StateTensor> &tensors,
                              int64_t moreSteps, HashShare share) {
  // Every read below goes through the directory opened once; messages
  // name it as the user gave it.
  std::string dir = opened.path();
  const std::string &shown = opened.given();
  auto refuse = [&](const Twine &why) {
    std::string text = why.str();
    for (size_t at; (at = text.find(dir)) != std::string::npos;)
      text.replace(at, dir.size(), shown);
    return error("cannot resume from '" + shown + "': " + text);
  };
  auto manifest = readManifest(dir, &opened.manifestHash);
  if (!manifest)
    return refuse(llvm::toString(manifest.takeError()) +
                  " (is it a state saved by --save-state?)");
  std::vector<std::string> diff = differences(manifest->identity, identity);
  // Another step: its tensors that differ, named first.
  if (!diff.empty() &&
      manifest->identity.layoutFreeHash != identity.layoutFreeHash) {
    std::vector<std::string> named = tensorDifferences(dir, *manifest, tensors);
    diff.insert(diff.begin(), named.begin(), named.end());
  }
  if (!diff.empty()) {
    std::string text = "it was saved for another step:";
    for (const std::string &d : diff)
      text += "\n  " + d;
    return refuse(text);
  }
  for (size_t i = 0; i < tensors.size(); ++i) {
    const std::string &name = tensors[i].name;
    auto want = manifest->tensors.find(name);
    if (want == manifest->tensors.end())
      return refuse("it has no tensor '" + name + "'");
    // A state's files are its own: a link (to /dev/zero, or a folder
    // outside the state) is refused, not followed, as --save-state refuses
    // to replace such a state.
    fs::file_status st;
    for (size_t slash = name.find('/'); slash != std::string::npos;
         slash = name.find('/', slash + 1))
      if (!fs::status(inDir(dir, name.substr(0, slash)), st,
                      /*follow=*/false) &&
          !fs::is_directory(st))
        return refuse("'" + name.substr(0, slash) +
                      "' is not a directory of the state (a symbolic link "
                      "or a file): a state's files are its own");
    if (!fs::status(inDir(dir, name + ".npy"), st, /*follow=*/false) &&
        !fs::is_regular_file(st))
      return refuse("'" + name + ".npy' is not a regular file");
    if (static_cast<int64_t>(i) % share.count != share.index) {
      if (!fs::exists(inDir(dir, name + ".npy")))
        return refuse("'" + name + ".npy' is missing or unreadable");
      continue;
    }
    auto got = fileHash(inDir(dir, name + ".npy"));
    if (!got) {
      llvm::consumeError(got.takeError());
      return refuse("'" + name + ".npy' is missing or unreadable (or not "
                    "a regular file)");
    }
    if (*got != want->second)
      return refuse("'" + name + ".npy' has changed since it was saved (hash " +
                    *got + ", saved " + want->second + ")");
  }
  if (manifest->tensors.size() != tensors.size())
    return refuse("it has " + Twine(manifest->tensors.size()) +
                  " tensors, this step " + Twine(tensors.size()));
  if (moreSteps > kMaxStep - 1 - manifest->step)
    return refuse("its step counter " + Twine(manifest->step) + " and " +
                  Twine(moreSteps) + " more steps pass 2^53, the largest " +
                  "step counter muir runs");
  return manifest->step;
}

llvm::Expected<std::string>
mlir::muir::state::beginSave(StringRef given) {
  if (llvm::Error e = checkSaveTarget(given))
    return std::move(e);
  StringRef dir = given.rtrim('/');
  // Built in a staging directory beside the state (same file system,
  // never $TMPDIR), which then takes the state's place in one rename: the
  // directory is the old state whole or the new one whole, also under a
  // signal (the runtime removes the staging directory).
  char staged[PATH_MAX] = {0};
  if (muirrt_stage_dir(dir.str().c_str(), staged, sizeof(staged)))
    return error("cannot save the state to '" + dir +
                 "': " + muirrt_last_error());
  return std::string(staged);
}

void mlir::muir::state::abortSave(StringRef staged) {
  muirrt_stage_abort(staged.str().c_str());
}

llvm::Error mlir::muir::state::finishSave(StringRef staged, StringRef given,
                                          const StepIdentity &identity,
                                          int64_t step,
                                          llvm::ArrayRef<std::string> names) {
  StringRef dir = given.rtrim('/');
  auto fail = [&](const Twine &why) {
    abortSave(staged);
    return error("cannot save the state to '" + dir + "': " + why);
  };
  Manifest m;
  m.identity = identity;
  m.step = step;
  for (const std::string &name : names) {
    auto hash = fileHash(inDir(staged, name + ".npy"));
    if (!hash)
      return fail(llvm::toString(hash.takeError()));
    m.tensors[name] = *hash;
  }
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(inDir(staged, kManifestName), ec);
    if (ec)
      return fail(ec.message());
    os << printManifest(m);
    os.close();
    if (os.has_error())
      return fail(os.error().message());
  }
  if (muirrt_stage_commit(staged.str().c_str(), dir.str().c_str()))
    return fail(muirrt_last_error());
  return llvm::Error::success();
}
