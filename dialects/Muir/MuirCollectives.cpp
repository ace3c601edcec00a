//===- MuirCollectives.cpp - collectives and expert dispatch of muir ------===//
//
// The collectives' and the MoE dispatch/combine ops' checks against their
// grid (verifySymbolUses: axes, group sizes, resized dimensions), and the
// dialect's folders and canonicalization patterns (a collective over a
// group of one rank, a transpose of a transpose).
//
//===----------------------------------------------------------------------===//
#include "Muir/MuirDialect.h"
#include "Muir/MuirOpsInternal.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::muir;
using namespace mlir::muir::opcheck;

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

/// Looks up the grid and checks the axis names; on success returns the grid.
/// `allowEmpty`: no axes name this rank alone (a group of one).
static FailureOr<GridOp> verifyGridAxes(Operation *op, FlatSymbolRefAttr ref,
                                        ArrayAttr axes,
                                        SymbolTableCollection &symbols,
                                        bool allowEmpty = false) {
  auto grid = symbols.lookupNearestSymbolFrom<GridOp>(op, ref.getAttr());
  if (!grid)
    return op->emitOpError("expected '")
           << ref.getValue() << "' to name a muir.grid";
  if (axes.empty() && !allowEmpty)
    return op->emitOpError("expected at least one grid axis");
  llvm::StringSet<> seen;
  for (Attribute a : axes) {
    StringRef name = cast<StringAttr>(a).getValue();
    if (grid.getAxisIndex(name) < 0) {
      std::string known;
      for (Attribute k : grid.getAxes())
        known += (known.empty() ? "" : ", ") +
                 cast<StringAttr>(k).getValue().str();
      return op->emitOpError("grid '")
             << ref.getValue() << "' has no axis '" << name
             << "' (axes: " << known << ")";
    }
    if (!seen.insert(name).second)
      return op->emitOpError("grid axis '") << name << "' appears twice";
  }
  return grid;
}

static LogicalResult verifyTensorAxis(Operation *op, StringRef what,
                                      int64_t axis, RankedTensorType t) {
  if (axis < 0 || axis >= t.getRank())
    return op->emitOpError("expected ")
           << what << " in [0, " << t.getRank() << "), got " << axis;
  return success();
}

/// Result dims equal input dims except at `axis`, where it must be
/// `expected`; `how` explains the expected size.
static LogicalResult verifyResizedDim(Operation *op, RankedTensorType in,
                                      RankedTensorType out, int64_t axis,
                                      int64_t expected, const Twine &how) {
  if (in.getRank() != out.getRank())
    return op->emitOpError("expected result rank ")
           << in.getRank() << ", got " << out.getRank();
  for (int64_t d = 0; d < in.getRank(); ++d) {
    int64_t want = d == axis ? expected : in.getDimSize(d);
    if (out.getDimSize(d) != want) {
      auto diag = op->emitOpError("expected result dim ")
                  << d << " to be " << want;
      if (d == axis)
        diag << " (" << how << ")";
      return diag << ", got " << out.getDimSize(d);
    }
  }
  return success();
}

#define MUIR_COLLECTIVE_GRID(OP)                                               \
  GridOp OP::getGridOp() {                                                     \
    return SymbolTable::lookupNearestSymbolFrom<GridOp>(*this,                 \
                                                        getGridAttr());        \
  }                                                                            \
  int64_t OP::getGroupSize() {                                                 \
    return getGridOp().getGroupSize(getGridAxes());                            \
  }
MUIR_COLLECTIVE_GRID(AllReduceOp)
MUIR_COLLECTIVE_GRID(SymmetricAllReduceOp)
MUIR_COLLECTIVE_GRID(AllGatherOp)
MUIR_COLLECTIVE_GRID(AllGatherVOp)
MUIR_COLLECTIVE_GRID(ReduceScatterOp)
MUIR_COLLECTIVE_GRID(AllToAllOp)
MUIR_COLLECTIVE_GRID(AllToAllVOp)
MUIR_COLLECTIVE_GRID(BroadcastOp)
MUIR_COLLECTIVE_GRID(AllSliceOp)
MUIR_COLLECTIVE_GRID(GroupRankOp)
MUIR_COLLECTIVE_GRID(SyrkAllReduceOp)
MUIR_COLLECTIVE_GRID(DispatchOp)
MUIR_COLLECTIVE_GRID(CombineOp)
MUIR_COLLECTIVE_GRID(CombineWeightsGradOp)
#undef MUIR_COLLECTIVE_GRID

