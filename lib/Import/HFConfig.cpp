//===- HFConfig.cpp - Hugging Face config.json importer -------------------===//
//
// Derives a description from a Hugging Face `config.json`: every parameter of
// the checkpoint's architecture under its Hugging Face name, with its shape
// ([out, in] as in nn.Linear; [E, out, in] for a stack of experts) and role,
// and one MoELayer per sparse layer. Families:
//
//   llama, mistral, qwen2, qwen3  dense decoder (GQA attention, SwiGLU MLP)
//   qwen3_moe                     qwen3 attention, routed experts
//   mixtral                       llama attention, routed experts every layer
//   deepseek_v3, kimi_k2          MLA attention, routed and shared experts,
//                                 group-limited sigmoid routing
//
// Keys that decide which parameters exist or their shapes are required (a
// missing one is an error naming it); behaviour switches take the defaults of
// the family's transformers config class, and routing knobs that do not
// change any shape default to no effect (n_group = topk_group = 1,
// routed_scaling_factor = 1). Multi-token-prediction modules
// (num_nextn_predict_layers) are not part of the model and are left out.
// Shardings stay empty (applyLayout assigns them) and the grid is a single
// dp=1 axis. The first problem found becomes the one-line error.
//
//===----------------------------------------------------------------------===//
#include "DescriptionInternal.h"
#include "muir/Import/Description.h"
#include "muir/Support/Files.h"
#include "muir/Support/Limits.h"
#include "muir/Support/Nesting.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

using namespace mlir;
using namespace mlir::muir::desc;
using mlir::muir::readBoundedFile;

namespace json = llvm::json;

namespace {

constexpr StringLiteral kSupported =
    "qwen3_moe, deepseek_v3, kimi_k2, mixtral, llama, mistral, qwen2, qwen3";

/// More layers than this is taken for a mistake rather than a model (each
/// layer is code of its own in the step; docs/description.md, "Limits").
using mlir::muir::kMaxLayers;

/// No integer key may exceed this, so that the products of two or three of
/// them that size a tensor's dimension cannot overflow int64_t (the element
/// counts are checked as they are formed).
constexpr int64_t kMaxValue = int64_t(1) << 30;

enum class Family { Llama, Mistral, Qwen2, Qwen3, Qwen3Moe, Mixtral, DeepSeek };

std::optional<Family> familyOf(StringRef modelType) {
  return llvm::StringSwitch<std::optional<Family>>(modelType)
      .Case("llama", Family::Llama)
      .Case("mistral", Family::Mistral)
      .Case("qwen2", Family::Qwen2)
      .Case("qwen3", Family::Qwen3)
      .Case("qwen3_moe", Family::Qwen3Moe)
      .Case("mixtral", Family::Mixtral)
      .Cases({"deepseek_v3", "kimi_k2"}, Family::DeepSeek)
      .Default(std::nullopt);
}

/// A JSON value as it appears in the file, shortened for a message.
std::string render(const json::Value &value) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << value;
  if (text.size() > 40)
    text = text.substr(0, 37) + "...";
  return text;
}

/// The 1-based line and column of top-level key `key` in the JSON `text`
/// (llvm::json keeps no positions): a scan that skips strings and nested
/// objects and arrays. Nothing when the key is not found.
std::optional<std::pair<unsigned, unsigned>> keyPosition(StringRef text,
                                                         StringRef key) {
  int depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      --depth;
    } else if (c == '"') {
      size_t start = i++;
      while (i < text.size() && text[i] != '"')
        i += text[i] == '\\' ? 2 : 1;
      if (depth != 1 || i >= text.size() ||
          text.slice(start + 1, i) != key)
        continue;
      size_t after = text.find_first_not_of(" \t\r\n", i + 1);
      if (after == StringRef::npos || text[after] != ':')
        continue;
      StringRef before = text.take_front(start);
      unsigned line = 1 + before.count('\n');
      size_t lineStart = before.rfind('\n');
      unsigned col = start - (lineStart == StringRef::npos ? 0 : lineStart + 1);
      return std::make_pair(line, col + 1);
    }
  }
  return std::nullopt;
}

