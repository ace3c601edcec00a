//===- PlanReport.cpp - what a compiled step costs per rank ---------------===//
#include "muir/Analysis/PlanReport.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace mlir::muir;
using namespace mlir::muir::desc;

double mlir::muir::nsFlops(int64_t m, int64_t n, int64_t steps) {
  double r = std::min(m, n), c = std::max(m, n);
  return steps * (4 * r * r * c + 2 * r * r * r);
}

static int64_t dtypeBytes(StringRef dtype) {
  return dtype == "f32" ? 4 : 2;
}

FailureOr<PlanReport> PlanReport::compute(const Description &d,
                                          const ReportOptions &options,
                                          std::string &error) {
  PlanReport r;
  r.name = d.name;
  auto profile = MachineProfile::get(options.machine);
  if (!profile) {
    error = "unknown machine profile '" + options.machine +
            "' (expected cpu or h200)";
    return failure();
  }
  std::optional<NSMode> fixedMode;
  if (options.nsMode != "auto") {
    fixedMode = symbolizeNSMode(options.nsMode);
    if (!fixedMode) {
      error = "unknown ns-mode '" + options.nsMode +
              "' (expected auto, duplicated, distributed or blockwise)";
      return failure();
    }
  }
  NSCostModel model(*profile);
  r.machine = profile->name;
  for (const GridAxis &a : d.grid.axes)
    r.axes.push_back(a.name);
  for (const GridAxis &a : d.grid.moeAxes)
    if (!llvm::is_contained(r.axes, a.name))
      r.axes.push_back(a.name);

  // Every rank's share of every parameter. Even shards make ranks alike;
  // the loop still runs per rank so uneven plans (later: layer-wise
  // assignment) report faithfully.
  int64_t devices = d.grid.numDevices();
  r.ranks.resize(devices);
  for (const Parameter &p : d.params) {
    Assignment a = assignOptimizer(d, p);
    int64_t numel = p.numElements();
    r.totalParameters += numel;
    bool muon = a.optimizer == Optimizer::Muon;
    (muon ? r.muonParameters : r.adamwParameters) += numel;
    int64_t rank = p.shape.size();
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
    int64_t local = numel / factor;
    int64_t localMatrices = matrices / expertFactor;
    int64_t m = rank >= 2 ? p.shape[rank - 2] : 1;
    int64_t n = p.shape[rank - 1];

    // The Newton-Schulz mode of a matrix split on its own dimensions, as
    // muir-distribute decides it.
    SmallVector<std::pair<const Sharding *, int64_t>> matrixSplits;
    for (const Sharding &s : p.shards) {
      const GridAxis *axis = d.grid.find(s.axis, p.moeFolding);
      // Only splits of the matrix itself (its last two dimensions) need
      // communication: an fsdp split of an expert stack splits experts.
      if (s.kind != ShardKind::Expert && s.dim >= rank - 2 && axis &&
          axis->size > 1)
        matrixSplits.push_back({&s, axis->size});
    }
    NSMode mode = NSMode::Duplicated;
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
        if (mode == NSMode::Distributed && matrixSplits.size() != 1) {
          error = "'" + p.name + "': distributed Newton-Schulz needs the "
                  "matrix split on one dimension";
          return failure();
        }
      } else if (matrixSplits.size() == 1) {
        mode = model.choose(problem, &why);
      } else {
        why = "split on both matrix dimensions: duplicated";
      }
      double seconds;
      if (mode == NSMode::Distributed) {
        seconds = model.distributed(problem).seconds;
      } else if (mode == NSMode::Blockwise) {
        // Local NS of the block only, no communication.
        int64_t lm = m, ln = n;
        for (auto [split, g] : matrixSplits)
          (split->dim == rank - 2 ? lm : ln) /= g;
        seconds = localMatrices * nsFlops(lm, ln, a.muon.nsSteps) /
                  model.getProfile().flopsPerSecond;
      } else {
        seconds = model.duplicated(problem).seconds;
      }
      r.matrices.push_back({p.name, mode, seconds, why});
    }

    for (RankCost &c : r.ranks) {
      c.paramBytes += local * dtypeBytes(p.dtype);
      c.optimizerStateBytes += local * 4 * (muon ? 1 : 2);
      if (!muon) {
        c.runtimeCalls += 1; // one fused AdamW kernel
        continue;
      }
      c.runtimeCalls += 1; // the momentum kernel
      if (!matrixSplits.empty() && mode == NSMode::Distributed) {
        // Norm: sum_squares, all_reduce (4 bytes to g-1 peers), scale; per
        // step: local Gram, its all_reduce (4 s^2 to g-1 peers), B, X.
        auto [split, g] = matrixSplits.front();
        bool rowsSplit = split->dim == rank - 2;
        double sDim = rowsSplit ? n : m, k = rowsSplit ? m : n;
        c.nsFlops += localMatrices * a.muon.nsSteps *
                     (4 * sDim * sDim * k / g + 2 * sDim * sDim * sDim);
        c.collectiveBytes[split->axis] +=
            localMatrices * (4 * (g - 1) +
                             a.muon.nsSteps * int64_t(sDim * sDim) * 4 *
                                 (g - 1));
        c.runtimeCalls += 1 + 3 + 4 * a.muon.nsSteps; // + the update
        continue;
      }
      if (!matrixSplits.empty() && mode == NSMode::Blockwise) {
        int64_t lm = m, ln = n;
        for (auto [split, g] : matrixSplits)
          (split->dim == rank - 2 ? lm : ln) /= g;
        c.nsFlops += localMatrices * nsFlops(lm, ln, a.muon.nsSteps);
        c.runtimeCalls += 2 + 3 * a.muon.nsSteps + (lm > ln ? 2 : 0);
        continue;
      }
      // Local or duplicated: the whole matrix on every rank (a split
      // update, fused QKV, orthogonalises and updates each row block
      // alone): per block normalise, 3 GEMMs per step, the update, and
      // transposes in and out for tall blocks.
      SmallVector<int64_t> blocks = {m};
      if (a.muon.splitFused && !p.splitRows.empty() && rank == 2)
        blocks.assign(p.splitRows.begin(), p.splitRows.end());
      for (int64_t rows : blocks) {
        c.nsFlops += localMatrices * nsFlops(rows, n, a.muon.nsSteps);
        c.runtimeCalls += 2 + 3 * a.muon.nsSteps + (rows > n ? 2 : 0);
      }
      // Gathers one split dimension after another: each sends what this
      // rank holds by then to g - 1 peers; the slices back are local.
      int64_t held = local;
      for (auto [split, g] : matrixSplits) {
        c.collectiveBytes[split->axis] += held * 4 * (g - 1);
        held *= g;
        c.runtimeCalls += 2;
      }
    }
  }
  return r;
}

void PlanReport::writeJSON(llvm::raw_ostream &os) const {
  llvm::json::OStream j(os, 2);
  RankCost total;
  for (const RankCost &c : ranks) {
    total.paramBytes += c.paramBytes;
    total.optimizerStateBytes += c.optimizerStateBytes;
    total.nsFlops += c.nsFlops;
    total.runtimeCalls += c.runtimeCalls;
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
  static const char *prefixes[] = {"", "K", "M", "G", "T", "P", "E"};
  int i = 0;
  while (std::abs(v) >= 1000 && i < 6) {
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
    std::stable_sort(top.begin(), top.end(), [](auto *a, auto *b) {
      return a->modelledSeconds > b->modelledSeconds;
    });
    for (size_t i = 0; i < std::min<size_t>(3, top.size()); ++i)
      os << "  " << top[i]->name << ": " << stringify(top[i]->mode) << ", "
         << llvm::format("%.3g", top[i]->modelledSeconds * 1e3) << " ms ("
         << top[i]->why << ")\n";
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
}
