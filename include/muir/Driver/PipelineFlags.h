//===- PipelineFlags.h - compile-pipeline flags of the tools ----*- C++ -*-===//
//
// The command-line flags that choose how a step is compiled, shared by
// muir-compile and muir-run so both spell and document them alike. Define
// one instance at namespace scope (it registers its options with LLVM's
// command-line parser) before cl::ParseCommandLineOptions runs.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_DRIVER_PIPELINEFLAGS_H
#define MUIR_DRIVER_PIPELINEFLAGS_H

#include "muir/Passes.h"
#include "muir/Support/VersionPrinter.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/CommandLine.h"

#include <string>

namespace mlir::muir {

/// The category of muir's own flags: the tools list only these under
/// --help (the options LLVM and MLIR register are hidden).
inline llvm::cl::OptionCategory &muirFlagCategory() {
  static llvm::cl::OptionCategory category("muir options");
  return category;
}

/// A tool's command line: --help lists muir's flags only (LLVM's and
/// MLIR's are hidden), --version names the tool and muir's build, then the
/// flags are parsed (an error exits, as LLVM's parser does).
inline void parseToolCommandLine(int argc, char **argv, llvm::StringRef tool,
                                 llvm::StringRef overview) {
  llvm::cl::HideUnrelatedOptions(muirFlagCategory());
  setVersionPrinter(tool);
  llvm::cl::ParseCommandLineOptions(argc, argv, overview);
}

struct PipelineFlags {
  llvm::cl::opt<NSModeOption> nsMode{
      "ns-mode", llvm::cl::desc("Newton-Schulz of split matrices"),
      llvm::cl::init(NSModeOption::Auto), nsModeValues(),
      llvm::cl::cat(muirFlagCategory())};
  llvm::cl::opt<NSFormOption> nsForm{
      "ns-form",
      llvm::cl::desc("Newton-Schulz on X, or on its small Gram matrix (in "
                     "f64; X is read only at the start and the end)"),
      llvm::cl::init(NSFormOption::Auto), nsFormValues(),
      llvm::cl::cat(muirFlagCategory())};
  llvm::cl::opt<NSPrecision> nsPrecision{
      "ns-precision",
      llvm::cl::desc("the element type of Newton-Schulz iterates: f32, or "
                     "bf16 (bf16 products accumulated in f32; "
                     "--cuda-bf16 implies it). Matrices split in the "
                     "distributed or resharded mode iterate in f32"),
      llvm::cl::init(NSPrecision::f32), nsPrecisionValues(),
      llvm::cl::cat(muirFlagCategory())};
  llvm::cl::opt<DpAssign> dpAssign{
      "dp-assign",
      llvm::cl::desc("Newton-Schulz over the data-parallel axis"),
      llvm::cl::init(DpAssign::Greedy), dpAssignValues(),
      llvm::cl::cat(muirFlagCategory())};
  llvm::cl::opt<bool> syrk{
      "syrk",
      llvm::cl::desc("compute symmetric products (the Gram matrix, A A) "
                     "with SYRK, about half the flops of the GEMM "
                     "(--syrk=false: GEMM)"),
      llvm::cl::init(true), llvm::cl::cat(muirFlagCategory())};
  llvm::cl::opt<bool> batch{
      "batch",
      llvm::cl::desc("orthogonalise same-shaped matrices (one rank's, with "
                     "equal settings) as one batched Newton-Schulz "
                     "(--batch=false: one by one)"),
      llvm::cl::init(true), llvm::cl::cat(muirFlagCategory())};
  llvm::cl::opt<bool> fuseAllReduce{
      "fuse-syrk-all-reduce",
      llvm::cl::desc("all-reduce only the packed triangle of a SYRK (the "
                     "distributed mode's Gram matrices), in pipelined chunks "
                     "of rows"),
      llvm::cl::init(true), llvm::cl::cat(muirFlagCategory())};
  llvm::cl::opt<Machine> machine{
      "machine", llvm::cl::desc("the cost model's machine profile"),
      llvm::cl::init(Machine::Cpu), machineValues(),
      llvm::cl::cat(muirFlagCategory())};
  llvm::cl::opt<int64_t> chunkRows{
      "syrk-chunk-rows",
      llvm::cl::desc("rows per chunk of the fused SYRK all-reduce (0: from "
                     "the machine profile)"),
      llvm::cl::init(0), llvm::cl::cat(muirFlagCategory())};

