//===- PlanReport.cpp - what a compiled step costs per rank ---------------===//
#include "muir/Analysis/PlanReport.h"
#include "muir-rt/Runtime.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace mlir::muir;
using namespace mlir::muir::desc;

double mlir::muir::nsFlops(int64_t m, int64_t n, int64_t steps) {
  double r = std::min(m, n), c = std::max(m, n);
  return steps * (4 * r * r * c + 2 * r * r * r);
}

double mlir::muir::nsFlopsPerformed(int64_t m, int64_t n, int64_t steps,
                                    bool syrk) {
  if (!syrk)
    return nsFlops(m, n, steps);
  double r = std::min(m, n), c = std::max(m, n);
  return steps * (r * (r + 1) * c + r * (r + 1) * r + 2 * r * r * c);
}

int64_t mlir::muir::nsCalls(int64_t steps, bool gram) {
  return gram ? 2 + 2 * steps + 3 * (steps - 1) + 2 : 1 + 3 * steps;
}

// The bytes a rank at group rank r sends in an all_reduce of count floats
// over g ranks, as the runtime counts them (runtime/cpu/Dist.cpp): its
// whole piece to every peer, or, where muirrt_all_reduce_scatters, all but
// its slice out and its reduced slice to every peer.
static int64_t allReduceBytes(int64_t count, int64_t g, int64_t r) {
  if (!muirrt_all_reduce_scatters(count, g))
    return count * 4 * (g - 1);
  int64_t mine = count * (r + 1) / g - count * r / g;
  return 4 * (count - mine) + mine * 4 * (g - 1);
}

// The same averaged over the group's ranks (the slices add up to count).
static double allReduceBytesMean(double count, double g) {
  if (!muirrt_all_reduce_scatters(static_cast<int64_t>(count),
                                  static_cast<int64_t>(g)))
    return count * 4 * (g - 1);
  return 8 * count * (g - 1) / g;
}

static int64_t dtypeBytes(StringRef dtype) {
  return dtype == "f64" ? 8 : dtype == "f32" ? 4 : 2;
}

// Optimizer state is f32, except for an f64 parameter's (kept in f64).
static int64_t stateBytes(StringRef dtype) { return dtype == "f64" ? 8 : 4; }

namespace {
/// One parameter as compute() plans it: its optimizer and shape, this
/// rank's share, the splits of its matrix, its dp owner and its
/// Newton-Schulz mode.
struct ParamPlan {
  size_t index = 0;
  const Parameter *p = nullptr;
  Assignment a;
  bool muon = false;
  int64_t rank = 0, local = 0, localMatrices = 0, m = 0, n = 0;
  int64_t nsLocal = 0; ///< what the Newton-Schulz owner holds
  int64_t owner = -1;  ///< dp owner, -1: every rank
  const Sharding *fsdp = nullptr;
  SmallVector<std::pair<const Sharding *, int64_t>> matrixSplits;
  NSMode mode = NSMode::Duplicated;
  bool gramMode = false; ///< distributed/resharded in the Gram form
};

/// PlanReport::compute in named steps over one report.
class ReportBuilder {
public:
  ReportBuilder(const Description &d, const ReportOptions &options,
                std::string &error)
      : d(d), options(options), error(error),
        profile(MachineProfile::get(options.machine)),
        fixedMode(muir::fixedMode(options.nsMode)),
        model(profile, d.grid.numDevices()) {}

  FailureOr<PlanReport> build() {
    setUp();
    assignDp();
    nsGroups.resize(r.ranks.size());
    lwFloats.assign(static_cast<size_t>(r.dp.ranks), 0);
    fsFloats.assign(static_cast<size_t>(r.dp.ranks), 0);
    for (auto [index, p] : llvm::enumerate(d.params))
      if (failed(addParameter(index, p)))
        return failure();
    applyBatching();
    addDpExchanges();
    if (d.training.enabled)
      addTraining();
    return r;
  }

private:
  void setUp();
  void assignDp();
  LogicalResult addParameter(size_t index, const Parameter &p);
  LogicalResult decideMode(ParamPlan &pp);
  void addRankCosts(size_t rankIndex, RankCost &c, const ParamPlan &pp);
  void addSplitNSCosts(size_t rankIndex, RankCost &c, const ParamPlan &pp);
  void noteNS(size_t rankIndex, RankCost &c, const ParamPlan &pp,
              int64_t rows, int64_t cols);
  void applyBatching();
  void addDpExchanges();
  void addTraining();

  /// A rank's coordinate on dp.
  int64_t dpCoord(int64_t rank) const {
    return dpIndex < 0 ? 0 : (rank / dpStride) % r.dp.ranks;
  }
  /// A rank's coordinate on a named axis (the grid's, else the MoE
  /// folding's), row-major with the last axis fastest.
  int64_t axisCoord(int64_t rank, StringRef axis) const {
    for (const std::vector<GridAxis> *axes : {&d.grid.axes, &d.grid.moeAxes}) {
      int64_t stride = 1;
      for (size_t i = axes->size(); i-- > 0;) {
        if ((*axes)[i].name == axis)
          return (rank / stride) % (*axes)[i].size;
        stride *= (*axes)[i].size;
      }
    }
    return 0;
  }

