//===- MuirDialect.h - the muir dialect -------------------------*- C++ -*-===//
//
// Declarations of the high-level muir dialect: its ops, enums and the
// StrictAttributes trait every muir op carries.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_DIALECT_MUIR_MUIRDIALECT_H
#define MUIR_DIALECT_MUIR_MUIRDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <array>

namespace mlir::muir {
/// Rejects attributes that are neither inherent to the op nor namespaced
/// (`dialect.name`), so that a misspelt hyperparameter is an error instead of
/// being carried along silently.
LogicalResult verifyNoUnknownAttributes(Operation *op);

template <typename ConcreteType>
class StrictAttributes
    : public OpTrait::TraitBase<ConcreteType, StrictAttributes> {
public:
  static LogicalResult verifyTrait(Operation *op) {
    return verifyNoUnknownAttributes(op);
  }
};

/// The double parameters of muir attributes (cost estimates): printed with
/// %g, parsed as a float literal.
FailureOr<APFloat> parseF64Parameter(AsmParser &parser);
/// A machine profile parameter (muir.ns_why's): a string naming one of the
/// Machine enum's values.
enum class Machine : uint32_t;
FailureOr<std::optional<Machine>> parseMachineParameter(AsmParser &parser);
void printMachineParameter(AsmPrinter &printer,
                           std::optional<Machine> machine);
void printF64Parameter(AsmPrinter &printer, const APFloat &value);
} // namespace mlir::muir

#include "Muir/MuirEnums.h.inc"
// The attributes before the dialect: its discardable attributes' helpers
// (MuirDialect.td) name their types.
#define GET_ATTRDEF_CLASSES
#include "Muir/MuirAttrs.h.inc"
#include "Muir/MuirOpsDialect.h.inc"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::muir {
/// A split of a matrix whose block a rank holds: the matrix dimension it
/// splits (0: rows, 1: columns, of the last two), and the grid axis over
/// which the blocks lie (a reduction over that dimension all-reduces over
/// `axis` of `grid`).
struct MatrixSplit {
  int dim;
  FlatSymbolRefAttr grid;
  StringAttr axis;
  int64_t group; ///< ranks along `axis` (blocks of the dimension)
};
} // namespace mlir::muir

#include "Muir/MuirInterfaces.h.inc"

#define GET_OP_CLASSES
#include "Muir/MuirOps.h.inc"

namespace mlir::muir {
/// The (a, b, c) triples of a named schedule (empty for `custom`).
ArrayRef<std::array<double, 3>> getNamedSchedule(NSSchedule schedule);

/// Every schedule's name, in the NSSchedule enum's order (`custom` last):
/// what the op parser and the description reader accept.
ArrayRef<StringRef> getScheduleNames();

/// The coefficient table of `steps` iterations: from `explicitCoeffs` (a
/// flat a0,b0,c0,... list) for `custom`, else from the named set, cut to
/// `steps` triples and to the last that differs from its successor; step k
/// uses triple min(k, size - 1) (past the table the last repeats). What a
/// Newton-Schulz loop embeds.
SmallVector<std::array<double, 3>>
resolveTable(NSSchedule schedule, std::optional<ArrayRef<double>> explicitCoeffs,
             int64_t steps);

/// The factor Muon multiplies the orthogonalised update by, for an m x n
/// matrix.
double getUpdateScale(ScaleMode mode, double extra, int64_t m, int64_t n);

/// The runtime's axes mask for `axes` of `grid`: bit i for axis i, and the
/// grid's folding index (GridOp::getFoldingIndex: 0 for the run's grid,
/// then 1, 2, ... for the grids that fold it, in the module's order) in bits
/// 48 and up (see muirrt_dist_add_folding).
int64_t getRuntimeAxesMask(GridOp grid, ArrayAttr axes);

/// The run's grid: the module's one grid that folds no other; a null
/// GridOp when the module has no grid (one device). Fails, with an error on
/// the second such grid, when there are several.
FailureOr<GridOp> getRunGrid(ModuleOp module);

/// The module's grids by folding index: the run's grid, then the grids
/// that fold it in the module's order (empty without grids).
FailureOr<SmallVector<GridOp>> getGridsByFoldingIndex(ModuleOp module);

// The names the importer gives locations, which the analyses read (one
// convention for both; the importer writes them, StepCost reads them).
/// The location of a trained MoE layer's ops in a step's IR is named
/// `moe <layer>` (around the layer's place in the description), so that the
/// plan report counts the layer's work apart from the optimizer's.
inline constexpr llvm::StringLiteral kTrainedLayerLoc = "moe ";

/// The location of a parameter's update ops (`param <name>`, around the
/// parameter's place in the description), which the passes carry to what
/// they make of them (a batched Newton-Schulz fuses its matrices'), so that
/// the plan report can name the matrices of each Newton-Schulz.
inline constexpr llvm::StringLiteral kParamLoc = "param ";
} // namespace mlir::muir

#endif // MUIR_DIALECT_MUIR_MUIRDIALECT_H
