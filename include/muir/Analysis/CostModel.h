//===- CostModel.h - choosing how Newton-Schulz runs across ranks -*- C++ -*-===//
//
// An alpha-beta model per grid axis plus a compute rate. It prices the exact
// Newton-Schulz modes for a matrix split over one group:
//  - duplicated: all-gather the update (ring: (g-1) alpha + (g-1)/g * bytes
//    / beta), then the whole NS on every rank;
//  - distributed: per step, all-reduce the s x s Gram matrix over the
//    unsplit dimension s, its packed triangle (ring: 2 (g-1) alpha +
//    2 (g-1)/g * 4 s (s + 1) / 2 / beta),
//    with per-rank compute 4 s^2 k/g + 2 s^3 (k the split dimension).
//  - resharded: for a 2-D matrix, two all_to_all move the split to the other
//    dimension and back, around the distributed mode; considered when the
//    split is on the smaller dimension (whose Gram matrix over the larger
//    one is the expensive one).
// Blockwise is an approximation and never chosen by the model.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_ANALYSIS_COSTMODEL_H
#define MUIR_ANALYSIS_COSTMODEL_H

#include "Muir/MuirDialect.h"
#include "muir/Support/EnumFlags.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mlir::muir {

/// The machines the cost model knows (the tools' --machine) are the ODS
/// enum Machine (MuirEnums.td: its names, symbolizeMachine).
StringRef stringify(Machine machine);
/// The values the machine flags and pass options accept.
llvm::cl::ValuesClass machineValues();
/// The values the ns-precision flags and pass options accept (the ODS
/// enum NSPrecision's names).
llvm::cl::ValuesClass nsPrecisionValues();

struct Link {
  double alpha; ///< seconds per message
  double beta;  ///< bytes per second
};

struct MachineProfile {
  Machine machine;
  double flopsPerSecond;           ///< fp32 matrix-multiply rate
  double fp64FlopsPerSecond;       ///< fp64 matrix-multiply rate
  /// Products known symmetric compute only their upper triangle (the CPU
  /// runtime, in blocks of rows: muirrt_symmetric_gemm_flops); else the
  /// whole GEMM (cuBLAS).
  bool triangularSymmetricGemm = false;
  std::map<std::string, Link> axes; ///< by grid-axis name
  Link otherAxes;                   ///< axes not listed
  /// The ranks of a run share this one machine's rate (the CPU profile: N
  /// MPI ranks on these cores each get 1/N of it); otherwise each rank is
  /// a device with the full rate.
  bool ranksShareRate = false;

  const Link &link(StringRef axis) const;
  /// cpu (this 2-core machine, MPI over shared memory) or h200 (one node
  /// of 8 H200 with NVLink for tp/ep/etp, InfiniBand for dp/edp/pp).
  static MachineProfile get(Machine machine);
};

/// Rows per chunk of a fused SYRK + packed all-reduce of s x s Gram
/// matrices over `link` (muir-fuse-syrk-all-reduce's default): about four
/// chunks, doubled until a chunk's packed rows (about rows * s / 2 floats)
/// cost at least four times the link's latency; at most s (one chunk).
int64_t gramChunkRows(const Link &link, int64_t s);

/// Newton-Schulz modes are the ODS enum NewtonSchulzMode (MuirEnums.td:
/// its names, symbolizeNewtonSchulzMode): `auto` only as a request (the
/// ns-mode option, a description's `ns_mode`), the cost model's choice per
/// matrix; its decisions are the other four.
StringRef stringify(NewtonSchulzMode mode);
/// A requested mode fixed, or nothing for auto.
std::optional<NewtonSchulzMode> fixedMode(NewtonSchulzMode requested);
/// The values the ns-mode flags and pass options accept.
llvm::cl::ValuesClass nsModeValues();

/// The form of one Newton-Schulz (muir-gram-newton-schulz's ns-form
/// option): standard iterates on X; gram on the small Gram matrix, in
/// double; auto lets the cost model choose per matrix.
enum class NSFormOption { Auto, Standard, Gram };
StringRef stringify(NSFormOption option);
std::optional<NSFormOption> symbolizeNSFormOption(StringRef name);
/// The values the ns-form flags and pass options accept.
llvm::cl::ValuesClass nsFormValues();

/// The modelled seconds of both forms for `batch` m x n matrices and
/// `steps` steps on one rank (`syrk`: symmetric products as SYRK).
///  - standard: per step the Gram matrix (SYRK), b A + c A A (SYRK) and
///    B X + a X (GEMM), in f32;
///  - gram: A0 = X X^T once (SYRK, f64), per step b A + c A A (SYRK, f64),
///    Q <- P Q (GEMM, f64, not the first step) and A <- A P^2 (P^2 by
///    SYRK, then a GEMM, f64, not the last step), then X = Q X0 (GEMM,
///    f32).
struct FormCost {
  double standardSeconds = 0, gramSeconds = 0;
  double standardFlops = 0, gramFp64Flops = 0, gramFp32Flops = 0;
};

struct ModeCost {
  double seconds = 0, computeSeconds = 0, commSeconds = 0;
  double commBytes = 0; ///< per rank
  double flops = 0;     ///< per rank
};

/// One matrix (or a batch of `batch` matrices) of global shape m x n whose
/// dimension `splitDim` (0 rows, 1 columns) is split over `group` ranks of
/// `axis`, for `steps` Newton-Schulz steps.
struct NSProblem {
  int64_t m, n, batch = 1, steps = 5;
  int splitDim = 0;
  int64_t group = 1;
  std::string axis;
};

