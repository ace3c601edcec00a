//===- LowerToExec.cpp - tensor-level muir to exec IR ---------------------===//
//
// A purpose-built bufferization for training-step functions. The function's
// tensors are named state (parameters, gradients, optimizer state) that the
// step updates in place, so the exec function takes one buffer per argument,
// returns nothing, and writes each `muir.updates` result into its
// argument's buffer: directly when the producing op is the argument's last
// reader (element-wise kernels may read and write the same element), with a
// copy otherwise. Every other tensor becomes a fresh 64-byte-aligned
// allocation, freed before returning. The counts of ragged exchanges are
// allocated in `#muir_exec.host` memory, which MPI and NCCL read them from,
// and so is every tensor they are copied from or into, or views of (switch
// results and yields, reshapes, slices' sources, concatenations' inputs).
//
//===----------------------------------------------------------------------===//
#include "muir/Passes.h"

#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::muir {
#define GEN_PASS_DEF_MUIRLOWERTOEXEC
#include "muir/Passes.h.inc"
} // namespace mlir::muir

using namespace mlir;
using namespace mlir::muir;
namespace mx = mlir::muir_exec;

/// A router's scoring as the runtime call's typed attribute.
static mx::ScoringAttr scoringAttr(OpBuilder &b, RouteScoring scoring) {
  return mx::ScoringAttr::get(b.getContext(), scoring == RouteScoring::sigmoid
                                                  ? mx::Scoring::sigmoid
                                                  : mx::Scoring::softmax);
}

namespace {

/// An element-wise kernel (muir-elementwise-to-linalg's): each element of
/// an output depends only on the same element of each input and not on the
/// output's initial value, so it may write a buffer it reads.
bool isElementwise(Operation *op) {
  auto g = dyn_cast<linalg::GenericOp>(op);
  return g && g.getNumLoops() == g.getNumParallelLoops() &&
         llvm::all_of(g.getIndexingMapsArray(),
                      [](AffineMap m) { return m.isIdentity(); }) &&
         llvm::none_of(g.getDpsInitsMutable(), [&](OpOperand &init) {
           return g.payloadUsesValueFromOperand(&init);
         });
}

/// Whether a generic's body reads tensors from outside it (it then is no
/// kernel this pass can put on buffers).
bool capturesTensors(linalg::GenericOp g) {
  bool captured = false;
  g.getRegion().walk([&](Operation *inner) {
    for (Value v : inner->getOperands())
      captured |= isa<TensorType>(v.getType()) &&
                  !g.getRegion().isAncestor(v.getParentRegion());
  });
  return captured;
}

bool isCollective(Operation *op) {
  return isa<AllReduceOp, SymmetricAllReduceOp, AllGatherOp, AllGatherVOp,
             ReduceScatterOp, AllToAllOp, AllToAllVOp, BroadcastOp, AllSliceOp>(
      op);
}

class FunctionLowering {
public:
  FunctionLowering(func::FuncOp func) : func(func), b(func) {}

  LogicalResult run();

private:
  LogicalResult checkSignature();
  void planInPlace();
  void planHostCounts();
  LogicalResult lowerOp(Operation *op);
  LogicalResult lowerScalar(Operation *op);
  LogicalResult lowerCollective(Operation *op);
  LogicalResult lowerReshape(Operation *op);
  LogicalResult lower(FrobeniusNormalizeOp norm);
  LogicalResult lower(SumSquaresOp ss);
  LogicalResult lower(ScaleByNormOp sc);
  LogicalResult lower(TransposeOp tr);
  LogicalResult lower(MatmulOp mm);
  LogicalResult lower(SyrkOp syrk);
  LogicalResult lower(TraceNormalizeOp tn);
  LogicalResult lower(ScaleMatricesOp sm);
  LogicalResult lower(GroupedMatmulOp gm);
  LogicalResult lower(CapacityOp cap);
  LogicalResult lower(MseLossOp mse);
  LogicalResult lower(GroupedMatmulWgradOp wg);
  LogicalResult lower(RouteGradOp rg);
  LogicalResult lower(DispatchOp d);
  LogicalResult lower(CombineOp c);
  LogicalResult lower(CombineWeightsGradOp cw);
  LogicalResult lower(RouteOp route);
  LogicalResult lower(ProbeOp probe);
  LogicalResult lower(SyrkAllReduceOp fused);
  LogicalResult lower(GroupRankOp gr);
  LogicalResult lower(scf::IndexSwitchOp sw);
  LogicalResult lower(linalg::GenericOp g);
  LogicalResult lower(tensor::EmptyOp empty);
  LogicalResult lower(arith::ConstantOp cst);
  LogicalResult lower(tensor::ExtractSliceOp slice);
  LogicalResult lower(tensor::ConcatOp concat);
  LogicalResult lower(func::ReturnOp ret);
  Value output(Value tensorResult);
  /// The buffer an already lowered tensor lives in.
  Value in(Value tensor) { return map.lookup(tensor); }
  static double f64(FloatAttr a) { return a.getValueAsDouble(); }
  /// C = alpha op(A) op(B) + beta acc: the runtime call reads the
  /// accumulator itself (scaling it into C on the way), so no copy here.
  Value accOf(Value acc, FloatAttr beta) {
    return acc && f64(beta) != 0.0 ? in(acc) : Value();
  }
  /// Expert dispatch and combine always call the runtime, even on one
  /// rank: the expansion into expert-major rows is the same work either
  /// way.
  template <typename MoeOp> mx::GroupAttr moeGroup(MoeOp moeOp) {
    return mx::GroupAttr::get(b.getContext(), moeOp.getGridAttr(),
                              moeOp.getGridAxes());
  }
  StringAttr layerOf(StringAttr layer) {
    return layer ? layer : b.getStringAttr("");
  }
  /// A copy between views: a plain memref.copy (memcpy) when both are
  /// contiguous, else an element-wise linalg.copy (loops after lowering,
  /// with no runtime library behind it).
  void copyStrided(Value from, Value to) {
    auto contiguous = [](Value v) {
      auto t = cast<MemRefType>(v.getType());
      return t.getLayout().isIdentity() ||
             memref::isStaticShapeAndContiguousRowMajor(t);
    };
    if (contiguous(from) && contiguous(to))
      memref::CopyOp::create(b, loc, from, to);
    else
      linalg::CopyOp::create(b, loc, from, to);
  }