/// Typed reads of the config's keys. Every problem is kept (one line each,
/// "path:line:col: message" where the key is in the file); a key that is
/// missing or bad reads as a placeholder and is remembered, so that checks
/// that combine keys run only on good ones (valid()) and report
/// independent problems only. A caller checks ok() before using values.
class KeyReader {
public:
  KeyReader(StringRef path, StringRef text, StringRef modelType,
            const json::Object &object)
      : path(path), text(text), modelType(modelType), object(object) {}

  bool ok() const { return errors.empty(); }
  const std::vector<std::string> &getErrors() const { return errors; }

  /// A problem of the config as a whole (or of keys `about`, located at
  /// the first of them).
  void fail(const Twine &message, ArrayRef<StringRef> about = {}) {
    for (StringRef key : about)
      bad.insert(key);
    std::string where = path.str();
    if (!about.empty())
      if (auto pos = keyPosition(text, about.front()))
        where += ":" + std::to_string(pos->first) + ":" +
                 std::to_string(pos->second);
    errors.push_back(where + ": " + message.str());
  }

  /// True when every key in `keys` read well (present or defaulted).
  bool valid(ArrayRef<StringRef> keys) const {
    return llvm::none_of(keys, [&](StringRef k) { return bad.contains(k); });
  }

  /// True when `key` is present and not null.
  bool has(StringRef key) const {
    const json::Value *v = object.get(key);
    return v && !v->getAsNull();
  }

  /// A required integer >= `min`.
  int64_t integer(StringRef key, int64_t min = 1) {
    const json::Value *v = object.get(key);
    if (!v) {
      missing(key);
      return placeholder(min);
    }
    return checkInteger(key, *v, min);
  }

  /// A required key that may be null (std::nullopt); otherwise an integer
  /// >= `min`.
  std::optional<int64_t> integerOrNull(StringRef key, int64_t min = 1) {
    const json::Value *v = object.get(key);
    if (!v) {
      missing(key);
      return placeholder(min);
    }
    if (v->getAsNull())
      return std::nullopt;
    return checkInteger(key, *v, min);
  }

  /// An integer >= `min`; `fallback` when the key is absent or null.
  int64_t integerOr(StringRef key, int64_t fallback, int64_t min = 1) {
    if (!has(key))
      return fallback;
    return checkInteger(key, *object.get(key), min);
  }

  /// A positive number; `fallback` when the key is absent or null.
  double numberOr(StringRef key, double fallback) {
    if (!has(key))
      return fallback;
    std::optional<double> d = object.get(key)->getAsNumber();
    if (!d || !(*d > 0)) {
      fail("key '" + key + "' must be a positive number, got " +
               render(*object.get(key)),
           key);
      return fallback;
    }
    return *d;
  }

  /// A boolean; `fallback` when the key is absent or null.
  bool booleanOr(StringRef key, bool fallback) {
    if (!has(key))
      return fallback;
    std::optional<bool> b = object.get(key)->getAsBoolean();
    if (!b) {
      fail("key '" + key + "' must be true or false, got " +
               render(*object.get(key)),
           key);
      return fallback;
    }
    return *b;
  }

  /// A string; `fallback` when the key is absent or null.
  std::string stringOr(StringRef key, StringRef fallback) {
    if (!has(key))
      return fallback.str();
    std::optional<StringRef> s = object.get(key)->getAsString();
    if (!s) {
      fail("key '" + key + "' must be a string, got " +
               render(*object.get(key)),
           key);
      return fallback.str();
    }
    return s->str();
  }

  /// A list of non-negative integers; empty when the key is absent or null.
  SmallVector<int64_t> integerListOr(StringRef key) {
    SmallVector<int64_t> result;
    if (!has(key))
      return result;
    const json::Value &v = *object.get(key);
    const json::Array *array = v.getAsArray();
    if (!array) {
      fail("key '" + key + "' must be a list of layer indices, got " +
               render(v),
           key);
      return result;
    }
    for (const json::Value &element : *array) {
      std::optional<int64_t> i = element.getAsInteger();
      if (!i || *i < 0) {
        fail("key '" + key + "' must be a list of layer indices, got " +
                 render(element) + " in it",
             key);
        return {};
      }
      result.push_back(*i);
    }
    return result;
  }

private:
  void missing(StringRef key) {
    fail("missing key '" + key + "' (needed for model_type '" + modelType +
         "')");
    bad.insert(key);
  }

