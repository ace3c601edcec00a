//===- Description.cpp - reading training-step descriptions ---------------===//
//
// YAML (and JSON, which LLVM's YAML parser reads as flow YAML) descriptions
// are walked at node level so that every error carries its line and column
// and one run reports all independent errors. docs/description.md is the
// reference for the keys read here. The checks live in
// DescriptionValidate.cpp, layouts and optimizer choice in
// DescriptionPolicy.cpp, and writing in DescriptionWriter.cpp.
//
//===----------------------------------------------------------------------===//
#include "DescriptionInternal.h"
#include "muir/Support/Limits.h"
#include "muir/Support/Nesting.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/GlobPattern.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/YAMLParser.h"

#include <cmath>

using namespace mlir;
using namespace mlir::muir::desc;
using namespace mlir::muir::desc::detail;
namespace yaml = llvm::yaml;

/// The text of a scalar as the reader takes it (keys, names, numbers,
/// everything): what the YAML parser decodes, with surrogate pairs joined.
static StringRef text(yaml::ScalarNode *s, SmallVectorImpl<char> &storage) {
  StringRef value = s->getValue(storage);
  return s->getRawValue().starts_with("\"")
             ? joinSurrogatePairs(value, storage)
             : value;
}

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
  void errorAt(const char *at, yaml::Node *n, const Twine &msg) {
    StringRef buffer = sm.getMemoryBuffer(bufferId)->getBuffer();
    if (!at || at < buffer.begin() || at >= buffer.end()) {
      error(n, msg);
      return;
    }
    ++numErrors;
    sm.PrintMessage(llvm::SMLoc::getFromPointer(at),
                    llvm::SourceMgr::DK_Error, msg);
  }

  /// Reports every string of the tree under `n` (keys included) that is
  /// no text: invalid UTF-8, or an escape of no character (a lone UTF-16
  /// surrogate, \U past U+10FFFF), each at its place.
  void checkStrings(yaml::Node *n);

  /// Calls `fn(key, value)` for each entry of a mapping; rejects keys not in
  /// `known`, suggesting the closest one.
  void forEachKey(yaml::Node *n, StringRef what, ArrayRef<StringRef> known,
                  function_ref<void(StringRef, yaml::Node *)> fn);
  std::optional<std::string> str(yaml::Node *n, StringRef key);
  /// An integer in [min, max]; `belowMin` is added to the message of one
  /// below `min` (what the minimum is for).
  std::optional<int64_t> integer(yaml::Node *n, StringRef key,
                                 int64_t min = 1,
                                 int64_t max = muir::kMaxDim,
                                 StringRef belowMin = "");
  std::optional<double> real(yaml::Node *n, StringRef key);
  std::optional<double> ranged(yaml::Node *n, StringRef key, double lo,
                               bool loInclusive, double hi, bool hiInclusive);
  std::optional<bool> boolean(yaml::Node *n, StringRef key);
  std::optional<std::string> oneOf(yaml::Node *n, StringRef key,
                                   ArrayRef<StringRef> choices);
  /// One of the ODS enum E's names (its values 0..maxValue, which its
  /// getMaxEnumValFor* gives), as E.
  template <typename E>
  std::optional<E> oneOfEnum(yaml::Node *n, StringRef key, unsigned maxValue) {
    SmallVector<StringRef> names;
    for (unsigned value = 0; value <= maxValue; ++value)
      names.push_back(muir::stringifyEnum(static_cast<E>(value)));
    if (auto name = oneOf(n, key, names))
      return muir::symbolizeEnum<E>(*name);
    return std::nullopt;
  }
  /// An optimizer setting's value, checked by its SettingSpec (a real or
  /// integer in its range, or one of its names).
  std::optional<double> realSetting(yaml::Node *n, StringRef key) {
    const SettingSpec &s = *findSettingSpec(key);
    return ranged(n, key, s.low, s.lowIncluded, s.high, s.highIncluded);
  }
  std::optional<int64_t> integerSetting(yaml::Node *n, StringRef key) {
    const SettingSpec &s = *findSettingSpec(key);
    return integer(n, key, static_cast<int64_t>(s.low),
                   static_cast<int64_t>(s.high));
  }
  std::optional<std::string> choiceSetting(yaml::Node *n, StringRef key) {
    return oneOf(n, key, findSettingSpec(key)->choices);
  }
  template <typename F> void forEachItem(yaml::Node *n, StringRef key, F fn);

  void readGridAxes(yaml::Node *n, StringRef key, std::vector<GridAxis> &out);
  void readGrid(yaml::Node *n, Description &d);
  /// optimizer.<name> of optimizer `o` into `s`: its keys, as its
  /// OptimizerInfo::settings declare them.
  void readSettings(yaml::Node *n, Optimizer o, OptimizerSettings &s);
  void readOverride(yaml::Node *n, Description &d);
  void readOptimizer(yaml::Node *n, Description &d);
  void readShard(yaml::Node *n, Parameter &p);
  void readParameter(yaml::Node *n, Description &d);
  void readMoE(yaml::Node *n, Description &d);
  void readAttention(yaml::Node *n, Description &d);

  llvm::SourceMgr &sm;
  unsigned bufferId;
  std::string file;
  int numErrors = 0;
  std::optional<int64_t> devices;
  yaml::Node *devicesNode = nullptr;
  bool badAxis = false; ///< an axis size was rejected: skip product checks
};