  func::FuncOp func;
  OpBuilder b;
  Location loc = func.getLoc();
  IRMapping map;
  /// Allocations of the function body (front) and of each enclosing
  /// scf.index_switch case being lowered (back); each scope frees its own.
  SmallVector<SmallVector<Value>> allocScopes{1};
  /// Argument index each returned value is written to.
  SmallVector<int64_t> resultTargets;
  /// Op results computed directly into an argument's buffer.
  DenseMap<Value, unsigned> inPlace;
  /// Tensors whose buffers are in #muir_exec.host memory.
  DenseSet<Value> hostCounts;
  func::FuncOp newFunc;
};

LogicalResult FunctionLowering::checkSignature() {
  FunctionType type = func.getFunctionType();
  for (auto [i, t] : llvm::enumerate(type.getInputs())) {
    auto tensor = dyn_cast<RankedTensorType>(t);
    bool ok = (tensor && tensor.hasStaticShape() &&
               tensor.getElementType().isF32()) ||
              t.isInteger(64) || t.isF64();
    if (!ok)
      return func.emitOpError("argument ")
             << i << ": expected a static f32 tensor, the i64 step or an "
             << "f64 hyperparameter, got " << t;
    if (tensor && !func.getArgAttrOfType<StringAttr>(i, "muir.name"))
      return func.emitOpError("argument ")
             << i << ": expected a 'muir.name' attribute naming the tensor";
  }
  for (unsigned i = 0; i < type.getNumResults(); ++i) {
    auto target = func.getResultAttrOfType<StringAttr>(i, "muir.updates");
    if (!target)
      return func.emitOpError("result ")
             << i << ": expected a 'muir.updates' attribute naming the "
             << "argument it updates";
    int64_t found = -1;
    for (unsigned a = 0; a < func.getNumArguments(); ++a)
      if (auto name = func.getArgAttrOfType<StringAttr>(a, "muir.name"))
        if (name == target)
          found = a;
    if (found < 0)
      return func.emitOpError("result ")
             << i << " updates '" << target.getValue()
             << "', which is not an argument's muir.name";
    if (type.getInput(found) != type.getResult(i))
      return func.emitOpError("result ")
             << i << " has type " << type.getResult(i) << " but updates '"
             << target.getValue() << "' of type " << type.getInput(found);
    if (llvm::is_contained(resultTargets, found))
      return func.emitOpError("argument '")
             << target.getValue() << "' is updated by two results";
    resultTargets.push_back(found);
  }
  if (!func.getBody().hasOneBlock())
    return func.emitOpError("expected a single-block function");
  return success();
}

/// A result may be computed straight into its argument's buffer when the
/// return is its only use and nothing reads the argument afterwards; runtime
/// calls (GEMM, ...) must also not read that argument themselves.
void FunctionLowering::planInPlace() {
  Block &body = func.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    Operation *producer = v.getDefiningOp();
    if (!producer || !v.hasOneUse() || isCollective(producer) ||
        (producer->getNumRegions() && !isElementwise(producer)) ||
        producer->getBlock() != &body)
      continue;
    BlockArgument arg = func.getArgument(resultTargets[i]);
    bool readsArg = llvm::is_contained(producer->getOperands(), Value(arg));
    if (readsArg && !isElementwise(producer))
      continue;
    // Readers nested in a switch count where their switch stands.
    bool laterReader = llvm::any_of(arg.getUsers(), [&](Operation *user) {
      Operation *top = body.findAncestorOpInBlock(*user);
      return top != producer && !top->isBeforeInBlock(producer);
    });
    if (!laterReader)
      inPlace[v] = resultTargets[i];
  }
}