  int64_t placeholder(int64_t min) const { return std::max<int64_t>(min, 1); }

  int64_t checkInteger(StringRef key, const json::Value &v, int64_t min) {
    std::optional<int64_t> i = v.getAsInteger();
    if (!i || *i < min) {
      fail("key '" + key + "' must be " +
               (min == 0 ? "a non-negative integer" : "a positive integer") +
               ", got " + render(v),
           key);
      return placeholder(min);
    }
    if (*i > kMaxValue) {
      fail("key '" + key + "' is " + Twine(*i) + ", more than the " +
               Twine(kMaxValue) + " allowed",
           key);
      return placeholder(min);
    }
    return *i;
  }

  StringRef path, text, modelType;
  const json::Object &object;
  std::vector<std::string> errors;
  llvm::StringSet<> bad;
};

/// Appends parameters and MoE layers to a description, checking that no
/// element count overflows int64_t.
class ParamBuilder {
public:
  ParamBuilder(Description &desc, KeyReader &keys, StringRef path)
      : desc(desc), keys(keys), path(path) {}

  void add(const Twine &name, ArrayRef<int64_t> shape, Role role) {
    Parameter p;
    p.name = name.str();
    p.shape.assign(shape.begin(), shape.end());
    p.role = role;
    // As the description reader does: expert stacks follow the MoE folding.
    p.moeFolding = role == Role::Expert;
    p.loc.file = path.str();
    int64_t n = 1;
    if (overflowed)
      return;
    for (int64_t d : shape) {
      if (llvm::MulOverflow(n, d, n)) {
        keys.fail("parameter '" + p.name +
                  "' has too many elements to count in 64 bits");
        overflowed = true;
        return;
      }
    }
    if (llvm::AddOverflow(total, n, total)) {
      keys.fail("the model has too many parameters to count in 64 bits");
      overflowed = true;
      return;
    }
    desc.params.push_back(std::move(p));
  }

  /// gate_proj, up_proj, down_proj of a SwiGLU MLP with `inter` features.
  void mlp(const Twine &prefix, int64_t hidden, int64_t inter, bool bias) {
    add(prefix + ".gate_proj.weight", {inter, hidden}, Role::Mlp);
    add(prefix + ".up_proj.weight", {inter, hidden}, Role::Mlp);
    add(prefix + ".down_proj.weight", {hidden, inter}, Role::Mlp);
    if (!bias)
      return;
    add(prefix + ".gate_proj.bias", {inter}, Role::Bias);
    add(prefix + ".up_proj.bias", {inter}, Role::Bias);
    add(prefix + ".down_proj.bias", {hidden}, Role::Bias);
  }

  /// A router [E, hidden] (with DeepSeek's e_score_correction_bias [E] when
  /// `correctionBias`) and three expert stacks: `gate` and `up` are
  /// [E, inter, hidden], `down` is [E, hidden, inter].
  void experts(const Twine &prefix, StringRef gate, StringRef up,
               StringRef down, int64_t numExperts, int64_t hidden,
               int64_t inter, bool correctionBias = false) {
    add(prefix + ".gate.weight", {numExperts, hidden}, Role::Router);
    if (correctionBias)
      add(prefix + ".gate.e_score_correction_bias", {numExperts}, Role::Bias);
    add(prefix + ".experts." + gate, {numExperts, inter, hidden}, Role::Expert);
    add(prefix + ".experts." + up, {numExperts, inter, hidden}, Role::Expert);
    add(prefix + ".experts." + down, {numExperts, hidden, inter}, Role::Expert);
  }

