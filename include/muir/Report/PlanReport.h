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
#ifndef MUIR_REPORT_PLANREPORT_H
#define MUIR_REPORT_PLANREPORT_H

#include "muir/Analysis/StepCost.h"
#include "muir/Import/Description.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

namespace mlir::muir {

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

} // namespace mlir::muir

#endif // MUIR_REPORT_PLANREPORT_H
