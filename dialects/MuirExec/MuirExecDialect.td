//===- MuirExecDialect.td - the execution-level dialect ----*- tablegen -*-===//
#ifndef MUIR_EXEC_DIALECT_TD
#define MUIR_EXEC_DIALECT_TD

include "mlir/IR/OpBase.td"

def MuirExec_Dialect : Dialect {
  let name = "muir_exec";
  let cppNamespace = "::mlir::muir_exec";
  let summary = "muir's execution level: buffers and runtime calls";
  let description = [{
    The per-rank program after bufferization: operands are memrefs with
    static shapes and identity layouts, and each op is one runtime call
    (BLAS, normalisation, observation; later collectives). The
    `muir-exec-to-runtime-calls` pass turns these ops into calls to the
    runtime's C functions.
  }];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
}

#endif // MUIR_EXEC_DIALECT_TD
