//===- muir-opt.cpp - muir's optimizer driver -----------------------------===//
//
// mlir-opt with the muir dialects, passes and pipelines registered beside
// every upstream dialect and pass the pipelines produce. The input is read
// within the tools' size limit (muir/Support/Files.h) before mlir-opt's
// machinery gets it.
//
//===----------------------------------------------------------------------===//
#include "muir/Support/Nesting.h"
#include "muir/Driver/Pipelines.h"
#include "muir/Support/Files.h"
#include "muir/Support/VersionPrinter.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/WithColor.h"

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  mlir::registerAllPasses();
  mlir::muir::registerMuirPassesAndPipelines();
  mlir::DialectRegistry registry;
  mlir::muir::registerMuirDialects(registry);
  mlir::muir::setVersionPrinter("muir-opt");
  auto [inputFile, outputFile] = mlir::registerAndParseCLIOptions(
      argc, argv, "muir optimizer driver\n", registry);
  mlir::MlirOptMainConfig config = mlir::MlirOptMainConfig::createFromCLOptions();
  std::string error;
  auto fail = [](const std::string &msg) {
    llvm::WithColor::error(llvm::errs(), "muir-opt") << msg << "\n";
    return 1;
  };
  // The output never replaces the input, and is written whole or not at
  // all: a failing pass leaves what was at -o as it was.
  if (std::string bad = mlir::muir::checkPathUses(
          {{"the input", inputFile, mlir::muir::PathKind::InputFile, true},
           {"-o", outputFile, mlir::muir::PathKind::OutputFile, true}});
      !bad.empty())
    return fail(bad);
  auto input = mlir::muir::readBoundedFile(inputFile, error);
  if (!input)
    return fail(error);
  // Nested past the bound: refused before MLIR's parser recurses into it.
  if (mlir::muir::findTooDeep(input->getBuffer(),
                              mlir::muir::NestingSyntax::Mlir)) {
    llvm::SourceMgr sm;
    unsigned id = sm.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
    mlir::muir::reportTooDeep(sm, id, mlir::muir::NestingSyntax::Mlir,
                              "module");
    return 1;
  }
  auto output = mlir::muir::AtomicOutput::open(outputFile, error);
  if (!output)
    return fail(error);
  if (mlir::failed(mlir::MlirOptMain(output->os(), std::move(input),
                                     registry, config)))
    return 1;
  if (!output->commit(error))
    return fail(error);
  return 0;
}
