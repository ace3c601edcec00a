//===- Backend.cpp - the CPU target of a step -----------------------------===//
//
// The CPU backend: the runtime linked into the step library, host memory,
// MPI's ranks. See Backend.h.
//
//===----------------------------------------------------------------------===//
#include "Backend.h"

#include "muir-rt/Runtime.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"

using namespace mlir;
using namespace mlir::muir;
using namespace mlir::muir::runner;
using llvm::StringRef;

Backend::~Backend() = default;

std::mutex &runner::ranksMutex() {
  static std::mutex m;
  return m;
}

std::unique_ptr<Backend> Backend::create(const StepOptions &options) {
  switch (options.target.target) {
  case Target::Cpu:
    return createCpuBackend();
  case Target::Cuda:
    return createCudaBackend(options);
  }
  llvm_unreachable("a target without a backend");
}

void runner::registerRuntimeSymbols(ExecutionEngine &engine,
                                    const muirrt_entry_table &table,
                                    const ::muir::step::CudaRuntime *mgpu) {
  engine.registerSymbols([&](llvm::orc::MangleAndInterner interner) {
    llvm::orc::SymbolMap map;
    auto add = [&](const std::string &name, void *fn) {
      if (fn)
        map[interner(name)] = {llvm::orc::ExecutorAddr::fromPtr(fn),
                               llvm::JITSymbolFlags::Exported};
    };
#define MUIR_RT_ENTRY(NAME, TARGETS, RET, PARAMS)                              \
  add(std::string(table.prefix) + #NAME, reinterpret_cast<void *>(table.NAME));
#include "muir-rt/Entries.def"
    if (mgpu) {
#define MUIR_RT_CUDA_MGPU(NAME, RET, PARAMS) add(#NAME, mgpu->symbol(#NAME));
#include "muir-rt/CudaHost.def"
    }
    return map;
  });
}

namespace {

class CpuBackend final : public Backend {
public:
  bool joinsRuntimeRanks(int64_t devices) const override {
    return underMPI() || devices > 1;
  }
  int64_t rank() const override { return muirrt_dist_rank(); }
  LogicalResult readyEntry(ModuleOp module, StringRef entryName) override {
    // The entry is called through muir_step_packed, as in a cached library
    // (writeCache may have added it already): a call with one argument per
    // tensor and hyperparameter took longer to compile than the whole step.
    if (module.lookupSymbol("muir_step_packed"))
      return success();
    return addPackedEntry(module, entryName, "", "");
  }
  void registerSymbols(ExecutionEngine &engine) const override {
    registerRuntimeSymbols(engine, *muirrt_cpu_entries());
  }
  llvm::Error lookupEntry(ExecutionEngine &engine, StringRef,
                          PackedEntry &direct) override {
    auto fn = engine.lookup("muir_step_packed");
    if (!fn)
      return error("JIT compilation failed: " +
                   llvm::toString(fn.takeError()));
    direct = reinterpret_cast<PackedEntry>(*fn);
    return llvm::Error::success();
  }
  std::string run(const EngineRun &r) override { return r.invoke(); }
  bool tensorsOnHost() const override { return true; }
  // OpenBLAS's results depend on its thread count.
  std::string traceHeader() const override {
    return "# blas-threads " + std::to_string(muirrt_blas_threads()) + "\n";
  }
  const float *observation(int64_t slot, int64_t &numel) const override {
    return muirrt_observation(slot, &numel);
  }
  llvm::Expected<void *> stage(void *host, size_t) override { return host; }
  llvm::Error unstage(void *, const void *, size_t) override {
    return llvm::Error::success();
  }
  void release(void *) override {}
};

} // namespace

std::unique_ptr<Backend> runner::createCpuBackend() {
  return std::make_unique<CpuBackend>();
}
