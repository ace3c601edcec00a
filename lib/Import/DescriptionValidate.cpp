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

std::vector<ErrorList::Reported> ErrorList::grouped() const {
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
  std::vector<Reported> result;
  for (const std::vector<const Entry *> &g : groups) {
    const Entry &first = *g.front();
    if (g.size() <= kNamed) {
      for (const Entry *e : g)
        result.push_back(
            {e->loc, e->message, e->subject.noteLoc, e->subject.note});
      continue;
    }
    std::string text = std::to_string(g.size()) + " " +
                       first.subject.plural.str() + ": " + first.subject.rule +
                       ": ";
    for (size_t i = 0; i < std::min(g.size(), kNamed); ++i)
      text += (i ? ", " : "") + g[i]->subject.name;
    if (g.size() > kNamed)
      text += ", ... (" + std::to_string(g.size() - kNamed) + " more)";
    result.push_back({first.loc, text, Loc(), ""});
  }
  return result;
}

std::vector<std::string> ErrorList::lines() const {
  auto where = [](const Loc &loc) {
    std::string text = loc.file;
    if (loc.line)
      text += ":" + std::to_string(loc.line) + ":" + std::to_string(loc.col);
    return text.empty() ? text : text + ": ";
  };
  std::vector<std::string> result;
  for (const Reported &r : grouped())
    result.push_back(where(r.loc) + r.message +
                     (r.note.empty() ? ""
                                     : "; note: " + where(r.noteLoc) + r.note));
  return result;
}

/// `name` for a message: escaped, and cut after 60 bytes (at a character).
static std::string shown(StringRef name) {
  std::string text = llvm::yaml::escape(name, /*EscapePrintable=*/false);
  if (text.size() <= 64)
    return text;
  size_t cut = 60;
  while (cut > 0 && (static_cast<uint8_t>(text[cut]) & 0xC0) == 0x80)
    --cut;
  return text.substr(0, cut) + "...";
}

/// Whether tensor name `name` can become the file DIR/<name>.npy (and the
/// other files muir-run adds to it): a relative path without empty, '.' or
/// '..' parts, and parts no longer than the file system allows once the
/// longest file suffix and the runtime's temporary names are added. The IR's
/// 'muir.name' verifier has the same first rule. Reports through `report`
/// unless it is null.
static bool
usableAsFileName(StringRef name, const Loc &loc,
                 function_ref<void(const Loc &, const Twine &)> report) {
  if (name.starts_with("/") || name.contains('\0') ||
      llvm::any_of(llvm::split(name, '/'), [](StringRef part) {
        return part.empty() || part == "." || part == "..";
      })) {
    if (report)
      report(loc, "parameter name '" + shown(name) +
                      "' is not usable as a relative file name: no leading "
                      "'/', NUL, or empty, '.' or '..' parts");
    return false;
  }
  SmallVector<StringRef> parts;
  name.split(parts, '/');
  for (auto [i, part] : llvm::enumerate(parts)) {
    bool last = i + 1 == parts.size();
    int64_t max = last ? muir::kMaxNameComponentBytes : muir::kMaxFileNameBytes;
    if (static_cast<int64_t>(part.size()) <= max)
      continue;
    if (!report)
      return false;
    if (!last)
      report(loc, "parameter name '" + shown(name) + "' has a folder part '" +
                      shown(part) + "' of " + Twine(part.size()) +
                      " bytes; a file or folder name may have at most " +
                      Twine(muir::kMaxFileNameBytes) +
                      " bytes (docs/description.md, \"Limits\")");
    else
      report(loc, "parameter name '" + shown(name) + "' " +
                      (parts.size() > 1 ? "ends in a part of " : "is ") +
                      Twine(part.size()) +
                      " bytes, too long for a file name: muir-run writes it "
                      "as '<name>.exp_avg_sq.npy' and others, with "
                      "temporary names beside them, which must fit in the "
                      "file system's " +
                      Twine(muir::kMaxFileNameBytes) +
                      " bytes, so a name (or its last part after '/') may "
                      "have at most " +
                      Twine(muir::kMaxNameComponentBytes) +
                      " bytes (docs/description.md, \"Limits\")");
    return false;
  }
  return true;
}

