//===- ExecToGPUMoe.cpp - the MoE layer's permute and combine kernels -----===//
//
// Part of muir-exec-to-gpu (ExecToGPU.cpp): a MoE layer whose experts are
// all on this rank, as the runtime's plan plus generated kernels.
//
//===----------------------------------------------------------------------===//
#include "ExecToGPUInternal.h"

using namespace mlir;
namespace mx = mlir::muir_exec;

namespace mlir::muir::exec_to_gpu {

//===----------------------------------------------------------------------===//
// Mixture of experts (all of a layer's experts on this rank)
//===----------------------------------------------------------------------===//

/// The CUDA target runs a MoE layer's exchange only for a group of one.
LogicalResult checkOneRank(Operation *op, mx::GroupAttr group) {
  int64_t g = group.getSize(op);
  if (g == 1)
    return success();
  return op->emitOpError("spreads the experts over ")
         << g
         << " ranks; the CUDA target runs MoE layers with every expert on "
            "one rank (ep = 1) so far: compile this step for --target=cpu";
}

/// What the generated MoE kernels assume of a layer's buffers: static,
/// identity layouts (flat views), at least one token, one row per (token,
/// slot) pair (bound >= tokens x k) and a plan of 2 bound + 4 entries.
LogicalResult checkMoeBuffers(Operation *op, Value indices, Value rows,
                              Value plan) {
  for (Value v : op->getOperands())
    if (auto t = dyn_cast<MemRefType>(v.getType());
        t && (!t.hasStaticShape() || !t.getLayout().isIdentity()))
      return op->emitOpError("takes a buffer that is not static and "
                             "contiguous; the CUDA target's MoE kernels "
                             "need flat views");
  auto it = cast<MemRefType>(indices.getType());
  int64_t tokens = it.getDimSize(0), k = it.getDimSize(1);
  int64_t bound = cast<MemRefType>(rows.getType()).getDimSize(0);
  if (tokens < 1)
    return op->emitOpError("has no tokens");
  if (bound < tokens * k)
    return op->emitOpError("has a bound of ")
           << bound << " rows under its " << tokens << " tokens x " << k
           << " slots; the CUDA target needs one row per pair";
  if (cast<MemRefType>(plan.getType()).getDimSize(0) != 2 * bound + 4)
    return op->emitOpError("has a plan of ")
           << cast<MemRefType>(plan.getType()).getDimSize(0)
           << " entries; one rank's is 2 x " << bound << " + 4";
  return success();
}

/// A MoE op's sizes, once checkOneRank and checkMoeBuffers accept it.
struct MoeShape {
  int64_t tokens, k, hidden, bound;
};
FailureOr<MoeShape> checkMoe(Operation *op, mx::GroupAttr group,
                             Value indices,
                             Value rows, Value plan) {
  if (failed(checkOneRank(op, group)) ||
      failed(checkMoeBuffers(op, indices, rows, plan)))
    return failure();
  auto it = cast<MemRefType>(indices.getType());
  auto rt = cast<MemRefType>(rows.getType());
  return MoeShape{it.getDimSize(0), it.getDimSize(1), rt.getDimSize(1),
                  rt.getDimSize(0)};
}

/// plan[at] as an index and whether it names something (>= 0); a missing
/// entry reads as 0 so that its loads stay in bounds.
std::pair<Value, Value> planEntry(OpBuilder &b, Location loc, Value plan,
                                  Value at) {
  Value v = memref::LoadOp::create(b, loc, plan, ValueRange{at});
  Value zero = arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(0));
  Value valid =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, v, zero);
  Value safe = arith::SelectOp::create(b, loc, valid, v, zero);
  return {arith::IndexCastOp::create(b, loc, b.getIndexType(), safe), valid};
}

