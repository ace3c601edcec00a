//===- BuildIR.cpp - a description as high-level muir IR ------------------===//
//
// One optimizer step: a `muir.grid` per folding, and a function whose
// arguments are every parameter, its gradient and its optimizer state
// (named as muir-run's --load/--dump files are), updated by one
// `muir.muon_update` or `muir.adamw_update` each. Shapes are global; the
// shardings ride along as argument attributes for the distribution passes.
//
// With `training`, each MoE layer's router and expert gradients are computed
// in the step: a forward pass of a fixed random teacher layer gives the
// targets for this rank's synthetic tokens, the student layer's forward
// pass, the loss (printed per step through a probe), its backward pass
// (dispatch's and combine's transposes, grouped weight gradients), then the
// updates (TrainedLayer.h; a layer's pass a model calls is BuildLayer.cpp). The
// layer is emitted per rank: its expert stacks take their local shapes over ep
// and a `muir.split` directly, and their updates are marked `muir.local` so
// that distribution leaves them alone. With
// --deterministic=layout-invariant, a folding that holds replicas of the ep
// stacks spreads the experts over them instead of summing their gradients
// (TrainedLayer::spreadAxes).
//
//===----------------------------------------------------------------------===//
#include "TrainedLayer.h"

#include <cmath>

using namespace mlir;
using namespace mlir::muir;
using namespace mlir::muir::desc;

namespace {
/// Builds a description's step, one named step at a time: the training
/// layout, the arguments (parameters with their gradients and state, the
/// training data, the attention blocks' logits, the counter and the
/// run-time hyperparameters), the results, then in the body the trained
/// MoE layers' passes, the updates and MuonClip's QK-clips.
class StepBuilder {
public:
  StepBuilder(MLIRContext &ctx, const Description &d, Determinism determinism)
      : ctx(ctx), d(d), b(&ctx), loc(locFor(ctx, d.loc)),
        determinism(determinism) {}
  OwningOpRef<ModuleOp> build();

private:
  LogicalResult foldTraining();
  void addParameterArguments();
  void addDataArguments();
  void addLogitsArguments();
  void addScalarArguments();
  void addResults();
  void buildTraining();
  void buildUpdates();
  void buildClips();
  SmallVector<int64_t> spreadOwners(const std::vector<GridAxis> &fold,
                                    int64_t experts) const;
  /// The index of the argument named `name`, or -1.
  int64_t argIndex(StringRef name) const {
    for (auto [i, attrs] : llvm::enumerate(argAttrs))
      if (auto n = attrs.getAs<StringAttr>(
              MuirDialect::NameAttrHelper::getNameStr());
          n && n == name)
        return i;
    return -1;
  }

  MLIRContext &ctx;
  const Description &d;
  OpBuilder b;
  Location loc;
  Determinism determinism;
  // Training's layout (foldTraining).
  std::string epGrid, epAxis;
  Attribute epSplit, tokenSplit;
  int64_t epSize = 1, foldedRanks = 1;
  SmallVector<std::string> replicaAxes;
  /// The layout-invariant mode's spread (TrainedLayer::spreadAxes): the
  /// folding's axes of size > 1 when some are replicas; per layer, its
  /// experts' renumbering (empty: none).
  SmallVector<std::string> spreadAxes;
  std::vector<SmallVector<int64_t>> owners;
  struct LocalParam {
    SmallVector<int64_t> shape;
    bool split;
  };
  llvm::StringMap<LocalParam> localParams;
  // The arguments, and where each kind starts.
  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs;
  std::vector<std::pair<const Parameter *, Assignment>> plan;
  SmallVector<unsigned> firstArg;
  bool needsStep = false;
  struct DataArgs {
    unsigned x, router, gate, up, down;
  };
  SmallVector<DataArgs> dataArgs;
  SmallVector<unsigned> logitsArg;
  int64_t stepArg = -1;
  SmallVector<SmallVector<unsigned, 5>> hyperOf;
  SmallVector<int64_t> takeArg, countArg;
  // The results, and the body's values.
  SmallVector<Type> resultTypes;
  SmallVector<DictionaryAttr> resultAttrs;
  Block *body = nullptr;
  llvm::StringMap<Value> computedGrads;
  SmallVector<Value> gradValues;
  SmallVector<Value> results;
  /// Per parameter: where its new value is in `results`, and its flag.
  SmallVector<size_t> newParamAt;
  SmallVector<Value> takeOf;
};
} // namespace

