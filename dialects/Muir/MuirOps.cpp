//===- MuirOps.cpp - verifiers and helpers of muir ops --------------------===//
//
// Local checks live in each op's verify(); checks against the grid symbol in
// verifySymbolUses(). Messages say what was expected and what was found.
//
//===----------------------------------------------------------------------===//
#include "Muir/MuirDialect.h"
#include "Muir/MuirOpsInternal.h"
#include "muir-rt/GroupMask.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "muir/Support/Limits.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::muir;
using namespace mlir::muir::opcheck;

/// `schedule(simple)`: the bare keyword, without the enum attribute's own
/// leading space.
static ParseResult parseSchedule(OpAsmParser &parser, NSScheduleAttr &attr) {
  StringRef keyword;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseKeyword(&keyword))
    return failure();
  std::optional<NSSchedule> value = symbolizeNSSchedule(keyword);
  if (!value) {
    ArrayRef<StringRef> names = getScheduleNames();
    InFlightDiagnostic diag =
        parser.emitError(loc, "unknown Newton-Schulz schedule '")
        << keyword << "'; expected ";
    for (auto [i, name] : llvm::enumerate(names))
      diag << (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") << name;
    return diag;
  }
  attr = NSScheduleAttr::get(parser.getContext(), *value);
  return success();
}

static void printSchedule(OpAsmPrinter &printer, Operation *,
                          NSScheduleAttr attr) {
  printer << stringifyNSSchedule(attr.getValue());
}

/// `1.5` (a constant, the attribute) or `%a` (an f64 operand).
static ParseResult
parseCoefficient(OpAsmParser &parser,
                 std::optional<OpAsmParser::UnresolvedOperand> &operand,
                 FloatAttr &attr) {
  OpAsmParser::UnresolvedOperand value;
  OptionalParseResult named = parser.parseOptionalOperand(value);
  if (named.has_value()) {
    if (failed(*named))
      return failure();
    operand = value;
    return success();
  }
  double constant;
  if (parser.parseFloat(constant))
    return failure();
  attr = parser.getBuilder().getF64FloatAttr(constant);
  return success();
}

static void printCoefficient(OpAsmPrinter &printer, Operation *, Value operand,
                             FloatAttr attr) {
  if (operand)
    printer << operand;
  else
    printer.printAttributeWithoutType(attr);
}

#define GET_OP_CLASSES
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "Muir/MuirOps.cpp.inc"
#include "Muir/MuirInterfaces.cpp.inc"
#pragma GCC diagnostic pop

//===----------------------------------------------------------------------===//
// Shared checks
//===----------------------------------------------------------------------===//

std::string opcheck::shapeStr(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::interleave(shape, os, "x");
  return s;
}

/// Matrices and stacks of matrices: rank 2 or 3.
LogicalResult opcheck::verifyMatrixRank(Operation *op, Type type,
                                        StringRef what) {
  auto t = cast<RankedTensorType>(type);
  if (t.getRank() != 2 && t.getRank() != 3)
    return op->emitOpError("expected ")
           << what << " to be a matrix (rank 2) or a stack of matrices "
           << "(rank 3), got rank " << t.getRank();
  return success();
}

/// Products and reductions keep one precision: every operand and the
/// result f32, or all f64.
static LogicalResult verifySameElementType(Operation *op) {
  Type want = cast<ShapedType>(op->getResult(0).getType()).getElementType();
  for (Value v : op->getOperands())
    if (auto shaped = dyn_cast<ShapedType>(v.getType());
        shaped && shaped.getElementType() != want)
      return op->emitOpError("expected every operand of element type ")
             << want << " (the result's), got " << v.getType();
  return success();
}

LogicalResult opcheck::verifyRange(Operation *op, StringRef name,
                                   double value, double lo, bool loInclusive,
                                   double hi, bool hiInclusive) {
  bool ok = (loInclusive ? value >= lo : value > lo) &&
            (hiInclusive ? value <= hi : value < hi);
  if (ok)
    return success();
  auto diag = op->emitOpError("expected ") << name << " in ";
  diag << (loInclusive ? "[" : "(") << lo << ", ";
  if (std::isinf(hi))
    diag << "inf)";
  else
    diag << hi << (hiInclusive ? "]" : ")");
  return diag << ", got " << value;
}


