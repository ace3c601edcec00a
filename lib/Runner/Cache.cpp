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
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/xxhash.h"
#include "llvm/TargetParser/Host.h"

#include "muir-rt/Runtime.h"

#include <cstring>
#include <dlfcn.h>
#include <elf.h>

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
  // A called MoE layer's manifest would need its int64 tensors and token
  // count: layers compile each time for now.
  return !o.cacheDir.empty() && o.target.target == Target::Cpu && !o.trace &&
         o.layer.empty() && !selfLibrary().empty();
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
  field(Twine("layer-pass=") + (o.layerBackward ? "backward" : "forward"));
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

/// The record beside a cached library: its size and hash, written after
/// it, so that a library cut short (a killed compile, a full disk) or
/// changed is never loaded.
static std::string recordPath(StringRef library) {
  return (library + ".record").str();
}

/// The size and xxh3 hash of a file, as the record holds them.
static llvm::Expected<std::pair<uint64_t, std::string>>
sizeAndHash(StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return error("cannot read '" + path + "': " + buffer.getError().message());
  StringRef data = (*buffer)->getBuffer();
  return std::make_pair(
      static_cast<uint64_t>(data.size()),
      state::hex64(llvm::xxh3_64bits(llvm::arrayRefFromStringRef(data))));
}

/// Whether `path` is a whole shared library of this machine: an ELF file
/// whose headers and every loaded segment lie inside the file. dlopen maps
/// the segments, and a segment past the end of a cut file is a SIGBUS at
/// the first touch: checked here, before dlopen.
static llvm::Error checkLibraryFile(StringRef path) {
  auto bad = [&](const Twine &why) {
    return error("'" + path + "' is not a whole shared library (" + why +
                 ")");
  };
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return error("cannot read '" + path + "': " + buffer.getError().message());
  StringRef data = (*buffer)->getBuffer();
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

/// A cached library is loaded only if its record says this very file.
static llvm::Error checkCacheEntry(StringRef library) {
  std::string why;
  auto record = readBoundedFile(recordPath(library), why, 4096);
  if (!record)
    return error("no record beside it (" + why + ")");
  auto parsed = llvm::json::parse(record->getBuffer());
  if (!parsed) {
    llvm::consumeError(parsed.takeError());
    return error("its record is damaged");
  }
  const llvm::json::Object *o = parsed->getAsObject();
  std::optional<int64_t> size = o ? o->getInteger("size") : std::nullopt;
  std::optional<StringRef> hash = o ? o->getString("xxh3") : std::nullopt;
  if (!size || !hash)
    return error("its record is damaged");
  auto got = sizeAndHash(library);
  if (!got)
    return got.takeError();
  if (static_cast<int64_t>(got->first) != *size || got->second != *hash)
    return error("it is not the file its record describes (" +
                 Twine(got->first) + " bytes, hash " + got->second +
                 "; recorded " + Twine(*size) + " bytes, hash " + *hash + ")");
  return checkLibraryFile(library);
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

llvm::Error Step::writeCache(StringRef manifest) {
  Impl &I = *impl;
  ModuleOp module = *I.module;
  if (failed(addPackedEntry(module, entryName, manifest, metadata())))
    return error("cannot add the packed entry");
  std::error_code ec = llvm::sys::fs::create_directories(options.cacheDir);
  if (ec)
    return error("cache-dir '" + options.cacheDir + "': " + ec.message());
  // Object and library under temporary names, the library renamed into
  // place: a concurrent process sees a whole library or none.
  SmallString<256> object, library;
  int fd;
  if ((ec = llvm::sys::fs::createUniqueFile(
           options.cacheDir + "/muir-step-%%%%%%%%.o", fd, object)))
    return error("cache-dir '" + options.cacheDir + "': " + ec.message());
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
      why = "cannot write " + object.str().str() + ": " +
            os.error().message();
    // Checked: an unchecked stream error would end the process.
    os.clear_error();
    if (!why.empty())
      return error(why);
  }
  library = object;
  llvm::sys::path::replace_extension(library, ".so.tmp");
  muirrt_cleanup_register(library.c_str());
  llvm::scope_exit forgetLibrary(
      [&] { muirrt_cleanup_unregister(library.c_str()); });
  auto cc = llvm::sys::findProgramByName("cc");
  if (!cc)
    return error("caching the compiled step needs a C compiler driver (cc) "
                 "to link it; install one (Debian: gcc) or leave cache-dir "
                 "out");
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
  std::vector<StringRef> refs(argv.begin(), argv.end());
  std::string why;
  if (llvm::sys::ExecuteAndWait(*cc, refs, std::nullopt, {}, 0, 0, &why) !=
      0) {
    llvm::sys::fs::remove(library);
    return error("linking the cached step failed" +
                 (why.empty() ? std::string() : ": " + why));
  }
  std::string path = cachePath(options.cacheDir, cacheKey(I.sourceText,
                                                          I.filename,
                                                          options));
  // The record (size and hash) under a temporary name too; the library
  // goes in place first, the record last: an entry is loaded only once
  // both are there and agree.
  auto got = sizeAndHash(library);
  if (!got) {
    llvm::sys::fs::remove(library);
    return got.takeError();
  }
  SmallString<256> record;
  if ((ec = llvm::sys::fs::createUniqueFile(
           options.cacheDir + "/muir-step-%%%%%%%%.record.tmp", fd, record))) {
    llvm::sys::fs::remove(library);
    return error("cache-dir '" + options.cacheDir + "': " + ec.message());
  }
  muirrt_cleanup_register(record.c_str());
  llvm::scope_exit removeRecord([&] {
    llvm::sys::fs::remove(record);
    muirrt_cleanup_unregister(record.c_str());
  });
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << llvm::json::Value(llvm::json::Object{
        {"size", static_cast<int64_t>(got->first)}, {"xxh3", got->second}});
    os.close();
    bool failed = os.has_error();
    os.clear_error();
    if (failed) {
      llvm::sys::fs::remove(library);
      return error("cache-dir: cannot write " + record.str());
    }
  }
  if ((ec = llvm::sys::fs::rename(library, path))) {
    llvm::sys::fs::remove(library);
    return error("cache-dir: " + ec.message());
  }
  // The library is in place (and this process loads it by its path); an
  // entry without its record is compiled again by the next process.
  if ((ec = llvm::sys::fs::rename(record, recordPath(path))))
    llvm::WithColor::warning(llvm::errs(), "muir")
        << "cache-dir: cannot put the record of " << path
        << " in place (" << ec.message()
        << "); the step will be compiled again next time\n";
  return openLibrary(path);
}

