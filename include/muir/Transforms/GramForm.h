//===- GramForm.h - the Gram form of Newton-Schulz --------------*- C++ -*-===//
//
// The iteration on the small Gram matrix that muir-gram-newton-schulz
// writes for one rank's matrices and muir-distribute for a matrix split
// over ranks (whose Gram matrix is summed once over the group).
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_TRANSFORMS_GRAMFORM_H
#define MUIR_TRANSFORMS_GRAMFORM_H

#include "mlir/IR/Builders.h"

#include <array>

namespace mlir::muir {

/// Q (f64, `a`'s type) of the Gram form from the normalised Gram matrix `a`
/// (f64, square, or a stack), over `steps` steps with the coefficients of
/// `table` (resolveTable): per step with (a, b, c), B = b A + c A A;
/// Q = a I + B at the first step, a Q + B Q after; A <- A P^2 with
/// P^2 = B B + 2 a B + a^2 I, except after the last step. The first step
/// is written out, the others are one loop (each begins with the previous
/// step's A <- A P^2). Symmetric products are `muir.syrk` when `syrk`, and
/// the products of commuting symmetric matrices are marked `symmetric`.
Value buildGramIteration(OpBuilder &b, Location loc, Value a,
                         ArrayRef<std::array<double, 3>> table, int64_t steps,
                         bool syrk);

} // namespace mlir::muir

#endif // MUIR_TRANSFORMS_GRAMFORM_H