static LogicalResult verifyNSConfig(Operation *op, int64_t steps,
                                    NSSchedule schedule,
                                    std::optional<ArrayRef<double>> coeffs,
                                    double eps) {
  if (steps < 1)
    return op->emitOpError("expected at least 1 Newton-Schulz step, got ")
           << steps;
  // The count is bounded here, where every way of asking for steps
  // passes.
  if (steps > kMaxNSSteps)
    return op->emitOpError("expected at most ")
           << kMaxNSSteps << " Newton-Schulz steps, got " << steps
           << " (docs/description.md, \"Limits\")";
  if (schedule == NSSchedule::custom) {
    if (!coeffs)
      return op->emitOpError(
          "schedule 'custom' needs 'coefficients' (a0, b0, c0, a1, ...)");
    if (coeffs->empty() || coeffs->size() % 3 != 0)
      return op->emitOpError("expected coefficients to be a non-empty list "
                             "of (a, b, c) triples, got ")
             << coeffs->size() << " values";
    if (static_cast<int64_t>(coeffs->size()) > kMaxCoefficients)
      return op->emitOpError("expected at most ")
             << kMaxCoefficients << " coefficients (" << kMaxCoefficientTriples
             << " triples; the last repeats), got " << coeffs->size()
             << " (docs/description.md, \"Limits\")";
    // A non-finite coefficient would print as INF or NAN, which the parser
    // does not read back, and make every update non-finite.
    for (auto [i, c] : llvm::enumerate(*coeffs))
      if (!std::isfinite(c))
        return op->emitOpError("expected finite coefficients, got ")
               << (std::isnan(c) ? "nan" : c > 0 ? "inf" : "-inf")
               << " at index " << i;
  } else if (coeffs) {
    return op->emitOpError("'coefficients' are only allowed with schedule "
                           "'custom', got schedule '")
           << stringifyNSSchedule(schedule) << "'";
  }
  return verifyRange(op, "eps", eps, 0.0, false, kInf, false);
}

//===----------------------------------------------------------------------===//
// GridOp
//===----------------------------------------------------------------------===//

LogicalResult GridOp::verify() {
  if (getAxes().empty())
    return emitOpError("expected at least one axis");
  if (getAxes().size() != getShape().size())
    return emitOpError("expected one size per axis: ")
           << getAxes().size() << " axes, " << getShape().size() << " sizes";
  llvm::StringSet<> seen;
  for (auto [name, size] : llvm::zip(getAxes(), getShape())) {
    StringRef axis = cast<StringAttr>(name).getValue();
    if (axis.empty())
      return emitOpError("expected non-empty axis names");
    if (!seen.insert(axis).second)
      return emitOpError("axis '") << axis << "' appears twice";
    if (size < 1)
      return emitOpError("expected axis '")
             << axis << "' to have size >= 1, got " << size;
  }
  // Every user multiplies the sizes: they must not overflow (the limit the
  // description reader checks too).
  int64_t devices = 1;
  for (int64_t size : getShape())
    if (llvm::MulOverflow(devices, size, devices) || devices > kMaxDevices)
      return emitOpError("expected at most ")
             << kMaxDevices << " devices (the product of the sizes)";
  if (FlatSymbolRefAttr folds = getFoldsAttr()) {
    auto run =
        SymbolTable::lookupNearestSymbolFrom<GridOp>(*this, folds.getAttr());
    if (!run || run == *this)
      return emitOpError("folds ") << folds << ", which is not another "
                                      "muir.grid in scope";
    if (run.getFolds())
      return emitOpError("folds ")
             << folds << ", which folds " << run.getFoldsAttr()
             << " itself: fold the run's grid";
    // (The run's grid may not be verified yet: its product may overflow.)
    int64_t runDevices = 1;
    bool overflow = false;
    for (int64_t size : run.getShape())
      overflow |= llvm::MulOverflow(runDevices, size, runDevices);
    if (!overflow && runDevices != devices)
      return emitOpError("has ")
             << devices << " devices but folds " << folds << ", which has "
             << runDevices << ": a folding numbers the same ranks";
  }
  return success();
}

int64_t GridOp::getAxisIndex(StringRef name) {
  for (auto [i, axis] : llvm::enumerate(getAxes()))
    if (cast<StringAttr>(axis).getValue() == name)
      return i;
  return -1;
}

