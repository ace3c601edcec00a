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

#include "muir/Driver/Pipelines.h"
#include "muir/Support/VersionPrinter.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/CommandLine.h"

#include <string>
#include <type_traits>
#include <vector>

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

/// What stands for a pipeline option the tools have no flag for: never
/// given, its value the one options() is told.
template <typename T> struct NoFlag {
  template <typename... Args> NoFlag(Args &&...) {}
  int getNumOccurrences() const { return 0; }
};

struct PipelineFlags {
  // One flag per pipeline option of muir/Driver/Options.def (but
  // probe-updates: muir-run's --no-probes).
#define MUIR_PIPELINE_OPTION(FIELD, TYPE, NAME, DEFAULT, FLAG, IDENTITY,      \
                             HELP)                                            \
  std::conditional_t<FLAG, llvm::cl::opt<TYPE>, NoFlag<TYPE>> FIELD{          \
      NAME, llvm::cl::desc(HELP), llvm::cl::init(DEFAULT),                    \
      llvm::cl::cat(muirFlagCategory())};
#define MUIR_PIPELINE_ENUM_OPTION(FIELD, TYPE, NAME, DEFAULT, VALUES,         \
                                  IDENTITY, HELP)                             \
  llvm::cl::opt<TYPE> FIELD{NAME, llvm::cl::desc(HELP),                       \
                            llvm::cl::init(DEFAULT), VALUES,                  \
                            llvm::cl::cat(muirFlagCategory())};
#include "muir/Driver/Options.def"

  llvm::cl::opt<Target> target{
      "target", llvm::cl::desc("backend"), llvm::cl::init(Target::Cpu),
      targetValues(), llvm::cl::cat(muirFlagCategory())};
  llvm::cl::opt<std::string> cudaArch{
      "cuda-arch",
      llvm::cl::desc("with --target=cuda, the GPU architecture of the "
                     "kernels: sm_80 and up (sm_90: Hopper, the default)"),
      llvm::cl::init("sm_90"), llvm::cl::cat(muirFlagCategory())};

  // The step options both tools have as flags (cuda-bf16).
#define MUIR_TOOLS_FLAG(FIELD, TYPE, NAME, DEFAULT, HELP)                      \
  llvm::cl::opt<TYPE> FIELD{NAME, llvm::cl::desc(HELP),                       \
                            llvm::cl::init(DEFAULT),                          \
                            llvm::cl::cat(muirFlagCategory())};
#include "muir/Driver/Options.def"

  template <typename T>
  static void take(T &out, const llvm::cl::opt<T> &flag) {
    out = flag;
  }
  template <typename T> static void take(T &, const NoFlag<T> &) {}

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
    std::vector<std::string> flags = given();
    return checkOptions(
        options(false), targetOptions(), cudaBf16,
        [&](llvm::StringRef name) {
          if (name == "cuda-arch")
            return cudaArch.getNumOccurrences() > 0;
          if (name == "cuda-bf16")
            return cudaBf16.getNumOccurrences() > 0;
          return llvm::is_contained(flags, name);
        },
        [](llvm::StringRef name, llvm::StringRef value) {
          return ("--" + name + (value.empty() ? "" : "=") + value).str();
        });
  }

  /// The iterate's element type: --ns-precision, else bf16 with
  /// --cuda-bf16.
  NSPrecision precision() const {
    if (!nsPrecision.getNumOccurrences() && cudaBf16)
      return NSPrecision::bf16;
    return nsPrecision;
  }

  PipelineOptions options(bool probe) const {
    PipelineOptions o;
#define MUIR_PIPELINE_OPTION(FIELD, TYPE, NAME, DEFAULT, FLAG, IDENTITY,      \
                             HELP)                                            \
  take(o.FIELD, FIELD);
#define MUIR_PIPELINE_ENUM_OPTION(FIELD, TYPE, NAME, DEFAULT, VALUES,         \
                                  IDENTITY, HELP)                             \
  take(o.FIELD, FIELD);
#include "muir/Driver/Options.def"
    o.probeUpdates = probe;
    o.nsPrecision = precision();
    return o;
  }

  /// The pipeline flags given on the command line, by name.
  std::vector<std::string> given() const {
    std::vector<std::string> names;
#define MUIR_PIPELINE_OPTION(FIELD, TYPE, NAME, DEFAULT, FLAG, IDENTITY,      \
                             HELP)                                            \
  if (FIELD.getNumOccurrences())                                              \
    names.push_back(NAME);
#define MUIR_PIPELINE_ENUM_OPTION(FIELD, TYPE, NAME, DEFAULT, VALUES,         \
                                  IDENTITY, HELP)                             \
  MUIR_PIPELINE_OPTION(FIELD, TYPE, NAME, DEFAULT, true, IDENTITY, HELP)
#include "muir/Driver/Options.def"
    return names;
  }

  TargetOptions targetOptions() const {
    return TargetOptions{target, cudaArch,
                         "+ptx" + std::to_string(ptxVersion(cudaArch))};
  }
};

} // namespace mlir::muir

#endif // MUIR_DRIVER_PIPELINEFLAGS_H
