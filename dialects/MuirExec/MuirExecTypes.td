//===- MuirExecTypes.td - the muir_exec types --------------*- tablegen -*-===//
#ifndef MUIR_EXEC_TYPES_TD
#define MUIR_EXEC_TYPES_TD

include "MuirExec/MuirExecDialect.td"
include "mlir/IR/AttrTypeBase.td"

def MuirExec_RequestType : TypeDef<MuirExec_Dialect, "Request"> {
  let mnemonic = "request";
  let summary = "a started exchange that one wait completes";
  let description = [{
    The result of an asynchronous collective's start
    (`triangle_all_reduce_start`, `packed_all_reduce_start`), which exactly
    one matching wait takes. `muir-exec-to-runtime-calls` turns it into the
    runtime's `i64` handle, through the loops that carry it.
  }];
}

#endif // MUIR_EXEC_TYPES_TD
