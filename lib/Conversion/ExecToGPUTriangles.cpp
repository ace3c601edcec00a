//===- ExecToGPUTriangles.cpp - the Gram exchange's pack/unpack kernels ---===//
//
// Part of muir-exec-to-gpu (ExecToGPU.cpp): the fused SYRK all-reduce's
// triangle chunks on the CUDA target.
//
//===----------------------------------------------------------------------===//
#include "ExecToGPUInternal.h"

using namespace mlir;
namespace mx = mlir::muir_exec;

namespace mlir::muir::exec_to_gpu {

//===----------------------------------------------------------------------===//
// The fused SYRK all-reduce's triangle chunks: generated kernels pack a
// chunk's rows into a buffer of the step, the runtime exchanges the buffer
// (muir_exec.packed_all_reduce_start / _wait), and a generated kernel
// unpacks the sums and mirrors them below the diagonal.
//===----------------------------------------------------------------------===//

/// Floats of rows [0, r) of an n x n upper triangle (row q from its
/// diagonal on, n - q floats): r n - r (r - 1) / 2.
Value rowsBefore(OpBuilder &b, Location loc, Value r, int64_t n) {
  Value rn = arith::MulIOp::create(b, loc, r, cIndex(b, loc, n));
  Value rr = arith::MulIOp::create(
      b, loc, r, arith::SubIOp::create(b, loc, r, cIndex(b, loc, 1)));
  return arith::SubIOp::create(
      b, loc, rn, arith::DivSIOp::create(b, loc, rr, cIndex(b, loc, 2)));
}

/// A chunk's place in its C buffer's packed buffer ([batch, n (n + 1) / 2]
/// floats, each chunk's rows at their own place, item-major within the
/// chunk): its first float and its floats an item.
struct Chunk {
  Value offset, count;
  Value before; ///< floats of an item's rows before the chunk's first
};
Chunk chunkAt(OpBuilder &b, Location loc, Value r0, Value r1, int64_t batch,
              int64_t n) {
  Value before = rowsBefore(b, loc, r0, n);
  Value count = arith::SubIOp::create(b, loc, rowsBefore(b, loc, r1, n),
                                      before);
  return {arith::MulIOp::create(b, loc, before, cIndex(b, loc, batch)),
          count, before};
}

/// One thread per (item, row r in [r0, r1), column j) of the chunk; those
/// with j >= r move entry (r, j): pack copies it from C into the packed
/// buffer, unpack copies it back and to (j, r). Threads write disjoint
/// places (an unpack's mirrored entries are all strictly below the
/// diagonal).
void triangleKernel(Operation *at, Value c, Value packed, Value r0, Value r1,
                    Chunk chunk, int64_t batch, int64_t n, bool pack) {
  OpBuilder b(at);
  Location loc = at->getLoc();
  Value perItem = arith::MulIOp::create(
      b, loc, arith::SubIOp::create(b, loc, r1, r0), cIndex(b, loc, n));
  Value total = arith::MulIOp::create(b, loc, perItem, cIndex(b, loc, batch));
  Value cFlat = flat(b, loc, c);
  auto [ib, i] = launchOver(
      at, total, pack ? "muir_triangle_pack" : "muir_triangle_unpack");
  Value cn = cIndex(ib, loc, n);
  Value item = arith::DivUIOp::create(ib, loc, i, perItem);
  Value rest = arith::RemUIOp::create(ib, loc, i, perItem);
  Value r = arith::AddIOp::create(
      ib, loc, r0, arith::DivUIOp::create(ib, loc, rest, cn));
  Value j = arith::RemUIOp::create(ib, loc, rest, cn);
  Value upper = arith::CmpIOp::create(ib, loc, arith::CmpIPredicate::uge, j, r);
  auto inUpper = scf::IfOp::create(ib, loc, upper, /*withElseRegion=*/false);
  OpBuilder tb = inUpper.getThenBodyBuilder();
  Value square = arith::MulIOp::create(tb, loc, item, cIndex(tb, loc, n * n));
  auto at2 = [&](Value row, Value col) -> Value {
    return arith::AddIOp::create(
        tb, loc, square,
        arith::AddIOp::create(tb, loc, arith::MulIOp::create(tb, loc, row, cn),
                              col));
  };
  // packed[offset + item * count + (rows of the chunk before r) + j - r]
  Value inChunk =
      arith::SubIOp::create(tb, loc, rowsBefore(tb, loc, r, n), chunk.before);
  Value p = arith::AddIOp::create(
      tb, loc,
      arith::AddIOp::create(
          tb, loc, chunk.offset,
          arith::MulIOp::create(tb, loc, item, chunk.count)),
      arith::AddIOp::create(tb, loc, inChunk,
                            arith::SubIOp::create(tb, loc, j, r)));
  if (pack) {
    Value v = memref::LoadOp::create(tb, loc, cFlat, ValueRange{at2(r, j)});
    memref::StoreOp::create(tb, loc, v, packed, ValueRange{p});
    return;
  }
  Value v = memref::LoadOp::create(tb, loc, packed, ValueRange{p});
  memref::StoreOp::create(tb, loc, v, cFlat, ValueRange{at2(r, j)});
  memref::StoreOp::create(tb, loc, v, cFlat, ValueRange{at2(j, r)});
}

/// The chunk's floats of the packed buffer (all items), as a 1-D view.
Value chunkView(OpBuilder &b, Location loc, Value packed, Chunk chunk,
                int64_t batch) {
  Value len = arith::MulIOp::create(b, loc, chunk.count, cIndex(b, loc, batch));
  SmallVector<OpFoldResult> offsets{chunk.offset}, sizes{len},
      strides{b.getIndexAttr(1)};
  return memref::SubViewOp::create(b, loc, packed, offsets, sizes, strides);
}

/// Every triangle_all_reduce_start / _wait on one C buffer shares a packed
/// buffer of the step, allocated before the first and freed after the last
/// in the innermost block holding them all (a dp owner's switch case keeps
/// its own); each chunk's rows have their own place in it, so chunks in
/// flight together never share floats.
LogicalResult lowerTriangles(ModuleOp module) {
  llvm::MapVector<Value, SmallVector<Operation *>> byBuffer;
  module.walk([&](Operation *op) {
    if (auto st = dyn_cast<mx::TriangleAllReduceStartOp>(op))
      byBuffer[st.getC()].push_back(op);
    else if (auto w = dyn_cast<mx::TriangleAllReduceWaitOp>(op))
      byBuffer[w.getC()].push_back(op);
  });
  for (auto &[c, ops] : byBuffer) {
    if (failed(checkFlat(ops.front(), c)))
      return failure();
    auto type = cast<MemRefType>(c.getType());
    int64_t batch = type.getRank() == 3 ? type.getDimSize(0) : 1;
    int64_t n = type.getDimSize(type.getRank() - 1);
    Block *top = ops.front()->getBlock();
    while (!llvm::all_of(ops, [&](Operation *op) {
      return top->findAncestorOpInBlock(*op) != nullptr;
    })) {
      Operation *parent = top->getParentOp();
      if (!parent || isa<ModuleOp>(parent) || isa<func::FuncOp>(parent))
        return ops.front()->emitOpError(
            "shares its buffer with triangle exchanges in no common block "
            "of one function");
      top = parent->getBlock();
    }
    Operation *first = top->findAncestorOpInBlock(*ops.front());
    Operation *last = first;
    for (Operation *op : ops) {
      Operation *a = top->findAncestorOpInBlock(*op);
      if (a->isBeforeInBlock(first))
        first = a;
      if (last->isBeforeInBlock(a))
        last = a;
    }
    OpBuilder ab(first);
    Location loc = first->getLoc();
    Value packed =
        gpu::AllocOp::create(
            ab, loc, MemRefType::get({batch * n * (n + 1) / 2}, ab.getF32Type()),
            Type(), ValueRange{}, ValueRange{}, ValueRange{}, nullptr)
            .getMemref();
    ab.setInsertionPointAfter(last);
    gpu::DeallocOp::create(ab, loc, Type(), ValueRange{}, packed);
    for (Operation *op : ops) {
      OpBuilder b(op);
      Location oloc = op->getLoc();
      if (auto st = dyn_cast<mx::TriangleAllReduceStartOp>(op)) {
        Chunk chunk = chunkAt(b, oloc, st.getRowBegin(), st.getRowEnd(),
                              batch, n);
        triangleKernel(op, c, packed, st.getRowBegin(), st.getRowEnd(),
                       chunk, batch, n, /*pack=*/true);
        Value request = mx::PackedAllReduceStartOp::create(
            b, oloc, mx::RequestType::get(b.getContext()),
            chunkView(b, oloc, packed, chunk, batch),
            st.getGroupAttr());
        st.getRequest().replaceAllUsesWith(request);
      } else {
        auto w = cast<mx::TriangleAllReduceWaitOp>(op);
        Chunk chunk = chunkAt(b, oloc, w.getRowBegin(), w.getRowEnd(),
                              batch, n);
        mx::PackedAllReduceWaitOp::create(
            b, oloc, w.getRequest(), chunkView(b, oloc, packed, chunk, batch));
        triangleKernel(op, c, packed, w.getRowBegin(), w.getRowEnd(), chunk,
                       batch, n, /*pack=*/false);
      }
      op->erase();
    }
  }
  return success();
}

} // namespace mlir::muir::exec_to_gpu
