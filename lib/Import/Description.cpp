//===- Description.cpp - reading training-step descriptions ---------------===//
//
// YAML (and JSON, which LLVM's YAML parser reads as flow YAML) descriptions
// are walked at node level so that every error carries its line and column
// and one run reports all independent errors. docs/description.md is the
// reference for the keys read here.
//
//===----------------------------------------------------------------------===//
#include "muir/Import/Description.h"
#include "muir/Support/Limits.h"

#include "llvm/ADT/SmallSet.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/GlobPattern.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/YAMLParser.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
using namespace mlir::muir::desc;
namespace yaml = llvm::yaml;

static constexpr double kInf = std::numeric_limits<double>::infinity();

const GridAxis *Grid::find(StringRef name, bool moe) const {
  const std::vector<GridAxis> &list = moe && !moeAxes.empty() ? moeAxes : axes;
  for (const GridAxis &a : list)
    if (a.name == name)
      return &a;
  return nullptr;
}

StringRef mlir::muir::desc::stringify(Role role) {
  switch (role) {
  case Role::Attention:
    return "attention";
  case Role::Mlp:
    return "mlp";
  case Role::Expert:
    return "expert";
  case Role::Router:
    return "router";
  case Role::Embedding:
    return "embedding";
  case Role::Head:
    return "head";
  case Role::Norm:
    return "norm";
  case Role::Bias:
    return "bias";
  case Role::Other:
    return "other";
  }
  return "other";
}

StringRef mlir::muir::desc::stringify(ShardKind kind) {
  switch (kind) {
  case ShardKind::TPColumn:
    return "tp_column";
  case ShardKind::TPRow:
    return "tp_row";
  case ShardKind::FSDP:
    return "fsdp";
  case ShardKind::Expert:
    return "expert";
  }
  return "tp_column";
}

static std::string number(double v);

namespace {

/// Walks the YAML tree, converting values and collecting errors.
class Reader {
public:
  Reader(llvm::SourceMgr &sm, unsigned bufferId) : sm(sm), bufferId(bufferId) {
    file = sm.getMemoryBuffer(bufferId)->getBufferIdentifier().str();
  }

  FailureOr<Description> read();

private:
  /// Where `n` starts; none when the YAML parser gave it a position outside
  /// the buffer, as it does for some malformed flow collections ("{\n{\n%").
  llvm::SMLoc startOf(yaml::Node *n) {
    if (!n)
      return {};
    llvm::SMLoc at = n->getSourceRange().Start;
    StringRef buffer = sm.getMemoryBuffer(bufferId)->getBuffer();
    const char *p = at.getPointer();
    return p && p >= buffer.begin() && p <= buffer.end() ? at : llvm::SMLoc();
  }
  Loc locOf(yaml::Node *n) {
    Loc l;
    l.file = file;
    if (llvm::SMLoc at = startOf(n); at.isValid()) {
      auto [line, col] = sm.getLineAndColumn(at, bufferId);
      l.line = line;
      l.col = col;
    }
    return l;
  }
  void error(yaml::Node *n, const Twine &msg) {
    ++numErrors;
    sm.PrintMessage(startOf(n), llvm::SourceMgr::DK_Error, msg);
  }

  /// Calls `fn(key, value)` for each entry of a mapping; rejects keys not in
  /// `known`, suggesting the closest one.
  void forEachKey(yaml::Node *n, StringRef what, ArrayRef<StringRef> known,
                  function_ref<void(StringRef, yaml::Node *)> fn);
  std::optional<std::string> str(yaml::Node *n, StringRef key);
  std::optional<int64_t> integer(yaml::Node *n, StringRef key,
                                 int64_t min = 1,
                                 int64_t max = muir::kMaxDim);
  std::optional<double> real(yaml::Node *n, StringRef key);
  std::optional<double> ranged(yaml::Node *n, StringRef key, double lo,
                               bool loInclusive, double hi, bool hiInclusive);
  std::optional<bool> boolean(yaml::Node *n, StringRef key);
  std::optional<std::string> oneOf(yaml::Node *n, StringRef key,
                                   ArrayRef<StringRef> choices);
  template <typename F> void forEachItem(yaml::Node *n, StringRef key, F fn);

  void readGridAxes(yaml::Node *n, StringRef key, std::vector<GridAxis> &out);
  void readGrid(yaml::Node *n, Description &d);
  void readMuon(yaml::Node *n, MuonSettings &m);
  void readAdamW(yaml::Node *n, AdamWSettings &a);
  void readOverride(yaml::Node *n, Description &d);
  void readOptimizer(yaml::Node *n, Description &d);
  void readShard(yaml::Node *n, Parameter &p);
  void readParameter(yaml::Node *n, Description &d);
  void readMoE(yaml::Node *n, Description &d);