LogicalResult AllReduceOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyGridAxes(*this, getGridAttr(), getGridAxes(), symbols);
}

LogicalResult
SymmetricAllReduceOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyGridAxes(*this, getGridAttr(), getGridAxes(), symbols);
}

LogicalResult AllGatherOp::verifySymbolUses(SymbolTableCollection &symbols) {
  auto grid = verifyGridAxes(*this, getGridAttr(), getGridAxes(), symbols);
  if (failed(grid))
    return failure();
  auto in = getInput().getType();
  int64_t axis = getGatherAxisAttr().getInt();
  if (failed(verifyTensorAxis(*this, "gather_axis", axis, in)))
    return failure();
  int64_t g = grid->getGroupSize(getGridAxes());
  return verifyResizedDim(*this, in, getResult().getType(), axis,
                          in.getDimSize(axis) * g,
                          Twine(in.getDimSize(axis)) + " x group size " +
                              Twine(g));
}

LogicalResult AllGatherVOp::verifySymbolUses(SymbolTableCollection &symbols) {
  auto grid = verifyGridAxes(*this, getGridAttr(), getGridAxes(), symbols);
  if (failed(grid))
    return failure();
  auto in = getInput().getType();
  int64_t axis = getGatherAxisAttr().getInt();
  if (failed(verifyTensorAxis(*this, "gather_axis", axis, in)))
    return failure();
  int64_t g = grid->getGroupSize(getGridAxes());
  ArrayRef<int64_t> sizes = getSizes();
  if (static_cast<int64_t>(sizes.size()) != g)
    return emitOpError("expected one size per group rank (")
           << g << "), got " << sizes.size();
  int64_t total = 0, largest = 0;
  for (int64_t s : sizes) {
    if (s < 0)
      return emitOpError("expected sizes >= 0, got ") << s;
    total += s;
    largest = std::max(largest, s);
  }
  if (in.getDimSize(axis) != largest)
    return emitOpError("expected input dim ")
           << axis << " to be " << largest
           << " (the largest size; shards are padded to it), got "
           << in.getDimSize(axis);
  return verifyResizedDim(*this, in, getResult().getType(), axis, total,
                          "sum of sizes");
}

/// Shared by the ops whose result keeps 1/g of dimension `axis` (the
/// group's slice): the dimension must divide and the result must match.
static LogicalResult verifySlicedDim(Operation *op, FailureOr<GridOp> grid,
                                     ArrayAttr axes, StringRef what,
                                     int64_t axis, RankedTensorType in,
                                     RankedTensorType out) {
  if (failed(grid) || failed(verifyTensorAxis(op, what, axis, in)))
    return failure();
  int64_t g = grid->getGroupSize(axes);
  if (in.getDimSize(axis) % g != 0)
    return op->emitOpError("expected input dim ")
           << axis << " (" << in.getDimSize(axis)
           << ") to be divisible by the group size " << g;
  return verifyResizedDim(op, in, out, axis, in.getDimSize(axis) / g,
                          Twine(in.getDimSize(axis)) + " / group size " +
                              Twine(g));
}

LogicalResult
ReduceScatterOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifySlicedDim(
      *this, verifyGridAxes(*this, getGridAttr(), getGridAxes(), symbols),
      getGridAxes(), "scatter_axis", getScatterAxisAttr().getInt(),
      getInput().getType(), getResult().getType());
}