OwningOpRef<ModuleOp> StepBuilder::build() {
  ctx.loadDialect<muir::MuirDialect, func::FuncDialect, arith::ArithDialect>();
  if (d.params.empty()) {
    emitError(loc) << "the description needs 'parameters' for an optimizer "
                      "step (one that holds only 'moe' compiles an MoE layer "
                      "a model calls: the step library's layer=NAME option, "
                      "muir.torch.MoE)";
    return nullptr;
  }
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc, StringRef(d.name));
  b.setInsertionPointToEnd(module->getBody());
  buildGrid(b, locFor(ctx, d.grid.loc), "world", d.grid.axes);
  if (!d.grid.moeAxes.empty())
    buildGrid(b, locFor(ctx, d.grid.loc), "moe", d.grid.moeAxes, "world");
  if (failed(foldTraining()))
    return nullptr;
  addParameterArguments();
  addDataArguments();
  addLogitsArguments();
  addScalarArguments();
  addResults();
  auto func = func::FuncOp::create(b, loc, "step",
                                   b.getFunctionType(argTypes, resultTypes));
  func.setAllArgAttrs(argAttrs);
  func.setAllResultAttrs(resultAttrs);
  body = func.addEntryBlock();
  b.setInsertionPointToStart(body);
  buildTraining();
  buildUpdates();
  buildClips();
  results.append(gradValues);
  func::ReturnOp::create(b, loc, results);
  return module;
}

LogicalResult StepBuilder::foldTraining() {
  // Training: the MoE layers' folding (moe_axes, else the grid), its ep
  // axis (experts split over it; none: a group of one) and its other axes
  // of size > 1 (replicas of the experts, whose gradients are summed over
  // them). Tokens are split over all of them.
  epGrid = d.grid.moeAxes.empty() ? "world" : "moe";
  SmallVector<std::string> splitAxes;
  if (d.training.enabled) {
    const std::vector<GridAxis> &fold =
        d.grid.moeAxes.empty() ? d.grid.axes : d.grid.moeAxes;
    for (const GridAxis &a : fold) {
      if (a.name == "ep") {
        epAxis = a.name;
        epSize = a.size;
      } else if (a.size > 1) {
        replicaAxes.push_back(a.name);
      }
      if (a.size > 1) {
        splitAxes.push_back(a.name);
        foldedRanks *= a.size;
      }
    }
    auto gridRef = FlatSymbolRefAttr::get(&ctx, epGrid);
    epSplit = SplitAttr::get(&ctx, gridRef, b.getStrArrayAttr({"ep"}), 0);
    if (!splitAxes.empty()) {
      SmallVector<StringRef> axes(splitAxes.begin(), splitAxes.end());
      tokenSplit = SplitAttr::get(&ctx, gridRef, b.getStrArrayAttr(axes), 0);
    }
  }
  if (d.training.enabled)
    for (const MoELayer &l : d.moe) {
      int64_t el = l.experts / epSize;
      localParams[l.name + ".router"] = {{l.experts, l.hidden}, false};
      localParams[l.name + ".experts.gate_proj"] = {
          {el, l.expertSize, l.hidden}, epSize > 1};
      localParams[l.name + ".experts.up_proj"] = {
          {el, l.expertSize, l.hidden}, epSize > 1};
      localParams[l.name + ".experts.down_proj"] = {
          {el, l.hidden, l.expertSize}, epSize > 1};
    }
  if (d.training.enabled && determinism == Determinism::LayoutInvariant &&
      !replicaAxes.empty()) {
    spreadAxes = splitAxes;
    const std::vector<GridAxis> &fold =
        d.grid.moeAxes.empty() ? d.grid.axes : d.grid.moeAxes;
    for (const MoELayer &l : d.moe) {
      if (l.experts % foldedRanks != 0) {
        emitError(locFor(ctx, l.loc))
            << "MoE layer '" << l.name << "': the layout-invariant mode "
            << "spreads its experts' work over the " << foldedRanks
            << " ranks of its folding (ep and its replicas), which do not "
               "divide its "
            << l.experts << " experts";
        return failure();
      }
      owners.push_back(spreadOwners(fold, l.experts));
    }
  }
  return success();
}