  llvm::SourceMgr &sm;
  unsigned bufferId;
  std::string file;
  int numErrors = 0;
  std::optional<int64_t> devices;
  yaml::Node *devicesNode = nullptr;
  bool badAxis = false; ///< an axis size was rejected: skip product checks
};

std::string closest(StringRef key, ArrayRef<StringRef> known) {
  StringRef best;
  unsigned bestDist = ~0u;
  for (StringRef k : known) {
    unsigned d = key.edit_distance(k, /*AllowReplacements=*/true);
    if (d < bestDist) {
      bestDist = d;
      best = k;
    }
  }
  return bestDist <= std::max<size_t>(2, key.size() / 3) ? best.str() : "";
}

void Reader::forEachKey(yaml::Node *n, StringRef what,
                        ArrayRef<StringRef> known,
                        function_ref<void(StringRef, yaml::Node *)> fn) {
  auto *map = dyn_cast_or_null<yaml::MappingNode>(n);
  if (!map) {
    error(n, "expected a mapping for " + what);
    return;
  }
  llvm::StringSet<> seen;
  for (yaml::KeyValueNode &kv : *map) {
    auto *keyNode = dyn_cast_or_null<yaml::ScalarNode>(kv.getKey());
    if (!keyNode) {
      error(kv.getKey(), "expected a plain key in " + what);
      continue;
    }
    SmallString<32> storage;
    StringRef key = keyNode->getValue(storage);
    if (!llvm::is_contained(known, key)) {
      std::string hint = closest(key, known);
      std::string list = llvm::join(known, ", ");
      error(keyNode, "unknown key '" + key + "' in " + what +
                         (hint.empty() ? "" : "; did you mean '" + hint + "'?") +
                         " (expected one of: " + list + ")");
      continue;
    }
    if (!seen.insert(key).second) {
      error(keyNode, "key '" + key + "' appears twice in " + what);
      continue;
    }
    yaml::Node *value = kv.getValue();
    if (!value || isa<yaml::NullNode>(value)) {
      error(keyNode, "key '" + key + "' in " + what + " has no value");
      continue;
    }
    fn(key, value);
  }
}

std::optional<std::string> Reader::str(yaml::Node *n, StringRef key) {
  auto *s = dyn_cast_or_null<yaml::ScalarNode>(n);
  // YAML's null (~, null, or nothing at all) is no string; quoted, it is.
  StringRef raw = s ? s->getRawValue() : StringRef();
  if (!s || raw == "~" || raw == "null" || raw == "Null" || raw == "NULL") {
    error(n, "expected a string for '" + key + "'" +
                 (s || isa_and_nonnull<yaml::NullNode>(n) ? ", got null"
                                                          : ""));
    return std::nullopt;
  }
  SmallString<32> storage;
  return s->getValue(storage).str();
}

std::optional<int64_t> Reader::integer(yaml::Node *n, StringRef key,
                                       int64_t min, int64_t max) {
  auto *s = dyn_cast_or_null<yaml::ScalarNode>(n);
  SmallString<32> storage;
  int64_t v;
  if (!s || s->getValue(storage).getAsInteger(10, v)) {
    error(n, "expected an integer for '" + key + "'" +
                 (s ? ", got '" + s->getValue(storage) + "'" : Twine("")));
    return std::nullopt;
  }
  if (v < min) {
    error(n, "expected '" + key + "' to be at least " + Twine(min) + ", got " +
                 Twine(v));
    return std::nullopt;
  }
  if (v > max) {
    error(n, "expected '" + key + "' to be at most " + Twine(max) + ", got " +
                 Twine(v) + " (docs/description.md, \"Limits\")");
    return std::nullopt;
  }
  return v;
}

std::optional<double> Reader::ranged(yaml::Node *n, StringRef key, double lo,
                                     bool loInclusive, double hi,
                                     bool hiInclusive) {
  std::optional<double> v = real(n, key);
  if (!v)
    return v;
  bool ok = (loInclusive ? *v >= lo : *v > lo) &&
            (hiInclusive ? *v <= hi : *v < hi);
  if (!ok) {
    std::string range = (loInclusive ? "[" : "(") + number(lo) + ", " +
                        (std::isinf(hi) ? std::string("inf)")
                                        : number(hi) + (hiInclusive ? "]" : ")"));
    error(n, "expected '" + key + "' in " + range + ", got " + number(*v));
    return std::nullopt;
  }
  return v;
}

std::optional<double> Reader::real(yaml::Node *n, StringRef key) {
  auto *s = dyn_cast_or_null<yaml::ScalarNode>(n);
  SmallString<32> storage;
  double v;
  if (!s || s->getValue(storage).getAsDouble(v) || !std::isfinite(v)) {
    error(n, "expected a number for '" + key + "'" +
                 (s ? ", got '" + s->getValue(storage) + "'" : Twine("")));
    return std::nullopt;
  }
  return v;
}

std::optional<bool> Reader::boolean(yaml::Node *n, StringRef key) {
  auto *s = dyn_cast_or_null<yaml::ScalarNode>(n);
  SmallString<8> storage;
  StringRef v = s ? s->getValue(storage) : "";
  if (v == "true")
    return true;
  if (v == "false")
    return false;
  error(n, "expected true or false for '" + key + "'" +
               (s ? ", got '" + v + "'" : Twine("")));
  return std::nullopt;
}

std::optional<std::string> Reader::oneOf(yaml::Node *n, StringRef key,
                                         ArrayRef<StringRef> choices) {
  std::optional<std::string> v = str(n, key);
  if (!v)
    return std::nullopt;
  if (!llvm::is_contained(choices, *v)) {
    std::string hint = closest(*v, choices);
    error(n, "unknown value '" + *v + "' for '" + key + "'" +
                 (hint.empty() ? "" : "; did you mean '" + hint + "'?") +
                 " (expected one of: " + llvm::join(choices, ", ") + ")");
    return std::nullopt;
  }
  return v;
}

template <typename F>
void Reader::forEachItem(yaml::Node *n, StringRef key, F fn) {
  auto *seq = dyn_cast_or_null<yaml::SequenceNode>(n);
  if (!seq) {
    error(n, "expected a list for '" + key + "'");
    return;
  }
  for (yaml::Node &item : *seq)
    fn(&item);
}

void Reader::readGridAxes(yaml::Node *n, StringRef key,
                          std::vector<GridAxis> &out) {
  auto *map = dyn_cast_or_null<yaml::MappingNode>(n);
  if (!map) {
    error(n, "expected a mapping of axis names to sizes for '" + key +
                 "', e.g. {dp: 8, tp: 2}");
    return;
  }
  llvm::StringSet<> seen;
  for (yaml::KeyValueNode &kv : *map) {
    auto *k = dyn_cast_or_null<yaml::ScalarNode>(kv.getKey());
    if (!k) {
      error(kv.getKey(), "expected an axis name");
      continue;
    }
    SmallString<16> storage;
    GridAxis axis;
    axis.name = k->getValue(storage).str();
    axis.loc = locOf(k);
    if (!seen.insert(axis.name).second) {
      error(k, "axis '" + axis.name + "' appears twice in '" + key + "'");
      continue;
    }
    // A bad size is reported here; the axis stays (size 1), so that the
    // grid is not also reported as having no axes.
    if (auto size = integer(kv.getValue(), axis.name, 1, muir::kMaxDevices))
      axis.size = *size;
    else
      badAxis = true;
    out.push_back(axis);
  }
}

void Reader::readGrid(yaml::Node *n, Description &d) {
  d.grid.loc = locOf(n);
  forEachKey(n, "'grid'", {"axes", "moe_axes", "devices"},
             [&](StringRef key, yaml::Node *v) {
               if (key == "axes")
                 readGridAxes(v, key, d.grid.axes);
               else if (key == "moe_axes")
                 readGridAxes(v, key, d.grid.moeAxes);
               else {
                 devices = integer(v, key);
                 devicesNode = v;
               }
             });
}

void Reader::readMuon(yaml::Node *n, MuonSettings &m) {
  forEachKey(
      n, "'optimizer.muon'",
      {"lr", "momentum", "nesterov", "momentum_kind", "weight_decay",
       "scale_mode", "scale_extra", "ns_steps", "schedule", "coefficients",
       "eps", "split_fused"},
      [&](StringRef key, yaml::Node *v) {
        if (key == "lr") {
          if (auto x = ranged(v, key, 0, true, kInf, false))
            m.lr = *x;
        } else if (key == "momentum") {
          if (auto x = ranged(v, key, 0, true, 1, false))
            m.beta = *x;
        } else if (key == "nesterov") {
          if (auto x = boolean(v, key))
            m.nesterov = *x;
        } else if (key == "momentum_kind") {
          if (auto x = oneOf(v, key, {"ema", "accumulate"}))
            m.momentumKind = *x;
        } else if (key == "weight_decay") {
          if (auto x = ranged(v, key, 0, true, kInf, false))
            m.weightDecay = *x;
        } else if (key == "scale_mode") {
          if (auto x = oneOf(v, key, {"spectral", "shape", "unit_rms"}))
            m.scaleMode = *x;
        } else if (key == "scale_extra") {
          if (auto x = ranged(v, key, 0, false, kInf, false))
            m.scaleExtra = *x;
        } else if (key == "ns_steps") {
          if (auto x = integer(v, key))
            m.nsSteps = *x;
        } else if (key == "schedule") {
          if (auto x = oneOf(v, key,
                             {"simple", "quintic", "polar_express", "custom"}))
            m.schedule = *x;
        } else if (key == "coefficients") {
          forEachItem(v, key, [&](yaml::Node *item) {
            if (auto x = real(item, key))
              m.coefficients.push_back(*x);
          });
        } else if (key == "eps") {
          if (auto x = ranged(v, key, 0, false, kInf, false))
            m.eps = *x;
        } else if (key == "split_fused") {
          if (auto x = boolean(v, key))
            m.splitFused = *x;
        }
      });
}

void Reader::readAdamW(yaml::Node *n, AdamWSettings &a) {
  forEachKey(n, "'optimizer.adamw'",
             {"lr", "beta1", "beta2", "eps", "weight_decay"},
             [&](StringRef key, yaml::Node *v) {
               bool beta = key == "beta1" || key == "beta2";
               std::optional<double> x =
                   beta ? ranged(v, key, 0, true, 1, false)
                        : ranged(v, key, 0, key != "eps", kInf, false);
               if (!x)
                 return;
               if (key == "lr")
                 a.lr = *x;
               else if (key == "beta1")
                 a.beta1 = *x;
               else if (key == "beta2")
                 a.beta2 = *x;
               else if (key == "eps")
                 a.eps = *x;
               else
                 a.weightDecay = *x;
             });
}

void Reader::readOverride(yaml::Node *n, Description &d) {
  Override o;
  o.loc = locOf(n);
  bool hasPattern = false;
  forEachKey(n, "an override",
             {"match", "regex", "optimizer", "lr", "weight_decay",
              "ns_steps", "schedule"},
             [&](StringRef key, yaml::Node *v) {
               if (key == "match" || key == "regex") {
                 if (hasPattern) {
                   error(v, "an override takes one of 'match' and 'regex'");
                   return;
                 }
                 if (auto x = str(v, key)) {
                   o.pattern = *x;
                   o.isRegex = key == "regex";
                   hasPattern = true;
                   std::string why;
                   if (o.isRegex && !llvm::Regex(o.pattern).isValid(why))
                     error(v, "invalid regex '" + o.pattern + "': " + why);
                   if (!o.isRegex) {
                     auto glob = llvm::GlobPattern::create(o.pattern, /*MaxSubPatterns=*/1024);
                     if (!glob) {
                       error(v, "invalid glob '" + o.pattern + "': " +
                                    llvm::toString(glob.takeError()));
                     }
                   }
                 }
               } else if (key == "optimizer") {
                 if (auto x = oneOf(v, key, {"muon", "adamw"}))
                   o.optimizer = *x == "muon" ? Optimizer::Muon
                                              : Optimizer::AdamW;
               } else if (key == "lr") {
                 o.lr = ranged(v, key, 0, true, kInf, false);
               } else if (key == "weight_decay") {
                 o.weightDecay = ranged(v, key, 0, true, kInf, false);
               } else if (key == "ns_steps") {
                 o.nsSteps = integer(v, key);
               } else if (key == "schedule") {
                 o.schedule = oneOf(
                     v, key, {"simple", "quintic", "polar_express", "custom"});
               }
             });
  if (!hasPattern && isa_and_nonnull<yaml::MappingNode>(n))
    error(n, "an override needs 'match' (a glob) or 'regex'");
  d.overrides.push_back(o);
}

void Reader::readOptimizer(yaml::Node *n, Description &d) {
  forEachKey(n, "'optimizer'", {"muon", "adamw", "overrides"},
             [&](StringRef key, yaml::Node *v) {
               if (key == "muon")
                 readMuon(v, d.muon);
               else if (key == "adamw")
                 readAdamW(v, d.adamw);
               else
                 forEachItem(v, key,
                             [&](yaml::Node *item) { readOverride(item, d); });
             });
}

void Reader::readShard(yaml::Node *n, Parameter &p) {
  Sharding s;
  s.loc = locOf(n);
  bool hasKind = false, hasAxis = false, keyGiven = false;
  forEachKey(n, "a shard", {"kind", "axis"}, [&](StringRef key, yaml::Node *v) {
    if (key == "kind") {
      keyGiven = true;
      if (auto k = oneOf(v, key, {"tp_column", "tp_row", "fsdp", "expert"})) {
        hasKind = true;
        s.kind = *k == "tp_column" ? ShardKind::TPColumn
                 : *k == "tp_row"  ? ShardKind::TPRow
                 : *k == "fsdp"    ? ShardKind::FSDP
                                   : ShardKind::Expert;
      }
    } else if (auto a = str(v, key)) {
      s.axis = *a;
      hasAxis = true;
    }
  });
  if (!isa_and_nonnull<yaml::MappingNode>(n))
    return;
  if ((!hasKind && !keyGiven) || !hasAxis) {
    error(n, "a shard needs 'kind' (tp_column, tp_row, fsdp, expert) and "
             "'axis'");
    return;
  }
  if (!hasKind)
    return; // its kind was already reported
  p.shards.push_back(s);
}

void Reader::readParameter(yaml::Node *n, Description &d) {
  Parameter p;
  p.loc = locOf(n);
  bool hasName = false, nameGiven = false, hasShape = false,
       badShape = false;
  forEachKey(
      n, "a parameter",
      {"name", "shape", "dtype", "role", "shard", "split_rows", "moe",
       "ns_mode"},
      [&](StringRef key, yaml::Node *v) {
        if (key == "name") {
          nameGiven = true;
          if (auto x = str(v, key)) {
            p.name = *x;
            hasName = !p.name.empty();
            if (!hasName)
              error(v, "expected a non-empty parameter name");
          }
        } else if (key == "shape") {
          // Present but malformed is reported per element, not as missing.
          hasShape = true;
          forEachItem(v, key, [&](yaml::Node *item) {
            if (auto x = integer(item, "shape"))
              p.shape.push_back(*x);
            else
              badShape = true;
          });
        } else if (key == "dtype") {
          if (auto x = oneOf(v, key, {"f32", "bf16", "f16"}))
            p.dtype = *x;
        } else if (key == "role") {
          if (auto x = oneOf(v, key,
                             {"attention", "mlp", "expert", "router",
                              "embedding", "head", "norm", "bias", "other"})) {
            static const std::pair<StringRef, Role> roles[] = {
                {"attention", Role::Attention}, {"mlp", Role::Mlp},
                {"expert", Role::Expert},       {"router", Role::Router},
                {"embedding", Role::Embedding}, {"head", Role::Head},
                {"norm", Role::Norm},           {"bias", Role::Bias},
                {"other", Role::Other}};
            for (auto &[name, role] : roles)
              if (name == *x)
                p.role = role;
          }
        } else if (key == "shard") {
          if (isa<yaml::SequenceNode>(v))
            forEachItem(v, key, [&](yaml::Node *item) { readShard(item, p); });
          else
            readShard(v, p);
        } else if (key == "split_rows") {
          forEachItem(v, key, [&](yaml::Node *item) {
            if (auto x = integer(item, key))
              p.splitRows.push_back(*x);
          });
        } else if (key == "moe") {
          if (auto x = boolean(v, key))
            p.moeFolding = *x;
        } else if (key == "ns_mode") {
          if (auto x = oneOf(v, key, {"auto", "duplicated", "distributed",
                                      "resharded", "blockwise"}))
            p.nsMode = *x;
        }
      });
  if (!isa_and_nonnull<yaml::MappingNode>(n))
    return;
  if (!nameGiven)
    error(n, "a parameter needs a 'name'");
  if (!hasShape || (p.shape.empty() && !badShape))
    error(n, "a parameter needs a 'shape' (a list of positive sizes)");
  if (badShape)
    p.shape.clear(); // keeps later checks off a half-read shape
  if (p.role == Role::Expert)
    p.moeFolding = true;
  // Which dimension a kind splits follows from the shape: [out, in] or
  // [E, out, in].
  int64_t rank = p.shape.size();
  for (Sharding &s : p.shards)
    s.dim = s.kind == ShardKind::TPColumn ? (rank == 3 ? 1 : 0)
            : s.kind == ShardKind::TPRow  ? rank - 1
                                          : 0;
  d.params.push_back(std::move(p));
}

void Reader::readMoE(yaml::Node *n, Description &d) {
  MoELayer m;
  m.loc = locOf(n);
  forEachKey(n, "an MoE layer",
             {"name", "experts", "top_k", "shared_experts", "scoring",
              "groups", "groups_per_token", "hidden", "expert_size",
              "tokens_per_rank", "routed_scaling", "capacity_factor",
              "drop_policy"},
             [&](StringRef key, yaml::Node *v) {
               if (key == "name") {
                 if (auto x = str(v, key))
                   m.name = *x;
               } else if (key == "capacity_factor") {
                 // A factor <= 0 would drop every token.
                 if (auto x = ranged(v, key, 0.0, false, 1e9, true))
                   m.capacityFactor = *x;
               } else if (key == "drop_policy") {
                 if (auto x = oneOf(v, key, {"weight", "position"}))
                   m.dropPolicy = *x;
               } else if (key == "scoring") {
                 if (auto x = oneOf(v, key, {"softmax", "sigmoid"}))
                   m.scoring = *x;
               } else if (key == "routed_scaling") {
                 if (auto x = real(v, key))
                   m.routedScaling = *x;
               } else {
                 int64_t min = key == "shared_experts" ? 0 : 1;
                 int64_t max = key == "experts" || key == "groups"
                                   ? muir::kMaxDevices
                                   : muir::kMaxDim;
                 std::optional<int64_t> x = integer(v, key, min, max);
                 if (!x)
                   return;
                 if (key == "experts")
                   m.experts = *x;
                 else if (key == "top_k")
                   m.topK = *x;
                 else if (key == "shared_experts")
                   m.sharedExperts = *x;
                 else if (key == "groups")
                   m.groups = *x;
                 else if (key == "groups_per_token")
                   m.groupsPerToken = *x;
                 else if (key == "hidden")
                   m.hidden = *x;
                 else if (key == "expert_size")
                   m.expertSize = *x;
                 else
                   m.tokensPerRank = *x;
               }
             });
  d.moe.push_back(m);
}

/// The number of devices of a folding (the product of its axes' sizes), or
/// nullopt when it is more than kMaxDevices.
static std::optional<int64_t> numDevicesChecked(ArrayRef<GridAxis> axes) {
  int64_t n = 1;
  for (const GridAxis &a : axes)
    if (llvm::MulOverflow(n, a.size, n) || n > muir::kMaxDevices)
      return std::nullopt;
  return n;
}

FailureOr<Description> Reader::read() {
  Description d;
  // A syntax error anywhere is reported alone, before any key is read
  // (walking a broken tree would add confusing follow-on errors).
  {
    yaml::Stream check(sm.getMemoryBuffer(bufferId)->getMemBufferRef(), sm);
    if (!check.validate())
      return failure();
  }
  yaml::Stream stream(sm.getMemoryBuffer(bufferId)->getMemBufferRef(), sm);
  auto it = stream.begin();
  yaml::Node *root = it == stream.end() ? nullptr : it->getRoot();
  if (!root || isa<yaml::NullNode>(root)) {
    ++numErrors;
    sm.PrintMessage(llvm::SMLoc::getFromPointer(
                        sm.getMemoryBuffer(bufferId)->getBufferStart()),
                    llvm::SourceMgr::DK_Error,
                    "empty description: expected a mapping with 'grid' and "
                    "'parameters'");
    return failure();
  }
  if (stream.failed())
    return failure();
  d.loc = locOf(root);
  bool hasGrid = false, hasParams = false;
  forEachKey(root, "the description",
             {"name", "grid", "parameters", "optimizer", "moe", "training"},
             [&](StringRef key, yaml::Node *v) {
               if (key == "name") {
                 if (auto x = str(v, key))
                   d.name = *x;
               } else if (key == "grid") {
                 hasGrid = true;
                 readGrid(v, d);
               } else if (key == "parameters") {
                 hasParams = true;
                 forEachItem(v, key,
                             [&](yaml::Node *item) { readParameter(item, d); });
               } else if (key == "optimizer") {
                 readOptimizer(v, d);
               } else if (key == "training") {
                 d.training.enabled = true;
                 d.training.loc = locOf(v);
                 forEachKey(v, "training", {"data"},
                            [&](StringRef k, yaml::Node *x) {
                              if (auto data = oneOf(x, k, {"teacher"}))
                                d.training.data = *data;
                            });
               } else {
                 forEachItem(v, key,
                             [&](yaml::Node *item) { readMoE(item, d); });
               }
             });
  if (stream.failed())
    return failure();
  if (isa<yaml::MappingNode>(root)) {
    if (!hasGrid)
      error(root, "the description needs a 'grid'");
    if (!hasParams)
      error(root, "the description needs 'parameters'");
  }
  // (validate reports a product that overflows.)
  std::optional<int64_t> gridDevices = numDevicesChecked(d.grid.axes);
  if (devices && !badAxis && gridDevices && *gridDevices != *devices)
    error(devicesNode, "grid axes have " + Twine(*gridDevices) +
                           " devices in all, but 'devices' is " +
                           Twine(*devices));
  // One description per file: trailing text or a second document is a
  // mistake, not something to ignore. Last use of the tree: moving to the
  // next document frees the first one's nodes (root, devicesNode).
  if (++it != stream.end() && it->getRoot() &&
      !isa<yaml::NullNode>(it->getRoot()))
    error(it->getRoot(), "expected one description per file; found more "
                         "after the first document");
  // Cross-field rules, reported at the places they concern.
  (void)validate(d, [&](const Loc &loc, const Twine &msg) {
    ++numErrors;
    llvm::SMLoc at;
    if (loc.line)
      at = sm.FindLocForLineAndColumn(bufferId, loc.line, loc.col);
    sm.PrintMessage(at, llvm::SourceMgr::DK_Error, msg);
  });
  if (numErrors)
    return failure();
  // Training splits every trained expert stack over ep (the IR gives them
  // their per-rank shapes): say so in the stacks' shards too, so that the
  // plan report and --emit=description see what runs.
  if (d.training.enabled)
    if (const GridAxis *ep = d.grid.find("ep", true); ep && ep->size > 1)
      for (const MoELayer &l : d.moe)
        for (Parameter &p : d.params)
          if (p.shards.empty() &&
              (p.name == l.name + ".experts.gate_proj" ||
               p.name == l.name + ".experts.up_proj" ||
               p.name == l.name + ".experts.down_proj")) {
            p.shards.push_back({ShardKind::Expert, "ep", 0, p.loc});
            p.moeFolding = !d.grid.moeAxes.empty();
          }
  return d;
}

} // namespace