LogicalResult AllToAllOp::verifySymbolUses(SymbolTableCollection &symbols) {
  auto grid = verifyGridAxes(*this, getGridAttr(), getGridAxes(), symbols);
  if (failed(grid))
    return failure();
  auto in = getInput().getType(), out = getResult().getType();
  int64_t split = getSplitAxisAttr().getInt(),
          concat = getConcatAxisAttr().getInt();
  if (failed(verifyTensorAxis(*this, "split_axis", split, in)) ||
      failed(verifyTensorAxis(*this, "concat_axis", concat, in)))
    return failure();
  int64_t g = grid->getGroupSize(getGridAxes());
  if (in.getDimSize(split) % g != 0)
    return emitOpError("expected input dim ")
           << split << " (" << in.getDimSize(split)
           << ") to be divisible by the group size " << g;
  SmallVector<int64_t> expected(in.getShape());
  expected[split] /= g;
  expected[concat] *= g;
  if (out.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("expected result shape ")
           << shapeStr(expected) << " (split dim " << split
           << " by, concat dim " << concat << " times, group size " << g
           << "), got " << shapeStr(out.getShape());
  return success();
}

LogicalResult AllToAllVOp::verifySymbolUses(SymbolTableCollection &symbols) {
  auto grid = verifyGridAxes(*this, getGridAttr(), getGridAxes(), symbols);
  if (failed(grid))
    return failure();
  int64_t g = grid->getGroupSize(getGridAxes());
  for (auto [v, name] : {std::pair<Value, StringRef>{getSendCounts(), "send"},
                         {getRecvCounts(), "recv"}}) {
    auto t = cast<RankedTensorType>(v.getType());
    if (t.getRank() != 1 || t.getDimSize(0) != g)
      return emitOpError("expected ")
             << name << "_counts of shape " << g << " (the group size), got "
             << shapeStr(t.getShape());
  }
  auto in = getInput().getType(), out = getResult().getType();
  if (in.getRank() < 1 || out.getRank() < 1)
    return emitOpError("expected input and result with rows (rank >= 1), "
                       "got ranks ")
           << in.getRank() << " and " << out.getRank();
  if (in.getRank() != out.getRank() ||
      in.getShape().drop_front() != out.getShape().drop_front())
    return emitOpError("expected result rows of shape ")
           << shapeStr(in.getShape().drop_front()) << ", got "
           << shapeStr(out.getShape().drop_front());
  return success();
}

LogicalResult BroadcastOp::verifySymbolUses(SymbolTableCollection &symbols) {
  auto grid = verifyGridAxes(*this, getGridAttr(), getGridAxes(), symbols);
  if (failed(grid))
    return failure();
  int64_t g = grid->getGroupSize(getGridAxes());
  int64_t root = getRootAttr().getInt();
  if (root < 0 || root >= g)
    return emitOpError("expected root in [0, ")
           << g << ") (the group size), got " << root;
  return success();
}

LogicalResult
SyrkAllReduceOp::verifySymbolUses(SymbolTableCollection &symbols) {
  if (failed(verifyGridAxes(*this, getGridAttr(), getGridAxes(), symbols)))
    return failure();
  auto at = getA().getType(), rt = getResult().getType();
  if (at.getRank() < 2 || at.getRank() > 3 || rt.getRank() != at.getRank())
    return emitOpError("expected a matrix or a stack and a result of its "
                       "rank, got ranks ")
           << at.getRank() << " and " << rt.getRank();
  int64_t r = at.getRank();
  int64_t s = getTranspose() ? at.getDimSize(r - 1) : at.getDimSize(r - 2);
  if (rt.getDimSize(r - 1) != s || rt.getDimSize(r - 2) != s ||
      (r == 3 && rt.getDimSize(0) != at.getDimSize(0)))
    return emitOpError("expected result ")
           << (r == 3 ? std::to_string(at.getDimSize(0)) + "x" : "") << s
           << "x" << s << ", got " << rt;
  if (getChunkRowsAttr().getInt() < 0)
    return emitOpError("expected chunk_rows >= 0, got ")
           << getChunkRowsAttr().getInt();
  return success();
}

//===----------------------------------------------------------------------===//
// Expert dispatch and combine
//===----------------------------------------------------------------------===//

namespace {
/// The sizes every dispatch/combine op agrees on.
struct MoeShape {
  int64_t g, experts, tokens, k, hidden, bound;
};
} // namespace

/// Checks the group, the experts' split over it and the routing; fills
/// `shape` (bound and hidden from `rows`, a [R, H] tensor).
static LogicalResult verifyMoe(Operation *op, FailureOr<GridOp> grid,
                               ArrayAttr axes, IntegerAttr numExperts,
                               RankedTensorType indices,
                               RankedTensorType rows, MoeShape &shape) {
  if (failed(grid))
    return failure();
  shape.g = grid->getGroupSize(axes);
  shape.experts = numExperts.getInt();
  if (shape.experts < 1)
    return op->emitOpError("expected num_experts >= 1, got ")
           << shape.experts;
  if (shape.experts % shape.g != 0)
    return op->emitOpError("")
           << shape.experts << " experts do not divide evenly over the "
           << shape.g << " ranks of the group (experts not divisible by ep)";
  if (indices.getRank() != 2)
    return op->emitOpError("expected indices [tokens, top_k], got ")
           << indices;
  shape.tokens = indices.getDimSize(0);
  shape.k = indices.getDimSize(1);
  if (shape.k < 1 || shape.k > shape.experts)
    return op->emitOpError("top_k ")
           << shape.k << " must be in [1, " << shape.experts
           << "] (the number of experts)";
  if (rows.getRank() != 2)
    return op->emitOpError("expected expert rows [bound, hidden], got ")
           << rows;
  shape.bound = rows.getDimSize(0);
  shape.hidden = rows.getDimSize(1);
  return success();
}

static int64_t planSize(const MoeShape &s) { return 2 * s.bound + 4 * s.g; }

/// What dispatch, combine and combine_weights_grad share: the group, the
/// experts' split, the routing, and the plan's size; `rows` is the op's
/// expert-major [bound, hidden] tensor.
template <typename OpT>
static LogicalResult verifyMoeOp(OpT op, RankedTensorType rows,
                                 SymbolTableCollection &symbols, MoeShape &s) {
  if (failed(verifyMoe(op, verifyGridAxes(op, op.getGridAttr(),
                                          op.getGridAxes(), symbols,
                                          /*allowEmpty=*/true),
                       op.getGridAxes(), op.getNumExpertsAttr(),
                       op.getIndices().getType(), rows, s)))
    return failure();
  return expectType(op, "plan (2 * bound + 4 * group size)",
                    op.getPlan().getType(), {planSize(s)},
                    IntegerType::get(op.getContext(), 64));
}

LogicalResult DispatchOp::verifySymbolUses(SymbolTableCollection &symbols) {
  MoeShape s;
  Type f32 = Float32Type::get(getContext());
  Type i64 = IntegerType::get(getContext(), 64);
  if (failed(verifyMoeOp(*this, getResult().getType(), symbols, s)) ||
      failed(expectType(*this, "input", getInput().getType(),
                        {s.tokens, s.hidden}, f32)) ||
      (getWeights() && failed(expectType(*this, "weights",
                                         getWeights().getType(),
                                         {s.tokens, s.k}, f32))) ||
      failed(expectType(*this, "counts (one per local expert)",
                        getCounts().getType(), {s.experts / s.g}, i64)))
    return failure();
  return success();
}

LogicalResult CombineOp::verifySymbolUses(SymbolTableCollection &symbols) {
  MoeShape s;
  Type f32 = Float32Type::get(getContext());
  if (failed(verifyMoeOp(*this, getInput().getType(), symbols, s)) ||
      (getWeights() && failed(expectType(*this, "weights",
                                         getWeights().getType(),
                                         {s.tokens, s.k}, f32))) ||
      failed(expectType(*this, "result", getResult().getType(),
                        {s.tokens, s.hidden}, f32)))
    return failure();
  return success();
}

LogicalResult
CombineWeightsGradOp::verifySymbolUses(SymbolTableCollection &symbols) {
  MoeShape s;
  Type f32 = Float32Type::get(getContext());
  if (failed(verifyMoeOp(*this, getInput().getType(), symbols, s)) ||
      failed(expectType(*this, "grad", getGrad().getType(),
                        {s.tokens, s.hidden}, f32)) ||
      failed(expectType(*this, "result", getResult().getType(),
                        {s.tokens, s.k}, f32)))
    return failure();
  return success();
}

LogicalResult GroupRankOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyGridAxes(*this, getGridAttr(), getGridAxes(), symbols);
}

