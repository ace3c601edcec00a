//===- MuirOpsInternal.h - checks the op files share -------------*- C++ -*-===//
//
// Verifier helpers of MuirOps.cpp that MuirCollectives.cpp uses too.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_DIALECT_MUIROPSINTERNAL_H
#define MUIR_DIALECT_MUIROPSINTERNAL_H

#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"

#include <limits>
#include <string>

namespace mlir::muir::opcheck {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// "4x8".
std::string shapeStr(ArrayRef<int64_t> shape);
/// Matrices and stacks of matrices: rank 2 or 3.
LogicalResult verifyMatrixRank(Operation *op, Type type, StringRef what);
/// `value` in the interval from lo to hi, each end open or closed.
LogicalResult verifyRange(Operation *op, StringRef name, double value,
                          double lo, bool loInclusive, double hi,
                          bool hiInclusive);
/// `got` is the tensor type of `shape` and `element`.
LogicalResult expectType(Operation *op, StringRef what, Type got,
                         ArrayRef<int64_t> shape, Type element);

} // namespace mlir::muir::opcheck

#endif // MUIR_DIALECT_MUIROPSINTERNAL_H
