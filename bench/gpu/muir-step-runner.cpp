//===- muir-step-runner.cpp - run a compiled step on the GPU, no LLVM -----===//
//
// Runs a step compiled ahead of time with
//   muir-compile STEP.yaml --target=cuda --emit=object -o step.o
//   c++ -shared step.o -o step.so
// against the CUDA runtime, on a machine that has a GPU but not LLVM/MLIR
// (the lent H200). Plain C++: both libraries are loaded with dlopen, the
// step's arguments come from its own manifest (muir_step_manifest), and it
// is called through muir_step_packed.
//
//   muir-step-runner --runtime libmuir_rt_cuda.so --step step.so
//       [--steps N] [--bf16] [--no-graph] [--grouped-gemm=cublas]
//       [--load DIR] [--dump DIR] [--seed S]
//
// Tensors not loaded start as: parameters ~N(0, 0.02), gradients ~N(0, 1),
// training data normal with standard deviation 1 / sqrt(its last dimension)
// (Irwin-Hall approximations),
// optimizer state 0. Step 1 runs op by op (it sets up communicators,
// scratch and the temporaries' arena); later steps are captured as one CUDA
// graph (again each step, updated in place, when the step reads its
// counter) and replayed. Printed: the device, and per step the device time
// between CUDA events around the step; then "min_ms" and "median_ms" over
// the steps after the first.
//
//===----------------------------------------------------------------------===//
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

[[noreturn]] void die(const std::string &why) {
  std::fprintf(stderr, "muir-step-runner: error: %s\n", why.c_str());
  std::exit(1);
}

template <typename F> F sym(void *lib, const char *name) {
  void *p = dlsym(lib, name);
  if (!p)
    die(std::string("missing symbol ") + name);
  return reinterpret_cast<F>(p);
}

struct Arg {
  std::string name, role;
  std::vector<int64_t> shape;
  bool isStep = false;
  bool isHyper = false; // a learning rate or weight decay (f64)
  double value = 0;     // its default, passed at every step
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
};

// A trained MoE layer's loss: the runtime's observation slot.
struct Loss {
  int64_t slot;
  std::string layer;
};

std::vector<Arg> parseManifest(const char *text, std::vector<Loss> &losses) {
  std::vector<Arg> args;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    if (line.rfind("loss ", 0) == 0) {
      std::string word;
      Loss l;
      if (!(f >> word >> l.slot >> l.layer))
        die("malformed manifest line: " + line);
      losses.push_back(l);
      continue;
    }
    int64_t index;
    std::string name, role, shape, type;
    if (!(f >> index >> name >> role >> shape >> type) ||
        index != static_cast<int64_t>(args.size()))
      die("malformed manifest line: " + line);
    Arg a;
    a.name = name;
    a.role = role;
    a.isStep = type == "i64";
    a.isHyper = type == "f64";
    if (a.isHyper && !(f >> a.value))
      die("malformed manifest line: " + line);
    if (!a.isStep && !a.isHyper && shape != "scalar") {
      std::istringstream dims(shape);
      std::string d;
      while (std::getline(dims, d, 'x'))
        a.shape.push_back(std::stoll(d));
    }
    args.push_back(a);
  }
  return args;
}

// float32, C order .npy files (format 1.0).
bool readNpy(const std::string &path, const Arg &a, std::vector<float> &out) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    return false;
  char magic[8];
  f.read(magic, 8);
  if (std::memcmp(magic, "\x93NUMPY", 6) != 0)
    die(path + ": not a .npy file");
  uint16_t headerLen = 0;
  f.read(reinterpret_cast<char *>(&headerLen), 2);
  std::string header(headerLen, ' ');
  f.read(&header[0], headerLen);
  if (header.find("'<f4'") == std::string::npos ||
      header.find("'fortran_order': False") == std::string::npos)
    die(path + ": not a float32 C-order array");
  out.resize(static_cast<size_t>(a.numel()));
  f.read(reinterpret_cast<char *>(out.data()),
         static_cast<std::streamsize>(out.size() * sizeof(float)));
  if (!f || f.peek() != EOF)
    die(path + ": holds another number of elements than " + a.name +
        "'s " + std::to_string(a.numel()));
  return true;
}