namespace {
/// The files of a step's tensors (DIR/<tensor>.npy under --load, --dump and
/// a saved state): no two tensors may have the same one, and no tensor's
/// file may be a folder that another one's name needs ('a' is a.npy, and
/// 'a.npy/b' needs a folder a.npy). A clash is reported at the tensor added
/// second, with a note at the first one's place.
class TensorFiles {
public:
  using Report = function_ref<void(const Loc &, const Twine &, const Loc &,
                                   const Twine &)>;
  explicit TensorFiles(Report report) : report(report) {}

  /// Adds run-time hyperparameter `name` (a step argument that is no
  /// tensor and no file, but whose name is a tensor's name space), set by
  /// `who` at `loc` (no line when it is not written).
  void addHyper(const std::string &name, const std::string &who,
                const Loc &loc) {
    hypers.try_emplace(name,
                       Owner{"the run-time hyperparameter '" + name + "'",
                             who, loc});
  }

  /// Adds tensor `tensor`, `what` it is ("the gradient of 'w'"), of `who`
  /// ("parameter 'w'"), whose name is written at `loc`.
  void add(const std::string &tensor, const std::string &what,
           const std::string &who, const Loc &loc) {
    std::string file = tensor + ".npy";
    auto clash = [&](const Owner &other, const Twine &how) {
      // One clash of two parameters (or layers) is one error, however many
      // of their tensors it concerns.
      if (!reported.insert(who + "\n" + other.who).second)
        return;
      report(loc, how + " (under --load, --dump and --save-state); rename "
                        "one of them",
             other.loc, other.who + " is named here");
    };
    if (auto it = hypers.find(tensor); it != hypers.end()) {
      const Owner &hyper = it->second;
      report(loc,
             what + " has the name of " + hyper.what +
                 ", which --lr-schedule and muir.torch set by that name; "
                 "rename the parameter",
             hyper.loc, hyper.loc.line ? hyper.who + " is here" : "");
      return;
    }
    if (auto it = files.find(file); it != files.end())
      return clash(it->second, what + " and " + it->second.what +
                                   " would both be the file '" + file + "'");
    if (auto it = folders.find(file); it != folders.end())
      return clash(it->second, what + " would be the file '" + file +
                                   "', which " + it->second.what +
                                   " needs as a folder");
    SmallVector<StringRef> parents;
    for (size_t slash = tensor.find('/'); slash != std::string::npos;
         slash = tensor.find('/', slash + 1))
      parents.push_back(StringRef(tensor).take_front(slash));
    for (StringRef folder : parents)
      if (auto it = files.find(folder); it != files.end())
        return clash(it->second, what + " needs a folder '" + folder +
                                     "', which is the file of " +
                                     it->second.what);
    Owner owner{what, who, loc};
    files.try_emplace(file, owner);
    for (StringRef folder : parents)
      folders.try_emplace(folder, owner);
  }

private:
  struct Owner {
    std::string what, who;
    Loc loc;
  };
  Report report;
  llvm::StringMap<Owner> files, folders, hypers;
  llvm::StringSet<> reported;
};
} // namespace


namespace {
/// validate()'s checks, one rule family a method, sharing the report and
/// what the earlier ones found: the grid's devices, each parameter's
/// optimizer, the parameters by name and the tensors' files.
class Validator {
public:
  using Report =
      function_ref<void(const Loc &, const Twine &, const Subject &)>;
  Validator(const Description &d, Report report)
      : d(d), report(report),
        noted([this](const Loc &loc, const Twine &msg, const Loc &noteLoc,
                     const Twine &note) {
          failWithNote(loc, msg, noteLoc, note);
        }),
        files(noted) {}

