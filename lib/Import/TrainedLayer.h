//===- TrainedLayer.h - an MoE layer's passes as muir IR --------*- C++ -*-===//
//
// Private to lib/Import: what the step builder (BuildIR.cpp, a trained
// layer inside an optimizer step) and the layer builder (BuildLayer.cpp, a
// layer's pass a model calls) share: the grid, role and location helpers,
// and TrainedLayer, which emits one MoE layer's per-rank forward and
// backward (TrainedLayer.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_LIB_IMPORT_TRAINEDLAYER_H
#define MUIR_LIB_IMPORT_TRAINEDLAYER_H

#include "muir/Import/Description.h"

#include "mlir/IR/Builders.h"

#include <type_traits>

namespace mlir::muir::desc {

/// A grid; `folds`: the run's grid whose ranks it numbers in other axes.
inline muir::GridOp buildGrid(OpBuilder &b, Location loc, StringRef name,
                              const std::vector<GridAxis> &axes,
                              StringRef folds = "") {
  SmallVector<StringRef> names;
  SmallVector<int64_t> sizes;
  for (const GridAxis &a : axes) {
    names.push_back(a.name);
    sizes.push_back(a.size);
  }
  return muir::GridOp::create(
      b, loc, b.getStringAttr(name), b.getStrArrayAttr(names),
      b.getDenseI64ArrayAttr(sizes),
      folds.empty() ? FlatSymbolRefAttr()
                    : b.getAttr<FlatSymbolRefAttr>(b.getStringAttr(folds)),
      StringAttr());
}

/// A step argument's `muir.role`.
inline Attribute roleAttr(OpBuilder &b, ArgRole role) {
  return ArgRoleAttr::get(b.getContext(), role);
}

inline Location locFor(MLIRContext &ctx, const Loc &l) {
  if (l.file.empty())
    return UnknownLoc::get(&ctx);
  return FileLineColLoc::get(&ctx, l.file, l.line, l.col);
}

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
  ArrayAttr epAxes();
  /// The ep group, the experts and the layer (dispatch, combine).
  SmallVector<NamedAttribute> onGroup();
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
      all.push_back(b.getNamedAttr("operandSegmentSizes",
                                   b.getDenseI32ArrayAttr({1, 1, acc, 0, 0})));
      if (stable)
        all.push_back(b.getNamedAttr("row_stable", b.getUnitAttr()));
      return Op::create(b, loc, types, operands, all).getOperation();
    }
    return Op::create(b, loc, types, operands, attrs).getOperation();
  }
  Value one(Operation *op) { return op->getResult(0); }

  bool sigmoid() const { return l.scoring == "sigmoid"; }
  SmallVector<NamedAttribute> scoringAttrs(bool withSelection);

  SmallVector<NamedAttribute> group() {
    return {
        b.getNamedAttr("grid", FlatSymbolRefAttr::get(b.getContext(), grid)),
        b.getNamedAttr("grid_axes", epAxes())};
  }
  /// The sum over `axes` (none: v itself).
  Value sumOver(Value v, ArrayRef<std::string> axes);
  Value gather(Value v, int64_t cols);
  /// Every rank's tokens (gathered once per layer).
  Value gathered = {};
  Value allTokens() {
    if (!gathered)
      gathered = groupSize() > 1 ? gather(x, l.hidden) : x;
    return gathered;
  }
  /// The folding's axes other than ep, in grid order (spread only).
  SmallVector<NamedAttribute> onReplicas(StringRef axisName, int64_t dim);
  /// The block of an ep stack [E / ep, ...] this rank computes (spread:
  /// its block over the replicas; otherwise the stack).
  Value mine(Value stack);
  /// A gradient of this rank's block as the ep stack's (spread: gathered
  /// over the replicas, which computed the other blocks).
  Value whole(Value block);

  struct Forward {
    /// indices/weights: the routing dispatched (after capacity drops);
    /// selected: what route chose (route_grad differentiates that).
    Value logits, selected, indices, weights, rows, counts, plan, gate, up, act,
        out, y;
    Value choices;          ///< route's counts: pairs per expert, before drops
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
  SmallVector<NamedAttribute> productAttrs(bool transposeB);

  Value gmm(Value in, Value w, Value counts, int64_t n, bool transposeB) {
    SmallVector<NamedAttribute> a = productAttrs(transposeB);
    return one(make<GroupedMatmulOp>({f32({bound(), n})}, {in, w, counts}, a));
  }

  Forward forward(Value router, Value gate, Value up, Value down,
                  const Shared *shared = nullptr) {
    Forward f = routeAndDispatch(router);
    experts(f, gate, up, down, shared);
    return f;
  }

  /// The router's logits, the routing (and capacity drops), and the
  /// dispatch of the tokens to their experts' rows.
  Forward routeAndDispatch(Value router);

  /// The SwiGLU experts on the dispatched rows, combined per token, plus
  /// the shared experts.
  void experts(Forward &f, Value gate, Value up, Value down,
               const Shared *shared);

  /// The routed experts' products on the dispatched rows: gate, up, their
  /// SwiGLU and down (the same ops as the forward's, so the same bits).
  void expertProducts(Forward &f, Value gate, Value up, Value down);
  /// The shared experts' gate and up products on their tokens.
  void sharedProducts(Forward &f, const Shared &shared);

  struct Grads {
    Value router, gate, up, down;
    Value sGate, sUp, sDown; ///< shared experts (when given)
  };

  /// `gate`, `up` and `down`: this rank's ep stacks (spread: the block it
  /// computes is taken here, and their gradients are the whole stacks').
  Grads lossAndGrads(Value router, Value gate, Value up, Value down,
                     Value target, int64_t slot,
                     const Shared *shared = nullptr);

  /// A called layer's backward pass from its output gradient `dy`, given
  /// the forward's routing and dispatch (`f`, recomputed) and its kept
  /// products (f.gate, f.up, f.out and the shared f.sGate, f.sUp): the
  /// input's gradient and the gradients of the router, this rank's
  /// experts and the shared experts, all from this rank's tokens (and, for
  /// its experts, the tokens every rank of the ep group sent them).
  Grads layerBackward(Forward &f, Value dy, Value router, Value gate, Value up,
                      Value down, const Shared *shared, Value &dx);

  /// The routed experts' backward, shared by both passes: the rows'
  /// gradient is dy dispatched with the weights; the weights' gradient
  /// (`weights`), the three stacks' (into g) and the gate and up rows'
  /// gradients.
  struct ExpertGrads {
    Value weights, gate, up;
  };
  ExpertGrads expertsBackward(Forward &f, Value dy, Value down, Grads &g);

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
                                         const Shared &shared, Grads &g);
};

} // namespace mlir::muir::desc

#endif // MUIR_LIB_IMPORT_TRAINEDLAYER_H
