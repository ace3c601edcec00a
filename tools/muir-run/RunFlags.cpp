//===- RunFlags.cpp - muir-run's flags checked together -------------------===//
//
// See RunFlags.h.
//
//===----------------------------------------------------------------------===//
#include "RunFlags.h"
#include "muir/Support/Files.h"

using namespace muir_run;
using llvm::StringRef;
namespace muir = mlir::muir;

std::string RunFlags::check(const muir::PipelineFlags &flags, bool launcher,
                            bool cuda) const {
  if (numSteps < 1)
    return "--steps must be at least 1, got " + std::to_string(numSteps);
  if (numRanks < 1)
    return "--ranks must be at least 1, got " + std::to_string(numRanks);
  if (std::string bad = flags.check(); !bad.empty())
    return bad;
  if (!resumeDir.empty() && !loadDir.empty())
    return "give either --load or --resume, not both";
  if (!resumeDir.empty() && seed.getNumOccurrences())
    return "--seed has no effect with --resume: the saved state holds "
           "every tensor; leave --seed out";
  if (launcher && inputFile == "-")
    return "--ranks needs an input file, not stdin";
  if (cuda && (!traceFile.empty() || commStats))
    return std::string(!traceFile.empty() ? "--trace-fingerprints"
                                          : "--comm-stats") +
           " is not available with --target=cuda yet";
  if (!cuda && cudaCublasGrouped)
    return "--cuda-cublas-grouped-gemm needs --target=cuda";
  using muir::PathKind;
  auto given = [](const cl::opt<std::string> &o) {
    return o.getNumOccurrences() > 0;
  };
  std::vector<muir::PathUse> paths = {
      {"the input", inputFile, PathKind::InputFile, given(inputFile)},
      {"--load", loadDir, PathKind::InputDir, given(loadDir)},
      {"--resume", resumeDir, PathKind::InputDir, given(resumeDir)},
      {"--dump", dumpDir, PathKind::OutputDir, given(dumpDir)},
      {"--save-state", saveState, PathKind::OutputDir, given(saveState)}};
  if (StringRef(lrSchedule).starts_with("file:"))
    paths.push_back(
        {"--lr-schedule", lrSchedule.substr(5), PathKind::InputFile, true});
  // With several ranks each writes its own FILE.rank<R>.
  if (numRanks > 1 && !traceFile.empty())
    for (int r = 0; r < numRanks; ++r)
      paths.push_back({"--trace-fingerprints",
                       traceFile + ".rank" + std::to_string(r),
                       PathKind::OutputFile, true});
  else
    paths.push_back({"--trace-fingerprints", traceFile, PathKind::OutputFile,
                     given(traceFile)});
  return muir::checkPathUses(paths, {{"--save-state", "--resume"}});
}