  void moeLayer(const Twine &name, int64_t numExperts, int64_t topK,
                int64_t hidden, int64_t inter, int64_t shared = 0,
                StringRef scoring = "softmax", int64_t groups = 1,
                int64_t groupsPerToken = 1, double routedScaling = 1.0,
                bool selectionBias = false) {
    MoELayer m;
    m.name = name.str();
    m.experts = numExperts;
    m.topK = topK;
    m.sharedExperts = shared;
    m.scoring = scoring.str();
    m.groups = groups;
    m.groupsPerToken = groupsPerToken;
    m.hidden = hidden;
    m.expertSize = inter;
    m.routedScaling = routedScaling;
    m.selectionBias = selectionBias;
    m.loc.file = path.str();
    desc.moe.push_back(std::move(m));
  }

private:
  Description &desc;
  KeyReader &keys;
  StringRef path;
  int64_t total = 0;
  bool overflowed = false; ///< reported once; nothing added after it
};

/// The keys shared by every family.
struct Common {
  int64_t hidden = 0, layers = 0, heads = 0, vocab = 0;
  bool tied = false;
};

Common readCommon(KeyReader &keys) {
  Common c;
  c.hidden = keys.integer("hidden_size");
  c.layers = keys.integer("num_hidden_layers");
  c.heads = keys.integer("num_attention_heads");
  c.vocab = keys.integer("vocab_size");
  c.tied = keys.booleanOr("tie_word_embeddings", false);
  if (c.layers > kMaxLayers) {
    keys.fail("key 'num_hidden_layers' is " + Twine(c.layers) +
                  "; more than " + Twine(kMaxLayers) +
                  " layers is not supported (each layer is code of its own "
                  "in the step; docs/description.md, \"Limits\")",
              {"num_hidden_layers"});
    c.layers = 1;
  }
  return c;
}

/// Grouped-query attention of the llama-style families.
struct DenseAttention {
  int64_t kvHeads = 0, headDim = 0;
  bool qkvBias = false, oBias = false, qkNorm = false;
};

DenseAttention readDenseAttention(KeyReader &keys, const Common &c,
                                  Family family) {
  DenseAttention a;
  a.kvHeads = keys.integerOr("num_key_value_heads", c.heads);
  if (keys.has("head_dim"))
    a.headDim = keys.integer("head_dim");
  switch (family) {
  case Family::Qwen2:
    a.qkvBias = true;
    break;
  case Family::Llama:
  case Family::Qwen3:
  case Family::Qwen3Moe:
    a.qkvBias = a.oBias = keys.booleanOr("attention_bias", false);
    break;
  default:
    break;
  }
  a.qkNorm = family == Family::Qwen3 || family == Family::Qwen3Moe;
  if (!a.headDim) {
    if (!keys.valid({"hidden_size", "num_attention_heads", "head_dim"}))
      a.headDim = 1;
    else if (c.hidden % c.heads != 0)
      keys.fail("hidden_size " + Twine(c.hidden) +
                    " is not a multiple of num_attention_heads " +
                    Twine(c.heads) + " and there is no head_dim",
                {"hidden_size", "num_attention_heads"});
    else
      a.headDim = c.hidden / c.heads;
  }
  if (keys.valid({"num_attention_heads", "num_key_value_heads"}) &&
      c.heads % a.kvHeads != 0)
    keys.fail("num_attention_heads " + Twine(c.heads) +
                  " is not a multiple of num_key_value_heads " +
                  Twine(a.kvHeads),
              {"num_key_value_heads", "num_attention_heads"});
  return a;
}

void addDenseAttention(ParamBuilder &b, const Twine &prefix, const Common &c,
                       const DenseAttention &a) {
  int64_t q = c.heads * a.headDim, kv = a.kvHeads * a.headDim;
  std::string p = (prefix + ".self_attn").str();
  b.add(p + ".q_proj.weight", {q, c.hidden}, Role::Attention);
  b.add(p + ".k_proj.weight", {kv, c.hidden}, Role::Attention);
  b.add(p + ".v_proj.weight", {kv, c.hidden}, Role::Attention);
  b.add(p + ".o_proj.weight", {c.hidden, q}, Role::Attention);
  if (a.qkvBias) {
    b.add(p + ".q_proj.bias", {q}, Role::Bias);
    b.add(p + ".k_proj.bias", {kv}, Role::Bias);
    b.add(p + ".v_proj.bias", {kv}, Role::Bias);
  }
  if (a.oBias)
    b.add(p + ".o_proj.bias", {c.hidden}, Role::Bias);
  if (a.qkNorm) {
    b.add(p + ".q_norm.weight", {a.headDim}, Role::Norm);
    b.add(p + ".k_norm.weight", {a.headDim}, Role::Norm);
  }
}