  const Description &d;
  const ReportOptions &options;
  std::string &error;
  MachineProfile profile;
  std::optional<NSMode> fixedMode;
  NSCostModel model;
  PlanReport r;
  int64_t dpIndex = -1, dpStride = 1;
  /// Per parameter: -1 (every rank), else its owner; and whether FSDP.
  std::vector<int64_t> ownerOf;
  std::vector<const Sharding *> fsdpOf;
  /// Per rank, the Newton-Schulz ops that could share a batch: key ->
  /// (ops, calls of one op's chain).
  std::vector<std::map<std::string, std::pair<int64_t, int64_t>>> nsGroups;
  /// Floats each dp rank's owned results occupy, layer-wise and FSDP (its
  /// local shard of each), for the exchanges' bytes.
  std::vector<int64_t> lwFloats, fsFloats;
};
} // namespace

/// The report's names, its ranks and the dp axis's place in the grid.
void ReportBuilder::setUp() {
  r.name = d.name;
  r.machine = profile.name;
  for (const GridAxis &a : d.grid.axes)
    r.axes.push_back(a.name);
  for (const GridAxis &a : d.grid.moeAxes)
    if (!llvm::is_contained(r.axes, a.name))
      r.axes.push_back(a.name);

  // Every rank's share of every parameter. Even shards make ranks alike;
  // layer-wise and FSDP assignment over dp make them differ.
  r.ranks.resize(d.grid.numDevices());

  // Over dp, as muir-distribute shares Newton-Schulz out: Muon matrices of
  // the run's grid with no split on dp (layer-wise), or with an FSDP split
  // of a matrix dimension that no other split shares.
  r.dp.axis = "dp";
  r.dp.policy = options.dpAssign;
  for (auto [i, a] : llvm::enumerate(d.grid.axes))
    if (a.name == r.dp.axis) {
      dpIndex = i;
      r.dp.ranks = a.size;
    }
  for (int64_t i = dpIndex + 1;
       dpIndex >= 0 && i < static_cast<int64_t>(d.grid.axes.size()); ++i)
    dpStride *= d.grid.axes[i].size;
}

/// Over dp, as muir-distribute shares Newton-Schulz out: each matrix's
/// owner, and whether it is an FSDP split gathered to it.
void ReportBuilder::assignDp() {
  ownerOf.assign(d.params.size(), -1);
fsdpOf.assign(d.params.size(), nullptr);
  std::vector<double> weights;
  std::vector<size_t> which;
  for (auto [i, p] : llvm::enumerate(d.params)) {
    Assignment a = assignOptimizer(d, p);
    // As muir-distribute: tensors split on an axis of the MoE folding
    // follow that folding and are not shared out over dp.
    bool otherFolding =
        p.moeFolding && !d.grid.moeAxes.empty() &&
        llvm::any_of(p.shards, [&](const Sharding &s) {
          const GridAxis *axis = d.grid.find(s.axis, true);
          return axis && axis->size > 1;
        });
    if (!optimizerInfo(a.optimizer).orthogonalises || otherFolding ||
        r.dp.ranks <= 1 || options.dpAssign == DpAssign::Replicated)
      continue;
    int64_t rank = p.shape.size();
    bool dpOther = false;
    const Sharding *fsdp = nullptr;
    for (const Sharding &s : p.shards) {
      if (s.axis != r.dp.axis)
        continue;
      bool alone = llvm::count_if(p.shards, [&](const Sharding &o) {
                     return o.dim == s.dim;
                   }) == 1;
      if (s.dim >= rank - 2 && alone && !fsdp)
        fsdp = &s;
      else
        dpOther = true;
    }
    if (dpOther)
      continue;
    fsdpOf[i] = fsdp;
    int64_t batch = rank == 3 ? p.shape[0] : 1;
    weights.push_back(layerwiseWeight(p.shape[rank - 2], p.shape[rank - 1],
                                      batch, a.muon.nsSteps));
    which.push_back(i);
  }
  std::vector<int64_t> owners = assignToRanks(weights, r.dp.ranks, options.dpAssign);
  r.dp.greedy = loadStats(
      weights, assignToRanks(weights, r.dp.ranks, DpAssign::Greedy),
      r.dp.ranks);
  r.dp.roundRobin = loadStats(
      weights, assignToRanks(weights, r.dp.ranks, DpAssign::RoundRobin),
      r.dp.ranks);
  r.dp.load.assign(static_cast<size_t>(std::max<int64_t>(1, r.dp.ranks)),
                   0.0);
  for (auto [k, i] : llvm::enumerate(which)) {
    ownerOf[i] = owners[k];
    r.dp.owners.push_back({d.params[i].name, owners[k]});
    r.dp.fsdpMatrices += fsdpOf[i] != nullptr;
    r.dp.load[static_cast<size_t>(owners[k])] += weights[k];
  }
}

