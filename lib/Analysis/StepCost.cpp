//===- StepCost.cpp - what each rank of a compiled step runs --------------===//
//
// See StepCost.h. One walk of the step function per class of ranks: ranks
// that hold the same group rank in every group whose rank changes what the
// program does or sends (a switch on a group rank, a ragged or rooted
// collective, an all-reduce whose slices differ) run the same program.
//
//===----------------------------------------------------------------------===//
#include "muir/Analysis/StepCost.h"
#include "Muir/MuirDialect.h"
#include "MuirExec/MuirExecDialect.h"
#include "muir/Target/TargetInfo.h"
#include "muir-rt/Collectives.h"
#include "muir-rt/Runtime.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::muir;
namespace mx = mlir::muir_exec;

namespace {

int64_t numel(Type t) {
  auto m = cast<ShapedType>(t);
  return m.getNumElements();
}

int64_t elementBytes(Type t) {
  return std::max<int64_t>(
      1, cast<ShapedType>(t).getElementType().getIntOrFloatBitWidth() / 8);
}

/// The bytes of an element of a step argument: its `muir.dtype` (a bf16
/// parameter the step updates in f32) or its type's.
int64_t argElementBytes(func::FuncOp f, BlockArgument arg) {
  if (auto dtype = f.getArgAttrOfType<DTypeAttr>(
          arg.getArgNumber(), MuirDialect::DtypeAttrHelper::getNameStr()))
    switch (dtype.getValue()) {
    case DType::f64:
      return 8;
    case DType::f32:
      return 4;
    case DType::bf16:
    case DType::f16:
      return 2;
    }
  return elementBytes(arg.getType());
}

/// The trained MoE layer an op belongs to (its location's `moe <name>`),
/// or "".
StringRef trainedLayerOf(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc)) {
    StringRef n = name.getName().getValue();
    if (n.starts_with(kTrainedLayerLoc))
      return n.drop_front(kTrainedLayerLoc.size());
    return trainedLayerOf(name.getChildLoc());
  }
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (StringRef layer = trainedLayerOf(inner); !layer.empty())
        return layer;
  return "";
}

/// A grid's shape, to place world ranks in it (row-major, the last axis
/// fastest; a folding numbers the same ranks).
struct Grid {
  SmallVector<StringRef> axes;
  SmallVector<int64_t> shape;
};

class Walker {
public:
  Walker(ModuleOp module, func::FuncOp entry, std::string &error)
      : module(module), entry(entry), error(error) {
    for (GridOp g : module.getOps<GridOp>()) {
      Grid &grid = grids[g.getSymName()];
      for (Attribute a : g.getAxes())
        grid.axes.push_back(cast<StringAttr>(a).getValue());
      grid.shape.assign(g.getShape().begin(), g.getShape().end());
      if (!g.getFolds())
        numRanks = g.getNumDevices();
    }
  }

  LogicalResult run(StepCosts &out);

private:
  /// (group size, this rank's group rank) of `group` for world rank `rank`.
  std::pair<int64_t, int64_t> place(mx::GroupAttr group, int64_t rank) const {
    auto it = grids.find(group.getGrid().getValue());
    if (it == grids.end())
      return {1, 0};
    const Grid &g = it->second;
    auto numAxes = static_cast<int32_t>(g.shape.size());
    SmallVector<int64_t> coords(g.shape.size());
    muirrt_grid_coords(numAxes, g.shape.data(), rank, coords.data());
    int64_t bits = 0;
    for (auto [i, name] : llvm::enumerate(g.axes))
      if (llvm::any_of(group.getAxes(), [&](Attribute a) {
            return cast<StringAttr>(a).getValue() == name;
          }))
        bits |= int64_t{1} << i;
    muirrt_group_place p =
        muirrt_group_place_of(numAxes, g.shape.data(), coords.data(), bits);
    return {p.size, p.rank};
  }

  static std::string axesKey(mx::GroupAttr group) {
    std::string key;
    for (Attribute a : group.getAxes()) {
      if (!key.empty())
        key += ",";
      key += cast<StringAttr>(a).getValue();
    }
    return key;
  }

