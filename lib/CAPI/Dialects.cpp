//===- Dialects.cpp - muir's dialects in MLIR's C API ---------------------===//
//
// See muir-c/Dialects.h.
//
//===----------------------------------------------------------------------===//
#include "muir-c/Dialects.h"

#include "Muir/MuirDialect.h"
#include "MuirExec/MuirExecDialect.h"
#include "muir/Driver/Pipelines.h"

#include "mlir/CAPI/Registration.h"

#include <mutex>

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(Muir, muir, mlir::muir::MuirDialect)
MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(MuirExec, muir_exec,
                                      mlir::muir_exec::MuirExecDialect)

void mlirRegisterMuirPasses(void) {
  static std::once_flag once;
  std::call_once(once, [] { mlir::muir::registerMuirPassesAndPipelines(); });
}