/// One parameter: the totals, its Newton-Schulz mode, every rank's costs.
LogicalResult ReportBuilder::addParameter(size_t index, const Parameter &p) {
  ParamPlan pp;
  pp.index = index;
  pp.p = &p;
  pp.a = assignOptimizer(d, p);
  const Assignment &a = pp.a;
  int64_t numel = p.numElements();
  r.totalParameters += numel;
  // Muon and NorMuon orthogonalise, alike.
  bool muon = pp.muon = optimizerInfo(a.optimizer).orthogonalises;
  (muon ? r.muonParameters : r.adamwParameters) += numel;
  int64_t rank = pp.rank = p.shape.size();
  int64_t matrices = rank == 3 ? p.shape[0] : 1;
  if (muon)
    r.muonMatrices += matrices;

  int64_t factor = 1, expertFactor = 1;
  for (const Sharding &s : p.shards) {
    const GridAxis *axis = d.grid.find(s.axis, p.moeFolding);
    int64_t g = axis ? axis->size : 1;
    factor *= g;
    // Splits of a stack's first dimension (expert or fsdp) divide the
    // matrices among ranks.
    if (s.kind == ShardKind::Expert || (p.shape.size() == 3 && s.dim == 0))
      expertFactor *= g;
  }
  pp.local = numel / factor;
  pp.localMatrices = matrices / expertFactor;
  pp.m = rank >= 2 ? p.shape[rank - 2] : 1;
  pp.n = p.shape[rank - 1];
  if (failed(decideMode(pp)))
    return failure();
  for (auto [rankIndex, c] : llvm::enumerate(r.ranks))
    addRankCosts(rankIndex, c, pp);
  return success();
}

/// The Newton-Schulz mode of a matrix split on its own dimensions, as
/// muir-distribute decides it (a matrix of the report when it is split).
LogicalResult ReportBuilder::decideMode(ParamPlan &pp) {
  bool muon = pp.muon;
  const Parameter &p = *pp.p;
  const Assignment &a = pp.a;
  int64_t rank = pp.rank, local = pp.local, localMatrices = pp.localMatrices;
  int64_t m = pp.m, n = pp.n;
  // The Newton-Schulz mode of a matrix split on its own dimensions, as
  // muir-distribute decides it.
  auto &matrixSplits = pp.matrixSplits;
  int64_t owner = pp.owner = ownerOf[pp.index];
  const Sharding *fsdp = pp.fsdp = fsdpOf[pp.index];
  for (const Sharding &s : p.shards) {
    const GridAxis *axis = d.grid.find(s.axis, p.moeFolding);
    // Only splits of the matrix itself (its last two dimensions) need
    // communication: an fsdp split of an expert stack splits experts.
    // An FSDP split shared out over dp is undone before NS.
    if (s.kind != ShardKind::Expert && s.dim >= rank - 2 && axis &&
        axis->size > 1 && &s != fsdp)
      matrixSplits.push_back({&s, axis->size});
  }
  // What the Newton-Schulz owner holds: the local shard, gathered over dp
  // for FSDP.
  pp.nsLocal = fsdp ? local * r.dp.ranks : local;
  if (owner >= 0)
    (fsdp ? fsFloats : lwFloats)[static_cast<size_t>(owner)] += local;
  NSMode &mode = pp.mode;
  bool &gramMode = pp.gramMode; // distributed/resharded in the Gram form
  if (muon && !matrixSplits.empty()) {
    auto [split, g] = matrixSplits.front();
    NSProblem problem{m, n, localMatrices, a.muon.nsSteps,
                      static_cast<int>(split->dim - (rank - 2)), g,
                      split->axis};
    std::string why;
    std::optional<NSMode> paramMode =
        p.nsMode.empty() || p.nsMode == "auto" ? fixedMode
                                                : symbolizeNSMode(p.nsMode);
    if (paramMode) {
      mode = *paramMode;
      why = "requested";
      if ((mode == NSMode::Distributed || mode == NSMode::Resharded) &&
          matrixSplits.size() != 1) {
        error = "'" + p.name + "': distributed Newton-Schulz needs the "
                "matrix split on one dimension";
        return failure();
      }
      if (mode == NSMode::Resharded &&
          (rank != 2 || !NSCostModel::canReshard(problem))) {
        error = "'" + p.name + "': resharded Newton-Schulz needs a 2-D "
                "matrix whose other dimension the group divides";
        return failure();
      }
      // As muir-distribute: the form of a requested mode.
      if (matrixSplits.size() == 1)
        gramMode = model.gramForMode(mode, problem, options.nsForm);
    } else if (matrixSplits.size() == 1) {
      SmallVector<NSCandidate> weighed;
      mode = model.choose(problem, &weighed, options.nsForm, &gramMode);
      why = describe(weighed, model.getProfile().name);
      // As muir-distribute: stacks are not re-sharded.
      if (mode == NSMode::Resharded && rank != 2)
        mode = NSMode::Duplicated;
    } else {
      why = "split on both matrix dimensions: duplicated";
    }
    double seconds;
    if (mode == NSMode::Distributed) {
      seconds = gramMode ? model.distributedGram(problem).seconds
                         : model.distributed(problem).seconds;
    } else if (mode == NSMode::Resharded) {
      seconds = gramMode ? model.reshardedGram(problem).seconds
                         : model.resharded(problem).seconds;
    } else if (mode == NSMode::Blockwise) {
      // Local NS of the block only, no communication.
      int64_t lm = m, ln = n;
      for (auto [split, g] : matrixSplits)
        (split->dim == rank - 2 ? lm : ln) /= g;
      seconds = localMatrices * nsFlops(lm, ln, a.muon.nsSteps) /
                model.rankRate();
    } else {
      seconds = model.duplicated(problem).seconds;
    }
    r.matrices.push_back({p.name, mode, seconds, why, owner});
  }
  return success();
}

