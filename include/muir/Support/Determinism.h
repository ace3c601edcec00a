//===- Determinism.h - how a step orders its sums ---------------*- C++ -*-===//
//
// The pipeline's deterministic option, declared once with its names
// (EnumNames.h): the importer, the pipelines and the step library read it.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_SUPPORT_DETERMINISM_H
#define MUIR_SUPPORT_DETERMINISM_H

#include "muir/Support/EnumFlags.h"
#include "muir/Support/EnumNames.h"

namespace mlir::muir {

/// How a step's sums are ordered: off (the libraries' fastest,
/// MPI_Allreduce or ncclAllReduce), on (fixed orders: the same bits on
/// every run of one layout), or layout-invariant (orders fixed by the
/// global tensors, not the ranks: the same bits on every layout of one
/// description and global batch).
enum class Determinism { Off, On, LayoutInvariant };

/// The orders of sums, declared once: their names in flags and options.
inline constexpr EnumName<Determinism> kDeterminisms[] = {
    {Determinism::Off, "false",
     "the libraries' fastest sums (MPI_Allreduce, ncclAllReduce)"},
    {Determinism::On, "true",
     "fixed orders: the same bits on every run of one layout"},
    {Determinism::LayoutInvariant, "layout-invariant",
     "orders fixed by the global tensors: the same bits on every layout "
     "(dp, ep, tp, fsdp) of one description and global batch (CPU; one "
     "BLAS thread a rank, Newton-Schulz of split matrices duplicated)"},
};

inline llvm::StringRef stringify(Determinism determinism) {
  return enumName(kDeterminisms, determinism);
}

/// The values the deterministic flags and options accept.
inline llvm::cl::ValuesClass determinismValues() {
  return enumValues(kDeterminisms);
}

} // namespace mlir::muir

MUIR_ENUM_FLAG(mlir::muir::Determinism)

#endif // MUIR_SUPPORT_DETERMINISM_H
