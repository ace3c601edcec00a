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
// updates. The layer is emitted per rank: its expert stacks take their
// local shapes over ep and a `muir.split` directly, and their updates are
// marked `muir.local` so that distribution leaves them alone. With
// --deterministic=layout-invariant, a folding that holds replicas of the ep
// stacks spreads the experts over them instead of summing their gradients
// (TrainedLayer::spreadAxes).
//
//===----------------------------------------------------------------------===//
#include "muir/Import/Description.h"

#include "mlir/IR/Builders.h"

#include <cmath>

using namespace mlir;
using namespace mlir::muir;
using namespace mlir::muir::desc;

/// A grid; `folds`: the run's grid whose ranks it numbers in other axes.
static muir::GridOp buildGrid(OpBuilder &b, Location loc, StringRef name,
                              const std::vector<GridAxis> &axes,
                              StringRef folds = "") {
  SmallVector<StringRef> names;
  SmallVector<int64_t> sizes;
  for (const GridAxis &a : axes) {
    names.push_back(a.name);
    sizes.push_back(a.size);
  }
  return muir::GridOp::create(b, loc, b.getStringAttr(name),
                              b.getStrArrayAttr(names),
                              b.getDenseI64ArrayAttr(sizes),
                              folds.empty() ? FlatSymbolRefAttr()
                                            : b.getAttr<FlatSymbolRefAttr>(
                                                  b.getStringAttr(folds)),
                              StringAttr());
}

/// A step argument's `muir.role`.
static Attribute roleAttr(OpBuilder &b, ArgRole role) {
  return ArgRoleAttr::get(b.getContext(), role);
}

static Location locFor(MLIRContext &ctx, const Loc &l) {
  if (l.file.empty())
    return UnknownLoc::get(&ctx);
  return FileLineColLoc::get(&ctx, l.file, l.line, l.col);
}

namespace {

/// Emits one MoE layer's per-rank forward and backward passes: router
/// logits, route, dispatch over the ep group, the SwiGLU experts as grouped
/// matmuls, combine; then the loss against a target and the gradients of
/// the router and the three expert stacks.
struct TrainedLayer {
  OpBuilder &b;
  Location loc;
  const MoELayer &l;
  StringRef grid, axis; ///< axis: ep, or empty (a group of one)
  int64_t ep;
  ArrayRef<std::string> replicas; ///< the folding's other axes of size > 1
  int64_t ranks;                  ///< ep times the replicas
  Value x;
  /// A layer called on fewer tokens than its bound: the run-time count
  /// (null: every row of x is a token).
  Value count = nullptr;
  /// A called layer: products over token rows are row-stable (the same
  /// bits for a token whatever the bound and the number of ranks), and
  /// each rank routes its own tokens.
  bool stable = false;
  /// `selection_bias` [E]: added to the scores to choose the experts (the
  /// forward's route and the backward's recomputed one), not to their
  /// weights (null: none).
  Value bias = nullptr;
  /// The layout-invariant mode's spread, when the folding has replicas of
  /// the ep stacks: every rank of the folding computes a block of its
  /// stack's experts (the stack split over the replicas) on the tokens of
  /// every rank that chose them, so that each expert's products take its
  /// rows of the global batch, in token order, on one rank, as on one rank
  /// alone; no gradient is summed over ranks. `spreadAxes`: the folding's
  /// axes of size > 1, in grid order (the dispatch group; empty: no
  /// spread); `owners`: the route's experts renumbered in the group's
  /// order (empty: the same order).
  ArrayRef<std::string> spreadAxes = {};
  ArrayRef<int64_t> owners = {};
  /// The layout-invariant mode: the shared experts run on every token of
  /// the dispatch group (which is then the whole folding), as on one rank,
  /// and this rank's rows are kept; their gradients are then whole on
  /// every rank, not summed over ranks.
  bool invariant = false;

