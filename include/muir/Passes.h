//===- Passes.h - muir passes and pipelines ---------------------*- C++ -*-===//
#ifndef MUIR_PASSES_H
#define MUIR_PASSES_H

#include "Muir/MuirDialect.h"
#include "MuirExec/MuirExecDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "muir/Analysis/CostModel.h"
#include "muir/Support/Limits.h"
#include "muir/Target/Target.h"

#include <map>
#include <string>

#include <functional>

namespace mlir::muir {

/// The values the ns-precision flags and pass options accept.
llvm::cl::ValuesClass nsPrecisionValues();

/// How a step's sums are ordered: off (the libraries' fastest,
/// MPI_Allreduce or ncclAllReduce), on (fixed orders: the same bits on
/// every run of one layout), or layout-invariant (orders fixed by the
/// global tensors, not the ranks: the same bits on every layout of one
/// description and global batch).
enum class Determinism { Off, On, LayoutInvariant };
StringRef stringify(Determinism determinism);
llvm::cl::ValuesClass determinismValues();

namespace detail {
/// Takes what cl::values(...) adds to an option: each value's name and
/// number.
struct EnumValueList {
  struct Parser {
    SmallVector<std::pair<StringRef, int>> values;
    template <class DT>
    void addLiteralOption(StringRef name, const DT &value, StringRef) {
      values.push_back({name, static_cast<int>(value)});
    }
  } parser;
  Parser &getParser() { return parser; }
  explicit EnumValueList(const llvm::cl::ValuesClass &list) {
    list.apply(*this);
  }
};
} // namespace detail

/// The names of a list of enum values (targetValues() and the like), in
/// their order.
inline SmallVector<StringRef> valueNames(const llvm::cl::ValuesClass &values) {
  SmallVector<StringRef> names;
  for (auto &[name, value] : detail::EnumValueList(values).parser.values)
    names.push_back(name);
  return names;
}

/// "expected one of: a, b, c": what every enum-valued flag, pass option
/// and step-library option says of a value it does not know.
inline std::string expectedOneOf(const llvm::cl::ValuesClass &values) {
  std::string text = "expected one of: ";
  llvm::raw_string_ostream os(text);
  llvm::interleaveComma(valueNames(values), os);
  return text;
}

/// `text` as one of `values` (the flags' own list), if it is one.
template <typename E>
std::optional<E> parseEnumValue(const llvm::cl::ValuesClass &values,
                                StringRef text) {
  for (auto &[name, value] : detail::EnumValueList(values).parser.values)
    if (name == text)
      return static_cast<E>(value);
  return std::nullopt;
}

/// The command-line parser of muir's enum-valued flags and pass options:
/// LLVM's cl::parser<E> (which MLIR's pass options wrap), except that an
/// unknown value's error lists the valid ones. MUIR_ENUM_FLAG(E) makes it
/// the parser of every cl::opt<E> and pass Option<E>.
template <typename E>
class EnumParser : public llvm::cl::generic_parser_base {
protected:
  class OptionInfo : public GenericOptionInfo {
  public:
    OptionInfo(StringRef name, E v, StringRef helpStr)
        : GenericOptionInfo(name, helpStr), V(v) {}
    llvm::cl::OptionValue<E> V;
  };
  SmallVector<OptionInfo, 8> Values;

public:
  EnumParser(llvm::cl::Option &o) : generic_parser_base(o) {}
  using parser_data_type = E;

  unsigned getNumOptions() const override { return unsigned(Values.size()); }
  StringRef getOption(unsigned n) const override { return Values[n].Name; }
  StringRef getDescription(unsigned n) const override {
    return Values[n].HelpStr;
  }
  const llvm::cl::GenericOptionValue &
  getOptionValue(unsigned n) const override {
    return Values[n].V;
  }

