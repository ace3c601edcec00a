//===- Distribute.cpp - the per-rank program of a sharded step ------------===//
//
// Turns a step written with global shapes and `muir.shards` annotations into
// the program one rank runs: every sharded tensor takes its local shape (and
// a `muir.split` that tells muir-run how whole tensors map onto ranks),
// element-wise optimizer math stays local, and Newton-Schulz on a matrix
// split over tensor- or data-parallel axes runs in one of three modes:
//  - duplicated: the momentum update's shards are all-gathered, every rank
//    of the group orthogonalises the whole matrix and keeps its own block;
//  - distributed: the squared norm and every step's Gram matrix over the
//    unsplit dimension are all-reduced, the rest stays local;
//  - blockwise (an approximation, only when asked): NS of the local block.
// `ns-mode=auto` lets the cost model (lib/Analysis/CostModel) pick the
// cheaper exact mode. Expert stacks split on their expert dimension need no
// communication (NS per local expert). Layer-wise assignment and FSDP
// de-duplication build on this pass.
//
//===----------------------------------------------------------------------===//
#include "muir/Analysis/CostModel.h"
#include "muir/Passes.h"

namespace mlir::muir {
#define GEN_PASS_DEF_MUIRDISTRIBUTE
#include "muir/Passes.h.inc"
} // namespace mlir::muir

using namespace mlir;
using namespace mlir::muir;