LogicalResult AllSliceOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifySlicedDim(
      *this, verifyGridAxes(*this, getGridAttr(), getGridAxes(), symbols),
      getGridAxes(), "slice_axis", getSliceAxisAttr().getInt(),
      getInput().getType(), getResult().getType());
}

//===----------------------------------------------------------------------===//
// Folders and canonicalization patterns
//===----------------------------------------------------------------------===//

/// The size of the group a collective runs over, or 0 when its grid or one
/// of its axes is not found (an op not yet in a module, or not verified):
/// nothing folds then.
template <typename Op>
static int64_t groupSizeOf(Op op) {
  auto grid = SymbolTable::lookupNearestSymbolFrom<GridOp>(op.getOperation(),
                                                           op.getGridAttr());
  if (!grid)
    return 0;
  for (auto axis : op.getGridAxes().template getAsRange<StringAttr>())
    if (grid.getAxisIndex(axis.getValue()) < 0)
      return 0;
  return grid.getGroupSize(op.getGridAxes());
}

/// A collective over a group of one rank moves nothing: every reduction of
/// one value is the value, a gather or slice of one block the tensor, an
/// exchange with oneself the input.
template <typename Op>
static OpFoldResult foldGroupOfOne(Op op) {
  if (groupSizeOf(op) != 1 ||
      op.getInput().getType() != op.getResult().getType())
    return {};
  return op.getInput();
}