void addLayerNorms(ParamBuilder &b, const Twine &prefix, const Common &c) {
  b.add(prefix + ".input_layernorm.weight", {c.hidden}, Role::Norm);
  b.add(prefix + ".post_attention_layernorm.weight", {c.hidden}, Role::Norm);
}

void addEmbedding(ParamBuilder &b, const Common &c) {
  b.add("model.embed_tokens.weight", {c.vocab, c.hidden}, Role::Embedding);
}

void addFinal(ParamBuilder &b, const Common &c) {
  b.add("model.norm.weight", {c.hidden}, Role::Norm);
  if (!c.tied)
    b.add("lm_head.weight", {c.vocab, c.hidden}, Role::Head);
}

/// llama, mistral, qwen2, qwen3.
void importDense(ParamBuilder &b, KeyReader &keys, Family family) {
  Common c = readCommon(keys);
  DenseAttention a = readDenseAttention(keys, c, family);
  int64_t inter = keys.integer("intermediate_size");
  bool mlpBias = family == Family::Llama && keys.booleanOr("mlp_bias", false);
  if (!keys.ok())
    return;
  addEmbedding(b, c);
  for (int64_t i = 0; i < c.layers; ++i) {
    std::string layer = "model.layers." + std::to_string(i);
    addDenseAttention(b, layer, c, a);
    b.mlp(layer + ".mlp", c.hidden, inter, mlpBias);
    addLayerNorms(b, layer, c);
  }
  addFinal(b, c);
}

/// A top-k that the experts can serve.
void checkTopK(KeyReader &keys, int64_t topK, int64_t numExperts,
               StringRef expertsKey) {
  if (keys.valid({"num_experts_per_tok", expertsKey}) && topK > numExperts)
    keys.fail("num_experts_per_tok " + Twine(topK) + " exceeds " +
                  expertsKey + " " + Twine(numExperts),
              {"num_experts_per_tok", expertsKey});
}

void importQwen3Moe(ParamBuilder &b, KeyReader &keys) {
  Common c = readCommon(keys);
  DenseAttention a = readDenseAttention(keys, c, Family::Qwen3Moe);
  int64_t numExperts = keys.integer("num_experts");
  int64_t topK = keys.integer("num_experts_per_tok");
  int64_t moeInter = keys.integer("moe_intermediate_size");
  int64_t step = keys.integerOr("decoder_sparse_step", 1);
  SmallVector<int64_t> mlpOnly = keys.integerListOr("mlp_only_layers");
  checkTopK(keys, topK, numExperts, "num_experts");

  auto isMoE = [&](int64_t i) {
    return !llvm::is_contained(mlpOnly, i) && (i + 1) % step == 0;
  };
  int64_t inter = 0;
  for (int64_t i = 0; i < c.layers && !inter; ++i)
    if (!isMoE(i))
      inter = keys.integer("intermediate_size");
  if (!keys.ok())
    return;

  addEmbedding(b, c);
  for (int64_t i = 0; i < c.layers; ++i) {
    std::string layer = "model.layers." + std::to_string(i);
    addDenseAttention(b, layer, c, a);
    if (isMoE(i)) {
      b.experts(layer + ".mlp", "gate_proj", "up_proj", "down_proj", numExperts,
                c.hidden, moeInter);
      b.moeLayer(layer + ".mlp", numExperts, topK, c.hidden, moeInter);
    } else {
      b.mlp(layer + ".mlp", c.hidden, inter, /*bias=*/false);
    }
    addLayerNorms(b, layer, c);
  }
  addFinal(b, c);
}

