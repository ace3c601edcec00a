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
// Ops of a trained MoE layer (a location named kTrainedLayerLoc + the
// layer, as the IR builder gives them) are counted apart, per layer, not in
// the optimizer's.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_ANALYSIS_STEPCOST_H
#define MUIR_ANALYSIS_STEPCOST_H

#include "muir/Analysis/CostModel.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::muir {

struct RankCost {
  int64_t paramBytes = 0;
  int64_t optimizerStateBytes = 0;
  double nsFlops = 0;
  std::map<std::string, int64_t> collectiveBytes; ///< per grid axis
  int64_t runtimeCalls = 0;          ///< with batching (if on)
  int64_t runtimeCallsUnbatched = 0; ///< one Newton-Schulz per matrix

  bool operator==(const RankCost &o) const {
    return paramBytes == o.paramBytes &&
           optimizerStateBytes == o.optimizerStateBytes &&
           nsFlops == o.nsFlops && collectiveBytes == o.collectiveBytes &&
           runtimeCalls == o.runtimeCalls &&
           runtimeCallsUnbatched == o.runtimeCallsUnbatched;
  }
};

/// How one split Muon matrix runs its Newton-Schulz and what the model
/// says it costs.
struct MatrixPlan {
  std::string name;
  NewtonSchulzMode mode = NewtonSchulzMode::duplicated;
  double modelledSeconds = 0;
  std::string why;
  int64_t dpOwner = -1; ///< the dp rank that runs it, -1 every rank
};

/// The form one Muon parameter's Newton-Schulz runs in (of the matrices a
/// rank orthogonalises whole, or its block of a blockwise split), as
/// muir-gram-newton-schulz picks it, with both modelled times per matrix.
struct FormPlan {
  std::string name;
  int64_t rows = 0, cols = 0;
  int64_t batch = 1; ///< the matrices its Newton-Schulz op takes at once
  bool gram = false;
  bool requested = false; ///< --ns-form=standard|gram, not the model
  /// Both forms' modelled times per matrix: the op's over its batch.
  double standardSeconds = 0, gramSeconds = 0;
};

/// A Muon matrix muir-distribute shared out over dp.
struct OwnedMatrix {
  std::string name;
  int64_t owner = 0;
  double weight = 0; ///< what it weighed in the sharing (muir.dp_weight)
  bool fsdp = false; ///< an FSDP shard on dp, gathered to its owner
};

struct StepCosts {
  std::vector<RankCost> ranks; ///< the optimizer step's, per world rank
  /// Runtime calls of each trained MoE layer, on rank 0.
  std::map<std::string, int64_t> layerCalls;
  /// muir-distribute's decisions, in the parameters' order: the split
  /// matrices' modes, and the matrices shared out over dp.
  std::vector<MatrixPlan> matrices;
  std::vector<OwnedMatrix> owned;
  /// muir-gram-newton-schulz's form of each Newton-Schulz, per matrix name
  /// and shape, in the parameters' order.
  std::vector<FormPlan> forms;
};

/// Walks the step function of an exec-stage module (the function marked
/// `muir.entry`, else its first) into `costs.ranks` and `layerCalls`.
/// Fails (with `error`) on a program it cannot follow: a loop whose trip
/// count is not a constant, a switch on a value it does not know.
LogicalResult analyzeStepCosts(ModuleOp module, StepCosts &costs,
                               std::string &error);

/// Reads muir-distribute's decisions from a planned module (the attributes
/// it leaves on each `muir.apply_update`: `muir.ns_mode`, `muir.ns_why`,
/// `muir.modelled_ms`, `muir.dp_owner`, `muir.dp_weight`) and
/// muir-gram-newton-schulz's forms (`muir.ns_form`, `muir.ns_form_cost`
/// on the op each Newton-Schulz left, named by its location's
/// kParamLoc parts) into `costs`.
LogicalResult analyzeDecisions(ModuleOp planned, StepCosts &costs,
                               std::string &error);

} // namespace mlir::muir

#endif // MUIR_ANALYSIS_STEPCOST_H