OpFoldResult AllReduceOp::fold(FoldAdaptor) { return foldGroupOfOne(*this); }
OpFoldResult SymmetricAllReduceOp::fold(FoldAdaptor) {
  return foldGroupOfOne(*this);
}
OpFoldResult AllGatherOp::fold(FoldAdaptor) { return foldGroupOfOne(*this); }
OpFoldResult ReduceScatterOp::fold(FoldAdaptor) {
  return foldGroupOfOne(*this);
}
OpFoldResult AllToAllOp::fold(FoldAdaptor) { return foldGroupOfOne(*this); }
OpFoldResult BroadcastOp::fold(FoldAdaptor) { return foldGroupOfOne(*this); }
OpFoldResult AllSliceOp::fold(FoldAdaptor) { return foldGroupOfOne(*this); }

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  if (auto inner = getInput().getDefiningOp<TransposeOp>())
    return inner.getInput();
  return {};
}

namespace {
/// The only rank of a group of one is rank 0.
struct GroupRankOfOne : OpRewritePattern<GroupRankOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GroupRankOp op,
                                PatternRewriter &rewriter) const override {
    if (groupSizeOf(op) != 1)
      return failure();
    Value zero = arith::ConstantIndexOp::create(rewriter, op.getLoc(), 0);
    rewriter.replaceOp(op, zero);
    return success();
  }
};

/// The sum over a group of one rank of alpha A A^T is the rank's own SYRK.
struct SyrkAllReduceOfOne : OpRewritePattern<SyrkAllReduceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SyrkAllReduceOp op,
                                PatternRewriter &rewriter) const override {
    if (groupSizeOf(op) != 1)
      return failure();
    Value syrk = SyrkOp::create(rewriter, op.getLoc(), op.getType(), op.getA(),
                                /*acc=*/Value(), op.getAlphaAttr(),
                                rewriter.getF64FloatAttr(0.0),
                                op.getTransposeAttr());
    rewriter.replaceOp(op, syrk);
    return success();
  }
};
} // namespace

void GroupRankOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                              MLIRContext *context) {
  patterns.add<GroupRankOfOne>(context);
}

void SyrkAllReduceOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                                  MLIRContext *context) {
  patterns.add<SyrkAllReduceOfOne>(context);
}
