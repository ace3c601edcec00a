//===- muir-reduce.cpp - MLIR's test-case reducer with muir's dialects ----===//
//
// upstream's mlir-reduce (mlirReduceMain) over muir IR: it shrinks a module
// while an interestingness script (`-test`, exiting non-zero on an
// interesting case) still holds, with muir's dialects, passes and pipelines
// registered so that `-reduction-tree`'s and `-opt-reduction-pass`'s
// pipelines may name them.
//
//===----------------------------------------------------------------------===//
#include "muir/Driver/Pipelines.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-reduce/MlirReduceMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::muir::registerMuirPassesAndPipelines();
  mlir::DialectRegistry registry;
  mlir::muir::registerMuirDialects(registry);
  mlir::MLIRContext context(registry);
  return mlir::failed(mlir::mlirReduceMain(argc, argv, context));
}
