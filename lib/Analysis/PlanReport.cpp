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

PlanReport PlanReport::compute(const Description &d) {
  PlanReport r;
  r.name = d.name;
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
      if (s.kind == ShardKind::Expert)
        expertFactor *= g;
    }
    int64_t local = numel / factor;
    int64_t localMatrices = matrices / expertFactor;
    int64_t m = rank >= 2 ? p.shape[rank - 2] : 1;
    int64_t n = p.shape[rank - 1];
    for (RankCost &c : r.ranks) {
      c.paramBytes += local * dtypeBytes(p.dtype);
      c.optimizerStateBytes += local * 4 * (muon ? 1 : 2);
      if (!muon) {
        c.runtimeCalls += 1; // one fused AdamW kernel
        continue;
      }
      // A split update (fused QKV) orthogonalises each row block alone.
      SmallVector<int64_t> blocks = {m};
      if (a.muon.splitFused && !p.splitRows.empty() && rank == 2)
        blocks.assign(p.splitRows.begin(), p.splitRows.end());
      // Per block: normalise, 3 GEMMs per step and the update (tall blocks
      // transpose in and out); plus one
      // momentum kernel. A batch of experts is one call each.
      c.runtimeCalls += 1;
      for (int64_t rows : blocks) {
        c.nsFlops += localMatrices * nsFlops(rows, n, a.muon.nsSteps);
        c.runtimeCalls += 2 + 3 * a.muon.nsSteps + (rows > n ? 2 : 0);
      }
      for (const Sharding &s : p.shards) {
        if (s.kind == ShardKind::Expert)
          continue;
        const GridAxis *axis = d.grid.find(s.axis, p.moeFolding);
        if (!axis || axis->size == 1)
          continue;
        // Duplicated mode: all-gather the momentum shards (fp32).
        int64_t shardBytes = (numel / expertFactor) * 4 / axis->size;
        c.collectiveBytes[s.axis] += (axis->size - 1) * shardBytes;
        c.runtimeCalls += 1;
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
