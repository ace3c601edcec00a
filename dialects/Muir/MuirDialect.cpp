//===- MuirDialect.cpp - the muir dialect ---------------------------------===//
//
// Dialect registration, the generated enum/attr definitions and the
// coefficient schedules of Newton-Schulz.
//
//===----------------------------------------------------------------------===//
#include "Muir/MuirDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"

#include <cmath>

using namespace mlir;
using namespace mlir::muir;

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "Muir/MuirEnums.cpp.inc"
#pragma GCC diagnostic pop
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "Muir/MuirOpsDialect.cpp.inc"
#pragma GCC diagnostic pop
#define GET_ATTRDEF_CLASSES
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "Muir/MuirAttrs.cpp.inc"
#pragma GCC diagnostic pop

FailureOr<std::optional<Machine>>
mlir::muir::parseMachineParameter(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  std::string name;
  if (parser.parseString(&name))
    return failure();
  if (std::optional<Machine> machine = symbolizeMachine(name))
    return std::optional<Machine>(machine);
  std::string known;
  for (unsigned v = 0; v <= getMaxEnumValForMachine(); ++v)
    if (auto m = symbolizeMachine(v))
      known += (known.empty() ? "" : ", ") + stringifyMachine(*m).str();
  return parser.emitError(loc, "unknown machine profile '")
         << name << "' (expected one of: " << known << ")";
}

void mlir::muir::printMachineParameter(AsmPrinter &printer,
                                       std::optional<Machine> machine) {
  printer.printString(stringifyMachine(*machine));
}

FailureOr<APFloat> mlir::muir::parseF64Parameter(AsmParser &parser) {
  double value;
  if (parser.parseFloat(value))
    return failure();
  return APFloat(value);
}

void mlir::muir::printF64Parameter(AsmPrinter &printer,
                                   const APFloat &value) {
  // %g, with the decimal point MLIR's lexer needs to read a float back
  // (150 -> 150.0, 1e+06 -> 1.0e+06).
  std::string text;
  llvm::raw_string_ostream(text)
      << llvm::format("%g", value.convertToDouble());
  if (StringRef(text).find_first_of(".ni") == StringRef::npos) {
    size_t e = text.find('e');
    text.insert(e == std::string::npos ? text.size() : e, ".0");
  }
  printer << text;
}

LogicalResult
NSCandidateAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        NewtonSchulzMode mode, NSForm form,
                        APFloat msValue, APFloat mbValue) {
  double ms = msValue.convertToDouble(), mb = mbValue.convertToDouble();
  if (mode == NewtonSchulzMode::auto_ || mode == NewtonSchulzMode::blockwise)
    return emitError() << "an ns_candidate is duplicated, distributed or "
                          "resharded; got "
                       << stringifyNewtonSchulzMode(mode);
  if (!(ms >= 0) || !(mb >= 0) || std::isinf(ms) || std::isinf(mb))
    return emitError() << "an ns_candidate's milliseconds and megabytes are "
                          "finite and non-negative";
  return success();
}

LogicalResult NSWhyAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                NSReason reason,
                                std::optional<Machine> machine,
                                ArrayRef<NSCandidateAttr> candidates) {
  bool model = reason == NSReason::cost_model;
  if (model && (!machine || candidates.empty()))
    return emitError() << "#muir.ns_why<cost_model> names the machine "
                          "profile and the candidates it weighed";
  if (!model && (machine || !candidates.empty()))
    return emitError() << "only #muir.ns_why<cost_model> has a machine "
                          "profile and candidates";
  return success();
}

LogicalResult
NSFormCostAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                       APFloat standardValue, APFloat gramValue) {
  for (double s : {standardValue.convertToDouble(),
                   gramValue.convertToDouble()})
    if (!(s >= 0) || std::isinf(s))
      return emitError() << "an ns_form_cost's seconds are finite and "
                            "non-negative";
  return success();
}

void MuirDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "Muir/MuirAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "Muir/MuirOps.cpp.inc"
      >();
}