FailureOr<Description>
mlir::muir::desc::parseDescription(llvm::SourceMgr &sourceMgr,
                                   unsigned bufferId) {
  return Reader(sourceMgr, bufferId).read();
}

//===----------------------------------------------------------------------===//
// Validation
//===----------------------------------------------------------------------===//

LogicalResult mlir::muir::desc::validate(
    const Description &d,
    function_ref<void(const Loc &, const Twine &)> report) {
  bool ok = true;
  auto fail = [&](const Loc &loc, const Twine &msg) {
    ok = false;
    report(loc, msg);
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
        fail(s.loc, "shard of '" + p.name + "' names axis '" + s.axis +
                        "', which the " +
                        (p.moeFolding && !d.grid.moeAxes.empty() ? "MoE "
                                                                 : "") +
                        "grid does not have");
        continue;
      }
      int64_t rank = p.shape.size();
      int64_t dim = s.dim;
      if (dim >= rank) {
        fail(s.loc, Twine(stringify(s.kind)) + " shard of '" + p.name +
                        "' needs dim " + Twine(dim) + " but the shape has rank " +
                        Twine(rank));
        continue;
      }
      if (p.shape[dim] % axis->size != 0)
        fail(s.loc, Twine(stringify(s.kind)) + " shard of '" + p.name +
                        "': dim " + Twine(dim) + " (" + Twine(p.shape[dim]) +
                        ") is not divisible by " + s.axis + "=" +
                        Twine(axis->size));
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
    if (l.groups > 1 && l.experts % l.groups != 0)
      fail(l.loc, "experts (" + Twine(l.experts) +
                      ") are not divisible by groups (" + Twine(l.groups) +
                      ") in MoE layer '" + l.name + "'");
    if (l.groupsPerToken > l.groups)
      fail(l.loc, "groups_per_token (" + Twine(l.groupsPerToken) +
                      ") is greater than groups (" + Twine(l.groups) +
                      ") in MoE layer '" + l.name + "'");
    if (const GridAxis *ep = d.grid.find("ep", true))
      if (l.experts % ep->size != 0)
        fail(l.loc, "experts (" + Twine(l.experts) +
                        ") are not divisible by ep=" + Twine(ep->size) +
                        " in MoE layer '" + l.name + "'");
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

LogicalResult mlir::muir::desc::applyLayout(Description &d,
                                            const Grid &layout,
                                            std::vector<std::string> &errors) {
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
          add(ShardKind::TPRow, "tp", 1);
        else
          add(ShardKind::TPColumn, "tp", 0);
      }
      break;
    case Role::Embedding:
    case Role::Head:
      add(ShardKind::TPColumn, "tp", 0); // vocabulary-parallel
      break;
    case Role::Expert:
      add(ShardKind::Expert, "ep", 0);
      if (isRowParallel(p.name))
        add(ShardKind::TPRow, "etp", 2);
      else
        add(ShardKind::TPColumn, "etp", 1);
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
        errors.push_back("--layout: " + a.name + "=" +
                         std::to_string(a.size) +
                         " splits expert stacks, but the model has none "
                         "(no parameter with role expert); leave " + a.name +
                         " out of the layout");
  (void)validate(d, [&](const Loc &loc, const Twine &msg) {
    std::string where = loc.file;
    if (loc.line)
      where += ":" + std::to_string(loc.line) + ":" + std::to_string(loc.col);
    errors.push_back((where.empty() ? "" : where + ": ") + msg.str());
  });
  return success(errors.size() == before);
}

