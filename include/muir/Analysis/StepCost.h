//===- StepCost.h - what each rank of a compiled step runs ------*- C++ -*-===//
//
// The per-rank costs of the plan report read from the step's exec IR (the
// output of muir-to-exec), so that the report is what will run: every
// rank's program is walked as that rank runs it (its case of each switch on
// a group rank, loops by their trip counts), counting
//  - runtime calls: each exec op the CPU runtime runs as a call, and each
//    element-wise kernel (linalg op);
//  - Newton-Schulz flops: the products (gemm, syrk, syrk_rows);
//  - collective bytes: what the runtime's counters count for each
//    collective (bytes this rank sends; runtime/cpu/Dist.cpp), by the
//    group's axes;
//  - parameter and optimizer-state bytes: the step's arguments of those
//    roles, as this rank holds them.
// Ops of a trained MoE layer (a location named desc::kTrainedLayerLoc
// + the layer, as the IR builder gives them) are counted apart, per layer, not in the optimizer's.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_ANALYSIS_STEPCOST_H
#define MUIR_ANALYSIS_STEPCOST_H

#include "muir/Analysis/PlanReport.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::muir {

struct StepCosts {
  std::vector<RankCost> ranks; ///< the optimizer step's, per world rank
  /// Runtime calls of each trained MoE layer, on rank 0.
  std::map<std::string, int64_t> layerCalls;
};

/// Walks the step function of an exec-stage module (the function marked
/// `muir.entry`, else its first). Fails (with `error`) on a program it
/// cannot follow: a loop whose trip count is not a constant, a switch on a
/// value it does not know.
FailureOr<StepCosts> analyzeStepCosts(ModuleOp module, std::string &error);

} // namespace mlir::muir

#endif // MUIR_ANALYSIS_STEPCOST_H