/// muir_exec.moe_dispatch -> muir_exec.moe_plan (the runtime's counting)
/// and a generated gather: out[r] = x[token of plan[r]] (times its weight),
/// zero past the routed rows.
LogicalResult lowerDispatch(mx::MoeDispatchOp d) {
  FailureOr<MoeShape> shape = checkMoe(d, d.getGroup(), d.getIndices(),
                                       d.getOutput(), d.getPlan());
  if (failed(shape))
    return failure();
  auto [tokens, k, hidden, bound] = *shape;
  (void)tokens;
  OpBuilder b(d);
  Location loc = d.getLoc();
  mx::MoePlanOp::create(b, loc, d.getIndices(), d.getCounts(), d.getPlan(),
                        d.getNumExperts(), bound, d.getLayer());
  if (bound * hidden > 0) {
    Value x = flat(b, loc, d.getInput()), out = flat(b, loc, d.getOutput());
    Value w = d.getWeights() ? flat(b, loc, d.getWeights()) : Value();
    auto [ib, i] = launchOver(d, bound * hidden, "muir_moe_permute");
    Value h = cIndex(ib, loc, hidden);
    Value r = arith::DivUIOp::create(ib, loc, i, h);
    Value col = arith::RemUIOp::create(ib, loc, i, h);
    auto [pair, valid] = planEntry(ib, loc, d.getPlan(), r);
    Value t = arith::DivUIOp::create(ib, loc, pair, cIndex(ib, loc, k));
    Value at = arith::AddIOp::create(
        ib, loc, arith::MulIOp::create(ib, loc, t, h), col);
    Value v = memref::LoadOp::create(ib, loc, x, ValueRange{at});
    if (w)
      v = arith::MulFOp::create(
          ib, loc, memref::LoadOp::create(ib, loc, w, ValueRange{pair}), v);
    Value zero = arith::ConstantOp::create(ib, loc, ib.getF32FloatAttr(0));
    v = arith::SelectOp::create(ib, loc, valid, v, zero);
    memref::StoreOp::create(ib, loc, v, out, ValueRange{i});
  }
  d.erase();
  return success();
}

/// buf[r * h + col] (a flat row-major view) as f64.
Value loadF64(OpBuilder &b, Location loc, Value buf, Value r, Value h,
              Value col) {
  Value at =
      arith::AddIOp::create(b, loc, arith::MulIOp::create(b, loc, r, h), col);
  return arith::ExtFOp::create(
      b, loc, b.getF64Type(),
      memref::LoadOp::create(b, loc, buf, ValueRange{at}).getResult());
}

/// The sum over i in [0, count), in order and in double, of the terms
/// term(i) returns (with a flag, or null, saying whether the term counts),
/// rounded to f32: an scf.for carrying the sum.
Value sumInDouble(
    OpBuilder &b, Location loc, Value count,
    function_ref<std::pair<Value, Value>(OpBuilder &, Value)> term) {
  Value zero = arith::ConstantOp::create(b, loc, b.getF64FloatAttr(0));
  auto loop = scf::ForOp::create(b, loc, cIndex(b, loc, 0), count,
                                 cIndex(b, loc, 1), ValueRange{zero});
  OpBuilder lb = OpBuilder::atBlockBegin(loop.getBody());
  Value acc = loop.getRegionIterArgs()[0];
  auto [v, counts] = term(lb, loop.getInductionVar());
  Value sum = arith::AddFOp::create(lb, loc, acc, v);
  if (counts)
    sum = arith::SelectOp::create(lb, loc, counts, sum, acc);
  scf::YieldOp::create(lb, loc, ValueRange{sum});
  return arith::TruncFOp::create(b, loc, b.getF32Type(), loop.getResult(0));
}