/// One rank's share of one parameter: its bytes, state, kernels and, for
/// the matrices it orthogonalises, the Newton-Schulz flops, collectives
/// and calls.
void ReportBuilder::addRankCosts(size_t rankIndex, RankCost &c,
                                 const ParamPlan &pp) {
  const Parameter &p = *pp.p;
  const Assignment &a = pp.a;
  int64_t rank = pp.rank, local = pp.local, localMatrices = pp.localMatrices;
  int64_t m = pp.m, n = pp.n;
  bool muon = pp.muon;
  int64_t owner = pp.owner, nsLocal = pp.nsLocal;
  const Sharding *fsdp = pp.fsdp;
  const auto &matrixSplits = pp.matrixSplits;
  NSMode mode = pp.mode;
  c.paramBytes += local * dtypeBytes(p.dtype);
  // Each state tensor: the local shard, or one value per row of the
  // local block (a split of the columns leaves every row).
  int64_t localCols = n;
  for (const Sharding &s : p.shards)
    if (const GridAxis *axis = d.grid.find(s.axis, p.moeFolding);
        axis && s.dim == rank - 1)
      localCols /= axis->size;
  int64_t stateElements = 0;
  for (const OptimizerState &s : optimizerInfo(a.optimizer).state)
    stateElements += s.rows ? local / localCols : local;
  c.optimizerStateBytes += stateElements * stateBytes(p.dtype);
  if (!muon) {
    c.runtimeCalls += 1; // one fused AdamW kernel
    return;
  }
  c.runtimeCalls += 1; // the momentum kernel
  const OptimizerInfo &info = optimizerInfo(a.optimizer);
  if (info.rowSums || info.updateNorm) {
    // A normalisation of this rank's block, on every rank (NorMuon's):
    // the rows' sums all-reduced over the axes that split the columns,
    // the norm over every axis that splits the matrix (a block-wise
    // block is its own matrix), and its kernels.
    SmallVector<std::pair<const Sharding *, int64_t>> splits;
    if (mode != NSMode::Blockwise)
      splits = matrixSplits;
    if (fsdp)
      splits.push_back({fsdp, r.dp.ranks});
    int64_t rows = m;
    for (auto [split, g] : splits)
      if (split->dim == rank - 2)
        rows /= g;
    for (auto [split, g] : splits) {
      bool sumsRows = info.rowSums && split->dim == rank - 1;
      int64_t floats = localMatrices * ((sumsRows ? rows : 0) +
                                        (info.updateNorm ? 1 : 0));
      c.collectiveBytes[split->axis] += floats * 4 * (g - 1);
      c.runtimeCalls += (sumsRows ? 1 : 0) + (info.updateNorm ? 1 : 0);
    }
    c.runtimeCalls += info.normalizeKernels;
  }
  if (owner >= 0 && dpCoord(static_cast<int64_t>(rankIndex)) != owner) {
    c.runtimeCalls += 1; // the update
    return;
  }
  if (!matrixSplits.empty() &&
      (mode == NSMode::Distributed || mode == NSMode::Resharded)) {
    addSplitNSCosts(rankIndex, c, pp);
    return;
  }
  // One Newton-Schulz op of rows x cols (a stack counts once): its
  // chain of normalise and 3 products a step (a tall matrix iterates on
  // X^T X, with no transposes), noted for batching (muir-batch-newton-schulz joins ops of
  // one block, the body or a dp owner's case, with equal shape and
  // settings).
  if (!matrixSplits.empty() && mode == NSMode::Blockwise) {
    int64_t lm = m, ln = n;
    for (auto [split, g] : matrixSplits)
      (split->dim == rank - 2 ? lm : ln) /= g;
    noteNS(rankIndex, c, pp, lm, ln);
    return;
  }
  // Local or duplicated: the whole matrix on every rank (a split
  // update, fused QKV, orthogonalises and updates each row block
  // alone): per block normalise, 3 GEMMs per step and the update.
  SmallVector<int64_t> blocks = {m};
  if (a.muon.splitFused && !p.splitRows.empty() && rank == 2)
    blocks.assign(p.splitRows.begin(), p.splitRows.end());
  for (int64_t rows : blocks)
    noteNS(rankIndex, c, pp, rows, n);
  // Gathers one split dimension after another: each sends what this
  // rank holds by then to g - 1 peers; the slices back are local.
  int64_t held = nsLocal;
  for (auto [split, g] : matrixSplits) {
    c.collectiveBytes[split->axis] += held * 4 * (g - 1);
    held *= g;
    c.runtimeCalls += 2;
  }
}