  bool spread() const { return !spreadAxes.empty(); }
  /// The ranks that share the experts' work: the ep group, or the folding.
  int64_t groupSize() const { return spread() ? ranks : ep; }
  int64_t tokens() const { return l.tokensPerRank; }
  int64_t local() const { return l.experts / groupSize(); }
  int64_t bound() const {
    return groupSize() * l.tokensPerRank * std::min(l.topK, local());
  }
  Type f32() { return b.getF32Type(); }
  RankedTensorType f32(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, b.getF32Type());
  }
  RankedTensorType i64(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, b.getI64Type());
  }
  ArrayAttr epAxes() {
    if (spread()) {
      SmallVector<StringRef> names(spreadAxes.begin(), spreadAxes.end());
      return b.getStrArrayAttr(names);
    }
    return axis.empty() ? b.getStrArrayAttr({}) : b.getStrArrayAttr({axis});
  }
  /// The ep group, the experts and the layer (dispatch, combine).
  SmallVector<NamedAttribute> onGroup() {
    SmallVector<NamedAttribute> a = group();
    a.push_back(b.getNamedAttr("num_experts", b.getI64IntegerAttr(l.experts)));
    a.push_back(b.getNamedAttr("layer", b.getStringAttr(l.name)));
    return a;
  }
  template <typename Op>
  Operation *make(TypeRange types, ValueRange operands,
                  ArrayRef<NamedAttribute> attrs = {}) {
    if constexpr (std::is_same_v<Op, RouteOp>) {
      // The logits, the selection bias and the token count when there are
      // ones.
      SmallVector<NamedAttribute> all(attrs);
      SmallVector<Value> in(operands);
      if (bias)
        in.push_back(bias);
      if (count)
        in.push_back(count);
      all.push_back(b.getNamedAttr(
          "operandSegmentSizes",
          b.getDenseI32ArrayAttr({1, bias ? 1 : 0, count ? 1 : 0})));
      return Op::create(b, loc, types, in, all).getOperation();
    }
    if constexpr (std::is_same_v<Op, CapacityOp> ||
                  std::is_same_v<Op, RouteGradOp>) {
      SmallVector<Value> in(operands);
      if (count)
        in.push_back(count);
      return Op::create(b, loc, types, in, attrs).getOperation();
    }
    if constexpr (std::is_same_v<Op, MatmulOp>) {
      // A, B and the accumulator when there is one; coefficients are
      // attributes here.
      SmallVector<NamedAttribute> all(attrs);
      int32_t acc = static_cast<int32_t>(operands.size()) - 2;
      all.push_back(b.getNamedAttr(
          "operandSegmentSizes", b.getDenseI32ArrayAttr({1, 1, acc, 0, 0})));
      if (stable)
        all.push_back(b.getNamedAttr("row_stable", b.getUnitAttr()));
      return Op::create(b, loc, types, operands, all).getOperation();
    }
    return Op::create(b, loc, types, operands, attrs).getOperation();
  }
  Value one(Operation *op) { return op->getResult(0); }

  bool sigmoid() const { return l.scoring == "sigmoid"; }
  SmallVector<NamedAttribute> scoringAttrs(bool withSelection) {
    SmallVector<NamedAttribute> a;
    if (withSelection) {
      a.push_back(b.getNamedAttr("top_k", b.getI64IntegerAttr(l.topK)));
      a.push_back(b.getNamedAttr("n_group", b.getI64IntegerAttr(l.groups)));
      a.push_back(b.getNamedAttr("topk_group",
                                 b.getI64IntegerAttr(l.groupsPerToken)));
    }
    a.push_back(b.getNamedAttr(
        "scoring", RouteScoringAttr::get(b.getContext(),
                                         sigmoid() ? RouteScoring::sigmoid
                                                   : RouteScoring::softmax)));
    // DeepSeek-V3's sigmoid router normalises its top-k weights (the
    // scoring's default); `normalize` says so for any scoring.
    if (l.normalizes())
      a.push_back(b.getNamedAttr("normalize", b.getUnitAttr()));
    a.push_back(b.getNamedAttr("scaling", b.getF64FloatAttr(l.routedScaling)));
    return a;
  }

  SmallVector<NamedAttribute> group() {
    return {b.getNamedAttr("grid", FlatSymbolRefAttr::get(b.getContext(),
                                                          grid)),
            b.getNamedAttr("grid_axes", epAxes())};
  }
  /// The sum over `axes` (none: v itself).
  Value sumOver(Value v, ArrayRef<std::string> axes) {
    if (axes.empty())
      return v;
    SmallVector<StringRef> names(axes.begin(), axes.end());
    return one(make<AllReduceOp>(
        {v.getType()}, {v},
        {b.getNamedAttr("grid", FlatSymbolRefAttr::get(b.getContext(), grid)),
         b.getNamedAttr("grid_axes", b.getStrArrayAttr(names))}));
  }
  Value gather(Value v, int64_t cols) {
    SmallVector<NamedAttribute> a = group();
    a.push_back(b.getNamedAttr("gather_axis", b.getI64IntegerAttr(0)));
    return one(
        make<AllGatherOp>({f32({tokens() * groupSize(), cols})}, {v}, a));
  }
  /// Every rank's tokens (gathered once per layer).
  Value gathered = {};
  Value allTokens() {
    if (!gathered)
      gathered = groupSize() > 1 ? gather(x, l.hidden) : x;
    return gathered;
  }
  /// The folding's axes other than ep, in grid order (spread only).
  SmallVector<NamedAttribute> onReplicas(StringRef axisName, int64_t dim) {
    SmallVector<StringRef> names;
    for (const std::string &a : spreadAxes)
      if (a != axis)
        names.push_back(a);
    return {b.getNamedAttr("grid", FlatSymbolRefAttr::get(b.getContext(),
                                                          grid)),
            b.getNamedAttr("grid_axes", b.getStrArrayAttr(names)),
            b.getNamedAttr(axisName, b.getI64IntegerAttr(dim))};
  }
  /// The block of an ep stack [E / ep, ...] this rank computes (spread:
  /// its block over the replicas; otherwise the stack).
  Value mine(Value stack) {
    if (!spread())
      return stack;
    auto type = cast<RankedTensorType>(stack.getType());
    SmallVector<int64_t> shape(type.getShape());
    shape[0] = local();
    return one(make<AllSliceOp>({f32(shape)}, {stack},
                                onReplicas("slice_axis", 0)));
  }
  /// A gradient of this rank's block as the ep stack's (spread: gathered
  /// over the replicas, which computed the other blocks).
  Value whole(Value block) {
    if (!spread())
      return block;
    auto type = cast<RankedTensorType>(block.getType());
    SmallVector<int64_t> shape(type.getShape());
    shape[0] = local() * ranks / ep;
    return one(make<AllGatherOp>({f32(shape)}, {block},
                                 onReplicas("gather_axis", 0)));
  }

  struct Forward {
    /// indices/weights: the routing dispatched (after capacity drops);
    /// selected: what route chose (route_grad differentiates that).
    Value logits, selected, indices, weights, rows, counts, plan, gate, up,
        act, out, y;
    Value choices; ///< route's counts: pairs per expert, before drops
    Value sGate, sUp, sAct; ///< the shared experts'
    /// The activation recompute's backward: the tokens are dispatched
    /// again for the gate and up stacks' gradients (a second copy, kept
    /// apart from the first by muir.recomputed), so that the first copy's
    /// rows die with the forward's products instead of living through the
    /// whole backward.
    bool dispatchAgain = false;
  };
  struct Shared {
    Value gate, up, down;
  };

  /// The grouped products' attributes: transpose_b, and the layer's
  /// operand precision.
  SmallVector<NamedAttribute> productAttrs(bool transposeB) {
    SmallVector<NamedAttribute> a;
    if (transposeB)
      a.push_back(b.getNamedAttr("transpose_b", b.getUnitAttr()));
    if (l.bf16ExpertProducts)
      a.push_back(b.getNamedAttr("bf16_operands", b.getUnitAttr()));
    return a;
  }

  Value gmm(Value in, Value w, Value counts, int64_t n, bool transposeB) {
    SmallVector<NamedAttribute> a = productAttrs(transposeB);
    return one(make<GroupedMatmulOp>({f32({bound(), n})},
                                     {in, w, counts}, a));
  }

  Forward forward(Value router, Value gate, Value up, Value down,
                  const Shared *shared = nullptr) {
    Forward f = routeAndDispatch(router);
    experts(f, gate, up, down, shared);
    return f;
  }

  /// The router's logits, the routing (and capacity drops), and the
  /// dispatch of the tokens to their experts' rows.
  Forward routeAndDispatch(Value router) {
    Forward f;
    int64_t t = tokens(), e = l.experts, k = l.topK, h = l.hidden;
    // The router's logits of every rank's tokens, then this rank's rows:
    // one product of the same shape for any ep, so the same bits (BLAS may
    // round a product's entries differently for another number of rows).
    if (stable) {
      f.logits = one(make<MatmulOp>(
          {f32({t, e})}, {x, router},
          {b.getNamedAttr("transpose_b", b.getUnitAttr())}));
    } else {
      f.logits = one(make<MatmulOp>(
          {f32({t * groupSize(), e})}, {allTokens(), router},
          {b.getNamedAttr("transpose_b", b.getUnitAttr())}));
    }
    if (groupSize() > 1 && !stable) {
      SmallVector<NamedAttribute> a = group();
      a.push_back(b.getNamedAttr("slice_axis", b.getI64IntegerAttr(0)));
      f.logits = one(make<AllSliceOp>({f32({t, e})}, {f.logits}, a));
    }
    Operation *route = make<RouteOp>({i64({t, k}), f32({t, k}), i64({e})},
                                     {f.logits}, scoringAttrs(true));
    f.selected = f.indices = route->getResult(0);
    f.weights = route->getResult(1);
    f.choices = route->getResult(2);
    // Capacity mode: pairs beyond an expert's capacity (over this rank's
    // tokens, or over each block of capacity_tokens of them) are dropped
    // before dispatch.
    if (l.capacityFactor > 0) {
      SmallVector<NamedAttribute> a = {
          b.getNamedAttr("num_experts", b.getI64IntegerAttr(e)),
          b.getNamedAttr("capacity_factor",
                         b.getF64FloatAttr(l.capacityFactor)),
          b.getNamedAttr("policy",
                         DropPolicyAttr::get(b.getContext(),
                                             l.dropPolicy == "position"
                                                 ? DropPolicy::position
                                                 : DropPolicy::weight))};
      if (l.capacityTokens > 0)
        a.push_back(b.getNamedAttr("group_tokens",
                                   b.getI64IntegerAttr(l.capacityTokens)));
      Operation *cap = make<CapacityOp>(
          {i64({t, k}), f32({t, k}), i64({e})}, {f.indices, f.weights}, a);
      f.indices = cap->getResult(0);
      f.weights = cap->getResult(1);
    }
    // Spread: each expert to the rank that computes it.
    if (!owners.empty())
      f.indices = one(make<RenumberOp>({f.indices.getType()}, {f.indices},
                                       {b.getNamedAttr(
                                           "map",
                                           b.getDenseI64ArrayAttr(owners))}));
    Operation *dispatch = make<DispatchOp>(
        {f32({bound(), h}), i64({local()}),
         i64({2 * bound() + 4 * groupSize()})},
        {x, f.indices}, onGroup());
    f.rows = dispatch->getResult(0);
    f.counts = dispatch->getResult(1);
    f.plan = dispatch->getResult(2);
    return f;
  }

  /// The SwiGLU experts on the dispatched rows, combined per token, plus
  /// the shared experts.
  void experts(Forward &f, Value gate, Value up, Value down,
               const Shared *shared) {
    int64_t t = tokens(), h = l.hidden, ff = l.expertSize;
    expertProducts(f, gate, up, down);
    f.y = one(make<CombineOp>({f32({t, h})},
                              {f.out, f.indices, f.plan, f.weights},
                              onGroup()));
    // Shared experts: one SwiGLU MLP of S * expert_size on every token of
    // this rank (layout-invariant: of the group, this rank's rows kept),
    // added to the routed output.
    if (shared) {
      int64_t sf = l.sharedExperts * ff, rows = sharedRows();
      auto tb = b.getNamedAttr("transpose_b", b.getUnitAttr());
      sharedProducts(f, *shared);
      f.sAct = one(make<SwigluOp>({f32({rows, sf})}, {f.sGate, f.sUp}));
      Value s = one(make<MatmulOp>({f32({rows, h})}, {f.sAct, shared->down},
                                   {tb}));
      if (rows != t) {
        SmallVector<NamedAttribute> a = group();
        a.push_back(b.getNamedAttr("slice_axis", b.getI64IntegerAttr(0)));
        s = one(make<AllSliceOp>({f32({t, h})}, {s}, a));
      }
      f.y = one(make<AddOp>({f32({t, h})}, {f.y, s}));
    }
  }

  /// The routed experts' products on the dispatched rows: gate, up, their
  /// SwiGLU and down (the same ops as the forward's, so the same bits).
  void expertProducts(Forward &f, Value gate, Value up, Value down) {
    int64_t h = l.hidden, ff = l.expertSize;
    f.gate = gmm(f.rows, gate, f.counts, ff, true);
    f.up = gmm(f.rows, up, f.counts, ff, true);
    f.act = one(make<SwigluOp>({f32({bound(), ff})}, {f.gate, f.up}));
    f.out = gmm(f.act, down, f.counts, h, true);
  }
  /// The shared experts' gate and up products on their tokens.
  void sharedProducts(Forward &f, const Shared &shared) {
    int64_t sf = l.sharedExperts * l.expertSize, rows = sharedRows();
    auto tb = b.getNamedAttr("transpose_b", b.getUnitAttr());
    Value in = sharedTokens();
    f.sGate = one(make<MatmulOp>({f32({rows, sf})}, {in, shared.gate}, {tb}));
    f.sUp = one(make<MatmulOp>({f32({rows, sf})}, {in, shared.up}, {tb}));
  }

  struct Grads {
    Value router, gate, up, down;
    Value sGate, sUp, sDown; ///< shared experts (when given)
  };

  /// `gate`, `up` and `down`: this rank's ep stacks (spread: the block it
  /// computes is taken here, and their gradients are the whole stacks').
  Grads lossAndGrads(Value router, Value gate, Value up, Value down,
                     Value target, int64_t slot,
                     const Shared *shared = nullptr) {
    gate = mine(gate);
    up = mine(up);
    down = mine(down);
    Forward f = forward(router, gate, up, down, shared);
    int64_t t = tokens(), e = l.experts, h = l.hidden;
    // Loss: the mean over all ranks' tokens of half the squared error.
    Operation *mse = make<MseLossOp>(
        {f32({1}), f32({t, h})}, {f.y, target},
        {b.getNamedAttr("scale", b.getF64FloatAttr(
                                     1.0 / static_cast<double>(t * ranks)))});
    Value loss = mse->getResult(0), dy = mse->getResult(1);
    SmallVector<std::string> all(replicas.begin(), replicas.end());
    if (ep > 1)
      all.push_back(axis.str());
    loss = sumOver(loss, all);
    ProbeOp::create(b, loc, loss, b.getStringAttr("loss " + l.name),
                    b.getI64IntegerAttr(slot));
    Grads g;
    ExpertGrads eg = expertsBackward(f, dy, down, g);
    Value dLogits = one(make<RouteGradOp>({f32({t, e})},
                                          {f.logits, f.selected, eg.weights},
                                          scoringAttrs(false)));
    // The router's gradient over every rank's tokens, as one product of the
    // gathered tokens and logit gradients: the same arithmetic for any ep.
    Value dls = groupSize() > 1 ? gather(dLogits, e) : dLogits;
    g.router = one(make<MatmulOp>(
        {f32({e, h})}, {dls, allTokens()},
        {b.getNamedAttr("transpose_a", b.getUnitAttr())}));
    // Shared experts: ordinary products over this rank's tokens, their
    // weight gradients summed over every rank of the folding
    // (layout-invariant: over every token, whole on every rank).
    if (shared) {
      sharedBackward(f, dy, f.sAct, *shared, g);
      SmallVector<std::string> every;
      if (!invariant) {
        every.append(replicas.begin(), replicas.end());
        if (ep > 1)
          every.push_back(axis.str());
      }
      g.sGate = sumOver(g.sGate, every);
      g.sUp = sumOver(g.sUp, every);
      g.sDown = sumOver(g.sDown, every);
    }
    // Spread: every rank's gradients are of every token; the stacks'
    // blocks are gathered.
    if (spread()) {
      g.gate = whole(g.gate);
      g.up = whole(g.up);
      g.down = whole(g.down);
      return g;
    }
    // Replicas of the experts saw other tokens: sum their gradients.
    g.router = sumOver(g.router, replicas);
    g.gate = sumOver(g.gate, replicas);
    g.up = sumOver(g.up, replicas);
    g.down = sumOver(g.down, replicas);
    return g;
  }

  /// A called layer's backward pass from its output gradient `dy`, given
  /// the forward's routing and dispatch (`f`, recomputed) and its kept
  /// products (f.gate, f.up, f.out and the shared f.sGate, f.sUp): the
  /// input's gradient and the gradients of the router, this rank's
  /// experts and the shared experts, all from this rank's tokens (and, for
  /// its experts, the tokens every rank of the ep group sent them).
  Grads layerBackward(Forward &f, Value dy, Value router, Value gate,
                      Value up, Value down, const Shared *shared,
                      Value &dx) {
    int64_t t = tokens(), e = l.experts, h = l.hidden, ff = l.expertSize;
    auto ta = b.getNamedAttr("transpose_a", b.getUnitAttr());
    if (!f.act)
      f.act = one(make<SwigluOp>({f32({bound(), ff})}, {f.gate, f.up}));
    Grads g;
    ExpertGrads eg = expertsBackward(f, dy, down, g);
    // The rows' gradient (through gate and up), home to their tokens:
    // combine without weights is dispatch's transpose.
    Value dRows = one(make<AddOp>(
        {f32({bound(), h})}, {gmm(eg.gate, gate, f.counts, h, false),
                              gmm(eg.up, up, f.counts, h, false)}));
    dx = one(make<CombineOp>({f32({t, h})}, {dRows, f.indices, f.plan},
                             onGroup()));
    // Through the router: this rank's logits and tokens.
    Value dLogits = one(make<RouteGradOp>({f32({t, e})},
                                          {f.logits, f.selected, eg.weights},
                                          scoringAttrs(false)));
    g.router = one(make<MatmulOp>({f32({e, h})}, {dLogits, x}, {ta}));
    dx = one(make<AddOp>({f32({t, h})},
                         {dx, one(make<MatmulOp>({f32({t, h})},
                                                 {dLogits, router}))}));
    if (shared) {
      int64_t sf = l.sharedExperts * ff;
      Value sAct = one(make<SwigluOp>({f32({t, sf})}, {f.sGate, f.sUp}));
      auto [dsGate, dsUp] = sharedBackward(f, dy, sAct, *shared, g);
      Value dxs = one(make<AddOp>(
          {f32({t, h})},
          {one(make<MatmulOp>({f32({t, h})}, {dsGate, shared->gate})),
           one(make<MatmulOp>({f32({t, h})}, {dsUp, shared->up}))}));
      dx = one(make<AddOp>({f32({t, h})}, {dx, dxs}));
    }
    return g;
  }

  /// The routed experts' backward, shared by both passes: the rows'
  /// gradient is dy dispatched with the weights; the weights' gradient
  /// (`weights`), the three stacks' (into g) and the gate and up rows'
  /// gradients.
  struct ExpertGrads {
    Value weights, gate, up;
  };
  ExpertGrads expertsBackward(Forward &f, Value dy, Value down, Grads &g) {
    int64_t t = tokens(), h = l.hidden, ff = l.expertSize, k = l.topK;
    // The weights' gradient first: the experts' outputs die before the
    // rows' gradient is made.
    ExpertGrads eg;
    eg.weights = one(make<CombineWeightsGradOp>(
        {f32({t, k})}, {dy, f.out, f.indices, f.plan}, onGroup()));
    Value dOut = make<DispatchOp>({f32({bound(), h}), i64({local()}),
                                   i64({2 * bound() + 4 * groupSize()})},
                                  {dy, f.indices, f.weights}, onGroup())
                     ->getResult(0);
    auto wgrad = [&](Value in, Value grad, ArrayRef<int64_t> shape) {
      return one(make<GroupedMatmulWgradOp>({f32(shape)}, {in, grad, f.counts},
                                            productAttrs(true)));
    };
    g.down = wgrad(f.act, dOut, {local(), h, ff});
    Value dAct = gmm(dOut, down, f.counts, ff, false);
    Operation *sg = make<SwigluGradOp>({f32({bound(), ff}), f32({bound(), ff})},
                                       {f.gate, f.up, dAct});
    eg.gate = sg->getResult(0);
    eg.up = sg->getResult(1);
    Value rows = f.rows;
    if (f.dispatchAgain) {
      SmallVector<NamedAttribute> a = onGroup();
      a.push_back(b.getNamedAttr(
          MuirDialect::RecomputedAttrHelper::getNameStr(), b.getUnitAttr()));
      rows = make<DispatchOp>({f32({bound(), h}), i64({local()}),
                               i64({2 * bound() + 4 * groupSize()})},
                              {x, f.indices}, a)
                 ->getResult(0);
    }
    g.gate = wgrad(rows, eg.gate, {local(), ff, h});
    g.up = wgrad(rows, eg.up, {local(), ff, h});
    return eg;
  }

  /// The shared experts' tokens: this rank's, or (layout-invariant) the
  /// group's.
  Value sharedTokens() { return invariant ? allTokens() : x; }
  int64_t sharedRows() const {
    return invariant ? tokens() * groupSize() : tokens();
  }

  /// The shared experts' weight gradients (into g) over their tokens
  /// (sharedTokens), given their activation `sAct`; returns the gate and
  /// up gradients.
  std::pair<Value, Value> sharedBackward(Forward &f, Value dy, Value sAct,
                                         const Shared &shared, Grads &g) {
    int64_t rows = sharedRows(), h = l.hidden,
            sf = l.sharedExperts * l.expertSize;
    auto ta = b.getNamedAttr("transpose_a", b.getUnitAttr());
    Value in = sharedTokens();
    if (rows != tokens())
      dy = gather(dy, h);
    g.sDown = one(make<MatmulOp>({f32({h, sf})}, {dy, sAct}, {ta}));
    Value dsAct = one(make<MatmulOp>({f32({rows, sf})}, {dy, shared.down}));
    Operation *ssg = make<SwigluGradOp>({f32({rows, sf}), f32({rows, sf})},
                                        {f.sGate, f.sUp, dsAct});
    g.sGate =
        one(make<MatmulOp>({f32({sf, h})}, {ssg->getResult(0), in}, {ta}));
    g.sUp =
        one(make<MatmulOp>({f32({sf, h})}, {ssg->getResult(1), in}, {ta}));
    return {ssg->getResult(0), ssg->getResult(1)};
  }
};

} // namespace

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