void importMixtral(ParamBuilder &b, KeyReader &keys) {
  Common c = readCommon(keys);
  DenseAttention a = readDenseAttention(keys, c, Family::Mixtral);
  int64_t inter = keys.integer("intermediate_size");
  int64_t numExperts = keys.integer("num_local_experts");
  int64_t topK = keys.integer("num_experts_per_tok");
  checkTopK(keys, topK, numExperts, "num_local_experts");
  if (!keys.ok())
    return;
  addEmbedding(b, c);
  for (int64_t i = 0; i < c.layers; ++i) {
    std::string layer = "model.layers." + std::to_string(i);
    addDenseAttention(b, layer, c, a);
    b.experts(layer + ".block_sparse_moe", "w1", "w3", "w2", numExperts,
              c.hidden, inter);
    b.moeLayer(layer + ".block_sparse_moe", numExperts, topK, c.hidden, inter);
    addLayerNorms(b, layer, c);
  }
  addFinal(b, c);
}

/// deepseek_v3 and kimi_k2: multi-head latent attention; dense MLPs in the
/// first `first_k_dense_replace` layers, then (every `moe_layer_freq`-th
/// layer) routed experts with shared experts beside them.
void importDeepSeek(ParamBuilder &b, KeyReader &keys) {
  Common c = readCommon(keys);
  std::optional<int64_t> qLora = keys.integerOrNull("q_lora_rank");
  int64_t kvLora = keys.integer("kv_lora_rank");
  int64_t nope = keys.integer("qk_nope_head_dim");
  int64_t rope = keys.integer("qk_rope_head_dim");
  int64_t vDim = keys.integer("v_head_dim");
  bool attnBias = keys.booleanOr("attention_bias", false);
  int64_t firstMoE = keys.integer("first_k_dense_replace", /*min=*/0);
  int64_t freq = keys.integerOr("moe_layer_freq", 1);

  auto isMoE = [&](int64_t i) { return i >= firstMoE && i % freq == 0; };
  bool anyDense = false, anyMoE = false;
  for (int64_t i = 0; i < c.layers; ++i)
    (isMoE(i) ? anyMoE : anyDense) = true;

  int64_t inter = anyDense ? keys.integer("intermediate_size") : 0;
  int64_t numExperts = 0, topK = 0, moeInter = 0, shared = 0, groups = 1,
          groupsPerToken = 1;
  double scaling = 1.0;
  std::string scoring;
  bool correctionBias = false;
  if (anyMoE) {
    numExperts = keys.integer("n_routed_experts");
    topK = keys.integer("num_experts_per_tok");
    moeInter = keys.integer("moe_intermediate_size");
    shared = keys.integerOr("n_shared_experts", 0, /*min=*/0);
    scoring = keys.stringOr("scoring_func", "sigmoid");
    groups = keys.integerOr("n_group", 1);
    groupsPerToken = keys.integerOr("topk_group", 1);
    scaling = keys.numberOr("routed_scaling_factor", 1.0);
    correctionBias = keys.stringOr("topk_method", "noaux_tc") == "noaux_tc";
    if (keys.valid({"scoring_func"}) && scoring != "softmax" &&
        scoring != "sigmoid")
      keys.fail(
          "key 'scoring_func' must be \"softmax\" or \"sigmoid\", got \"" +
              scoring + "\"",
          {"scoring_func"});
    checkTopK(keys, topK, numExperts, "n_routed_experts");
    bool groupsValid = keys.valid({"n_routed_experts", "n_group"});
    if (groupsValid && numExperts % groups != 0)
      keys.fail("n_routed_experts " + Twine(numExperts) +
                    " is not a multiple of n_group " + Twine(groups),
                {"n_group", "n_routed_experts"});
    if (keys.valid({"topk_group", "n_group"}) && groupsPerToken > groups)
      keys.fail("topk_group " + Twine(groupsPerToken) + " exceeds n_group " +
                    Twine(groups),
                {"topk_group", "n_group"});
    if (keys.valid({"num_experts_per_tok", "n_routed_experts", "n_group",
                    "topk_group"}) &&
        topK <= numExperts && groupsPerToken <= groups &&
        numExperts % groups == 0 &&
        topK > groupsPerToken * (numExperts / groups))
      keys.fail("num_experts_per_tok " + Twine(topK) +
                    " exceeds the experts of topk_group " +
                    Twine(groupsPerToken) + " groups of " +
                    Twine(numExperts / groups),
                {"num_experts_per_tok", "topk_group"});
  }
  if (!keys.ok())
    return;

  int64_t qHead = nope + rope, H = c.hidden, nh = c.heads;
  addEmbedding(b, c);
  for (int64_t i = 0; i < c.layers; ++i) {
    std::string layer = "model.layers." + std::to_string(i);
    std::string attn = layer + ".self_attn";
    if (qLora) {
      b.add(attn + ".q_a_proj.weight", {*qLora, H}, Role::Attention);
      if (attnBias)
        b.add(attn + ".q_a_proj.bias", {*qLora}, Role::Bias);
      b.add(attn + ".q_a_layernorm.weight", {*qLora}, Role::Norm);
      b.add(attn + ".q_b_proj.weight", {nh * qHead, *qLora}, Role::Attention);
    } else {
      b.add(attn + ".q_proj.weight", {nh * qHead, H}, Role::Attention);
    }
    b.add(attn + ".kv_a_proj_with_mqa.weight", {kvLora + rope, H},
          Role::Attention);
    if (attnBias)
      b.add(attn + ".kv_a_proj_with_mqa.bias", {kvLora + rope}, Role::Bias);
    b.add(attn + ".kv_a_layernorm.weight", {kvLora}, Role::Norm);
    b.add(attn + ".kv_b_proj.weight", {nh * (nope + vDim), kvLora},
          Role::Attention);
    b.add(attn + ".o_proj.weight", {H, nh * vDim}, Role::Attention);
    if (attnBias)
      b.add(attn + ".o_proj.bias", {H}, Role::Bias);

    std::string mlp = layer + ".mlp";
    if (isMoE(i)) {
      b.experts(mlp, "gate_proj", "up_proj", "down_proj", numExperts, H,
                moeInter, correctionBias);
      if (shared)
        b.mlp(mlp + ".shared_experts", H, shared * moeInter, /*bias=*/false);
      // noaux_tc's e_score_correction_bias steers the choice of experts.
      b.moeLayer(mlp, numExperts, topK, H, moeInter, shared, scoring, groups,
                 groupsPerToken, scaling, correctionBias);
    } else {
      b.mlp(mlp, H, inter, /*bias=*/false);
    }
    addLayerNorms(b, layer, c);
  }
  addFinal(b, c);
}

