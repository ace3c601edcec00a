//===- Cache.cpp - compiled steps kept as shared libraries -----------------===//
//
// The step library's cache (StepOptions::cacheDir): a compiled CPU step is
// linked into a shared library named by a hash of everything that makes
// its code, with JSON metadata of its arguments; Step::compile loads it
// instead of compiling, and Step::open loads one by path.
//
//===----------------------------------------------------------------------===//
#include "StepImpl.h"

#include "muir/Runner/State.h"
#include "muir/Runner/Role.h"
#include "muir/Support/Files.h"
#include "muir/Version.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/xxhash.h"
#include "llvm/TargetParser/Host.h"

#include "muir-rt/Runtime.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <mutex>

#include <dlfcn.h>
#include <elf.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace mlir;
using namespace mlir::muir;
using namespace mlir::muir::runner;
using llvm::SmallString;
using llvm::SmallVector;
using llvm::StringRef;
using llvm::Twine;

//===----------------------------------------------------------------------===//
// The compiled-step cache: a shared library per step, loaded with dlopen
//===----------------------------------------------------------------------===//

/// The shared library this code is in (empty when it is linked into an
/// executable, whose symbols a cached library could not bind to).
static std::string selfLibrary() {
  Dl_info info;
  if (!dladdr(reinterpret_cast<void *>(&selfLibrary), &info) ||
      !info.dli_fname)
    return "";
  std::string path = info.dli_fname;
  std::string exe = llvm::sys::fs::getMainExecutable(
      nullptr, reinterpret_cast<void *>(&selfLibrary));
  if (!StringRef(path).ends_with(".so") || samePath(path, exe))
    return "";
  return path;
}

/// The cache keeps CPU steps without fingerprint tracing, compiled in a
/// shared library (the cached one binds to it).
bool runner::cacheableWith(const StepOptions &o) {
  // A called MoE layer's pass too: the manifest holds its int64 tensors
  // and whether it reads the token count, the key its layer and pass.
  return !o.cacheDir.empty() && o.target.target == Target::Cpu && !o.trace &&
         !selfLibrary().empty() && trustedCacheDir(o.cacheDir);
}

/// Why `dir` may not hold code this process runs, or "" when it may: it is
/// a directory owned by this user that no one else can write (as ssh and
/// pip ask of theirs). A missing one is made, 0700.
static std::string cacheDirDistrust(StringRef dir) {
  std::error_code ec;
  SmallString<256> parent(dir);
  llvm::sys::path::remove_filename(parent);
  if (!parent.empty() && (ec = llvm::sys::fs::create_directories(parent)))
    return "cannot create its folder: " + ec.message();
  if ((ec = llvm::sys::fs::create_directory(dir, /*IgnoreExisting=*/true,
                                            llvm::sys::fs::owner_all)))
    return "cannot create it: " + ec.message();
  struct stat st;
  if (::stat(dir.str().c_str(), &st) != 0)
    return std::string("cannot stat it: ") + std::strerror(errno);
  if (!S_ISDIR(st.st_mode))
    return "it is not a directory";
  if (st.st_uid != ::geteuid())
    return "it is owned by another user (uid " + std::to_string(st.st_uid) +
           ")";
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%o", st.st_mode & 07777);
    return std::string("it is writable by group or others (mode ") + mode +
           ")";
  }
  return "";
}

bool runner::trustedCacheDir(StringRef dir) {
  // Decided once per directory and process, and said once.
  static std::mutex mutex;
  static llvm::StringMap<bool> decided;
  std::lock_guard<std::mutex> lock(mutex);
  auto [it, fresh] = decided.try_emplace(dir, true);
  if (!fresh)
    return it->second;
  std::string why = cacheDirDistrust(dir);
  if (why.empty())
    return true;
  it->second = false;
  llvm::WithColor::warning(llvm::errs(), "muir")
      << "cache-dir '" << dir << "' is not used: " << why
      << "; a compiled step is loaded only from a directory of this user's "
         "that no one else can write (chmod go-w it, or give another "
         "cache-dir); compiling without the cache\n";
  return false;
}