  /// Whether a loop's body holds ops whose costs depend on index values
  /// (the rows of a chunk of the fused SYRK all-reduce).
  static bool dependsOnIndex(scf::ForOp loop) {
    return loop.getBody()
        ->walk([](Operation *op) {
          return isa<mx::SyrkRowsOp, mx::TriangleAllReduceStartOp>(op)
                     ? WalkResult::interrupt()
                     : WalkResult::advance();
        })
        .wasInterrupted();
  }
  /// The groups whose rank changes what a rank runs or sends.
  void collectDistinguishing();
  LogicalResult walk(Block &block, int64_t times, int64_t rank,
                     RankCost &cost);
  LogicalResult visit(Operation *op, int64_t times, int64_t rank,
                      RankCost &cost);
  std::optional<int64_t> known(Value v) const {
    if (auto it = indices.find(v); it != indices.end())
      return it->second;
    APInt value;
    if (matchPattern(v, m_ConstantInt(&value)))
      return value.getSExtValue();
    return std::nullopt;
  }
  int64_t bytesSent(Operation *op, int64_t rank);
  double flops(Operation *op) const;
  LogicalResult fail(Operation *op, const Twine &why) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "plan report: cannot follow '" << op->getName() << "' at "
       << op->getLoc() << ": " << why;
    error = text;
    return failure();
  }

  ModuleOp module;
  func::FuncOp entry;
  std::string &error;
  llvm::StringMap<Grid> grids;
  int64_t numRanks = 1;
  SmallVector<mx::GroupAttr> distinguishing;
  /// Per walk: known index values and host count buffers' contents.
  DenseMap<Value, int64_t> indices;
  DenseMap<Value, SmallVector<int64_t>> counts;
  std::map<std::string, int64_t> layerCalls;
  bool countLayers = false;
};

void Walker::collectDistinguishing() {
  entry.walk([&](Operation *op) {
    auto g = dyn_cast<mx::GroupOpInterface>(op);
    if (!g || !trainedLayerOf(op->getLoc()).empty())
      return;
    bool matters = isa<mx::GroupRankOp, mx::AllGatherVOp, mx::AllToAllVOp,
                       mx::BroadcastOp>(op);
    if (auto ar = dyn_cast<mx::AllReduceOp>(op))
      matters = muirrt_all_reduce_scatters(numel(ar.getInput().getType()),
                                           g.getGroup().getSize(op));
    if (matters && !llvm::is_contained(distinguishing, g.getGroup()))
      distinguishing.push_back(g.getGroup());
  });
}

LogicalResult Walker::run(StepCosts &out) {
  collectDistinguishing();
  // What every rank holds: its block of each parameter and state tensor.
  RankCost held;
  for (BlockArgument arg : entry.getArguments()) {
    auto role = entry.getArgAttrOfType<ArgRoleAttr>(
        arg.getArgNumber(), MuirDialect::RoleAttrHelper::getNameStr());
    if (!role || !isa<ShapedType>(arg.getType()))
      continue;
    int64_t bytes = numel(arg.getType()) * argElementBytes(entry, arg);
    if (role.getValue() == ArgRole::param)
      held.paramBytes += bytes;
    else if (role.getValue() == ArgRole::state)
      held.optimizerStateBytes += bytes;
  }
  out.ranks.clear();
  std::map<SmallVector<int64_t>, RankCost> byClass;
  for (int64_t rank = 0; rank < numRanks; ++rank) {
    SmallVector<int64_t> key;
    for (mx::GroupAttr g : distinguishing)
      key.push_back(place(g, rank).second);
    auto it = byClass.find(key);
    if (it == byClass.end()) {
      RankCost cost = held;
      indices.clear();
      counts.clear();
      countLayers = rank == 0;
      if (failed(walk(entry.getBody().front(), 1, rank, cost)))
        return failure();
      it = byClass.emplace(key, cost).first;
    }
    out.ranks.push_back(it->second);
  }
  out.layerCalls = layerCalls;
  return success();
}

LogicalResult Walker::walk(Block &block, int64_t times, int64_t rank,
                           RankCost &cost) {
  for (Operation &op : block)
    if (failed(visit(&op, times, rank, cost)))
      return failure();
  return success();
}