/// The spread's renumbering of `experts` experts over the folding `fold`:
/// expert e is held by the ep rank e / (E / ep), and within that stack
/// computed by the replica (row-major over the replica axes, in grid order)
/// whose block of E / ranks experts holds it; dispatch places expert v on
/// the group rank v / (E / ranks), the group numbered row-major over every
/// axis in grid order. Empty when that is e's own order (ep the first axis
/// of size > 1).
SmallVector<int64_t>
StepBuilder::spreadOwners(const std::vector<GridAxis> &fold,
                          int64_t experts) const {
  int64_t stack = experts / epSize, block = experts / foldedRanks;
  SmallVector<int64_t> map;
  bool moved = false;
  for (int64_t e = 0; e < experts; ++e) {
    int64_t replica = (e % stack) / block, owner = 0;
    // The replica's coordinates, last axis fastest; then the owner's
    // place over every axis of the group.
    SmallVector<int64_t> coord(fold.size(), 0);
    for (size_t i = fold.size(); i-- > 0;) {
      if (fold[i].size <= 1)
        continue;
      if (fold[i].name == epAxis) {
        coord[i] = e / stack;
      } else {
        coord[i] = replica % fold[i].size;
        replica /= fold[i].size;
      }
    }
    for (size_t i = 0; i < fold.size(); ++i)
      if (fold[i].size > 1)
        owner = owner * fold[i].size + coord[i];
    map.push_back(owner * block + e % block);
    moved |= map.back() != e;
  }
  if (!moved)
    map.clear();
  return map;
}