/// "PATH:LINE:COL: malformed JSON: MESSAGE" from LLVM's
/// "[LINE:COL, byte=N]: MESSAGE". LLVM's line is 1-based and its column is
/// the offset of the parser's position in the line, which (the parser having
/// consumed the offending character) is mostly that character's 1-based
/// column; it is 0 only at the start of a line (an unexpected end of file),
/// shown as column 1.
std::string malformed(StringRef path, llvm::Error err) {
  std::string text = llvm::toString(std::move(err));
  StringRef rest = text, lineText, colText;
  unsigned line = 0, col = 0;
  if (rest.consume_front("[")) {
    std::tie(lineText, rest) = rest.split(':');
    std::tie(colText, rest) = rest.split(',');
    size_t colon = rest.find("]: ");
    if (colon != StringRef::npos && !lineText.getAsInteger(10, line) &&
        !colText.getAsInteger(10, col))
      return (path + ":" + Twine(line) + ":" + Twine(std::max(col, 1u)) +
              ": malformed JSON: " + rest.drop_front(colon + 3))
          .str();
  }
  return (path + ": malformed JSON: " + text).str();
}

/// Every string of the JSON `text` (keys and values, used or not) whose
/// escapes stand for no character: a lone UTF-16 surrogate ("\ud83d"
/// alone), which llvm::json would turn into U+FFFD without a word. One
/// "path:line:col: message" each; true when there is none.
bool checkStrings(StringRef text, StringRef path,
                  std::vector<std::string> &errors) {
  bool ok = true;
  bool inString = false;
  unsigned line = 1;
  size_t lineStart = 0;
  std::string problem;
  for (size_t i = 0; i < text.size();) {
    char c = text[i];
    if (c == '\n') {
      ++line;
      lineStart = ++i;
      continue;
    }
    if (c == '"') {
      inString = !inString;
    } else if (inString && c == '\\') {
      size_t length = mlir::muir::desc::detail::checkEscape(text, i, problem);
      if (!problem.empty()) {
        errors.push_back((path + ":" + Twine(line) + ":" +
                          Twine(i - lineStart + 1) + ": " + problem)
                             .str());
        ok = false;
      }
      i += length;
      continue;
    }
    ++i;
  }
  return ok;
}

} // namespace