LogicalResult Walker::visit(Operation *op, int64_t times, int64_t rank,
                            RankCost &cost) {
  StringRef layer = trainedLayerOf(op->getLoc());
  // Control flow: a loop's body as often as it runs, a switch's case.
  if (auto loop = dyn_cast<scf::ForOp>(op)) {
    std::optional<int64_t> lb = known(loop.getLowerBound()),
                           ub = known(loop.getUpperBound()),
                           step = known(loop.getStep());
    if (!lb || !ub || !step || *step <= 0) {
      if (!layer.empty())
        return success();
      return fail(op, "its trip count is not a constant");
    }
    int64_t trips = *ub > *lb ? (*ub - *lb + *step - 1) / *step : 0;
    // A body whose costs depend on the induction variable (a chunk's rows)
    // runs once per value; any other once, counted `trips` times.
    if (!dependsOnIndex(loop))
      return walk(*loop.getBody(), times * trips, rank, cost);
    for (int64_t iv = *lb; iv < *ub; iv += *step) {
      indices[loop.getInductionVar()] = iv;
      if (failed(walk(*loop.getBody(), times, rank, cost)))
        return failure();
    }
    return success();
  }
  if (auto sw = dyn_cast<scf::IndexSwitchOp>(op)) {
    std::optional<int64_t> at = known(sw.getArg());
    if (!at && !layer.empty())
      return success();
    if (!at)
      return fail(op, "it switches on a value not known before the run");
    for (auto [i, c] : llvm::enumerate(sw.getCases()))
      if (c == *at)
        return walk(sw.getCaseBlock(i), times, rank, cost);
    return walk(sw.getDefaultBlock(), times, rank, cost);
  }
  if (isa<scf::IfOp, scf::WhileOp>(op)) {
    if (!layer.empty())
      return success();
    return fail(op, "its branches are decided at run time");
  }
  // Values the walk follows: constants, group ranks, count buffers.
  if (auto get = dyn_cast<memref::GetGlobalOp>(op)) {
    if (auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
            op, get.getNameAttr()))
      if (auto init = dyn_cast_or_null<DenseIntElementsAttr>(
              global.getInitialValueAttr())) {
        SmallVector<int64_t> &c = counts[get.getResult()];
        for (const APInt &v : init.getValues<APInt>())
          c.push_back(v.getSExtValue());
      }
    return success();
  }
  if (auto copy = dyn_cast<memref::CopyOp>(op)) {
    auto it = counts.find(copy.getSource());
    if (it != counts.end())
      counts[copy.getTarget()] = it->second;
    else
      counts.erase(copy.getTarget());
    return success();
  }
  if (auto gr = dyn_cast<mx::GroupRankOp>(op))
    indices[gr.getRank()] = place(gr.getGroup(), rank).second;
  // Index arithmetic (a chunk's rows): the op's own folder on the values
  // known.
  if (op->getNumResults() == 1 && op->getResult(0).getType().isIndex() &&
      op->getNumOperands() > 0) {
    SmallVector<Attribute> operands;
    for (Value v : op->getOperands())
      if (std::optional<int64_t> k = known(v))
        operands.push_back(IntegerAttr::get(v.getType(), *k));
    SmallVector<OpFoldResult> folded;
    if (operands.size() == op->getNumOperands() &&
        succeeded(op->fold(operands, folded)) && folded.size() == 1)
      if (auto value = dyn_cast_if_present<IntegerAttr>(
              dyn_cast_if_present<Attribute>(folded.front())))
        indices[op->getResult(0)] = value.getInt();
  }

  bool call = false;
  if (auto rc = dyn_cast<mx::RuntimeCallOpInterface>(op))
    call = TargetInfo::get(Target::Cpu).lowering(rc) == mx::Lowering::call;
  else if (isa<linalg::LinalgOp>(op))
    call = true;
  if (!layer.empty()) {
    if (call && countLayers)
      layerCalls[layer.str()] += times;
    return success();
  }
  if (!call)
    return success();
  cost.runtimeCalls += times;
  cost.runtimeCallsUnbatched += times;
  cost.nsFlops += static_cast<double>(times) * flops(op);
  if (auto g = dyn_cast<mx::GroupOpInterface>(op))
    if (int64_t bytes = bytesSent(op, rank))
      cost.collectiveBytes[axesKey(g.getGroup())] += times * bytes;
  return success();
}