  /// True on error.
  bool parse(llvm::cl::Option &o, StringRef argName, StringRef arg, E &v) {
    StringRef value = Owner.hasArgStr() ? arg : argName;
    for (const OptionInfo &info : Values)
      if (info.Name == value) {
        v = info.V.getValue();
        return false;
      }
    std::string message = "unknown value '" + value.str() +
                          "'; expected one of: ";
    llvm::raw_string_ostream os(message);
    llvm::interleaveComma(
        llvm::map_range(Values, [](const OptionInfo &i) { return i.Name; }),
        os);
    return o.error(message);
  }

  template <class DT>
  void addLiteralOption(StringRef name, const DT &v, StringRef helpStr) {
    Values.push_back(OptionInfo(name, static_cast<E>(v), helpStr));
    AddLiteralOption(Owner, name);
  }
  void removeLiteralOption(StringRef name) {
    unsigned n = findOption(name);
    assert(n != Values.size() && "Option not found!");
    Values.erase(Values.begin() + n);
  }
};

} // namespace mlir::muir

/// Makes EnumParser<E> the parser of every cl::opt<E> (and MLIR pass option
/// of type E); at namespace scope, before the first such option.
#define MUIR_ENUM_FLAG(E)                                                      \
  namespace llvm::cl {                                                         \
  template <> class parser<E> : public ::mlir::muir::EnumParser<E> {           \
  public:                                                                      \
    using ::mlir::muir::EnumParser<E>::EnumParser;                             \
  };                                                                           \
  }

MUIR_ENUM_FLAG(mlir::muir::Target)
MUIR_ENUM_FLAG(mlir::muir::NSPrecision)
MUIR_ENUM_FLAG(mlir::muir::NewtonSchulzMode)
MUIR_ENUM_FLAG(mlir::muir::NSFormOption)
MUIR_ENUM_FLAG(mlir::muir::Machine)
MUIR_ENUM_FLAG(mlir::muir::DpAssign)
MUIR_ENUM_FLAG(mlir::muir::Determinism)

namespace mlir::muir {

#define GEN_PASS_DECL
#include "muir/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "muir/Passes.h.inc"

/// The stages muir-compile writes that are MLIR modules.
enum class Stage {
  High,    ///< global shapes, muir ops (a per-rank program written as such too)
  Planned, ///< distributed by muir-distribute (muir.per_rank), tensors
  Exec,    ///< buffers and runtime calls (an entry with muir.entry)
  LLVM     ///< the LLVM dialect
};
StringRef stringify(Stage stage);
/// The stage of `module`, from what it holds.
Stage detectStage(ModuleOp module);

/// Options of the compile pipeline (muir/Driver/Options.def declares
/// them).
struct PipelineOptions {
#define MUIR_PIPELINE_OPTION(FIELD, TYPE, NAME, DEFAULT, FLAG, IDENTITY,      \
                             HELP)                                            \
  TYPE FIELD = DEFAULT;
#define MUIR_PIPELINE_ENUM_OPTION(FIELD, TYPE, NAME, DEFAULT, VALUES,         \
                                  IDENTITY, HELP)                             \
  TYPE FIELD = DEFAULT;
#include "muir/Driver/Options.def"
};

/// Each pipeline and step option's name, by its field (Options.def), for
/// the messages that name an option: `optionName::chunkRows` is
/// "syrk-chunk-rows".
namespace optionName {
#define MUIR_PIPELINE_OPTION(FIELD, TYPE, NAME, DEFAULT, FLAG, IDENTITY,      \
                             HELP)                                            \
  inline constexpr const char FIELD[] = NAME;
#define MUIR_PIPELINE_ENUM_OPTION(FIELD, TYPE, NAME, DEFAULT, VALUES,         \
                                  IDENTITY, HELP)                             \
  inline constexpr const char FIELD[] = NAME;
#define MUIR_STEP_OPTION(FIELD, TYPE, NAME, DEFAULT, USER, FLAG, HELP)        \
  inline constexpr const char FIELD[] = NAME;
#include "muir/Driver/Options.def"
} // namespace optionName

/// How a saved state's identity records a pipeline option: never (it
/// changes no bits), always, or only when it is not the default (an
/// option newer than states saved without it).
enum class OptionIdentity { Never, Always, NotDefault };