int64_t mlir::muir::getRuntimeAxesMask(GridOp grid, ArrayAttr axes) {
  int64_t mask = 0;
  for (Attribute a : axes)
    mask |= int64_t(1) << grid.getAxisIndex(cast<StringAttr>(a).getValue());
  return muirrt_group_mask(grid.getFoldingIndex(), mask);
}

int64_t GridOp::getFoldingIndex() {
  if (!getFolds())
    return 0;
  int64_t index = 1;
  if (auto module = (*this)->getParentOfType<ModuleOp>())
    for (GridOp g : module.getOps<GridOp>()) {
      if (g == *this)
        break;
      index += g.getFolds() ? 1 : 0;
    }
  return index;
}

FailureOr<GridOp> mlir::muir::getRunGrid(ModuleOp module) {
  GridOp run;
  for (GridOp g : module.getOps<GridOp>()) {
    if (g.getFolds())
      continue;
    if (run) {
      InFlightDiagnostic diag =
          g.emitOpError("is a second grid that folds no other: a run has "
                        "one grid, and the others name it with `folds`");
      diag.attachNote(run.getLoc())
          << "the first grid that folds no other, @" << run.getSymName();
      return diag;
    }
    run = g;
  }
  return run;
}

FailureOr<SmallVector<GridOp>>
mlir::muir::getGridsByFoldingIndex(ModuleOp module) {
  FailureOr<GridOp> run = getRunGrid(module);
  if (failed(run))
    return failure();
  SmallVector<GridOp> grids;
  if (*run)
    grids.push_back(*run);
  for (GridOp g : module.getOps<GridOp>())
    if (g.getFolds())
      grids.push_back(g);
  return grids;
}

int64_t GridOp::getGroupSize(ArrayAttr axisNames) {
  int64_t size = 1;
  for (Attribute a : axisNames) {
    int64_t idx = getAxisIndex(cast<StringAttr>(a).getValue());
    if (idx >= 0)
      size *= getShape()[idx];
  }
  return size;
}

int64_t GridOp::getNumDevices() {
  int64_t n = 1;
  for (int64_t s : getShape())
    n *= s;
  return n;
}

//===----------------------------------------------------------------------===//
// Optimizer ops
//===----------------------------------------------------------------------===//

/// Run-time hyperparameters: none, the learning rate and the weight decay,
/// or those two and the op's `more` (the momentum of Muon; AdamW's beta1,
/// beta2 and eps).
static LogicalResult verifyHyper(Operation *op, ValueRange hyper,
                                 StringRef more = "", unsigned moreCount = 0) {
  if (hyper.empty() || hyper.size() == 2 ||
      (moreCount && hyper.size() == 2 + moreCount))
    return success();
  auto diag = op->emitOpError("expected hyper(lr, weight_decay)");
  if (moreCount)
    diag << " or hyper(lr, weight_decay, " << more << ")";
  return diag << " (f64 values) or none, got " << hyper.size() << " values";
}

/// What Muon and its variants check alike: the hyperparameter operands,
/// a matrix or stack, and the ranges of lr, beta, weight_decay and
/// scale_extra.
static LogicalResult verifyMuonFamily(OrthogonalizedUpdateInterface op,
                                      FloatAttr scaleExtra) {
  Operation *o = op.getOperation();
  return success(
      succeeded(verifyHyper(o, op.getHyper(), "momentum", 1)) &&
      succeeded(verifyMatrixRank(o, op.getParam().getType(), "param")) &&
      succeeded(verifyRange(o, "lr", op.getLrAttr().getValueAsDouble(), 0,
                            true, kInf, false)) &&
      succeeded(verifyRange(o, "beta", op.getBetaAttr().getValueAsDouble(),
                            0, true, 1, false)) &&
      succeeded(verifyRange(o, "weight_decay",
                            op.getWeightDecayAttr().getValueAsDouble(), 0,
                            true, kInf, false)) &&
      succeeded(verifyRange(o, "scale_extra", scaleExtra.getValueAsDouble(),
                            0, false, kInf, false)));
}