/// The all_to_allv counts, with every tensor their buffers are copied from
/// or into (a switch's yields and results, the sources of slices and
/// concatenations) or views of (reshapes), so that each copy and view stays
/// within host memory.
void FunctionLowering::planHostCounts() {
  SmallVector<Value> work;
  func.walk([&](AllToAllVOp x) {
    work.push_back(x.getSendCounts());
    work.push_back(x.getRecvCounts());
  });
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!hostCounts.insert(v).second)
      continue;
    if (auto r = dyn_cast<OpResult>(v)) {
      Operation *def = r.getOwner();
      if (auto sw = dyn_cast<scf::IndexSwitchOp>(def))
        for (Region &region : sw->getRegions())
          work.push_back(
              region.front().getTerminator()->getOperand(r.getResultNumber()));
      if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp,
              tensor::ExtractSliceOp>(def))
        work.push_back(def->getOperand(0));
      if (auto concat = dyn_cast<tensor::ConcatOp>(def))
        llvm::append_range(work, concat.getInputs());
    }
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (isa<scf::YieldOp>(user))
        if (auto sw = dyn_cast<scf::IndexSwitchOp>(user->getParentOp()))
          work.push_back(sw.getResult(use.getOperandNumber()));
      if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(user))
        work.push_back(user->getResult(0));
    }
  }
}

Value FunctionLowering::output(Value result) {
  auto it = inPlace.find(result);
  if (it != inPlace.end())
    return newFunc.getArgument(it->second);
  auto t = cast<RankedTensorType>(result.getType());
  Attribute space;
  if (hostCounts.contains(result))
    space = mx::HostMemoryAttr::get(b.getContext());
  auto type = MemRefType::get(t.getShape(), t.getElementType(),
                              MemRefLayoutAttrInterface(), space);
  Value buf = memref::AllocOp::create(b, loc, type, b.getI64IntegerAttr(64));
  allocScopes.back().push_back(buf);
  return buf;
}

/// One op of the tensor program, lowered into the exec function: its
/// operands' buffers from `map`, its results' buffers from output() (or an
/// argument's, in place). Each op kind has its own lower() below.
LogicalResult FunctionLowering::lowerOp(Operation *op) {
  loc = op->getLoc();
  if (isCollective(op))
    return lowerCollective(op);
  if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(op))
    return lowerReshape(op);
  if (isa<NewtonSchulzOp, MuonUpdateOp>(op))
    return op->emitOpError("must be expanded before lowering to exec IR "
                           "(run muir-decompose-optimizers and "
                           "muir-expand-newton-schulz first)");
  return TypeSwitch<Operation *, LogicalResult>(op)
      .Case<FrobeniusNormalizeOp, SumSquaresOp, ScaleByNormOp, TransposeOp,
            MatmulOp, SyrkOp, TraceNormalizeOp, ScaleMatricesOp,
            GroupedMatmulOp, CapacityOp, MseLossOp, GroupedMatmulWgradOp,
            RouteGradOp, DispatchOp, CombineOp, CombineWeightsGradOp, RouteOp,
            ProbeOp, SyrkAllReduceOp, GroupRankOp, scf::IndexSwitchOp,
            linalg::GenericOp, tensor::EmptyOp, arith::ConstantOp,
            tensor::ExtractSliceOp, tensor::ConcatOp, func::ReturnOp>(
          [&](auto typed) { return lower(typed); })
      .Default([&](Operation *other) { return lowerScalar(other); });
}

/// Scalar bookkeeping (constants, integer arithmetic) carries over as is.
LogicalResult FunctionLowering::lowerScalar(Operation *op) {
  auto isTensor = [](Type t) { return isa<TensorType>(t); };
  if (llvm::none_of(op->getOperandTypes(), isTensor) &&
      llvm::none_of(op->getResultTypes(), isTensor) &&
      op->getNumRegions() == 0) {
    b.clone(*op, map);
    return success();
  }
  return op->emitOpError("cannot be lowered to exec IR");
}