void StepBuilder::addParameterArguments() {
  // Arguments: per parameter the tensor, its gradient and its state.
  struct Slot {
    std::string name;
    ArgRole role;
    bool rows = false; ///< one value per row: [m] or [E, m]
  };
  auto f32 = b.getF32Type();
  for (const Parameter &p : d.params) {
    Assignment a = assignOptimizer(d, p);
    plan.push_back({&p, a});
    firstArg.push_back(argTypes.size());
    auto local = localParams.find(p.name);
    bool trained = local != localParams.end();
    auto type = RankedTensorType::get(
        trained ? ArrayRef<int64_t>(local->second.shape)
                : ArrayRef<int64_t>(p.shape),
        p.dtype == "f64" ? Type(b.getF64Type()) : Type(f32));
    SmallVector<Slot> slots = {{p.name, ArgRole::param},
                               {p.name + ".grad", ArgRole::grad}};
    const OptimizerInfo &info = optimizerInfo(a.optimizer);
    for (const OptimizerState &s : info.state)
      slots.push_back({p.name + s.suffix.str(), ArgRole::state, s.rows});
    needsStep |= info.stepCount;
    for (const Slot &s : slots) {
      SmallVector<NamedAttribute> attrs = {
          b.getNamedAttr(MuirDialect::NameAttrHelper::getNameStr(),
                         b.getStringAttr(s.name)),
          b.getNamedAttr(MuirDialect::RoleAttrHelper::getNameStr(),
                         roleAttr(b, s.role))};
      if (s.role == ArgRole::param) {
        attrs.push_back(b.getNamedAttr(
            MuirDialect::KindAttrHelper::getNameStr(),
            ParamKindAttr::get(&ctx, symbolizeParamKind(stringify(p.role))
                                         .value_or(ParamKind::other))));
        if (p.dtype != "f32")
          attrs.push_back(b.getNamedAttr(
              MuirDialect::DtypeAttrHelper::getNameStr(),
              DTypeAttr::get(&ctx,
                             symbolizeDType(p.dtype).value_or(DType::f32))));
      }
      if (trained) {
        if (local->second.split)
          attrs.push_back(
              b.getNamedAttr(MuirDialect::SplitAttrHelper::getNameStr(),
                             b.getArrayAttr({epSplit})));
      } else if (!p.shards.empty()) {
        // A per-row state keeps the splits of the rows (and of a stack's
        // experts); a split of the columns leaves it whole on each rank.
        SmallVector<Attribute> shards;
        for (const Sharding &sh : p.shards)
          if (!s.rows || sh.dim + 1 < static_cast<int64_t>(p.shape.size()))
            shards.push_back(
                ShardAttr::get(b.getContext(), sh.kind, sh.axis, sh.dim));
        if (!shards.empty())
          attrs.push_back(
              b.getNamedAttr(MuirDialect::ShardsAttrHelper::getNameStr(),
                             b.getArrayAttr(shards)));
        // Shards of MoE parameters name axes of the MoE folding.
        if (p.moeFolding && !d.grid.moeAxes.empty())
          attrs.push_back(
              b.getNamedAttr(MuirDialect::FoldingAttrHelper::getNameStr(),
                             FlatSymbolRefAttr::get(b.getContext(), "moe")));
      }
      argTypes.push_back(
          s.rows ? RankedTensorType::get(type.getShape().drop_back(),
                                         type.getElementType())
                 : type);
      argAttrs.push_back(b.getDictionaryAttr(attrs));
    }
  }
}

void StepBuilder::addDataArguments() {
  auto f32 = b.getF32Type();
  // Training data: per layer this rank's tokens and the teacher's weights
  // (seeded N(0, 1) and N(0, 1 / fan-in)).
  if (d.training.enabled)
    for (const MoELayer &l : d.moe) {
      int64_t el = l.experts / epSize;
      auto add = [&](const std::string &name, ArrayRef<int64_t> shape,
                     bool split, double std) {
        SmallVector<NamedAttribute> attrs = {
            b.getNamedAttr(MuirDialect::NameAttrHelper::getNameStr(),
                           b.getStringAttr(name)),
            b.getNamedAttr(MuirDialect::RoleAttrHelper::getNameStr(),
                           roleAttr(b, ArgRole::data)),
            b.getNamedAttr(MuirDialect::InitStdAttrHelper::getNameStr(),
                           b.getF64FloatAttr(std))};
        if (split && epSize > 1)
          attrs.push_back(
              b.getNamedAttr(MuirDialect::SplitAttrHelper::getNameStr(),
                             b.getArrayAttr({epSplit})));
        argTypes.push_back(RankedTensorType::get(shape, f32));
        argAttrs.push_back(b.getDictionaryAttr(attrs));
        return static_cast<unsigned>(argTypes.size() - 1);
      };
      double h = static_cast<double>(l.hidden);
      double f = static_cast<double>(l.expertSize);
      DataArgs a;
      a.x = argTypes.size();
      {
        SmallVector<NamedAttribute> attrs = {
            b.getNamedAttr(MuirDialect::NameAttrHelper::getNameStr(),
                           b.getStringAttr(l.name + ".data.tokens")),
            b.getNamedAttr(MuirDialect::RoleAttrHelper::getNameStr(),
                           roleAttr(b, ArgRole::data)),
            b.getNamedAttr(MuirDialect::InitStdAttrHelper::getNameStr(),
                           b.getF64FloatAttr(1.0))};
        if (tokenSplit)
          attrs.push_back(
              b.getNamedAttr(MuirDialect::SplitAttrHelper::getNameStr(),
                             b.getArrayAttr({tokenSplit})));
        argTypes.push_back(
            RankedTensorType::get({l.tokensPerRank, l.hidden}, f32));
        argAttrs.push_back(b.getDictionaryAttr(attrs));
      }
      a.router = add(l.name + ".teacher.router", {l.experts, l.hidden},
                     false, 1.0 / std::sqrt(h));
      a.gate = add(l.name + ".teacher.gate_proj", {el, l.expertSize, l.hidden},
                   true, 1.0 / std::sqrt(h));
      a.up = add(l.name + ".teacher.up_proj", {el, l.expertSize, l.hidden},
                 true, 1.0 / std::sqrt(h));
      a.down = add(l.name + ".teacher.down_proj", {el, l.hidden, l.expertSize},
                   true, 1.0 / std::sqrt(f));
      dataArgs.push_back(a);
    }

}