bool Step::cacheable() const { return cacheableWith(options); }

/// This build of the library: its file, size and time (a rebuild changes
/// it even when the version does not).
static std::string buildStamp() {
  std::string self = selfLibrary();
  llvm::sys::fs::file_status st;
  if (self.empty() || llvm::sys::fs::status(self, st))
    return MUIR_VERSION_STRING;
  return (Twine(MUIR_VERSION_STRING) + " " + self + " " +
          Twine(st.getSize()) + " " +
          Twine(st.getLastModificationTime().time_since_epoch().count()))
      .str();
}

/// What the cached library depends on: the source, the options that change
/// the program, the build (this library's file, size and time), the host.
std::string runner::cacheKey(StringRef source, StringRef filename,
                            const StepOptions &o) {
  std::string text;
  llvm::raw_string_ostream os(text);
  const PipelineOptions &p = o.pipeline;
  // Each field NUL-terminated, so that no two differ only in where one
  // ends and the next begins.
  auto field = [&](const Twine &value) { os << value << '\0'; };
  field(MUIR_VERSION_STRING);
  field(source);
  field(llvm::sys::path::extension(filename));
  // Every pipeline option (muir/Driver/Options.def), and the target's
  // that a saved state names.
  for (const std::string &text : optionTexts(p))
    field(text);
  for (const auto &[name, value] : identityOf(p, o.target))
    field(name + "=" + value);
  field("layer=" + o.layer);
  field("layer-pass=" + stringify(o.layerPass));
  field(llvm::sys::getHostCPUName());
  for (const auto &[feature, on] : llvm::sys::getHostCPUFeatures())
    os << (on ? "+" : "-") << feature << ",";
  os << '\0';
  field(buildStamp());
  return state::hex64(llvm::xxh3_64bits(llvm::arrayRefFromStringRef(text)));
}

std::string runner::cachePath(StringRef dir, StringRef key) {
  SmallString<256> p(dir);
  llvm::sys::path::append(p, "muir-step-" + key + ".so");
  return p.str().str();
}

/// The record beside a cached library: its key, size and hash, written
/// after it, so that a library cut short (a killed compile, a full disk),
/// changed, or put under another entry's name is never loaded.
static std::string recordPath(StringRef library) {
  return (library + ".record").str();
}

/// The key a cache entry's name holds ("muir-step-<key>.so"), or "" for a
/// library named otherwise.
static StringRef keyOfName(StringRef library) {
  StringRef name = llvm::sys::path::filename(library);
  if (!name.consume_front("muir-step-") || !name.consume_back(".so"))
    return "";
  return name;
}

/// The xxh3 hash of bytes, as the record holds it.
static std::string bytesHash(StringRef data) {
  return state::hex64(llvm::xxh3_64bits(llvm::arrayRefFromStringRef(data)));
}

/// Whether `data` (the file `path`) is a whole shared library of this
/// machine: an ELF file whose headers and every loaded segment lie inside
/// the file. dlopen maps the segments, and a segment past the end of a cut
/// file is a SIGBUS at the first touch: checked here, before dlopen.
static llvm::Error checkLibraryData(StringRef path, StringRef data) {
  auto bad = [&](const Twine &why) {
    return error("'" + path + "' is not a whole shared library (" + why +
                 ")");
  };
  uint64_t size = data.size();
  if (size < sizeof(Elf64_Ehdr))
    return bad(size == 0 ? "it is empty" : "it ends within the ELF header");
  Elf64_Ehdr eh;
  std::memcpy(&eh, data.data(), sizeof(eh));
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_type != ET_DYN)
    return bad("not a 64-bit ELF shared object");
  auto within = [&](uint64_t offset, uint64_t count, uint64_t each) {
    return offset <= size && (each == 0 || count <= (size - offset) / each);
  };
  if (eh.e_phentsize != sizeof(Elf64_Phdr) ||
      !within(eh.e_phoff, eh.e_phnum, sizeof(Elf64_Phdr)))
    return bad("its program headers lie past its end");
  if (eh.e_shoff && !within(eh.e_shoff, eh.e_shnum, eh.e_shentsize))
    return bad("its section headers lie past its end");
  for (uint16_t i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    std::memcpy(&ph, data.data() + eh.e_phoff + i * sizeof(Elf64_Phdr),
                sizeof(ph));
    if (ph.p_type == PT_LOAD && !within(ph.p_offset, ph.p_filesz, 1))
      return bad("a loaded segment lies past its end: the file is cut short");
  }
  return llvm::Error::success();
}