/// A collective over a group: its runtime op, or a copy on a group of one.
LogicalResult FunctionLowering::lowerCollective(Operation *op) {
  auto gridRef = op->getAttrOfType<FlatSymbolRefAttr>("grid");
  auto grid = SymbolTable::lookupNearestSymbolFrom<GridOp>(op, gridRef);
  auto axes = op->getAttrOfType<ArrayAttr>("grid_axes");
  int64_t group = grid ? grid.getGroupSize(axes) : 0;
  Value out = output(op->getResult(0));
  map.map(op->getResult(0), out);
  Value input = in(op->getOperand(0));
  // On one rank per group a collective moves nothing: its result is its
  // input (and all_gatherv with one size is the unpadded input). The
  // pipeline's canonicalization folds these away before this pass (the
  // ops' folders); IR lowered on its own still gets the copy.
  if (group == 1 && !isa<AllToAllVOp>(op)) {
    memref::CopyOp::create(b, loc, input, out);
    return success();
  }
  auto groupAttr = mx::GroupAttr::get(b.getContext(), gridRef, axes);
  auto reductionAttr = [&](ReductionKind kind) {
    return mx::ReductionAttr::get(
        b.getContext(), *mx::symbolizeReduction(stringifyReductionKind(kind)));
  };
  if (auto ar = dyn_cast<AllReduceOp>(op)) {
    mx::AllReduceOp::create(b, loc, input, out, groupAttr,
                            reductionAttr(ar.getReduction()));
  } else if (isa<SymmetricAllReduceOp>(op)) {
    mx::SymmetricAllReduceOp::create(b, loc, input, out, groupAttr);
  } else if (auto ag = dyn_cast<AllGatherOp>(op)) {
    mx::AllGatherOp::create(b, loc, input, out, groupAttr,
                            ag.getGatherAxisAttr());
  } else if (auto agv = dyn_cast<AllGatherVOp>(op)) {
    if (agv.getGatherAxisAttr().getInt() != 0)
      return op->emitOpError("ragged gathers along a dimension other than "
                             "0 are not supported yet");
    mx::AllGatherVOp::create(b, loc, input, out, groupAttr, agv.getSizesAttr());
  } else if (auto rs = dyn_cast<ReduceScatterOp>(op)) {
    mx::ReduceScatterOp::create(b, loc, input, out, groupAttr,
                                rs.getScatterAxisAttr(),
                                reductionAttr(rs.getReduction()));
  } else if (auto a2a = dyn_cast<AllToAllOp>(op)) {
    if (a2a.getSplitAxisAttr().getInt() != 0 ||
        a2a.getConcatAxisAttr().getInt() != 0)
      return op->emitOpError("all_to_all other than split and concat on "
                             "dimension 0 is not supported yet");
    mx::AllToAllOp::create(b, loc, input, out, groupAttr);
  } else if (auto bc = dyn_cast<BroadcastOp>(op)) {
    mx::BroadcastOp::create(b, loc, input, out, groupAttr, bc.getRootAttr());
  } else if (auto sl = dyn_cast<AllSliceOp>(op)) {
    mx::AllSliceOp::create(b, loc, input, out, groupAttr,
                           sl.getSliceAxisAttr());
  } else {
    auto a2av = cast<AllToAllVOp>(op);
    Value sendCounts = in(a2av.getSendCounts());
    Value recvCounts = output(a2av.getRecvCounts());
    mx::AllToAllVOp::create(b, loc, input, sendCounts, out, recvCounts,
                            groupAttr);
    map.map(a2av.getRecvCounts(), recvCounts);
  }
  return success();
}

/// Reshapes of contiguous buffers are views; a function argument's buffer
/// is copied first, since the step may update it in place later.
LogicalResult FunctionLowering::lowerReshape(Operation *op) {
  Value src = in(op->getOperand(0));
  if (isa<BlockArgument>(src)) {
    Value copy = output(op->getOperand(0));
    memref::CopyOp::create(b, loc, src, copy);
    src = copy;
  }
  Value view;
  if (auto c = dyn_cast<tensor::CollapseShapeOp>(op))
    view = memref::CollapseShapeOp::create(b, loc, src,
                                           c.getReassociationIndices());
  else {
    auto e = cast<tensor::ExpandShapeOp>(op);
    auto t = e.getResultType();
    view = memref::ExpandShapeOp::create(
        b, loc,
        MemRefType::get(t.getShape(), t.getElementType(),
                        MemRefLayoutAttrInterface(),
                        cast<MemRefType>(src.getType()).getMemorySpace()),
        src, e.getReassociationIndices());
  }
  map.map(op->getResult(0), view);
  return success();
}

LogicalResult FunctionLowering::lower(FrobeniusNormalizeOp norm) {
  Value out = output(norm.getResult());
  mx::FrobeniusNormalizeOp::create(b, loc, in(norm.getInput()), out,
                                   norm.getEpsAttr());
  map.map(norm.getResult(), out);
  return success();
}