//===----------------------------------------------------------------------===//
// One MoE layer as a pass a model calls
//===----------------------------------------------------------------------===//

/// The MoE layer `name` of the description and its ep axis (its size, 1
/// without one), checked for a pass of its own; null once an error is
/// emitted.
static const MoELayer *findLayer(MLIRContext &ctx, const Description &d,
                                 StringRef name, std::string &epAxis,
                                 int64_t &ep) {
  Location loc = locFor(ctx, d.loc);
  auto it = llvm::find_if(d.moe, [&](const MoELayer &l) {
    return l.name == name;
  });
  if (it == d.moe.end()) {
    std::string names;
    for (const MoELayer &l : d.moe)
      names += (names.empty() ? "'" : ", '") + l.name + "'";
    emitError(loc) << "no MoE layer named '" << name << "' under 'moe'"
                   << (names.empty() ? std::string(" (there is none)")
                                     : " (there are " + names + ")");
    return nullptr;
  }
  const MoELayer &l = *it;
  Location lloc = locFor(ctx, l.loc);
  if (l.topK < 1 || l.experts < 1 || l.hidden < 1 || l.expertSize < 1) {
    emitError(lloc) << "MoE layer '" << l.name
                    << "' needs experts, top_k, hidden and expert_size";
    return nullptr;
  }
  // The ep axis of the MoE folding (none: every rank holds every expert).
  const std::vector<GridAxis> &fold =
      d.grid.moeAxes.empty() ? d.grid.axes : d.grid.moeAxes;
  for (const GridAxis &a : fold)
    if (a.name == "ep") {
      epAxis = a.name;
      ep = a.size;
    }
  if (l.experts % ep != 0) {
    emitError(lloc) << "MoE layer '" << l.name << "': " << l.experts
                    << " experts do not divide over ep=" << ep;
    return nullptr;
  }
  if (l.capacityTokens > 0) {
    emitError(locFor(ctx, l.capacityTokensLoc))
        << "MoE layer '" << l.name
        << "': a layer a model calls counts its capacity over each call's "
           "tokens; capacity_tokens (blocks of a training step's tokens) is "
           "for training steps";
    return nullptr;
  }
  return &l;
}