void StepBuilder::addLogitsArguments() {
  auto f32 = b.getF32Type();
  // MuonClip: per attention block the largest pre-softmax logit of each
  // query head, "<name>.max_logits" [heads], an input of the step like the
  // training data (bound by the caller, read by --load), split as q's rows
  // so that each rank has its own heads. Not given, muir-run seeds it
  // N(0, tau^2): some heads clip.
  double tau = d.muon.qkClip;
  if (tau > 0)
    for (const AttentionBlock &blk : d.attention) {
      auto q = llvm::find_if(
          d.params, [&](const Parameter &p) { return p.name == blk.q; });
      SmallVector<NamedAttribute> attrs = {
          b.getNamedAttr(MuirDialect::NameAttrHelper::getNameStr(),
                         b.getStringAttr(blk.name + ".max_logits")),
          b.getNamedAttr(MuirDialect::RoleAttrHelper::getNameStr(),
                         roleAttr(b, ArgRole::data)),
          b.getNamedAttr(MuirDialect::InitStdAttrHelper::getNameStr(),
                         b.getF64FloatAttr(tau))};
      SmallVector<Attribute> shards;
      for (const Sharding &sh : q->shards)
        if (sh.dim == 0)
          shards.push_back(ShardAttr::get(b.getContext(), sh.kind, sh.axis, 0));
      if (!shards.empty())
        attrs.push_back(
            b.getNamedAttr(MuirDialect::ShardsAttrHelper::getNameStr(),
                           b.getArrayAttr(shards)));
      logitsArg.push_back(argTypes.size());
      argTypes.push_back(RankedTensorType::get({blk.heads}, f32));
      argAttrs.push_back(b.getDictionaryAttr(attrs));
    }

}

void StepBuilder::addScalarArguments() {
  if (needsStep) {
    stepArg = argTypes.size();
    argTypes.push_back(b.getI64Type());
    argAttrs.push_back(b.getDictionaryAttr(
        {b.getNamedAttr(MuirDialect::RoleAttrHelper::getNameStr(),
                        roleAttr(b, ArgRole::step))}));
  }
  // Run-time hyperparameters: each group's learning rate, weight decay and
  // momentum (Muon) or betas and eps (AdamW),
  // one f64 argument per value some parameter uses, in order of first use
  // ("muon.lr", "adamw.weight_decay", "overrides.1.lr", ...). The
  // description's value is the default a runner passes (muir.default).
  llvm::StringMap<unsigned> hyperArgs;
  auto hyperArg = [&](const std::string &name, double value) {
    auto [it, added] = hyperArgs.try_emplace(name, argTypes.size());
    if (added) {
      argTypes.push_back(b.getF64Type());
      argAttrs.push_back(b.getDictionaryAttr(
          {b.getNamedAttr(MuirDialect::NameAttrHelper::getNameStr(),
                          b.getStringAttr(name)),
           b.getNamedAttr(MuirDialect::RoleAttrHelper::getNameStr(),
                          roleAttr(b, ArgRole::hyper)),
           b.getNamedAttr(MuirDialect::DefaultAttrHelper::getNameStr(),
                          b.getF64FloatAttr(value))}));
    }
    return it->second;
  };
  for (auto &[p, a] : plan) {
    hyperOf.emplace_back();
    for (const HyperArgument &h : hyperArguments(a))
      hyperOf.back().push_back(hyperArg(h.name, h.value));
  }
  // optimizer.mask: per parameter "<name>.take" (1 updates it, 0 leaves it
  // and its state as they are) and per AdamW parameter "<name>.step" (its
  // own bias-correction count; 0, the default: the step's counter).
  // All flags first, then all counts, in parameter order: each a run of
  // consecutive hyperparameters a caller fills at once.
  takeArg.assign(plan.size(), -1);
  countArg.assign(plan.size(), -1);
  if (d.mask) {
    for (auto [i, entry] : llvm::enumerate(plan))
      takeArg[i] = hyperArg(entry.first->name + ".take", 1.0);
    for (auto [i, entry] : llvm::enumerate(plan))
      if (optimizerInfo(entry.second.optimizer).stepCount)
        countArg[i] = hyperArg(entry.first->name + ".step", 0.0);
  }

}