  llvm::cl::opt<Target> target{
      "target", llvm::cl::desc("backend"), llvm::cl::init(Target::Cpu),
      targetValues(), llvm::cl::cat(muirFlagCategory())};
  llvm::cl::opt<std::string> cudaArch{
      "cuda-arch",
      llvm::cl::desc("with --target=cuda, the GPU architecture of the "
                     "kernels: sm_80 and up (sm_90: Hopper, the default)"),
      llvm::cl::init("sm_90"), llvm::cl::cat(muirFlagCategory())};

  llvm::cl::opt<bool> cudaBf16{
      "cuda-bf16",
      llvm::cl::desc("with --target=cuda, bf16 tensor-core products: "
                     "Newton-Schulz iterates in bf16 (--ns-precision=bf16 "
                     "unless given), and muir-run's other products on bf16 "
                     "inputs with fp32 accumulation"),
      llvm::cl::init(false), llvm::cl::cat(muirFlagCategory())};

  /// The PTX ISA version an architecture needs (0: not supported).
  static int ptxVersion(llvm::StringRef arch) {
    unsigned n = 0;
    if (!arch.consume_front("sm_"))
      return 0;
    arch.consume_back("a");
    if (arch.getAsInteger(10, n))
      return 0;
    return n >= 100 ? 86 : n >= 90 ? 80 : n >= 89 ? 78 : n >= 80 ? 70 : 0;
  }

  /// Empty when the values are usable, else what is wrong.
  std::string check() const {
    if (ptxVersion(cudaArch) == 0)
      return "--cuda-arch must be sm_80 or newer (sm_80, sm_89, sm_90, "
             "sm_90a, sm_100, ...), got '" +
             cudaArch + "'";
    if (chunkRows < 0)
      return ("--syrk-chunk-rows must be >= 0, got " +
              llvm::Twine(static_cast<int64_t>(chunkRows)))
          .str();
    // A flag that would change nothing is a mistake to point out, not to
    // ignore.
    if (cudaArch.getNumOccurrences() && target != Target::Cuda)
      return "--cuda-arch has no effect without --target=cuda";
    if (cudaBf16 && target != Target::Cuda)
      return "--cuda-bf16 needs --target=cuda (a CPU step iterates in bf16 "
             "with --ns-precision=bf16)";
    if (nsForm == NSFormOption::Gram && precision() == NSPrecision::bf16)
      return "--ns-form=gram iterates on the Gram matrix in f64; "
             "a bf16 iterate (--ns-precision=bf16, --cuda-bf16) takes the "
             "standard form";
    if (fuseAllReduce.getNumOccurrences() && fuseAllReduce && !syrk)
      return "--fuse-syrk-all-reduce needs --syrk (it fuses the SYRK's "
             "all-reduce); --syrk=false computes no SYRK";
    if (chunkRows.getNumOccurrences() && (!syrk || !fuseAllReduce))
      return std::string("--syrk-chunk-rows has no effect with ") +
             (!syrk ? "--syrk=false" : "--fuse-syrk-all-reduce=false");
    return "";
  }

  /// The iterate's element type: --ns-precision, else bf16 with
  /// --cuda-bf16.
  NSPrecision precision() const {
    if (!nsPrecision.getNumOccurrences() && cudaBf16)
      return NSPrecision::bf16;
    return nsPrecision;
  }

  PipelineOptions options(bool probeUpdates) const {
    return PipelineOptions{probeUpdates, nsMode,     machine,       dpAssign,
                           syrk,         batch,      fuseAllReduce, chunkRows,
                           nsForm,       precision()};
  }

  TargetOptions targetOptions() const {
    return TargetOptions{target, cudaArch,
                         "+ptx" + std::to_string(ptxVersion(cudaArch))};
  }
};

} // namespace mlir::muir

#endif // MUIR_DRIVER_PIPELINEFLAGS_H