/// A matrix split over an axis and orthogonalised by the distributed or
/// resharded mode: its flops, its Gram all-reduces (and resharding), its
/// calls.
void ReportBuilder::addSplitNSCosts(size_t rankIndex, RankCost &c,
                                    const ParamPlan &pp) {
  const Assignment &a = pp.a;
  int64_t rank = pp.rank, localMatrices = pp.localMatrices;
  int64_t m = pp.m, n = pp.n;
  int64_t nsLocal = pp.nsLocal;
  bool gramMode = pp.gramMode;
  bool resharded = pp.mode == NSMode::Resharded;
  // Norm: sum_squares, all_reduce (4 bytes to g-1 peers), scale; per
  // step: local Gram, its all_reduce (4 s^2 to g-1 peers), B, X.
  // Resharded: the split moves to the other dimension and back, two
  // all_to_all sending all but the own block (nsLocal / g floats) to
  // each of the g - 1 others.
  auto [split, g] = pp.matrixSplits.front();
  bool rowsSplit = (split->dim == rank - 2) != resharded;
  if (resharded) {
    c.collectiveBytes[split->axis] += 2 * (nsLocal / g) * 4 * (g - 1);
    c.runtimeCalls += 2;
  }
  double sDim = rowsSplit ? n : m, k = rowsSplit ? m : n;
  if (gramMode) {
    // The Gram form: the slice's raw Gram matrix (SYRK into f64),
    // one packed f64 triangle to each of the g - 1 peers, the s x s
    // iteration, the slice times s Q.
    ModeCost gc = model.distributedGram(NSProblem{
        rowsSplit ? int64_t(k) : int64_t(sDim),
        rowsSplit ? int64_t(sDim) : int64_t(k), 1, a.muon.nsSteps,
        rowsSplit ? 0 : 1, g, split->axis});
    c.nsFlops += localMatrices * gc.flops;
    int64_t s = static_cast<int64_t>(sDim);
    c.collectiveBytes[split->axis] +=
        localMatrices * (s * (s + 1) / 2) * 8 * (g - 1);
    c.runtimeCalls += 1 + 1 + nsCalls(a.muon.nsSteps, true);
    return;
  }
  // Per step: the local Gram matrix (s x s over k / g), B = b G + c G G
  // and X' = a X + B X; with SYRK the first two are symmetric rank-k
  // updates.
  double kl = k / g;
  c.nsFlops += localMatrices * a.muon.nsSteps *
               (options.syrk ? sDim * (sDim + 1) * kl +
                                   sDim * (sDim + 1) * sDim +
                                   2 * sDim * sDim * kl
                             : 4 * sDim * sDim * kl +
                                   2 * sDim * sDim * sDim);
  // The Gram all-reduce carries the packed triangle when fused with
  // its SYRK (muir-fuse-syrk-all-reduce): 3 calls a chunk of rows
  // (their SYRK, the exchange's start and its wait).
  bool packed = options.syrk && options.fuseAllReduce;
  int64_t s = static_cast<int64_t>(sDim), chunks = 0;
  if (packed && s > 0) {
    int64_t rows =
        options.chunkRows > 0
            ? std::min(options.chunkRows, s)
            : gramChunkRows(profile.link(split->axis), s);
    chunks = (s + rows - 1) / rows;
  }
  int64_t gramFloats =
      packed ? int64_t(sDim * (sDim + 1) / 2) : int64_t(sDim * sDim);
  c.collectiveBytes[split->axis] +=
      localMatrices *
      (4 * (g - 1) +
       a.muon.nsSteps *
           (packed ? gramFloats * 4 * (g - 1)
                   : allReduceBytes(
                         gramFloats, g,
                         axisCoord(static_cast<int64_t>(rankIndex),
                                   split->axis))));
  c.runtimeCalls +=
      1 + 3 + (packed ? 3 * chunks + 2 : 4) * a.muon.nsSteps;
}

/// One Newton-Schulz op of rows x cols (a stack counts once): its chain of
/// normalise and 3 products a step (a tall matrix iterates on X^T X, with
/// no transposes), noted for batching (muir-batch-newton-schulz joins ops
/// of one block, the body or a dp owner's case, with equal shape and
/// settings).
void ReportBuilder::noteNS(size_t rankIndex, RankCost &c, const ParamPlan &pp,
                           int64_t rows, int64_t cols) {
  const Parameter &p = *pp.p;
  const Assignment &a = pp.a;
  int64_t localMatrices = pp.localMatrices, owner = pp.owner;
  // The form muir-gram-newton-schulz picks (batching changes both
  // forms' costs alike, so the choice per matrix is the batch's).
  FormCost fc;
  bool gram = model.preferGram(rows, cols, 1, a.muon.nsSteps,
                               options.syrk, &fc);
  if (options.nsForm != NSFormOption::Auto)
    gram = options.nsForm == NSFormOption::Gram;
  c.nsFlops += localMatrices *
               (gram ? fc.gramFp64Flops + fc.gramFp32Flops
                     : nsFlopsPerformed(rows, cols, a.muon.nsSteps,
                                        options.syrk));
  if (!llvm::any_of(r.forms, [&](const FormPlan &f) {
        return f.name == p.name && f.rows == rows && f.cols == cols;
      }))
    r.forms.push_back({p.name, rows, cols, gram,
                       options.nsForm != NSFormOption::Auto,
                       fc.standardSeconds, fc.gramSeconds});
  int64_t chain = nsCalls(a.muon.nsSteps, gram);
  std::string key;
  llvm::raw_string_ostream os(key);
  os << (owner >= 0 ? "case" : "body") << " " << rows << "x" << cols
     << " " << a.muon.nsSteps << " " << a.muon.schedule << " "
     << llvm::format("%.17g", a.muon.eps);
  for (double v : a.muon.coefficients)
    os << " " << llvm::format("%.17g", v);
  auto &group = nsGroups[rankIndex][key];
  group.first += 1;
  group.second = chain;
  c.runtimeCalls += 1 + chain; // + the update
}