/// A step option as the C API describes it (muir_option_info): every
/// entry of muir/Driver/Options.def, in its order.
struct OptionInfo {
  StringRef name;
  StringRef kind; ///< "boolean", "integer", "choice" or "string"
  std::string defaultText;
  SmallVector<StringRef> choices; ///< a choice's names
  bool user;                      ///< a binding's user sets it
  StringRef help;
};
ArrayRef<OptionInfo> stepOptions();

/// High-level IR -> planned IR (distribute, decompose, batch, Gram form,
/// expand Newton-Schulz): the per-rank program, still on tensors.
void buildPlannedPipeline(OpPassManager &pm, const PipelineOptions &options);
/// High-level IR -> exec IR (the planned pipeline, then the next).
void buildToExecPipeline(OpPassManager &pm, const PipelineOptions &options);
/// Planned IR -> exec IR (SYRK, its fused all-reduce, CSE, bufferize).
void buildPlannedToExecPipeline(OpPassManager &pm,
                                const PipelineOptions &options);
/// The backend the exec IR is lowered for.
struct TargetOptions {
  Target target = Target::Cpu;
  std::string cudaArch = "sm_90"; ///< the PTX target of the CUDA kernels
  std::string ptxFeatures = "+ptx80"; ///< the PTX ISA version to emit
};

/// The options that change a step's program or its bits, by the tools'
/// flag names, for a saved state's identity (muir-run and the step library
/// alike).
std::map<std::string, std::string> identityOf(const PipelineOptions &options,
                                              const TargetOptions &target);
/// What is wrong with a combination of options, or "": the same rules for
/// the tools' flags and the C API's items. `given(name)` says whether an
/// option was given explicitly; `spell(name, value)` writes one as its front
/// end reads it ("--ns-form=gram", "ns-form=gram"; value "" for the option
/// alone).
std::string
checkOptions(const PipelineOptions &options, const TargetOptions &target,
             bool cudaBf16, llvm::function_ref<bool(StringRef)> given,
             llvm::function_ref<std::string(StringRef, StringRef)> spell);

/// Every pipeline option as "name=value", in Options.def's order (the
/// compiled-step cache's key).
SmallVector<std::string> optionTexts(const PipelineOptions &options);

/// Exec IR -> LLVM dialect (runtime calls, loops, LLVM conversion). For
/// cuda: buffers on the device, element-wise kernels as PTX embedded in the
/// module (gpu.binary), muirrt_cuda_* calls.
void buildExecToLLVMPipeline(OpPassManager &pm,
                             const TargetOptions &target = {});

/// One phase of lowering IR from one stage to a later one: its name (for
/// timing reports), the stage it reaches, and the pipeline that does it.
struct LoweringPhase {
  StringRef name;
  Stage reaches;
  std::function<void(OpPassManager &)> build;
};
/// The phases that lower IR of stage `from` to `to`, in order (none when
/// `to` is not later): the same pipelines whatever the stage the IR starts
/// at, so that IR read back lowers as the description does.
SmallVector<LoweringPhase> loweringPhases(Stage from, Stage to,
                                          const PipelineOptions &options,
                                          const TargetOptions &target);
/// Whether the pipeline option `name` (Options.def) changes what lowering
/// `from` to `to` runs: the phases' passes, as text, differ between its
/// values (every other option as in `options`). Read off the pipelines
/// themselves, not a list beside them. Nothing for a name that is no
/// pipeline option.
std::optional<bool> optionChangesLowering(MLIRContext &context,
                                          StringRef name, Stage from,
                                          Stage to,
                                          const PipelineOptions &options,
                                          const TargetOptions &target);

/// Drops the muir.* attributes of a function's arguments (read by the
/// tools from the exec IR; LLVM IR has no meaning for them).
void dropMuirArgAttrs(FunctionOpInterface function);

/// muir's element-wise ops (optimizer math, add, SwiGLU, the diagonal
/// shift) and arith ops on whole tensors as linalg.generic on tensors.
void populateElementwiseToLinalgPatterns(RewritePatternSet &patterns);
/// Applies those patterns once over `root` (no folding, no dead-code
/// removal).
void applyElementwiseToLinalg(Operation *root);