/// The layer's pass in the function's body: the forward's output, the
/// choices and what it keeps for the backward; or the backward's
/// gradients from those.
static SmallVector<Value>
buildLayerPass(OpBuilder &b, Location lloc, const Description &d,
               const MoELayer &l, StringRef epAxis, int64_t ep, Value count,
               function_ref<Value(StringRef)> arg, LayerPass pass) {
  bool shared = l.sharedExperts > 0;
  TrainedLayer layer{b,   lloc, l, "world", epAxis, ep, {}, ep, arg("x"),
                     count, /*stable=*/true};
  if (!d.grid.moeAxes.empty())
    layer.grid = "moe";
  if (l.selectionBias)
    layer.bias = arg("selection_bias");
  TrainedLayer::Shared sw;
  if (shared)
    sw = {arg("shared_gate_proj"), arg("shared_up_proj"),
          arg("shared_down_proj")};
  SmallVector<Value> results;
  if (pass == LayerPass::Forward || pass == LayerPass::ForwardOnly) {
    TrainedLayer::Forward fw = layer.forward(
        arg("router"), arg("gate_proj"), arg("up_proj"), arg("down_proj"),
        shared ? &sw : nullptr);
    results = {fw.y, fw.choices};
    // forward-only: the products stay the pass's own temporaries.
    if (pass == LayerPass::Forward)
      results.append({fw.gate, fw.up, fw.out});
    if (shared && pass == LayerPass::Forward)
      results.append({fw.sGate, fw.sUp});
  } else {
    TrainedLayer::Forward fw = layer.routeAndDispatch(arg("router"));
    if (pass == LayerPass::Recompute) {
      // The forward's products again, from x and the weights alone.
      layer.expertProducts(fw, arg("gate_proj"), arg("up_proj"),
                           arg("down_proj"));
      fw.dispatchAgain = true;
      if (shared)
        layer.sharedProducts(fw, sw);
    } else {
      fw.gate = arg("saved.gate");
      fw.up = arg("saved.up");
      fw.out = arg("saved.out");
      if (shared) {
        fw.sGate = arg("saved.shared_gate");
        fw.sUp = arg("saved.shared_up");
      }
    }
    Value dx;
    TrainedLayer::Grads g = layer.layerBackward(
        fw, arg("dy"), arg("router"), arg("gate_proj"), arg("up_proj"),
        arg("down_proj"), shared ? &sw : nullptr, dx);
    results = {dx, g.router, g.gate, g.up, g.down};
    if (shared)
      results.append({g.sGate, g.sUp, g.sDown});
  }
  return results;
}