void ReportBuilder::applyBatching() {
  // Batching: every op of a group after the first adds no chain of its own.
  for (auto [rankIndex, c] : llvm::enumerate(r.ranks)) {
    int64_t saved = 0;
    for (auto &[key, group] : nsGroups[rankIndex])
      saved += (group.first - 1) * group.second;
    c.runtimeCallsUnbatched = c.runtimeCalls;
    if (options.batch)
      c.runtimeCalls -= saved;
  }
}

void ReportBuilder::addDpExchanges() {
  // The exchanges over dp, as the runtime counts them (bytes sent):
  //  layer-wise all_gatherv: own results to the g - 1 others;
  //  FSDP out: the shards owned by others, plus one i64 count per peer;
  //  FSDP back (owners): each peer's block of own results, plus counts.
  int64_t g = r.dp.ranks;
  int64_t lwTotal = 0, fsTotal = 0;
  for (int64_t j = 0; j < g; ++j) {
    lwTotal += lwFloats[static_cast<size_t>(j)];
    fsTotal += fsFloats[static_cast<size_t>(j)];
  }
  for (auto [rankIndex, c] : llvm::enumerate(r.ranks)) {
    if (lwTotal + fsTotal == 0)
      break;
    size_t me = static_cast<size_t>(dpCoord(static_cast<int64_t>(rankIndex)));
    int64_t &bytes = c.collectiveBytes[r.dp.axis];
    c.runtimeCalls += 1; // the group rank
    c.runtimeCallsUnbatched += 1;
    if (lwTotal) {
      bytes += lwFloats[me] * 4 * (g - 1);
      c.runtimeCalls += 1;
      c.runtimeCallsUnbatched += 1;
    }
    if (fsTotal) {
      bytes += (fsTotal - fsFloats[me]) * 4 + 8 * (g - 1);
      bytes += fsFloats[me] * 4 * (g - 1) + 8 * (g - 1);
      c.runtimeCalls += 2;
      c.runtimeCallsUnbatched += 2;
    }
  }

}

void ReportBuilder::addTraining() {
  // MoE layers trained in the step (lib/Import/BuildIR.cpp's TrainedLayer).
  if (d.training.enabled) {
    const std::vector<GridAxis> &fold =
        d.grid.moeAxes.empty() ? d.grid.axes : d.grid.moeAxes;
    for (const MoELayer &l : d.moe) {
      MoETrainingCost m;
      m.name = l.name;
      m.tokensPerRank = l.tokensPerRank;
      for (const GridAxis &a : fold)
        (a.name == "ep" ? m.ep : m.replicas) *= a.size;
      double t = static_cast<double>(l.tokensPerRank);
      double e = static_cast<double>(l.experts), k = static_cast<double>(l.topK);
      double h = static_cast<double>(l.hidden);
      double f = static_cast<double>(l.expertSize);
      double sf = static_cast<double>(l.sharedExperts) * f;
      double g = static_cast<double>(m.ep);
      double el = e / g;
      // Rows a rank's experts get: T k on average (dropless).
      double rows = t * k;
      // Router logits of every rank's tokens (teacher and student) and
      // the router's gradient; 3 expert products in each forward pass, 4
      // in the backward (the data gradient of down, three weight
      // gradients); shared experts 3 forward, 4 backward.
      m.flops = 3 * 2 * t * g * e * h + 10 * 2 * rows * h * f +
                7 * 2 * t * h * sf;
      // P(a rank holds at least one of a token's k experts).
      double none = 1.0;
      for (int64_t i = 0; i < l.topK; ++i)
        none *= (e - el - static_cast<double>(i)) / (e - static_cast<double>(i));
      double p = 1.0 - std::max(0.0, none);
      double tokensOut = t * (g - 1) * p;   // token rows to other ranks
      double pairsBack = t * k * (g - 1) / g; // rows held for other ranks
      double gather = 8 * (e + g) * (g - 1);
      double bytes = 3 * gather + 2 * tokensOut * (4 * h + 4 * k) +
                     tokensOut * (4 * h + 8 * k) + 2 * pairsBack * 4 * h +
                     tokensOut * 4 * h + pairsBack * 4;
      // Tokens and logit gradients all-gathered for the router, the loss
      // over all ranks, gradients summed over the replicas.
      double reps = static_cast<double>(m.replicas);
      bytes += (t * h + t * e) * 4 * (g - 1) + 4 * (g * reps - 1);
      bytes += allReduceBytesMean(e * h, reps) +
               3 * allReduceBytesMean(el * f * h, reps) +
               3 * allReduceBytesMean(sf * h, g * reps);
      m.bytes = bytes;
      // Calls: 2 forward passes of route, dispatch, 3 grouped GEMMs,
      // swiglu, combine and the logits product; loss, probe, the weighted
      // dispatch, the weights' gradient, 3 weight gradients, 1 grouped
      // GEMM, swiglu_grad, route_grad, the router's product.
      int64_t calls = 2 * 8 + 11;
      if (l.capacityFactor > 0)
        calls += 2;
      if (m.ep > 1)
        calls += 5; // gathers of tokens and logit gradients, 2 slices, loss
      if (m.replicas > 1)
        calls += 4 + (m.ep > 1 ? 0 : 1);
      if (l.sharedExperts > 0)
        // forward: 3 products, swiglu, the add; backward: 4 products,
        // swiglu_grad; the 3 gradients' sums over the folding
        calls += 5 + 5 + (m.ep * m.replicas > 1 ? 3 : 0);
      m.calls = calls;
      r.moeTraining.push_back(m);
    }
  }
}