namespace {
/// A library opened once, whose checks all read this descriptor. dlopen
/// then loads it by its path (a /proc/self/fd/N name would be reused by
/// the next library given the same descriptor number, and glibc returns
/// an already loaded library of the same name), and sameFile() confirms
/// that the path still names the file checked. A trusted entry's
/// directory is this user's alone, so no one else can swap it between.
struct OpenedLibrary {
  int fd = -1;
  OpenedLibrary() = default;
  OpenedLibrary(const OpenedLibrary &) = delete;
  OpenedLibrary &operator=(const OpenedLibrary &) = delete;
  ~OpenedLibrary() {
    if (fd >= 0)
      ::close(fd);
  }
  /// Whether `path` names the file this descriptor holds.
  bool sameFile(StringRef path) const {
    struct stat a, b;
    return ::fstat(fd, &a) == 0 && ::stat(path.str().c_str(), &b) == 0 &&
           a.st_dev == b.st_dev && a.st_ino == b.st_ino;
  }
};
} // namespace

/// Opens the library `path` as `origin` and checks it: with a record
/// beside it (a cache entry), the record's key (when the name holds one),
/// size and hash; in any case its ELF headers and segments.
static llvm::Error openCheckedLibrary(StringRef path, FileOrigin origin,
                                      OpenedLibrary &out) {
  std::string why;
  out.fd = openFoundFile(path, origin, why);
  if (out.fd < 0)
    return error(why);
  struct stat st;
  if (::fstat(out.fd, &st) != 0)
    return error("cannot stat '" + path + "'");
  if (static_cast<uint64_t>(st.st_size) > kMaxInputBytes)
    return error("'" + path + "' is larger than the 256 MiB limit");
  auto buffer = llvm::MemoryBuffer::getOpenFile(
      out.fd, path, st.st_size, /*RequiresNullTerminator=*/false);
  if (!buffer)
    return error("cannot read '" + path + "': " + buffer.getError().message());
  StringRef data = (*buffer)->getBuffer();
  std::string record = recordPath(path);
  llvm::sys::fs::file_status rst;
  bool hasRecord =
      !llvm::sys::fs::status(record, rst, /*follow=*/false);
  if (!hasRecord && origin == FileOrigin::Trusted)
    return error("no record beside it");
  if (hasRecord) {
    auto text = readBoundedFile(record, why, 4096, origin == FileOrigin::Named
                                                       ? FileOrigin::Found
                                                       : origin);
    if (!text)
      return error("its record: " + why);
    auto parsed = llvm::json::parse(text->getBuffer());
    if (!parsed) {
      llvm::consumeError(parsed.takeError());
      return error("its record is damaged");
    }
    const llvm::json::Object *o = parsed->getAsObject();
    std::optional<int64_t> size = o ? o->getInteger("size") : std::nullopt;
    std::optional<StringRef> hash = o ? o->getString("xxh3") : std::nullopt;
    std::optional<StringRef> key = o ? o->getString("key") : std::nullopt;
    if (!size || !hash || !key)
      return error("its record is damaged");
    StringRef named = keyOfName(path);
    if (!named.empty() && *key != named)
      return error("its record is of another entry (key " + *key + ")");
    std::string got = bytesHash(data);
    if (static_cast<int64_t>(data.size()) != *size || got != *hash)
      return error("it is not the file its record describes (" +
                   Twine(data.size()) + " bytes, hash " + got +
                   "; recorded " + Twine(*size) + " bytes, hash " + *hash +
                   ")");
  }
  return checkLibraryData(path, data);
}

