//===- StepCore.cpp - running a compiled step, without LLVM ---------------===//
//
// Plain C++17 (no LLVM, no MLIR): bench/gpu/check.sh compiles this file on
// the GPU machine into muir-step-runner. See muir/Runner/StepCore.h.
//
//===----------------------------------------------------------------------===//
#include "muir/Runner/StepCore.h"

#include "muir/Runner/Role.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <sstream>
#include <type_traits>

using namespace muir::step;
using namespace mlir::muir::runner;

std::string CudaRuntime::load(const std::string &path, bool global) {
  handle = dlopen(path.c_str(), RTLD_NOW | (global ? RTLD_GLOBAL : RTLD_LOCAL));
  if (!handle)
    return std::string("cannot load the CUDA runtime: ") + dlerror() +
           " (build with the CUDA toolkit, or set MUIR_CUDA_RUNTIME)";
  std::string missing;
  auto sym = [&](const char *name, auto &fn) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
        dlsym(handle, name));
    if (!fn)
      missing += std::string(missing.empty() ? "" : ", ") + name;
  };
#define MUIR_RT_CUDA_HOST(NAME, RET, PARAMS) sym("muirrt_cuda_" #NAME, NAME);
#include "muir-rt/CudaHost.def"
  const muirrt_entry_table *(*table)() = nullptr;
  sym("muirrt_cuda_entries", table);
  if (!missing.empty())
    return path + " lacks " + missing;
  entries = table();
  char differs[512];
  if (muirrt_entry_signature_mismatch(entries->signature, differs,
                                      sizeof(differs)))
    return path + " was built from another muir-rt/Entries.def than this "
                  "runner (the first difference at the entry '" + differs +
           "'): rebuild the CUDA runtime with this muir";
  return "";
}

void *CudaRuntime::symbol(const std::string &name) const {
  return handle ? dlsym(handle, name.c_str()) : nullptr;
}

std::string CudaRuntime::failure(const std::string &what) const {
  return what + ": " + (last_error ? last_error() : "the CUDA runtime failed");
}

int64_t ManifestArgument::numel() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

bool Manifest::readsCounter() const {
  for (const ManifestArgument &a : arguments)
    if (a.role == RoleCounter && !a.counterUnused)
      return true;
  return false;
}

std::string muir::step::parseManifest(const char *text, Manifest &out) {
  out = Manifest();
  if (!text)
    return "the step has no manifest";
  std::istringstream in(text);
  std::string line;
  int lineNo = 0;
  while (std::getline(in, line)) {
    ++lineNo;
    if (line.empty())
      continue;
    auto bad = [&](const std::string &why) {
      return "manifest line " + std::to_string(lineNo) + " ('" + line +
             "'): " + why;
    };
    std::istringstream f(line);
    if (line.rfind("loss ", 0) == 0) {
      std::string word, layer;
      int64_t slot;
      if (!(f >> word >> slot >> layer))
        return bad("expected 'loss <slot> <layer>'");
      out.losses.emplace_back(slot, layer);
      continue;
    }
    int64_t index;
    std::string name, role, shape, type;
    if (!(f >> index >> name >> role >> shape >> type))
      return bad("expected '<index> <name> <role> <shape> <type>'");
    if (index != static_cast<int64_t>(out.arguments.size()))
      return bad("expected argument " + std::to_string(out.arguments.size()));
    ManifestArgument a;
    a.name = name;
    if (type == "i64") {
      a.role = RoleCounter;
      a.counterUnused = role == "step-unused";
    } else if (type == "f64") {
      a.role = RoleHyper;
      if (!(f >> a.defaultValue))
        return bad("a hyperparameter without its default");
    } else if (type != "f32") {
      return bad("unknown element type '" + type + "'");
    } else if (role == "param") {
      a.role = RoleParam;
    } else if (role == "grad") {
      a.role = RoleGrad;
    } else if (role == "state") {
      a.role = RoleState;
    } else if (role == "data") {
      a.role = RoleData;
    } else {
      return bad("unknown role '" + role + "'");
    }
    if (a.isTensor() && shape != "scalar") {
      std::istringstream dims(shape);
      std::string d;
      while (std::getline(dims, d, 'x')) {
        char *end = nullptr;
        long long v = std::strtoll(d.c_str(), &end, 10);
        if (d.empty() || *end || v < 0)
          return bad("malformed shape '" + shape + "'");
        a.shape.push_back(v);
      }
    }
    // Optional "key=value" items: the seeded values' standard deviation.
    std::string item;
    while (f >> item) {
      if (item.rfind("init_std=", 0) != 0)
        return bad("unknown item '" + item + "'");
      char *end = nullptr;
      a.initStd = std::strtod(item.c_str() + 9, &end);
      if (*end || !(a.initStd >= 0))
        return bad("malformed '" + item + "'");
    }
    out.arguments.push_back(std::move(a));
  }
  return "";
}

/// The CUDA runtime holds one graph per process: the number of the last
/// capture, so that a step whose graph another step replaced captures again.
static std::atomic<uint64_t> lastCapture{0};

std::string GraphRunner::prepare(const Invoke &invoke, bool counterUsed,
                                 bool hyperUsed,
                                 const std::vector<double> &hyper) {
  replaying = graphs && runs > 0;
  // The hyperparameters are kernel arguments: a graph captured with the
  // same values replays as it is (a constant learning rate).
  bool hyperChanged = hyperUsed && hyper != capturedHyper;
  bool ours = captured && lastCapture.load() == capture;
  if (!replaying || (ours && !counterUsed && !hyperChanged))
    return "";
  // Until this capture succeeds there is no graph of this step to replay.
  captured = false;
  if (runtime.graph_begin())
    return runtime.failure("capturing the step's CUDA graph");
  std::string why = invoke();
  // The capture ends even when the step failed inside it.
  if (runtime.graph_end() && why.empty())
    return runtime.failure("capturing the step's CUDA graph");
  if (!why.empty())
    return why;
  captured = true;
  capture = ++lastCapture;
  capturedHyper = hyper;
  return "";
}

std::string GraphRunner::launch(const Invoke &invoke) {
  ++runs;
  if (!replaying)
    return invoke();
  if (runtime.graph_launch()) {
    // The runtime may hold no graph of this step any more (an arena that
    // grew for another step takes the graph with it): capture again next.
    captured = false;
    return runtime.failure("replaying the step's CUDA graph");
  }
  return "";
}