LogicalResult FunctionLowering::lower(SumSquaresOp ss) {
  Value out = output(ss.getResult());
  mx::SumSquaresOp::create(b, loc, in(ss.getInput()), out);
  map.map(ss.getResult(), out);
  return success();
}

LogicalResult FunctionLowering::lower(ScaleByNormOp sc) {
  Value out = output(sc.getResult());
  mx::ScaleByNormOp::create(b, loc, in(sc.getInput()), in(sc.getSumSquares()),
                            out, sc.getEpsAttr());
  map.map(sc.getResult(), out);
  return success();
}

LogicalResult FunctionLowering::lower(TransposeOp tr) {
  Value out = output(tr.getResult());
  mx::TransposeOp::create(b, loc, in(tr.getInput()), out);
  map.map(tr.getResult(), out);
  return success();
}

LogicalResult FunctionLowering::lower(MatmulOp mm) {
  Value out = output(mm.getResult());
  mx::GemmOp::create(b, loc, in(mm.getA()), in(mm.getB()), out,
                     accOf(mm.getAcc(), mm.getBetaAttr()), mm.getAlphaAttr(),
                     mm.getBetaAttr(), mm.getTransposeAAttr(),
                     mm.getTransposeBAttr(), mm.getSymmetricAttr());
  map.map(mm.getResult(), out);
  return success();
}

LogicalResult FunctionLowering::lower(SyrkOp syrk) {
  Value out = output(syrk.getResult());
  mx::SyrkOp::create(
      b, loc, in(syrk.getA()), out, accOf(syrk.getAcc(), syrk.getBetaAttr()),
      syrk.getAlphaAttr(), syrk.getBetaAttr(), syrk.getTransposeAttr());
  map.map(syrk.getResult(), out);
  return success();
}

LogicalResult FunctionLowering::lower(TraceNormalizeOp tn) {
  Value out = output(tn.getResult()), scale = output(tn.getScale());
  mx::TraceNormalizeOp::create(b, loc, in(tn.getInput()), out, scale,
                               tn.getEpsAttr());
  map.map(tn.getResult(), out);
  map.map(tn.getScale(), scale);
  return success();
}

LogicalResult FunctionLowering::lower(ScaleMatricesOp sm) {
  Value out = output(sm.getResult());
  mx::ScaleMatricesOp::create(b, loc, in(sm.getInput()), in(sm.getScale()),
                              out);
  map.map(sm.getResult(), out);
  return success();
}

LogicalResult FunctionLowering::lower(GroupedMatmulOp gm) {
  Value out = output(gm.getResult());
  mx::GroupedGemmOp::create(b, loc, in(gm.getInput()), in(gm.getWeights()),
                            in(gm.getSizes()), out, gm.getTransposeBAttr());
  map.map(gm.getResult(), out);
  return success();
}

LogicalResult FunctionLowering::lower(CapacityOp cap) {
  Value ki = output(cap.getKeptIndices()), kw = output(cap.getKeptWeights()),
        counts = output(cap.getCounts());
  mx::CapacityOp::create(
      b, loc, in(cap.getIndices()), in(cap.getWeights()), ki, kw, counts,
      cap.getCapacityFactorAttr(),
      mx::DropPolicyAttr::get(b.getContext(),
                              cap.getPolicy() == DropPolicy::position
                                  ? mx::DropPolicy::position
                                  : mx::DropPolicy::weight),
      cap.getGroupTokensAttr());
  map.map(cap.getKeptIndices(), ki);
  map.map(cap.getKeptWeights(), kw);
  map.map(cap.getCounts(), counts);
  return success();
}

LogicalResult FunctionLowering::lower(MseLossOp mse) {
  Value loss = output(mse.getLoss()), grad = output(mse.getGrad());
  mx::MseLossOp::create(b, loc, in(mse.getInput()), in(mse.getTarget()), loss,
                        grad, mse.getScaleAttr());
  map.map(mse.getLoss(), loss);
  map.map(mse.getGrad(), grad);
  return success();
}

LogicalResult FunctionLowering::lower(GroupedMatmulWgradOp wg) {
  Value out = output(wg.getResult());
  mx::GroupedGemmWgradOp::create(b, loc, in(wg.getInput()), in(wg.getGrad()),
                                 in(wg.getSizes()), out,
                                 wg.getTransposeBAttr());
  map.map(wg.getResult(), out);
  return success();
}

LogicalResult FunctionLowering::lower(RouteGradOp rg) {
  Value out = output(rg.getResult());
  mx::RouteGradOp::create(
      b, loc, in(rg.getLogits()), in(rg.getIndices()), in(rg.getWeightsGrad()),
      out, scoringAttr(b, rg.getScoring()), rg.getSoftmaxAfterTopkAttr(),
      rg.getNormalizeAttr(), rg.getScalingAttr());
  map.map(rg.getResult(), out);
  return success();
}

