//===- DescriptionValidate.cpp - checking training-step descriptions ------===//
//
// The cross-field rules of a description (grid, optimizer, parameters and
// their shards, MoE layers, training), each reported through a callback at
// the place it concerns, so that the reader (file:line:col) and applyLayout
// (strings) share them and one run reports every broken rule; and the
// ErrorList that reports one rule broken by many parameters once.
//
//===----------------------------------------------------------------------===//
#include "DescriptionInternal.h"
#include "muir/Support/Limits.h"

#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/YAMLParser.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::muir::desc;
using namespace mlir::muir::desc::detail;

/// The number of devices of a folding (the product of its axes' sizes), or
/// nullopt when it is more than kMaxDevices.
std::optional<int64_t>
mlir::muir::desc::detail::numDevicesChecked(ArrayRef<GridAxis> axes) {
  int64_t n = 1;
  for (const GridAxis &a : axes)
    if (llvm::MulOverflow(n, a.size, n) || n > muir::kMaxDevices)
      return std::nullopt;
  return n;
}

void ErrorList::add(const Loc &loc, const Twine &message,
                    const Subject &subject) {
  entries.push_back({loc, message.str(), subject});
}

std::vector<std::pair<Loc, std::string>> ErrorList::grouped() const {
  // The entries of each rule, in the order the rules first occur.
  std::vector<std::vector<const Entry *>> groups;
  llvm::StringMap<size_t> byRule;
  for (const Entry &e : entries) {
    if (e.subject.rule.empty()) {
      groups.push_back({&e});
      continue;
    }
    auto [it, inserted] = byRule.try_emplace(
        e.subject.plural.str() + "\n" + e.subject.rule, groups.size());
    if (inserted)
      groups.emplace_back();
    groups[it->second].push_back(&e);
  }
  // A group names its first few; one no bigger is reported error by
  // error, each at its own place.
  constexpr size_t kNamed = 3;
  std::vector<std::pair<Loc, std::string>> result;
  for (const std::vector<const Entry *> &g : groups) {
    const Entry &first = *g.front();
    if (g.size() <= kNamed) {
      for (const Entry *e : g)
        result.push_back({e->loc, e->message});
      continue;
    }
    std::string text = std::to_string(g.size()) + " " +
                       first.subject.plural.str() + ": " + first.subject.rule +
                       ": ";
    for (size_t i = 0; i < std::min(g.size(), kNamed); ++i)
      text += (i ? ", " : "") + g[i]->subject.name;
    if (g.size() > kNamed)
      text += ", ... (" + std::to_string(g.size() - kNamed) + " more)";
    result.push_back({first.loc, text});
  }
  return result;
}

std::vector<std::string> ErrorList::lines() const {
  std::vector<std::string> result;
  for (const auto &[loc, message] : grouped()) {
    std::string where = loc.file;
    if (loc.line)
      where += ":" + std::to_string(loc.line) + ":" + std::to_string(loc.col);
    result.push_back((where.empty() ? "" : where + ": ") + message);
  }
  return result;
}

