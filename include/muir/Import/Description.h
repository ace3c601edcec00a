//===- Description.h - training-step descriptions ---------------*- C++ -*-===//
//
// The in-memory form of a training-step description: the grid, every
// parameter with its role and sharding, the optimizers and their overrides,
// and the MoE layers. Filled by the YAML/JSON reader (Description.cpp) or by
// the Hugging Face config importer (HFConfig.cpp); turned into high-level
// muir IR by BuildIR.cpp. docs/description.md documents every key.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_IMPORT_DESCRIPTION_H
#define MUIR_IMPORT_DESCRIPTION_H

#include "Muir/MuirDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LLVM.h"
#include "muir/Support/Determinism.h"
#include "muir/Support/LayerPass.h"
#include "llvm/Support/SourceMgr.h"

#include <cstdint>
#include <optional>
#include <variant>
#include <string>
#include <vector>

namespace mlir::muir {
} // namespace mlir::muir

namespace mlir::muir::desc {

/// Where a value came from, for diagnostics (line/col are 1-based; 0 when
/// the value was derived rather than written).
struct Loc {
  std::string file;
  unsigned line = 0, col = 0;
};

enum class Role {
  Attention, ///< attention projections (q, k, v, o, fused qkv, MLA parts)
  Mlp,       ///< dense MLP matrices
  Expert,    ///< a stack of expert matrices [E, m, n]
  Router,    ///< MoE router / gate weight [E, hidden]
  Embedding,
  Head,
  Norm,
  Bias,
  Other
};

/// A shard's kind is the ODS enum ShardKind (MuirEnums.td: tp_column,
/// the output features, dim 0 of [out, in], on a tp axis; tp_row, the input
/// features; fsdp, dim 0 on a data-parallel axis; expert, the experts, dim
/// 0 of [E, m, n], on an expert axis), its names the description's.

struct Sharding {
  ShardKind kind;
  std::string axis; ///< grid axis name
  int64_t dim = 0;  ///< tensor dimension that is split
  Loc loc;
};

struct Parameter {
  std::string name;
  std::vector<int64_t> shape;
  std::string dtype = "f32";
  Role role = Role::Other;
  std::vector<Sharding> shards;
  /// Fused QKV-style weights: row counts of the blocks along dim 0 that are
  /// orthogonalised separately when the Muon setting `split_fused` is on.
  std::vector<int64_t> splitRows;
  /// The MoE folding (`moe_axes`) applies to this parameter's shards.
  bool moeFolding = false;
  /// Newton-Schulz mode when the matrix is split (MuirEnums.td's
  /// NewtonSchulzMode: auto, duplicated, distributed, resharded,
  /// blockwise); none = the compiler's --ns-mode.
  std::optional<NewtonSchulzMode> nsMode;
  Loc loc;
  /// Where the name is written (the value of `name`); `loc` when unknown.
  Loc nameLoc;

  int64_t numElements() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
};

struct GridAxis {
  std::string name;
  int64_t size = 1;
  Loc loc;
};

/// The devices as named axes. MoE layers may fold the same devices
/// differently (Megatron's parallel folding): `moeAxes`, if not empty, must
/// have the same product of sizes as `axes`.
struct Grid {
  std::vector<GridAxis> axes;
  std::vector<GridAxis> moeAxes;
  Loc loc;