  LogicalResult run() {
    checkGrid();
    checkSchedules();
    assign();
    checkParameters();
    checkOverrideNames();
    checkMoELayers();
    if (d.training.enabled)
      checkTraining();
    checkAttention();
    return success(ok);
  }

private:
  void fail(const Loc &loc, const Twine &msg) {
    ok = false;
    report(loc, msg, Subject{});
  }
  /// A rule broken by a parameter or MoE layer `name`; `rule` says it
  /// without the name, for the grouped report.
  void failFor(const Loc &loc, const Twine &msg, StringRef name,
               const Twine &rule, StringRef plural = "parameters") {
    ok = false;
    report(loc, msg, Subject{name.str(), rule.str(), plural});
  }
  /// An error of its own at `loc`, with a note at the other place it
  /// concerns.
  void failWithNote(const Loc &loc, const Twine &msg, const Loc &noteLoc,
                    const Twine &note) {
    ok = false;
    Subject subject;
    subject.noteLoc = noteLoc;
    subject.note = note.str();
    report(loc, msg, subject);
  }

  void checkGrid();
  void checkSchedules();
  void assign();
  void checkParameters();
  bool checkNameAndSize(const Parameter &p, int64_t &totalElements,
                        bool &totalReported);
  void checkParameterRules(const Parameter &p);
  void checkShards(const Parameter &p);
  void checkOverrideNames();
  void checkMoELayers();
  void checkTraining();
  void checkAttention();

  const Description &d;
  Report report;
  bool ok = true;
  std::function<void(const Loc &, const Twine &, const Loc &, const Twine &)>
      noted;
  TensorFiles files;
  std::optional<int64_t> devices;
  std::vector<Assignment> assignments;
  llvm::StringMap<const Parameter *> names;
};
} // namespace

/// The grid's axes: identifiers whose sizes multiply within bounds, the MoE
/// folding over the same devices.
void Validator::checkGrid() {
  // (A description without any grid was already told so by the reader.)
  if (d.grid.axes.empty() && !d.grid.loc.file.empty())
    fail(d.grid.loc, "the grid needs at least one axis in 'axes', e.g. "
                     "{dp: 8, tp: 2}");
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
  devices = numDevicesChecked(d.grid.axes);
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
}

/// Custom Newton-Schulz schedules have their coefficients, and only they.
void Validator::checkSchedules() {
  const MuonSettings &m = d.muon;
  if (m.schedule == "custom" && (m.coefficients.empty() ||
                                 m.coefficients.size() % 3 != 0))
    fail(d.loc, "schedule 'custom' needs 'coefficients': a non-empty list of "
                "(a, b, c) triples, got " +
                    Twine(m.coefficients.size()) + " values");
  if (d.hasNormuon && d.normuon.schedule == "custom" &&
      (d.normuon.coefficients.empty() ||
       d.normuon.coefficients.size() % 3 != 0))
    fail(d.normuonLoc,
         "optimizer.normuon: schedule 'custom' needs 'coefficients': a "
         "non-empty list of (a, b, c) triples, got " +
             Twine(d.normuon.coefficients.size()) + " values");
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

}

/// The optimizer of each parameter, and the run-time hyperparameters
/// ("muon.lr", "overrides.0.weight_decay") the step will have.
void Validator::assign() {
  assignments.reserve(d.params.size());
  for (const Parameter &p : d.params) {
    assignments.push_back(assignOptimizer(d, p));
    const Assignment &a = assignments.back();
    for (const HyperArgument &h : hyperArguments(a)) {
      StringRef group = StringRef(h.name).rsplit('.').first;
      StringRef k = group;
      size_t index = 0;
      bool isOverride = k.consume_front("overrides.") &&
                        !k.getAsInteger(10, index) &&
                        index < d.overrides.size();
      files.addHyper(h.name,
                     isOverride ? "override " + std::to_string(index)
                                : ("optimizer." + group).str(),
                     isOverride ? d.overrides[index].loc : Loc());
    }
    // optimizer.mask's flags and AdamW's own counts.
    if (d.mask && !p.name.empty()) {
      files.addHyper(p.name + ".take", "optimizer.mask", Loc());
      if (optimizerInfo(a.optimizer).stepCount)
        files.addHyper(p.name + ".step", "optimizer.mask", Loc());
    }
  }
}

void Validator::checkParameters() {
  int64_t totalElements = 0;
  bool totalReported = false;
  for (const Parameter &p : d.params) {
    if (!checkNameAndSize(p, totalElements, totalReported))
      continue;
    checkParameterRules(p);
    checkShards(p);
  }
}