void Reader::checkStrings(yaml::Node *n) {
  if (!n)
    return;
  if (auto *map = dyn_cast<yaml::MappingNode>(n)) {
    for (yaml::KeyValueNode &kv : *map) {
      checkStrings(kv.getKey());
      checkStrings(kv.getValue());
    }
  } else if (auto *seq = dyn_cast<yaml::SequenceNode>(n)) {
    for (yaml::Node &item : *seq)
      checkStrings(&item);
  } else if (auto *block = dyn_cast<yaml::BlockScalarNode>(n)) {
    size_t bad = invalidUTF8At(block->getValue());
    if (bad != StringRef::npos)
      error(n, "invalid UTF-8 in a string (byte 0x" +
                   llvm::utohexstr(uint8_t(block->getValue()[bad])) +
                   "); a description must be UTF-8");
  } else if (auto *s = dyn_cast<yaml::ScalarNode>(n)) {
    StringRef raw = s->getRawValue();
    if (size_t bad = invalidUTF8At(raw); bad != StringRef::npos)
      errorAt(raw.data() + bad, n,
              "invalid UTF-8 in a string (byte 0x" +
                  llvm::utohexstr(uint8_t(raw[bad])) +
                  "); a description must be UTF-8");
    if (!raw.starts_with("\""))
      return;
    std::string problem;
    for (size_t i = 1; i + 1 < raw.size();) {
      if (raw[i] != '\\') {
        ++i;
        continue;
      }
      size_t length = checkEscape(raw, i, problem);
      if (!problem.empty())
        errorAt(raw.data() + i, n, problem);
      i += length;
    }
  }
}

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
    StringRef key = text(keyNode, storage);
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
  return text(s, storage).str();
}