FailureOr<Description>
mlir::muir::desc::importHFConfig(StringRef path,
                                 std::vector<std::string> &errors) {
  std::string error;
  auto buffer = readBoundedFile(path, error);
  if (!buffer) {
    errors.push_back(error);
    return failure();
  }
  return importHFConfigText(buffer->getBuffer(), path, errors);
}

FailureOr<Description>
mlir::muir::desc::importHFConfigText(StringRef text, StringRef path,
                                     std::vector<std::string> &errors) {
  auto fail = [&](const Twine &message) {
    errors.push_back(message.str());
    return failure();
  };
  if (std::optional<size_t> at = mlir::muir::findTooDeep(text, mlir::muir::NestingSyntax::Yaml)) {
    auto [line, column] = mlir::muir::lineAndColumn(text, *at);
    return fail(path + ":" + Twine(line) + ":" + Twine(column) +
                ": the config is " + mlir::muir::tooDeepMessage());
  }
  llvm::Expected<json::Value> root = json::parse(text);
  if (!root)
    return fail(malformed(path, root.takeError()));
  if (!checkStrings(text, path, errors))
    return failure();
  const json::Object *object = root->getAsObject();
  if (!object)
    return fail(path + ": expected a JSON object at the top level, got " +
                render(*root));
  const json::Value *typeValue = object->get("model_type");
  if (!typeValue)
    return fail(path + ": missing key 'model_type'");
  std::string where = path.str();
  if (auto pos = keyPosition(text, "model_type"))
    where += ":" + std::to_string(pos->first) + ":" +
             std::to_string(pos->second);
  std::optional<StringRef> modelType = typeValue->getAsString();
  if (!modelType)
    return fail(where + ": key 'model_type' must be a string, got " +
                render(*typeValue));
  std::optional<Family> family = familyOf(*modelType);
  if (!family)
    return fail(where + ": unknown model_type '" + *modelType +
                "'; supported: " + kSupported);

  Description desc;
  desc.name = (*modelType + "." + llvm::sys::path::stem(path)).str();
  desc.loc.file = path.str();
  desc.grid.loc.file = path.str();
  GridAxis dp;
  dp.name = "dp";
  dp.size = 1;
  dp.loc.file = path.str();
  desc.grid.axes.push_back(std::move(dp));

  KeyReader keys(path, text, *modelType, *object);
  ParamBuilder builder(desc, keys, path);
  switch (*family) {
  case Family::Llama:
  case Family::Mistral:
  case Family::Qwen2:
  case Family::Qwen3:
    importDense(builder, keys, *family);
    break;
  case Family::Qwen3Moe:
    importQwen3Moe(builder, keys);
    break;
  case Family::Mixtral:
    importMixtral(builder, keys);
    break;
  case Family::DeepSeek:
    importDeepSeek(builder, keys);
    break;
  }
  if (!keys.ok()) {
    llvm::append_range(errors, keys.getErrors());
    return failure();
  }
  // The rules every description follows (names usable as file names, the
  // limits of docs/description.md), as for one read from a file.
  ErrorList broken;
  if (failed(validate(desc, [&](const Loc &loc, const Twine &message,
                                const Subject &subject) {
        broken.add(loc, message, subject);
      }))) {
    llvm::append_range(errors, broken.lines());
    return failure();
  }
  return desc;
}
