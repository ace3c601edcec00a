//===- muir-step-runner.cpp - run a compiled step, no LLVM ----------------===//
//
// Runs a step compiled ahead of time with
//   muir-compile STEP.yaml [--target=cuda] --emit=object -o step.o
//   c++ -shared step.o -o step.so
// on a machine without LLVM/MLIR (the lent GPU machine). A client of the
// step library's LLVM-free part: the runtime's tensors (muirrt_context:
// .npy loading and dumping, seeding; runtime/cpu/Host.cpp and Npy.cpp) and
// muir/Runner/StepCore.h (the manifest, the CUDA runtime, op by op then
// CUDA graphs), compiled in from source. The runtime library is loaded
// with dlopen, global, before the step: the step's runtime calls resolve
// against it.
//
//   muir-step-runner --runtime LIB --step step.so
//       [--steps N] [--bf16] [--no-graph] [--grouped-gemm=cublas]
//       [--load DIR] [--dump DIR] [--seed S]
//   muir-step-runner --help | --version
//
// LIB: libmuir_rt_cuda.so for a CUDA step; for a CPU step a library with
// the CPU runtime (build/lib/libmuir_step.so). One rank: the runner joins
// no MPI world or NCCL communicator. Tensors not loaded are
// seeded as muir-run --seed S seeds them (the same values): parameters
// N(0, 0.02^2), gradients N(0, 1), data N(0, its init_std^2), optimizer
// state 0. The hyperparameters keep their defaults. On CUDA, step 1 runs
// op by op and later steps replay one CUDA graph (captured again each step
// when the step reads its counter). Printed: the device, per step its time
// (CUDA: between events around the step) and trained layers' losses, then
// "min_ms" and "median_ms" over the steps after the first.
//
//===----------------------------------------------------------------------===//
#include "muir-rt/Runtime.h"
#include "muir-rt/TensorFiles.h"
#include "muir/Runner/StepCore.h"
#include "muir/Step.h"
#include "muir/Support/Version.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace muir::step;

namespace {

[[noreturn]] void die(const std::string &why) {
  std::fprintf(stderr, "muir-step-runner: error: %s\n", why.c_str());
  std::exit(1);
}

} // namespace

// A crash prints where it happened (no debugger on the lent machine).
void onCrash(int sig) {
  void *frames[64];
  int n = backtrace(frames, 64);
  const char msg[] = "muir-step-runner: crashed; backtrace:\n";
  (void)!write(2, msg, sizeof(msg) - 1);
  backtrace_symbols_fd(frames, n, 2);
  signal(sig, SIG_DFL);
  raise(sig);
}