std::optional<int64_t> Reader::integer(yaml::Node *n, StringRef key,
                                       int64_t min, int64_t max,
                                       StringRef belowMin) {
  auto *s = dyn_cast_or_null<yaml::ScalarNode>(n);
  SmallString<32> storage;
  int64_t v;
  if (!s || text(s, storage).getAsInteger(10, v)) {
    error(n, "expected an integer for '" + key + "'" +
                 (s ? ", got '" + text(s, storage) + "'" : Twine("")));
    return std::nullopt;
  }
  if (v < min) {
    error(n, "expected '" + key + "' to be at least " + Twine(min) + ", got " +
                 Twine(v) + belowMin);
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
  if (!s || text(s, storage).getAsDouble(v) || !std::isfinite(v)) {
    error(n, "expected a number for '" + key + "'" +
                 (s ? ", got '" + text(s, storage) + "'" : Twine("")));
    return std::nullopt;
  }
  return v;
}

std::optional<bool> Reader::boolean(yaml::Node *n, StringRef key) {
  auto *s = dyn_cast_or_null<yaml::ScalarNode>(n);
  SmallString<8> storage;
  StringRef v = s ? text(s, storage) : "";
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
  size_t entries = 0;
  for (yaml::KeyValueNode &kv : *map) {
    ++entries;
    auto *k = dyn_cast_or_null<yaml::ScalarNode>(kv.getKey());
    if (!k) {
      error(kv.getKey(), "expected an axis name");
      continue;
    }
    SmallString<16> storage;
    GridAxis axis;
    axis.name = text(k, storage).str();
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
  // (An empty 'axes' is the grid without axes, reported by validate.)
  if (entries == 0 && key == "moe_axes")
    error(n, "expected at least one axis in 'moe_axes', e.g. {edp: 2, ep: "
             "4}; leave the key out when the MoE layers use the grid's axes");
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

void Reader::readSettings(yaml::Node *n, Optimizer o, OptimizerSettings &s) {
  const OptimizerInfo &info = optimizerInfo(o);
  SmallVector<StringRef> keys;
  for (const OptimizerSetting &setting : info.settings)
    keys.push_back(setting.key);
  forEachKey(
      n, ("'optimizer." + info.name + "'").str(), keys,
      [&](StringRef key, yaml::Node *v) {
        if (key == "qk_clip") // MuonClip's threshold, named in errors
          s.qkClipLoc = locOf(v);
        SettingField field = settingField(s, key);
        if (auto *x = std::get_if<double *>(&field)) {
          if (auto value = realSetting(v, key))
            **x = *value;
        } else if (auto *x = std::get_if<int64_t *>(&field)) {
          if (auto value = integerSetting(v, key))
            **x = *value;
        } else if (auto *x = std::get_if<bool *>(&field)) {
          if (auto value = boolean(v, key))
            **x = *value;
        } else if (auto *x = std::get_if<std::string *>(&field)) {
          if (auto value = choiceSetting(v, key))
            **x = *value;
        } else if (auto *x = std::get_if<std::vector<double> *>(&field)) {
          size_t count = 0;
          forEachItem(v, key, [&](yaml::Node *item) {
            // The table the Newton-Schulz loop embeds.
            if (++count == muir::kMaxCoefficients + 1)
              error(item, "expected at most " +
                              Twine(muir::kMaxCoefficients) +
                              " values in 'coefficients' (" +
                              Twine(muir::kMaxCoefficientTriples) +
                              " triples; the last repeats; "
                              "docs/description.md, \"Limits\")");
            if (auto value = real(item, key);
                value && count <= muir::kMaxCoefficients)
              (*x)->push_back(*value);
          });
        }
      });
}

void Reader::readOverride(yaml::Node *n, Description &d) {
  Override o;
  o.loc = locOf(n);
  bool hasPattern = false;
  forEachKey(n, "an override",
             {"match", "regex", "names", "optimizer", "lr", "weight_decay",
              "momentum", "nesterov", "scale_mode", "scale_extra", "beta1",
              "beta2", "eps", "ns_steps", "schedule"},
             [&](StringRef key, yaml::Node *v) {
               if (key == "names") {
                 if (hasPattern) {
                   error(v, "an override takes one of 'match', 'regex' and "
                            "'names'");
                   return;
                 }
                 hasPattern = true;
                 o.byNames = true;
                 forEachItem(v, key, [&](yaml::Node *item) {
                   if (auto x = str(item, key))
                     o.names.push_back(*x);
                 });
                 return;
               }
               if (key == "match" || key == "regex") {
                 if (hasPattern) {
                   error(v, "an override takes one of 'match', 'regex' and "
                            "'names'");
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
                 SmallVector<StringRef> names;
                 for (const OptimizerInfo &info : optimizers())
                   names.push_back(info.name);
                 if (auto x = oneOf(v, key, names))
                   for (const OptimizerInfo &info : optimizers())
                     if (info.name == *x)
                       o.optimizer = info.id;
               } else if (key == "lr") {
                 o.lr = realSetting(v, key);
               } else if (key == "weight_decay") {
                 o.weightDecay = realSetting(v, key);
               } else if (key == "momentum") {
                 o.momentum = realSetting(v, key);
               } else if (key == "beta1") {
                 o.beta1 = realSetting(v, key);
               } else if (key == "beta2") {
                 o.beta2 = realSetting(v, key);
               } else if (key == "eps") {
                 o.eps = realSetting(v, key);
               } else if (key == "nesterov") {
                 o.nesterov = boolean(v, key);
               } else if (key == "scale_mode") {
                 o.scaleMode = choiceSetting(v, key);
               } else if (key == "scale_extra") {
                 o.scaleExtra = realSetting(v, key);
               } else if (key == "ns_steps") {
                 o.nsSteps = integerSetting(v, key);
               } else if (key == "schedule") {
                 o.schedule = choiceSetting(v, key);
               }
             });
  if (!hasPattern && isa_and_nonnull<yaml::MappingNode>(n))
    error(n, "an override needs 'match' (a glob), 'regex' or 'names' (a "
             "list of parameter names)");
  d.overrides.push_back(o);
}

void Reader::readOptimizer(yaml::Node *n, Description &d) {
  // Each optimizer's section, then the overrides and the mask.
  SmallVector<StringRef> keys;
  for (const OptimizerInfo &info : optimizers())
    keys.push_back(info.name);
  keys.append({"overrides", "mask"});
  forEachKey(n, "'optimizer'", keys,
             [&](StringRef key, yaml::Node *v) {
               if (key == "muon")
                 readSettings(v, Optimizer::Muon, d.muon);
               else if (key == "normuon") {
                 d.hasNormuon = true;
                 d.normuonLoc = locOf(v);
                 readSettings(v, Optimizer::NorMuon, d.normuon);
               }
               else if (key == "adamw")
                 readSettings(v, Optimizer::AdamW, d.adamw);
               else if (key == "mask") {
                 if (auto x = boolean(v, key))
                   d.mask = *x;
               } else
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
      if (auto k = oneOfEnum<muir::ShardKind>(
              v, key, muir::getMaxEnumValForShardKind())) {
        hasKind = true;
        s.kind = *k;
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
          p.nameLoc = locOf(v);
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
            if (auto x = integer(item, "shape", 1, muir::kMaxDim,
                                 " (every dimension needs a size of at least "
                                 "1: a tensor with a 0-sized dimension has "
                                 "no elements to update)"))
              p.shape.push_back(*x);
            else
              badShape = true;
          });
        } else if (key == "dtype") {
          if (auto x = oneOf(v, key, {"f32", "bf16", "f16", "f64"}))
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
          // Each block is a Newton-Schulz of its own in the generated code.
          size_t count = 0;
          forEachItem(v, key, [&](yaml::Node *item) {
            if (++count == muir::kMaxRowBlocks + 1)
              error(item, "expected at most " + Twine(muir::kMaxRowBlocks) +
                              " blocks in 'split_rows' (docs/description.md, "
                              "\"Limits\")");
            if (auto x = integer(item, key); x && count <= muir::kMaxRowBlocks)
              p.splitRows.push_back(*x);
          });
          if (count > static_cast<size_t>(muir::kMaxRowBlocks))
            p.splitRows.clear(); // no follow-on error about their sum
          if (count == 0 && isa<yaml::SequenceNode>(v))
            error(v, "expected at least one block in 'split_rows' (the row "
                     "counts of a fused matrix, e.g. [q, k, v]); leave the "
                     "key out for a matrix that is not fused");
        } else if (key == "moe") {
          if (auto x = boolean(v, key))
            p.moeFolding = *x;
        } else if (key == "ns_mode") {
          if (auto mode = oneOfEnum<muir::NewtonSchulzMode>(
                  v, key, muir::getMaxEnumValForNewtonSchulzMode()))
            p.nsMode = mode;
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
    s.dim = s.kind == muir::ShardKind::tp_column ? (rank == 3 ? 1 : 0)
            : s.kind == muir::ShardKind::tp_row  ? rank - 1
                                                 : 0;
  d.params.push_back(std::move(p));
}

void Reader::readMoE(yaml::Node *n, Description &d) {
  MoELayer m;
  m.loc = locOf(n);
  forEachKey(n, "an MoE layer",
             {"name", "experts", "top_k", "shared_experts", "scoring",
              "groups", "groups_per_token", "hidden", "expert_size",
              "tokens_per_rank", "tokens", "routed_scaling",
              "capacity_factor", "capacity_tokens",
              "drop_policy", "normalize", "selection_bias",
              "expert_products"},
             [&](StringRef key, yaml::Node *v) {
               if (key == "name") {
                 m.nameLoc = locOf(v);
                 if (auto x = str(v, key))
                   m.name = *x;
               } else if (key == "capacity_factor") {
                 m.capacityFactorGiven = true;
                 // A factor <= 0 would drop every token.
                 if (auto x = ranged(v, key, 0.0, false, 1e9, true))
                   m.capacityFactor = *x;
               } else if (key == "drop_policy") {
                 if (auto x = oneOf(v, key, {"weight", "position"}))
                   m.dropPolicy = *x;
               } else if (key == "scoring") {
                 if (auto x = oneOf(v, key, {"softmax", "sigmoid"}))
                   m.scoring = *x;
               } else if (key == "expert_products") {
                 if (auto x = oneOf(v, key, {"f32", "bf16"}))
                   m.bf16ExpertProducts = *x == "bf16";
               } else if (key == "routed_scaling") {
                 if (auto x = real(v, key))
                   m.routedScaling = *x;
               } else if (key == "normalize") {
                 if (auto x = boolean(v, key))
                   m.normalize = *x ? 1 : 0;
               } else if (key == "selection_bias") {
                 m.selectionBiasLoc = locOf(v);
                 if (auto x = boolean(v, key))
                   m.selectionBias = *x;
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
                 else if (key == "tokens")
                   m.tokens = *x;
                 else if (key == "capacity_tokens") {
                   m.capacityTokens = *x;
                   m.capacityTokensLoc = locOf(v);
                 } else {
                   m.tokensPerRank = *x;
                   m.tokensPerRankGiven = true;
                 }
               }
             });
  d.moe.push_back(m);
}

void Reader::readAttention(yaml::Node *n, Description &d) {
  AttentionBlock a;
  a.loc = a.qLoc = a.kLoc = locOf(n);
  forEachKey(n, "an attention block", {"name", "q", "k", "heads", "kv_heads"},
             [&](StringRef key, yaml::Node *v) {
               if (key == "heads" || key == "kv_heads") {
                 if (auto x = integer(v, key, 1, muir::kMaxDim))
                   (key == "heads" ? a.heads : a.kvHeads) = *x;
                 return;
               }
               std::optional<std::string> x = str(v, key);
               if (!x)
                 return;
               if (key == "name")
                 a.name = *x;
               else if (key == "q") {
                 a.q = *x;
                 a.qLoc = locOf(v);
               } else {
                 a.k = *x;
                 a.kLoc = locOf(v);
               }
             });
  if (isa_and_nonnull<yaml::MappingNode>(n)) {
    std::string missing;
    for (auto [key, given] :
         {std::pair<StringRef, bool>{"name", !a.name.empty()},
          {"q", !a.q.empty()},
          {"k", !a.k.empty()},
          {"heads", a.heads > 0}})
      if (!given)
        missing += (missing.empty() ? "'" : ", '") + key.str() + "'";
    if (!missing.empty())
      error(n, "an attention block needs " + missing +
                   " (e.g. {name: layer0.attn, q: layer0.q, k: layer0.k, "
                   "heads: 8, kv_heads: 2})");
  }
  d.attention.push_back(a);
}

FailureOr<Description> Reader::read() {
  Description d;
  // Nested past the bound: refused before a parser recurses into it.
  if (mlir::muir::reportTooDeep(sm, bufferId, mlir::muir::NestingSyntax::Yaml,
                                "description")) {
    ++numErrors;
    return failure();
  }
  // A syntax error anywhere is reported alone, before any key is read
  // (walking a broken tree would add confusing follow-on errors).
  {
    yaml::Stream check(sm.getMemoryBuffer(bufferId)->getMemBufferRef(), sm);
    if (!check.validate())
      return failure();
  }
  // So is a string that is no text (names become file names): every
  // string, read or not, before any is used.
  {
    yaml::Stream strings(sm.getMemoryBuffer(bufferId)->getMemBufferRef(),
                         sm);
    auto first = strings.begin();
    if (first != strings.end())
      checkStrings(first->getRoot());
    if (numErrors)
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
             {"name", "grid", "parameters", "optimizer", "moe", "training",
              "attention"},
             [&](StringRef key, yaml::Node *v) {
               if (key == "name") {
                 if (auto x = str(v, key))
                   d.name = *x;
               } else if (key == "grid") {
                 hasGrid = true;
                 readGrid(v, d);
               } else if (key == "parameters") {
                 hasParams = true;
                 size_t count = 0;
                 forEachItem(v, key, [&](yaml::Node *item) {
                   ++count;
                   readParameter(item, d);
                 });
                 if (count == 0 && isa<yaml::SequenceNode>(v))
                   error(v, "expected at least one parameter in "
                            "'parameters', e.g. - {name: w, shape: [64, 64]}");
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
               } else if (key == "attention") {
                 d.attentionLoc = locOf(v);
                 forEachItem(v, key, [&](yaml::Node *item) {
                   readAttention(item, d);
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
    // (An MoE layer that a model calls compiles from its `moe` entry
    // alone: buildLayerModule.)
    if (!hasParams && d.moe.empty())
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
  // Cross-field rules, reported at the places they concern (one rule
  // broken by many parameters once, at the first).
  ErrorList broken;
  resolveTokens(d);
  (void)validate(d,
                 [&](const Loc &loc, const Twine &msg, const Subject &subject) {
                   broken.add(loc, msg, subject);
                 });
  numErrors += broken.size();
  auto at = [&](const Loc &loc) {
    return loc.line ? sm.FindLocForLineAndColumn(bufferId, loc.line, loc.col)
                    : llvm::SMLoc();
  };
  for (const ErrorList::Reported &r : broken.grouped()) {
    sm.PrintMessage(at(r.loc), llvm::SourceMgr::DK_Error, r.message);
    if (!r.note.empty())
      sm.PrintMessage(at(r.noteLoc), llvm::SourceMgr::DK_Note, r.note);
  }
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
            p.shards.push_back({muir::ShardKind::expert, "ep", 0, p.loc});
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
