//===- MuirExecDialect.cpp - the execution-level dialect ------------------===//
#include "MuirExec/MuirExecDialect.h"

#include "Muir/MuirDialect.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace mlir::muir_exec;

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "MuirExec/MuirExecOpsDialect.cpp.inc"
#include "MuirExec/MuirExecEnums.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "MuirExec/MuirExecAttrs.cpp.inc"
#define GET_TYPEDEF_CLASSES
#include "MuirExec/MuirExecTypes.cpp.inc"
#pragma GCC diagnostic pop
#include "MuirExec/MuirExecInterfaces.cpp.inc"
#define GET_OP_CLASSES
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "MuirExec/MuirExecOps.cpp.inc"
#pragma GCC diagnostic pop

bool mlir::muir_exec::isHostMemory(Type type) {
  auto memref = dyn_cast<BaseMemRefType>(type);
  return memref && isa_and_nonnull<HostMemoryAttr>(memref.getMemorySpace());
}

void MuirExecDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "MuirExec/MuirExecAttrs.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "MuirExec/MuirExecTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "MuirExec/MuirExecOps.cpp.inc"
      >();
}

LogicalResult GroupAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                FlatSymbolRefAttr grid, ArrayAttr axes) {
  llvm::SmallDenseSet<StringRef> seen;
  for (Attribute a : axes) {
    auto axis = dyn_cast<StringAttr>(a);
    if (!axis)
      return emitError() << "expected grid axis names, got " << a;
    if (!seen.insert(axis.getValue()).second)
      return emitError() << "grid axis '" << axis.getValue()
                         << "' named twice";
  }
  return success();
}

muir::GridOp GroupAttr::getGridOp(Operation *from) const {
  return SymbolTable::lookupNearestSymbolFrom<muir::GridOp>(from, getGrid());
}

// Both need the grid, which the verifier (verifyGroup) guarantees; on IR
// that skipped verification a missing grid is a fatal error, not a crash.
static muir::GridOp requireGrid(GroupAttr group, Operation *from) {
  muir::GridOp grid = group.getGridOp(from);
  if (!grid)
    llvm::report_fatal_error("muir_exec group names a missing muir.grid "
                             "(unverified IR)");
  return grid;
}

int64_t GroupAttr::getSize(Operation *from) const {
  return requireGrid(*this, from).getGroupSize(getAxes());
}

int64_t GroupAttr::getRuntimeMask(Operation *from) const {
  return muir::getRuntimeAxesMask(requireGrid(*this, from), getAxes());
}

LogicalResult mlir::muir_exec::verifyGroup(Operation *op) {
  auto group = cast<GroupOpInterface>(op).getGroup();
  muir::GridOp grid = group.getGridOp(op);
  if (!grid)
    return op->emitOpError("group names ")
           << group.getGrid() << ", which is not a muir.grid in scope";
  for (auto axis : group.getAxes().getAsRange<StringAttr>())
    if (grid.getAxisIndex(axis.getValue()) < 0)
      return op->emitOpError("group axis '")
             << axis.getValue() << "' is not an axis of " << group.getGrid();
  return success();
}

/// (batch, rows, cols) of a rank-2 or rank-3 buffer; batch 0 for rank 2.
static std::array<int64_t, 3> dims(Value v) {
  ArrayRef<int64_t> s = cast<MemRefType>(v.getType()).getShape();
  return s.size() == 3 ? std::array<int64_t, 3>{s[0], s[1], s[2]}
                       : std::array<int64_t, 3>{0, s[0], s[1]};
}

/// Runtime calls take a base pointer and static sizes: buffers must be
/// static and contiguous, and matrices of one op all plain (rank 2) or all
/// stacked (rank 3), since batch 0 and "no batch" look alike in dims().
static LogicalResult verifyStaticIdentity(Operation *op) {
  int64_t rank = -1;
  for (Value v : op->getOperands()) {
    auto t = dyn_cast<MemRefType>(v.getType());
    if (!t) // row bounds and the like
      continue;
    if (!t.hasStaticShape() || !t.getLayout().isIdentity())
      return op->emitOpError("expected static, contiguous buffers, got ")
             << t;
    if (isa<ObserveOp>(op))
      continue;
    if (rank >= 0 && t.getRank() != rank)
      return op->emitOpError("expected operands of equal rank, got ")
             << rank << " and " << t.getRank();
    rank = t.getRank();
  }
  return success();
}

static LogicalResult verifyBatch(Operation *op, int64_t a, int64_t b) {
  if (a != b)
    return op->emitOpError("expected equal batch sizes, got ")
           << a << " and " << b;
  return success();
}