int main(int argc, char **argv) {
  signal(SIGSEGV, onCrash);
  signal(SIGBUS, onCrash);
  signal(SIGABRT, onCrash);
  setvbuf(stdout, nullptr, _IOLBF, 0);
  std::string runtimePath, stepPath, loadDir, dumpDir;
  int steps = 5;
  bool bf16 = false, graph = true, cublasGrouped = false;
  uint64_t seed = 0;
  const char *usage =
      "usage: muir-step-runner --runtime LIB --step STEP.so [--steps N] "
      "[--bf16] [--no-graph] [--grouped-gemm=cublas] [--load DIR] "
      "[--dump DIR] [--seed S]\n"
      "       muir-step-runner --help | --version";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        die(a + " needs a value");
      return argv[++i];
    };
    auto number = [&](const std::string &text) -> long long {
      char *end = nullptr;
      long long v = std::strtoll(text.c_str(), &end, 10);
      if (text.empty() || *end || v < 0)
        die(a + ": expected a non-negative integer, got '" + text + "'");
      return v;
    };
    if (a == "--help" || a == "-h") {
      std::printf("%s\n", usage);
      return 0;
    }
    if (a == "--version") {
      std::printf("muir-step-runner (%s)\n  built without LLVM: runs steps "
                  "compiled ahead of time\n",
                  muirBuildVersion());
      return 0;
    }
    if (a == "--runtime")
      runtimePath = value();
    else if (a == "--step")
      stepPath = value();
    else if (a == "--steps")
      steps = static_cast<int>(number(value()));
    else if (a == "--load")
      loadDir = value();
    else if (a == "--dump")
      dumpDir = value();
    else if (a == "--seed")
      seed = static_cast<uint64_t>(number(value()));
    else if (a == "--bf16")
      bf16 = true;
    else if (a == "--no-graph")
      graph = false;
    else if (a == "--grouped-gemm=cublas")
      cublasGrouped = true; // sizes on the host: no graph
    else
      die("unknown argument " + a + "\n" + usage);
  }
  if (runtimePath.empty() || stepPath.empty() || steps < 1)
    die(usage);

  // The runtime first, global: the step's undefined muirrt_* (and mgpu*)
  // symbols resolve against it when the step is loaded.
  void *rt = dlopen(runtimePath.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!rt)
    die(std::string("cannot load the runtime: ") + dlerror());
  bool cuda = dlsym(rt, "muirrt_cuda_init") != nullptr;
  CudaRuntime cu;
  const float *(*observation)(int64_t, int64_t *) = nullptr;
  std::string device = "CPU";
  if (cuda) {
    if (std::string why = cu.load(runtimePath, /*global=*/true); !why.empty())
      die(why);
    if (cu.init(-1))
      die(cu.failure("no usable GPU"));
    cu.set_deterministic(1);
    cu.set_precision(bf16);
    // cuBLAS's grouped GEMM takes the expert sizes on the host, so its
    // steps run op by op.
    cu.set_grouped_gemm(cublasGrouped);
    observation = cu.observation;
    device = cu.device_name();
  } else {
    if (bf16 || cublasGrouped)
      die(std::string(bf16 ? "--bf16" : "--grouped-gemm=cublas") +
          " is for CUDA steps; " + runtimePath + " is the CPU runtime");
    auto deterministic =
        reinterpret_cast<void (*)(int32_t)>(dlsym(rt, "muirrt_set_deterministic"));
    observation = reinterpret_cast<const float *(*)(int64_t, int64_t *)>(
        dlsym(rt, "muirrt_observation"));
    if (!deterministic || !observation)
      die(runtimePath + " is neither the CUDA runtime nor a library with the "
                        "CPU runtime (muirrt_set_deterministic)");
    deterministic(1);
  }
  if (cublasGrouped || !cuda)
    graph = false;

  void *stepLib = dlopen(stepPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!stepLib)
    die(std::string("cannot load the step: ") + dlerror());
  auto packed =
      reinterpret_cast<void (*)(void **)>(dlsym(stepLib, "muir_step_packed"));
  auto *text =
      reinterpret_cast<const char *>(dlsym(stepLib, "muir_step_manifest"));
  if (!packed || !text)
    die(stepPath + " is not a compiled step (no muir_step_packed or "
                   "muir_step_manifest)");
  Manifest manifest;
  if (std::string why = parseManifest(text, manifest); !why.empty())
    die(stepPath + ": " + why);
  std::vector<ManifestArgument> &args = manifest.arguments;

  // The tensors, as muir-run makes them: loaded, else seeded.
  MuirRtContext *ctx = muirrt_context_create();
  std::vector<int32_t> index(args.size(), -1);
  for (size_t i = 0; i < args.size(); ++i) {
    const ManifestArgument &a = args[i];
    if (!a.isTensor())
      continue;
    index[i] = muirrt_tensor_add(ctx, a.name.c_str(),
                                 static_cast<int32_t>(a.shape.size()),
                                 a.shape.data(), a.role);
    if (index[i] < 0 ||
        (a.initStd > 0 && muirrt_tensor_set_init_std(ctx, index[i], a.initStd)))
      die(muirrt_last_error());
  }
  // The dump must be possible before any work, and must not replace the
  // inputs it would be compared with.
  if (!dumpDir.empty()) {
    char *in = loadDir.empty() ? nullptr : realpath(loadDir.c_str(), nullptr);
    char *out = realpath(dumpDir.c_str(), nullptr);
    bool same = in && out && std::string(in) == out;
    std::free(in);
    std::free(out);
    if (same)
      die("--dump " + dumpDir + " is the --load directory; dump elsewhere");
    std::vector<const char *> names;
    for (size_t i = 0; i < args.size(); ++i)
      if (index[i] >= 0)
        names.push_back(args[i].name.c_str());
    if (muirrt_check_dump(dumpDir.c_str(), names.data(),
                          static_cast<int32_t>(names.size())))
      die(muirrt_last_error());
  }
  int32_t loaded = 0;
  if (!loadDir.empty() && muirrt_load_dir(ctx, loadDir.c_str(), &loaded))
    die(muirrt_last_error());
  muirrt_init_from_seed(ctx, seed);

  // CPU: the step runs on the tensors themselves; CUDA: on device copies.
  std::vector<void *> data(args.size(), nullptr);
  for (size_t i = 0; i < args.size(); ++i) {
    if (index[i] < 0)
      continue;
    float *host = muirrt_tensor_data(ctx, index[i]);
    size_t bytes = static_cast<size_t>(args[i].numel()) * sizeof(float);
    data[i] = host;
    if (cuda && (cu.alloc(&data[i], bytes) ||
                 cu.copy_to_device(data[i], host, bytes)))
      die(cu.failure("copying '" + args[i].name + "' to the GPU"));
  }
  std::printf("muir-step-runner: %s, %zu arguments, %d loaded, %s products, "
              "%s%s\n",
              device.c_str(), args.size(), loaded, bf16 ? "bf16" : "fp32",
              graph ? "CUDA graph" : "op by op",
              cublasGrouped ? ", cuBLAS grouped GEMM" : "");

  int64_t counter = 1;
  std::vector<double> hyper;
  std::vector<void *> slots(args.size());
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].role == MUIR_ROLE_HYPER)
      hyper.push_back(args[i].defaultValue);
  for (size_t i = 0, h = 0; i < args.size(); ++i)
    slots[i] = args[i].role == MUIR_ROLE_COUNTER ? static_cast<void *>(&counter)
               : args[i].role == MUIR_ROLE_HYPER ? static_cast<void *>(&hyper[h++])
                                                 : static_cast<void *>(&data[i]);
  GraphRunner runner(cu, graph);
  GraphRunner::Invoke invoke = [&]() -> std::string {
    packed(slots.data());
    return "";
  };
  std::vector<double> times;
  for (int s = 1; s <= steps; ++s) {
    counter = s;
    double ms = 0;
    if (cuda) {
      std::string why = runner.prepare(invoke, manifest.readsCounter(),
                                       /*hyperUsed=*/false, hyper);
      if (!why.empty())
        die(why);
      cu.event_record(0);
      if (std::string why = runner.launch(invoke); !why.empty())
        die(why);
      cu.event_record(1);
      ms = cu.elapsed_ms(0, 1);
      if (cu.synchronize())
        die(cu.failure("step " + std::to_string(s)));
    } else {
      auto t0 = std::chrono::steady_clock::now();
      packed(slots.data());
      ms = std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now() - t0)
               .count();
    }
    std::printf("step %d: %.3f ms\n", s, ms);
    // As muir-run prints them: "  loss <layer> <value>".
    for (const auto &[slot, layer] : manifest.losses) {
      int64_t numel = 0;
      const float *value = observation(slot, &numel);
      if (value && numel > 0)
        std::printf("  loss %s %.6e\n", layer.c_str(),
                    static_cast<double>(value[0]));
    }
    if (s > 1)
      times.push_back(ms);
  }
  if (!times.empty()) {
    std::sort(times.begin(), times.end());
    std::printf("min_ms %.3f median_ms %.3f\n", times.front(),
                times[times.size() / 2]);
  }
  if (!dumpDir.empty()) {
    for (size_t i = 0; cuda && i < args.size(); ++i)
      if (index[i] >= 0 &&
          cu.copy_to_host(muirrt_tensor_data(ctx, index[i]), data[i],
                    static_cast<size_t>(args[i].numel()) * sizeof(float)))
        die(cu.failure("copying '" + args[i].name + "' from the GPU"));
    if (muirrt_dump_dir(ctx, dumpDir.c_str()))
      die(muirrt_last_error());
  }
  muirrt_context_destroy(ctx);
  return 0;
}
