//===- NewtonSchulzSteps.h - Newton-Schulz steps as one loop ----*- C++ -*-===//
//
// Every form of Newton-Schulz (one rank's standard form, its Gram form, and
// muir-distribute's iteration over a split matrix) is one step repeated
// with the coefficients of a table: an scf.for over the steps whose body is
// one step, reading step k's (a, b, c) from the table (its last triple
// repeating), so that the generated code does not grow with the count.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_TRANSFORMS_NEWTONSCHULZSTEPS_H
#define MUIR_TRANSFORMS_NEWTONSCHULZSTEPS_H

#include "mlir/IR/Builders.h"

#include <array>

namespace mlir::muir {

/// A coefficient table in the IR: an f64 [size, 3] constant (three f64
/// constants when it has one triple), built where the builder stands.
class NSCoefficients {
public:
  NSCoefficients(OpBuilder &b, Location loc,
                 ArrayRef<std::array<double, 3>> table);

  /// Step k's (a, b, c) as f64 values (k an index value in a loop).
  std::array<Value, 3> at(OpBuilder &b, Location loc, Value k) const;
  /// Step k's (a, b, c) as constants (k known, outside a loop).
  std::array<double, 3> at(int64_t k) const;

private:
  SmallVector<std::array<double, 3>> table;
  Value constants;                 // the [size, 3] table, size > 1
  std::array<Value, 3> uniform{};  // the one triple, size 1
};

/// Steps [from, to) of an iteration carrying `init`: an scf.for whose body
/// `step` builds from the step index and the carried values, returning the
/// next ones. Returns the values after the last step (`init` when
/// from >= to).
SmallVector<Value>
buildStepLoop(OpBuilder &b, Location loc, int64_t from, int64_t to,
              ValueRange init,
              function_ref<SmallVector<Value>(OpBuilder &, Location, Value,
                                              ValueRange)>
                  step);

} // namespace mlir::muir

#endif // MUIR_TRANSFORMS_NEWTONSCHULZSTEPS_H