void StepBuilder::addResults() {
  // Results: the updated parameter and state, in argument order.
  for (auto [i, entry] : llvm::enumerate(plan)) {
    unsigned states = optimizerInfo(entry.second.optimizer).state.size();
    for (unsigned s = 0; s < 1 + states; ++s) {
      unsigned arg = firstArg[i] + (s == 0 ? 0 : 1 + s);
      resultTypes.push_back(argTypes[arg]);
      resultAttrs.push_back(b.getDictionaryAttr({b.getNamedAttr(
          MuirDialect::UpdatesAttrHelper::getNameStr(),
          argAttrs[arg].get(MuirDialect::NameAttrHelper::getNameStr()))}));
    }
  }

  // Computed gradients are results too (so --dump shows them).
  if (d.training.enabled)
    for (const MoELayer &l : d.moe)
      for (const char *suffix :
           {".router", ".experts.gate_proj", ".experts.up_proj",
            ".experts.down_proj", ".shared_experts.gate_proj",
            ".shared_experts.up_proj", ".shared_experts.down_proj"}) {
        if (l.sharedExperts == 0 && StringRef(suffix).contains("shared"))
          continue;
        std::string grad = l.name + suffix + ".grad";
        int64_t arg = argIndex(grad);
        resultTypes.push_back(argTypes[arg]);
        resultAttrs.push_back(b.getDictionaryAttr(
            {b.getNamedAttr(MuirDialect::UpdatesAttrHelper::getNameStr(),
                            b.getStringAttr(grad))}));
      }

}