LogicalResult FunctionLowering::lower(DispatchOp d) {
  Value out = output(d.getResult()), counts = output(d.getCounts()),
        plan = output(d.getPlan());
  mx::MoeDispatchOp::create(b, loc, in(d.getInput()), in(d.getIndices()),
                            d.getWeights() ? in(d.getWeights()) : Value(), out,
                            counts, plan, moeGroup(d), d.getNumExpertsAttr(),
                            layerOf(d.getLayerAttr()));
  map.map(d.getResult(), out);
  map.map(d.getCounts(), counts);
  map.map(d.getPlan(), plan);
  return success();
}

LogicalResult FunctionLowering::lower(CombineOp c) {
  Value out = output(c.getResult());
  mx::MoeCombineOp::create(
      b, loc, in(c.getInput()), in(c.getIndices()), in(c.getPlan()),
      c.getWeights() ? in(c.getWeights()) : Value(), out, moeGroup(c),
      c.getNumExpertsAttr(), layerOf(c.getLayerAttr()));
  map.map(c.getResult(), out);
  return success();
}

LogicalResult FunctionLowering::lower(CombineWeightsGradOp cw) {
  Value out = output(cw.getResult());
  mx::MoeCombineWeightsGradOp::create(
      b, loc, in(cw.getGrad()), in(cw.getInput()), in(cw.getIndices()),
      in(cw.getPlan()), out, moeGroup(cw), cw.getNumExpertsAttr(),
      layerOf(cw.getLayerAttr()));
  map.map(cw.getResult(), out);
  return success();
}

LogicalResult FunctionLowering::lower(RouteOp route) {
  Value indices = output(route.getIndices());
  Value weights = output(route.getWeights());
  Value counts = output(route.getCounts());
  mx::RouteOp::create(b, loc, in(route.getLogits()),
                      route.getBias() ? in(route.getBias()) : Value(), indices,
                      weights, counts, scoringAttr(b, route.getScoring()),
                      route.getSoftmaxAfterTopkAttr(), route.getNormalizeAttr(),
                      route.getNGroupAttr(), route.getTopkGroupAttr(),
                      route.getScalingAttr());
  map.map(route.getIndices(), indices);
  map.map(route.getWeights(), weights);
  map.map(route.getCounts(), counts);
  return success();
}

LogicalResult FunctionLowering::lower(ProbeOp probe) {
  mx::ObserveOp::create(b, loc, in(probe.getInput()), probe.getLabelAttr(),
                        probe.getSlotAttr());
  return success();
}

LogicalResult FunctionLowering::lower(SyrkAllReduceOp fused) {
  // Chunk j's rows of the triangle are computed, then their exchange is
  // started; chunk j - 1's is finished only after that, so each
  // exchange is in flight during the next chunk's SYRK:
  //   syrk_rows 0; start 0;
  //   for j in 1..J-1: syrk_rows j; start j; wait j-1
  //   wait J-1
  Value a = in(fused.getA());
  Value out = output(fused.getResult());
  map.map(fused.getResult(), out);
  int64_t n = cast<ShapedType>(fused.getResult().getType()).getShape().back();
  if (n == 0)
    return success();
  int64_t rows =
      fused.getChunkRows() > 0 ? std::min<int64_t>(fused.getChunkRows(), n) : n;
  int64_t chunks = (n + rows - 1) / rows;
  auto group = mx::GroupAttr::get(b.getContext(), fused.getGridAttr(),
                                  fused.getGridAxes());
  auto index = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v).getResult();
  };
  auto chunk = [&](OpBuilder &cb, Value r0, Value r1) -> Value {
    mx::SyrkRowsOp::create(cb, loc, a, out, r0, r1, fused.getAlphaAttr(),
                           fused.getTransposeAttr());
    return mx::TriangleAllReduceStartOp::create(
        cb, loc, mx::RequestType::get(cb.getContext()), out, r0, r1, group);
  };
  Value cRows = index(rows), c0 = index(0), cN = index(n);
  Value last = chunk(b, c0, cRows);
  if (chunks > 1) {
    Value c1 = index(1);
    auto loop = scf::ForOp::create(
        b, loc, c1, index(chunks), c1, ValueRange{last},
        [&](OpBuilder &lb, Location, Value j, ValueRange prev) {
          Value r0 = arith::MulIOp::create(lb, loc, j, cRows);
          Value r1 = arith::MinSIOp::create(
              lb, loc, arith::AddIOp::create(lb, loc, r0, cRows), cN);
          Value started = chunk(lb, r0, r1);
          // The previous chunk's rows: [r0 - rows, r0).
          Value p0 = arith::SubIOp::create(lb, loc, r0, cRows);
          mx::TriangleAllReduceWaitOp::create(lb, loc, prev[0], out, p0, r0);
          scf::YieldOp::create(lb, loc, started);
        });
    last = loop.getResult(0);
  }
  mx::TriangleAllReduceWaitOp::create(
      b, loc, last, out, chunks > 1 ? index((chunks - 1) * rows) : c0, cN);
  return success();
}

