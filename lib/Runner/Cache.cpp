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
#include "muir/Step.h"
#include "muir/Support/Files.h"
#include "muir/Version.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/xxhash.h"
#include "llvm/TargetParser/Host.h"

#include <dlfcn.h>

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
  return !o.cacheDir.empty() && o.target.target == Target::Cpu && !o.trace &&
         !selfLibrary().empty();
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
  // The options a saved state names, and whether updates are probed.
  field(Twine("probe-updates=") + (p.probeUpdates ? "true" : "false"));
  for (const auto &[name, value] : identityOf(p, o.target))
    field(name + "=" + value);
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
        {"init_std", a.initStd}});
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
    if (a.role == MUIR_ROLE_HYPER)
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
  llvm::scope_exit removeObject([&] { llvm::sys::fs::remove(object); });
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
  if ((ec = llvm::sys::fs::rename(library, path))) {
    llvm::sys::fs::remove(library);
    return error("cache-dir: " + ec.message());
  }
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
      auto cached = open(path, options);
      if (cached)
        return cached;
      llvm::consumeError(cached.takeError());
    }
  }
  auto step = load(source, filename, options, diagnostics);
  if (!step)
    return step.takeError();
  if (llvm::Error e = (*step)->prepare(diagnostics))
    return std::move(e);
  return step;
}
