//===- DescriptionInternal.h - helpers of the Description files -*- C++ -*-===//
//
// Private to lib/Import: the helpers that the reader (Description.cpp),
// validation (DescriptionValidate.cpp) and writer (DescriptionWriter.cpp) of
// training-step descriptions share. Not part of muir's interface.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_LIB_IMPORT_DESCRIPTIONINTERNAL_H
#define MUIR_LIB_IMPORT_DESCRIPTIONINTERNAL_H

#include "muir/Import/Description.h"

#include <cstdint>
#include <optional>
#include <string>

namespace mlir::muir::desc::detail {

/// `v` as the writer spells it: the shortest of 15..17 significant digits
/// that reads back exactly, with a decimal point before any exponent.
/// Defined in DescriptionWriter.cpp.
std::string number(double v);

/// The number of devices of a folding (the product of its axes' sizes), or
/// nullopt when it is more than kMaxDevices. Defined in
/// DescriptionValidate.cpp.
std::optional<int64_t> numDevicesChecked(ArrayRef<GridAxis> axes);

} // namespace mlir::muir::desc::detail

#endif // MUIR_LIB_IMPORT_DESCRIPTIONINTERNAL_H