void writeNpy(const std::string &path, const Arg &a,
              const std::vector<float> &data) {
  std::string shape = "(";
  for (int64_t d : a.shape)
    shape += std::to_string(d) + ", ";
  if (a.shape.size() > 1)
    shape.resize(shape.size() - 2);
  shape += ")";
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " +
                       shape + ", }";
  while ((10 + header.size() + 1) % 64)
    header += ' ';
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  if (!f)
    die("cannot write " + path);
  f.write("\x93NUMPY\x01\x00", 8);
  uint16_t len = static_cast<uint16_t>(header.size());
  f.write(reinterpret_cast<const char *>(&len), 2);
  f << header;
  f.write(reinterpret_cast<const char *>(data.data()),
          static_cast<std::streamsize>(data.size() * sizeof(float)));
}

// Approximately normal values (Irwin-Hall: the sum of four uniforms,
// centred and scaled), from xorshift generators on all cores: a timing
// run's billion values in a second rather than half a minute.
void fillNormal(std::vector<float> &v, float stddev, uint64_t seed) {
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  size_t per = (v.size() + threads - 1) / threads;
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      uint64_t x = seed ^ (0x9E3779B97F4A7C15ull * (t + 1));
      auto next = [&] {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        return static_cast<float>(x >> 40) * (1.0f / 16777216.0f);
      };
      // Variance of the sum of 4 uniforms: 4 / 12.
      const float scale = stddev * 1.7320508f;
      for (size_t i = t * per; i < std::min(v.size(), (t + 1) * per); ++i)
        v[i] = (next() + next() + next() + next() - 2.0f) * scale;
    });
  for (std::thread &th : pool)
    th.join();
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
  unsigned seed = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        die(a + " needs a value");
      return argv[++i];
    };
    if (a == "--runtime")
      runtimePath = value();
    else if (a == "--step")
      stepPath = value();
    else if (a == "--steps")
      steps = std::stoi(value());
    else if (a == "--load")
      loadDir = value();
    else if (a == "--dump")
      dumpDir = value();
    else if (a == "--seed")
      seed = static_cast<unsigned>(std::stoul(value()));
    else if (a == "--bf16")
      bf16 = true;
    else if (a == "--no-graph")
      graph = false;
    else if (a == "--grouped-gemm=cublas")
      cublasGrouped = true; // sizes on the host: no graph
    else
      die("unknown argument " + a);
  }
  if (runtimePath.empty() || stepPath.empty() || steps < 1)
    die("usage: muir-step-runner --runtime LIB --step STEP.so [--steps N] "
        "[--bf16] [--no-graph] [--grouped-gemm=cublas] [--load DIR] "
        "[--dump DIR] [--seed S]");

  // The runtime first, global: the step's undefined muirrt_cuda_* and mgpu*
  // symbols resolve against it when the step is loaded.
  void *rt = dlopen(runtimePath.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!rt)
    die(std::string("cannot load the runtime: ") + dlerror());
  auto init = sym<int (*)(int)>(rt, "muirrt_cuda_init");
  auto lastError = sym<const char *(*)()>(rt, "muirrt_cuda_last_error");
  auto deviceName = sym<const char *(*)()>(rt, "muirrt_cuda_device_name");
  auto setPrecision = sym<void (*)(int32_t)>(rt, "muirrt_cuda_set_precision");
  auto alloc = sym<int (*)(void **, size_t)>(rt, "muirrt_cuda_alloc");
  auto toDevice =
      sym<int (*)(void *, const void *, size_t)>(rt, "muirrt_cuda_copy_to_device");
  auto toHost =
      sym<int (*)(void *, const void *, size_t)>(rt, "muirrt_cuda_copy_to_host");
  auto synchronize = sym<int (*)()>(rt, "muirrt_cuda_synchronize");
  auto graphBegin = sym<int (*)()>(rt, "muirrt_cuda_graph_begin");
  auto graphEnd = sym<int (*)()>(rt, "muirrt_cuda_graph_end");
  auto graphLaunch = sym<int (*)()>(rt, "muirrt_cuda_graph_launch");
  auto record = sym<int (*)(int32_t)>(rt, "muirrt_cuda_event_record");
  auto elapsed = sym<double (*)(int32_t, int32_t)>(rt, "muirrt_cuda_elapsed_ms");
  if (init(-1))
    die(std::string("no usable GPU: ") + lastError());
  setPrecision(bf16);
  // cuBLAS's grouped GEMM takes the expert sizes on the host, so its steps
  // run op by op.
  sym<void (*)(int32_t)>(rt, "muirrt_cuda_set_grouped_gemm")(cublasGrouped);
  if (cublasGrouped)
    graph = false;

  void *step = dlopen(stepPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!step)
    die(std::string("cannot load the step: ") + dlerror());
  auto packed = sym<void (*)(void **)>(step, "muir_step_packed");
  std::vector<Loss> losses;
  std::vector<Arg> args =
      parseManifest(sym<const char *>(step, "muir_step_manifest"), losses);
  auto observation = sym<const float *(*)(int64_t, int64_t *)>(
      rt, "muirrt_cuda_observation");

  std::mt19937_64 rng(seed);
  std::vector<void *> device(args.size(), nullptr);
  int64_t counter = 1;
  bool readsStep = false;
  int loaded = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    Arg &a = args[i];
    if (a.isStep) {
      readsStep = a.role == "step";
      continue;
    }
    if (a.isHyper)
      continue;
    std::vector<float> host(static_cast<size_t>(a.numel()), 0.0f);
    if (!loadDir.empty() && readNpy(loadDir + "/" + a.name + ".npy", a, host)) {
      ++loaded;
    } else if (a.role == "param" || a.role == "grad") {
      fillNormal(host, a.role == "param" ? 0.02f : 1.0f, rng());
    } else if (a.role == "data" && !a.shape.empty()) {
      // Training data (MoE tokens, teacher weights): N(0, 1 / fan-in).
      fillNormal(host,
                 1.0f / std::sqrt(static_cast<float>(a.shape.back())), rng());
    }
    if (alloc(&device[i], host.size() * sizeof(float)) ||
        toDevice(device[i], host.data(), host.size() * sizeof(float)))
      die(lastError());
  }
  std::printf("muir-step-runner: %s, %zu arguments, %d loaded, %s products, "
              "%s%s\n",
              deviceName(), args.size(), loaded, bf16 ? "bf16" : "fp32",
              graph ? "CUDA graph" : "op by op",
              cublasGrouped ? ", cuBLAS grouped GEMM" : "");

  std::vector<void *> slots(args.size());
  std::vector<double> times;
  for (int s = 1; s <= steps; ++s) {
    counter = s;
    for (size_t i = 0; i < args.size(); ++i)
      slots[i] = args[i].isStep    ? static_cast<void *>(&counter)
                 : args[i].isHyper ? static_cast<void *>(&args[i].value)
                                   : static_cast<void *>(&device[i]);
    bool replay = graph && s > 1;
    if (replay && (s == 2 || readsStep)) {
      if (graphBegin())
        die(lastError());
      packed(slots.data());
      if (graphEnd())
        die(lastError());
    }
    record(0);
    if (replay) {
      if (graphLaunch())
        die(lastError());
    } else {
      packed(slots.data());
    }
    record(1);
    double ms = elapsed(0, 1);
    if (synchronize())
      die(lastError());
    std::printf("step %d: %.3f ms\n", s, ms);
    // As muir-run prints them: "  loss <layer> <value>".
    for (const Loss &l : losses) {
      int64_t numel = 0;
      const float *value = observation(l.slot, &numel);
      if (value && numel > 0)
        std::printf("  loss %s %.6e\n", l.layer.c_str(),
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
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i].isStep || args[i].isHyper)
        continue;
      std::vector<float> host(static_cast<size_t>(args[i].numel()));
      if (toHost(host.data(), device[i], host.size() * sizeof(float)))
        die(lastError());
      writeNpy(dumpDir + "/" + args[i].name + ".npy", args[i], host);
    }
  }
  return 0;
}