LogicalResult MuonUpdateOp::verify() {
  if (failed(verifyMuonFamily(*this, getScaleExtraAttr())))
    return failure();
  if (std::optional<ArrayRef<int64_t>> blocks = getRowBlocks()) {
    auto type = getParam().getType();
    if (type.getRank() != 2)
      return emitOpError("row_blocks needs a matrix (rank 2), got rank ")
             << type.getRank();
    // Each block is a Newton-Schulz of its own once decomposed.
    if (static_cast<int64_t>(blocks->size()) > kMaxRowBlocks)
      return emitOpError("expected at most ")
             << kMaxRowBlocks << " row blocks, got " << blocks->size()
             << " (docs/description.md, \"Limits\")";
    int64_t sum = 0;
    for (int64_t rows : *blocks) {
      if (rows < 1)
        return emitOpError("expected row blocks of at least 1 row, got ")
               << rows;
      if (llvm::AddOverflow(sum, rows, sum))
        return emitOpError("expected row_blocks to add up to the ")
               << type.getDimSize(0) << " rows, got more than 2^63";
    }
    if (sum != type.getDimSize(0))
      return emitOpError("expected row_blocks to add up to the ")
             << type.getDimSize(0) << " rows, got " << sum;
  }
  return verifyNSConfig(*this, getNsStepsAttr().getInt(), getSchedule(),
                        getCoefficients(), getEps().convertToDouble());
}

/// The shape of a per-row vector of `matrix` ([m] or [B, m]).
static SmallVector<int64_t> rowShape(RankedTensorType matrix) {
  SmallVector<int64_t> shape(matrix.getShape());
  shape.pop_back();
  return shape;
}

/// `rows` is the per-row vector of `matrix`.
static LogicalResult verifyRowVector(Operation *op, RankedTensorType matrix,
                                     RankedTensorType rows, StringRef what) {
  SmallVector<int64_t> want = rowShape(matrix);
  if (rows.getShape() != ArrayRef<int64_t>(want))
    return op->emitOpError("expected ")
           << what << " of shape " << shapeStr(want)
           << " (one value per row of " << shapeStr(matrix.getShape())
           << "), got " << shapeStr(rows.getShape());
  return success();
}

LogicalResult NorMuonUpdateOp::verify() {
  if (failed(verifySameElementType(*this)) ||
      failed(verifyMuonFamily(*this, getScaleExtraAttr())) ||
      failed(verifyRowVector(*this, getParam().getType(),
                             getVariance().getType(), "variance")) ||
      failed(verifyRange(*this, "beta2", getBeta2().convertToDouble(), 0,
                         true, 1, false)) ||
      failed(verifyRange(*this, "eps2", getEps2().convertToDouble(), 0, false,
                         kInf, false)))
    return failure();
  return verifyNSConfig(*this, getNsStepsAttr().getInt(), getSchedule(),
                        getCoefficients(), getEps().convertToDouble());
}

//===----------------------------------------------------------------------===//
// OrthogonalizedUpdateInterface
//===----------------------------------------------------------------------===//

Value MuonUpdateOp::buildNormalizedUpdate(OpBuilder &, Location, Value o,
                                          ArrayRef<MatrixSplit>,
                                          SmallVectorImpl<Value> &) {
  return o;
}

SmallVector<Value> MuonUpdateOp::getOtherState() { return {}; }

// NorMuon orthogonalises the whole matrix (no fused row blocks); its state
// after the momentum is the rows' second moment.
std::optional<ArrayRef<int64_t>> NorMuonUpdateOp::getRowBlocks() {
  return std::nullopt;
}

SmallVector<Value> NorMuonUpdateOp::getOtherState() {
  return {getVariance()};
}

SmallVector<Value> MuonUpdateOp::getStateOperands() {
  return {getMomentumBuffer()};
}

SmallVector<Value> NorMuonUpdateOp::getStateOperands() {
  return {getMomentumBuffer(), getVariance()};
}

SmallVector<Value> AdamWUpdateOp::getStateOperands() {
  return {getExpAvg(), getExpAvgSq()};
}

bool AdamWUpdateOp::isElementwise() { return true; }

double MuonUpdateOp::getApplyScale(int64_t m, int64_t n) {
  return getUpdateScale(getScaleMode(), getScaleExtra().convertToDouble(), m,
                        n);
}