/// GEMM and SYRK run in one precision: every buffer f32, or every one f64.
static LogicalResult verifyOneElementType(Operation *op) {
  Type first;
  for (Value v : op->getOperands()) {
    auto buffer = dyn_cast<MemRefType>(v.getType());
    if (!buffer) // a coefficient known at run time
      continue;
    Type e = buffer.getElementType();
    if (first && e != first)
      return op->emitOpError("expected buffers of one element type, got ")
             << first << " and " << e;
    first = e;
  }
  return success();
}

/// alpha and beta of a product, one form each: an operand replaces its
/// attribute, which stays at its default (1 and 0).
static LogicalResult verifyCoefficientForms(Operation *op, Value alphaValue,
                                            Value betaValue, double alpha,
                                            double beta) {
  if (alphaValue && alpha != 1.0)
    return op->emitOpError("has both an alpha operand and alpha = ")
           << alpha << "; give one";
  if (betaValue && beta != 0.0)
    return op->emitOpError("has both a beta operand and beta = ")
           << beta << "; give one";
  return success();
}

LogicalResult GemmOp::verify() {
  if (failed(verifyStaticIdentity(*this)) ||
      failed(verifyOneElementType(*this)) ||
      failed(verifyCoefficientForms(*this, getAlphaValue(), getBetaValue(),
                                    getAlpha().convertToDouble(),
                                    getBeta().convertToDouble())))
    return failure();
  auto [ab, ar, ac] = dims(getA());
  auto [bb, br, bc] = dims(getB());
  auto [cb, cr, cc] = dims(getC());
  if (ab != bb || ab != cb)
    return emitOpError("expected equal batch sizes, got ")
           << ab << ", " << bb << " and " << cb;
  int64_t m = getTransposeA() ? ac : ar, ka = getTransposeA() ? ar : ac;
  int64_t kb = getTransposeB() ? bc : br, n = getTransposeB() ? br : bc;
  if (ka != kb || cr != m || cc != n)
    return emitOpError("expected op(A) ")
           << m << "x" << ka << " times op(B) " << kb << "x" << n
           << " into C " << m << "x" << n << ", got C " << cr << "x" << cc;
  if (getAcc() && getAcc().getType() != getC().getType())
    return emitOpError("expected the accumulator of C's type ")
           << getC().getType() << ", got " << getAcc().getType();
  if (getSymmetric() &&
      (cr != cc || ka != cr ||
       !cast<MemRefType>(getC().getType()).getElementType().isF64()))
    return emitOpError("a symmetric product needs square f64 operands");
  if (getRowStable() &&
      (cast<MemRefType>(getC().getType()).getRank() != 2 ||
       !cast<MemRefType>(getC().getType()).getElementType().isF32() ||
       getAcc() || getAlphaValue() || getBetaValue() ||
       getAlpha().convertToDouble() != 1.0 ||
       getBeta().convertToDouble() != 0.0 || getSymmetric()))
    return emitOpError("a row_stable product is a plain f32 matrix product "
                       "(2-D, no accumulator, alpha 1, beta 0)");
  return success();
}

/// C is n x n per batch item, n the rows of A (columns with transpose).
static LogicalResult verifySyrkShapes(Operation *op, Value a, Value c,
                                      bool transpose) {
  if (failed(verifyStaticIdentity(op)))
    return failure();
  auto [ab, ar, ac] = dims(a);
  auto [cb, cr, cc] = dims(c);
  int64_t an = transpose ? ac : ar;
  if (failed(verifyBatch(op, ab, cb)))
    return failure();
  if (cr != an || cc != an)
    return op->emitOpError("expected C of ")
           << an << "x" << an << " per batch item, got " << cr << "x" << cc;
  return success();
}

LogicalResult SyrkOp::verify() {
  if (failed(verifyCoefficientForms(*this, getAlphaValue(), getBetaValue(),
                                    getAlpha().convertToDouble(),
                                    getBeta().convertToDouble())))
    return failure();
  bool mixed =
      cast<MemRefType>(getA().getType()).getElementType().isF32() &&
      cast<MemRefType>(getC().getType()).getElementType().isF64();
  if (!mixed && failed(verifyOneElementType(*this)))
    return failure();
  if (getAcc() && getAcc().getType() != getC().getType())
    return emitOpError("expected the accumulator of C's type ")
           << getC().getType() << ", got " << getAcc().getType();
  return verifySyrkShapes(*this, getA(), getC(), getTranspose());
}

/// Square matrices (or a stack) in `input`, `output` of the same shape, and
/// `scale` (when given) one value per matrix: what the runtime sizes from
/// the input.
/// Every buffer static and contiguous (the scale vector's rank differs, so
/// not verifyStaticIdentity's equal ranks).
static LogicalResult verifyContiguous(Operation *op) {
  for (Value v : op->getOperands()) {
    auto t = cast<MemRefType>(v.getType());
    if (!t.hasStaticShape() || !t.getLayout().isIdentity())
      return op->emitOpError("expected static, contiguous buffers, got ")
             << t;
  }
  return success();
}

