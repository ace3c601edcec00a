//===- muir-lsp-server.cpp - MLIR's language server with muir's dialects --===//
//
// upstream's mlir-lsp-server (MlirLspServerMain: diagnostics, hover,
// go-to-definition, document symbols over the editor's `.mlir` files) with
// the dialects muir's tools read and write registered: muir and muir_exec
// beside every upstream dialect the pipelines emit.
//
//===----------------------------------------------------------------------===//
#include "muir/Driver/Pipelines.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-lsp-server/MlirLspServerMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::muir::registerMuirDialects(registry);
  return mlir::failed(mlir::MlirLspServerMain(argc, argv, registry));
}
