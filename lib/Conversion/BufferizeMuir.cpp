//===- BufferizeMuir.cpp - muir ops' BufferizableOpInterface models -------===//
//
// Every muir op that computes tensors bufferizes to its muir_exec runtime op
// (or, for the fused SYRK all-reduce, a loop of them): it reads its tensor
// operands, writes none of them, and each tensor result is a fresh
// allocation (static identity layout, the options' alignment, the memory
// space of the tensor's encoding: #muir_exec.host for the counts MPI and
// NCCL read on the host) that the exec op writes. muir.probe becomes
// muir_exec.observe. One-shot bufferize drives the models
// (muir-lower-to-exec); what is muir's own around it, the in-place state
// updates and the frees, is in LowerToExec.cpp.
//
// Runtime calls take static identity-layout buffers (a pointer and static
// sizes), so an operand whose buffer is a view (a slice of a row or column
// block) is copied into a fresh buffer first.
//
//===----------------------------------------------------------------------===//
#include "muir/Conversion/Passes.h"
#include "muir/Transforms/PassInput.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace mlir::muir;
using namespace mlir::bufferization;
namespace mx = mlir::muir_exec;

void mlir::muir::copyBuffer(OpBuilder &b, Location loc, Value from, Value to) {
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

namespace {

/// The buffers of one op being bufferized: its tensor operands' and its
/// results', and the rewriter to build its exec ops with.
struct ExecBuilder {
  RewriterBase &b;
  Location loc;
  IRMapping buffers;
  /// The buffer of a tensor operand or result (null for an absent
  /// optional operand).
  Value in(Value tensor) { return tensor ? buffers.lookup(tensor) : Value(); }
  Value out(Value result) { return buffers.lookup(result); }
  MLIRContext *ctx() { return b.getContext(); }
};

mx::ScoringAttr scoringAttr(MLIRContext *ctx, RouteScoring scoring) {
  return mx::ScoringAttr::get(ctx, scoring == RouteScoring::sigmoid
                                       ? mx::Scoring::sigmoid
                                       : mx::Scoring::softmax);
}

/// C = alpha op(A) op(B) + beta acc: the runtime call reads the
/// accumulator itself (scaling it into C on the way), so no copy here.
Value accOf(ExecBuilder &x, Value acc, Value betaValue, FloatAttr beta) {
  return acc && (betaValue || beta.getValueAsDouble() != 0.0) ? x.in(acc)
                                                               : Value();
}

/// Expert dispatch and combine always call the runtime, even on one rank:
/// the expansion into expert-major rows is the same work either way.
template <typename MoeOp> mx::GroupAttr moeGroup(ExecBuilder &x, MoeOp op) {
  return mx::GroupAttr::get(x.ctx(), op.getGridAttr(), op.getGridAxes());
}

StringAttr layerOf(ExecBuilder &x, StringAttr layer) {
  return layer ? layer : x.b.getStringAttr("");
}

mx::ReductionAttr reductionAttr(MLIRContext *ctx, ReductionKind kind) {
  return mx::ReductionAttr::get(
      ctx, *mx::symbolizeReduction(stringifyReductionKind(kind)));
}

//===----------------------------------------------------------------------===//
// One build() per op: its exec ops, given the buffers.
//===----------------------------------------------------------------------===//

/// A collective over a group: its runtime op, or a copy on a group of one.
LogicalResult buildCollective(ExecBuilder &x, Operation *op) {
  auto gridRef = op->getAttrOfType<FlatSymbolRefAttr>("grid");
  auto grid = SymbolTable::lookupNearestSymbolFrom<GridOp>(op, gridRef);
  auto axes = op->getAttrOfType<ArrayAttr>("grid_axes");
  int64_t group = grid ? grid.getGroupSize(axes) : 0;
  Value out = x.out(op->getResult(0));
  Value input = x.in(op->getOperand(0));
  RewriterBase &b = x.b;
  Location loc = x.loc;
  // On one rank per group a collective moves nothing: its result is its
  // input (and all_gatherv with one size is the unpadded input). The
  // pipeline's canonicalization folds these away before bufferization (the
  // ops' folders); IR bufferized on its own still gets the copy.
  if (group == 1 && !isa<AllToAllVOp>(op)) {
    memref::CopyOp::create(b, loc, input, out);
    return success();
  }
  auto groupAttr = mx::GroupAttr::get(x.ctx(), gridRef, axes);
  if (auto ar = dyn_cast<AllReduceOp>(op)) {
    mx::AllReduceOp::create(b, loc, input, out, groupAttr,
                            reductionAttr(x.ctx(), ar.getReduction()));
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
                                reductionAttr(x.ctx(), rs.getReduction()));
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
    mx::AllToAllVOp::create(b, loc, input, x.in(a2av.getSendCounts()), out,
                            x.out(a2av.getRecvCounts()), groupAttr);
  }
  return success();
}

LogicalResult build(ExecBuilder &x, FrobeniusNormalizeOp op) {
  mx::FrobeniusNormalizeOp::create(x.b, x.loc, x.in(op.getInput()),
                                   x.out(op.getResult()), op.getEpsAttr());
  return success();
}

LogicalResult build(ExecBuilder &x, SumSquaresOp op) {
  mx::SumSquaresOp::create(x.b, x.loc, x.in(op.getInput()),
                           x.out(op.getResult()));
  return success();
}

LogicalResult build(ExecBuilder &x, ScaleByNormOp op) {
  mx::ScaleByNormOp::create(x.b, x.loc, x.in(op.getInput()),
                            x.in(op.getSumSquares()), x.out(op.getResult()),
                            op.getEpsAttr());
  return success();
}

LogicalResult build(ExecBuilder &x, TransposeOp op) {
  mx::TransposeOp::create(x.b, x.loc, x.in(op.getInput()),
                          x.out(op.getResult()));
  return success();
}

LogicalResult build(ExecBuilder &x, MatmulOp op) {
  mx::GemmOp::create(
      x.b, x.loc, x.in(op.getA()), x.in(op.getB()), x.out(op.getResult()),
      accOf(x, op.getAcc(), op.getBetaValue(), op.getBetaAttr()),
      op.getAlphaValue(), op.getBetaValue(), op.getAlphaAttr(),
      op.getBetaAttr(), op.getTransposeAAttr(), op.getTransposeBAttr(),
      op.getSymmetricAttr(), op.getRowStableAttr());
  return success();
}

LogicalResult build(ExecBuilder &x, SyrkOp op) {
  mx::SyrkOp::create(
      x.b, x.loc, x.in(op.getA()), x.out(op.getResult()),
      accOf(x, op.getAcc(), op.getBetaValue(), op.getBetaAttr()),
      op.getAlphaValue(), op.getBetaValue(), op.getAlphaAttr(),
      op.getBetaAttr(), op.getTransposeAttr());
  return success();
}

LogicalResult build(ExecBuilder &x, TraceNormalizeOp op) {
  mx::TraceNormalizeOp::create(x.b, x.loc, x.in(op.getInput()),
                               x.out(op.getResult()), x.out(op.getScale()),
                               op.getEpsAttr());
  return success();
}

LogicalResult build(ExecBuilder &x, ScaleMatricesOp op) {
  mx::ScaleMatricesOp::create(x.b, x.loc, x.in(op.getInput()),
                              x.in(op.getScale()), x.out(op.getResult()));
  return success();
}

/// With a run-time token count, the rows after the first `tokens` are not
/// written by the runtime call: they are filled first (dropped slots: -1
/// and 0; gradients 0), by an element-wise linalg.generic (loops on the
/// CPU, a kernel on the CUDA target).
void fillUnrouted(ExecBuilder &x, Value tokens, ArrayRef<Value> buffers) {
  if (!tokens)
    return;
  for (Value buf : buffers) {
    auto type = cast<MemRefType>(buf.getType());
    Type et = type.getElementType();
    TypedAttr fill = et.isInteger(64) ? TypedAttr(x.b.getI64IntegerAttr(-1))
                                      : TypedAttr(x.b.getFloatAttr(et, 0.0));
    SmallVector<AffineMap> maps = {
        AffineMap::getMultiDimIdentityMap(type.getRank(), x.ctx())};
    SmallVector<utils::IteratorType> iterators(type.getRank(),
                                               utils::IteratorType::parallel);
    linalg::GenericOp::create(
        x.b, x.loc, ValueRange{}, ValueRange{buf}, maps, iterators,
        [&](OpBuilder &nb, Location loc, ValueRange) {
          Value v = arith::ConstantOp::create(nb, loc, fill);
          linalg::YieldOp::create(nb, loc, v);
        });
  }
}

LogicalResult build(ExecBuilder &x, GroupedMatmulOp op) {
  mx::GroupedGemmOp::create(x.b, x.loc, x.in(op.getInput()),
                            x.in(op.getWeights()), x.in(op.getSizes()),
                            x.out(op.getResult()), op.getTransposeBAttr(),
                            op.getBf16OperandsAttr());
  return success();
}

LogicalResult build(ExecBuilder &x, CapacityOp op) {
  fillUnrouted(x, op.getTokens(),
               {x.out(op.getKeptIndices()), x.out(op.getKeptWeights())});
  mx::CapacityOp::create(
      x.b, x.loc, x.in(op.getIndices()), x.in(op.getWeights()),
      x.out(op.getKeptIndices()), x.out(op.getKeptWeights()),
      x.out(op.getCounts()), op.getTokens(), op.getCapacityFactorAttr(),
      mx::DropPolicyAttr::get(x.ctx(), op.getPolicy() == DropPolicy::position
                                           ? mx::DropPolicy::position
                                           : mx::DropPolicy::weight),
      op.getGroupTokensAttr());
  return success();
}

LogicalResult build(ExecBuilder &x, MseLossOp op) {
  mx::MseLossOp::create(x.b, x.loc, x.in(op.getInput()), x.in(op.getTarget()),
                        x.out(op.getLoss()), x.out(op.getGrad()),
                        op.getScaleAttr());
  return success();
}

LogicalResult build(ExecBuilder &x, GroupedMatmulWgradOp op) {
  mx::GroupedGemmWgradOp::create(x.b, x.loc, x.in(op.getInput()),
                                 x.in(op.getGrad()), x.in(op.getSizes()),
                                 x.out(op.getResult()), op.getTransposeBAttr(),
                                 op.getBf16OperandsAttr());
  return success();
}

LogicalResult build(ExecBuilder &x, RouteGradOp op) {
  fillUnrouted(x, op.getTokens(), {x.out(op.getResult())});
  mx::RouteGradOp::create(
      x.b, x.loc, x.in(op.getLogits()), x.in(op.getIndices()),
      x.in(op.getWeightsGrad()), x.out(op.getResult()), op.getTokens(),
      scoringAttr(x.ctx(), op.getScoring()), op.getSoftmaxAfterTopkAttr(),
      op.getNormalizeAttr(), op.getScalingAttr());
  return success();
}

LogicalResult build(ExecBuilder &x, DispatchOp op) {
  mx::MoeDispatchOp::create(
      x.b, x.loc, x.in(op.getInput()), x.in(op.getIndices()),
      x.in(op.getWeights()), x.out(op.getResult()), x.out(op.getCounts()),
      x.out(op.getPlan()), moeGroup(x, op), op.getNumExpertsAttr(),
      layerOf(x, op.getLayerAttr()));
  return success();
}

LogicalResult build(ExecBuilder &x, CombineOp op) {
  mx::MoeCombineOp::create(
      x.b, x.loc, x.in(op.getInput()), x.in(op.getIndices()),
      x.in(op.getPlan()), x.in(op.getWeights()), x.out(op.getResult()),
      moeGroup(x, op), op.getNumExpertsAttr(), layerOf(x, op.getLayerAttr()));
  return success();
}

LogicalResult build(ExecBuilder &x, CombineWeightsGradOp op) {
  mx::MoeCombineWeightsGradOp::create(
      x.b, x.loc, x.in(op.getGrad()), x.in(op.getInput()),
      x.in(op.getIndices()), x.in(op.getPlan()), x.out(op.getResult()),
      moeGroup(x, op), op.getNumExpertsAttr(), layerOf(x, op.getLayerAttr()));
  return success();
}

LogicalResult build(ExecBuilder &x, RouteOp op) {
  fillUnrouted(x, op.getTokens(),
               {x.out(op.getIndices()), x.out(op.getWeights())});
  mx::RouteOp::create(
      x.b, x.loc, x.in(op.getLogits()), x.in(op.getBias()),
      x.out(op.getIndices()), x.out(op.getWeights()), x.out(op.getCounts()),
      op.getTokens(),
      scoringAttr(x.ctx(), op.getScoring()), op.getSoftmaxAfterTopkAttr(),
      op.getNormalizeAttr(), op.getNGroupAttr(), op.getTopkGroupAttr(),
      op.getScalingAttr());
  return success();
}

LogicalResult build(ExecBuilder &x, ProbeOp op) {
  // Observation slots hold f32: an f64 tensor is observed rounded (the
  // copy is freed with the step's other temporaries).
  Value in = x.in(op.getInput());
  auto type = cast<MemRefType>(in.getType());
  Value observed = in;
  if (!type.getElementType().isF32()) {
    observed = memref::AllocOp::create(
        x.b, x.loc, MemRefType::get(type.getShape(), x.b.getF32Type()));
    SmallVector<AffineMap> maps(
        2, AffineMap::getMultiDimIdentityMap(type.getRank(), x.ctx()));
    SmallVector<utils::IteratorType> iterators(type.getRank(),
                                               utils::IteratorType::parallel);
    linalg::GenericOp::create(
        x.b, x.loc, ValueRange{in}, ValueRange{observed}, maps, iterators,
        [&](OpBuilder &nb, Location loc, ValueRange args) {
          Value v = arith::TruncFOp::create(nb, loc, nb.getF32Type(), args[0]);
          linalg::YieldOp::create(nb, loc, v);
        });
  }
  mx::ObserveOp::create(x.b, x.loc, observed, op.getLabelAttr(),
                        op.getSlotAttr());
  return success();
}

LogicalResult build(ExecBuilder &x, SyrkAllReduceOp op) {
  // Chunk j's rows of the triangle are computed, then their exchange is
  // started; chunk j - 1's is finished only after that, so each
  // exchange is in flight during the next chunk's SYRK:
  //   syrk_rows 0; start 0;
  //   for j in 1..J-1: syrk_rows j; start j; wait j-1
  //   wait J-1
  RewriterBase &b = x.b;
  Location loc = x.loc;
  Value a = x.in(op.getA()), out = x.out(op.getResult());
  int64_t n = cast<ShapedType>(op.getResult().getType()).getShape().back();
  if (n == 0)
    return success();
  int64_t rows =
      op.getChunkRows() > 0 ? std::min<int64_t>(op.getChunkRows(), n) : n;
  int64_t chunks = (n + rows - 1) / rows;
  auto group = mx::GroupAttr::get(x.ctx(), op.getGridAttr(), op.getGridAxes());
  auto index = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v).getResult();
  };
  auto chunk = [&](OpBuilder &cb, Value r0, Value r1) -> Value {
    mx::SyrkRowsOp::create(cb, loc, a, out, r0, r1, op.getAlphaAttr(),
                           op.getTransposeAttr());
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

//===----------------------------------------------------------------------===//
// The model
//===----------------------------------------------------------------------===//

/// A fresh buffer for a result: static identity layout, in the memory
/// space the options give the tensor type (its encoding).
FailureOr<BaseMemRefType> resultType(Value result,
                                     const BufferizationOptions &options) {
  auto tensor = cast<TensorType>(result.getType());
  std::optional<Attribute> space = options.defaultMemorySpaceFn(tensor);
  if (!space)
    return failure();
  return getMemRefTypeWithStaticIdentityLayout(tensor, *space);
}

template <typename OpTy>
struct RuntimeOpModel
    : public BufferizableOpInterface::ExternalModel<RuntimeOpModel<OpTy>,
                                                    OpTy> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return false;
  }
  AliasingValueList getAliasingValues(Operation *, OpOperand &,
                                      const AnalysisState &) const {
    return {};
  }
  bool bufferizesToAllocation(Operation *, Value) const { return true; }

  FailureOr<BufferLikeType> getBufferType(Operation *, Value value,
                                          const BufferizationOptions &options,
                                          const BufferizationState &,
                                          SmallVector<Value> &) const {
    FailureOr<BaseMemRefType> type = resultType(value, options);
    if (failed(type))
      return failure();
    return cast<BufferLikeType>(*type);
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    rewriter.setInsertionPoint(op);
    ExecBuilder x{rewriter, op->getLoc(), {}};
    for (Value operand : op->getOperands()) {
      if (!isa<TensorType>(operand.getType()) || x.buffers.contains(operand))
        continue;
      FailureOr<Value> buffer = getBuffer(rewriter, operand, options, state);
      if (failed(buffer))
        return failure();
      auto type = cast<MemRefType>(buffer->getType());
      if (!type.getLayout().isIdentity()) {
        auto flat =
            MemRefType::get(type.getShape(), type.getElementType(),
                            MemRefLayoutAttrInterface(), type.getMemorySpace());
        FailureOr<Value> copy = options.createAlloc(rewriter, x.loc, flat, {});
        if (failed(copy))
          return failure();
        copyBuffer(rewriter, x.loc, *buffer, *copy);
        buffer = copy;
      }
      x.buffers.map(operand, *buffer);
    }
    SmallVector<Value> results;
    for (Value result : op->getResults()) {
      FailureOr<BaseMemRefType> type = resultType(result, options);
      if (failed(type))
        return op->emitOpError("has no memory space for result #")
               << cast<OpResult>(result).getResultNumber();
      FailureOr<Value> buffer =
          options.createAlloc(rewriter, x.loc, cast<MemRefType>(*type), {});
      if (failed(buffer))
        return failure();
      x.buffers.map(result, *buffer);
      results.push_back(*buffer);
    }
    if (failed(buildExec(x, cast<OpTy>(op))))
      return failure();
    replaceOpWithBufferizedValues(rewriter, op, results);
    return success();
  }

  static LogicalResult buildExec(ExecBuilder &x, OpTy op) {
    if constexpr (llvm::is_one_of<OpTy, AllReduceOp, SymmetricAllReduceOp,
                                  AllGatherOp, AllGatherVOp, ReduceScatterOp,
                                  AllToAllOp, AllToAllVOp, BroadcastOp,
                                  AllSliceOp>::value)
      return buildCollective(x, op);
    else
      return build(x, op);
  }
};

template <typename... Ops> void attach(MLIRContext *ctx) {
  (Ops::template attachInterface<RuntimeOpModel<Ops>>(*ctx), ...);
}

} // namespace

void mlir::muir::registerBufferizableOpInterfaceExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, MuirDialect *) {
    attach<FrobeniusNormalizeOp, SumSquaresOp, ScaleByNormOp, TransposeOp,
           MatmulOp, SyrkOp, TraceNormalizeOp, ScaleMatricesOp, GroupedMatmulOp,
           CapacityOp, MseLossOp, GroupedMatmulWgradOp, RouteGradOp, DispatchOp,
           CombineOp, CombineWeightsGradOp, RouteOp, ProbeOp, SyrkAllReduceOp,
           AllReduceOp, SymmetricAllReduceOp, AllGatherOp, AllGatherVOp,
           ReduceScatterOp, AllToAllOp, AllToAllVOp, BroadcastOp, AllSliceOp>(
        ctx);
    // The dialects of the ops the models create (as upstream's models do).
    ctx->loadDialect<mx::MuirExecDialect, memref::MemRefDialect,
                     linalg::LinalgDialect, arith::ArithDialect,
                     scf::SCFDialect>();
  });
}