OwningOpRef<ModuleOp> mlir::muir::desc::buildLayerModule(MLIRContext &ctx,
                                                         const Description &d,
                                                         StringRef name,
                                                         LayerPass pass) {
  bool backward = pass == LayerPass::Backward || pass == LayerPass::Recompute;
  ctx.loadDialect<muir::MuirDialect, func::FuncDialect>();
  Location loc = locFor(ctx, d.loc);
  std::string epAxis;
  int64_t ep = 1;
  const MoELayer *found = findLayer(ctx, d, name, epAxis, ep);
  if (!found)
    return nullptr;
  const MoELayer &l = *found;
  Location lloc = locFor(ctx, l.loc);
  OpBuilder b(&ctx);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc, StringRef(d.name));
  b.setInsertionPointToEnd(module->getBody());
  buildGrid(b, locFor(ctx, d.grid.loc), "world", d.grid.axes);
  if (!d.grid.moeAxes.empty())
    buildGrid(b, locFor(ctx, d.grid.loc), "moe", d.grid.moeAxes, "world");
  int64_t t = l.tokensPerRank, e = l.experts, h = l.hidden, f = l.expertSize,
          el = e / ep, sf = l.sharedExperts * f;
  int64_t rows = ep * t * std::min(l.topK, el);
  Type f32 = b.getF32Type(), i64 = b.getI64Type();
  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs;
  llvm::StringMap<unsigned> argOf;
  auto add = [&](StringRef n, ArrayRef<int64_t> shape, ArgRole role,
                 Type et) {
    argOf[n] = argTypes.size();
    argTypes.push_back(RankedTensorType::get(shape, et));
    argAttrs.push_back(b.getDictionaryAttr(
        {b.getNamedAttr(MuirDialect::NameAttrHelper::getNameStr(),
                        b.getStringAttr(n)),
         b.getNamedAttr(MuirDialect::RoleAttrHelper::getNameStr(),
                        roleAttr(b, role))}));
  };
  bool shared = l.sharedExperts > 0;
  if (backward)
    add("dy", {t, h}, ArgRole::data, f32);
  add("x", {t, h}, ArgRole::data, f32);
  add("router", {e, h}, ArgRole::param, f32);
  add("gate_proj", {el, f, h}, ArgRole::param, f32);
  add("up_proj", {el, f, h}, ArgRole::param, f32);
  add("down_proj", {el, h, f}, ArgRole::param, f32);
  if (shared) {
    add("shared_gate_proj", {sf, h}, ArgRole::param, f32);
    add("shared_up_proj", {sf, h}, ArgRole::param, f32);
    add("shared_down_proj", {h, sf}, ArgRole::param, f32);
  }
  // The selection bias, whole on every rank: both passes route with it
  // (the backward recomputes the routing); it has no gradient.
  if (l.selectionBias)
    add("selection_bias", {e}, ArgRole::data, f32);
  // What the forward keeps for the backward: the experts' three products
  // (and the shared experts' two); routing and dispatch are recomputed.
  SmallVector<std::string> saved = {"saved.gate", "saved.up", "saved.out"};
  if (shared)
    saved.append({"saved.shared_gate", "saved.shared_up"});
  auto savedShape = [&](StringRef n) -> SmallVector<int64_t> {
    if (n == "saved.gate" || n == "saved.up")
      return {rows, f};
    if (n == "saved.out")
      return {rows, h};
    return {t, sf};
  };
  SmallVector<std::string> outputs;
  if (!backward) {
    outputs = {"y", "tokens_per_expert"};
    if (pass == LayerPass::Forward)
      outputs.append(saved.begin(), saved.end());
  } else {
    if (pass == LayerPass::Backward)
      for (const std::string &n : saved)
        add(n, savedShape(n), ArgRole::data, f32);
    outputs = {"dx", "router.grad", "gate_proj.grad", "up_proj.grad",
               "down_proj.grad"};
    if (shared)
      outputs.append({"shared_gate_proj.grad", "shared_up_proj.grad",
                      "shared_down_proj.grad"});
  }
  for (const std::string &n : outputs) {
    if (n == "y" || n == "dx")
      add(n, {t, h}, ArgRole::data, f32);
    else if (n == "tokens_per_expert")
      add(n, {e}, ArgRole::data, i64);
    else if (StringRef(n).starts_with("saved."))
      add(n, savedShape(n), ArgRole::data, f32);
    else
      add(n,
          cast<RankedTensorType>(
              argTypes[argOf[StringRef(n).drop_back(strlen(".grad"))]])
              .getShape(),
          ArgRole::grad, f32);
  }
  unsigned countArg = argTypes.size();
  argTypes.push_back(i64);
  argAttrs.push_back(b.getDictionaryAttr(
      {b.getNamedAttr(MuirDialect::NameAttrHelper::getNameStr(),
                      b.getStringAttr("tokens")),
       b.getNamedAttr(MuirDialect::RoleAttrHelper::getNameStr(),
                      roleAttr(b, ArgRole::tokens))}));

  SmallVector<Type> resultTypes;
  SmallVector<DictionaryAttr> resultAttrs;
  for (const std::string &n : outputs) {
    resultTypes.push_back(argTypes[argOf[n]]);
    resultAttrs.push_back(b.getDictionaryAttr({b.getNamedAttr(
        MuirDialect::UpdatesAttrHelper::getNameStr(), b.getStringAttr(n))}));
  }
  auto func = func::FuncOp::create(b, lloc, backward ? "moe_backward"
                                                     : "moe_forward",
                                   b.getFunctionType(argTypes, resultTypes));
  func.setAllArgAttrs(argAttrs);
  func.setAllResultAttrs(resultAttrs);
  Block *body = func.addEntryBlock();
  b.setInsertionPointToStart(body);
  auto arg = [&](StringRef n) { return body->getArgument(argOf[n]); };

  SmallVector<Value> results = buildLayerPass(
      b, lloc, d, l, epAxis, ep, body->getArgument(countArg), arg, pass);
  func::ReturnOp::create(b, lloc, results);
  return module;
}
