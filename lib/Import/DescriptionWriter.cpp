//===- DescriptionWriter.cpp - writing training-step descriptions ---------===//
//
// Writes a description back as YAML (flow mappings inside block lists) that
// the reader in Description.cpp reads back as it was: strings quoted with
// control characters escaped, numbers in the fewest digits that read back
// exactly, and the spellings of roles and shard kinds that it reads.
//
//===----------------------------------------------------------------------===//
#include "DescriptionInternal.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

using namespace mlir;
using namespace mlir::muir::desc;
using namespace mlir::muir::desc::detail;

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

std::string mlir::muir::desc::detail::number(double v) {
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

/// An optimizer's section, its keys as the
/// registry lists them; an unset one (no coefficients, no clip) is left
/// out.
static void writeSettings(llvm::raw_ostream &os, Optimizer o,
                          const OptimizerSettings &s) {
  const OptimizerInfo &info = optimizerInfo(o);
  os << "  " << info.name << ": {";
  llvm::ListSeparator sep;
  for (const OptimizerSetting &setting : info.settings) {
    SettingField field =
        settingField(const_cast<OptimizerSettings &>(s), setting.key);
    if (auto *x = std::get_if<double *>(&field)) {
      if (setting.unset && **x == 0)
        continue;
      os << sep << setting.key << ": " << number(**x);
    } else if (auto *x = std::get_if<int64_t *>(&field)) {
      os << sep << setting.key << ": " << **x;
    } else if (auto *x = std::get_if<bool *>(&field)) {
      os << sep << setting.key << ": " << (**x ? "true" : "false");
    } else if (auto *x = std::get_if<std::string *>(&field)) {
      os << sep << setting.key << ": " << **x;
    } else if (auto *x = std::get_if<std::vector<double> *>(&field)) {
      if ((*x)->empty())
        continue;
      os << sep << setting.key << ": [";
      llvm::interleaveComma(**x, os, [&](double c) { os << number(c); });
      os << "]";
    }
  }
  os << "}\n";
}

/// One entry of `overrides`, on one line in flow style.
static void writeOverride(llvm::raw_ostream &os, const Override &o) {
  if (o.byNames) {
    os << "    - {names: [";
    llvm::interleaveComma(o.names, os,
                          [&](const std::string &n) { os << quoted(n); });
    os << "]";
  } else {
    os << "    - {" << (o.isRegex ? "regex" : "match") << ": "
       << quoted(o.pattern);
  }
  if (o.optimizer)
    os << ", optimizer: " << optimizerName(*o.optimizer);
  if (o.lr)
    os << ", lr: " << number(*o.lr);
  if (o.weightDecay)
    os << ", weight_decay: " << number(*o.weightDecay);
  if (o.momentum)
    os << ", momentum: " << number(*o.momentum);
  if (o.nesterov)
    os << ", nesterov: " << (*o.nesterov ? "true" : "false");
  if (o.scaleMode)
    os << ", scale_mode: " << *o.scaleMode;
  if (o.scaleExtra)
    os << ", scale_extra: " << number(*o.scaleExtra);
  if (o.beta1)
    os << ", beta1: " << number(*o.beta1);
  if (o.beta2)
    os << ", beta2: " << number(*o.beta2);
  if (o.eps)
    os << ", eps: " << number(*o.eps);
  if (o.nsSteps)
    os << ", ns_steps: " << *o.nsSteps;
  if (o.schedule)
    os << ", schedule: " << *o.schedule;
  os << "}\n";
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
  os << "optimizer:\n";
  writeSettings(os, Optimizer::Muon, d.muon);
  if (d.hasNormuon)
    writeSettings(os, Optimizer::NorMuon, d.normuon);
  writeSettings(os, Optimizer::AdamW, d.adamw);
  if (d.mask)
    os << "  mask: true\n";
  if (!d.overrides.empty()) {
    os << "  overrides:\n";
    for (const Override &o : d.overrides)
      writeOverride(os, o);
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
    if (p.nsMode)
      os << ", ns_mode: " << stringifyNewtonSchulzMode(*p.nsMode);
    os << "}\n";
  }
  if (!d.attention.empty()) {
    os << "attention:\n";
    for (const AttentionBlock &a : d.attention)
      os << "  - {name: " << quoted(a.name) << ", q: " << quoted(a.q)
         << ", k: " << quoted(a.k) << ", heads: " << a.heads
         << ", kv_heads: " << a.kvHeadCount() << "}\n";
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
         << (l.tokens > 0 ? ", tokens: " + std::to_string(l.tokens)
                          : ", tokens_per_rank: " +
                                std::to_string(l.tokensPerRank))
         << ", routed_scaling: " << number(l.routedScaling)
         << (l.normalize >= 0 && l.normalizes() != (l.scoring == "sigmoid")
                 ? std::string(", normalize: ") +
                       (l.normalizes() ? "true" : "false")
                 : std::string())
         << (l.capacityFactor > 0
                 ? ", capacity_factor: " + number(l.capacityFactor) +
                       ", drop_policy: " + l.dropPolicy
                 : std::string())
         << (l.capacityTokens > 0
                 ? ", capacity_tokens: " + std::to_string(l.capacityTokens)
                 : std::string())
         << (l.selectionBias ? ", selection_bias: true" : "")
         << (l.bf16ExpertProducts ? ", expert_products: bf16" : "") << "}\n";
    }
  }
}