/// `v` summed over the axes of the `splits` of the given matrix
/// dimensions (one all_reduce per grid, in the order the splits are
/// given); `v` itself when none split them.
static Value sumOverSplits(OpBuilder &b, Location loc, Value v,
                           ArrayRef<MatrixSplit> splits, bool rows,
                           bool cols) {
  SmallVector<FlatSymbolRefAttr> grids;
  for (const MatrixSplit &s : splits)
    if (!llvm::is_contained(grids, s.grid))
      grids.push_back(s.grid);
  for (FlatSymbolRefAttr grid : grids) {
    SmallVector<Attribute> axes;
    for (const MatrixSplit &s : splits)
      if (s.grid == grid && ((s.dim == 0 && rows) || (s.dim == 1 && cols)))
        axes.push_back(s.axis);
    if (axes.empty())
      continue;
    v = AllReduceOp::create(
        b, loc, v.getType(), grid, b.getArrayAttr(axes), v,
        ReductionKindAttr::get(b.getContext(), ReductionKind::sum));
  }
  return v;
}

Value NorMuonUpdateOp::buildNormalizedUpdate(OpBuilder &b, Location loc,
                                             Value o,
                                             ArrayRef<MatrixSplit> splits,
                                             SmallVectorImpl<Value> &newState) {
  auto type = cast<RankedTensorType>(o.getType());
  int64_t rank = type.getRank();
  int64_t columns = type.getDimSize(rank - 1);
  for (const MatrixSplit &s : splits)
    if (s.dim == 1)
      columns *= s.group;
  auto rowsType = RankedTensorType::get(type.getShape().drop_back(),
                                        type.getElementType());
  // The rows' sums over the whole matrix's columns.
  Value sums = RowSumSquaresOp::create(b, loc, rowsType, o);
  sums = sumOverSplits(b, loc, sums, splits, /*rows=*/false, /*cols=*/true);
  auto normalized = NorMuonNormalizeOp::create(
      b, loc, type, rowsType, o, sums, getVariance(), getTake(),
      b.getI64IntegerAttr(columns), getBeta2Attr(), getEps2Attr());
  newState.push_back(normalized.getNewVariance());
  // ||P||_F of the whole matrix (each of a stack's).
  auto perMatrix = RankedTensorType::get(
      {rank == 3 ? type.getDimSize(0) : 1}, type.getElementType());
  Value normSq =
      SumSquaresOp::create(b, loc, perMatrix, normalized.getResult());
  normSq = sumOverSplits(b, loc, normSq, splits, /*rows=*/true,
                         /*cols=*/true);
  // P / ||P||_F; the eps only keeps a zero update (a zero gradient and
  // momentum) zero instead of 0/0.
  return ScaleByNormOp::create(b, loc, normalized.getResult(), normSq,
                               b.getF64FloatAttr(1e-30));
}

double NorMuonUpdateOp::getApplyScale(int64_t m, int64_t n) {
  return getScaleExtra().convertToDouble() *
         std::sqrt(static_cast<double>(m) * static_cast<double>(n));
}

LogicalResult RowSumSquaresOp::verify() {
  auto in = getInput().getType();
  if (failed(verifyMatrixRank(*this, in, "input")) ||
      failed(verifySameElementType(*this)))
    return failure();
  return verifyRowVector(*this, in, getResult().getType(), "a result");
}

LogicalResult NorMuonNormalizeOp::verify() {
  auto in = getInput().getType();
  if (failed(verifyMatrixRank(*this, in, "input")) ||
      failed(verifySameElementType(*this)) ||
      failed(verifyRowVector(*this, in, getVariance().getType(),
                             "variance")) ||
      failed(verifyRange(*this, "beta2", getBeta2().convertToDouble(), 0,
                         true, 1, false)) ||
      failed(verifyRange(*this, "eps2", getEps2().convertToDouble(), 0, false,
                         kInf, false)))
    return failure();
  if (static_cast<int64_t>(getColumns()) < in.getDimSize(in.getRank() - 1))
    return emitOpError("expected columns (of the whole matrix) of at least ")
           << in.getDimSize(in.getRank() - 1) << ", got " << getColumns();
  return success();
}

LogicalResult AdamWUpdateOp::verify() {
  return success(
      succeeded(verifyHyper(*this, getHyper(), "beta1, beta2, eps", 3)) &&
      succeeded(verifyRange(*this, "lr", getLr().convertToDouble(), 0, true,
                            kInf, false)) &&
      succeeded(verifyRange(*this, "beta1", getBeta1().convertToDouble(), 0,
                            true, 1, false)) &&
      succeeded(verifyRange(*this, "beta2", getBeta2().convertToDouble(), 0,
                            true, 1, false)) &&
      succeeded(verifyRange(*this, "eps", getEps().convertToDouble(), 0,
                            false, kInf, false)) &&
      succeeded(verifyRange(*this, "weight_decay",
                            getWeightDecay().convertToDouble(), 0, true,
                            kInf, false)));
}

