//===- MuirExecDialect.h - the execution-level dialect ----------*- C++ -*-===//
#ifndef MUIR_DIALECT_MUIREXEC_MUIREXECDIALECT_H
#define MUIR_DIALECT_MUIREXEC_MUIREXECDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "MuirExec/MuirExecOpsDialect.h.inc"
#include "MuirExec/MuirExecEnums.h.inc"
#define GET_ATTRDEF_CLASSES
#include "MuirExec/MuirExecAttrs.h.inc"
#include "MuirExec/MuirExecInterfaces.h.inc"
#define GET_OP_CLASSES
#include "MuirExec/MuirExecOps.h.inc"

#endif // MUIR_DIALECT_MUIREXEC_MUIREXECDIALECT_H