/// One way to run a split matrix's Newton-Schulz that the model priced, in
/// the form it priced (for duplicated, the form muir-gram-newton-schulz
/// will pick for the gathered matrix).
struct NSCandidate {
  NewtonSchulzMode mode;
  bool gram;
  ModeCost cost;
};

/// The candidates as one line: "duplicated 0.0207 ms (gather 0.786 MB),
/// distributed (gram) 0.0179 ms (one Gram all-reduce 0.79 MB) on h200".
std::string describe(ArrayRef<NSCandidate> weighed, StringRef machine);

class NSCostModel {
public:
  /// `ranks`: the ranks of the run (they divide the rate of a profile whose
  /// ranks share one machine).
  explicit NSCostModel(MachineProfile profile, int64_t ranks = 1)
      : profile(std::move(profile)),
        rate(this->profile.flopsPerSecond /
             (this->profile.ranksShareRate && ranks > 1
                  ? static_cast<double>(ranks)
                  : 1.0)) {}

  /// fp32 flops per second one rank gets.
  double rankRate() const { return rate; }

  ModeCost duplicated(const NSProblem &p) const;
  ModeCost distributed(const NSProblem &p) const;
  ModeCost resharded(const NSProblem &p) const;
  /// The distributed mode in the Gram form: the split dimension's partial
  /// Gram matrices (raw, f64) summed once over the group, by packed
  /// triangles (muir.symmetric_all_reduce: 8 s (s + 1) / 2 bytes to each
  /// peer, no separate norm), the iteration on s x s redundantly on every
  /// rank, then the own slice times Q.
  ModeCost distributedGram(const NSProblem &p) const;
  /// Resharded, then the distributed Gram form.
  ModeCost reshardedGram(const NSProblem &p) const;
  /// A 2-D matrix whose other dimension the group divides.
  static bool canReshard(const NSProblem &p);

  /// The cheaper exact mode. `form` says which forms distributed and
  /// resharded may take (auto: both, priced against each other);
  /// `weighed` receives every candidate in the order weighed; `gram`
  /// whether the chosen one is the Gram form.
  NewtonSchulzMode choose(const NSProblem &p,
                          SmallVectorImpl<NSCandidate> *weighed = nullptr,
                          NSFormOption form = NSFormOption::Standard,
                          bool *gram = nullptr) const;

  /// The modelled seconds of `mode` (duplicated, distributed or
  /// resharded, in the Gram form with `gram`) for `p`.
  double modeSeconds(NewtonSchulzMode mode, const NSProblem &p,
                     bool gram) const;
  /// Of a block-wise Newton-Schulz: `batch` local blocks of rows x cols,
  /// no communication.
  double blockwiseSeconds(int64_t rows, int64_t cols, int64_t batch,
                          int64_t steps) const;

  /// The form a requested distributed or resharded `mode` takes: as
  /// `form` says, or (auto) the cheaper by the model.
  bool gramForMode(NewtonSchulzMode mode, const NSProblem &p,
                   NSFormOption form) const;
  /// The f64 flops of the Gram form's iteration on s x s matrices
  /// (`steps` steps, one matrix) and of its A0 over k columns.
  double gramIterationFlops(int64_t s, int64_t steps, bool syrk) const;

  /// What each form of Newton-Schulz costs on one rank.
  FormCost formCost(int64_t m, int64_t n, int64_t batch, int64_t steps,
                    bool syrk = true) const;
  /// The form `auto` picks: gram when the model puts it below 0.8 of the
  /// standard form's time (the margin covers what the model leaves out:
  /// the f64 copy of X and more, smaller calls). A square matrix never
  /// gains. `costs` receives both times.
  bool preferGram(int64_t m, int64_t n, int64_t batch, int64_t steps,
                  bool syrk = true, FormCost *costs = nullptr) const;

  const MachineProfile &getProfile() const { return profile; }

private:
  MachineProfile profile;
  double rate;
};

/// How whole Muon matrices replicated over (or FSDP-sharded on) the
/// data-parallel axis are shared out among its ranks:
///  - greedy: largest-first, each to the least-loaded rank (ties: the lowest
///    rank), the default;
///  - round-robin: in parameter order, a baseline;
///  - replicated: every rank orthogonalises every matrix (no assignment).
enum class DpAssign { Greedy, RoundRobin, Replicated };
StringRef stringify(DpAssign policy);
std::optional<DpAssign> symbolizeDpAssign(StringRef name);
/// The values the dp-assign flags and pass options accept.
llvm::cl::ValuesClass dpAssignValues();

/// The balancing weight of one Newton-Schulz: m n min(m, n) per step and
/// matrix (r^2 c, the leading term of its flops).
double layerwiseWeight(int64_t m, int64_t n, int64_t batch, int64_t steps);

/// The owning rank of each item, in [0, ranks).
std::vector<int64_t> assignToRanks(ArrayRef<double> weights, int64_t ranks,
                                   DpAssign policy);

/// The largest and the mean load over `ranks` ranks of an assignment.
struct LoadStats {
  double max = 0, mean = 0;
};
LoadStats loadStats(ArrayRef<double> weights, ArrayRef<int64_t> owners,
                    int64_t ranks);

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

MUIR_ENUM_FLAG(mlir::muir::NSPrecision)
MUIR_ENUM_FLAG(mlir::muir::NewtonSchulzMode)
MUIR_ENUM_FLAG(mlir::muir::NSFormOption)
MUIR_ENUM_FLAG(mlir::muir::Machine)
MUIR_ENUM_FLAG(mlir::muir::DpAssign)

#endif // MUIR_ANALYSIS_COSTMODEL_H