std::string Step::metadata() const {
  llvm::json::Array arguments, observations, gridList;
  for (const Argument &a : args) {
    llvm::json::Array splits;
    for (const Split &sp : a.splits)
      splits.push_back(llvm::json::Array{sp.dim, sp.mask});
    arguments.push_back(llvm::json::Object{
        {"name", a.name},
        {"role", a.role},
        {"shape", llvm::json::Array(a.shape)},
        {"global_shape", llvm::json::Array(a.globalShape)},
        {"splits", std::move(splits)},
        {"default", a.defaultValue},
        {"hyper_index", a.hyperIndex},
        {"updated", a.updated},
        {"init_std", a.initStd},
        {"dtype", a.f64 ? "f64" : a.i64 ? "i64" : "f32"}});
  }
  for (const auto &[slot, o] : obs)
    observations.push_back(llvm::json::Object{
        {"slot", slot}, {"label", o.label}, {"shape", llvm::json::Array(o.shape)}});
  for (const Folding &f : grids)
    gridList.push_back(llvm::json::Object{{"name", f.name},
                                       {"axes", llvm::json::Array(f.axes)},
                                       {"sizes", llvm::json::Array(f.sizes)}});
  llvm::json::Object flags;
  for (const auto &[k, v] : id.flags)
    flags[k] = v;
  llvm::json::Object root{
      {"format", "muir-step-1"},
      {"library", buildStamp()},
      {"entry", entryName},
      {"devices", numDevices},
      {"arguments", std::move(arguments)},
      {"observations", std::move(observations)},
      {"grids", std::move(gridList)},
      {"computed_grads",
       llvm::json::Array(std::vector<std::string>(computedGrads.begin(),
                                                  computedGrads.end()))},
      {"counter_used", counterUsed},
      {"token_count", tokenCount},
      {"token_bound", tokenBound},
      {"hyper_used", hyperUsed},
      {"identity", llvm::json::Object{{"step", id.stepHash},
                                      {"grid", id.grid},
                                      {"build", id.build},
                                      {"flags", std::move(flags)}}}};
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::json::Value(std::move(root));
  return text;
}