/// The bytes the runtime counts for one call of a collective on this rank
/// (muir-rt/Collectives.h's muirrt_sent_*, by which the runtimes count).
int64_t Walker::bytesSent(Operation *op, int64_t rank) {
  auto [g, me] = place(cast<mx::GroupOpInterface>(op).getGroup(), rank);
  if (g <= 1)
    return 0;
  /// The floats of dimension 0's `rows` rows of a tensor.
  auto rowsOf = [](Value v, int64_t rows) {
    auto t = cast<ShapedType>(v.getType());
    return rows * (numel(t) / std::max<int64_t>(1, t.getDimSize(0)));
  };
  return llvm::TypeSwitch<Operation *, int64_t>(op)
      .Case([&](mx::AllReduceOp o) {
        return muirrt_sent_all_reduce(numel(o.getInput().getType()), g, me);
      })
      .Case([&](mx::SymmetricAllReduceOp o) {
        auto t = cast<ShapedType>(o.getInput().getType());
        int64_t n = t.getShape().back();
        return muirrt_sent_symmetric_all_reduce(numel(t) / (n * n), n, g);
      })
      .Case([&](mx::AllGatherOp o) {
        return muirrt_sent_blocks(numel(o.getInput().getType()), g);
      })
      .Case([&](mx::AllGatherVOp o) {
        ArrayRef<int64_t> sizes = o.getSizes();
        int64_t mine = me < static_cast<int64_t>(sizes.size()) ? sizes[me] : 0;
        return muirrt_sent_blocks(rowsOf(o.getInput(), mine), g);
      })
      .Case([&](mx::ReduceScatterOp o) {
        return muirrt_sent_blocks(numel(o.getOutput().getType()), g);
      })
      .Case([&](mx::AllToAllOp o) {
        return muirrt_sent_blocks(numel(o.getInput().getType()) / g, g);
      })
      .Case([&](mx::AllToAllVOp o) {
        int64_t others = 0;
        auto it = counts.find(o.getSendCounts());
        if (it != counts.end())
          for (auto [j, c] : llvm::enumerate(it->second))
            if (static_cast<int64_t>(j) != me)
              others += c;
        return muirrt_sent_all_to_allv(others, rowsOf(o.getInput(), 1) * 4, g,
                                       /*with_counts=*/1);
      })
      .Case([&](mx::TriangleAllReduceStartOp o) {
        auto t = cast<ShapedType>(o.getC().getType());
        int64_t n = t.getShape().back(), batch = numel(t) / (n * n);
        return muirrt_sent_triangle_rows(
            batch, n, known(o.getRowBegin()).value_or(0),
            known(o.getRowEnd()).value_or(n), g);
      })
      .Case([&](mx::BroadcastOp o) {
        return muirrt_sent_broadcast(numel(o.getInput().getType()), g,
                                     me == static_cast<int64_t>(o.getRoot()));
      })
      .Default([](Operation *) { return 0; });
}

/// The flops of a product (2 per multiply-add; a SYRK computes one
/// triangle), 0 for other ops.
double Walker::flops(Operation *op) const {
  auto dims = [](Value v) {
    ArrayRef<int64_t> s = cast<ShapedType>(v.getType()).getShape();
    double batch = s.size() == 3 ? static_cast<double>(s[0]) : 1.0;
    return std::make_tuple(batch, static_cast<double>(s[s.size() - 2]),
                           static_cast<double>(s.back()));
  };
  return llvm::TypeSwitch<Operation *, double>(op)
      .Case([&](mx::GemmOp o) {
        auto [batch, ar, ac] = dims(o.getA());
        auto [cb, m, n] = dims(o.getC());
        double k = o.getTransposeA() ? ar : ac;
        // A symmetric product computes the upper triangle in blocks.
        if (o.getSymmetric())
          return batch * muirrt_symmetric_gemm_flops(static_cast<int64_t>(n),
                                                     static_cast<int64_t>(k));
        return 2 * batch * m * n * k;
      })
      .Case([&](mx::SyrkOp o) {
        auto [batch, ar, ac] = dims(o.getA());
        double n = o.getTranspose() ? ac : ar, k = o.getTranspose() ? ar : ac;
        return batch * n * (n + 1) * k;
      })
      .Case([&](mx::SyrkRowsOp o) {
        auto [batch, ar, ac] = dims(o.getA());
        double n = o.getTranspose() ? ac : ar, k = o.getTranspose() ? ar : ac;
        int64_t b = known(o.getRowBegin()).value_or(0),
                e = known(o.getRowEnd()).value_or(static_cast<int64_t>(n));
        return batch * 2 * k *
               static_cast<double>(muirrt_triangle_rows_floats(
                   static_cast<int64_t>(n), b, e));
      })
      .Default([](Operation *) { return 0.0; });
}

} // namespace