/// The tensor-level rewrites behind the passes of the same names, for any
/// pattern driver (the passes apply them in one walk; the walk driver skips
/// unreachable blocks, and muir's functions have one block):
/// each orthogonalised update (muon_update, normuon_update: any
/// OrthogonalizedUpdateInterface op) as momentum, Newton-Schulz, its own
/// normalisation (buildNormalizedUpdate) and apply_update, probing
/// each Newton-Schulz output with `probeUpdates` in slots numbered from
/// `nextSlot` on, in the order the driver visits the updates; `nextSlot`
/// must outlive the pattern set, which advances it; the Newton-Schulz ops
/// iterate in `precision`.
void populateDecomposeOptimizersPatterns(RewritePatternSet &patterns,
                                         bool probeUpdates, int64_t &nextSlot,
                                         NSPrecision precision);
/// Each Newton-Schulz op in the Gram or the standard form (`nsForm`, or
/// the cost model for `machine`, priced per rank of `ranks`, with auto),
/// the choice recorded on the op it leaves (the Newton-Schulz op, or the
/// Gram form's last product).
void populateGramNewtonSchulzPatterns(RewritePatternSet &patterns,
                                      Machine machine, int64_t ranks,
                                      NSFormOption nsForm, bool syrk);
/// Newton-Schulz as its normalisation and three matmuls per step.
void populateExpandNewtonSchulzPatterns(RewritePatternSet &patterns);
/// Symmetric products as muir.syrk.
void populateFormSyrkPatterns(RewritePatternSet &patterns);
/// all_reduce(sum) of a SYRK as muir.syrk_all_reduce, in chunks of
/// `chunkRows` rows (> 0; 0: the cost model's for `machine`), leaving the
/// SYRK unused.
void populateFuseSyrkAllReducePatterns(RewritePatternSet &patterns,
                                       Machine machine, int64_t chunkRows);

/// The dialects muir's tools read and produce: every upstream dialect and
/// extension (what the pipelines emit) plus muir and muir_exec, with the
/// muir ops' bufferization models.
void registerMuirDialects(DialectRegistry &registry);

/// The BufferizableOpInterface models of the muir ops that compute tensors:
/// each bufferizes to its muir_exec op, its results fresh allocations
/// (one-shot bufferize in muir-lower-to-exec).
void registerBufferizableOpInterfaceExternalModels(DialectRegistry &registry);

/// A copy between buffers: memref.copy (a memcpy) when both are
/// contiguous, else an element-wise linalg.copy (loops after lowering, with
/// no runtime library behind them).
void copyBuffer(OpBuilder &b, Location loc, Value from, Value to);

/// The level of IR a muir pass takes (the stages of docs/design.md).
enum class PassInput {
  /// Tensor-level IR, high or planned: muir ops on tensors, before
  /// muir-lower-to-exec (muir-distribute, the Newton-Schulz rewrites, ...).
  Tensors,
  /// Planned IR: distributed, optimizers decomposed, Newton-Schulz
  /// expanded (muir-lower-to-exec).
  Planned,
  /// Exec IR: buffers, muir_exec ops, a muir.entry function
  /// (muir-exec-to-runtime-calls, muir-exec-to-gpu, muir-trace-buffers).
  Exec,
};

