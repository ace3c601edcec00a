//===- BuildLayer.cpp - an MoE layer as a pass a model calls --------------===//
//
// desc::buildLayerModule: one `moe` entry of a description as the function
// of one pass (forward, forward-only, backward, recompute) that a model
// calls on its own activations, per rank, for at most tokens_per_rank
// tokens (docs/step-library.md).
//
//===----------------------------------------------------------------------===//
#include "TrainedLayer.h"

using namespace mlir;
using namespace mlir::muir;
using namespace mlir::muir::desc;

/// The MoE layer `name` of the description and its ep axis (its size, 1
/// without one), checked for a pass of its own; null once an error is
/// emitted.
static const MoELayer *findLayer(MLIRContext &ctx, const Description &d,
                                 StringRef name, std::string &epAxis,
                                 int64_t &ep) {
  Location loc = locFor(ctx, d.loc);
  auto it =
      llvm::find_if(d.moe, [&](const MoELayer &l) { return l.name == name; });
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
  TrainedLayer layer{b,  lloc, l,        "world", epAxis,         ep,
                     {}, ep,   arg("x"), count,   /*stable=*/true};
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
    TrainedLayer::Forward fw =
        layer.forward(arg("router"), arg("gate_proj"), arg("up_proj"),
                      arg("down_proj"), shared ? &sw : nullptr);
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
  auto add = [&](StringRef n, ArrayRef<int64_t> shape, ArgRole role, Type et) {
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
  auto func =
      func::FuncOp::create(b, lloc, backward ? "moe_backward" : "moe_forward",
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
