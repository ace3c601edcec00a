//===- Resume.cpp - a run resumed from a saved state ----------------------===//
//
// See include/muir/Tooling/Resume.h.
//
//===----------------------------------------------------------------------===//
#include "muir/Tooling/Resume.h"

#include "llvm/ADT/Twine.h"

#include <algorithm>
#include <cstdlib>

using namespace mlir;
using namespace mlir::muir;
using namespace mlir::muir::tooling;

llvm::Expected<int64_t>
tooling::openResumed(const Step &step, llvm::StringRef dir, int64_t moreSteps,
                     std::optional<state::OpenedState> &opened) {
  auto state = state::OpenedState::open(dir);
  if (!state)
    return state.takeError();
  opened.emplace(std::move(*state));
  std::vector<state::StateTensor> tensors;
  for (const runner::Argument &a : step.arguments())
    if (a.isTensor())
      tensors.push_back({a.name, std::vector<int64_t>(a.globalShape.begin(),
                                                      a.globalShape.end())});
  state::HashShare share;
  if (runner::underMPI()) {
    const char *rank = getenv("OMPI_COMM_WORLD_RANK");
    const char *size = getenv("OMPI_COMM_WORLD_SIZE");
    share.count = std::max(1, size ? std::atoi(size) : 1);
    share.index = rank ? std::atoi(rank) % share.count : 0;
  }
  auto saved =
      state::checkState(*opened, step.identity(), tensors, moreSteps, share);
  if (!saved)
    return saved.takeError();
  return *saved + 1;
}

llvm::Error tooling::loadResumed(const Step &step, HostTensors &tensors,
                                 state::OpenedState &opened,
                                 int32_t &numLoaded) {
  llvm::Error e = tensors.load(opened.path(), numLoaded, opened.given());
  std::string why = e ? llvm::toString(std::move(e)) : "";
  switch (agreeOnEveryRank(step, why.empty(), opened.manifestHash)) {
  case RankAgreement::Same:
    return llvm::Error::success();
  case RankAgreement::SomeFailed:
    return llvm::createStringError(
        why.empty() ? "cannot resume from '" + opened.given() +
                          "': another rank could not read it"
                    : why);
  case RankAgreement::Differ:
    return llvm::createStringError(
        "cannot resume from '" + opened.given() +
        "': the state was replaced while the ranks read it (a save into it "
        "ran meanwhile); run again");
  }
  llvm_unreachable("every agreement is handled");
}
