//===- DescriptionPolicy.cpp - layouts and optimizer choice ---------------===//
//
// What muir derives from a description rather than reads from it: grids
// from --layout strings (with Megatron's parallel folding for ep and etp),
// the default shardings applyLayout gives each parameter by its role and
// name, and the optimizer (with its overrides) that each parameter gets.
//
//===----------------------------------------------------------------------===//
#include "Muir/MuirDialect.h"
#include "muir/Import/Description.h"
#include "muir/Support/Limits.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/GlobPattern.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/Regex.h"

using namespace mlir;
using namespace mlir::muir::desc;

const GridAxis *Grid::find(StringRef name, bool moe) const {
  const std::vector<GridAxis> &list = moe && !moeAxes.empty() ? moeAxes : axes;
  for (const GridAxis &a : list)
    if (a.name == name)
      return &a;
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Layouts and default shardings
//===----------------------------------------------------------------------===//

FailureOr<Grid> mlir::muir::desc::parseLayout(StringRef layout,
                                              std::string &error) {
  Grid g;
  auto [main, moePart] = layout.split(';');
  auto parseAxes = [&](StringRef text, std::vector<GridAxis> &out) {
    SmallVector<StringRef> items;
    text.split(items, ',', -1, /*KeepEmpty=*/true);
    for (StringRef item : items) {
      if (item.trim().empty()) {
        error = "empty entry in layout '" + text.str() +
                "'; expected name=size[,name=size...]";
        return false;
      }
      auto [name, size] = item.trim().split('=');
      GridAxis a;
      a.name = name.trim().str();
      if (a.name.empty() || size.trim().getAsInteger(10, a.size) ||
          a.size < 1) {
        error = ("malformed layout entry '" + item.trim() +
                 "'; expected name=size with size >= 1, e.g. dp=8,tp=2")
                    .str();
        return false;
      }
      int64_t devices = a.size;
      for (const GridAxis &b : out)
        if (llvm::MulOverflow(devices, b.size, devices))
          devices = muir::kMaxDevices + 1;
      if (devices > muir::kMaxDevices) {
        error = ("layout entry '" + item.trim() + "': the layout's axes " +
                 "multiply to more than 2^20 devices (the most muir " +
                 "supports)")
                    .str();
        return false;
      }
      for (const GridAxis &b : out)
        if (b.name == a.name) {
          error = "layout axis '" + a.name + "' appears twice";
          return false;
        }
      out.push_back(a);
    }
    return true;
  };
  if (main.trim().empty()) {
    error = "the layout has no axes; expected e.g. \"dp=8,tp=2,ep=8\"";
    return failure();
  }
  if (!parseAxes(main, g.axes))
    return failure();
  moePart = moePart.trim();
  if (!moePart.empty()) {
    if (!moePart.consume_front("moe:")) {
      error = "expected 'moe:' after ';' in the layout, e.g. "
              "\"dp=8,tp=2;moe:edp=2,ep=8\"";
      return failure();
    }
    if (!parseAxes(moePart, g.moeAxes))
      return failure();
  } else {
    // Megatron's parallel folding: ep (and etp) fold over the devices of
    // the attention grid; the rest of them form the expert-data axis edp.
    std::vector<GridAxis> attention, expert;
    for (GridAxis &a : g.axes)
      (a.name == "ep" || a.name == "etp" ? expert : attention).push_back(a);
    if (!expert.empty()) {
      g.axes = attention.empty() ? std::vector<GridAxis>{{"dp", 1, {}}}
                                 : attention;
      int64_t devices = g.numDevices(), folded = 1;
      for (const GridAxis &a : expert)
        folded *= a.size;
      for (const GridAxis &a : g.axes)
        if (a.name == "pp")
          folded *= a.size;
      if (devices % folded != 0) {
        error = "the layout's attention axes cover " +
                std::to_string(devices) +
                " devices, which ep x etp x pp = " + std::to_string(folded) +
                " does not divide";
        return failure();
      }
      for (const GridAxis &a : g.axes)
        if (a.name == "pp")
          g.moeAxes.push_back(a);
      g.moeAxes.push_back({"edp", devices / folded, {}});
      for (const GridAxis &a : expert)
        g.moeAxes.push_back(a);
    }
  }
  return g;
}

/// Row-parallel (input-dimension) projections by their conventional names.
static bool isRowParallel(StringRef name) {
  for (StringRef n : {"o_proj", "down_proj", "w2", "out_proj", "dense_4h_to_h",
                      "proj_out"})
    if (name.contains(n))
      return true;
  return false;
}

LogicalResult mlir::muir::desc::applyLayout(Description &d, const Grid &layout,
                                            ErrorList &errors) {
  d.grid = layout;
  size_t before = errors.size();
  for (Parameter &p : d.params) {
    // Shards on axes the new grid keeps stay; the rest are re-derived.
    llvm::erase_if(p.shards, [&](const Sharding &s) {
      return !d.grid.find(s.axis, p.moeFolding);
    });
    if (!p.shards.empty())
      continue;
    int64_t rank = p.shape.size();
    auto add = [&](ShardKind kind, StringRef axis, int64_t dim) {
      const GridAxis *a = d.grid.find(axis, p.moeFolding);
      if (!a || a->size == 1 || dim >= rank)
        return;
      p.shards.push_back({kind, axis.str(), dim, p.loc});
    };
    switch (p.role) {
    case Role::Attention:
    case Role::Mlp:
      if (rank == 2) {
        if (isRowParallel(p.name))
          add(ShardKind::tp_row, "tp", 1);
        else
          add(ShardKind::tp_column, "tp", 0);
      }
      break;
    case Role::Embedding:
    case Role::Head:
      add(ShardKind::tp_column, "tp", 0); // vocabulary-parallel
      break;
    case Role::Expert:
      add(ShardKind::expert, "ep", 0);
      if (isRowParallel(p.name))
        add(ShardKind::tp_row, "etp", 2);
      else
        add(ShardKind::tp_column, "etp", 1);
      break;
    default:
      break;
    }
  }
  // Expert axes on a model without experts would split nothing: say so
  // rather than run a grid whose ranks all do the same work.
  bool hasExperts = llvm::any_of(d.params, [](const Parameter &p) {
    return p.role == Role::Expert;
  });
  for (const std::vector<GridAxis> *axes : {&d.grid.axes, &d.grid.moeAxes})
    for (const GridAxis &a : *axes)
      if ((a.name == "ep" || a.name == "etp") && a.size > 1 && !hasExperts)
        errors.add(Loc{}, "--layout: " + a.name + "=" + std::to_string(a.size) +
                              " splits expert stacks, but the model has "
                              "none (no parameter with role expert); leave " +
                              a.name + " out of the layout");
  resolveTokens(d);
  (void)validate(d,
                 [&](const Loc &loc, const Twine &msg, const Subject &subject) {
                   errors.add(loc, msg, subject);
                 });
  return success(errors.size() == before);
}

void mlir::muir::desc::resolveTokens(Description &d) {
  int64_t devices = std::max<int64_t>(1, d.grid.numDevices());
  for (MoELayer &l : d.moe)
    if (l.tokens > 0)
      l.tokensPerRank = std::max<int64_t>(1, l.tokens / devices);
}

//===----------------------------------------------------------------------===//
// Optimizer assignment
//===----------------------------------------------------------------------===//

ArrayRef<OptimizerInfo> mlir::muir::desc::optimizers() {
  static const OptimizerState muonState[] = {
      {".momentum", "the momentum", "momentum_buffer"}};
  static const OptimizerState adamwState[] = {
      {".exp_avg", "the exp_avg", "exp_avg"},
      {".exp_avg_sq", "the exp_avg_sq", "exp_avg_sq"}};
  static const OptimizerState normuonState[] = {
      {".momentum", "the momentum", "momentum_buffer"},
      {".variance", "the NorMuon second moment", "variance", /*rows=*/true}};
  static const StringRef muonHyper[] = {"lr", "weight_decay", "momentum"};
  static const StringRef adamwHyper[] = {"lr", "weight_decay", "beta1",
                                         "beta2", "eps"};
  // Their sections' keys and defaults. NorMuon has Muon's but the scale
  // (its update RMS is scale_extra), split_fused and the clip, and its
  // second moment's beta2 and eps2.
  using S = OptimizerSetting;
  static const S muonSettings[] = {
      {"lr", 0.02},           {"momentum", 0.95},
      {"nesterov", 1},        {"momentum_kind", 0, "ema"},
      {"weight_decay", 0},    {"scale_mode", 0, "spectral"},
      {"scale_extra", 0.2},   {"ns_steps", 5},
      {"schedule", 0, "simple"}, {"coefficients", 0, {}, /*unset=*/true},
      {"eps", 1e-7},          {"split_fused", 0},
      {"qk_clip", 0, {}, /*unset=*/true}};
  static const S normuonSettings[] = {
      {"lr", 0.02},           {"momentum", 0.95},
      {"nesterov", 1},        {"momentum_kind", 0, "ema"},
      {"weight_decay", 0},    {"scale_extra", 0.2},
      {"ns_steps", 5},        {"schedule", 0, "simple"},
      {"coefficients", 0, {}, /*unset=*/true},
      {"eps", 1e-7},          {"beta2", 0.95},
      {"eps2", 1e-8}};
  static const S adamwSettings[] = {{"lr", 3e-4},
                                    {"beta1", 0.9},
                                    {"beta2", 0.95},
                                    {"eps", 1e-8},
                                    {"weight_decay", 0}};
  static const OptimizerInfo all[] = {
      {Optimizer::Muon, "muon", true, muonState, muonHyper, false, false,
       false, 0, muonSettings},
      {Optimizer::AdamW, "adamw", false, adamwState, adamwHyper, true, false,
       false, 0, adamwSettings},
      // row_sum_squares, normuon_normalize, sum_squares, scale_by_norm.
      {Optimizer::NorMuon, "normuon", true, normuonState, muonHyper, false,
       /*rowSums=*/true, /*updateNorm=*/true, /*normalizeKernels=*/4,
       normuonSettings},
  };
  return all;
}

ArrayRef<SettingSpec> mlir::muir::desc::settingSpecs() {
  using K = SettingSpec::Kind;
  constexpr double inf = std::numeric_limits<double>::infinity();
  static const StringRef momentumKinds[] = {"ema", "accumulate"};
  static const StringRef scaleModes[] = {"spectral", "shape", "unit_rms"};
  // The dialect's enum names the schedules (MuirEnums.td).
  static const ArrayRef<StringRef> schedules = muir::getScheduleNames();
  // Rates and decays in [0, inf), moments' coefficients in [0, 1), what
  // divides or scales in (0, inf).
  static const SettingSpec all[] = {
      {"lr", K::Real, 0, inf, true, false, {}},
      {"weight_decay", K::Real, 0, inf, true, false, {}},
      {"momentum", K::Real, 0, 1, true, false, {}},
      {"beta1", K::Real, 0, 1, true, false, {}},
      {"beta2", K::Real, 0, 1, true, false, {}},
      {"eps", K::Real, 0, inf, false, false, {}},
      {"eps2", K::Real, 0, inf, false, false, {}},
      {"scale_extra", K::Real, 0, inf, false, false, {}},
      {"qk_clip", K::Real, 0, inf, false, false, {}},
      {"ns_steps", K::Integer, 1, double(muir::kMaxNSSteps), true, true, {}},
      {"nesterov", K::Boolean, 0, 0, true, true, {}},
      {"split_fused", K::Boolean, 0, 0, true, true, {}},
      {"momentum_kind", K::Choice, 0, 0, true, true, momentumKinds},
      {"scale_mode", K::Choice, 0, 0, true, true, scaleModes},
      {"schedule", K::Choice, 0, 0, true, true, schedules},
      {"coefficients", K::RealList, -inf, inf, false, false, {}},
  };
  return all;
}

SettingField mlir::muir::desc::settingField(OptimizerSettings &s,
                                            StringRef key) {
  return llvm::StringSwitch<SettingField>(key)
      .Case("lr", &s.lr)
      .Case("momentum", &s.beta)
      .Case("nesterov", &s.nesterov)
      .Case("momentum_kind", &s.momentumKind)
      .Case("weight_decay", &s.weightDecay)
      .Case("scale_mode", &s.scaleMode)
      .Case("scale_extra", &s.scaleExtra)
      .Case("ns_steps", &s.nsSteps)
      .Case("schedule", &s.schedule)
      .Case("coefficients", &s.coefficients)
      .Case("eps", &s.eps)
      .Case("split_fused", &s.splitFused)
      .Case("qk_clip", &s.qkClip)
      .Case("beta1", &s.beta1)
      .Case("beta2", &s.beta2)
      .Case("eps2", &s.eps2)
      .Default(std::monostate());
}

OptimizerSettings::OptimizerSettings(Optimizer o) {
  for (const OptimizerSetting &d : optimizerInfo(o).settings) {
    if (d.unset)
      continue;
    SettingField f = settingField(*this, d.key);
    if (auto *x = std::get_if<double *>(&f))
      **x = d.value;
    else if (auto *x = std::get_if<int64_t *>(&f))
      **x = static_cast<int64_t>(d.value);
    else if (auto *x = std::get_if<bool *>(&f))
      **x = d.value != 0;
    else if (auto *x = std::get_if<std::string *>(&f))
      **x = d.choice.str();
  }
}

const SettingSpec *mlir::muir::desc::findSettingSpec(StringRef key) {
  for (const SettingSpec &s : settingSpecs())
    if (s.key == key)
      return &s;
  return nullptr;
}

const OptimizerInfo &mlir::muir::desc::optimizerInfo(Optimizer o) {
  const OptimizerInfo &info = optimizers()[static_cast<size_t>(o)];
  assert(info.id == o && "optimizers() in Optimizer's order");
  return info;
}

static bool matches(const Override &o, StringRef name) {
  if (o.byNames)
    return llvm::is_contained(o.names, name);
  if (o.isRegex)
    return llvm::Regex("^(" + o.pattern + ")$").match(name);
  auto glob = llvm::GlobPattern::create(o.pattern, /*MaxSubPatterns=*/1024);
  return glob && glob->match(name);
}

Assignment mlir::muir::desc::assignOptimizer(const Description &d,
                                             const Parameter &p) {
  Assignment a;
  bool matrix = (p.shape.size() == 2 &&
                 (p.role == Role::Attention || p.role == Role::Mlp ||
                  p.role == Role::Other)) ||
                (p.shape.size() == 3 && p.role == Role::Expert);
  Optimizer matrices = d.hasNormuon ? Optimizer::NorMuon : Optimizer::Muon;
  a.optimizer = matrix ? matrices : Optimizer::AdamW;
  a.muon = d.muon;
  a.adamw = d.adamw;
  // NorMuon's settings take the overrides as Muon's do; the parameter gets
  // the set of the optimizer it ends up with.
  MuonSettings normuon = d.normuon;
  std::string lrOverride, weightDecayOverride, momentumOverride,
      beta1Override, beta2Override, epsOverride;
  for (auto [k, o] : llvm::enumerate(d.overrides)) {
    if ((o.pattern.empty() && !o.byNames) || !matches(o, p.name))
      continue;
    std::string group = "overrides." + std::to_string(k);
    if (o.optimizer)
      a.optimizer = *o.optimizer;
    if (o.lr) {
      a.muon.lr = *o.lr;
      normuon.lr = *o.lr;
      a.adamw.lr = *o.lr;
      lrOverride = group;
    }
    if (o.weightDecay) {
      a.muon.weightDecay = *o.weightDecay;
      normuon.weightDecay = *o.weightDecay;
      a.adamw.weightDecay = *o.weightDecay;
      weightDecayOverride = group;
    }
    if (o.momentum) {
      a.muon.beta = *o.momentum;
      normuon.beta = *o.momentum;
      momentumOverride = group;
    }
    if (o.beta1) {
      a.adamw.beta1 = *o.beta1;
      beta1Override = group;
    }
    if (o.beta2) {
      a.adamw.beta2 = *o.beta2;
      normuon.beta2 = *o.beta2;
      beta2Override = group;
    }
    if (o.eps) {
      a.adamw.eps = *o.eps;
      epsOverride = group;
    }
    for (MuonSettings *m : {&a.muon, &normuon}) {
      if (o.nesterov)
        m->nesterov = *o.nesterov;
      if (o.scaleMode)
        m->scaleMode = *o.scaleMode;
      if (o.scaleExtra)
        m->scaleExtra = *o.scaleExtra;
      if (o.nsSteps)
        m->nsSteps = *o.nsSteps;
      if (o.schedule)
        m->schedule = *o.schedule;
    }
  }
  // Muon and NorMuon need a matrix; an override cannot make a vector one.
  if (optimizerInfo(a.optimizer).orthogonalises && p.shape.size() != 2 &&
      p.shape.size() != 3)
    a.optimizer = Optimizer::AdamW;
  if (a.optimizer == Optimizer::NorMuon)
    a.muon = normuon;
  std::string base = optimizerName(a.optimizer).str();
  auto from = [&](const std::string &o) { return o.empty() ? base : o; };
  a.lrGroup = from(lrOverride);
  a.weightDecayGroup = from(weightDecayOverride);
  a.momentumGroup = from(momentumOverride);
  a.beta1Group = from(beta1Override);
  a.beta2Group = from(beta2Override);
  a.epsGroup = from(epsOverride);
  return a;
}

SmallVector<HyperArgument, 5>
mlir::muir::desc::hyperArguments(const Assignment &a) {
  const OptimizerInfo &info = optimizerInfo(a.optimizer);
  bool matrix = info.orthogonalises;
  SmallVector<HyperArgument, 5> out;
  for (StringRef field : info.hyper) {
    // Each field's group (the setting or override it comes from) and
    // value, from the settings of the optimizer's family.
    auto [group, value] =
        field == "lr" ? std::pair(&a.lrGroup,
                                  matrix ? a.muon.lr : a.adamw.lr)
        : field == "weight_decay"
            ? std::pair(&a.weightDecayGroup,
                        matrix ? a.muon.weightDecay : a.adamw.weightDecay)
        : field == "momentum" ? std::pair(&a.momentumGroup, a.muon.beta)
        : field == "beta1"    ? std::pair(&a.beta1Group, a.adamw.beta1)
        : field == "beta2"    ? std::pair(&a.beta2Group, a.adamw.beta2)
                              : std::pair(&a.epsGroup, a.adamw.eps);
    out.push_back({*group + "." + field.str(), value});
  }
  return out;
}