void StepBuilder::buildTraining() {
  // The MoE layers' forward and backward passes (training).
  int64_t slot = 0;
  for (auto [li, l] : llvm::enumerate(d.training.enabled
                                          ? ArrayRef<MoELayer>(d.moe)
                                          : ArrayRef<MoELayer>())) {
    auto param = [&](StringRef suffix) {
      return body->getArgument(argIndex(l.name + suffix.str()));
    };
    TrainedLayer layer{b,
                       NameLoc::get(StringAttr::get(
                                        &ctx, kTrainedLayerLoc + l.name),
                                    locFor(ctx, l.loc)),
                       l,
                       epGrid,
                       epAxis,
                       epSize,
                       replicaAxes,
                       foldedRanks,
                       body->getArgument(dataArgs[li].x)};
    layer.spreadAxes = spreadAxes;
    layer.invariant = determinism == Determinism::LayoutInvariant;
    if (!spreadAxes.empty())
      layer.owners = owners[li];
    Value target =
        layer
            .forward(body->getArgument(dataArgs[li].router),
                     layer.mine(body->getArgument(dataArgs[li].gate)),
                     layer.mine(body->getArgument(dataArgs[li].up)),
                     layer.mine(body->getArgument(dataArgs[li].down)))
            .y;
    TrainedLayer::Shared shared;
    if (l.sharedExperts > 0)
      shared = {param(".shared_experts.gate_proj"),
                param(".shared_experts.up_proj"),
                param(".shared_experts.down_proj")};
    TrainedLayer::Grads g = layer.lossAndGrads(
        param(".router"), param(".experts.gate_proj"),
        param(".experts.up_proj"), param(".experts.down_proj"), target,
        slot++, l.sharedExperts > 0 ? &shared : nullptr);
    computedGrads[l.name + ".router"] = g.router;
    computedGrads[l.name + ".experts.gate_proj"] = g.gate;
    computedGrads[l.name + ".experts.up_proj"] = g.up;
    computedGrads[l.name + ".experts.down_proj"] = g.down;
    gradValues.append({g.router, g.gate, g.up, g.down});
    if (l.sharedExperts > 0) {
      computedGrads[l.name + ".shared_experts.gate_proj"] = g.sGate;
      computedGrads[l.name + ".shared_experts.up_proj"] = g.sUp;
      computedGrads[l.name + ".shared_experts.down_proj"] = g.sDown;
      gradValues.append({g.sGate, g.sUp, g.sDown});
    }
  }

}

