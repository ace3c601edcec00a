//===- TrainedLayer.cpp - an MoE layer's passes as muir IR ----------------===//
//
// See TrainedLayer.h.
//
//===----------------------------------------------------------------------===//
#include "TrainedLayer.h"

using namespace mlir;
using namespace mlir::muir;
using namespace mlir::muir::desc;

ArrayAttr TrainedLayer::epAxes() {
  if (spread()) {
    SmallVector<StringRef> names(spreadAxes.begin(), spreadAxes.end());
    return b.getStrArrayAttr(names);
  }
  return axis.empty() ? b.getStrArrayAttr({}) : b.getStrArrayAttr({axis});
}

SmallVector<NamedAttribute> TrainedLayer::onGroup() {
  SmallVector<NamedAttribute> a = group();
  a.push_back(b.getNamedAttr("num_experts", b.getI64IntegerAttr(l.experts)));
  a.push_back(b.getNamedAttr("layer", b.getStringAttr(l.name)));
  return a;
}

SmallVector<NamedAttribute> TrainedLayer::scoringAttrs(bool withSelection) {
  SmallVector<NamedAttribute> a;
  if (withSelection) {
    a.push_back(b.getNamedAttr("top_k", b.getI64IntegerAttr(l.topK)));
    a.push_back(b.getNamedAttr("n_group", b.getI64IntegerAttr(l.groups)));
    a.push_back(
        b.getNamedAttr("topk_group", b.getI64IntegerAttr(l.groupsPerToken)));
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

Value TrainedLayer::sumOver(Value v, ArrayRef<std::string> axes) {
  if (axes.empty())
    return v;
  SmallVector<StringRef> names(axes.begin(), axes.end());
  return one(make<AllReduceOp>(
      {v.getType()}, {v},
      {b.getNamedAttr("grid", FlatSymbolRefAttr::get(b.getContext(), grid)),
       b.getNamedAttr("grid_axes", b.getStrArrayAttr(names))}));
}

Value TrainedLayer::gather(Value v, int64_t cols) {
  SmallVector<NamedAttribute> a = group();
  a.push_back(b.getNamedAttr("gather_axis", b.getI64IntegerAttr(0)));
  return one(make<AllGatherOp>({f32({tokens() * groupSize(), cols})}, {v}, a));
}

SmallVector<NamedAttribute> TrainedLayer::onReplicas(StringRef axisName,
                                                     int64_t dim) {
  SmallVector<StringRef> names;
  for (const std::string &a : spreadAxes)
    if (a != axis)
      names.push_back(a);
  return {b.getNamedAttr("grid", FlatSymbolRefAttr::get(b.getContext(), grid)),
          b.getNamedAttr("grid_axes", b.getStrArrayAttr(names)),
          b.getNamedAttr(axisName, b.getI64IntegerAttr(dim))};
}

Value TrainedLayer::mine(Value stack) {
  if (!spread())
    return stack;
  auto type = cast<RankedTensorType>(stack.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape[0] = local();
  return one(
      make<AllSliceOp>({f32(shape)}, {stack}, onReplicas("slice_axis", 0)));
}

Value TrainedLayer::whole(Value block) {
  if (!spread())
    return block;
  auto type = cast<RankedTensorType>(block.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape[0] = local() * ranks / ep;
  return one(
      make<AllGatherOp>({f32(shape)}, {block}, onReplicas("gather_axis", 0)));
}

SmallVector<NamedAttribute> TrainedLayer::productAttrs(bool transposeB) {
  SmallVector<NamedAttribute> a;
  if (transposeB)
    a.push_back(b.getNamedAttr("transpose_b", b.getUnitAttr()));
  if (l.bf16ExpertProducts)
    a.push_back(b.getNamedAttr("bf16_operands", b.getUnitAttr()));
  return a;
}

TrainedLayer::Forward TrainedLayer::routeAndDispatch(Value router) {
  Forward f;
  int64_t t = tokens(), e = l.experts, k = l.topK, h = l.hidden;
  // The router's logits of every rank's tokens, then this rank's rows:
  // one product of the same shape for any ep, so the same bits (BLAS may
  // round a product's entries differently for another number of rows).
  if (stable) {
    f.logits =
        one(make<MatmulOp>({f32({t, e})}, {x, router},
                           {b.getNamedAttr("transpose_b", b.getUnitAttr())}));
  } else {
    f.logits =
        one(make<MatmulOp>({f32({t * groupSize(), e})}, {allTokens(), router},
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
        b.getNamedAttr("capacity_factor", b.getF64FloatAttr(l.capacityFactor)),
        b.getNamedAttr(
            "policy",
            DropPolicyAttr::get(b.getContext(), l.dropPolicy == "position"
                                                    ? DropPolicy::position
                                                    : DropPolicy::weight))};
    if (l.capacityTokens > 0)
      a.push_back(b.getNamedAttr("group_tokens",
                                 b.getI64IntegerAttr(l.capacityTokens)));
    Operation *cap = make<CapacityOp>({i64({t, k}), f32({t, k}), i64({e})},
                                      {f.indices, f.weights}, a);
    f.indices = cap->getResult(0);
    f.weights = cap->getResult(1);
  }
  // Spread: each expert to the rank that computes it.
  if (!owners.empty())
    f.indices = one(make<RenumberOp>(
        {f.indices.getType()}, {f.indices},
        {b.getNamedAttr("map", b.getDenseI64ArrayAttr(owners))}));
  Operation *dispatch = make<DispatchOp>(
      {f32({bound(), h}), i64({local()}), i64({2 * bound() + 4 * groupSize()})},
      {x, f.indices}, onGroup());
  f.rows = dispatch->getResult(0);
  f.counts = dispatch->getResult(1);
  f.plan = dispatch->getResult(2);
  return f;
}

void TrainedLayer::experts(Forward &f, Value gate, Value up, Value down,
                           const Shared *shared) {
  int64_t t = tokens(), h = l.hidden, ff = l.expertSize;
  expertProducts(f, gate, up, down);
  f.y = one(make<CombineOp>({f32({t, h})},
                            {f.out, f.indices, f.plan, f.weights}, onGroup()));
  // Shared experts: one SwiGLU MLP of S * expert_size on every token of
  // this rank (layout-invariant: of the group, this rank's rows kept),
  // added to the routed output.
  if (shared) {
    int64_t sf = l.sharedExperts * ff, rows = sharedRows();
    auto tb = b.getNamedAttr("transpose_b", b.getUnitAttr());
    sharedProducts(f, *shared);
    f.sAct = one(make<SwigluOp>({f32({rows, sf})}, {f.sGate, f.sUp}));
    Value s =
        one(make<MatmulOp>({f32({rows, h})}, {f.sAct, shared->down}, {tb}));
    if (rows != t) {
      SmallVector<NamedAttribute> a = group();
      a.push_back(b.getNamedAttr("slice_axis", b.getI64IntegerAttr(0)));
      s = one(make<AllSliceOp>({f32({t, h})}, {s}, a));
    }
    f.y = one(make<AddOp>({f32({t, h})}, {f.y, s}));
  }
}

void TrainedLayer::expertProducts(Forward &f, Value gate, Value up,
                                  Value down) {
  int64_t h = l.hidden, ff = l.expertSize;
  f.gate = gmm(f.rows, gate, f.counts, ff, true);
  f.up = gmm(f.rows, up, f.counts, ff, true);
  f.act = one(make<SwigluOp>({f32({bound(), ff})}, {f.gate, f.up}));
  f.out = gmm(f.act, down, f.counts, h, true);
}

void TrainedLayer::sharedProducts(Forward &f, const Shared &shared) {
  int64_t sf = l.sharedExperts * l.expertSize, rows = sharedRows();
  auto tb = b.getNamedAttr("transpose_b", b.getUnitAttr());
  Value in = sharedTokens();
  f.sGate = one(make<MatmulOp>({f32({rows, sf})}, {in, shared.gate}, {tb}));
  f.sUp = one(make<MatmulOp>({f32({rows, sf})}, {in, shared.up}, {tb}));
}

TrainedLayer::Grads TrainedLayer::lossAndGrads(Value router, Value gate,
                                               Value up, Value down,
                                               Value target, int64_t slot,
                                               const Shared *shared) {
  gate = mine(gate);
  up = mine(up);
  down = mine(down);
  Forward f = forward(router, gate, up, down, shared);
  int64_t t = tokens(), e = l.experts, h = l.hidden;
  // Loss: the mean over all ranks' tokens of half the squared error.
  Operation *mse = make<MseLossOp>(
      {f32({1}), f32({t, h})}, {f.y, target},
      {b.getNamedAttr(
          "scale", b.getF64FloatAttr(1.0 / static_cast<double>(t * ranks)))});
  Value loss = mse->getResult(0), dy = mse->getResult(1);
  SmallVector<std::string> all(replicas.begin(), replicas.end());
  if (ep > 1)
    all.push_back(axis.str());
  loss = sumOver(loss, all);
  ProbeOp::create(b, loc, loss, b.getStringAttr("loss " + l.name),
                  b.getI64IntegerAttr(slot));
  Grads g;
  ExpertGrads eg = expertsBackward(f, dy, down, g);
  Value dLogits = one(make<RouteGradOp>(
      {f32({t, e})}, {f.logits, f.selected, eg.weights}, scoringAttrs(false)));
  // The router's gradient over every rank's tokens, as one product of the
  // gathered tokens and logit gradients: the same arithmetic for any ep.
  Value dls = groupSize() > 1 ? gather(dLogits, e) : dLogits;
  g.router =
      one(make<MatmulOp>({f32({e, h})}, {dls, allTokens()},
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

TrainedLayer::Grads TrainedLayer::layerBackward(Forward &f, Value dy,
                                                Value router, Value gate,
                                                Value up, Value down,
                                                const Shared *shared,
                                                Value &dx) {
  int64_t t = tokens(), e = l.experts, h = l.hidden, ff = l.expertSize;
  auto ta = b.getNamedAttr("transpose_a", b.getUnitAttr());
  if (!f.act)
    f.act = one(make<SwigluOp>({f32({bound(), ff})}, {f.gate, f.up}));
  Grads g;
  ExpertGrads eg = expertsBackward(f, dy, down, g);
  // The rows' gradient (through gate and up), home to their tokens:
  // combine without weights is dispatch's transpose.
  Value dRows = one(
      make<AddOp>({f32({bound(), h})}, {gmm(eg.gate, gate, f.counts, h, false),
                                        gmm(eg.up, up, f.counts, h, false)}));
  dx = one(
      make<CombineOp>({f32({t, h})}, {dRows, f.indices, f.plan}, onGroup()));
  // Through the router: this rank's logits and tokens.
  Value dLogits = one(make<RouteGradOp>(
      {f32({t, e})}, {f.logits, f.selected, eg.weights}, scoringAttrs(false)));
  g.router = one(make<MatmulOp>({f32({e, h})}, {dLogits, x}, {ta}));
  dx = one(
      make<AddOp>({f32({t, h})},
                  {dx, one(make<MatmulOp>({f32({t, h})}, {dLogits, router}))}));
  if (shared) {
    int64_t sf = l.sharedExperts * ff;
    Value sAct = one(make<SwigluOp>({f32({t, sf})}, {f.sGate, f.sUp}));
    auto [dsGate, dsUp] = sharedBackward(f, dy, sAct, *shared, g);
    Value dxs = one(
        make<AddOp>({f32({t, h})},
                    {one(make<MatmulOp>({f32({t, h})}, {dsGate, shared->gate})),
                     one(make<MatmulOp>({f32({t, h})}, {dsUp, shared->up}))}));
    dx = one(make<AddOp>({f32({t, h})}, {dx, dxs}));
  }
  return g;
}

TrainedLayer::ExpertGrads TrainedLayer::expertsBackward(Forward &f, Value dy,
                                                        Value down, Grads &g) {
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
    a.push_back(b.getNamedAttr(MuirDialect::RecomputedAttrHelper::getNameStr(),
                               b.getUnitAttr()));
    rows = make<DispatchOp>({f32({bound(), h}), i64({local()}),
                             i64({2 * bound() + 4 * groupSize()})},
                            {x, f.indices}, a)
               ->getResult(0);
  }
  g.gate = wgrad(rows, eg.gate, {local(), ff, h});
  g.up = wgrad(rows, eg.up, {local(), ff, h});
  return eg;
}

std::pair<Value, Value> TrainedLayer::sharedBackward(Forward &f, Value dy,
                                                     Value sAct,
                                                     const Shared &shared,
                                                     Grads &g) {
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
  g.sGate = one(make<MatmulOp>({f32({sf, h})}, {ssg->getResult(0), in}, {ta}));
  g.sUp = one(make<MatmulOp>({f32({sf, h})}, {ssg->getResult(1), in}, {ta}));
  return {ssg->getResult(0), ssg->getResult(1)};
}