/// A parameter's name (a usable file name, given once; its tensors' files)
/// and element count; false when its other checks cannot run.
bool Validator::checkNameAndSize(const Parameter &p, int64_t &totalElements,
                                 bool &totalReported) {
  if (p.name.empty())
    return false;
  const Loc &nameLoc = p.nameLoc.line ? p.nameLoc : p.loc;
  bool usable = usableAsFileName(
      p.name, nameLoc,
      [this](const Loc &loc, const Twine &msg) { fail(loc, msg); });
  if (p.shape.empty())
    return false;
  int64_t count = 1;
  bool overflow = false;
  for (int64_t dim : p.shape)
    overflow |= llvm::MulOverflow(count, dim, count);
  if (overflow || count > muir::kMaxTensorElements) {
    fail(p.loc, "parameter '" + p.name + "' has more than 2^40 elements " +
                    "(the most one tensor may have; docs/description.md, "
                    "\"Limits\")");
    return false;
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
  if (!inserted) {
    const Parameter &first = *it->second;
    failWithNote(p.loc,
                 "duplicate parameter name '" + p.name + "'",
                 first.nameLoc.line ? first.nameLoc : first.loc,
                 "'" + p.name + "' first named here");
  } else if (usable) {
    // Its tensors' files: the parameter, its gradient and its state.
    const Assignment &a = assignments[&p - d.params.data()];
    std::string who = "parameter '" + p.name + "'";
    auto add = [&](StringRef suffix, StringRef what) {
      files.add(p.name + suffix.str(),
                what.empty() ? who : (what + " of '" + p.name + "'").str(),
                who, nameLoc);
    };
    add("", "");
    add(".grad", "the gradient");
    for (const OptimizerState &s : optimizerInfo(a.optimizer).state)
      add(s.suffix, s.what);
  }
  return true;
}

/// A parameter's dtype, role and split_rows against its optimizer, grid
/// and layer.
void Validator::checkParameterRules(const Parameter &p) {
  if (p.role == Role::Expert && p.shape.size() != 3)
    fail(p.loc, "expert parameter '" + p.name +
                    "' must be a stack [E, m, n], got rank " +
                    Twine(p.shape.size()));
  if (p.dtype == "f64") {
    // f64 is for references: the collectives and the MoE layers'
    // kernels are f32.
    if (devices && *devices > 1)
      failFor(p.loc,
              "parameter '" + p.name + "' is f64, which runs on a grid of "
              "one device (this grid has " + Twine(*devices) + ")",
              p.name,
              "f64 runs on a grid of one device (this grid has " +
                  Twine(*devices) + ")");
    if (d.training.enabled)
      for (const MoELayer &l : d.moe)
        for (const char *suffix :
             {".router", ".experts.gate_proj", ".experts.up_proj",
              ".experts.down_proj", ".shared_experts.gate_proj",
              ".shared_experts.up_proj", ".shared_experts.down_proj"})
          if (p.name == l.name + suffix)
            fail(p.loc, "parameter '" + p.name + "' of trained MoE layer '" +
                            l.name + "' is f64; a layer's weights are "
                                     "f32");
  }
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
}

/// Each shard names an axis of the parameter's grid once and divides its
/// dimension.
void Validator::checkShards(const Parameter &p) {
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

void Validator::checkOverrideNames() {
  // An override's `names` are parameters (a misspelt one would silently
  // leave its parameter on the global settings).
  for (const Override &o : d.overrides)
    for (const std::string &n : o.names)
      if (!names.count(n))
        fail(o.loc, "an override names '" + n + "', which is no parameter");
}

void Validator::checkMoELayers() {
  for (const MoELayer &l : d.moe) {
    if (l.tokens > 0 && l.tokensPerRankGiven)
      fail(l.loc, "MoE layer '" + l.name + "' gives both tokens (" +
                      Twine(l.tokens) + ", over every rank) and "
                      "tokens_per_rank (" + Twine(l.tokensPerRank) +
                      "); give one");
    else if (l.tokens > 0 && l.tokens % d.grid.numDevices() != 0)
      fail(l.loc, "MoE layer '" + l.name + "': tokens (" + Twine(l.tokens) +
                      ") are not divisible by the grid's " +
                      Twine(d.grid.numDevices()) +
                      " devices, which each take the same number");
    if (l.capacityTokens > 0) {
      int64_t devices = std::max<int64_t>(1, d.grid.numDevices());
      int64_t mine = l.tokens > 0 ? l.tokens / devices : l.tokensPerRank;
      // A factor given out of range has its own error already.
      if (l.capacityFactor <= 0 && !l.capacityFactorGiven)
        fail(l.capacityTokensLoc,
             "MoE layer '" + l.name + "': capacity_tokens (" +
                 Twine(l.capacityTokens) +
                 ") sets the blocks capacity_factor counts over, and the "
                 "layer has no capacity_factor (it drops nothing)");
      else if (l.capacityFactor > 0 && mine % l.capacityTokens != 0)
        fail(l.capacityTokensLoc,
             "MoE layer '" + l.name + "': capacity_tokens (" +
                 Twine(l.capacityTokens) + ") does not divide a rank's " +
                 Twine(mine) + " tokens" +
                 (l.tokens > 0 ? " (tokens " + Twine(l.tokens) + " over " +
                                     Twine(devices) + " devices)"
                               : Twine(" (tokens_per_rank)")) +
                 "; the capacity counts over whole blocks on one rank");
    }
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
}

/// Training: every MoE layer's router and SwiGLU expert stacks (and shared
/// experts) exist with the layer's shapes, and its routing is complete.
void Validator::checkTraining() {
// Training: every MoE layer's router and SwiGLU expert stacks (and shared
// experts) exist with the layer's shapes, and its routing is complete.
  const GridAxis *ep = d.grid.find("ep", true);
  int64_t epSize = ep ? ep->size : 1;
  if (d.moe.empty())
    fail(d.training.loc, "training needs at least one entry under 'moe'");
  llvm::StringSet<> layerNames;
  for (const MoELayer &l : d.moe) {
    if (!layerNames.insert(l.name).second)
      fail(l.loc, "training: two MoE layers are named '" + l.name + "'");
    // The layer's data and teacher tensors are files too.
    else if (usableAsFileName(l.name + ".data.tokens", Loc(), nullptr)) {
      const Loc &at = l.nameLoc.line ? l.nameLoc : l.loc;
      std::string who = "MoE layer '" + l.name + "'";
      files.add(l.name + ".data.tokens", "the training tokens of " + who,
                who, at);
      for (StringRef t : {"router", "gate_proj", "up_proj", "down_proj"})
        files.add((l.name + ".teacher." + t).str(),
                  ("the teacher's " + t + " of " + who).str(), who, at);
    }
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
    // The bias is the caller's state (updated between steps from the
    // tokens per expert); the synthetic training step has no caller.
    if (l.selectionBias)
      fail(l.selectionBiasLoc,
           "training MoE layer '" + l.name +
               "': selection_bias is an input of a layer a model calls "
               "(muir.torch.MoE's e_score_correction_bias, the step "
               "library's layer=NAME), which holds and updates the bias; a "
               "training step has no caller to pass it");
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
          if (!w.stack || sh.kind != muir::ShardKind::expert || sh.axis != "ep")
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

/// MuonClip's attention blocks (`attention:`, optimizer.muon.qk_clip): each
/// names two f32 matrices whose rows are whole heads, split over the same
/// axes so that every rank clips its own heads; "<name>.max_logits" is a
/// tensor file of its own.
void Validator::checkAttention() {
  if (!d.attention.empty() && d.muon.qkClip <= 0)
    fail(d.attentionLoc,
         "'attention' lists the blocks MuonClip's QK-clip scales; set its "
         "threshold optimizer.muon.qk_clip (tau, e.g. 100)");
  if (d.attention.empty() && d.muon.qkClip > 0)
    fail(d.muon.qkClipLoc,
         "optimizer.muon.qk_clip needs the attention blocks it clips: an "
         "'attention' list of {name, q, k, heads, kv_heads}");
  llvm::StringMap<std::string> blockOf; // parameter -> its block
  llvm::StringSet<> blockNames;
  for (const AttentionBlock &a : d.attention) {
    if (a.name.empty() || a.heads < 1 || a.q.empty() || a.k.empty())
      continue; // the reader said what is missing
    std::string who = "attention block '" + a.name + "'";
    if (!blockNames.insert(a.name).second)
      fail(a.loc, "two attention blocks are named '" + a.name + "'");
    else if (!usableAsFileName(a.name, a.loc, nullptr))
      fail(a.loc, who + ": its name is not usable as a relative file name "
                        "(of its max_logits): no leading '/', NUL, or "
                        "empty, '.' or '..' parts");
    else
      files.add(a.name + ".max_logits", "the max_logits of " + who, who,
                a.loc);
    int64_t kv = a.kvHeadCount();
    if (a.heads % kv != 0)
      fail(a.loc, who + ": heads (" + Twine(a.heads) +
                      ") is not a multiple of kv_heads (" + Twine(kv) + ")");
    if (a.q == a.k) {
      fail(a.kLoc, who + ": q and k are the same parameter '" + a.q + "'");
      continue;
    }
    // The row splits of q and k, in order: their axes' names and product.
    std::vector<std::string> splits[2];
    int64_t ways[2] = {1, 1};
    bool usable[2] = {false, false};
    for (int i = 0; i < 2; ++i) {
      const std::string &name = i == 0 ? a.q : a.k;
      const Loc &at = i == 0 ? a.qLoc : a.kLoc;
      StringRef role = i == 0 ? "q" : "k";
      int64_t heads = i == 0 ? a.heads : kv;
      auto it = names.find(name);
      if (it == names.end()) {
        fail(at, who + ": " + role + " names '" + name +
                     "', which is no parameter");
        continue;
      }
      const Parameter &p = *it->second;
      if (auto [prev, added] = blockOf.try_emplace(name, a.name); !added) {
        fail(at, who + ": parameter '" + name +
                     "' is clipped by attention block '" + prev->second +
                     "' already");
        continue;
      }
      if (p.shape.size() != 2) {
        fail(at, who + ": " + role + " '" + name +
                     "' must be a matrix (2-D: heads x head size rows)");
        continue;
      }
      if (p.dtype != "f32" && p.dtype != "f64") {
        fail(at, who + ": " + role + " '" + name + "' is " + p.dtype +
                     "; QK-clip takes f32 or f64 parameters");
        continue;
      }
      if (p.moeFolding) {
        fail(at, who + ": " + role + " '" + name +
                     "' is in the MoE folding; QK-clip takes attention "
                     "parameters of the main grid");
        continue;
      }
      if (p.shape[0] % heads != 0) {
        fail(at, who + ": " + role + " '" + name + "' has " +
                     Twine(p.shape[0]) + " rows, not divisible by " +
                     (i == 0 ? "heads (" : "kv_heads (") + Twine(heads) +
                     ")");
        continue;
      }
      usable[i] = true;
      for (const Sharding &s : p.shards)
        if (s.dim == 0) {
          splits[i].push_back(s.axis);
          if (const GridAxis *axis = d.grid.find(s.axis))
            ways[i] *= axis->size;
        }
    }
    if (!usable[0] || !usable[1])
      continue;
    auto text = [](ArrayRef<std::string> axes) {
      return axes.empty() ? std::string("none") : llvm::join(axes, ", ");
    };
    if (splits[0] != splits[1])
      fail(a.loc, who + ": q and k must split their rows over the same axes "
                        "so that each rank clips its own heads (q: " +
                        text(splits[0]) + "; k: " + text(splits[1]) + ")");
    else if (a.heads % ways[0] != 0 || kv % ways[0] != 0)
      fail(a.loc, who + ": q and k's rows are split " + Twine(ways[0]) +
                      " ways (over " + text(splits[0]) +
                      "), which needs heads (" +
                      Twine(a.heads) + ") and kv_heads (" + Twine(kv) +
                      ") divisible by " + Twine(ways[0]));
  }
}

LogicalResult mlir::muir::desc::validate(
    const Description &d,
    function_ref<void(const Loc &, const Twine &, const Subject &)> report) {
  return Validator(d, report).run();
}