//===----------------------------------------------------------------------===//
// Optimizer assignment
//===----------------------------------------------------------------------===//

static bool matches(const Override &o, StringRef name) {
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
  a.optimizer = matrix ? Optimizer::Muon : Optimizer::AdamW;
  a.muon = d.muon;
  a.adamw = d.adamw;
  std::string lrOverride, weightDecayOverride;
  for (auto [k, o] : llvm::enumerate(d.overrides)) {
    if (o.pattern.empty() || !matches(o, p.name))
      continue;
    if (o.optimizer)
      a.optimizer = *o.optimizer;
    if (o.lr) {
      a.muon.lr = *o.lr;
      a.adamw.lr = *o.lr;
      lrOverride = "overrides." + std::to_string(k);
    }
    if (o.weightDecay) {
      a.muon.weightDecay = *o.weightDecay;
      a.adamw.weightDecay = *o.weightDecay;
      weightDecayOverride = "overrides." + std::to_string(k);
    }
    if (o.nsSteps)
      a.muon.nsSteps = *o.nsSteps;
    if (o.schedule)
      a.muon.schedule = *o.schedule;
  }
  // Muon needs a matrix; an override cannot make a vector one.
  if (a.optimizer == Optimizer::Muon && p.shape.size() != 2 &&
      p.shape.size() != 3)
    a.optimizer = Optimizer::AdamW;
  std::string base = a.optimizer == Optimizer::Muon ? "muon" : "adamw";
  a.lrGroup = lrOverride.empty() ? base : lrOverride;
  a.weightDecayGroup =
      weightDecayOverride.empty() ? base : weightDecayOverride;
  return a;
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

static std::string quoted(StringRef s) {
  std::string out = "\"";
  for (char c : s) {
    // YAML folds a line break inside quotes into a space: escape every
    // control character so that the string reads back as it was.
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      out += "\\x";
      out += llvm::hexdigit(static_cast<unsigned char>(c) >> 4);
      out += llvm::hexdigit(c & 0xf);
      continue;
    }
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

static std::string number(double v) {
  std::string s;
  llvm::raw_string_ostream os(s);
  // The shortest of 15..17 significant digits that reads back exactly.
  for (int digits = 15; digits <= 17; ++digits) {
    s.clear();
    os << llvm::format("%.*g", digits, v);
    if (std::strtod(s.c_str(), nullptr) == v)
      break;
  }
  // YAML reads "1e-07" as a string in some readers; keep a decimal point.
  if (StringRef(s).contains('e') && !StringRef(s).contains('.'))
    s.insert(s.find('e'), ".0");
  return s;
}

static void writeAxes(llvm::raw_ostream &os, const std::vector<GridAxis> &axes) {
  os << "{";
  llvm::interleaveComma(axes, os, [&](const GridAxis &a) {
    os << a.name << ": " << a.size;
  });
  os << "}";
}

void mlir::muir::desc::writeDescription(const Description &d,
                                        llvm::raw_ostream &os) {
  os << "name: " << quoted(d.name) << "\n";
  os << "grid:\n  axes: ";
  writeAxes(os, d.grid.axes);
  os << "\n";
  if (!d.grid.moeAxes.empty()) {
    os << "  moe_axes: ";
    writeAxes(os, d.grid.moeAxes);
    os << "\n";
  }
  const MuonSettings &m = d.muon;
  os << "optimizer:\n  muon: {lr: " << number(m.lr)
     << ", momentum: " << number(m.beta)
     << ", nesterov: " << (m.nesterov ? "true" : "false")
     << ", momentum_kind: " << m.momentumKind
     << ", weight_decay: " << number(m.weightDecay)
     << ", scale_mode: " << m.scaleMode
     << ", scale_extra: " << number(m.scaleExtra)
     << ", ns_steps: " << m.nsSteps << ", schedule: " << m.schedule;
  if (!m.coefficients.empty()) {
    os << ", coefficients: [";
    llvm::interleaveComma(m.coefficients, os,
                          [&](double c) { os << number(c); });
    os << "]";
  }
  os << ", eps: " << number(m.eps)
     << ", split_fused: " << (m.splitFused ? "true" : "false") << "}\n";
  const AdamWSettings &a = d.adamw;
  os << "  adamw: {lr: " << number(a.lr) << ", beta1: " << number(a.beta1)
     << ", beta2: " << number(a.beta2) << ", eps: " << number(a.eps)
     << ", weight_decay: " << number(a.weightDecay) << "}\n";
  if (!d.overrides.empty()) {
    os << "  overrides:\n";
    for (const Override &o : d.overrides) {
      os << "    - {" << (o.isRegex ? "regex" : "match") << ": "
         << quoted(o.pattern);
      if (o.optimizer)
        os << ", optimizer: "
           << (*o.optimizer == Optimizer::Muon ? "muon" : "adamw");
      if (o.lr)
        os << ", lr: " << number(*o.lr);
      if (o.weightDecay)
        os << ", weight_decay: " << number(*o.weightDecay);
      if (o.nsSteps)
        os << ", ns_steps: " << *o.nsSteps;
      if (o.schedule)
        os << ", schedule: " << *o.schedule;
      os << "}\n";
    }
  }
  // An empty block would read back as no value at all.
  os << (d.params.empty() ? "parameters: []\n" : "parameters:\n");
  for (const Parameter &p : d.params) {
    os << "  - {name: " << quoted(p.name) << ", shape: [";
    llvm::interleaveComma(p.shape, os);
    os << "], role: " << stringify(p.role);
    if (p.dtype != "f32")
      os << ", dtype: " << p.dtype;
    if (!p.shards.empty()) {
      os << ", shard: [";
      llvm::interleaveComma(p.shards, os, [&](const Sharding &s) {
        os << "{kind: " << stringify(s.kind) << ", axis: " << s.axis << "}";
      });
      os << "]";
    }
    if (!p.splitRows.empty()) {
      os << ", split_rows: [";
      llvm::interleaveComma(p.splitRows, os);
      os << "]";
    }
    if (p.moeFolding && p.role != Role::Expert)
      os << ", moe: true";
    if (!p.nsMode.empty())
      os << ", ns_mode: " << p.nsMode;
    os << "}\n";
  }
  if (d.training.enabled)
    os << "training: {data: " << d.training.data << "}\n";
  if (!d.moe.empty()) {
    os << "moe:\n";
    for (const MoELayer &l : d.moe) {
      // A layer outside training may leave out its sizes (0 here); the
      // reader takes only sizes >= 1.
      auto size = [](StringRef key, int64_t v) {
        return v > 0 ? (", " + key + ": " + Twine(v)).str() : std::string();
      };
      os << "  - {name: " << quoted(l.name) << size("experts", l.experts)
         << size("top_k", l.topK) << ", shared_experts: " << l.sharedExperts
         << ", scoring: " << l.scoring << ", groups: " << l.groups
         << ", groups_per_token: " << l.groupsPerToken
         << size("hidden", l.hidden) << size("expert_size", l.expertSize)
         << ", tokens_per_rank: " << l.tokensPerRank
         << ", routed_scaling: " << number(l.routedScaling)
         << (l.capacityFactor > 0
                 ? ", capacity_factor: " + number(l.capacityFactor) +
                       ", drop_policy: " + l.dropPolicy
                 : std::string())
         << "}\n";
    }
  }
}
