//===- muir-opt.cpp - muir's optimizer driver -----------------------------===//
//
// mlir-opt with the muir dialects, passes and pipelines registered beside
// every upstream dialect and pass the pipelines produce.
//
//===----------------------------------------------------------------------===//
#include "muir/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::muir::registerMuirPassesAndPipelines();
  mlir::DialectRegistry registry;
  mlir::muir::registerMuirDialects(registry);
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "muir optimizer driver\n", registry));
}