LogicalResult FunctionLowering::lower(GroupRankOp gr) {
  if (gr.getGroupSize() == 1) {
    map.map(gr.getRank(), arith::ConstantIndexOp::create(b, loc, 0));
    return success();
  }
  map.map(gr.getRank(), mx::GroupRankOp::create(
                            b, loc, b.getIndexType(),
                            mx::GroupAttr::get(b.getContext(), gr.getGridAttr(),
                                               gr.getGridAxes())));
  return success();
}

/// Rank-dependent work: each case's tensors live (and are freed) inside
/// the case; its yielded tensors are copied into buffers allocated before
/// the switch.
LogicalResult FunctionLowering::lower(scf::IndexSwitchOp sw) {
  SmallVector<Value> outs;
  for (Value r : sw.getResults())
    outs.push_back(output(r));
  auto lowered =
      scf::IndexSwitchOp::create(b, loc, TypeRange{}, map.lookup(sw.getArg()),
                                 sw.getCasesAttr(), sw.getNumCases());
  OpBuilder::InsertionGuard guard(b);
  auto lowerRegion = [&](Region &from, Region &to) -> LogicalResult {
    b.createBlock(&to);
    allocScopes.emplace_back();
    for (Operation &inner : from.front()) {
      if (auto yield = dyn_cast<scf::YieldOp>(&inner)) {
        loc = yield.getLoc();
        for (auto [v, out] : llvm::zip(yield.getOperands(), outs))
          if (map.lookup(v) != out)
            memref::CopyOp::create(b, loc, map.lookup(v), out);
        for (Value buf : allocScopes.back())
          memref::DeallocOp::create(b, loc, buf);
        scf::YieldOp::create(b, loc);
        continue;
      }
      if (failed(lowerOp(&inner)))
        return failure();
    }
    allocScopes.pop_back();
    return success();
  };
  for (auto [from, to] :
       llvm::zip(sw.getCaseRegions(), lowered.getCaseRegions()))
    if (failed(lowerRegion(from, to)))
      return failure();
  if (failed(lowerRegion(sw.getDefaultRegion(), lowered.getDefaultRegion())))
    return failure();
  for (auto [r, out] : llvm::zip(sw.getResults(), outs))
    map.map(r, out);
  return success();
}

/// Element-wise kernels: the same generic on buffers, writing into the
/// results' buffers. An init the body reads is copied in first.
LogicalResult FunctionLowering::lower(linalg::GenericOp g) {
  Operation *op = g.getOperation();
  if (!g.hasPureTensorSemantics() || capturesTensors(g))
    return op->emitOpError("expected a linalg.generic on tensors whose "
                           "body reads only its operands' elements");
  SmallVector<Value> ins, outs;
  for (Value v : g.getDpsInputs())
    ins.push_back(in(v));
  for (auto [result, init] :
       llvm::zip(g->getResults(), g.getDpsInitsMutable())) {
    Value out = output(result);
    if (g.payloadUsesValueFromOperand(&init) && in(init.get()) != out)
      copyStrided(in(init.get()), out);
    outs.push_back(out);
    map.map(result, out);
  }
  auto lowered = linalg::GenericOp::create(b, loc, TypeRange{}, ins, outs,
                                           g.getIndexingMapsArray(),
                                           g.getIteratorTypesArray());
  b.cloneRegionBefore(g.getRegion(), lowered.getRegion(),
                      lowered.getRegion().end(), map);
  return success();
}

/// Uninitialised tensors (padding that is never read) are allocations,
/// except where they only stand for a kernel's unread inits.
LogicalResult FunctionLowering::lower(tensor::EmptyOp empty) {
  bool unread = llvm::all_of(empty->getUses(), [](OpOperand &use) {
    auto g = dyn_cast<linalg::GenericOp>(use.getOwner());
    return g && g.isDpsInit(&use) && !g.payloadUsesValueFromOperand(&use);
  });
  if (!unread)
    map.map(empty.getResult(), output(empty.getResult()));
  return success();
}