/// Fails, with an error on the first op of `module` that is not IR of
/// level `input` (naming `pass` and the pass that makes the IR it takes),
/// unless `module` is such IR. Every muir pass checks its input so, so that
/// a pass given the wrong level fails instead of leaving the IR as it was.
inline LogicalResult checkPassInput(Operation *root, StringRef pass,
                                    PassInput input) {
  // A function pass (nested under func.func) reads its module's grids.
  auto module = dyn_cast<ModuleOp>(root);
  if (!module)
    module = root->getParentOfType<ModuleOp>();
  auto fail = [&](Operation *op, const Twine &found, const Twine &hint) {
    StringRef level = input == PassInput::Exec ? "exec IR (buffers and "
                                                 "muir_exec ops)"
                      : input == PassInput::Planned
                          ? "planned IR (distributed, optimizers "
                            "decomposed, Newton-Schulz expanded)"
                          : "tensor-level IR (high or planned: muir ops on "
                            "tensors)";
    op->emitError() << pass << " expects " << level << "; found " << found
                    << ": " << hint;
    return failure();
  };
  auto isMuir = [](Operation *op) {
    return op->getDialect() && isa<MuirDialect>(op->getDialect()) &&
           !isa<GridOp>(op);
  };
  // A step function on tensors: its arguments name tensors.
  auto isTensorStep = [](func::FuncOp f) {
    if (f->hasAttr("muir.entry"))
      return false;
    for (unsigned i = 0; i < f.getNumArguments(); ++i)
      if (f.getArgAttr(i, "muir.name") &&
          isa<TensorType>(f.getArgument(i).getType()))
        return true;
    return false;
  };
  bool hasGrid = module && !module.getOps<GridOp>().empty();
  Operation *bad = nullptr;
  std::string found, hint;
  root->walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (auto f = dyn_cast<LLVM::LLVMFuncOp>(op); f && !f.isExternal()) {
      found = ("LLVM-dialect function @" + f.getName()).str();
      hint = "the IR is lowered to LLVM already";
    } else if (input == PassInput::Exec) {
      if (!isMuir(op))
        return WalkResult::advance();
      found = ("tensor-level op '" + op->getName().getStringRef() + "'").str();
      hint = "run muir-lower-to-exec first (the muir-to-exec pipeline)";
    } else if (auto f = dyn_cast<func::FuncOp>(op);
               f && f->hasAttr("muir.entry")) {
      found = ("exec function @" + f.getName() + " (muir.entry)").str();
      hint = input == PassInput::Planned
                 ? "it is lowered to exec IR already"
                 : "the pass runs before muir-lower-to-exec";
    } else if (op->getDialect() &&
               isa<muir_exec::MuirExecDialect>(op->getDialect())) {
      found = ("exec op '" + op->getName().getStringRef() + "'").str();
      hint = input == PassInput::Planned
                 ? "it is lowered to exec IR already"
                 : "the pass runs before muir-lower-to-exec";
    } else if (input != PassInput::Planned) {
      return WalkResult::advance();
    } else if (auto f = dyn_cast<func::FuncOp>(op);
               f && hasGrid && !f->hasAttr("muir.per_rank") &&
               isTensorStep(f) &&
               llvm::any_of(llvm::seq(f.getNumArguments()), [&](unsigned i) {
                 return bool(f.getArgAttr(i, "muir.shards"));
               })) {
      found = ("function @" + f.getName() +
               ", whose arguments are sharded (muir.shards) but not "
               "distributed")
                  .str();
      hint = "run muir-distribute first";
    } else if (isa<MuonUpdateOp, NorMuonUpdateOp>(op)) {
      found = ("high-level op '" + op->getName().getStringRef() + "'").str();
      hint = "run muir-decompose-optimizers first (the muir-to-exec "
             "pipeline)";
    } else if (isa<NewtonSchulzOp>(op)) {
      found = "op 'muir.newton_schulz'";
      hint = "run muir-expand-newton-schulz first (the muir-to-exec "
             "pipeline)";
    } else {
      return WalkResult::advance();
    }
    bad = op;
    return WalkResult::interrupt();
  });
  if (bad)
    return fail(bad, found, hint);
  // Exec IR has no step function on tensors left.
  if (input == PassInput::Exec && module)
    for (auto f : module.getOps<func::FuncOp>())
      if (isTensorStep(f))
        return fail(f, "tensor-level function @" + f.getName(),
                    "run muir-lower-to-exec first (the muir-to-exec "
                    "pipeline)");
  return success();
}

/// Registers every muir pass and the pipelines `muir-to-exec`,
/// `muir-exec-to-llvm` and `muir-compile-cpu` (both in a row).
void registerMuirPassesAndPipelines();

} // namespace mlir::muir

#endif // MUIR_PASSES_H
