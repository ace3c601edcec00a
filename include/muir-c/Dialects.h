/*===- muir-c/Dialects.h - muir's dialects in MLIR's C API --------*- C -*-===*\
|*                                                                            *|
|* The handles of the muir and muir_exec dialects, as MLIR's C API gives      *|
|* every dialect (mlirDialectHandleInsertDialect,                             *|
|* mlirDialectHandleLoadDialect, mlirDialectHandleGetNamespace), and the      *|
|* registration of muir's passes and pipelines, so that a program on MLIR's   *|
|* C API (or bindings built on it) reads, writes and transforms muir IR. The  *|
|* library: build/lib/libMuirCAPI.so, over the same libMLIR.so as the         *|
|* caller's C API. It holds its own copy of muir's dialects: a process loads *|
|* it or libmuir_step.so (the step library's C API, muir/Step.h), not both.  *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/
#ifndef MUIR_C_DIALECTS_H
#define MUIR_C_DIALECTS_H

#include "mlir-c/IR.h"

#ifdef __cplusplus
extern "C" {
#endif

/* mlirGetDialectHandle__muir__(): the tensor-level dialect. */
MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(Muir, muir);
/* mlirGetDialectHandle__muir_exec__(): the execution-level dialect. */
MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(MuirExec, muir_exec);

/* Registers muir's passes and named pipelines (muir-opt's) with MLIR's
 * global registry: mlirParsePassPipeline then knows them. Once per process
 * is enough; later calls do nothing. */
MLIR_CAPI_EXPORTED void mlirRegisterMuirPasses(void);

#ifdef __cplusplus
}
#endif

#endif /* MUIR_C_DIALECTS_H */