llvm::Error Step::readMetadata(StringRef text) {
  auto bad = [&](const Twine &why) {
    return error("the cached step's metadata is damaged (" + why +
                 "); delete the cache file");
  };
  auto parsed = llvm::json::parse(text);
  if (!parsed)
    return bad(llvm::toString(parsed.takeError()));
  const llvm::json::Object *root = parsed->getAsObject();
  if (!root || root->getString("format") != "muir-step-1")
    return bad("not muir-step-1");
  if (root->getString("library") != buildStamp())
    return error("the compiled step was made by another build of muir (" +
                 root->getString("library").value_or("?") + "; this is " +
                 buildStamp() + "); compile it again");
  auto ints = [](const llvm::json::Array *a) {
    SmallVector<int64_t> out;
    for (const llvm::json::Value &v : a ? *a : llvm::json::Array())
      out.push_back(v.getAsInteger().value_or(0));
    return out;
  };
  entryName = root->getString("entry").value_or("").str();
  numDevices = root->getInteger("devices").value_or(1);
  counterUsed = root->getBoolean("counter_used").value_or(true);
  // A layer's pass: the counter is the call's token count (0 to the bound).
  tokenCount = root->getBoolean("token_count").value_or(false);
  tokenBound = root->getInteger("token_bound").value_or(0);
  hyperUsed = root->getBoolean("hyper_used").value_or(true);
  const llvm::json::Array *list = root->getArray("arguments");
  if (!list)
    return bad("no arguments");
  for (const llvm::json::Value &v : *list) {
    const llvm::json::Object *o = v.getAsObject();
    if (!o)
      return bad("an argument is not an object");
    Argument a;
    a.name = o->getString("name").value_or("").str();
    a.role = static_cast<int32_t>(o->getInteger("role").value_or(0));
    a.shape = ints(o->getArray("shape"));
    a.globalShape = ints(o->getArray("global_shape"));
    if (const llvm::json::Array *splits = o->getArray("splits"))
      for (const llvm::json::Value &sp : *splits) {
        SmallVector<int64_t> pair = ints(sp.getAsArray());
        if (pair.size() != 2)
          return bad("a split is not [dim, mask]");
        a.splits.push_back({pair[0], pair[1]});
      }
    a.defaultValue = o->getNumber("default").value_or(0);
    a.hyperIndex = static_cast<int32_t>(o->getInteger("hyper_index").value_or(-1));
    a.updated = o->getBoolean("updated").value_or(false);
    a.initStd = o->getNumber("init_std").value_or(0);
    // The element type: what binds, copies and checks of the tensor read.
    std::optional<StringRef> dtype = o->getString("dtype");
    if (!dtype || (*dtype != "f32" && *dtype != "f64" && *dtype != "i64"))
      return bad("argument '" + a.name + "' has no dtype f32, f64 or i64");
    a.f64 = *dtype == "f64";
    a.i64 = *dtype == "i64";
    if (a.role == RoleHyper)
      hyperArgs.push_back(static_cast<int32_t>(args.size()));
    args.push_back(std::move(a));
  }
  if (const llvm::json::Array *list = root->getArray("observations"))
    for (const llvm::json::Value &v : *list)
      if (const llvm::json::Object *o = v.getAsObject())
        obs[o->getInteger("slot").value_or(0)] = {
            o->getString("label").value_or("").str(),
            ints(o->getArray("shape"))};
  if (const llvm::json::Array *list = root->getArray("grids"))
    for (const llvm::json::Value &v : *list)
      if (const llvm::json::Object *o = v.getAsObject()) {
        Folding f;
        f.name = o->getString("name").value_or("").str();
        if (const llvm::json::Array *axes = o->getArray("axes"))
          for (const llvm::json::Value &a : *axes)
            f.axes.push_back(a.getAsString().value_or("").str());
        f.sizes = ints(o->getArray("sizes"));
        grids.push_back(std::move(f));
      }
  if (const llvm::json::Array *list = root->getArray("computed_grads"))
    for (const llvm::json::Value &v : *list)
      computedGrads.insert(v.getAsString().value_or("").str());
  if (const llvm::json::Object *o = root->getObject("identity")) {
    id.stepHash = o->getString("step").value_or("").str();
    id.grid = o->getString("grid").value_or("").str();
    id.build = o->getString("build").value_or("").str();
    if (const llvm::json::Object *flags = o->getObject("flags"))
      for (const auto &[k, v] : *flags)
        id.flags[k.str()] = v.getAsString().value_or("").str();
  }
  bound.assign(args.size(), nullptr);
  return llvm::Error::success();
}

/// The temporaries a cache write makes beside its entry:
/// "muir-step-tmp-<pid>-XXXXXXXX" with ".o", ".so.tmp" or ".record.tmp".
static constexpr StringRef kTempPrefix = "muir-step-tmp-";

/// Temporaries in `dir` of processes that no longer run (killed with
/// SIGKILL before they could remove them): removed, as the staging
/// directories of dead runs are (muirrt_stage_dir).
static void sweepStaleTemporaries(StringRef dir) {
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec)) {
    StringRef name = llvm::sys::path::filename(it->path());
    if (!name.consume_front(kTempPrefix))
      continue;
    long long pid = 0;
    if (name.consumeInteger(10, pid) || pid <= 0 || !name.starts_with("-"))
      continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH)
      continue;
    llvm::sys::fs::remove(it->path());
  }
}