LogicalResult mlir::muir::analyzeStepCosts(ModuleOp module, StepCosts &costs,
                                           std::string &error) {
  func::FuncOp fn;
  for (auto f : module.getOps<func::FuncOp>())
    if (!f.isExternal() &&
        (!fn || f->hasAttr(MuirDialect::EntryAttrHelper::getNameStr())))
      fn = f;
  if (!fn) {
    error = "plan report: the module has no step function";
    return failure();
  }
  return Walker(module, fn, error).run(costs);
}

/// The parameter an update writes: its operand traced back through views
/// and slices to the step's argument.
static BlockArgument parameterOf(Value v) {
  for (int i = 0; i < 1000; ++i) {
    if (auto arg = dyn_cast<BlockArgument>(v))
      return isa<func::FuncOp>(arg.getOwner()->getParentOp()) ? arg
                                                               : nullptr;
    Operation *def = v.getDefiningOp();
    if (!def || def->getNumOperands() == 0)
      return nullptr;
    v = def->getOperand(0);
  }
  return nullptr;
}

/// The reason a `muir.ns_why` gives, as the report prints it.
static std::string whyText(NSWhyAttr why) {
  switch (why.getReason()) {
  case NSReason::requested:
    return "requested";
  case NSReason::both_dims:
    return "split on both matrix dimensions: duplicated";
  case NSReason::fsdp_owner:
    return "fsdp owner";
  case NSReason::layout_invariant:
    return "layout-invariant: duplicated";
  case NSReason::cost_model:
    break;
  }
  SmallVector<NSCandidate> weighed;
  for (NSCandidateAttr c : why.getCandidates()) {
    NSCandidate n;
    n.mode = fixedMode(c.getMode()).value_or(NewtonSchulzMode::duplicated);
    n.gram = c.getForm() == NSForm::gram;
    n.cost.seconds = c.getMs().convertToDouble() / 1e3;
    n.cost.commBytes = c.getMb().convertToDouble() * 1e6;
    weighed.push_back(n);
  }
  return describe(weighed,
                  why.getMachine() ? stringify(*why.getMachine()) : "");
}

/// The parameters an op was made for: its location's `param <name>` parts
/// (several for a batched Newton-Schulz), in order.
static SmallVector<StringRef> parametersNamedBy(Location loc) {
  SmallVector<StringRef> names;
  loc->walk([&](Location l) {
    if (auto named = dyn_cast<NameLoc>(l)) {
      StringRef name = named.getName().getValue();
      if (name.consume_front(kParamLoc) &&
          !llvm::is_contained(names, name))
        names.push_back(name);
    }
    return WalkResult::advance();
  });
  return names;
}

/// muir-gram-newton-schulz's records (the op each Newton-Schulz left: its
/// first result has the shape of X), one entry per matrix name and shape,
/// in the order of the step's arguments.
static LogicalResult readForms(ModuleOp planned, StepCosts &costs,
                               std::string &error) {
  std::map<std::string, unsigned> argOf;
  planned.walk([&](func::FuncOp fn) {
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      if (auto name = fn.getArgAttrOfType<StringAttr>(
              i, MuirDialect::NameAttrHelper::getNameStr()))
        argOf.emplace(name.getValue().str(), i);
  });
  // (argument, order found): the parameters' order, then the IR's.
  std::vector<std::pair<std::pair<unsigned, size_t>, FormPlan>> found;
  WalkResult walked = planned.walk([&](Operation *op) {
    auto cost = op->getAttrOfType<NSFormCostAttr>(
        MuirDialect::NsFormCostAttrHelper::getNameStr());
    auto form = op->getAttrOfType<NSFormAttr>(
        MuirDialect::NsFormAttrHelper::getNameStr());
    if (!cost || !form)
      return WalkResult::advance();
    auto type = cast<ShapedType>(op->getResult(0).getType());
    int64_t rank = type.getRank();
    FormPlan f;
    f.rows = type.getDimSize(rank - 2);
    f.cols = type.getDimSize(rank - 1);
    f.batch = rank == 3 ? type.getDimSize(0) : 1;
    f.gram = form.getValue() == NSForm::gram;
    f.standardSeconds = cost.getStandard().convertToDouble() / f.batch;
    f.gramSeconds = cost.getGram().convertToDouble() / f.batch;
    SmallVector<StringRef> names = parametersNamedBy(op->getLoc());
    if (names.empty()) {
      error = "plan report: a Newton-Schulz's location names no parameter";
      return WalkResult::interrupt();
    }
    for (StringRef name : names) {
      f.name = name.str();
      auto arg = argOf.find(f.name);
      found.push_back(
          {{arg == argOf.end() ? ~0u : arg->second, found.size()}, f});
    }
    return WalkResult::advance();
  });
  if (walked.wasInterrupted())
    return failure();
  llvm::sort(found, [](auto &a, auto &b) { return a.first < b.first; });
  costs.forms.clear();
  for (auto &[arg, f] : found)
    if (llvm::none_of(costs.forms, [&](const FormPlan &g) {
          return g.name == f.name && g.rows == f.rows && g.cols == f.cols;
        }))
      costs.forms.push_back(f);
  return success();
}