/// Constant count tensors (static ragged exchanges) are small buffers.
LogicalResult FunctionLowering::lower(arith::ConstantOp cst) {
  Operation *op = cst.getOperation();
  if (auto dense = dyn_cast<DenseIntElementsAttr>(cst.getValue())) {
    Value out = output(cst.getResult());
    SmallVector<int64_t> strides =
        computeSuffixProduct(dense.getShapedType().getShape());
    for (auto [i, v] : llvm::enumerate(dense.getValues<APInt>())) {
      SmallVector<Value> idx;
      for (int64_t d : delinearize(i, strides))
        idx.push_back(arith::ConstantIndexOp::create(b, loc, d));
      Value c = arith::ConstantOp::create(
          b, loc, b.getIntegerAttr(dense.getElementType(), v));
      memref::StoreOp::create(b, loc, c, out, idx);
    }
    map.map(cst.getResult(), out);
    return success();
  }
  return lowerScalar(op);
}

/// Row blocks of split updates: copies through subviews. Blocks of whole
/// rows are contiguous, so these copies are plain memcpys.
LogicalResult FunctionLowering::lower(tensor::ExtractSliceOp slice) {
  Operation *op = slice.getOperation();
  if (!slice.hasUnitStride() || !slice.getSourceType().hasStaticShape() ||
      !slice.getType().hasStaticShape() ||
      ShapedType::isDynamicShape(slice.getStaticOffsets()))
    return op->emitOpError("only static unit-stride slices lower to exec "
                           "IR");
  Value out = output(slice.getResult());
  Value view = memref::SubViewOp::create(
      b, loc, in(slice.getSource()), slice.getMixedOffsets(),
      slice.getMixedSizes(), slice.getMixedStrides());
  copyStrided(view, out);
  map.map(slice.getResult(), out);
  return success();
}

LogicalResult FunctionLowering::lower(tensor::ConcatOp concat) {
  Value out = output(concat.getResult());
  int64_t dim = concat.getDim(), offset = 0;
  auto outType = cast<MemRefType>(out.getType());
  for (Value part : concat.getInputs()) {
    auto partType = cast<RankedTensorType>(part.getType());
    SmallVector<OpFoldResult> offsets(outType.getRank(), b.getIndexAttr(0));
    offsets[dim] = b.getIndexAttr(offset);
    SmallVector<OpFoldResult> sizes, strides;
    for (int64_t d : partType.getShape())
      sizes.push_back(b.getIndexAttr(d));
    strides.assign(outType.getRank(), b.getIndexAttr(1));
    Value view =
        memref::SubViewOp::create(b, loc, out, offsets, sizes, strides);
    copyStrided(in(part), view);
    offset += partType.getDimSize(dim);
  }
  map.map(concat.getResult(), out);
  return success();
}

LogicalResult FunctionLowering::lower(func::ReturnOp ret) {
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    Value target = newFunc.getArgument(resultTargets[i]);
    if (map.lookup(v) != target)
      memref::CopyOp::create(b, loc, map.lookup(v), target);
  }
  for (Value buf : allocScopes.front())
    memref::DeallocOp::create(b, loc, buf);
  func::ReturnOp::create(b, loc);
  return success();
}

LogicalResult FunctionLowering::run() {
  if (failed(checkSignature()))
    return failure();
  planInPlace();
  planHostCounts();

  SmallVector<Type> inputs;
  for (Type t : func.getFunctionType().getInputs()) {
    if (auto tensor = dyn_cast<RankedTensorType>(t))
      inputs.push_back(
          MemRefType::get(tensor.getShape(), tensor.getElementType()));
    else
      inputs.push_back(t);
  }
  newFunc = func::FuncOp::create(b, func.getLoc(), func.getName(),
                                 b.getFunctionType(inputs, {}));
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    newFunc.setArgAttrs(i, func.getArgAttrDict(i));
  newFunc->setAttr("muir.entry", b.getUnitAttr());
  Block *entry = newFunc.addEntryBlock();
  for (auto [o, n] : llvm::zip(func.getArguments(), entry->getArguments()))
    map.map(o, n);

  b.setInsertionPointToStart(entry);
  for (Operation &op : func.getBody().front())
    if (failed(lowerOp(&op))) {
      newFunc.erase();
      return failure();
    }
  func.erase();
  return success();
}

struct LowerToExecPass
    : public mlir::muir::impl::MuirLowerToExecBase<LowerToExecPass> {
  void runOnOperation() override {
    SmallVector<func::FuncOp> funcs;
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal() || func->hasAttr("muir.entry"))
        continue;
      bool named = false;
      for (unsigned i = 0; i < func.getNumArguments(); ++i)
        named |= bool(func.getArgAttr(i, "muir.name"));
      if (named)
        funcs.push_back(func);
    }
    for (func::FuncOp func : funcs) {
      muir::applyElementwiseToLinalg(func);
      if (failed(FunctionLowering(func).run()))
        return signalPassFailure();
    }
  }
};

} // namespace