/// Runs `argv` (a program and its arguments) to its end, its output
/// captured (the last 4 KiB kept, in `output`), in a process group of its
/// own watched by a guard process: when this process dies, by any signal,
/// SIGKILL included, the guard (told by PR_SET_PDEATHSIG) kills the group,
/// so no compiler driver or linker outlives it. Returns the exit status,
/// or -1 with `output` saying why.
static int runGuarded(const std::vector<std::string> &argv,
                      std::string &output) {
  // Everything the children use is made before fork: after it, a
  // multi-threaded process may only make system calls.
  std::vector<char *> cargv;
  for (const std::string &a : argv)
    cargv.push_back(const_cast<char *>(a.c_str()));
  cargv.push_back(nullptr);
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) {
    output = std::string("cannot make a pipe: ") + std::strerror(errno);
    return -1;
  }
  pid_t parent = ::getpid();
  pid_t guard = ::fork();
  if (guard < 0) {
    output = std::string("cannot start ") + argv[0] + ": " +
             std::strerror(errno);
    ::close(pipefd[0]);
    ::close(pipefd[1]);
    return -1;
  }
  if (guard == 0) {
    // The guard: leader of the group the program runs in.
    ::setpgid(0, 0);
    struct sigaction kill_group = {};
    kill_group.sa_handler = [](int) {
      ::kill(0, SIGKILL);
      ::_exit(128 + SIGKILL);
    };
    ::sigaction(SIGTERM, &kill_group, nullptr);
    ::sigaction(SIGINT, &kill_group, nullptr);
    ::sigaction(SIGHUP, &kill_group, nullptr);
    sigset_t all;
    sigemptyset(&all);
    ::sigprocmask(SIG_SETMASK, &all, nullptr);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) // the parent died before the line above
      ::_exit(127);
    pid_t child = ::fork();
    if (child == 0) {
      struct sigaction dfl = {};
      dfl.sa_handler = SIG_DFL;
      ::sigaction(SIGTERM, &dfl, nullptr);
      ::sigaction(SIGINT, &dfl, nullptr);
      ::sigaction(SIGHUP, &dfl, nullptr);
      ::dup2(pipefd[1], 1);
      ::dup2(pipefd[1], 2);
      ::execv(cargv[0], cargv.data());
      ::_exit(127);
    }
    ::close(pipefd[1]);
    int status = 0;
    while (child > 0 && ::waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    ::_exit(child < 0 ? 127
                      : WIFEXITED(status) ? WEXITSTATUS(status)
                                          : 128 + WTERMSIG(status));
  }
  ::close(pipefd[1]);
  char buf[4096];
  while (true) {
    ssize_t n = ::read(pipefd[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    output.append(buf, n);
    if (output.size() > 4096)
      output.erase(0, output.size() - 4096);
  }
  ::close(pipefd[0]);
  int status = 0;
  while (::waitpid(guard, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/// The linker's reason in its output: its last line but the compiler
/// driver's summary ("collect2: error: ld returned 1 exit status"), e.g.
/// "ld: final link failed: No space left on device".
static std::string lastLine(StringRef text) {
  SmallVector<StringRef> lines;
  text.split(lines, '\n', -1, /*KeepEmpty=*/false);
  while (!lines.empty() && (lines.back().trim().empty() ||
                            lines.back().starts_with("collect2:")))
    lines.pop_back();
  return lines.empty() ? std::string() : lines.back().trim().str();
}

llvm::Error Step::writeCache(StringRef manifest) {
  Impl &I = *impl;
  ModuleOp module = *I.module;
  if (failed(addPackedEntry(module, entryName, manifest, metadata())))
    return error("cannot add the packed entry");
  sweepStaleTemporaries(options.cacheDir);
  // Object and library under temporary names that hold this process's id
  // (so a later write can tell a dead process's from a live one's), the
  // library renamed into place: a concurrent process sees a whole library
  // or none.
  std::string temp = (options.cacheDir + "/" + kTempPrefix +
                      Twine(::getpid()) + "-%%%%%%%%")
                         .str();
  SmallString<256> object, library;
  int fd;
  std::error_code ec;
  if ((ec = llvm::sys::fs::createUniqueFile(temp + ".o", fd, object,
                                            llvm::sys::fs::OF_None, 0600)))
    return error("cannot make a file in it: " + ec.message());
  // Temporaries go on a signal too (the runtime's cleanup on SIGINT,
  // SIGTERM, SIGHUP), not only on an error.
  muirrt_cleanup_register(object.c_str());
  llvm::scope_exit removeObject([&] {
    llvm::sys::fs::remove(object);
    muirrt_cleanup_unregister(object.c_str());
  });
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    std::string why = emitObject(module, "native", os);
    os.close();
    if (why.empty() && os.has_error())
      why = "cannot write its object file: " + os.error().message();
    // Checked: an unchecked stream error would end the process.
    os.clear_error();
    if (!why.empty())
      return error(why);
  }
  library = object;
  llvm::sys::path::replace_extension(library, ".so.tmp");
  muirrt_cleanup_register(library.c_str());
  llvm::scope_exit removeLibrary([&] {
    llvm::sys::fs::remove(library);
    muirrt_cleanup_unregister(library.c_str());
  });
  auto cc = llvm::sys::findProgramByName("cc");
  if (!cc)
    return error("linking it needs a C compiler driver (cc); install one "
                 "(Debian: gcc) or leave cache-dir out");
  std::string self = selfLibrary();
  SmallString<256> selfDir(self);
  llvm::sys::path::remove_filename(selfDir);
  // The step's runtime calls bind to this very library.
  std::vector<std::string> argv = {*cc,
                                   "-shared",
                                   "-o",
                                   library.str().str(),
                                   object.str().str(),
                                   self,
                                   "-Wl,-rpath," + selfDir.str().str(),
                                   "-lm"};
  std::string output;
  if (int rc = runGuarded(argv, output)) {
    std::string why = lastLine(output);
    return error("linking it failed (" +
                 (why.empty() ? cc.get() + " exited with " + Twine(rc).str()
                              : why) +
                 ")");
  }
  std::string key = cacheKey(I.sourceText, I.filename, options);
  std::string path = cachePath(options.cacheDir, key);
  // The record (key, size and hash) under a temporary name too; the
  // library goes in place first, the record last: an entry is loaded only
  // once both are there and agree.
  std::string why;
  auto linked = readBoundedFile(library, why, kMaxInputBytes,
                                FileOrigin::Trusted);
  if (!linked)
    return error(why);
  SmallString<256> record;
  if ((ec = llvm::sys::fs::createUniqueFile(temp + ".record.tmp", fd, record,
                                            llvm::sys::fs::OF_None, 0600)))
    return error("cannot make a file in it: " + ec.message());
  muirrt_cleanup_register(record.c_str());
  llvm::scope_exit removeRecord([&] {
    llvm::sys::fs::remove(record);
    muirrt_cleanup_unregister(record.c_str());
  });
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << llvm::json::Value(llvm::json::Object{
        {"key", key},
        {"size", static_cast<int64_t>(linked->getBufferSize())},
        {"xxh3", bytesHash(linked->getBuffer())}});
    os.close();
    bool failed = os.has_error();
    std::string message = failed ? os.error().message() : "";
    os.clear_error();
    if (failed)
      return error("cannot write its record: " + message);
  }
  // What this process put in place, to tell another writer's entry from a
  // failure below.
  llvm::sys::fs::UniqueID ours;
  if ((ec = llvm::sys::fs::getUniqueID(library, ours)))
    return error("cannot read it back: " + ec.message());
  if ((ec = llvm::sys::fs::rename(library, path)))
    return error("cannot put it in place: " + ec.message());
  // Another process writing the same entry (the ranks of one job compile
  // the same step) may rename its own over this one at any point below:
  // the entry is then whole and the same step, which later processes
  // load; this one runs from the JIT without a warning.
  auto replaced = [&] {
    llvm::sys::fs::UniqueID now;
    return !llvm::sys::fs::getUniqueID(path, now) && now != ours;
  };
  // The library is in place (and this process loads it); an entry
  // without its record is compiled again by the next process.
  if ((ec = llvm::sys::fs::rename(record, recordPath(path))))
    llvm::WithColor::warning(llvm::errs(), "muir")
        << "cache-dir: cannot put the record of " << path
        << " in place (" << ec.message()
        << "); the step will be compiled again next time\n";
  OpenedLibrary opened;
  if (llvm::Error e = openCheckedLibrary(path, FileOrigin::Trusted, opened)) {
    cacheRaced = replaced();
    return e;
  }
  if (llvm::Error e = openLibrary(path, path))
    return e;
  if (!opened.sameFile(path)) {
    cacheRaced = replaced();
    return error("'" + path + "' was replaced while it was loaded");
  }
  return llvm::Error::success();
}

llvm::Error Step::openLibrary(StringRef loadPath, StringRef path) {
  Impl &I = *impl;
  I.library = dlopen(loadPath.str().c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!I.library)
    return error(Twine("cannot load the cached step: ") + dlerror());
  I.packedEntry = reinterpret_cast<void (*)(void **)>(
      dlsym(I.library, "muir_step_packed"));
  if (!I.packedEntry)
    return error("the cached step " + path + " lacks muir_step_packed");
  I.hyperValues = defaultHyper();
  return llvm::Error::success();
}

llvm::Expected<std::unique_ptr<Step>>
Step::openFrom(StringRef path, bool trusted, const StepOptions &options) {
  // Checked (openCheckedLibrary) through one descriptor, which both loads
  // below use.
  OpenedLibrary opened;
  if (llvm::Error e = openCheckedLibrary(
          path, trusted ? FileOrigin::Trusted : FileOrigin::Found, opened))
    return error("cannot load the step: " + llvm::toString(std::move(e)));
  std::string loadPath = path.str();
  std::unique_ptr<Step> step(new Step());
  step->options = options;
  // A step library holds host code: the CPU backend runs it, whatever
  // target the options name.
  step->impl->backend = createCpuBackend();
  step->impl->library = dlopen(loadPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!step->impl->library)
    return error(Twine("cannot load the cached step: ") + dlerror());
  if (!opened.sameFile(path))
    return error("cannot load the step: '" + path +
                 "' was replaced while it was loaded");
  auto *text = reinterpret_cast<const char *>(
      dlsym(step->impl->library, "muir_step_metadata"));
  if (!text)
    return error("the cached step " + path + " lacks muir_step_metadata");
  if (llvm::Error e = step->readMetadata(text))
    return std::move(e);
  dlclose(step->impl->library);
  step->impl->library = nullptr;
  step->prepared = true;
  if (llvm::Error e = step->joinRanks())
    return std::move(e);
  if (llvm::Error e = step->openLibrary(loadPath, path))
    return std::move(e);
  if (!opened.sameFile(path))
    return error("cannot load the step: '" + path +
                 "' was replaced while it was loaded");
  return step;
}

llvm::Expected<std::unique_ptr<Step>>
Step::open(StringRef path, const StepOptions &options) {
  // A library the user names: a regular file (a cut or damaged one would
  // be a SIGBUS inside dlopen: refused first; with a record beside it, a
  // cache entry, also its key, size and hash).
  return openFrom(path, /*trusted=*/false, options);
}

llvm::Expected<std::unique_ptr<Step>>
Step::compile(StringRef source, StringRef filename, const StepOptions &options,
              llvm::raw_ostream &diagnostics) {
  // A cached library of this very step (source, options, build, host)
  // needs no compiler; one that cannot be trusted or is damaged is
  // compiled again, and its entry renamed over it. Nothing is removed
  // here: another process may be between putting its library and its
  // record in place.
  if (cacheableWith(options)) {
    std::string path =
        cachePath(options.cacheDir, cacheKey(source, filename, options));
    llvm::sys::fs::file_status st;
    if (!llvm::sys::fs::status(path, st, /*follow=*/false)) {
      auto cached = openFrom(path, /*trusted=*/true, options);
      if (cached)
        return cached;
      llvm::WithColor::warning(llvm::errs(), "muir")
          << "the cached step is not used: "
          << llvm::toString(cached.takeError())
          << "; compiling it again\n";
    }
  }
  auto step = load(source, filename, options, diagnostics);
  if (!step)
    return step.takeError();
  if (llvm::Error e = (*step)->prepare(diagnostics))
    return std::move(e);
  return step;
}
