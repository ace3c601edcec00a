//===- CudaBackend.cpp - the CUDA target of a step ------------------------===//
//
// The CUDA backend: libmuir_rt_cuda.so loaded with dlopen, the tensors in
// device memory, NCCL's communicator (over MPI's ranks, torchrun's
// environment or a unique id the caller shares) and the step replayed as a
// CUDA graph. See Backend.h.
//
//===----------------------------------------------------------------------===//
#include "Backend.h"

#include "muir-rt/Runtime.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Path.h"

#include <cstdlib>
#include <dlfcn.h>

using namespace mlir;
using namespace mlir::muir;
using namespace mlir::muir::runner;
using ::muir::step::CudaRuntime;
using llvm::StringRef;
using llvm::Twine;

namespace {

/// Where the CUDA runtime is: `explicitPath`, else MUIR_CUDA_RUNTIME, else
/// lib/libmuir_rt_cuda.so beside the step library (or the program linking
/// it).
std::string cudaRuntimePath(StringRef explicitPath) {
  if (!explicitPath.empty())
    return explicitPath.str();
  if (const char *env = getenv("MUIR_CUDA_RUNTIME"))
    return env;
  Dl_info info;
  SmallString<256> p;
  if (dladdr(reinterpret_cast<void *>(&muirrt_sgemm), &info) && info.dli_fname)
    p = llvm::sys::path::parent_path(info.dli_fname);
  if (llvm::sys::path::filename(p) == "bin")
    p = llvm::sys::path::parent_path(p), llvm::sys::path::append(p, "lib");
  llvm::sys::path::append(p, "libmuir_rt_cuda.so");
  return p.str().str();
}

/// The CUDA runtime's NCCL communicator is the process's: made by the first
/// CUDA step, destroyed with the last (under ranksMutex).
int communicatorUsers = 0;

class CudaBackend final : public Backend {
public:
  explicit CudaBackend(const StepOptions &options) : options(options) {}
  ~CudaBackend() override {
    if (!communicatorJoined)
      return;
    std::lock_guard<std::mutex> lock(ranksMutex());
    if (--communicatorUsers == 0)
      runtime.dist_finalize();
  }

  // Outside mpirun (torchrun, or an NCCL id from the caller) the step has
  // NCCL's ranks only.
  bool joinsRuntimeRanks(int64_t) const override { return underMPI(); }
  int64_t rank() const override {
    if (underMPI())
      return muirrt_dist_rank();
    if (options.ncclRank >= 0)
      return options.ncclRank;
    const char *env = getenv("RANK");
    return env ? std::atoll(env) : 0;
  }

  void applySettings(bool fixedOrder) override {
    if (!runtime.handle)
      return;
    runtime.set_deterministic(fixedOrder);
    runtime.set_precision(options.cudaBf16);
    runtime.set_grouped_gemm(options.cudaCublasGrouped);
  }

  llvm::Error start(llvm::ArrayRef<int64_t> sizes) override {
    if (std::string why = runtime.load(cudaRuntimePath(options.cudaRuntime),
                                       /*global=*/false);
        !why.empty())
      return error("--target=cuda: " + why);
    if (runtime.init(static_cast<int>(options.cudaDevice)))
      return error(Twine("--target=cuda: no usable GPU: ") +
                   runtime.last_error());
    std::lock_guard<std::mutex> lock(ranksMutex());
    int failed = 0;
    if (communicatorUsers > 0) {
      // The communicator of the process's first CUDA step serves.
    } else if (!options.ncclId.empty()) {
      std::string bytes;
      if (options.ncclId.size() != 256 ||
          !llvm::tryGetFromHex(options.ncclId, bytes))
        return error("nccl-id: expected the 256 hexadecimal digits of an "
                     "NCCL unique id (muir_step_nccl_unique_id)");
      failed = runtime.dist_init_with_id(
          sizes.data(), static_cast<int32_t>(sizes.size()), options.ncclRank,
          options.ncclWorld, bytes.data());
    } else {
      failed = runtime.dist_init(sizes.data(),
                                 static_cast<int32_t>(sizes.size()));
    }
    if (failed)
      return error(Twine("--target=cuda: NCCL: ") + runtime.last_error());
    ++communicatorUsers;
    communicatorJoined = true;
    return llvm::Error::success();
  }