namespace {

struct Shard {
  std::string kind; ///< tp_column, tp_row, fsdp, expert
  std::string axis;
  int64_t dim;
  int64_t group; ///< ranks in the axis' group
};

/// Reads `muir.shards = ["kind@axis:dim", ...]` of argument `i`.
FailureOr<SmallVector<Shard>> readShards(func::FuncOp func, unsigned i,
                                         GridOp grid, bool &otherFolding) {
  SmallVector<Shard> shards;
  auto attr = func.getArgAttrOfType<ArrayAttr>(i, "muir.shards");
  if (!attr)
    return shards;
  for (Attribute a : attr) {
    StringRef text = cast<StringAttr>(a).getValue();
    auto [kind, rest] = text.split('@');
    auto [axis, dimText] = rest.split(':');
    Shard s{kind.str(), axis.str(), 0, 1};
    if (dimText.getAsInteger(10, s.dim))
      return func.emitOpError("argument ")
             << i << ": malformed shard '" << text
             << "' (expected kind@axis:dim)";
    if (grid.getAxisIndex(axis) < 0) {
      // A shard on another folding (MoE's ep of @moe): the tensor stays
      // whole on every rank until foldings are distributed.
      otherFolding = true;
      continue;
    }
    Builder b(func.getContext());
    s.group = grid.getGroupSize(b.getStrArrayAttr({axis}));
    if (s.group > 1)
      shards.push_back(s);
  }
  return shards;
}

struct DistributePass
    : public mlir::muir::impl::MuirDistributeBase<DistributePass> {
  using Base::Base;

  NSCostModel model{*MachineProfile::get("cpu")};

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto profile = MachineProfile::get(machine);
    if (!profile) {
      module.emitError("unknown machine profile '")
          << machine << "' (expected cpu or h200)";
      return signalPassFailure();
    }
    model = NSCostModel(*profile);
    auto grids = module.getOps<GridOp>();
    if (grids.empty())
      return;
    GridOp grid = *grids.begin();
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal() && failed(distribute(func, grid)))
        return signalPassFailure();
  }

  LogicalResult distribute(func::FuncOp func, GridOp grid) {
    Block &body = func.getBody().front();
    DenseMap<Value, SmallVector<Shard>> shardsOf;
    OpBuilder b(func.getContext());
    // Read and check everything before changing anything.
    bool otherFolding = false;
    SmallVector<SmallVector<Shard>> all;
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      auto shards = readShards(func, i, grid, otherFolding);
      if (failed(shards))
        return failure();
      auto type = dyn_cast<RankedTensorType>(body.getArgument(i).getType());
      for (const Shard &s : *shards)
        if (!type || s.dim >= type.getRank() ||
            type.getDimSize(s.dim) % s.group != 0)
          return func.emitOpError("argument ")
                 << i << ": shard on dim " << s.dim
                 << " does not divide its shape by " << s.axis << "="
                 << s.group;
      all.push_back(*shards);
    }
    if (otherFolding)
      func.emitWarning("shards on another folding than the run's grid "
                       "(MoE expert axes) are not distributed yet: those "
                       "tensors stay whole on every rank");
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      const SmallVector<Shard> *shards = &all[i];
      if (shards->empty())
        continue;
      BlockArgument arg = body.getArgument(i);
      auto type = cast<RankedTensorType>(arg.getType());
      SmallVector<int64_t> local(type.getShape());
      SmallVector<Attribute> split;
      for (const Shard &s : *shards) {
        local[s.dim] /= s.group;
        split.push_back(
            b.getStringAttr(s.axis + ":" + std::to_string(s.dim)));
      }
      arg.setType(RankedTensorType::get(local, type.getElementType()));
      func.setArgAttr(i, "muir.split", b.getArrayAttr(split));
      shardsOf[arg] = *shards;
    }
    if (shardsOf.empty())
      return success();

    SmallVector<Operation *> ops;
    for (Operation &op : body)
      ops.push_back(&op);
    for (Operation *op : ops) {
      if (auto adam = dyn_cast<AdamWUpdateOp>(op)) {
        // Element-wise: the shard's update is the update's shard.
        for (auto [res, operand] :
             llvm::zip(adam->getResults(), adam->getOperands()))
          res.setType(operand.getType());
        continue;
      }
      if (auto muon = dyn_cast<MuonUpdateOp>(op)) {
        if (failed(distributeMuon(muon, shardsOf)))
          return failure();
        continue;
      }
      if (isa<func::ReturnOp>(op))
        continue;
      for (Value v : op->getOperands())
        if (shardsOf.count(v))
          return op->emitOpError("cannot be distributed: it reads a "
                                 "sharded tensor");
    }

    auto ret = cast<func::ReturnOp>(body.getTerminator());
    func.setType(FunctionType::get(func.getContext(), body.getArgumentTypes(),
                                   ret.getOperandTypes()));
    return success();
  }

  /// Newton-Schulz of a matrix split on one dimension over `s`'s group,
  /// without gathering it: the squared norm and, every step, the Gram matrix
  /// over the unsplit dimension are all-reduced; the rest is local. Split
  /// rows use X <- a X + X (b G + c G G) with G = X^T X, split columns
  /// X <- a X + (b G + c G G) X with G = X X^T (the same polynomial).
  Value distributedNS(OpBuilder &b, Location loc, MuonUpdateOp op, Value u,
                      const Shard &s, FlatSymbolRefAttr gridRef) {
    auto type = cast<RankedTensorType>(u.getType());
    int64_t rank = type.getRank();
    bool rowsSplit = s.dim == rank - 2;
    Type f32 = type.getElementType();
    int64_t batch = rank == 3 ? type.getDimSize(0) : 1;
    auto ssType = RankedTensorType::get({batch}, f32);
    ArrayAttr axes = b.getStrArrayAttr({s.axis});
    Value ss = SumSquaresOp::create(b, loc, ssType, u);
    ss = AllReduceOp::create(b, loc, ssType, gridRef, axes, ss,
                             ReductionKindAttr::get(b.getContext(),
                                                    ReductionKind::sum));
    Value x = ScaleByNormOp::create(b, loc, u, ss, op.getEpsAttr());
    int64_t g = rowsSplit ? type.getDimSize(rank - 1)
                          : type.getDimSize(rank - 2);
    SmallVector<int64_t> gramShape(type.getShape());
    gramShape[rank - 2] = g;
    gramShape[rank - 1] = g;
    auto gramType = RankedTensorType::get(gramShape, f32);
    auto f64 = [&](double v) { return b.getF64FloatAttr(v); };
    UnitAttr no, yes = b.getUnitAttr();
    for (auto [ca, cb, cc] :
         resolveSchedule(op.getSchedule(), op.getCoefficients(),
                         op.getNsStepsAttr().getInt())) {
      Value local = MatmulOp::create(b, loc, gramType, x, x, Value(), f64(1.0),
                                     f64(0.0), rowsSplit ? yes : no,
                                     rowsSplit ? no : yes);
      Value gram = AllReduceOp::create(
          b, loc, gramType, gridRef, axes, local,
          ReductionKindAttr::get(b.getContext(), ReductionKind::sum));
      Value bm = MatmulOp::create(b, loc, gramType, gram, gram, gram, f64(cc),
                                  f64(cb), no, no);
      x = rowsSplit ? MatmulOp::create(b, loc, type, x, bm, x, f64(1.0),
                                       f64(ca), no, no)
                    : MatmulOp::create(b, loc, type, bm, x, x, f64(1.0),
                                       f64(ca), no, no);
    }
    return x;
  }

  LogicalResult
  distributeMuon(MuonUpdateOp op,
                 const DenseMap<Value, SmallVector<Shard>> &shardsOf) {
    auto it = shardsOf.find(op.getParam());
    if (it == shardsOf.end())
      return success();
    const SmallVector<Shard> &shards = it->second;
    for (Value v : {op.getGrad(), op.getMomentumBuffer()})
      if (v.getType() != op.getParam().getType())
        return op.emitOpError("parameter, gradient and momentum must be "
                              "sharded alike");
    auto localType = cast<RankedTensorType>(op.getParam().getType());
    auto globalType = op.getNewParam().getType();
    int64_t rank = localType.getRank();
    bool matrixSplit = llvm::any_of(
        shards, [&](const Shard &s) { return s.dim >= rank - 2; });
    // Only experts split: Newton-Schulz per local expert, no communication.
    bool expertOnly = llvm::all_of(shards, [&](const Shard &s) {
      return rank == 3 && s.dim == 0;
    });
    if (expertOnly || !matrixSplit) {
      op.getNewParam().setType(localType);
      op.getNewMomentumBuffer().setType(localType);
      return success();
    }
    if (op.getRowBlocks())
      return op.emitOpError("split (row_blocks) updates of sharded matrices "
                            "are not distributed yet");

    int64_t m = globalType.getDimSize(rank - 2);
    int64_t n = globalType.getDimSize(rank - 1);
    // Distributed and the model need one split of the matrix itself.
    SmallVector<const Shard *> matrixShards;
    for (const Shard &s : shards)
      if (s.dim >= rank - 2)
        matrixShards.push_back(&s);
    NSMode mode = NSMode::Duplicated;
    StringRef requested = nsMode;
    if (auto attr = op->getAttrOfType<StringAttr>("muir.ns_mode"))
      requested = attr.getValue();
    std::string why;
    if (requested == "auto") {
      if (matrixShards.size() == 1) {
        const Shard &s = *matrixShards.front();
        NSProblem problem{m, n, rank == 3 ? localType.getDimSize(0) : 1,
                          op.getNsStepsAttr().getInt(),
                          static_cast<int>(s.dim - (rank - 2)), s.group,
                          s.axis};
        mode = model.choose(problem, &why);
      } else {
        why = "split on both matrix dimensions: duplicated";
      }
    } else if (auto explicitMode = symbolizeNSMode(requested)) {
      mode = *explicitMode;
      why = "requested";
      if (mode == NSMode::Distributed && matrixShards.size() != 1)
        return op.emitOpError("distributed Newton-Schulz needs the matrix "
                              "split on one dimension, got ")
               << matrixShards.size();
    } else {
      return op.emitOpError("unknown ns-mode '")
             << requested
             << "' (expected auto, duplicated, distributed or blockwise)";
    }

    OpBuilder b(op);
    Location loc = op.getLoc();
    auto mom = MomentumOp::create(b, loc, localType, localType, op.getGrad(),
                                  op.getMomentumBuffer(), op.getBetaAttr(),
                                  op.getMomentumKindAttr(),
                                  op.getNesterovAttr());
    auto gridRef = FlatSymbolRefAttr::get(
        b.getContext(), (*op->getParentOfType<ModuleOp>().getOps<GridOp>()
                              .begin())
                            .getSymName());
    Value o;
    double scale;
    if (mode == NSMode::Blockwise) {
      // An approximation: each rank orthogonalises its own block and
      // scales it by the block's shape; the result changes with the split.
      o = NewtonSchulzOp::create(b, loc, localType, mom.getUpdate(),
                                 op.getNsStepsAttr(), op.getScheduleAttr(),
                                 op.getCoefficientsAttr(), op.getEpsAttr());
      scale = getUpdateScale(op.getScaleMode(),
                             op.getScaleExtra().convertToDouble(),
                             localType.getDimSize(rank - 2),
                             localType.getDimSize(rank - 1));
    } else if (mode == NSMode::Distributed) {
      o = distributedNS(b, loc, op, mom.getUpdate(), *matrixShards.front(),
                        gridRef);
      scale = getUpdateScale(op.getScaleMode(),
                             op.getScaleExtra().convertToDouble(), m, n);
    } else {
      // Duplicated: gather the update, orthogonalise the whole matrix on
      // every rank of the group, keep the own block.
      Value u = mom.getUpdate();
      SmallVector<int64_t> shape(localType.getShape());
      for (const Shard &s : shards) {
        shape[s.dim] *= s.group;
        auto type = RankedTensorType::get(shape, localType.getElementType());
        u = AllGatherOp::create(b, loc, type, gridRef,
                                b.getStrArrayAttr({s.axis}), u,
                                b.getI64IntegerAttr(s.dim));
      }
      o = NewtonSchulzOp::create(b, loc, u.getType(), u, op.getNsStepsAttr(),
                                 op.getScheduleAttr(),
                                 op.getCoefficientsAttr(), op.getEpsAttr());
      for (const Shard &s : llvm::reverse(shards)) {
        shape[s.dim] /= s.group;
        auto type = RankedTensorType::get(shape, localType.getElementType());
        o = AllSliceOp::create(b, loc, type, gridRef,
                               b.getStrArrayAttr({s.axis}), o,
                               b.getI64IntegerAttr(s.dim));
      }
      // The update scale belongs to the whole matrix.
      scale = getUpdateScale(op.getScaleMode(),
                             op.getScaleExtra().convertToDouble(), m, n);
    }
    auto apply = ApplyUpdateOp::create(b, loc, localType, op.getParam(), o,
                                       op.getLrAttr(), b.getF64FloatAttr(scale),
                                       op.getWeightDecayAttr());
    // The decision stays visible in the planned IR.
    apply->setAttr("muir.ns_mode", b.getStringAttr(stringify(mode)));
    apply->setAttr("muir.ns_why", b.getStringAttr(why));
    op.getNewParam().replaceAllUsesWith(apply.getResult());
    op.getNewMomentumBuffer().replaceAllUsesWith(mom.getNewMomentumBuffer());
    op.erase();
    return success();
  }
};

} // namespace