void StepBuilder::buildUpdates() {
  for (auto [i, entry] : llvm::enumerate(plan)) {
    newParamAt.push_back(results.size());
    const Parameter &p = *entry.first;
    const Assignment &a = entry.second;
    Location ploc = NameLoc::get(StringAttr::get(&ctx, kParamLoc + p.name),
                                 locFor(ctx, p.loc));
    Value computed = computedGrads.lookup(p.name);
    auto arg = [&](unsigned k) -> Value {
      if (k == 1 && computed)
        return computed;
      return body->getArgument(firstArg[i] + k);
    };
    auto type = cast<RankedTensorType>(arg(0).getType());
    SmallVector<Value, 5> hyper;
    for (unsigned h : hyperOf[i])
      hyper.push_back(body->getArgument(h));
    Value take;
    auto zero = [&] {
      return arith::ConstantOp::create(b, ploc, b.getF64FloatAttr(0.0));
    };
    if (takeArg[i] >= 0)
      take = arith::CmpFOp::create(b, ploc, arith::CmpFPredicate::UNE,
                                   body->getArgument(takeArg[i]), zero());
    takeOf.push_back(take);
    // An orthogonalised update's requested Newton-Schulz mode, and its
    // mark as a trained MoE layer's local stack.
    auto markUpdate = [&](Operation *op) {
      if (p.nsMode && *p.nsMode != NewtonSchulzMode::auto_)
        op->setAttr(MuirDialect::NsModeAttrHelper::getNameStr(),
                    NewtonSchulzModeAttr::get(&ctx, *p.nsMode));
      if (computed && localParams.count(p.name))
        op->setAttr(MuirDialect::LocalAttrHelper::getNameStr(),
                    b.getUnitAttr());
    };
    // Muon's family: its schedule and custom coefficients.
    const MuonSettings &m = a.muon;
    auto schedule = symbolizeNSSchedule(m.schedule).value_or(
        NSSchedule::simple);
    DenseF64ArrayAttr coeffs;
    if (schedule == NSSchedule::custom)
      coeffs = b.getDenseF64ArrayAttr(m.coefficients);
    if (a.optimizer == Optimizer::Muon) {
      auto op = MuonUpdateOp::create(
          b, ploc, type, type, arg(0), arg(1), arg(2), hyper, take,
          b.getF64FloatAttr(m.lr),
          b.getF64FloatAttr(m.beta),
          MomentumKindAttr::get(&ctx, *symbolizeMomentumKind(m.momentumKind)),
          b.getBoolAttr(m.nesterov), b.getF64FloatAttr(m.weightDecay),
          ScaleModeAttr::get(&ctx, *symbolizeScaleMode(m.scaleMode)),
          b.getF64FloatAttr(m.scaleExtra), b.getI64IntegerAttr(m.nsSteps),
          NSScheduleAttr::get(&ctx, schedule), coeffs,
          b.getF64FloatAttr(m.eps),
          m.splitFused && !p.splitRows.empty()
              ? b.getDenseI64ArrayAttr(p.splitRows)
              : DenseI64ArrayAttr());
      markUpdate(op);
      results.push_back(op.getNewParam());
      results.push_back(op.getNewMomentumBuffer());
    } else if (a.optimizer == Optimizer::NorMuon) {
      auto op = NorMuonUpdateOp::create(
          b, ploc, type, type, cast<RankedTensorType>(arg(3).getType()),
          arg(0), arg(1), arg(2), arg(3), hyper, take,
          b.getF64FloatAttr(m.lr), b.getF64FloatAttr(m.beta),
          MomentumKindAttr::get(&ctx, *symbolizeMomentumKind(m.momentumKind)),
          b.getBoolAttr(m.nesterov), b.getF64FloatAttr(m.weightDecay),
          b.getF64FloatAttr(m.scaleExtra), b.getI64IntegerAttr(m.nsSteps),
          NSScheduleAttr::get(&ctx, schedule), coeffs,
          b.getF64FloatAttr(m.eps), b.getF64FloatAttr(m.beta2),
          b.getF64FloatAttr(m.eps2));
      markUpdate(op);
      results.push_back(op.getNewParam());
      results.push_back(op.getNewMomentumBuffer());
      results.push_back(op.getNewVariance());
    } else {
      const AdamWSettings &w = a.adamw;
      Value count = body->getArgument(stepArg);
      if (countArg[i] >= 0) {
        Value own = body->getArgument(countArg[i]);
        Value given = arith::CmpFOp::create(b, ploc, arith::CmpFPredicate::OGT,
                                            own, zero());
        count = arith::SelectOp::create(
            b, ploc, given,
            arith::FPToSIOp::create(b, ploc, b.getI64Type(), own), count);
      }
      auto op = AdamWUpdateOp::create(
          b, ploc, type, type, type, arg(0), arg(1), arg(2), arg(3), count,
          hyper, take, b.getF64FloatAttr(w.lr),
          b.getF64FloatAttr(w.beta1), b.getF64FloatAttr(w.beta2),
          b.getF64FloatAttr(w.eps), b.getF64FloatAttr(w.weightDecay));
      results.push_back(op.getNewParam());
      results.push_back(op.getNewExpAvg());
      results.push_back(op.getNewExpAvgSq());
    }
  }
}

void StepBuilder::buildClips() {
  double tau = d.muon.qkClip;
  // MuonClip: q and k, once updated, scaled down by their heads' logits.
  for (auto [blk, logits] : llvm::zip(d.attention, logitsArg)) {
    int64_t kv = blk.kvHeadCount();
    for (bool isKey : {false, true}) {
      size_t i = llvm::find_if(plan, [&](const auto &entry) {
                   return entry.first->name == (isKey ? blk.k : blk.q);
                 }) - plan.begin();
      int64_t heads = isKey ? kv : blk.heads;
      Value &w = results[newParamAt[i]];
      w = QkClipOp::create(b, locFor(ctx, isKey ? blk.kLoc : blk.qLoc),
                           w.getType(), w, body->getArgument(logits),
                           takeOf[i], b.getF64FloatAttr(tau),
                           b.getI64IntegerAttr(plan[i].first->shape[0] /
                                               heads),
                           b.getI64IntegerAttr(isKey ? blk.heads / kv : 1));
    }
  }
}

OwningOpRef<ModuleOp>
mlir::muir::desc::buildModule(MLIRContext &ctx, const Description &d,
                              Determinism determinism) {
  return StepBuilder(ctx, d, determinism).build();
}