LogicalResult mlir::muir::analyzeDecisions(ModuleOp planned, StepCosts &costs,
                                           std::string &error) {
  if (failed(readForms(planned, costs, error)))
    return failure();
  // Per parameter (by argument number, the description's order): its
  // first update's decisions (a split update writes several blocks alike).
  std::map<unsigned, std::pair<MatrixPlan, std::optional<OwnedMatrix>>> seen;
  WalkResult walked = planned.walk([&](ApplyUpdateOp op) {
    auto mode = op->getAttrOfType<NewtonSchulzModeAttr>(
        MuirDialect::NsModeAttrHelper::getNameStr());
    auto owner = op->getAttrOfType<IntegerAttr>(
        MuirDialect::DpOwnerAttrHelper::getNameStr());
    if (!mode && !owner)
      return WalkResult::advance();
    BlockArgument arg = parameterOf(op->getOperand(0));
    auto fn = arg ? dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp())
                  : func::FuncOp();
    auto name =
        fn ? fn.getArgAttrOfType<StringAttr>(
                 arg.getArgNumber(), MuirDialect::NameAttrHelper::getNameStr())
           : StringAttr();
    if (!name) {
      error = "plan report: an update's parameter is not a named argument of "
              "the step";
      return WalkResult::interrupt();
    }
    if (seen.count(arg.getArgNumber()))
      return WalkResult::advance();
    MatrixPlan plan;
    plan.name = name.getValue().str();
    plan.dpOwner = owner ? owner.getInt() : -1;
    std::optional<OwnedMatrix> owned;
    if (owner) {
      auto weight = op->getAttrOfType<FloatAttr>(
          MuirDialect::DpWeightAttrHelper::getNameStr());
      bool fsdp = false;
      // An FSDP shard of a matrix dimension (not a stack's experts).
      int64_t rank = cast<ShapedType>(arg.getType()).getRank();
      if (auto shards = fn.getArgAttrOfType<ArrayAttr>(
              arg.getArgNumber(), MuirDialect::ShardsAttrHelper::getNameStr()))
        for (auto s : shards.getAsRange<ShardAttr>())
          fsdp |= s.getKind() == ShardKind::fsdp && s.getDim() >= rank - 2;
      owned = OwnedMatrix{plan.name, owner.getInt(),
                          weight ? weight.getValueAsDouble() : 0.0, fsdp};
    }
    if (mode) {
      plan.mode =
          fixedMode(mode.getValue()).value_or(NewtonSchulzMode::duplicated);
      auto ms = op->getAttrOfType<FloatAttr>(
          MuirDialect::ModelledMsAttrHelper::getNameStr());
      plan.modelledSeconds = ms ? ms.getValueAsDouble() / 1e3 : 0.0;
      if (auto why = op->getAttrOfType<NSWhyAttr>(
              MuirDialect::NsWhyAttrHelper::getNameStr()))
        plan.why = whyText(why);
    } else {
      plan.name.clear(); // shared out over dp only
    }
    seen[arg.getArgNumber()] = {plan, owned};
    return WalkResult::advance();
  });
  if (walked.wasInterrupted())
    return failure();
  costs.matrices.clear();
  costs.owned.clear();
  for (auto &[arg, decided] : seen) {
    if (!decided.first.name.empty())
      costs.matrices.push_back(decided.first);
    if (decided.second)
      costs.owned.push_back(*decided.second);
  }
  return success();
}