  int64_t numDevices() const {
    int64_t n = 1;
    for (const GridAxis &a : axes)
      n *= a.size;
    return n;
  }
  const GridAxis *find(StringRef name, bool moe = false) const;
};

enum class Optimizer { Muon, AdamW, NorMuon };

/// One state tensor of an optimizer's parameter: "<name><suffix>", of the
/// parameter's shape, or one value per row of its matrix (`rows`: [m], or
/// [E, m] for a stack).
struct OptimizerState {
  StringRef suffix; ///< ".momentum"
  StringRef what;   ///< in messages: "the momentum"
  /// Its key in a binding's per-parameter state (torch.optim's state
  /// dicts, muir.torch): "momentum_buffer". The C API gives it
  /// (muir_optimizer_info).
  StringRef key;
  bool rows = false;
};

/// A key of an optimizer's description section and its default: `value`
/// for a Real, Integer or Boolean (0 or 1), `choice` for a Choice; none
/// when `unset` (optimizer.muon.qk_clip: off; coefficients: the
/// schedule's).
struct OptimizerSetting {
  StringRef key;
  double value = 0;
  StringRef choice = {};
  bool unset = false;
};

/// What the description reader, the IR builder, the validator and the plan
/// report know of an optimizer, declared once (optimizers()).
struct OptimizerInfo {
  Optimizer id;
  StringRef name; ///< in descriptions: optimizer.<name>, an override's value
  /// Orthogonalises its matrices (Muon's family: 2-D and 3-D parameters
  /// only, planned by muir-distribute as OrthogonalizedUpdateInterface
  /// ops); else element-wise.
  bool orthogonalises;
  ArrayRef<OptimizerState> state; ///< in argument and result order
  /// Its run-time hyperparameters, in the order its op takes them: the
  /// step's "<group>.<field>" arguments.
  ArrayRef<StringRef> hyper;
  bool stepCount; ///< reads the 1-based step (a bias correction)
  /// What its update reduces over a split matrix, per matrix (the plan
  /// report counts the bytes; muir-distribute places them through the
  /// op's OrthogonalizedUpdateInterface): a sum per row, all-reduced over
  /// the axes that split the columns, and one norm of the update,
  /// all-reduced over every axis that splits the matrix (NorMuon's
  /// second moment and RMS); and the element-wise kernels of that
  /// normalisation on each rank.
  bool rowSums = false;
  bool updateNorm = false;
  int normalizeKernels = 0;
  /// The keys of its description section, optimizer.<name>, in the order
  /// the description writer writes them, with the values a section that
  /// does not give them gets (their ranges: SettingSpec).
  ArrayRef<OptimizerSetting> settings = {};
};

/// Every optimizer, in Optimizer's order.
ArrayRef<OptimizerInfo> optimizers();
const OptimizerInfo &optimizerInfo(Optimizer o);
/// The optimizer's name in descriptions ("muon", "adamw", "normuon").
inline StringRef optimizerName(Optimizer o) { return optimizerInfo(o).name; }

/// What an optimizer setting (a key of optimizer.muon, .normuon, .adamw or
/// of an override) takes, declared once: the description reader checks
/// every place the key is written with it, and the C API gives it to
/// bindings (muir_setting_info; muir.torch checks its param groups with
/// it).
struct SettingSpec {
  /// RealList: a list of numbers (coefficients; the reader checks its
  /// length).
  enum class Kind { Real, Integer, Boolean, Choice, RealList };
  StringRef key;
  Kind kind;
  /// Real and Integer: the range [low, high], each end included or not
  /// (an Integer's are).
  double low = 0, high = 0;
  bool lowIncluded = true, highIncluded = true;
  ArrayRef<StringRef> choices; ///< Choice: the names, in order
};

/// Every optimizer setting, and the one of `key` (null for an unknown key).
ArrayRef<SettingSpec> settingSpecs();
const SettingSpec *findSettingSpec(StringRef key);

/// An optimizer section's settings (optimizer.muon, .normuon, .adamw):
/// made with the defaults its OptimizerInfo::settings declare, the fields
/// it has no key for zero. settingField ties each key to its field.
struct OptimizerSettings {
  explicit OptimizerSettings(Optimizer o = Optimizer::Muon);
  double lr = 0;
  double beta = 0; ///< Muon's momentum
  bool nesterov = false;
  std::string momentumKind; ///< ema | accumulate
  double weightDecay = 0;
  std::string scaleMode; ///< spectral | shape | unit_rms
  double scaleExtra = 0;
  int64_t nsSteps = 0;
  std::string schedule; ///< a NSSchedule name (getScheduleNames)
  std::vector<double> coefficients;
  double eps = 0; ///< Muon's Newton-Schulz eps; AdamW's
  bool splitFused = false; ///< orthogonalise fused QKV per block
  /// MuonClip's QK-clip threshold tau (optimizer.muon.qk_clip); 0: off.
  double qkClip = 0;
  Loc qkClipLoc;
  /// NorMuon's row second moment (its decay, the eps of its square root);
  /// AdamW's moments.
  double beta1 = 0;
  double beta2 = 0;
  double eps2 = 0;
};
using MuonSettings = OptimizerSettings;
using AdamWSettings = OptimizerSettings;

/// The field of `s` that an optimizer section's `key` sets (null for a key
/// no section has).
using SettingField = std::variant<std::monostate, double *, int64_t *,
                                  bool *, std::string *,
                                  std::vector<double> *>;
SettingField settingField(OptimizerSettings &s, StringRef key);

/// Settings for the parameters whose names match `pattern` (a glob, or a
/// regex when `isRegex`) or are listed in `names` (exact names: a group of
/// muir.torch's param_groups). Later overrides win over earlier ones.
struct Override {
  std::string pattern;
  bool isRegex = false;
  std::vector<std::string> names;
  bool byNames = false;
  std::optional<Optimizer> optimizer;
  std::optional<double> lr, weightDecay;
  /// Muon's momentum; AdamW's beta1, beta2 and eps (run-time values).
  std::optional<double> momentum, beta1, beta2, eps;
  std::optional<bool> nesterov;
  std::optional<std::string> scaleMode;
  std::optional<double> scaleExtra;
  std::optional<int64_t> nsSteps;
  std::optional<std::string> schedule;
  Loc loc;
};

struct MoELayer {
  std::string name;
  int64_t experts = 0;
  int64_t topK = 0;
  int64_t sharedExperts = 0;
  std::string scoring = "softmax"; ///< softmax | sigmoid
  int64_t groups = 1;              ///< group-limited routing: n_group
  int64_t groupsPerToken = 1;      ///< topk_group
  int64_t hidden = 0;
  int64_t expertSize = 0; ///< expert intermediate size
  int64_t tokensPerRank = 4096;
  /// `tokens`: the step's tokens over every rank (0: not given, the layer
  /// gives tokens_per_rank). Then tokensPerRank is tokens / the grid's
  /// devices (resolveTokens), so the global batch stays on any layout.
  int64_t tokens = 0;
  bool tokensPerRankGiven = false;
  double routedScaling = 1.0;
  /// `normalize`: the chosen k weights renormalised to sum 1 (for softmax,
  /// a softmax over the chosen logits). -1: not given, which means the
  /// scoring's default (sigmoid: yes, DeepSeek-V3; softmax: no).
  int normalize = -1;
  bool normalizes() const {
    return normalize < 0 ? scoring == "sigmoid" : normalize != 0;
  }
  /// Capacity-factor mode (muir.capacity before dispatch); 0: dropless.
  double capacityFactor = 0.0;
  /// Whether the description gave capacity_factor (a value out of range
  /// is reported where it is read, not again as a missing factor).
  bool capacityFactorGiven = false;
  std::string dropPolicy = "weight"; ///< weight | position
  /// `capacity_tokens`: the capacity counts over each block of this many
  /// consecutive tokens (which must divide a rank's), so that the drops do
  /// not depend on how the layout spreads the tokens; 0: over each rank's
  /// tokens (muir.capacity's group_tokens).
  int64_t capacityTokens = 0;
  Loc capacityTokensLoc;
  /// `selection_bias`: a layer a model calls takes "selection_bias" [experts]
  /// (float32), added to the scores to choose the experts but not to their
  /// weights (muir.route's bias: DeepSeek-V3's e_score_correction_bias).
  bool selectionBias = false;
  Loc selectionBiasLoc;
  /// `expert_products: bf16`: the routed experts' grouped products round
  /// their operands to bf16 (muir.grouped_matmul's bf16_operands); `f32`
  /// (the default) keeps them exact.
  bool bf16ExpertProducts = false;
  Loc loc;
  Loc nameLoc; ///< where the name is written; `loc` when unknown
};

/// An attention block (`attention:`): its query and key projections, whose
/// rows are heads * d and kvHeads * d_k. With optimizer.muon.qk_clip the
/// step takes "<name>.max_logits" [heads] and clips q and k after their
/// update (MuonClip; muir.qk_clip).
struct AttentionBlock {
  std::string name, q, k;
  int64_t heads = 0;
  int64_t kvHeads = 0; ///< 0: not given, which means heads (MHA)
  int64_t kvHeadCount() const { return kvHeads ? kvHeads : heads; }
  Loc loc;
  Loc qLoc, kLoc; ///< where q and k are written; `loc` when unknown
};

/// `training`: the step computes its MoE layers' gradients by a forward and
/// backward pass on synthetic data instead of reading them.
struct Training {
  bool enabled = false;
  /// teacher: tokens N(0, 1) and targets from a fixed random MoE layer of
  /// the same shape (the student learns to imitate it).
  std::string data = "teacher";
  Loc loc;
};

struct Description {
  std::string name = "step";
  Training training;
  Grid grid;
  std::vector<Parameter> params;
  MuonSettings muon{Optimizer::Muon};
  AdamWSettings adamw{Optimizer::AdamW};
  /// optimizer.normuon: its settings; given, NorMuon is the matrices'
  /// default optimizer instead of Muon.
  MuonSettings normuon{Optimizer::NorMuon};
  bool hasNormuon = false;
  Loc normuonLoc;
  std::vector<Override> overrides;
  /// optimizer.mask: the step takes, per parameter, a run-time flag
  /// "<name>.take" (0 leaves the parameter and its state as they are) and,
  /// per AdamW parameter, its own step count "<name>.step".
  bool mask = false;
  std::vector<MoELayer> moe;
  std::vector<AttentionBlock> attention;
  Loc attentionLoc;
  Loc loc;
};

/// The optimizer and settings a parameter ends up with.
struct Assignment {
  Optimizer optimizer;
  /// valid when optimizer == Muon or NorMuon (then optimizer.normuon's
  /// settings with the overrides applied)
  MuonSettings muon{Optimizer::Muon};
  AdamWSettings adamw{Optimizer::AdamW}; ///< valid when optimizer == AdamW
  /// Where each run-time hyperparameter comes from, naming the step's
  /// arguments ("<group>.lr", "<group>.momentum", ...): "muon" or "adamw"
  /// (the optimizer's settings) or "overrides.<k>" (the last override that
  /// sets the value, k counted from 0).
  std::string lrGroup, weightDecayGroup, momentumGroup, beta1Group,
      beta2Group, epsGroup;
};

/// One run-time hyperparameter of a parameter's update: its argument's name
/// ("muon.lr", "overrides.2.beta1") and its value (the argument's default).
struct HyperArgument {
  std::string name;
  double value;
};

/// The run-time hyperparameters of an update, in the order its op takes
/// them: Muon (lr, weight_decay, momentum); AdamW (lr, weight_decay, beta1,
/// beta2, eps).
SmallVector<HyperArgument, 5> hyperArguments(const Assignment &a);

/// Default policy (Muon for 2-D hidden matrices and 3-D expert stacks, AdamW
/// for embeddings, head, norms, biases, routers and 1-D tensors) with the
/// overrides applied in order.
Assignment assignOptimizer(const Description &d, const Parameter &p);

/// Parses a YAML or JSON description from `buffer` (registered in
/// `sourceMgr` for diagnostics). Every independent error is reported through
/// the source manager (file:line:col) before failing.
FailureOr<Description> parseDescription(llvm::SourceMgr &sourceMgr,
                                        unsigned bufferId);

/// Reads a Hugging Face `config.json` (qwen3_moe, deepseek_v3 / kimi_k2,
/// mixtral, llama-style dense) and derives every parameter. On failure
/// `errors` holds one line per independent problem ("path:line:col:
/// message" where the key is in the file).
FailureOr<Description> importHFConfig(StringRef path,
                                      std::vector<std::string> &errors);

/// The same for the config's text (`path` names it in messages and in the
/// description's name).
FailureOr<Description> importHFConfigText(StringRef text, StringRef path,
                                          std::vector<std::string> &errors);


/// Parses "dp=8,tp=2,ep=8" (optionally "...;moe:ep=8,etp=2") into grid axes.
FailureOr<Grid> parseLayout(StringRef layout, std::string &error);

/// What an error concerns, so that one rule broken by many parameters or
/// MoE layers is reported once: their name, and the rule said without it
/// ("tp_row shard: dim 1 (16384) is not divisible by tp=3"). Empty for an
/// error of its own.
struct Subject {
  std::string name;
  std::string rule;
  StringRef plural = "parameters"; ///< what the names are
  /// A second place the error concerns (the other name of a clash), shown
  /// as a note after the error; none when `note` is empty.
  Loc noteLoc = {};
  std::string note = {};
};

/// Errors collected, then reported with those that break the same rule
/// (Subject::rule) for more than three subjects grouped into one at the
/// first one's place: "61 parameters: tp_row shard: dim 1 (16384) is not
/// divisible by tp=3: model.layers.0.self_attn.o_proj.weight, <two more
/// names>, ... (58 more)".
class ErrorList {
public:
  void add(const Loc &loc, const Twine &message, const Subject &subject = {});
  /// The errors added (before grouping).
  size_t size() const { return entries.size(); }
  bool empty() const { return entries.empty(); }
  /// One error (or group of errors) as reported: its place and message,
  /// and the note that goes with it (empty for none).
  struct Reported {
    Loc loc;
    std::string message;
    Loc noteLoc;
    std::string note;
  };
  /// Each error, or group of errors, once, in the order they first
  /// occurred, with its place.
  std::vector<Reported> grouped() const;
  /// The same as "file:line:col: message" lines (the place as far as
  /// known), a note appended as "; note: file:line:col: note".
  std::vector<std::string> lines() const;

private:
  struct Entry {
    Loc loc;
    std::string message;
    Subject subject;
  };
  std::vector<Entry> entries;
};

/// Replaces the description's grid by `layout` and assigns default
/// shardings to parameters that need one on the new axes (tp column/row by
/// role, experts on ep). Checks that every shard divides its dimension;
/// errors go to `errors`.
LogicalResult applyLayout(Description &d, const Grid &layout,
                          ErrorList &errors);

/// Each MoE layer given as `tokens` (the step's over every rank) takes its
/// tokensPerRank from the grid: tokens / the grid's devices (validate
/// checks that they divide). Called when the grid is read or replaced.
void resolveTokens(Description &d);

/// Checks cross-field rules (duplicate names, shard divisibility, top-k vs
/// experts, grid products); reports through `report(loc, message,
/// subject)`.
LogicalResult validate(
    const Description &d,
    function_ref<void(const Loc &, const Twine &, const Subject &)> report);

/// Writes `d` in the YAML description format (parseDescription reads it
/// back to the same description).
void writeDescription(const Description &d, llvm::raw_ostream &os);


/// Builds the high-level IR of one optimizer step for `d`, its sums ordered
/// as `determinism` says (with LayoutInvariant, an MoE layer whose folding
/// holds replicas of its ep stacks spreads its experts' work over every
/// rank of the folding instead of summing the replicas' gradients).
OwningOpRef<ModuleOp> buildModule(MLIRContext &context, const Description &d,
                                  Determinism determinism);

/// Builds one of `d`'s MoE layers (the `moe` entry named `layer`) as a
/// function a model calls, per rank, for `tokens_per_rank` rows at most:
/// `moe_forward` (x, the weights, the token count -> y, tokens_per_expert
/// and what the backward keeps: the experts' gate, up and down products
/// and the shared experts' gate and up), or `moe_backward` (dy, x, the
/// weights, the kept tensors, the count -> dx and the weights' gradients);
/// LayerPass::Recompute's `moe_backward` takes no kept tensors and
/// computes the forward's products again (the same ops, so the same bits
/// as Backward's), dispatching the tokens a second time for the stacks'
/// gradients so that the first copy dies with those products. Null after
/// an error at the layer's location.
OwningOpRef<ModuleOp> buildLayerModule(MLIRContext &context,
                                       const Description &d, StringRef layer,
                                       LayerPass pass);

StringRef stringify(Role role);
inline StringRef stringify(ShardKind kind) { return stringifyShardKind(kind); }

} // namespace mlir::muir::desc

#endif // MUIR_IMPORT_DESCRIPTION_H