  // The engine's _mlir_<entry> is what the CUDA graphs invoke; the entry is
  // inlined into it.
  LogicalResult readyEntry(ModuleOp module, StringRef entryName) override {
    module.walk([&](LLVM::LLVMFuncOp f) {
      if (f.getName() == entryName)
        f.setAlwaysInline(true);
    });
    return success();
  }
  void registerSymbols(ExecutionEngine &engine) const override {
    registerRuntimeSymbols(engine, *muirrt_cpu_entries());
    registerRuntimeSymbols(engine, *runtime.entries, &runtime);
  }
  llvm::Error lookupEntry(ExecutionEngine &engine, StringRef entryName,
                          PackedEntry &) override {
    if (auto fn = engine.lookupPacked(entryName); !fn)
      return error("JIT compilation failed: " +
                   llvm::toString(fn.takeError()));
    return llvm::Error::success();
  }

  std::string run(const EngineRun &r) override {
    runtime.set_stream(r.stream);
    if (!graphs)
      graphs = std::make_unique<::muir::step::GraphRunner>(
          runtime, options.cudaGraph && !options.cudaCublasGrouped);
    if (r.rebound)
      graphs->invalidate();
    std::string why =
        graphs->prepare(r.invoke, r.counterUsed, r.hyperUsed, *r.hyper);
    if (why.empty())
      why = graphs->launch(r.invoke);
    if (why.empty() && r.wait && runtime.synchronize())
      why = runtime.failure("synchronizing");
    return why.empty() ? why : "--target=cuda: " + why;
  }

  bool tensorsOnHost() const override { return false; }
  const float *observation(int64_t slot, int64_t &numel) const override {
    return runtime.observation(slot, &numel);
  }
  std::string description() const override {
    return std::string(runtime.device_name()) +
           (options.cudaBf16 ? ", bf16 products" : ", fp32 products") +
           (options.cudaGraph && !options.cudaCublasGrouped ? ", CUDA graph"
                                                            : "") +
           (options.cudaCublasGrouped ? ", cuBLAS grouped GEMM" : "");
  }

  llvm::Expected<void *> stage(void *host, size_t bytes) override {
    void *device = nullptr;
    if (runtime.alloc(&device, bytes))
      return error(Twine("--target=cuda: ") + runtime.last_error());
    if (runtime.copy_to_device(device, host, bytes)) {
      std::string why = runtime.last_error();
      runtime.free(device);
      return error("--target=cuda: " + why);
    }
    return device;
  }
  llvm::Error unstage(void *host, const void *bound, size_t bytes) override {
    if (runtime.copy_to_host(host, bound, bytes))
      return error(Twine("--target=cuda: ") + runtime.last_error());
    return llvm::Error::success();
  }
  void release(void *bound) override {
    if (bound)
      runtime.free(bound);
  }

private:
  StepOptions options;
  CudaRuntime runtime;
  std::unique_ptr<::muir::step::GraphRunner> graphs;
  bool communicatorJoined = false;
};

} // namespace

std::unique_ptr<Backend> runner::createCudaBackend(const StepOptions &options) {
  return std::make_unique<CudaBackend>(options);
}

llvm::Expected<std::string> runner::ncclUniqueId(StringRef cudaRuntime) {
  CudaRuntime cl;
  if (std::string why = cl.load(cudaRuntimePath(cudaRuntime), false);
      !why.empty())
    return error(why);
  char id[128];
  if (cl.unique_id(id))
    return error(cl.last_error());
  return llvm::toHex(StringRef(id, sizeof(id)), /*LowerCase=*/true);
}
