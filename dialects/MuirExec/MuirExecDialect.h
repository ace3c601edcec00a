//===- MuirExecDialect.h - the execution-level dialect ----------*- C++ -*-===//
#ifndef MUIR_DIALECT_MUIREXEC_MUIREXECDIALECT_H
#define MUIR_DIALECT_MUIREXEC_MUIREXECDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::muir {
class GridOp;
} // namespace mlir::muir

#include "MuirExec/MuirExecOpsDialect.h.inc"
#include "MuirExec/MuirExecEnums.h.inc"
#define GET_ATTRDEF_CLASSES
#include "MuirExec/MuirExecAttrs.h.inc"
#define GET_TYPEDEF_CLASSES
#include "MuirExec/MuirExecTypes.h.inc"
namespace mlir::muir_exec {
/// The GroupOpInterface's verifier: the op's `group` names a muir.grid in
/// scope and axes of it.
LogicalResult verifyGroup(Operation *op);
/// Whether `type` is a buffer in `#muir_exec.host` memory.
bool isHostMemory(Type type);
} // namespace mlir::muir_exec
#include "MuirExec/MuirExecInterfaces.h.inc"
#define GET_OP_CLASSES
#include "MuirExec/MuirExecOps.h.inc"

#endif // MUIR_DIALECT_MUIREXEC_MUIREXECDIALECT_H