llvm::Error Step::openLibrary(StringRef path) {
  Impl &I = *impl;
  I.library = dlopen(path.str().c_str(), RTLD_NOW | RTLD_LOCAL);
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
Step::open(StringRef path, const StepOptions &options) {
  // A cut or damaged file would be a SIGBUS inside dlopen: refused first
  // (with a record beside it, a cache entry, also its size and hash).
  if (llvm::sys::fs::exists(recordPath(path))) {
    if (llvm::Error e = checkCacheEntry(path))
      return error("cannot load the step '" + path +
                   "': " + llvm::toString(std::move(e)));
  } else if (llvm::Error e = checkLibraryFile(path)) {
    return error("cannot load the step: " + llvm::toString(std::move(e)));
  }
  std::unique_ptr<Step> step(new Step());
  step->options = options;
  step->impl->library = dlopen(path.str().c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!step->impl->library)
    return error(Twine("cannot load the cached step: ") + dlerror());
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
  ::muir::step::keepFreedMemory();
  if (llvm::Error e = step->openLibrary(path))
    return std::move(e);
  return step;
}

llvm::Expected<std::unique_ptr<Step>>
Step::compile(StringRef source, StringRef filename, const StepOptions &options,
              llvm::raw_ostream &diagnostics) {
  // A cached library of this very step (source, options, build, host)
  // needs no compiler; a damaged one is compiled again.
  if (cacheableWith(options)) {
    std::string path =
        cachePath(options.cacheDir, cacheKey(source, filename, options));
    if (llvm::sys::fs::exists(path)) {
      // A damaged entry (cut short, no record, another file) is never
      // loaded: the step is compiled again and its entry renamed over it.
      // Nothing is removed here: another process may be between putting
      // its library and its record in place.
      if (llvm::Error e = checkCacheEntry(path)) {
        llvm::consumeError(std::move(e));
      } else {
        auto cached = open(path, options);
        if (cached)
          return cached;
        llvm::consumeError(cached.takeError());
      }
    }
  }
  auto step = load(source, filename, options, diagnostics);
  if (!step)
    return step.takeError();
  if (llvm::Error e = (*step)->prepare(diagnostics))
    return std::move(e);
  return step;
}