LogicalResult MomentumOp::verify() {
  return verifyRange(*this, "beta", getBeta().convertToDouble(), 0, true, 1,
                     false);
}

LogicalResult ApplyUpdateOp::verify() {
  if (failed(verifyHyper(*this, getHyper())) ||
      failed(verifyRange(*this, "lr", getLr().convertToDouble(), 0, true,
                         kInf, false)))
    return failure();
  return verifyRange(*this, "weight_decay",
                     getWeightDecay().convertToDouble(), 0, true, kInf,
                     false);
}

LogicalResult QkClipOp::verify() {
  auto w = getParam().getType();
  auto logits = getMaxLogits().getType();
  if (w.getRank() != 2)
    return emitOpError("clips a matrix (rank 2), not rank ") << w.getRank();
  if (logits.getRank() != 1)
    return emitOpError("max_logits must be 1-D (one value per query head)");
  if (failed(verifyRange(*this, "tau", getTau().convertToDouble(), 0, false,
                         kInf, false)))
    return failure();
  int64_t headRows = getHeadRows(), group = getGroup();
  if (headRows < 1 || group < 1)
    return emitOpError("head_rows and group must be >= 1");
  if (w.getDimSize(0) % headRows != 0)
    return emitOpError("rows (") << w.getDimSize(0)
           << ") are not whole heads of head_rows " << headRows;
  int64_t heads = w.getDimSize(0) / headRows;
  if (heads * group != logits.getDimSize(0))
    return emitOpError("max_logits has ")
           << logits.getDimSize(0) << " heads; " << heads
           << " heads of rows with group " << group << " need "
           << heads * group;
  return success();
}

//===----------------------------------------------------------------------===//
// Newton-Schulz and linear algebra
//===----------------------------------------------------------------------===//

LogicalResult NewtonSchulzOp::verify() {
  if (failed(verifyMatrixRank(*this, getInput().getType(), "input")))
    return failure();
  if (getInput().getType().getElementType().isF64() &&
      getPrecision() != NSPrecision::f32)
    return emitOpError("an f64 input iterates in f64: precision bf16 "
                       "takes an f32 input");
  return verifyNSConfig(*this, getStepsAttr().getInt(), getSchedule(), getCoefficients(),
                        getEps().convertToDouble());
}

SmallVector<std::array<double, 3>> NewtonSchulzOp::getStepTable() {
  return resolveTable(getSchedule(), getCoefficients(), getSteps());
}

LogicalResult FrobeniusNormalizeOp::verify() {
  if (failed(verifyMatrixRank(*this, getInput().getType(), "input")))
    return failure();
  return verifyRange(*this, "eps", getEps().convertToDouble(), 0, false, kInf,
                     false);
}

