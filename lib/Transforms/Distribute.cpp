//===- Distribute.cpp - the per-rank program of a sharded step ------------===//
//
// Turns a step written with global shapes and `muir.shards` annotations into
// the program one rank runs: every sharded tensor takes its local shape (and
// a `muir.split` that tells muir-run how whole tensors map onto ranks),
// element-wise optimizer math stays local, and Newton-Schulz on a matrix
// split over tensor- or data-parallel axes runs in one of four modes:
//  - duplicated: the momentum update's shards are all-gathered, every rank
//    of the group orthogonalises the whole matrix and keeps its own block;
//  - distributed: the squared norm and every step's Gram matrix over the
//    unsplit dimension are all-reduced, the rest stays local (in the Gram
//    form, one symmetric all-reduce of the Gram matrix);
//  - resharded (2-D): an all_to_all moves the split to the other
//    dimension, the distributed mode runs there (its Gram matrix is then
//    over the smaller dimension), and a second all_to_all moves it back;
//  - blockwise (an approximation, only when asked): NS of the local block.
// `ns-mode=auto` lets the cost model (lib/Analysis/CostModel) pick the
// cheaper exact mode. Expert stacks split on their expert dimension need no
// communication (NS per local expert).
//
// Over the data-parallel axis (`dp-axis`), no Newton-Schulz runs twice
// (`dp-assign=greedy`, or `round-robin`; `replicated` turns this off):
//  - layer-wise: a matrix every dp rank holds whole (or as the same tp
//    shard) is orthogonalised by one owner; each owner packs its results
//    and one ragged all_gatherv over dp brings every rank all of them;
//  - FSDP: a matrix split over dp sends each shard to the owner (one
//    all_to_allv for all such matrices), the owner orthogonalises the
//    whole matrix and a second all_to_allv returns every rank its block.
// Owners come from one balancing of both kinds by m n min(m, n) per step.
// The owner's work is a `scf.index_switch` on `muir.group_rank` over dp,
// one case per dp rank.
//
//===----------------------------------------------------------------------===//
#include "DistributeInternal.h"
#include "muir/Analysis/CostModel.h"
#include "muir/Transforms/GramForm.h"
#include "muir/Transforms/NewtonSchulzSteps.h"
#include "muir/Transforms/PassInput.h"
#include "muir/Transforms/Passes.h"

#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir::muir {
#define GEN_PASS_DEF_MUIRDISTRIBUTE
#include "muir/Transforms/Passes.h.inc"
} // namespace mlir::muir

using namespace mlir;
using namespace mlir::muir;
using namespace mlir::muir::distribute;