static LogicalResult verifySquareMatrices(Operation *op, Value input,
                                          Value output, Value scale) {
  if (failed(verifyContiguous(op)))
    return failure();
  auto in = cast<MemRefType>(input.getType());
  auto out = cast<MemRefType>(output.getType());
  auto [b, r, c] = dims(input);
  b = in.getRank() == 3 ? b : 1; // one scale for a plain matrix
  if (r != c)
    return op->emitOpError("expected square matrices, got ")
           << r << "x" << c;
  if (in.getShape() != out.getShape())
    return op->emitOpError("expected the output of the input's shape, got ")
           << out;
  if (scale && cast<MemRefType>(scale.getType()).getShape() !=
                   ArrayRef<int64_t>{b})
    return op->emitOpError("expected one scale per matrix (")
           << b << "), got " << scale.getType();
  return success();
}

LogicalResult TraceNormalizeOp::verify() {
  return verifySquareMatrices(*this, getInput(), getOutput(), getScale());
}

LogicalResult ScaleMatricesOp::verify() {
  if (failed(verifyContiguous(*this)))
    return failure();
  auto [b, r, c] = dims(getInput());
  (void)r, (void)c;
  b = cast<MemRefType>(getInput().getType()).getRank() == 3 ? b : 1;
  if (cast<MemRefType>(getInput().getType()).getShape() !=
      cast<MemRefType>(getOutput().getType()).getShape())
    return emitOpError("expected the output of the input's shape, got ")
           << getOutput().getType();
  if (cast<MemRefType>(getScale().getType()).getShape() !=
      ArrayRef<int64_t>{b})
    return emitOpError("expected one scale per matrix (")
           << b << "), got " << getScale().getType();
  return success();
}

LogicalResult SymmetricAllReduceOp::verify() {
  return verifySquareMatrices(*this, getInput(), getOutput(), Value());
}

LogicalResult SyrkRowsOp::verify() {
  return verifySyrkShapes(*this, getA(), getC(), getTranspose());
}

/// The rows [begin, end) of a triangle chunk of C, where they are
/// constants: within [0, n] and in order (rows computed in a loop are
/// checked by the runtime).
static LogicalResult verifyChunkRows(Operation *op, Value c, Value begin,
                                     Value end) {
  if (failed(verifyStaticIdentity(op)))
    return failure();
  auto t = cast<MemRefType>(c.getType());
  int64_t n = t.getDimSize(t.getRank() - 1);
  if (t.getDimSize(t.getRank() - 2) != n)
    return op->emitOpError("expected square matrices, got ") << t;
  std::optional<int64_t> b = getConstantIntValue(begin);
  std::optional<int64_t> e = getConstantIntValue(end);
  if ((b && (*b < 0 || *b > n)) || (e && (*e < 0 || *e > n)) ||
      (b && e && *b > *e))
    return op->emitOpError("has rows [")
           << (b ? std::to_string(*b) : "?") << ", "
           << (e ? std::to_string(*e) : "?") << ") outside [0, " << n
           << "] or out of order";
  return success();
}

LogicalResult TriangleAllReduceStartOp::verify() {
  return verifyChunkRows(*this, getC(), getRowBegin(), getRowEnd());
}

LogicalResult TriangleAllReduceWaitOp::verify() {
  return verifyChunkRows(*this, getC(), getRowBegin(), getRowEnd());
}

LogicalResult FrobeniusNormalizeOp::verify() {
  if (failed(verifyStaticIdentity(*this)))
    return failure();
  auto in = cast<MemRefType>(getInput().getType());
  auto out = cast<MemRefType>(getOutput().getType());
  bool toBf16 = in.getElementType().isF32() && out.getElementType().isBF16() &&
                in.getShape() == out.getShape();
  if (in != out && !toBf16)
    return emitOpError("expected input and output of one type (or an f32 "
                       "input and a bf16 output of its shape), got ")
           << in << " and " << out;
  return success();
}

LogicalResult TransposeOp::verify() {
  if (failed(verifyStaticIdentity(*this)))
    return failure();
  auto [ib, ir, ic] = dims(getInput());
  auto [ob, orow, oc] = dims(getOutput());
  if (failed(verifyBatch(*this, ib, ob)))
    return failure();
  if (orow != ic || oc != ir)
    return emitOpError("expected output ")
           << ic << "x" << ir << " per batch item, got " << orow << "x" << oc;
  return success();
}

LogicalResult ObserveOp::verify() {
  if (failed(verifyStaticIdentity(*this)))
    return failure();
  // I64Attr reads back unsigned; the attribute's own value keeps the sign.
  if (getSlotAttr().getInt() < 0)
    return emitOpError("expected slot >= 0, got ") << getSlotAttr().getInt();
  return success();
}