LogicalResult TransposeOp::verify() {
  auto in = getInput().getType();
  auto out = getResult().getType();
  if (failed(verifyMatrixRank(*this, in, "input")))
    return failure();
  if (in.getElementType() != out.getElementType())
    return emitOpError("expected the result's element type ")
           << in.getElementType() << ", got " << out.getElementType();
  SmallVector<int64_t> expected(in.getShape());
  std::swap(expected[in.getRank() - 1], expected[in.getRank() - 2]);
  if (out.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("expected result shape ")
           << shapeStr(expected) << ", got " << shapeStr(out.getShape());
  return success();
}

/// Splits [B,] r x c into (batch, rows, cols), batch = 0 for rank 2.
static std::array<int64_t, 3> matrixDims(RankedTensorType t) {
  ArrayRef<int64_t> s = t.getShape();
  if (s.size() == 3)
    return {s[0], s[1], s[2]};
  return {0, s[0], s[1]};
}

static LogicalResult verifyAccumulator(Operation *op, Value acc, double beta,
                                       RankedTensorType resultType) {
  if (!acc) {
    if (beta != 0.0)
      return op->emitOpError("beta is ")
             << beta << " but there is no accumulator operand";
    return success();
  }
  if (acc.getType() != resultType)
    return op->emitOpError("expected accumulator type ")
           << resultType << " (the result type), got " << acc.getType();
  return success();
}

/// alpha and beta of a product: an operand replaces its attribute, left at
/// its default; a beta operand (not known to be 0) needs the accumulator.
static LogicalResult verifyCoefficients(Operation *op, Value acc,
                                        Value alphaValue, Value betaValue,
                                        double alpha, double beta,
                                        RankedTensorType resultType) {
  if (alphaValue && alpha != 1.0)
    return op->emitOpError("has both an alpha operand and alpha = ")
           << alpha << "; give one";
  if (betaValue && beta != 0.0)
    return op->emitOpError("has both a beta operand and beta = ")
           << beta << "; give one";
  if (betaValue && !acc)
    return op->emitOpError("has a beta operand but no accumulator operand");
  return verifyAccumulator(op, acc, beta, resultType);
}

LogicalResult MatmulOp::verify() {
  auto at = getA().getType(), bt = getB().getType();
  auto rt = getResult().getType();
  if (failed(verifySameElementType(*this)))
    return failure();
  for (auto [t, name] : {std::pair{at, "lhs"}, {bt, "rhs"}, {rt, "result"}})
    if (failed(verifyMatrixRank(*this, t, name)))
      return failure();
  if (at.getRank() != bt.getRank() || at.getRank() != rt.getRank())
    return emitOpError("expected operands and result of equal rank, got ")
           << at.getRank() << ", " << bt.getRank() << " and "
           << rt.getRank();
  auto [ab, ar, ac] = matrixDims(at);
  auto [bb, br, bc] = matrixDims(bt);
  auto [rb, rr, rc] = matrixDims(rt);
  if (ab != bb || ab != rb)
    return emitOpError("expected equal batch sizes, got ")
           << ab << ", " << bb << " and " << rb;
  int64_t m = getTransposeA() ? ac : ar, ka = getTransposeA() ? ar : ac;
  int64_t kb = getTransposeB() ? bc : br, n = getTransposeB() ? br : bc;
  if (ka != kb)
    return emitOpError("expected contraction sizes to match: op(lhs) is ")
           << m << "x" << ka << ", op(rhs) is " << kb << "x" << n;
  if (rr != m || rc != n)
    return emitOpError("expected result matrix ")
           << m << "x" << n << ", got " << rr << "x" << rc;
  if (getSymmetric() && (m != n || m != ka))
    return emitOpError("a symmetric product needs square operands, got ")
           << m << "x" << ka << " times " << kb << "x" << n;
  if (getSymmetric() && !rt.getElementType().isF64())
    return emitOpError("a symmetric product runs in f64, got ")
           << rt.getElementType();
  if (getRowStable() &&
      (!rt.getElementType().isF32() || rt.getRank() != 2 || getAcc() ||
       getAlphaValue() || getAlpha().convertToDouble() != 1.0 ||
       getSymmetric()))
    return emitOpError("a row_stable product is a plain f32 matrix product "
                       "(2-D, no accumulator, alpha 1, not symmetric)");
  return verifyCoefficients(*this, getAcc(), getAlphaValue(), getBetaValue(),
                            getAlpha().convertToDouble(),
                            getBeta().convertToDouble(), rt);
}

LogicalResult SyrkOp::verify() {
  auto at = getA().getType(), rt = getResult().getType();
  // An f32 operand may accumulate into f64 (the Gram form's A0).
  bool mixed = at.getElementType().isF32() && rt.getElementType().isF64() &&
               (!getAcc() || getAcc().getType() == rt);
  if ((!mixed && failed(verifySameElementType(*this))) ||
      failed(verifyMatrixRank(*this, at, "operand")) ||
      failed(verifyMatrixRank(*this, rt, "result")))
    return failure();
  if (at.getRank() != rt.getRank())
    return emitOpError("expected operand and result of equal rank, got ")
           << at.getRank() << " and " << rt.getRank();
  auto [ab, ar, ac] = matrixDims(at);
  auto [rb, rr, rc] = matrixDims(rt);
  int64_t an = getTranspose() ? ac : ar;
  if (ab != rb)
    return emitOpError("expected equal batch sizes, got ")
           << ab << " and " << rb;
  if (rr != an || rc != an)
    return emitOpError("expected result matrix ")
           << an << "x" << an << " (A is " << ar << "x" << ac
           << (getTranspose() ? ", transposed" : "") << "), got " << rr
           << "x" << rc;
  return verifyCoefficients(*this, getAcc(), getAlphaValue(), getBetaValue(),
                            getAlpha().convertToDouble(),
                            getBeta().convertToDouble(), rt);
}

/// A [B] or [1] vector of one scalar per matrix of `matrices`.
static LogicalResult verifyPerMatrix(Operation *op, RankedTensorType matrices,
                                     RankedTensorType scale) {
  int64_t batch = matrices.getRank() == 3 ? matrices.getDimSize(0) : 1;
  if (scale.getRank() != 1 || scale.getDimSize(0) != batch)
    return op->emitOpError("expected one scale per matrix, tensor<")
           << batch << "xf64>, got " << scale;
  return success();
}

LogicalResult SymmetricAllReduceOp::verify() {
  auto t = getInput().getType();
  if (failed(verifyMatrixRank(*this, t, "input")))
    return failure();
  if (t.getDimSize(t.getRank() - 2) != t.getDimSize(t.getRank() - 1))
    return emitOpError("expected square (symmetric) matrices, got ")
           << t.getDimSize(t.getRank() - 2) << "x"
           << t.getDimSize(t.getRank() - 1);
  return success();
}

LogicalResult TraceNormalizeOp::verify() {
  if (failed(verifyRange(*this, "eps", getEps().convertToDouble(), 0.0,
                         false, kInf, false)))
    return failure();
  auto t = getInput().getType();
  if (failed(verifyMatrixRank(*this, t, "input")))
    return failure();
  if (t.getDimSize(t.getRank() - 2) != t.getDimSize(t.getRank() - 1))
    return emitOpError("expected square (Gram) matrices, got ")
           << t.getDimSize(t.getRank() - 2) << "x"
           << t.getDimSize(t.getRank() - 1);
  return verifyPerMatrix(*this, t, getScale().getType());
}

LogicalResult ScaleMatricesOp::verify() {
  auto t = getInput().getType();
  if (failed(verifyMatrixRank(*this, t, "input")))
    return failure();
  if (getResult().getType().getShape() != t.getShape())
    return emitOpError("expected a result of the input's shape, got ")
           << getResult().getType();
  return verifyPerMatrix(*this, t, getScale().getType());
}

LogicalResult AddDiagonalOp::verify() {
  if (bool(getValueOperand()) == bool(getValueAttr()))
    return emitOpError("expected the value as an attribute or as an f64 "
                       "operand, exactly one of them");
  auto t = getInput().getType();
  if (failed(verifyMatrixRank(*this, t, "input")))
    return failure();
  int64_t r = t.getRank();
  if (t.getDimSize(r - 2) != t.getDimSize(r - 1))
    return emitOpError("expected square matrices, got ")
           << t.getDimSize(r - 2) << "x" << t.getDimSize(r - 1);
  return success();
}

LogicalResult ProbeOp::verify() {
  // I64Attr reads back unsigned; the attribute's own value keeps the sign.
  if (getSlotAttr().getInt() < 0)
    return emitOpError("expected slot >= 0, got ") << getSlotAttr().getInt();
  return success();
}

/// Number of matrices in a rank-2 (1) or rank-3 (B) tensor.
static int64_t numMatrices(RankedTensorType t) {
  return t.getRank() == 3 ? t.getDimSize(0) : 1;
}

LogicalResult SumSquaresOp::verify() {
  auto in = getInput().getType();
  if (failed(verifyMatrixRank(*this, in, "input")) ||
      failed(verifySameElementType(*this)))
    return failure();
  auto out = getResult().getType();
  if (out.getRank() != 1 || out.getDimSize(0) != numMatrices(in))
    return emitOpError("expected a result of shape ")
           << numMatrices(in) << " (one sum per matrix), got "
           << shapeStr(out.getShape());
  return success();
}

LogicalResult ScaleByNormOp::verify() {
  auto in = getInput().getType();
  if (failed(verifyMatrixRank(*this, in, "input")) ||
      failed(verifySameElementType(*this)))
    return failure();
  auto ss = getSumSquares().getType();
  if (ss.getRank() != 1 || ss.getDimSize(0) != numMatrices(in))
    return emitOpError("expected sum_squares of shape ")
           << numMatrices(in) << " (one per matrix), got "
           << shapeStr(ss.getShape());
  return verifyRange(*this, "eps", getEps().convertToDouble(), 0, false, kInf,
                     false);
}
