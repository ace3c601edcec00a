//===- PlanReport.h - what a compiled step costs per rank -------*- C++ -*-===//
//
// Per-rank memory, Newton-Schulz work, communication and runtime calls of
// one optimizer step, and totals over the grid. Split Muon matrices are
// costed in the Newton-Schulz mode muir-distribute picks (the same cost
// model and options), with collective bytes counted as the runtime counts
// them (bytes this rank sends); expert stacks sharded on ep run NS per
// local expert with no communication.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_ANALYSIS_PLANREPORT_H
#define MUIR_ANALYSIS_PLANREPORT_H

#include "muir/Analysis/CostModel.h"
#include "muir/Import/Description.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

namespace mlir::muir {

struct StepCosts;

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

/// How Newton-Schulz is shared out over the data-parallel axis: the
/// policy's owners and, for comparison, the max/mean load (by
/// m n min(m, n) per step) of both balancing policies.
struct DpAssignment {
  std::string axis;
  int64_t ranks = 1;
  DpAssign policy = DpAssign::Greedy;
  std::vector<std::pair<std::string, int64_t>> owners; ///< name, dp rank
  int64_t fsdpMatrices = 0; ///< of owners, how many travel (FSDP)
  std::vector<double> load;  ///< per dp rank under `policy`
  LoadStats greedy, roundRobin;
};

/// The options the step was compiled with that the report names or prices
/// forms by (the rest it reads from the compiled step).
struct ReportOptions {
  Machine machine = Machine::Cpu;
  DpAssign dpAssign = DpAssign::Greedy; ///< muir-distribute's dp-assign
  bool syrk = true; ///< as muir-gram-newton-schulz prices the forms
  NSFormOption nsForm = NSFormOption::Auto; ///< muir-gram-newton-schulz's
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

/// One MoE layer trained in the step (`training`), per rank: the
/// forward and backward passes' product flops, the bytes it sends
/// (expected under uniform routing: each token's experts k distinct ones
/// drawn at random; dispatch and combine bytes depend on the routing) and
/// its runtime calls.
struct MoETrainingCost {
  std::string name;
  int64_t tokensPerRank = 0, ep = 1, replicas = 1;
  double flops = 0;
  double bytes = 0;
  int64_t calls = 0;
};

struct PlanReport {
  std::string name;
  std::vector<MoETrainingCost> moeTraining;
  int64_t totalParameters = 0, muonParameters = 0, adamwParameters = 0;
  int64_t muonMatrices = 0; ///< 2-D matrices plus every expert matrix
  std::vector<std::string> axes;
  std::vector<RankCost> ranks;
  std::vector<MatrixPlan> matrices; ///< split Muon matrices only
  std::vector<FormPlan> forms;      ///< Newton-Schulz not run distributed
  std::string machine;
  DpAssignment dp; ///< empty owners when nothing is shared out

  /// The report of `d` compiled with `options`, whose step decided and
  /// runs `costs` (analyzeDecisions of its planned IR, analyzeStepCosts
  /// of its exec IR).
  static PlanReport compute(const desc::Description &d,
                            const ReportOptions &options,
                            const StepCosts &costs);
  void writeJSON(llvm::raw_ostream &os) const;
  void printTable(llvm::raw_ostream &os) const;
};

/// Newton-Schulz flops of `steps` iterations on one m x n matrix with the
/// GEMM path: per step 4 r^2 c + 2 r^3, r = min(m, n), c = max(m, n).
double nsFlops(int64_t m, int64_t n, int64_t steps);
/// The flops the runtime performs for it: with `syrk` (muir-form-syrk) the
/// Gram matrix and A A are symmetric rank-k updates, r (r + 1) c and
/// r (r + 1) r, and B X stays a GEMM, 2 r^2 c.
double nsFlopsPerformed(int64_t m, int64_t n, int64_t steps, bool syrk);
/// The runtime calls of one Newton-Schulz op: the normalisation and 3 a
/// step in the standard form; in the Gram form A0, its normalisation, 2 a
/// step (B, Q), 3 a step but the last (P^2, its diagonal, A P^2), the
/// scaled f32 copy of Q and the product.
int64_t nsCalls(int64_t steps, bool gram);

} // namespace mlir::muir

#endif // MUIR_ANALYSIS_PLANREPORT_H