FailureOr<PlanReport> PlanReport::compute(const Description &d,
                                          const ReportOptions &options,
                                          std::string &error) {
  return ReportBuilder(d, options, error).build();
}

void PlanReport::writeJSON(llvm::raw_ostream &os) const {
  llvm::json::OStream j(os, 2);
  RankCost total;
  for (const RankCost &c : ranks) {
    total.paramBytes += c.paramBytes;
    total.optimizerStateBytes += c.optimizerStateBytes;
    total.nsFlops += c.nsFlops;
    total.runtimeCalls += c.runtimeCalls;
    total.runtimeCallsUnbatched += c.runtimeCallsUnbatched;
    for (auto &[axis, bytes] : c.collectiveBytes)
      total.collectiveBytes[axis] += bytes;
  }
  auto writeCost = [&](const RankCost &c) {
    j.attribute("param_bytes", c.paramBytes);
    j.attribute("optimizer_state_bytes", c.optimizerStateBytes);
    j.attribute("ns_flops", c.nsFlops);
    j.attributeObject("collective_bytes", [&] {
      for (const std::string &axis : axes) {
        auto it = c.collectiveBytes.find(axis);
        j.attribute(axis, it == c.collectiveBytes.end() ? 0 : it->second);
      }
    });
    j.attribute("runtime_calls", c.runtimeCalls);
    j.attribute("runtime_calls_unbatched", c.runtimeCallsUnbatched);
  };
  j.object([&] {
    j.attribute("name", name);
    j.attribute("total_parameters", totalParameters);
    j.attribute("muon_parameters", muonParameters);
    j.attribute("adamw_parameters", adamwParameters);
    j.attribute("muon_matrices", muonMatrices);
    j.attribute("num_ranks", static_cast<int64_t>(ranks.size()));
    j.attributeObject("totals", [&] { writeCost(total); });
    j.attribute("machine", machine);
    j.attributeArray("matrices", [&] {
      for (const MatrixPlan &mp : matrices)
        j.object([&] {
          j.attribute("name", mp.name);
          j.attribute("ns_mode", stringify(mp.mode));
          j.attribute("modelled_ms", mp.modelledSeconds * 1e3);
          j.attribute("why", mp.why);
          j.attribute("dp_owner", mp.dpOwner);
        });
    });
    j.attributeArray("ns_forms", [&] {
      for (const FormPlan &f : forms)
        j.object([&] {
          j.attribute("name", f.name);
          j.attribute("rows", f.rows);
          j.attribute("cols", f.cols);
          j.attribute("form", f.gram ? "gram" : "standard");
          j.attribute("why", f.requested ? "requested" : "cost model");
          j.attribute("standard_ms", f.standardSeconds * 1e3);
          j.attribute("gram_ms", f.gramSeconds * 1e3);
        });
    });
    j.attributeObject("dp_assignment", [&] {
      j.attribute("axis", dp.axis);
      j.attribute("ranks", dp.ranks);
      j.attribute("policy", stringify(dp.policy));
      j.attribute("matrices", static_cast<int64_t>(dp.owners.size()));
      j.attribute("fsdp_matrices", dp.fsdpMatrices);
      j.attributeArray("load", [&] {
        for (double l : dp.load)
          j.value(l);
      });
      auto stats = [&](const char *key, const LoadStats &st) {
        j.attributeObject(key, [&] {
          j.attribute("max", st.max);
          j.attribute("mean", st.mean);
          j.attribute("max_over_mean", st.mean > 0 ? st.max / st.mean : 1.0);
        });
      };
      stats("greedy", dp.greedy);
      stats("round_robin", dp.roundRobin);
      j.attributeObject("owners", [&] {
        for (auto &[name, owner] : dp.owners)
          j.attribute(name, owner);
      });
    });
    if (!moeTraining.empty())
      j.attributeArray("moe_training", [&] {
        for (const MoETrainingCost &m : moeTraining)
          j.object([&] {
            j.attribute("name", m.name);
            j.attribute("tokens_per_rank", m.tokensPerRank);
            j.attribute("ep", m.ep);
            j.attribute("replicas", m.replicas);
            j.attribute("flops_per_rank", m.flops);
            j.attribute("bytes_per_rank_uniform_routing", m.bytes);
            j.attribute("runtime_calls", m.calls);
          });
      });
    j.attributeArray("ranks", [&] {
      for (auto [i, c] : llvm::enumerate(ranks))
        j.object([&] {
          j.attribute("rank", static_cast<int64_t>(i));
          writeCost(c);
        });
    });
  });
  os << "\n";
}

static std::string human(double v, StringRef unit) {
  // Up to yotta: a value of muir's largest step (docs/description.md,
  // "Limits") keeps at most three digits before the point, so the table's
  // columns never run together.
  static const char *prefixes[] = {"", "K", "M", "G", "T", "P", "E", "Z", "Y"};
  int i = 0;
  while (std::abs(v) >= 1000 && i < 8) {
    v /= 1000;
    ++i;
  }
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::format(i ? "%.2f" : "%.0f", v);
  if (i || !unit.empty())
    os << " " << prefixes[i] << unit;
  return s;
}