/// muir_exec.moe_combine -> a generated kernel, one thread per output
/// element: out[t][h] = the sum over slots j in order of w[t][j] *
/// rows[row of (t, j)][h], in double (the CPU runtime's arithmetic).
LogicalResult lowerCombine(mx::MoeCombineOp c) {
  FailureOr<MoeShape> shape = checkMoe(c, c.getGroup(), c.getIndices(),
                                       c.getInput(), c.getPlan());
  if (failed(shape))
    return failure();
  auto [tokens, k, hidden, bound] = *shape;
  OpBuilder b(c);
  Location loc = c.getLoc();
  if (tokens * hidden > 0) {
    Value rows = flat(b, loc, c.getInput()), out = flat(b, loc, c.getOutput());
    Value w = c.getWeights() ? flat(b, loc, c.getWeights()) : Value();
    auto [ib, i] = launchOver(c, tokens * hidden, "muir_moe_combine");
    Value h = cIndex(ib, loc, hidden);
    Value t = arith::DivUIOp::create(ib, loc, i, h);
    Value col = arith::RemUIOp::create(ib, loc, i, h);
    Value first = arith::AddIOp::create(
        ib, loc, arith::MulIOp::create(ib, loc, t, cIndex(ib, loc, k)),
        cIndex(ib, loc, bound));
    Value result = sumInDouble(
        ib, loc, cIndex(ib, loc, k),
        [&](OpBuilder &lb, Value j) -> std::pair<Value, Value> {
          auto [row, valid] = planEntry(
              lb, loc, c.getPlan(), arith::AddIOp::create(lb, loc, first, j));
          Value v = loadF64(lb, loc, rows, row, h, col);
          if (w) {
            Value p = arith::AddIOp::create(
                lb, loc, arith::MulIOp::create(lb, loc, t, cIndex(lb, loc, k)),
                j);
            Value wt = arith::ExtFOp::create(
                lb, loc, lb.getF64Type(),
                memref::LoadOp::create(lb, loc, w, ValueRange{p}).getResult());
            v = arith::MulFOp::create(lb, loc, wt, v);
          }
          return {v, valid};
        });
    memref::StoreOp::create(ib, loc, result, out, ValueRange{i});
  }
  c.erase();
  return success();
}

/// muir_exec.moe_combine_weights_grad -> a generated kernel, one thread per
/// (token, slot): the dot product (double, in order) of the output
/// gradient's row with the pair's expert row; 0 for a dropped slot.
LogicalResult lowerCombineWeightsGrad(mx::MoeCombineWeightsGradOp c) {
  FailureOr<MoeShape> shape = checkMoe(c, c.getGroup(), c.getIndices(),
                                       c.getInput(), c.getPlan());
  if (failed(shape))
    return failure();
  auto [tokens, k, hidden, bound] = *shape;
  OpBuilder b(c);
  Location loc = c.getLoc();
  if (tokens * k > 0) {
    Value grad = flat(b, loc, c.getGrad()), rows = flat(b, loc, c.getInput());
    Value out = flat(b, loc, c.getOutput());
    auto [ib, p] = launchOver(c, tokens * k, "muir_moe_combine_weights_grad");
    Value h = cIndex(ib, loc, hidden);
    Value t = arith::DivUIOp::create(ib, loc, p, cIndex(ib, loc, k));
    auto [row, valid] = planEntry(
        ib, loc, c.getPlan(),
        arith::AddIOp::create(ib, loc, p, cIndex(ib, loc, bound)));
    // A dropped slot runs no iterations.
    Value count = arith::SelectOp::create(ib, loc, valid, h,
                                          cIndex(ib, loc, 0));
    Value result = sumInDouble(
        ib, loc, count, [&](OpBuilder &lb, Value col) -> std::pair<Value, Value> {
          return {arith::MulFOp::create(lb, loc,
                                        loadF64(lb, loc, grad, t, h, col),
                                        loadF64(lb, loc, rows, row, h, col)),
                  Value()};
        });
    memref::StoreOp::create(ib, loc, result, out, ValueRange{p});
  }
  c.erase();
  return success();
}

} // namespace mlir::muir::exec_to_gpu
