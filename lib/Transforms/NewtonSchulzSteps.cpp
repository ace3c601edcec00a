//===- NewtonSchulzSteps.cpp - Newton-Schulz steps as one loop ------------===//
//
// See include/muir/Transforms/NewtonSchulzSteps.h.
//
//===----------------------------------------------------------------------===//
#include "muir/Transforms/NewtonSchulzSteps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace mlir::muir;

NSCoefficients::NSCoefficients(OpBuilder &b, Location loc,
                               ArrayRef<std::array<double, 3>> table)
    : table(table) {
  assert(!table.empty() && "a Newton-Schulz table has a triple");
  if (table.size() == 1) {
    for (int j = 0; j < 3; ++j)
      uniform[j] = arith::ConstantOp::create(b, loc,
                                             b.getF64FloatAttr(table[0][j]));
    return;
  }
  SmallVector<double> flat;
  for (const auto &abc : table)
    llvm::append_range(flat, abc);
  auto type = RankedTensorType::get(
      {static_cast<int64_t>(table.size()), 3}, b.getF64Type());
  constants = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(type, ArrayRef<double>(flat)));
}

std::array<Value, 3> NSCoefficients::at(OpBuilder &b, Location loc,
                                        Value k) const {
  if (!constants)
    return uniform;
  // Past the table's end its last triple repeats.
  Value last = arith::ConstantIndexOp::create(b, loc, table.size() - 1);
  Value row = arith::MinUIOp::create(b, loc, k, last);
  std::array<Value, 3> abc;
  for (int j = 0; j < 3; ++j)
    abc[j] = tensor::ExtractOp::create(
        b, loc, constants,
        ValueRange{row, arith::ConstantIndexOp::create(b, loc, j)});
  return abc;
}

std::array<double, 3> NSCoefficients::at(int64_t k) const {
  return table[std::min<size_t>(k, table.size() - 1)];
}

SmallVector<Value> mlir::muir::buildStepLoop(
    OpBuilder &b, Location loc, int64_t from, int64_t to, ValueRange init,
    function_ref<SmallVector<Value>(OpBuilder &, Location, Value, ValueRange)>
        step) {
  if (from >= to)
    return SmallVector<Value>(init);
  Value lo = arith::ConstantIndexOp::create(b, loc, from);
  Value hi = arith::ConstantIndexOp::create(b, loc, to);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto loop = scf::ForOp::create(
      b, loc, lo, hi, one, init,
      [&](OpBuilder &nb, Location nl, Value k, ValueRange carried) {
        scf::YieldOp::create(nb, nl, step(nb, nl, k, carried));
      });
  return SmallVector<Value>(loop.getResults());
}
