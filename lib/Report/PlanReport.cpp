//===- PlanReport.cpp - what a compiled step costs per rank ---------------===//
#include "muir/Report/PlanReport.h"
#include "muir/Analysis/StepCost.h"
#include "muir-rt/Runtime.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace mlir::muir;
using namespace mlir::muir::desc;

// The bytes a rank sends in an all_reduce of count floats over g ranks, as
// the runtime counts them (runtime/cpu/Dist.cpp), averaged over the group's
// ranks (the slices add up to count).
static double allReduceBytesMean(double count, double g) {
  if (!muirrt_all_reduce_scatters(static_cast<int64_t>(count),
                                  static_cast<int64_t>(g)))
    return count * 4 * (g - 1);
  return 8 * count * (g - 1) / g;
}

namespace {
/// PlanReport::compute in named steps over one report.
class ReportBuilder {
public:
  ReportBuilder(const Description &d, const ReportOptions &options,
                const StepCosts &costs)
      : d(d), options(options), costs(costs),
        profile(MachineProfile::get(options.machine)) {}

  PlanReport build() {
    setUp();
    assignDp();
    for (const Parameter &p : d.params)
      addParameter(p);
    if (d.training.enabled)
      addTraining();
    return r;
  }

private:
  void setUp();
  void assignDp();
  void addParameter(const Parameter &p);
  void addTraining();

  const Description &d;
  const ReportOptions &options;
  const StepCosts &costs;
  MachineProfile profile;
  PlanReport r;
};
} // namespace

/// The report's names, its ranks and the dp axis's place in the grid.
void ReportBuilder::setUp() {
  r.name = d.name;
  r.machine = stringify(profile.machine).str();
  for (const GridAxis &a : d.grid.axes)
    r.axes.push_back(a.name);
  for (const GridAxis &a : d.grid.moeAxes)
    if (!llvm::is_contained(r.axes, a.name))
      r.axes.push_back(a.name);

  // What each rank runs, the modes of the split matrices and the forms of
  // the Newton-Schulz ops, from the compiled step.
  r.ranks = costs.ranks;
  r.matrices = costs.matrices;
  r.forms = costs.forms;
  for (FormPlan &f : r.forms)
    f.requested = options.nsForm != NSFormOption::Auto;

  // Over dp, as muir-distribute shares Newton-Schulz out: Muon matrices of
  // the run's grid with no split on dp (layer-wise), or with an FSDP split
  // of a matrix dimension that no other split shares.
  r.dp.axis = "dp";
  r.dp.policy = options.dpAssign;
  for (const GridAxis &a : d.grid.axes)
    if (a.name == r.dp.axis)
      r.dp.ranks = a.size;
}

/// Over dp, the matrices muir-distribute shared out (their owners and
/// weights in the planned IR), and for comparison the loads both balancing
/// policies give the same weights.
void ReportBuilder::assignDp() {
  std::vector<double> weights;
  r.dp.load.assign(static_cast<size_t>(std::max<int64_t>(1, r.dp.ranks)),
                   0.0);
  for (const OwnedMatrix &o : costs.owned) {
    weights.push_back(o.weight);
    r.dp.owners.push_back({o.name, o.owner});
    r.dp.fsdpMatrices += o.fsdp;
    if (o.owner < static_cast<int64_t>(r.dp.load.size()))
      r.dp.load[static_cast<size_t>(o.owner)] += o.weight;
  }
  r.dp.greedy = loadStats(
      weights, assignToRanks(weights, r.dp.ranks, DpAssign::Greedy),
      r.dp.ranks);
  r.dp.roundRobin = loadStats(
      weights, assignToRanks(weights, r.dp.ranks, DpAssign::RoundRobin),
      r.dp.ranks);
}

/// One parameter's share of the totals.
void ReportBuilder::addParameter(const Parameter &p) {
  Assignment a = assignOptimizer(d, p);
  int64_t numel = p.numElements();
  r.totalParameters += numel;
  // Muon and NorMuon orthogonalise, alike.
  bool muon = optimizerInfo(a.optimizer).orthogonalises;
  (muon ? r.muonParameters : r.adamwParameters) += numel;
  if (muon)
    r.muonMatrices += p.shape.size() == 3 ? p.shape[0] : 1;
}

void ReportBuilder::addTraining() {
  // MoE layers trained in the step (lib/Import/TrainedLayer.h).
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
      // Calls: the layer's ops in the compiled step.
      auto calls = costs.layerCalls.find(l.name);
      m.calls = calls == costs.layerCalls.end() ? 0 : calls->second;
      r.moeTraining.push_back(m);
    }
  }
}

PlanReport PlanReport::compute(const Description &d,
                               const ReportOptions &options,
                               const StepCosts &costs) {
  return ReportBuilder(d, options, costs).build();
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
          j.attribute("batch", f.batch);
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