void PlanReport::printTable(llvm::raw_ostream &os) const {
  os << "plan: " << name << ", " << ranks.size() << " ranks; parameters "
     << human(totalParameters, "") << " (Muon " << human(muonParameters, "")
     << " in " << muonMatrices << " matrices, AdamW "
     << human(adamwParameters, "") << ")\n";
  if (!matrices.empty()) {
    // Split matrices by Newton-Schulz mode; the largest modelled ones shown.
    std::map<std::string, int> count;
    for (const MatrixPlan &mp : matrices)
      ++count[stringify(mp.mode).str()];
    os << "Newton-Schulz of " << matrices.size() << " split matrices ("
       << machine << " cost model):";
    for (auto &[mode, n] : count)
      os << " " << mode << " " << n;
    os << "\n";
    std::vector<const MatrixPlan *> top;
    for (const MatrixPlan &mp : matrices)
      top.push_back(&mp);
    // Slowest first, ties in the matrices' order (the pointers point into
    // one vector): a total order, what a stable sort would give.
    std::sort(top.begin(), top.end(), [](auto *a, auto *b) {
      return a->modelledSeconds > b->modelledSeconds ||
             (a->modelledSeconds == b->modelledSeconds && a < b);
    });
    for (size_t i = 0; i < std::min<size_t>(3, top.size()); ++i)
      os << "  " << top[i]->name << ": " << stringify(top[i]->mode) << ", "
         << llvm::format("%.3g", top[i]->modelledSeconds * 1e3) << " ms ("
         << top[i]->why << ")\n";
  }
  if (!forms.empty()) {
    // Newton-Schulz forms; the matrices in the Gram form listed (at most
    // 5, the largest modelled gain first).
    std::vector<const FormPlan *> gram;
    for (const FormPlan &f : forms)
      if (f.gram)
        gram.push_back(&f);
    os << "Newton-Schulz form (" << machine << " cost model"
       << (forms.front().requested ? ", requested" : "") << "): gram "
       << gram.size() << ", standard " << forms.size() - gram.size()
       << "\n";
    // Largest gain first, ties in the forms' order (as for `top`).
    std::sort(gram.begin(), gram.end(), [](auto *a, auto *b) {
      double ga = a->standardSeconds - a->gramSeconds;
      double gb = b->standardSeconds - b->gramSeconds;
      return ga > gb || (ga == gb && a < b);
    });
    for (size_t i = 0; i < std::min<size_t>(5, gram.size()); ++i)
      os << "  " << gram[i]->name << " " << gram[i]->rows << "x"
         << gram[i]->cols << ": gram "
         << llvm::format("%.3g", gram[i]->gramSeconds * 1e3)
         << " ms against standard "
         << llvm::format("%.3g", gram[i]->standardSeconds * 1e3)
         << " ms a matrix\n";
  }
  if (!dp.owners.empty()) {
    auto ratio = [](const LoadStats &st) {
      return st.mean > 0 ? st.max / st.mean : 1.0;
    };
    os << "Newton-Schulz shared out over " << dp.axis << " (" << dp.ranks
       << " ranks, " << stringify(dp.policy) << "): " << dp.owners.size()
       << " matrices (" << dp.fsdpMatrices << " FSDP); max/mean load "
       << llvm::format("%.3f", ratio(dp.greedy)) << " greedy, "
       << llvm::format("%.3f", ratio(dp.roundRobin)) << " round-robin\n";
  }
  os << llvm::left_justify("ranks", 12) << llvm::right_justify("params", 12)
     << llvm::right_justify("opt state", 12)
     << llvm::right_justify("NS flops", 14);
  for (const std::string &axis : axes)
    os << llvm::right_justify(("comm " + axis), 12);
  os << llvm::right_justify("calls", 8) << "\n";
  // Ranks with equal costs share a row.
  size_t i = 0;
  while (i < ranks.size()) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[i])
      ++j;
    const RankCost &c = ranks[i];
    std::string label = i == j ? std::to_string(i)
                               : std::to_string(i) + "-" + std::to_string(j);
    os << llvm::left_justify(label, 12)
       << llvm::right_justify(human(c.paramBytes, "B"), 12)
       << llvm::right_justify(human(c.optimizerStateBytes, "B"), 12)
       << llvm::right_justify(human(c.nsFlops, "FLOP"), 14);
    for (const std::string &axis : axes) {
      auto it = c.collectiveBytes.find(axis);
      os << llvm::right_justify(
          human(it == c.collectiveBytes.end() ? 0 : it->second, "B"), 12);
    }
    os << llvm::right_justify(std::to_string(c.runtimeCalls), 8) << "\n";
    i = j + 1;
  }
  // Trained MoE layers come on top of the optimizer's costs above.
  for (const MoETrainingCost &m : moeTraining)
    os << "MoE layer " << m.name << " trained in the step (" << m.tokensPerRank
       << " tokens a rank, ep " << m.ep << ", " << m.replicas
       << (m.replicas == 1 ? " replica" : " replicas") << "): "
       << human(m.flops, "FLOP") << ", ~" << human(m.bytes, "B")
       << " sent (uniform routing, no drops), " << m.calls
       << " calls a rank, forward and backward\n";
}