LogicalResult mlir::muir::desc::validate(
    const Description &d,
    function_ref<void(const Loc &, const Twine &, const Subject &)> report) {
  bool ok = true;
  auto fail = [&](const Loc &loc, const Twine &msg) {
    ok = false;
    report(loc, msg, Subject{});
  };
  // A rule broken by a parameter or MoE layer `name`; `rule` says it
  // without the name, for the grouped report.
  auto failFor = [&](const Loc &loc, const Twine &msg, StringRef name,
                     const Twine &rule, StringRef plural = "parameters") {
    ok = false;
    report(loc, msg, Subject{name.str(), rule.str(), plural});
  };
  // (A description without any grid was already told so by the reader.)
  if (d.grid.axes.empty() && !d.grid.loc.file.empty())
    fail(d.grid.loc, "the grid needs at least one axis");
  // Axis names are identifiers: writeDescription and the plan report write
  // them bare, and --layout and shards name them.
  for (const std::vector<GridAxis> *axes : {&d.grid.axes, &d.grid.moeAxes})
    for (const GridAxis &a : *axes)
      if (a.name.empty() || llvm::isDigit(a.name.front()) ||
          !llvm::all_of(a.name, [](char c) {
            return llvm::isAlnum(c) || c == '_';
          }))
        fail(a.loc, "axis name '" + a.name +
                        "' is not an identifier: use letters, digits and "
                        "'_', not starting with a digit, e.g. dp or tp");
  // Every later use multiplies the sizes (Grid::numDevices): they must not
  // overflow.
  std::optional<int64_t> devices = numDevicesChecked(d.grid.axes);
  std::optional<int64_t> moe = numDevicesChecked(d.grid.moeAxes);
  if (!devices)
    fail(d.grid.axes.back().loc, "the grid's axes multiply to more than "
                                 "2^20 devices (the most muir supports)");
  if (!moe)
    fail(d.grid.moeAxes.back().loc, "the MoE folding's axes multiply to "
                                    "more than 2^20 devices (the most muir "
                                    "supports)");
  if (!d.grid.moeAxes.empty() && devices && moe && *moe != *devices)
    fail(d.grid.moeAxes.front().loc,
         "the MoE folding covers " + Twine(*moe) +
             " devices but the grid has " + Twine(*devices) +
             "; both foldings must cover the same devices");
  const MuonSettings &m = d.muon;
  if (m.schedule == "custom" && (m.coefficients.empty() ||
                                 m.coefficients.size() % 3 != 0))
    fail(d.loc, "schedule 'custom' needs 'coefficients': a non-empty list of "
                "(a, b, c) triples, got " +
                    Twine(m.coefficients.size()) + " values");
  bool anyCustom = m.schedule == "custom";
  for (const Override &o : d.overrides)
    anyCustom |= o.schedule && *o.schedule == "custom";
  if (!anyCustom && !m.coefficients.empty())
    fail(d.loc, "optimizer.muon.coefficients are only used with schedule "
                "'custom' (globally or in an override), got schedule '" +
                    m.schedule + "'");
  for (const Override &o : d.overrides)
    if (o.schedule && *o.schedule == "custom" && m.coefficients.empty())
      fail(o.loc, "an override selects schedule 'custom' but "
                  "optimizer.muon has no coefficients");

  llvm::StringMap<const Parameter *> names;
  int64_t totalElements = 0;
  bool totalReported = false;
  for (const Parameter &p : d.params) {
    if (p.name.empty() || p.shape.empty())
      continue;
    // Names become file names (DIR/<name>.npy) and the IR's 'muir.name',
    // whose verifier has the same rule.
    StringRef name = p.name;
    if (name.starts_with("/") || name.contains('\0') ||
        llvm::any_of(llvm::split(name, '/'), [](StringRef part) {
          return part.empty() || part == "." || part == "..";
        }))
      fail(p.loc, "parameter name '" + llvm::yaml::escape(name) +
                      "' is not usable as a relative file name: no leading "
                      "'/', NUL, or empty, '.' or '..' parts");
    int64_t count = 1;
    bool overflow = false;
    for (int64_t dim : p.shape)
      overflow |= llvm::MulOverflow(count, dim, count);
    if (overflow || count > muir::kMaxTensorElements) {
      fail(p.loc, "parameter '" + p.name + "' has more than 2^40 elements " +
                      "(the most one tensor may have; docs/description.md, "
                      "\"Limits\")");
      continue;
    }
    if (llvm::AddOverflow(totalElements, count, totalElements) ||
        totalElements > muir::kMaxModelElements) {
      if (!totalReported)
        fail(p.loc, "the parameters up to '" + p.name + "' have more than "
                    "2^48 elements in all (the most a step may have; "
                    "docs/description.md, \"Limits\")");
      totalReported = true;
    }
    auto [it, inserted] = names.try_emplace(p.name, &p);
    if (!inserted)
      fail(p.loc, "duplicate parameter name '" + p.name + "' (first at line " +
                      Twine(it->second->loc.line) + ")");
    if (p.role == Role::Expert && p.shape.size() != 3)
      fail(p.loc, "expert parameter '" + p.name +
                      "' must be a stack [E, m, n], got rank " +
                      Twine(p.shape.size()));
    int64_t sum = 0;
    for (int64_t r : p.splitRows)
      sum += r;
    if (!p.splitRows.empty() && p.shape.size() != 2)
      fail(p.loc, "split_rows of '" + p.name +
                      "' needs a matrix (rank 2), got rank " +
                      Twine(p.shape.size()));
    else if (!p.splitRows.empty() && sum != p.shape.front())
      fail(p.loc, "split_rows of '" + p.name + "' add up to " + Twine(sum) +
                      ", expected dim 0 = " + Twine(p.shape.front()));
    llvm::SmallSet<int64_t, 4> dims;
    llvm::StringSet<> axesUsed;
    for (const Sharding &s : p.shards) {
      if (!dims.insert(s.dim).second || !axesUsed.insert(s.axis).second)
        fail(s.loc, "'" + p.name + "' is sharded twice on dim " +
                        Twine(s.dim) + " or on axis '" + s.axis +
                        "'; give each dimension and axis one shard");
      const GridAxis *axis = d.grid.find(s.axis, p.moeFolding);
      if (!axis) {
        std::string grid =
            (p.moeFolding && !d.grid.moeAxes.empty() ? "MoE " : "") +
            std::string("grid");
        failFor(s.loc,
                "shard of '" + p.name + "' names axis '" + s.axis +
                    "', which the " + grid + " does not have",
                p.name,
                "a shard names axis '" + s.axis + "', which the " + grid +
                    " does not have");
        continue;
      }
      int64_t rank = p.shape.size();
      int64_t dim = s.dim;
      StringRef kind = stringify(s.kind);
      if (dim >= rank) {
        failFor(s.loc,
                kind + " shard of '" + p.name + "' needs dim " + Twine(dim) +
                    " but the shape has rank " + Twine(rank),
                p.name,
                kind + " shard needs dim " + Twine(dim) +
                    " but the shape has rank " + Twine(rank));
        continue;
      }
      if (p.shape[dim] % axis->size != 0) {
        std::string notDivisible =
            ("dim " + Twine(dim) + " (" + Twine(p.shape[dim]) +
             ") is not divisible by " + s.axis + "=" + Twine(axis->size))
                .str();
        failFor(s.loc, kind + " shard of '" + p.name + "': " + notDivisible,
                p.name, kind + " shard: " + notDivisible);
      }
    }
  }
  for (const MoELayer &l : d.moe) {
    // A rank's routed rows (tokens x top_k) of the widest activation.
    int64_t rows = 0, elements = 0;
    if (llvm::MulOverflow(l.tokensPerRank, std::max<int64_t>(l.topK, 1),
                          rows) ||
        llvm::MulOverflow(rows,
                          std::max<int64_t>({l.hidden, l.expertSize, 1}),
                          elements) ||
        rows > muir::kMaxDim || elements > muir::kMaxTensorElements)
      fail(l.loc, "MoE layer '" + l.name + "': tokens_per_rank (" +
                      Twine(l.tokensPerRank) + ") x top_k (" +
                      Twine(l.topK) + ") routed rows of " +
                      Twine(std::max(l.hidden, l.expertSize)) +
                      " features are more than muir supports (2^31 - 1 "
                      "rows, 2^40 elements; docs/description.md, "
                      "\"Limits\")");
    if (l.experts && l.topK > l.experts)
      fail(l.loc, "top_k (" + Twine(l.topK) + ") is greater than experts (" +
                      Twine(l.experts) + ") in MoE layer '" + l.name + "'");
    if (l.groups > 1 && l.experts % l.groups != 0) {
      std::string rule =
          ("experts (" + Twine(l.experts) + ") are not divisible by groups (" +
           Twine(l.groups) + ")")
              .str();
      failFor(l.loc, rule + " in MoE layer '" + l.name + "'", l.name, rule,
              "MoE layers");
    }
    if (l.groupsPerToken > l.groups)
      fail(l.loc, "groups_per_token (" + Twine(l.groupsPerToken) +
                      ") is greater than groups (" + Twine(l.groups) +
                      ") in MoE layer '" + l.name + "'");
    if (const GridAxis *ep = d.grid.find("ep", true))
      if (l.experts % ep->size != 0) {
        std::string rule = ("experts (" + Twine(l.experts) +
                            ") are not divisible by ep=" + Twine(ep->size))
                               .str();
        failFor(l.loc, rule + " in MoE layer '" + l.name + "'", l.name, rule,
                "MoE layers");
      }
  }
  // Training: every MoE layer's router and SwiGLU expert stacks (and shared
  // experts) exist with the layer's shapes, and its routing is complete.
  if (d.training.enabled) {
    const GridAxis *ep = d.grid.find("ep", true);
    int64_t epSize = ep ? ep->size : 1;
    if (d.moe.empty())
      fail(d.training.loc, "training needs at least one entry under 'moe'");
    llvm::StringSet<> names;
    for (const MoELayer &l : d.moe) {
      if (!names.insert(l.name).second)
        fail(l.loc, "training: two MoE layers are named '" + l.name + "'");
      if (l.topK < 1 || l.experts < 1 || l.hidden < 1 || l.expertSize < 1)
        fail(l.loc, "training MoE layer '" + l.name +
                        "' needs experts, top_k, hidden and expert_size");
      else if (l.groups > 0 && l.experts % l.groups == 0 &&
               l.topK > l.groupsPerToken * (l.experts / l.groups))
        fail(l.loc, "training MoE layer '" + l.name + "': top_k (" +
                        Twine(l.topK) + ") is more than the " +
                        Twine(l.groupsPerToken * (l.experts / l.groups)) +
                        " experts of groups_per_token groups");
      if (!(l.routedScaling > 0))
        fail(l.loc, "training MoE layer '" + l.name +
                        "': routed_scaling must be > 0");
      int64_t e = l.experts, h = l.hidden, f = l.expertSize;
      int64_t sf = l.sharedExperts * f;
      std::string missing;
      struct Want {
        const char *suffix;
        SmallVector<int64_t> shape;
        bool stack; ///< an expert stack (may be split by experts over ep)
      };
      SmallVector<Want> wants = {Want{".router", {e, h}, false},
                                 Want{".experts.gate_proj", {e, f, h}, true},
                                 Want{".experts.up_proj", {e, f, h}, true},
                                 Want{".experts.down_proj", {e, h, f}, true}};
      if (l.sharedExperts > 0) {
        wants.push_back(Want{".shared_experts.gate_proj", {sf, h}, false});
        wants.push_back(Want{".shared_experts.up_proj", {sf, h}, false});
        wants.push_back(Want{".shared_experts.down_proj", {h, sf}, false});
      }
      for (const Want &w : wants) {
        std::string name = l.name + w.suffix;
        auto it = llvm::find_if(d.params, [&](const Parameter &p) {
          return p.name == name;
        });
        std::string shape;
        llvm::raw_string_ostream os(shape);
        os << "[";
        llvm::interleaveComma(w.shape, os);
        os << "]";
        if (it == d.params.end())
          missing += (missing.empty() ? "'" : ", '") + name + "' " + shape;
        else if (ArrayRef<int64_t>(it->shape) != ArrayRef<int64_t>(w.shape))
          fail(it->loc, "training MoE layer '" + l.name + "': '" + name +
                            "' should have shape " + shape +
                            " (from experts, hidden, expert_size and "
                            "shared_experts)");
        else
          for (const Sharding &sh : it->shards)
            if (!w.stack || sh.kind != ShardKind::Expert || sh.axis != "ep")
              fail(sh.loc.line ? sh.loc : it->loc,
                   "training MoE layer '" + l.name + "': '" + name + "' " +
                       (w.stack ? "may only be split by experts over ep"
                                : "may not be split") +
                       " (its " + stringify(sh.kind) + " shard on " +
                       sh.axis + " is not supported in training)");
      }
      if (!missing.empty())
        fail(l.loc, "training MoE layer '" + l.name +
                        "' needs the parameters " + missing);
      if (ep && l.tokensPerRank * std::min(l.topK, l.experts / epSize) *
                        epSize > (int64_t(1) << 31))
        fail(l.loc, "training MoE layer '" + l.name +
                        "': the routed-rows bound exceeds 2^31");
    }
  }
  return success(ok);
}