LogicalResult mlir::muir::verifyNoUnknownAttributes(Operation *op) {
  ArrayRef<StringAttr> inherent = op->getName().getAttributeNames();
  for (NamedAttribute attr : op->getDiscardableAttrs()) {
    StringRef name = attr.getName().getValue();
    // Namespaced attributes (`muir.name`, `llvm.x`) belong to a dialect and
    // are checked by it; anything else is a typo or a stale option.
    if (name.contains('.'))
      continue;
    std::string expected;
    for (StringAttr known : inherent)
      expected += (expected.empty() ? "" : ", ") + known.getValue().str();
    return op->emitOpError("unknown attribute '")
           << name << "'; expected one of: "
           << (expected.empty() ? "(none)" : expected);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Discardable attributes
//===----------------------------------------------------------------------===//

/// An enum attribute of the dialect, `#muir.<mnemonic><value>`; the error
/// lists the values.
template <typename AttrT, typename EnumT>
static LogicalResult checkEnum(Operation *op, NamedAttribute attr,
                               StringRef what, StringRef mnemonic,
                               uint64_t maxValue,
                               StringRef (*valueName)(EnumT)) {
  if (isa<AttrT>(attr.getValue()))
    return success();
  InFlightDiagnostic diag = op->emitError("'")
                            << attr.getName().getValue() << "' " << what
                            << " must be #muir." << mnemonic << "<";
  for (uint64_t v = 0; v <= maxValue; ++v)
    diag << (v ? "|" : "") << valueName(static_cast<EnumT>(v));
  diag << ">; got " << attr.getValue();
  return diag;
}

/// Tensor names become file names (DIR/<name>.npy): non-empty relative
/// paths without empty, "." or ".." parts.
static bool isUsableName(StringRef name) {
  if (name.empty() || name.starts_with("/") || name.contains('\0'))
    return false;
  SmallVector<StringRef> parts;
  name.split(parts, '/');
  return llvm::none_of(parts, [](StringRef p) {
    return p.empty() || p == "." || p == "..";
  });
}

static LogicalResult unknownAttribute(Operation *op, NamedAttribute attr,
                                      StringRef where,
                                      ArrayRef<StringRef> known) {
  InFlightDiagnostic diag = op->emitError("unknown ")
                            << where << " attribute '"
                            << attr.getName().getValue()
                            << "'; expected one of: ";
  llvm::interleaveComma(known, diag);
  return diag;
}

//===----------------------------------------------------------------------===//
// The buffers of an exec function (muir.entry)
//===----------------------------------------------------------------------===//
//
// Exec IR frees its buffers with memref.dealloc (gpu.dealloc on CUDA). An
// entry that frees one twice, uses it after freeing it, or frees what it
// did not allocate would corrupt the heap when it runs; the verifier
// refuses it when the IR is read. The analysis is by names of upstream ops
// (this dialect does not depend on memref's or gpu's), conservative where
// control flow makes the order unknown: a free inside a loop, in one
// branch only, or in another block of an unstructured body does not count
// after it; what is freed before an op with regions counts in all of them.

namespace {
class EntryBuffers {
public:
  explicit EntryBuffers(Operation *function) : function(function) {}

  LogicalResult check() {
    for (Region &region : function->getRegions())
      for (Block &block : region)
        if (failed(checkBlock(block, Freed())))
          return failure();
    return success();
  }

private:
  /// Frees certain to have happened, by buffer (an allocation, not a view
  /// of one), with the first free.
  using Freed = llvm::SmallDenseMap<Value, Operation *, 8>;

  /// The buffer a free frees, if `op` frees one.
  static Value freedBy(Operation *op) {
    StringRef name = op->getName().getStringRef();
    if (name == "memref.dealloc" && op->getNumOperands() == 1)
      return op->getOperand(0);
    // gpu.dealloc async [deps] %buffer: the buffer is the last operand.
    if (name == "gpu.dealloc" && op->getNumOperands() &&
        isa<BaseMemRefType>(op->getOperands().back().getType()))
      return op->getOperands().back();
    return {};
  }

  /// Views alias their source's allocation (operand 0 of each).
  static bool isView(Operation *op) {
    return op->getNumOperands() &&
           llvm::is_contained(
               {"memref.subview", "memref.cast", "memref.reinterpret_cast",
                "memref.collapse_shape", "memref.expand_shape",
                "memref.reshape", "memref.transpose", "memref.view",
                "memref.memory_space_cast"},
               op->getName().getStringRef());
  }

  static Value rootOf(Value v) {
    while (auto r = dyn_cast<OpResult>(v)) {
      if (!isView(r.getOwner()))
        break;
      v = r.getOwner()->getOperand(0);
    }
    return v;
  }

  /// What is wrong with freeing `v`, when it is certainly not a buffer the
  /// function allocated on the heap; empty when it may be one.
  std::string notAllocated(Value v) {
    Value root = rootOf(v);
    if (auto arg = dyn_cast<BlockArgument>(root)) {
      if (arg.getOwner()->getParentOp() == function &&
          arg.getOwner()->isEntryBlock())
        return "function argument #" + std::to_string(arg.getArgNumber()) +
               ", which the caller owns";
      return "";
    }
    Operation *def = root.getDefiningOp();
    StringRef name = def->getName().getStringRef();
    if (name == "memref.get_global")
      return "a global (memref.get_global), which was never allocated";
    if (name == "memref.alloca")
      return "a stack buffer (memref.alloca), which is released on return";
    // A cast or reshape is the whole buffer under another type; a subview
    // (view, reinterpret_cast) is part of one.
    for (Value x = v; x != root; x = x.getDefiningOp()->getOperand(0)) {
      StringRef view = x.getDefiningOp()->getName().getStringRef();
      if (view == "memref.subview" || view == "memref.view" ||
          view == "memref.reinterpret_cast")
        return ("a view (" + view + ") of a buffer; deallocate the buffer "
                "itself").str();
    }
    return "";
  }

  LogicalResult checkBlock(Block &block, Freed freed) {
    for (Operation &op : block)
      if (failed(checkOp(op, freed)))
        return failure();
    endOfBlock = std::move(freed);
    return success();
  }

  LogicalResult checkOp(Operation &op, Freed &freed) {
    Value released = freedBy(&op);
    for (OpOperand &operand : op.getOpOperands()) {
      if (!isa<BaseMemRefType>(operand.get().getType()))
        continue;
      auto it = freed.find(rootOf(operand.get()));
      if (it == freed.end())
        continue;
      InFlightDiagnostic diag =
          operand.get() == released
              ? op.emitOpError(
                    "deallocates a buffer that was deallocated already")
              : op.emitOpError(
                    "uses a buffer after it was deallocated (operand #")
                    << operand.getOperandNumber() << ")";
      diag.attachNote(it->second->getLoc()) << "deallocated here";
      return diag;
    }
    if (released) {
      std::string why = notAllocated(released);
      if (!why.empty())
        return op.emitOpError("deallocates ") << why;
      freed.try_emplace(rootOf(released), &op);
    }
    // Regions run after what came before the op, whatever else they do.
    SmallVector<std::optional<Freed>> ends;
    for (Region &region : op.getRegions()) {
      std::optional<Freed> end;
      for (Block &b : region) {
        if (failed(checkBlock(b, freed)))
          return failure();
        if (region.hasOneBlock())
          end = std::move(endOfBlock);
      }
      ends.push_back(std::move(end));
    }
    // Exactly one region of an scf.if with both branches or of an
    // scf.index_switch runs: what every one frees is freed after it.
    StringRef name = op.getName().getStringRef();
    bool oneOfAll = (name == "scf.if" && op.getNumRegions() == 2 &&
                     !op.getRegion(1).empty()) ||
                    name == "scf.index_switch";
    if (oneOfAll && !ends.empty() &&
        llvm::all_of(ends, [](auto &e) { return e.has_value(); }))
      for (auto &entry : *ends.front()) {
        Value buffer = entry.first;
        if (!freed.count(buffer) &&
            llvm::all_of(ends, [&](auto &e) { return e->count(buffer); }))
          freed.try_emplace(buffer, entry.second);
      }
    return success();
  }

  Operation *function;
  Freed endOfBlock;
};
} // namespace

LogicalResult MuirDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  Attribute value = attr.getValue();
  if (name == EntryAttrHelper::getNameStr() ||
      name == PerRankAttrHelper::getNameStr() ||
      name == LocalAttrHelper::getNameStr() ||
      name == RecomputedAttrHelper::getNameStr()) {
    if (!isa<UnitAttr>(value))
      return op->emitError("'") << name << "' must be a unit attribute";
    // An exec function frees each buffer it allocated once, and uses none
    // after.
    if (name == EntryAttrHelper::getNameStr())
      return EntryBuffers(op).check();
    return success();
  }
  if (name == NsModeAttrHelper::getNameStr()) {
    if (!isa<NewtonSchulzModeAttr>(value))
      return op->emitError("'muir.ns_mode' must be #muir.ns_mode<auto>, "
                           "<duplicated>, <distributed>, <resharded> or "
                           "<blockwise>; got ")
             << value;
    return success();
  }
  if (name == NsWhyAttrHelper::getNameStr()) {
    if (!isa<NSWhyAttr>(value))
      return op->emitError("'muir.ns_why' must be #muir.ns_why<requested>, "
                           "<both_dims>, <fsdp_owner>, <layout_invariant> "
                           "or <cost_model on \"machine\" : [candidates]>; "
                           "got ")
             << value;
    return success();
  }
  if (name == NsFormAttrHelper::getNameStr()) {
    // muir-gram-newton-schulz's choice, on the Newton-Schulz it kept or on
    // the last product of the Gram form it wrote.
    if (!isa<NSFormAttr>(value))
      return op->emitError("'muir.ns_form' must be #muir.ns_form<standard> "
                           "or #muir.ns_form<gram>");
    return success();
  }
  if (name == NsFormCostAttrHelper::getNameStr()) {
    if (!isa<NSFormCostAttr>(value))
      return op->emitError("'muir.ns_form_cost' must be "
                           "#muir.ns_form_cost<standard = S s, gram = G s>, "
                           "the modelled seconds of both forms");
    return success();
  }
  if (name == DpOwnerAttrHelper::getNameStr()) {
    auto i = dyn_cast<IntegerAttr>(value);
    if (!i || i.getValue().isNegative())
      return op->emitError("'muir.dp_owner' must be a non-negative integer "
                           "(a data-parallel rank)");
    return success();
  }
  if (name == ParallelRangeAttrHelper::getNameStr()) {
    // muir-outline-loops: a loop nest's function whose last two arguments
    // are the range of its outer dimension's iterations, and their count.
    auto i = dyn_cast<IntegerAttr>(value);
    if (!i || !i.getType().isInteger(64) || i.getInt() < 1 ||
        !isa<FunctionOpInterface>(op))
      return op->emitError("'muir.parallel_range' must be a positive i64 on "
                           "a function (its outer loop's iterations)");
    return success();
  }
  if (name == ArenaBytesAttrHelper::getNameStr()) {
    auto i = dyn_cast<IntegerAttr>(value);
    if (!i || !i.getType().isInteger(64) || i.getInt() < 0 ||
        !isa<FunctionOpInterface>(op))
      return op->emitError("'muir.arena_bytes' must be a non-negative i64 "
                           "on a function (its temporaries' arena)");
    return success();
  }
  if (name == ModelledMsAttrHelper::getNameStr() ||
      name == DpWeightAttrHelper::getNameStr()) {
    // muir-distribute's modelled time of the mode it ran, and the weight
    // it shared the matrix out over dp by: finite, non-negative f64.
    auto f = dyn_cast<FloatAttr>(value);
    if (!f || !f.getType().isF64() || !(f.getValueAsDouble() >= 0) ||
        std::isinf(f.getValueAsDouble()))
      return op->emitError("'")
             << name << "' must be a finite, non-negative f64; got " << value;
    return success();
  }
  return unknownAttribute(
      op, attr, "operation",
      {EntryAttrHelper::getNameStr(), PerRankAttrHelper::getNameStr(),
       LocalAttrHelper::getNameStr(), RecomputedAttrHelper::getNameStr(),
       NsModeAttrHelper::getNameStr(), NsWhyAttrHelper::getNameStr(),
       DpOwnerAttrHelper::getNameStr(), DpWeightAttrHelper::getNameStr(),
       ModelledMsAttrHelper::getNameStr(), NsFormAttrHelper::getNameStr(),
       NsFormCostAttrHelper::getNameStr(),
       ParallelRangeAttrHelper::getNameStr(),
       ArenaBytesAttrHelper::getNameStr()});
}

/// A shard or split of argument `arg` names one of its dimensions.
static LogicalResult checkSplitDim(Operation *op, unsigned arg,
                                   Attribute split, int64_t dim) {
  auto fn = dyn_cast<FunctionOpInterface>(op);
  auto type = fn && arg < fn.getNumArguments()
                  ? dyn_cast<ShapedType>(fn.getArgumentTypes()[arg])
                  : ShapedType();
  if (type && type.hasRank() && (dim < 0 || dim >= type.getRank()))
    return op->emitError("argument ")
           << arg << ": " << split << " splits dimension " << dim
           << " of a rank-" << type.getRank() << " tensor";
  return success();
}

LogicalResult MuirDialect::verifyRegionArgAttribute(Operation *op,
                                                    unsigned region,
                                                    unsigned arg,
                                                    NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  Attribute value = attr.getValue();
  if (name == NameAttrHelper::getNameStr()) {
    auto s = dyn_cast<StringAttr>(value);
    if (!s || !isUsableName(s.getValue()))
      return op->emitError("argument ")
             << arg << ": 'muir.name' must be a non-empty tensor name usable "
             << "as a relative file name (no leading '/', no empty, '.' or "
             << "'..' parts); got " << value;
    return success();
  }
  if (name == RoleAttrHelper::getNameStr())
    return checkEnum<ArgRoleAttr>(op, attr, "(the argument's role)", "role",
                                  getMaxEnumValForArgRole(),
                                  stringifyArgRole);
  if (name == KindAttrHelper::getNameStr())
    return checkEnum<ParamKindAttr>(op, attr, "(the parameter's kind)",
                                    "kind", getMaxEnumValForParamKind(),
                                    stringifyParamKind);
  if (name == DtypeAttrHelper::getNameStr())
    return checkEnum<DTypeAttr>(op, attr, "(the dtype)", "dtype",
                                getMaxEnumValForDType(), stringifyDType);
  if (name == ShardsAttrHelper::getNameStr()) {
    // Typed: each #muir.shard<kind, "axis", dim> names an axis of one of
    // the module's grids and a dimension of the argument.
    auto list = dyn_cast<ArrayAttr>(value);
    if (!list || !llvm::all_of(list, llvm::IsaPred<ShardAttr>))
      return op->emitError("argument ")
             << arg << ": 'muir.shards' must be a list of "
             << "#muir.shard<kind, \"axis\", dim>; got " << value;
    auto module = op->getParentOfType<ModuleOp>();
    for (auto shard : list.getAsRange<ShardAttr>()) {
      if (failed(checkSplitDim(op, arg, shard, shard.getDim())))
        return failure();
      // (Lowered past the grids, a module has none left to check against.)
      bool known = !module || module.getOps<GridOp>().empty();
      if (module)
        for (auto grid : module.getOps<GridOp>())
          known |= grid.getAxisIndex(shard.getAxis()) >= 0;
      if (!known)
        return op->emitError("argument ")
               << arg << ": " << shard << " names axis '" << shard.getAxis()
               << "', which no muir.grid has";
    }
    return success();
  }
  if (name == SplitAttrHelper::getNameStr()) {
    // Typed: each #muir.split<@grid, ["axis", ...], dim> names a grid of
    // the module, axes of it and a dimension of the argument.
    auto list = dyn_cast<ArrayAttr>(value);
    if (!list || !llvm::all_of(list, llvm::IsaPred<SplitAttr>))
      return op->emitError("argument ")
             << arg << ": 'muir.split' must be a list of "
             << "#muir.split<@grid, [\"axis\", ...], dim>; got " << value;
    auto module = op->getParentOfType<ModuleOp>();
    for (auto split : list.getAsRange<SplitAttr>()) {
      if (split.getAxes().empty() ||
          !llvm::all_of(split.getAxes(), llvm::IsaPred<StringAttr>))
        return op->emitError("argument ")
               << arg << ": " << split << " must name its axes as strings";
      if (failed(checkSplitDim(op, arg, split, split.getDim())))
        return failure();
      // (Lowered past the grids, a module has none left to check against.)
      if (!module || module.getOps<GridOp>().empty())
        continue;
      auto grid = module.lookupSymbol<GridOp>(split.getGrid());
      if (!grid)
        return op->emitError("argument ")
               << arg << ": " << split << " names grid " << split.getGrid()
               << ", which the module does not have";
      // Several axes split the dimension row-major in the grid's order,
      // so they are listed in that order, each once.
      int64_t previous = -1;
      for (auto axis : split.getAxes().getAsRange<StringAttr>()) {
        int64_t index = grid.getAxisIndex(axis.getValue());
        if (index < 0)
          return op->emitError("argument ")
                 << arg << ": " << split << " names axis '"
                 << axis.getValue() << "', which " << split.getGrid()
                 << " does not have";
        if (index <= previous)
          return op->emitError("argument ")
                 << arg << ": " << split << " must list distinct axes in "
                 << split.getGrid() << "'s order";
        previous = index;
      }
    }
    return success();
  }
  if (name == FoldingAttrHelper::getNameStr()) {
    // @grid: the folding whose axes the argument's shards name first.
    auto ref = dyn_cast<FlatSymbolRefAttr>(value);
    if (!ref)
      return op->emitError("argument ")
             << arg << ": 'muir.folding' must name a grid (@moe); got "
             << value;
    auto module = op->getParentOfType<ModuleOp>();
    // (Lowered past the grids, a module has none left to check against.)
    if (module && !module.getOps<GridOp>().empty() &&
        !module.lookupSymbol<GridOp>(ref.getAttr()))
      return op->emitError("argument ")
             << arg << ": 'muir.folding' names " << ref
             << ", which the module does not have";
    return success();
  }
  if (name == InitStdAttrHelper::getNameStr()) {
    auto f = dyn_cast<FloatAttr>(value);
    if (!f || !(f.getValueAsDouble() > 0) ||
        !std::isfinite(f.getValueAsDouble()))
      return op->emitError("argument ")
             << arg << ": 'muir.init_std' must be a positive finite float";
    return success();
  }
  if (name == DefaultAttrHelper::getNameStr()) {
    auto f = dyn_cast<FloatAttr>(value);
    if (!f || !f.getType().isF64() || !(f.getValueAsDouble() >= 0) ||
        !std::isfinite(f.getValueAsDouble()))
      return op->emitError("argument ")
             << arg << ": 'muir.default' must be a finite f64 >= 0 (a "
             << "hyperparameter's default value)";
    return success();
  }
  return unknownAttribute(
      op, attr, "argument",
      {NameAttrHelper::getNameStr(), RoleAttrHelper::getNameStr(),
       KindAttrHelper::getNameStr(), DtypeAttrHelper::getNameStr(),
       SplitAttrHelper::getNameStr(), ShardsAttrHelper::getNameStr(),
       FoldingAttrHelper::getNameStr(), InitStdAttrHelper::getNameStr(),
       DefaultAttrHelper::getNameStr()});
}

LogicalResult MuirDialect::verifyRegionResultAttribute(Operation *op,
                                                       unsigned region,
                                                       unsigned result,
                                                       NamedAttribute attr) {
  if (attr.getName().getValue() != UpdatesAttrHelper::getNameStr())
    return unknownAttribute(op, attr, "result",
                            {UpdatesAttrHelper::getNameStr()});
  auto s = dyn_cast<StringAttr>(attr.getValue());
  if (!s || !isUsableName(s.getValue()))
    return op->emitError("result ")
           << result << ": 'muir.updates' must name the tensor it updates";
  return success();
}

// Published coefficient sets; past its end every table's last triple
// repeats (NVIDIA Emerging-Optimizers 0.3 instead starts quintic and custom
// sets again from the first: docs/description.md). simple: Keller Jordan's
// quintic with one triple; quintic: the five-step schedule used by the Muon
// reference implementations; polar_express: Amsel et al., 2025, with the
// paper's 1.01 safety factor folded in; deepseekv4: the DeepSeek-V4
// report's, eight simple steps then two of (2, -1.5, 0.5); cubic5:
// Emerging-Optimizers' five cubic steps (c = 0).
static const std::array<double, 3> kSimple[] = {{3.4445, -4.7750, 2.0315}};
static const std::array<double, 3> kQuintic[] = {
    {4.0848, -6.8946, 2.9270}, {3.9505, -6.3029, 2.6377},
    {3.7418, -5.5913, 2.3037}, {2.8769, -3.1427, 1.2046},
    {2.8366, -3.0525, 1.2012}};
static const std::array<double, 3> kPolarExpress[] = {
    {8.2051, -22.9019, 16.4607}, {4.0664, -2.8612, 0.5184},
    {3.9096, -2.8234, 0.5250},   {3.2856, -2.4153, 0.4853},
    {2.2779, -1.6198, 0.3985},   {1.8726, -1.2307, 0.3585},
    {1.8564, -1.2132, 0.3568},   {1.875, -1.25, 0.375}};
static const std::array<double, 3> kDeepSeekV4[] = {
    {3.4445, -4.7750, 2.0315}, {3.4445, -4.7750, 2.0315},
    {3.4445, -4.7750, 2.0315}, {3.4445, -4.7750, 2.0315},
    {3.4445, -4.7750, 2.0315}, {3.4445, -4.7750, 2.0315},
    {3.4445, -4.7750, 2.0315}, {3.4445, -4.7750, 2.0315},
    {2.0, -1.5, 0.5},          {2.0, -1.5, 0.5}};
static const std::array<double, 3> kCubic5[] = {
    {3.3656576, -3.3420992, 0.0}, {2.5744352, -1.4957376, 0.0},
    {2.5368962, -1.4312570, 0.0}, {2.4418906, -1.2764040, 0.0},
    {2.2230472, -0.9630650, 0.0}};

ArrayRef<std::array<double, 3>>
mlir::muir::getNamedSchedule(NSSchedule schedule) {
  switch (schedule) {
  case NSSchedule::simple:
    return kSimple;
  case NSSchedule::quintic:
    return kQuintic;
  case NSSchedule::polar_express:
    return kPolarExpress;
  case NSSchedule::deepseekv4:
    return kDeepSeekV4;
  case NSSchedule::cubic5:
    return kCubic5;
  case NSSchedule::custom:
    return {};
  }
  return {};
}

ArrayRef<StringRef> mlir::muir::getScheduleNames() {
  static const SmallVector<StringRef> names = [] {
    SmallVector<StringRef> all;
    for (unsigned v = 0; v <= getMaxEnumValForNSSchedule(); ++v)
      if (std::optional<NSSchedule> s = symbolizeNSSchedule(v))
        all.push_back(stringifyNSSchedule(*s));
    return all;
  }();
  return names;
}

SmallVector<std::array<double, 3>>
mlir::muir::resolveTable(NSSchedule schedule,
                         std::optional<ArrayRef<double>> explicitCoeffs,
                         int64_t steps) {
  SmallVector<std::array<double, 3>> table;
  if (schedule == NSSchedule::custom && explicitCoeffs) {
    for (size_t i = 0; i + 2 < explicitCoeffs->size(); i += 3)
      table.push_back({(*explicitCoeffs)[i], (*explicitCoeffs)[i + 1],
                       (*explicitCoeffs)[i + 2]});
  } else {
    llvm::append_range(table, getNamedSchedule(schedule));
  }
  if (static_cast<int64_t>(table.size()) > steps)
    table.resize(std::max<int64_t>(steps, 0));
  // A run of equal triples at the end is one: the last repeats anyway.
  while (table.size() > 1 && table[table.size() - 2] == table.back())
    table.pop_back();
  return table;
}

double mlir::muir::getUpdateScale(ScaleMode mode, double extra, int64_t m,
                                  int64_t n) {
  double dm = static_cast<double>(m), dn = static_cast<double>(n);
  switch (mode) {
  case ScaleMode::spectral:
    return extra * std::sqrt(std::max(dm, dn));
  case ScaleMode::shape:
    return std::sqrt(std::max(1.0, dm / dn));
  case ScaleMode::unit_rms:
    return std::sqrt(dm / dn);
  }
  return 1.0;
}