namespace {

/// Reads `muir.shards = [#muir.shard<kind, "axis", dim>, ...]` of argument
/// `i` (verified by the dialect); an axis belongs to the grid named by the
/// argument's `muir.folding` if it has it, else to the run's grid `run`,
/// else to the one grid folding it that has the axis.
FailureOr<SmallVector<Shard>> readShards(func::FuncOp func, unsigned i,
                                         GridOp run) {
  SmallVector<Shard> shards;
  auto attr = func.getArgAttrOfType<ArrayAttr>(
      i, MuirDialect::ShardsAttrHelper::getNameStr());
  if (!attr)
    return shards;
  auto grids = func->getParentOfType<ModuleOp>().getOps<GridOp>();
  auto folding = func.getArgAttrOfType<FlatSymbolRefAttr>(
      i, MuirDialect::FoldingAttrHelper::getNameStr());
  for (auto shard : attr.getAsRange<ShardAttr>()) {
    StringRef axis = shard.getAxis();
    Shard s{stringifyShardKind(shard.getKind()).str(), axis.str(),
            shard.getDim(), 1, GridOp(), true};
    if (folding)
      if (auto g = SymbolTable::lookupNearestSymbolFrom<GridOp>(
              func, folding.getAttr());
          g && g.getAxisIndex(axis) >= 0)
        s.grid = g;
    if (!s.grid && run && run.getAxisIndex(axis) >= 0)
      s.grid = run;
    if (!s.grid) {
      SmallVector<GridOp> having;
      for (GridOp g : grids)
        if (g != run && g.getAxisIndex(axis) >= 0)
          having.push_back(g);
      if (having.size() > 1)
        return func.emitOpError("argument ")
               << i << ": " << shard << " names axis '" << axis
               << "', which @" << having[0].getSymName() << " and @"
               << having[1].getSymName()
               << " both have: name one with muir.folding";
      if (!having.empty())
        s.grid = having.front();
    }
    s.onRunGrid = s.grid == run;
    if (!s.grid)
      return func.emitOpError("argument ")
             << i << ": " << shard << " names axis '" << axis
             << "', which no muir.grid has";
    Builder b(func.getContext());
    s.group = s.grid.getGroupSize(b.getStrArrayAttr({axis}));
    if (s.group > 1)
      shards.push_back(s);
  }
  return shards;
}

/// Three significant digits: the model's estimates as the IR records them.
static double round3(double v) {
  return std::strtod(llvm::formatv("{0:e2}", v).str().c_str(), nullptr);
}

/// The `muir.ns_why` of a decided job.
static NSWhyAttr whyAttr(MLIRContext *ctx, const Job &job,
                         Machine machine) {
  if (job.why != NSReason::cost_model)
    return NSWhyAttr::get(ctx, job.why, std::nullopt, {});
  SmallVector<NSCandidateAttr> candidates;
  for (const NSCandidate &c : job.weighed)
    candidates.push_back(NSCandidateAttr::get(
        ctx, c.mode, c.gram ? NSForm::gram : NSForm::standard,
        APFloat(round3(c.cost.seconds * 1e3)),
        APFloat(round3(c.cost.commBytes / 1e6))));
  return NSWhyAttr::get(ctx, job.why, machine, candidates);
}

struct DistributePass
    : public mlir::muir::impl::MuirDistributeBase<DistributePass> {
  using Base::Base;

  NSCostModel model{MachineProfile::get(Machine::Cpu)};
  DpAssign policy = DpAssign::Greedy;
  GridOp grid;
  FlatSymbolRefAttr gridRef;

  /// The layout-invariant mode's refusals: a sum of the step (not one a
  /// probe only prints) over ranks that each hold part of its terms adds
  /// them in an order the layout sets (the importer builds none in this
  /// mode: this guards other high-level IR); capacity drops over each
  /// rank's tokens depend on how the tokens are spread.
  static LogicalResult checkLayoutInvariant(ModuleOp module) {
    WalkResult result = module.walk([](Operation *op) {
      auto func = op->getParentOfType<func::FuncOp>();
      if (func &&
          (func->hasAttr(MuirDialect::PerRankAttrHelper::getNameStr()) ||
           func->hasAttr(MuirDialect::EntryAttrHelper::getNameStr())))
        return WalkResult::advance();
      if (auto cap = dyn_cast<CapacityOp>(op);
          cap && cap.getGroupTokens() == 0) {
        cap.emitOpError("drops pairs beyond each expert's capacity over "
                        "this rank's tokens, which depend on how the layout "
                        "spreads them; the layout-invariant mode needs "
                        "capacity over fixed blocks of tokens (the layer's "
                        "capacity_tokens) or a dropless MoE layer");
        return WalkResult::interrupt();
      }
      auto sum = dyn_cast<AllReduceOp>(op);
      if (!sum || llvm::all_of(sum->getUsers(), [](Operation *user) {
            return isa<ProbeOp>(user);
          }))
        return WalkResult::advance();
      sum.emitOpError("adds partial results of the ranks of ")
          << sum.getGridAxes()
          << " (such as gradients over each rank's tokens) in an order the "
             "layout sets; the layout-invariant mode takes no such sum (the "
             "importer builds none)";
      return WalkResult::interrupt();
    });
    return failure(result.wasInterrupted());
  }

  void runOnOperation() override {
    if (failed(checkPassInput(getOperation(), getArgument(),
                              PassInput::Tensors)))
      return signalPassFailure();
    ModuleOp module = getOperation();
    if (layoutInvariant && failed(checkLayoutInvariant(module)))
      return signalPassFailure();
    MachineProfile profile = MachineProfile::get(machine);
    policy = dpAssign;
    FailureOr<GridOp> run = getRunGrid(module);
    if (failed(run))
      return signalPassFailure();
    if (!*run)
      return;
    grid = *run;
    // The default axis may be absent (a grid without data parallelism);
    // an axis named by the user must be there, or Newton-Schulz would
    // silently stop being shared.
    if (dpAxis != "dp" && grid.getAxisIndex(dpAxis) < 0) {
      std::string axes;
      for (Attribute a : grid.getAxes())
        axes += (axes.empty() ? "'" : ", '") +
                cast<StringAttr>(a).getValue().str() + "'";
      grid.emitError("dp-axis '")
          << dpAxis << "' is not an axis of grid @" << grid.getSymName()
          << " (its axes: " << axes << ")";
      return signalPassFailure();
    }
    int64_t ranks = 1;
    for (int64_t s : grid.getShape())
      ranks *= s;
    model = NSCostModel(profile, ranks);
    gridRef = FlatSymbolRefAttr::get(grid.getSymNameAttr());
    for (auto func : module.getOps<func::FuncOp>()) {
      // A per-rank program already (distributed before, or an exec
      // entry): its shapes are the rank's own. (Arguments written per rank,
      // with `muir.split` and no `muir.shards`, are left as they are by
      // distribute() itself; the importer gives trained MoE layers' tensors
      // such shapes beside sharded ones.)
      if (func.isExternal() ||
          func->hasAttr(MuirDialect::PerRankAttrHelper::getNameStr()) ||
          func->hasAttr(MuirDialect::EntryAttrHelper::getNameStr()))
        continue;
      if (failed(distribute(func)))
        return signalPassFailure();
      func->setAttr(MuirDialect::PerRankAttrHelper::getNameStr(),
                    UnitAttr::get(func.getContext()));
    }
  }

  int64_t dpGroup() {
    if (grid.getAxisIndex(dpAxis) < 0)
      return 1;
    Builder b(grid.getContext());
    return grid.getGroupSize(b.getStrArrayAttr({dpAxis}));
  }

  LogicalResult distribute(func::FuncOp func) {
    Block &body = func.getBody().front();
    DenseMap<Value, SmallVector<Shard>> shardsOf;
    OpBuilder b(func.getContext());
    // Read and check everything before changing anything.
    SmallVector<SmallVector<Shard>> all;
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      auto shards = readShards(func, i, grid);
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
    // The arguments' attributes are set at once: setArgAttr rebuilds every
    // argument's (quadratic over a model's tens of thousands).
    SmallVector<DictionaryAttr> argAttrs;
    func.getAllArgAttrs(argAttrs);
    bool split = false;
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      const SmallVector<Shard> *shards = &all[i];
      if (shards->empty())
        continue;
      BlockArgument arg = body.getArgument(i);
      auto type = cast<RankedTensorType>(arg.getType());
      SmallVector<int64_t> local(type.getShape());
      SmallVector<Attribute> splits;
      for (const Shard &s : *shards) {
        local[s.dim] /= s.group;
        splits.push_back(s.split(b));
      }
      arg.setType(RankedTensorType::get(local, type.getElementType()));
      NamedAttrList attrs(argAttrs[i]);
      attrs.set(MuirDialect::SplitAttrHelper::getNameStr(),
                b.getArrayAttr(splits));
      argAttrs[i] = attrs.getDictionary(func.getContext());
      split = true;
      shardsOf[arg] = *shards;
    }
    if (split)
      func.setAllArgAttrs(argAttrs);
    bool spreadDp = dpGroup() > 1 && policy != DpAssign::Replicated;
    if (shardsOf.empty() && !spreadDp)
      return success();

    std::vector<Job> jobs;
    SmallVector<Operation *> ops;
    for (Operation &op : body)
      ops.push_back(&op);
    for (Operation *op : ops) {
      if (auto update = dyn_cast<OptimizerUpdateInterface>(op);
          update && update.isElementwise()) {
        // Element-wise: the shard's update is the update's shard.
        update.getNewParam().setType(update.getParam().getType());
        for (auto [res, state] : llvm::zip(op->getResults().drop_front(),
                                           update.getStateOperands()))
          res.setType(state.getType());
        continue;
      }
      if (auto muon = dyn_cast<OrthogonalizedUpdateInterface>(op)) {
        if (failed(planMuon(muon, shardsOf, spreadDp, jobs)))
          return failure();
        continue;
      }
      if (auto clip = dyn_cast<QkClipOp>(op)) {
        if (failed(planClip(clip, shardsOf)))
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

    // Updates every rank orthogonalises itself run where they stood.
    SmallVector<Job *> spread;
    for (Job &job : jobs) {
      if (job.owner >= 0) {
        spread.push_back(&job);
        continue;
      }
      OpBuilder at(job.op);
      Value o = orthogonalise(at, job, job.momentum.getUpdate());
      finish(at, job, o);
    }
    if (!spread.empty() &&
        failed(spreadOverDp(
            body, spread, gridRef, dpAxis, dpGroup(), policy,
            [&](OpBuilder &b, Job &job, Value u) {
              return orthogonalise(b, job, u);
            },
            [&](OpBuilder &b, Job &job, Value o) { finish(b, job, o); })))
      return failure();
    // A clip's result is the local shard it clips (known once every update
    // is planned and finished).
    for (auto clip : body.getOps<QkClipOp>())
      clip.getResult().setType(clip.getParam().getType());

    auto ret = cast<func::ReturnOp>(body.getTerminator());
    func.setType(FunctionType::get(func.getContext(), body.getArgumentTypes(),
                                   ret.getOperandTypes()));
    return success();
  }

  /// MuonClip's QK-clip of an updated matrix: local to each rank when its
  /// max_logits is split exactly as the matrix's rows (each rank clips its
  /// own heads).
  LogicalResult planClip(QkClipOp clip,
                         const DenseMap<Value, SmallVector<Shard>> &shardsOf) {
    // The parameter the clipped value updates.
    Value w = clip.getParam();
    if (auto update = w.getDefiningOp<OptimizerUpdateInterface>())
      w = update.getParam();
    auto rowSplits = [&](Value v) {
      SmallVector<std::pair<std::string, int64_t>> rows;
      if (auto it = shardsOf.find(v); it != shardsOf.end())
        for (const Shard &s : it->second)
          if (s.dim == 0)
            rows.push_back({s.axis, s.group});
      return rows;
    };
    auto logits = shardsOf.find(clip.getMaxLogits());
    if (!isa<BlockArgument>(w) ||
        rowSplits(w) != rowSplits(clip.getMaxLogits()) ||
        (logits != shardsOf.end() &&
         llvm::any_of(logits->second,
                      [](const Shard &s) { return s.dim != 0; })))
      return clip.emitOpError("cannot be distributed: its max_logits must "
                              "be split as the updated parameter's rows");
    return success();
  }

  /// The update's results on this rank's shards: the parameter and the
  /// momentum of `localType`, the other state of its operands' types.
  static void localizeResults(OrthogonalizedUpdateInterface op,
                              RankedTensorType localType) {
    op.getNewParam().setType(localType);
    op.getNewMomentumBuffer().setType(localType);
    for (auto [result, state] :
         llvm::zip(op->getResults().drop_front(2), op.getOtherState()))
      result.setType(state.getType());
  }

  /// Checks an update, decides its mode and owner, and computes its
  /// momentum in place (element-wise, on the local shard).
  LogicalResult planMuon(OrthogonalizedUpdateInterface op,
                         const DenseMap<Value, SmallVector<Shard>> &shardsOf,
                         bool spreadDp, std::vector<Job> &jobs) {
    SmallVector<Shard> shards;
    if (auto it = shardsOf.find(op.getParam()); it != shardsOf.end())
      shards = it->second;
    for (Value v : {op.getGrad(), op.getMomentumBuffer()})
      if (v.getType() != op.getParam().getType())
        return op.emitOpError("parameter, gradient and momentum must be "
                              "sharded alike");
    auto localType = cast<RankedTensorType>(op.getParam().getType());
    auto globalType = cast<RankedTensorType>(op.getNewParam().getType());
    int64_t rank = localType.getRank();
    int64_t batch = rank == 3 ? localType.getDimSize(0) : 1;
    int64_t m = globalType.getDimSize(rank - 2);
    int64_t n = globalType.getDimSize(rank - 1);
    int64_t steps = op.getNsStepsAttr().getInt();
    auto onDp = [&](const Shard &s) {
      return s.onRunGrid && s.axis == dpAxis.getValue();
    };
    // Tensors of an MoE folding (sharded on its axes) are not shared out
    // over the run grid's dp: their replicas follow the folding (edp).
    bool otherFolding =
        llvm::any_of(shards, [](const Shard &s) { return !s.onRunGrid; });
    auto isMatrixDim = [&](const Shard &s) { return s.dim >= rank - 2; };

    Job job;
    job.op = op;
    job.localType = localType;
    job.nsType = localType;
    // Only experts split: Newton-Schulz per local expert, no communication.
    bool expertOnly = !shards.empty() && llvm::all_of(shards, [&](auto &s) {
      return rank == 3 && s.dim == 0;
    });
    // Already per-rank (an MoE layer trained in the step, whose expert
    // stacks the importer gave their local shapes over ep): NS per local
    // expert, never shared out over dp.
    if (op->hasAttr(MuirDialect::LocalAttrHelper::getNameStr()))
      expertOnly = true;
    if (expertOnly) {
      localizeResults(op, localType);
      return success();
    }
    // An FSDP split of a matrix dimension over dp goes to one owner, unless
    // another split shares its dimension.
    for (const Shard &s : shards) {
      // Experts split on a stack's first dimension: each rank runs NS of
      // its own experts, whatever else splits them.
      if (rank == 3 && s.dim == 0)
        continue;
      bool alone = llvm::count_if(shards, [&](const Shard &o) {
                     return o.dim == s.dim;
                   }) == 1;
      if (spreadDp && onDp(s) && isMatrixDim(s) && alone && !job.fsdp) {
        job.fsdp = s;
        continue;
      }
      job.nsShards.push_back(s);
    }
    bool dpSplit = llvm::any_of(job.nsShards, onDp);
    if (job.fsdp) {
      SmallVector<int64_t> shape(localType.getShape());
      shape[job.fsdp->dim] *= job.fsdp->group;
      job.nsType = RankedTensorType::get(shape, localType.getElementType());
    }
    job.matrixSplit = llvm::any_of(job.nsShards, isMatrixDim);
    if (spreadDp && !dpSplit && !otherFolding) {
      job.weight = layerwiseWeight(m, n, batch, steps);
      job.owner = 0; // assigned below, with the others
    }
    if ((job.matrixSplit || job.fsdp) && op.getRowBlocks())
      return op.emitOpError("split (row_blocks) updates of sharded matrices "
                            "are not distributed yet");

    if (job.matrixSplit) {
      if (failed(chooseSplitMode(job, batch, steps)))
        return failure();
    } else if (!job.fsdp && job.owner < 0) {
      // Neither split nor spread: muir-decompose-optimizers expands it.
      localizeResults(op, localType);
      return success();
    }

    OpBuilder b(op);
    job.momentum = MomentumOp::create(
        b, op.getLoc(), localType, localType, op.getGrad(),
        op.getMomentumBuffer(),
        op.getHyper().size() > 2 ? op.getHyper()[2] : Value(), op.getTake(),
        op.getBetaAttr(), op.getMomentumKindAttr(), op.getNesterovAttr());
    if (job.fsdp) {
      job.weight = layerwiseWeight(m, n, batch, steps);
      job.owner = 0;
      if (!job.matrixSplit)
        job.why = NSReason::fsdp_owner;
    }
    jobs.push_back(std::move(job));
    return success();
  }

  /// The Newton-Schulz mode of a job whose matrix is split (and its form,
  /// its reason and the model's time): the update's own muir.ns_mode, else
  /// the pass's ns-mode, else (auto) the cost model's choice; checked
  /// against what the mode needs.
  LogicalResult chooseSplitMode(Job &job, int64_t batch, int64_t steps) {
    OrthogonalizedUpdateInterface op = job.op;
    int64_t rank = job.nsType.getRank();
    auto isMatrixDim = [&](const Shard &s) { return s.dim >= rank - 2; };
    SmallVector<const Shard *> matrixShards;
    for (const Shard &s : job.nsShards)
      if (isMatrixDim(s))
        matrixShards.push_back(&s);
    // The update's own muir.ns_mode wins over the pass option.
    std::optional<NewtonSchulzMode> requested = fixedMode(nsMode);
    if (auto attr = op->getAttrOfType<NewtonSchulzModeAttr>(
            MuirDialect::NsModeAttrHelper::getNameStr()))
      requested = fixedMode(attr.getValue());
    // Layout-invariant: the whole matrix on every rank of the group, as
    // on one rank; the other modes sum or approximate over the split.
    if (layoutInvariant && requested &&
        *requested != NewtonSchulzMode::duplicated)
      return op.emitOpError("the layout-invariant mode runs Newton-Schulz "
                            "of split matrices duplicated; the ")
             << stringifyNewtonSchulzMode(*requested)
             << " mode sums (or approximates) over the split, in an order "
                "the layout sets";
    if (layoutInvariant && !requested) {
      job.mode = NewtonSchulzMode::duplicated;
      job.why = NSReason::layout_invariant;
    } else if (!requested) {
      if (matrixShards.size() == 1) {
        job.mode =
            model.choose(problemOf(job, *matrixShards.front(), batch, steps),
                         &job.weighed, nsForm, &job.gram);
        job.why = NSReason::cost_model;
      } else {
        job.why = NSReason::both_dims;
      }
    } else {
      job.mode = *requested;
      job.why = NSReason::requested;
      // The form of a requested distributed or resharded mode: as asked,
      // or (auto) the cheaper of the two by the model.
      if (matrixShards.size() == 1)
        job.gram = model.gramForMode(
            job.mode, problemOf(job, *matrixShards.front(), batch, steps),
            nsForm);
      if ((job.mode == NewtonSchulzMode::distributed ||
           job.mode == NewtonSchulzMode::resharded) &&
          matrixShards.size() != 1)
        return op.emitOpError("distributed Newton-Schulz needs the matrix "
                              "split on one dimension, got ")
               << matrixShards.size();
      if (job.mode == NewtonSchulzMode::resharded) {
        const Shard &s = *matrixShards.front();
        int64_t other =
            job.nsType.getDimSize(s.dim == rank - 2 ? rank - 1 : rank - 2);
        if (rank != 2 || other % s.group != 0)
          return op.emitOpError("resharded Newton-Schulz needs a 2-D "
                                "matrix whose other dimension ")
                 << s.axis << "=" << s.group << " divides";
      }
    }
    // The model's time of the mode run (block-wise: the local block's
    // Newton-Schulz, no communication), recorded for the plan report.
    job.modelledSeconds =
        job.mode == NewtonSchulzMode::blockwise
            ? model.blockwiseSeconds(job.nsType.getDimSize(rank - 2),
                                     job.nsType.getDimSize(rank - 1), batch,
                                     steps)
            : model.modeSeconds(
                  job.mode, problemOf(job, *matrixShards.front(), batch, steps),
                  job.gram);
    return success();
  }

  /// The cost model's view of a job's matrix split over `s`: the matrix
  /// the NS spans (after an FSDP gather).
  static NSProblem problemOf(const Job &job, const Shard &s, int64_t batch,
                             int64_t steps) {
    int64_t rank = job.nsType.getRank();
    int64_t nm = job.nsType.getDimSize(rank - 2) *
                 (s.dim == rank - 2 ? s.group : 1);
    int64_t nn = job.nsType.getDimSize(rank - 1) *
                 (s.dim == rank - 1 ? s.group : 1);
    return NSProblem{nm, nn, batch, steps,
                     static_cast<int>(s.dim - (rank - 2)), s.group, s.axis};
  }

  /// Newton-Schulz of `u` (of type job.nsType) as the job's mode runs it,
  /// with every collective over the job's nsShards.
  Value orthogonalise(OpBuilder &b, Job &job, Value u) {
    OrthogonalizedUpdateInterface op = job.op;
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(u.getType());
    auto ns = [&](Value x) -> Value {
      return NewtonSchulzOp::create(
          b, loc, x.getType(), x, op.getNsStepsAttr(), op.getScheduleAttr(),
          op.getCoefficientsAttr(), op.getEpsAttr(),
          NSPrecisionAttr::get(b.getContext(), nsPrecision));
    };
    if (!job.matrixSplit) {
      std::optional<ArrayRef<int64_t>> blocks = op.getRowBlocks();
      if (!blocks)
        return ns(u);
      // Fused QKV: each row block alone.
      SmallVector<Value> parts;
      int64_t r0 = 0, n = type.getDimSize(1);
      for (int64_t rows : *blocks) {
        parts.push_back(ns(rowSlice(b, loc, u, r0, rows, n)));
        r0 += rows;
      }
      return tensor::ConcatOp::create(b, loc, type, /*dim=*/0, parts);
    }
    if (job.mode == NewtonSchulzMode::blockwise)
      return ns(u);
    if (job.mode == NewtonSchulzMode::distributed ||
        job.mode == NewtonSchulzMode::resharded) {
      const Shard *s = nullptr;
      for (const Shard &c : job.nsShards)
        if (c.dim >= type.getRank() - 2)
          s = &c;
      if (job.mode == NewtonSchulzMode::distributed)
        return distributedNS(b, loc, op, u, *s, job.gram, syrk);
      // Move the split to the other dimension, run distributed there, move
      // it back (2-D only: checked when the mode was chosen).
      Shard flipped = *s;
      flipped.dim = 1 - s->dim;
      bool rows = s->dim == 0;
      Value v = rows ? rowsToCols(b, loc, u, *s) : colsToRows(b, loc, u, *s);
      Value o = distributedNS(b, loc, op, v, flipped, job.gram, syrk);
      return rows ? colsToRows(b, loc, o, *s) : rowsToCols(b, loc, o, *s);
    }
    // Duplicated: gather the update, orthogonalise the whole matrix on
    // every rank of the group, keep the own block.
    SmallVector<int64_t> shape(type.getShape());
    for (const Shard &s : job.nsShards) {
      shape[s.dim] *= s.group;
      auto t = RankedTensorType::get(shape, type.getElementType());
      u = AllGatherOp::create(b, loc, t, s.gridRef(),
                              b.getStrArrayAttr({s.axis}),
                              u, b.getI64IntegerAttr(s.dim));
    }
    Value o = ns(u);
    for (const Shard &s : llvm::reverse(job.nsShards)) {
      shape[s.dim] /= s.group;
      auto t = RankedTensorType::get(shape, type.getElementType());
      o = AllSliceOp::create(b, loc, t, s.gridRef(),
                             b.getStrArrayAttr({s.axis}),
                             o, b.getI64IntegerAttr(s.dim));
    }
    return o;
  }

  /// A row-split [m/g, n] matrix as the column split [m, n/g]: column
  /// block j of the own rows goes to group rank j (one all_to_all of the
  /// blocks stacked along dimension 0), which stacks what it receives.
  Value rowsToCols(OpBuilder &b, Location loc, Value u, const Shard &s) {
    auto t = cast<RankedTensorType>(u.getType());
    int64_t g = s.group, rows = t.getDimSize(0), cols = t.getDimSize(1) / g;
    SmallVector<Value> blocks;
    for (int64_t j = 0; j < g; ++j)
      blocks.push_back(tile(b, loc, u, 0, j * cols, rows, cols));
    auto stacked = RankedTensorType::get({rows * g, cols}, t.getElementType());
    Value packed = tensor::ConcatOp::create(b, loc, stacked, 0, blocks);
    return AllToAllOp::create(b, loc, stacked, s.gridRef(),
                              b.getStrArrayAttr({s.axis}), packed,
                              b.getI64IntegerAttr(0), b.getI64IntegerAttr(0));
  }
  /// The inverse: a column-split [m, n/g] matrix as the row split [m/g, n].
  Value colsToRows(OpBuilder &b, Location loc, Value v, const Shard &s) {
    auto t = cast<RankedTensorType>(v.getType());
    int64_t g = s.group, rows = t.getDimSize(0) / g, cols = t.getDimSize(1);
    Value received = AllToAllOp::create(
        b, loc, t, s.gridRef(), b.getStrArrayAttr({s.axis}), v,
        b.getI64IntegerAttr(0), b.getI64IntegerAttr(0));
    SmallVector<Value> blocks;
    for (int64_t j = 0; j < g; ++j)
      blocks.push_back(tile(b, loc, received, j * rows, 0, rows, cols));
    return tensor::ConcatOp::create(
        b, loc, RankedTensorType::get({rows, cols * g}, t.getElementType()),
        1, blocks);
  }
  static Value tile(OpBuilder &b, Location loc, Value v, int64_t r0,
                    int64_t c0, int64_t rows, int64_t cols) {
    auto t = cast<RankedTensorType>(v.getType());
    SmallVector<OpFoldResult> offsets = {b.getIndexAttr(r0),
                                         b.getIndexAttr(c0)};
    SmallVector<OpFoldResult> sizes = {b.getIndexAttr(rows),
                                       b.getIndexAttr(cols)};
    SmallVector<OpFoldResult> strides(2, b.getIndexAttr(1));
    return tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get({rows, cols}, t.getElementType()), v,
        offsets, sizes, strides);
  }

  static Value rowSlice(OpBuilder &b, Location loc, Value v, int64_t r0,
                        int64_t rows, int64_t n) {
    return tile(b, loc, v, r0, 0, rows, n);
  }


  /// The scaled update of the local shard from its orthogonalised update
  /// (this rank's block of the Newton-Schulz output), replacing the update
  /// op: the op's own normalisation of the block (told which matrix
  /// dimensions are split over which axes), then the apply.
  void finish(OpBuilder &b, Job &job, Value o) {
    OrthogonalizedUpdateInterface op = job.op;
    Location loc = op.getLoc();
    auto global = cast<RankedTensorType>(op.getNewParam().getType());
    int64_t rank = global.getRank();
    int64_t m = global.getDimSize(rank - 2), n = global.getDimSize(rank - 1);
    bool blockwise = job.matrixSplit && job.mode == NewtonSchulzMode::blockwise;
    // What splits the matrix `o` is a block of: the tp splits (but a
    // block-wise approximation treats its block as the matrix) and the
    // dp split gathered to the owner.
    SmallVector<MatrixSplit> splits;
    auto addSplit = [&](const Shard &s) {
      if (s.dim >= rank - 2)
        splits.push_back({static_cast<int>(s.dim - (rank - 2)), s.gridRef(),
                          b.getStringAttr(s.axis), s.group});
    };
    if (job.matrixSplit && !blockwise)
      for (const Shard &s : job.nsShards)
        addSplit(s);
    if (job.fsdp)
      addSplit(*job.fsdp);
    SmallVector<Value> newState;
    Value update = op.buildNormalizedUpdate(b, loc, o, splits, newState);
    auto apply = [&](Value p, Value x, double scale) -> Value {
      auto a = ApplyUpdateOp::create(
          b, loc, p.getType(), p, x,
          op.getHyper().take_front(std::min<size_t>(op.getHyper().size(), 2)),
          op.getTake(), op.getLrAttr(), b.getF64FloatAttr(scale),
          op.getWeightDecayAttr());
      // The decision stays visible in the planned IR.
      if (job.matrixSplit)
        a->setAttr(MuirDialect::NsModeAttrHelper::getNameStr(),
                   NewtonSchulzModeAttr::get(b.getContext(), job.mode));
      if (job.matrixSplit && (job.mode == NewtonSchulzMode::distributed ||
                              job.mode == NewtonSchulzMode::resharded))
        a->setAttr(MuirDialect::NsFormAttrHelper::getNameStr(),
                   NSFormAttr::get(b.getContext(),
                                   job.gram ? NSForm::gram : NSForm::standard));
      if (job.matrixSplit || job.fsdp)
        a->setAttr(MuirDialect::NsWhyAttrHelper::getNameStr(),
                   whyAttr(b.getContext(), job, model.getProfile().machine));
      if (job.matrixSplit)
        a->setAttr(MuirDialect::ModelledMsAttrHelper::getNameStr(),
                   b.getF64FloatAttr(job.modelledSeconds * 1e3));
      if (job.owner >= 0) {
        a->setAttr(MuirDialect::DpOwnerAttrHelper::getNameStr(),
                   b.getI64IntegerAttr(job.owner));
        a->setAttr(MuirDialect::DpWeightAttrHelper::getNameStr(),
                   b.getF64FloatAttr(job.weight));
      }
      return a;
    };
    Value newParam;
    if (blockwise) {
      // An approximation: each rank orthogonalises its own block and scales
      // it by the block's shape; the result changes with the split.
      auto nsType = job.nsType;
      newParam = apply(op.getParam(), update,
                       op.getApplyScale(nsType.getDimSize(rank - 2),
                                        nsType.getDimSize(rank - 1)));
    } else if (std::optional<ArrayRef<int64_t>> blocks = op.getRowBlocks()) {
      SmallVector<Value> parts;
      int64_t r0 = 0;
      for (int64_t rows : *blocks) {
        parts.push_back(apply(rowSlice(b, loc, op.getParam(), r0, rows, n),
                              rowSlice(b, loc, update, r0, rows, n),
                              op.getApplyScale(rows, n)));
        r0 += rows;
      }
      newParam = tensor::ConcatOp::create(b, loc, job.localType, 0, parts);
    } else {
      // The update scale belongs to the whole matrix.
      newParam = apply(op.getParam(), update, op.getApplyScale(m, n));
    }
    SmallVector<Value> results = {newParam,
                                  job.momentum.getNewMomentumBuffer()};
    results.append(newState);
    op->replaceAllUsesWith(results);
    op->erase();
  }
};

} // namespace
