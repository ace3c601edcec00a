//===- MuirDialect.cpp - the muir dialect ---------------------------------===//
//
// Dialect registration, the generated enum/attr definitions and the
// coefficient schedules of Newton-Schulz.
//
//===----------------------------------------------------------------------===//
#include "Muir/MuirDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::muir;

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "Muir/MuirEnums.cpp.inc"
#pragma GCC diagnostic pop
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "Muir/MuirOpsDialect.cpp.inc"
#pragma GCC diagnostic pop
#define GET_ATTRDEF_CLASSES
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "Muir/MuirAttrs.cpp.inc"
#pragma GCC diagnostic pop

void MuirDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "Muir/MuirAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "Muir/MuirOps.cpp.inc"
      >();
}

LogicalResult mlir::muir::verifyNoUnknownAttributes(Operation *op) {
  ArrayRef<StringAttr> inherent = op->getName().getAttributeNames();
  for (NamedAttribute attr : op->getDiscardableAttrs()) {
    StringRef name = attr.getName().getValue();
    // Namespaced attributes (`muir.name`, `llvm.x`) belong to a dialect and
    // are checked by it; anything else is a typo or a stale option.
    if (name.contains('.'))
      continue;
    std::string expected;
    for (StringAttr known : inherent)
      expected += (expected.empty() ? "" : ", ") + known.getValue().str();
    return op->emitOpError("unknown attribute '")
           << name << "'; expected one of: "
           << (expected.empty() ? "(none)" : expected);
  }
  return success();
}

// Published coefficient sets. simple: Keller Jordan's quintic with one
// triple; quintic: the five-step schedule used by the Muon reference
// implementations; polar_express: Amsel et al., 2025 (last triple repeats).
static const std::array<double, 3> kSimple[] = {{3.4445, -4.7750, 2.0315}};
static const std::array<double, 3> kQuintic[] = {
    {4.0848, -6.8946, 2.9270}, {3.9505, -6.3029, 2.6377},
    {3.7418, -5.5913, 2.3037}, {2.8769, -3.1427, 1.2046},
    {2.8366, -3.0525, 1.2012}};
static const std::array<double, 3> kPolarExpress[] = {
    {8.2051, -22.9019, 16.4607}, {4.0664, -2.8612, 0.5184},
    {3.9096, -2.8234, 0.5250},   {3.2856, -2.4153, 0.4853},
    {2.2779, -1.6198, 0.3985},   {1.8726, -1.2307, 0.3585},
    {1.8564, -1.2132, 0.3568},   {1.875, -1.25, 0.375}};

ArrayRef<std::array<double, 3>>
mlir::muir::getNamedSchedule(NSSchedule schedule) {
  switch (schedule) {
  case NSSchedule::simple:
    return kSimple;
  case NSSchedule::quintic:
    return kQuintic;
  case NSSchedule::polar_express:
    return kPolarExpress;
  case NSSchedule::custom:
    return {};
  }
  return {};
}

SmallVector<std::array<double, 3>>
mlir::muir::resolveSchedule(NSSchedule schedule,
                            std::optional<ArrayRef<double>> explicitCoeffs,
                            int64_t steps) {
  SmallVector<std::array<double, 3>> table;
  if (schedule == NSSchedule::custom && explicitCoeffs) {
    for (size_t i = 0; i + 2 < explicitCoeffs->size(); i += 3)
      table.push_back({(*explicitCoeffs)[i], (*explicitCoeffs)[i + 1],
                       (*explicitCoeffs)[i + 2]});
  } else {
    llvm::append_range(table, getNamedSchedule(schedule));
  }
  SmallVector<std::array<double, 3>> result;
  if (table.empty())
    return result;
  for (int64_t k = 0; k < steps; ++k)
    result.push_back(table[std::min<size_t>(k, table.size() - 1)]);
  return result;
}

double mlir::muir::getUpdateScale(ScaleMode mode, double extra, int64_t m,
                                  int64_t n) {
  double dm = static_cast<double>(m), dn = static_cast<double>(n);
  switch (mode) {
  case ScaleMode::spectral:
    return extra * std::sqrt(std::max(dm, dn));
  case ScaleMode::shape:
    return std::sqrt(std::max(1.0, dm / dn));
  case ScaleMode::unit_rms:
    return std::sqrt(dm / dn);
  }
  return 1.0;
}
