//===- Step.cpp - a compiled training step a program calls ----------------===//
//
// Parse (description or IR) -> exec IR -> arguments; then join the ranks
// and JIT-compile; then run on bound memory. See muir/Runner/Step.h.
//
//===----------------------------------------------------------------------===//
#include "StepImpl.h"

#include "MuirExec/MuirExecDialect.h"
#include "muir/Conversion/Passes.h"
#include "muir/Driver/Diagnostics.h"
#include "muir/Driver/PipelineFlags.h"
#include "muir/Import/Description.h"
#include "muir/Runner/Role.h"
#include "muir/Support/Files.h"
#include "muir/Support/Version.h"
#include "muir/Support/Limits.h"
#include "muir/Support/Nesting.h"
#include "muir/Version.h"
#include "muir-rt/Runtime.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/xxhash.h"
#include "llvm/TargetParser/Host.h"

#include <cstdlib>
#include <cmath>
#include <limits>
#include <dlfcn.h>
#include <mutex>

using namespace mlir;
using namespace mlir::muir;
using namespace mlir::muir::runner;
using llvm::StringRef;
using llvm::Twine;


bool runner::underMPI() { return getenv("OMPI_COMM_WORLD_SIZE") != nullptr; }

int64_t Argument::numel() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::pair<double, double>
runner::expectedBand(ArrayRef<std::array<double, 3>> table, int64_t steps) {
  // Log-spaced: the polynomials change fastest near 0.
  constexpr int kSamples = 20000;
  // Past the table the last polynomial repeats: a sample that comes back
  // to where it was two steps before stays in that cycle (of one or two
  // values), so its value at `steps` follows from the parity. One that
  // has not settled after this many repeats is taken as it is then.
  constexpr int64_t kMaxRepeats = 10000;
  double low = std::numeric_limits<double>::infinity(), high = -low;
  if (table.empty())
    return {low, high};
  int64_t len = static_cast<int64_t>(table.size());
  for (int i = 0; i <= kSamples; ++i) {
    double x = kBandFloor *
               std::pow(1.0 / kBandFloor, static_cast<double>(i) / kSamples);
    double previous = std::nan(""); // x_{k-1}
    for (int64_t k = 0; k < steps; ++k) {
      const auto &[a, b, c] = table[std::min(k, len - 1)];
      double x2 = x * x;
      double next = x * (a + x2 * (b + c * x2)); // x_{k+1}
      if (k >= len && next == previous) {
        // x_{k+1} == x_{k-1}: x_steps is x_{k+1} or x_k by parity.
        x = (steps - (k + 1)) % 2 == 0 ? next : x;
        break;
      }
      previous = x;
      x = next;
      if (k >= len + kMaxRepeats)
        break;
    }
    low = std::min(low, x);
    high = std::max(high, x);
  }
  return {low, high};
}

int64_t runner::groupSize(llvm::ArrayRef<Folding> grids, int64_t mask) {
  size_t f = static_cast<size_t>(muirrt_mask_folding(mask));
  if (f >= grids.size())
    return 1;
  int64_t size = 1;
  for (auto [i, s] : llvm::enumerate(grids[f].sizes))
    if (mask & (int64_t(1) << i))
      size *= s;
  return size;
}


namespace {

/// The runner's role of an argument: its `muir.role` (the importer writes
/// one for every argument), else, for hand-written IR, by its name: a
/// gradient's ".grad" or one of the optimizers' state suffixes (their
/// registry, desc::optimizers()), else a parameter.
int32_t roleOf(StringRef name, ArgRoleAttr explicitRole) {
  if (explicitRole) {
    switch (explicitRole.getValue()) {
    case ArgRole::param:
      return RoleParam;
    case ArgRole::grad:
      return RoleGrad;
    case ArgRole::state:
      return RoleState;
    case ArgRole::data:
      return RoleData;
    case ArgRole::hyper:
      return RoleHyper;
    case ArgRole::step:
    case ArgRole::tokens:
      // The counter is read by type (i64), not by role.
      return RoleParam;
    }
  }
  if (name.ends_with(".grad"))
    return RoleGrad;
  for (const desc::OptimizerInfo &o : desc::optimizers())
    for (const desc::OptimizerState &s : o.state)
      if (name.ends_with(s.suffix))
        return RoleState;
  return RoleParam;
}

/// Once per process: LLVM's native target and MLIR's passes.
void initialiseLLVM() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    registerAllPasses();
  });
}
} // namespace

//===----------------------------------------------------------------------===//
// Step
//===----------------------------------------------------------------------===//


/// The CPU runtime's ranks are the process's: every open step of a process
/// shares them, so all must have the same grid and foldings. They are
/// joined by the first and left at exit (MPI cannot start again once
/// finalized, and a later step may still come); under ranksMutex().
static int distUsers = 0;
static std::string distGrid;

static void leaveRanks() { muirrt_dist_finalize(); }

Step::Step() : impl(std::make_unique<Impl>()) {}

Step::~Step() {
  // The JIT's code goes before the runtimes it calls are finalised.
  impl->engine.reset();
  if (impl->library)
    dlclose(impl->library);
  impl->backend.reset();
  if (impl->distStarted) {
    std::lock_guard<std::mutex> lock(ranksMutex());
    --distUsers;
  }
}

/// The compile flags given (options.given) that the input's stage makes
/// pointless: a flag of distribution or lowering on IR past it, and
/// --no-probes on IR that has none.
static llvm::Error checkGivenFlags(MLIRContext &context,
                                   const StepOptions &options, Stage stage) {
  for (const std::string &flag : options.given) {
    // A pipeline option that no pass lowering planned IR reads (those of
    // distribution, batching and expansion: planned IR has its
    // Newton-Schulz expanded already), read off the pipelines; but
    // --deterministic also sets the runtime's reduction order (prepare).
    bool distributeOnly =
        stage == Stage::Planned && flag != optionName::deterministic &&
        !optionChangesLowering(context, flag, Stage::Planned, Stage::Exec,
                               options.pipeline, options.target)
             .value_or(true);
    // muir-compile writes no probes (it has no such flag): planned and exec
    // IR have none to leave out.
    if (flag == "no-probes" && stage != Stage::High)
      return error("--no-probes has no effect on " +
                   Twine(stage == Stage::Exec ? "exec" : "planned") +
                   " IR: muir-compile writes it without Newton-Schulz "
                   "probes, so it has none to leave out; drop the flag");
    if (stage == Stage::Exec || (stage == Stage::Planned && distributeOnly))
      return error("--" + flag + " has no effect on " +
                   (stage == Stage::Exec ? "exec IR, which is compiled"
                                         : "planned IR, which is "
                                           "distributed") +
                   " already; give it to muir-compile with the description");
  }
  return llvm::Error::success();
}

llvm::Expected<std::unique_ptr<Step>>
Step::load(StringRef source, StringRef filename, const StepOptions &options,
           llvm::raw_ostream &diagnostics) {
  initialiseLLVM();
  std::unique_ptr<Step> step(new Step());
  step->options = options;
  step->impl->backend = Backend::create(options);
  Impl &I = *step->impl;
  I.sourceText = source.str();
  I.filename = filename.str();
  registerStepDialects(I.registry);
  I.context = std::make_unique<MLIRContext>(I.registry);
  MLIRContext &context = *I.context;
  // Diagnostics point at the description (file:line:col); a whole step's
  // function printed after a note would bury them.
  context.printOpOnDiagnostic(false);
  ExcerptDiagnosticHandler handler(I.sourceMgr, &context, diagnostics);
  I.sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(source, filename), llvm::SMLoc());
  // The description reader reports through the source manager: to the same
  // stream (a library's caller gets them as its error).
  I.sourceMgr.setDiagHandler(
      [](const llvm::SMDiagnostic &d, void *os) {
        d.print(nullptr, *static_cast<llvm::raw_ostream *>(os),
                /*ShowColors=*/false);
      },
      &diagnostics);
  StringRef ext = llvm::sys::path::extension(filename);
  OwningOpRef<ModuleOp> &module = I.module;
  std::string layoutFreeHash; // a description's (oneDeviceHash)
  if (ext == ".yaml" || ext == ".yml" || ext == ".json") {
    auto desc = desc::parseDescription(I.sourceMgr, 1);
    if (failed(desc))
      return error("");
    module =
        options.layer.empty()
            ? desc::buildModule(context, *desc, options.pipeline.deterministic)
            : desc::buildLayerModule(context, *desc, options.layer,
                                     options.layerPass);
    if (module && failed(verify(*module)))
      return error("");
    if (module && options.layer.empty())
      layoutFreeHash =
          oneDeviceHash(context, *desc, options.pipeline.deterministic);
  } else {
    if (!options.layer.empty())
      return error("option 'layer' needs a description (.yaml, .yml or "
                   ".json) holding the MoE layer, not IR");
    if (reportTooDeep(I.sourceMgr, 1, NestingSyntax::Mlir, "module"))
      return error("");
    module = parseSourceFile<ModuleOp>(I.sourceMgr, &context);
  }
  if (!module)
    return error("");

  Stage stage = detectStage(*module);
  if (stage == Stage::LLVM)
    return error("the input is LLVM-dialect IR (muir-compile --emit=llvm), "
                 "which cannot be bound to tensors; give the description "
                 "or the exec IR (--emit=exec)");
  if (llvm::Error e = checkGivenFlags(context, options, stage))
    return std::move(e);
  // One run grid; the others fold it (the dialect says which is which).
  if (failed(getRunGrid(*module)))
    return error("");
  // What a saved state is for: the step's IR as parsed or built (grid,
  // shapes, settings), the grid, the compile flags.
  step->id = identityOfStep(*module, stage, layoutFreeHash, options);
  // Gradients the step computes itself (a trained MoE layer's, returned
  // with muir.updates).
  for (auto f : module->getOps<func::FuncOp>()) {
    std::set<std::string> grads;
    for (unsigned i = 0; i < f.getNumArguments(); ++i)
      if (auto name = f.getArgAttrOfType<StringAttr>(
              i, MuirDialect::NameAttrHelper::getNameStr()))
        if (roleOf(name, f.getArgAttrOfType<ArgRoleAttr>(
                             i, MuirDialect::RoleAttrHelper::getNameStr())) ==
            RoleGrad)
          grads.insert(name.str());
    for (unsigned r = 0; r < f.getNumResults(); ++r)
      if (auto name = f.getResultAttrOfType<StringAttr>(
              r, MuirDialect::UpdatesAttrHelper::getNameStr())) {
        step->updatedNames.insert(name.str());
        if (grads.count(name.str()))
          step->computedGrads.insert(name.str());
      }
  }
  // Each Muon parameter's Newton-Schulz settings, for the table's
  // expected singular values (lowering expands them).
  module->walk([&](OrthogonalizedUpdateInterface op) {
    auto arg = dyn_cast<BlockArgument>(op.getParam());
    auto f = arg ? dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp())
                 : func::FuncOp();
    auto name =
        f ? f.getArgAttrOfType<StringAttr>(
                arg.getArgNumber(), MuirDialect::NameAttrHelper::getNameStr())
          : StringAttr();
    if (!name)
      return;
    int64_t steps = op.getNsStepsAttr().getInt();
    NSSchedule schedule = op.getScheduleAttr().getValue();
    DenseF64ArrayAttr coefficients = op.getCoefficientsAttr();
    NSSettings &ns = step->ns[name.str()];
    ns.text = (Twine(steps) + " " + stringifyNSSchedule(schedule) + " steps")
                  .str();
    std::tie(ns.low, ns.high) = expectedBand(
        resolveTable(schedule,
                     coefficients ? std::optional<ArrayRef<double>>(
                                        coefficients.asArrayRef())
                                  : std::nullopt,
                     steps),
        steps);
  });
  // Exec IR updates in place and names no results: its parameters and
  // state are what a step writes.
  step->updatesByRole = stage == Stage::Exec;
  if (stage != Stage::Exec) {
    PassManager toExec(&context);
    buildToExecPipeline(toExec, options.pipeline);
    if (failed(toExec.run(*module)))
      return error("");
  }
  if (llvm::Error e = step->readArguments())
    return std::move(e);
  return step;
}

/// Adds an argument's `#muir.split<@grid, ["axis", ...], dim>` (verified by
/// the dialect) to its splits: the grid's folding index and the axes' bits,
/// and the global shape it implies.
static llvm::Error readSplit(ArrayRef<Folding> grids, Attribute attr, Argument &a) {
  auto split = dyn_cast<SplitAttr>(attr);
  size_t f = grids.size();
  for (size_t g = 0; split && g < grids.size(); ++g)
    if (grids[g].name == split.getGrid().getValue())
      f = g;
  int64_t dim = split ? split.getDim() : -1, bits = 0;
  bool bad = f == grids.size() || dim < 0 ||
             dim >= static_cast<int64_t>(a.shape.size());
  for (Attribute axis :
       split ? split.getAxes().getValue() : ArrayRef<Attribute>()) {
    if (bad)
      break;
    auto name = dyn_cast<StringAttr>(axis);
    const SmallVector<std::string> &axes = grids[f].axes;
    auto it = name ? llvm::find(axes, name.getValue().str()) : axes.end();
    if (it == axes.end())
      bad = true;
    else
      bits |= int64_t(1) << (it - axes.begin());
  }
  if (bad) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << attr;
    return error("tensor '" + a.name + "': bad muir.split entry " + text +
                 " (expected #muir.split<@grid, [axes], dim> with axes of "
                 "that grid)");
  }
  for (const Split &other : a.splits)
    if (other.dim == dim)
      return error("tensor '" + a.name + "' is split twice on dim " +
                   Twine(dim));
  int64_t mask = muirrt_group_mask(static_cast<int64_t>(f), bits);
  a.splits.push_back({dim, mask});
  a.globalShape[dim] *= groupSize(grids, mask);
  return llvm::Error::success();
}

llvm::Error Step::readArguments() {
  ModuleOp module = *impl->module;
  func::FuncOp entry;
  for (auto f : module.getOps<func::FuncOp>())
    if (f->hasAttr(MuirDialect::EntryAttrHelper::getNameStr())) {
      if (entry)
        return error("more than one entry function ('" + entry.getName() +
                     "' and '" + f.getName() + "')");
      entry = f;
    }
  if (!entry)
    return error("no entry function: expected a function whose arguments "
                 "carry 'muir.name'");
  entryName = entry.getName().str();

  // The run's ranks are the devices of the grid that folds no other; the
  // grids that fold it number the same ranks in other axes (MoE: edp x
  // ep). The list is in folding-index order, as the runtime numbers them.
  FailureOr<SmallVector<GridOp>> byIndex = getGridsByFoldingIndex(module);
  if (failed(byIndex))
    return error("");
  for (GridOp grid : *byIndex) {
    Folding f;
    f.name = grid.getSymName().str();
    for (auto [name, size] : llvm::zip(grid.getAxes(), grid.getShape())) {
      f.axes.push_back(cast<StringAttr>(name).getValue().str());
      f.sizes.push_back(size);
    }
    grids.push_back(std::move(f));
  }
  numDevices = 1;
  if (!grids.empty())
    for (int64_t size : grids.front().sizes)
      if (size < 1 || llvm::MulOverflow(numDevices, size, numDevices) ||
          numDevices > kMaxDevices)
        return error("the grid " + id.grid + " has more than " +
                     Twine(kMaxDevices) + " devices");

  llvm::StringMap<unsigned> argIndexByName;
  for (unsigned i = 0; i < entry.getNumArguments(); ++i) {
    Type t = entry.getArgument(i).getType();
    Argument a;
    auto name = entry.getArgAttrOfType<StringAttr>(
        i, MuirDialect::NameAttrHelper::getNameStr());
    if (auto mt = dyn_cast<MemRefType>(t)) {
      if (!name)
        return error("entry argument " + Twine(i) + " has no muir.name");
      a.name = name.str();
      a.role =
          roleOf(a.name, entry.getArgAttrOfType<ArgRoleAttr>(
                             i, MuirDialect::RoleAttrHelper::getNameStr()));
      a.shape.assign(mt.getShape().begin(), mt.getShape().end());
      a.globalShape = a.shape;
      a.i64 = mt.getElementType().isInteger(64);
      a.f64 = mt.getElementType().isF64();
      if (!a.i64 && !a.f64 && !mt.getElementType().isF32())
        return error("tensor '" + a.name + "' has an element type other "
                     "than f32, f64 and int64 (a layer's counts)");
      if (a.name == "x" && a.shape.size() == 2)
        tokenBound = a.shape[0];
      // The entry stores written results in place; a trained layer's
      // computed gradients are written too.
      a.updated = updatesByRole ? a.role == RoleParam ||
                                      a.role == RoleState
                                : updatedNames.count(a.name) != 0;
      if (auto splits = entry.getArgAttrOfType<ArrayAttr>(
              i, MuirDialect::SplitAttrHelper::getNameStr()))
        for (Attribute attr : splits)
          if (llvm::Error e = readSplit(grids, attr, a))
            return e;
      // `muir.init_std`: the seeded values' standard deviation.
      if (auto std = entry.getArgAttrOfType<FloatAttr>(
              i, MuirDialect::InitStdAttrHelper::getNameStr()))
        a.initStd = std.getValueAsDouble();
    } else if (t.isInteger(64)) {
      // The step counter, or a called layer's token count ("tokens").
      auto role = entry.getArgAttrOfType<ArgRoleAttr>(
          i, MuirDialect::RoleAttrHelper::getNameStr());
      tokenCount = role && role.getValue() == ArgRole::tokens;
      a.name = tokenCount ? "tokens" : "step";
      a.role = RoleCounter;
      counterUsed |= !entry.getArgument(i).use_empty();
    } else if (t.isF64()) {
      if (!name)
        return error("entry argument " + Twine(i) +
                     " (f64) has no muir.name naming the hyperparameter");
      a.name = name.str();
      a.role = RoleHyper;
      auto d = entry.getArgAttrOfType<FloatAttr>(
          i, MuirDialect::DefaultAttrHelper::getNameStr());
      if (!d)
        return error("hyperparameter '" + a.name + "' (entry argument " +
                     Twine(i) + ") has no muir.default");
      a.defaultValue = d.getValueAsDouble();
      a.hyperIndex = static_cast<int32_t>(hyperArgs.size());
      hyperArgs.push_back(static_cast<int32_t>(args.size()));
      hyperUsed |= !entry.getArgument(i).use_empty();
    } else {
      return error("entry argument " + Twine(i) + " has unsupported type");
    }
    if (a.role == RoleHyper && !std::isfinite(a.defaultValue))
      return error("hyperparameter '" + a.name + "' (entry argument " +
                   Twine(i) + ") has a muir.default that is not finite");
    // Names address tensors and hyperparameters (files, the C API, the
    // learning-rate schedule): each names one argument.
    if (auto [it, inserted] = argIndexByName.try_emplace(a.name, i);
        !inserted)
      return error("entry arguments " + Twine(it->second) + " and " +
                   Twine(i) + " are both named '" + a.name +
                   "'; each argument needs its own muir.name");
    args.push_back(std::move(a));
  }
  bound.assign(args.size(), nullptr);
  module.walk([&](muir_exec::ObserveOp op) {
    auto t = cast<MemRefType>(op.getInput().getType());
    obs[op.getSlot()] = {op.getLabel().str(),
                         SmallVector<int64_t>(t.getShape())};
  });
  return llvm::Error::success();
}

int32_t Step::find(StringRef name) const {
  for (auto [i, a] : llvm::enumerate(args))
    if (a.name == name)
      return static_cast<int32_t>(i);
  return -1;
}

std::vector<double> Step::defaultHyper() const {
  std::vector<double> values;
  for (int32_t i : hyperArgs)
    values.push_back(args[i].defaultValue);
  return values;
}

int64_t Step::rank() const { return impl->backend->rank(); }

bool Step::cached() const { return impl->packedEntry != nullptr; }

std::string Step::cacheError() const { return cacheFailure; }

llvm::Error Step::prepare(llvm::raw_ostream &diagnostics) {
  if (prepared)
    return error("the step is prepared already");
  prepared = true;
  Impl &I = *impl;
  MLIRContext &context = *I.context;
  ModuleOp module = *I.module;
  ExcerptDiagnosticHandler handler(I.sourceMgr, &context, diagnostics);

  // Fingerprint tracing: a muir_exec.trace around every executed op; the
  // ops' names, locations and operand types are kept for the trace file.
  if (options.trace) {
    PassManager pm(&context);
    pm.addPass(createMuirTraceBuffers());
    if (failed(pm.run(module)))
      return error("cannot add the fingerprint trace");
    module.walk([&](muir_exec::TraceOp t) {
      TracedOp &op = I.tracedOps[t.getOpId()];
      op.name = t.getOp().str();
      op.loc = t.getLoc().str();
      std::string type;
      llvm::raw_string_ostream os(type);
      os << t.getBuffer().getType();
      // One token in the trace line.
      llvm::erase(type, ' ');
      op.types[t.getIndex()] = type;
    });
  }

  if (llvm::Error e = joinRanks())
    return e;

  std::string manifest;
  if (cacheable())
    manifest = entryManifest(module, entryName);
  func::FuncOp entry;
  for (auto f : module.getOps<func::FuncOp>())
    if (f->hasAttr(MuirDialect::EntryAttrHelper::getNameStr()))
      entry = f;
  dropMuirArgAttrs(entry);
  PassManager toLLVM(&context);
  buildExecToLLVMPipeline(toLLVM, options.target);
  if (failed(toLLVM.run(module)))
    return error("lowering to LLVM failed");
  // A step the cache cannot keep (no cc, a folder it cannot write) still
  // runs: through the JIT.
  if (cacheable()) {
    llvm::Error e = writeCache(manifest);
    if (!e)
      return llvm::Error::success();
    cacheFailure = llvm::toString(std::move(e));
    // One line of muir's: what failed and that the step still runs.
    if (!cacheRaced)
      llvm::WithColor::warning(llvm::errs(), "muir")
          << "cannot write the compiled step to cache-dir '"
          << options.cacheDir << "': " << cacheFailure
          << "; the step runs from the JIT\n";
  }
  return startEngine();
}


llvm::Error Step::joinRanks() {
  Impl &I = *impl;
  // The ranks: the job's MPI world (or none for one device), where the
  // target takes the runtime's.
  if (I.backend->joinsRuntimeRanks(numDevices)) {
    std::lock_guard<std::mutex> lock(ranksMutex());
    std::string text;
    for (const Folding &f : grids) {
      text += f.name + ":";
      for (int64_t size : f.sizes)
        text += std::to_string(size) + ",";
      text += ";";
    }
    if (distUsers > 0 && text != distGrid)
      return error("another step of this process runs on a different grid "
                   "(" + distGrid + " vs " + text + "); the ranks of a "
                   "process run one grid at a time");
    if (distUsers == 0 && distGrid.empty()) {
      SmallVector<int64_t> sizes =
          grids.empty() ? SmallVector<int64_t>{1} : grids.front().sizes;
      if (muirrt_dist_init(sizes.size(), sizes.data()))
        return error(muirrt_last_error());
      for (size_t f = 1; f < grids.size(); ++f)
        if (muirrt_dist_add_folding(grids[f].sizes.size(),
                                    grids[f].sizes.data()) !=
            static_cast<int32_t>(f))
          return error("grid @" + grids[f].name + ": " +
                       muirrt_last_error());
      distGrid = text;
      std::atexit(leaveRanks);
    } else if (distUsers == 0 && text != distGrid) {
      return error("this process ran steps on the grid " + distGrid +
                   " already; the ranks of a process run one grid");
    }
    ++distUsers;
    I.distStarted = true;
  }
  applySettings();
  return llvm::Error::success();
}

void Step::applySettings() {
  bool fixedOrder = options.pipeline.deterministic != Determinism::Off;
  muirrt_set_deterministic(fixedOrder);
  // OpenBLAS's bits depend on its thread count, which muir-run --ranks
  // sets by the ranks per node: one thread on every layout; another step
  // of the process gets the count the process started with back.
  static const int32_t startThreads = muirrt_blas_threads();
  muirrt_set_blas_threads(
      options.pipeline.deterministic == Determinism::LayoutInvariant
          ? 1
          : startThreads);
  impl->backend->applySettings(fixedOrder);
}

llvm::Error Step::startEngine() {
  Impl &I = *impl;
  ModuleOp module = *I.module;
  {
    SmallVector<int64_t> sizes =
        grids.empty() ? SmallVector<int64_t>{1} : grids.front().sizes;
    if (llvm::Error e = I.backend->start(sizes))
      return e;
    applySettings();
  }
  // The optimizer needs the host's target machine: without it LLVM's cost
  // model knows no vector registers and the fused element-wise kernels stay
  // scalar.
  auto hostBuilder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!hostBuilder)
    return error("cannot detect the host target: " +
                 llvm::toString(hostBuilder.takeError()));
  auto optimizerTM = hostBuilder->createTargetMachine();
  // The engine compiles with the target machine it is given (MLIR's
  // jitCodeGenOptLevel reaches only a builder it does not use): its level
  // is set here. At the default level the post-RA scheduler alone took 0.9
  // of 2.4 s for a step of 400 tensors.
  hostBuilder->setCodeGenOptLevel(kHostCodeGenLevel);
  auto engineTM = hostBuilder->createTargetMachine();
  if (!optimizerTM || !engineTM)
    return error("cannot create a target machine for the host");
  llvm::TargetMachine *tm = optimizerTM->get();
  auto transformer = [tm](llvm::Module *m) {
    return optimizeHostCode(*m, tm);
  };
  if (failed(I.backend->readyEntry(module, entryName)))
    return error("cannot add the packed entry");
  ExecutionEngineOptions engineOptions;
  engineOptions.transformer = transformer;
  engineOptions.jitCodeGenOptLevel = kHostCodeGenLevel;
  // LLVM's defaults register both listeners; perf's writes files under
  // $TMPDIR/.debug/jit that nobody asked for.
  engineOptions.enableGDBNotificationListener = options.jitListeners;
  engineOptions.enablePerfNotificationListener = options.jitListeners;
  auto engine =
      ExecutionEngine::create(module, engineOptions, std::move(*engineTM));
  if (!engine)
    return error("JIT compilation failed: " +
                 llvm::toString(engine.takeError()));
  I.engine = std::move(*engine);
  I.backend->registerSymbols(*I.engine);
  I.engine->initialize();
  // The JIT materialises code on first lookup; do it here so that the
  // first step's time is the step's, not the compiler's.
  if (llvm::Error e = I.backend->lookupEntry(*I.engine, entryName,
                                             I.jitEntry))
    return e;
  I.hyperValues = defaultHyper();
  return llvm::Error::success();
}


llvm::Error Step::bind(int32_t index, void *data) {
  if (index < 0 || static_cast<size_t>(index) >= args.size())
    return error("argument index " + Twine(index) + " out of range (the "
                 "step has " + Twine(args.size()) + " arguments)");
  if (!args[index].isTensor())
    return error("argument '" + args[index].name +
                 "' is a scalar: give it to run(), not bind()");
  if (!data && args[index].numel() > 0)
    return error("argument '" + args[index].name + "': null data");
  // A captured CUDA graph holds the pointers: capture again.
  if (bound[index] != data)
    rebound = true;
  bound[index] = data;
  return llvm::Error::success();
}

llvm::Expected<std::pair<int32_t, int64_t>>
Step::firstNonFinite(int32_t role) const {
  if (!impl->backend->tensorsOnHost())
    return error("the non-finite check reads host memory; this target's "
                 "tensors are on the device");
  // The tensors in pieces of up to 2^18 elements, scanned side by side on
  // the runtime's threads (a scan reads memory as fast as one core can; two
  // read nearly twice as fast); the first piece in order with a find wins.
  struct Piece {
    int32_t arg;
    const void *data;
    int64_t offset, numel;
    bool f64;
    int64_t found = -1;
  };
  constexpr int64_t kPiece = 1 << 18;
  std::vector<Piece> pieces;
  for (auto [i, a] : llvm::enumerate(args)) {
    if (a.role != role || !a.isTensor() || a.i64 || !bound[i])
      continue;
    for (int64_t at = 0, n = a.numel(); at < n; at += kPiece)
      pieces.push_back({static_cast<int32_t>(i), bound[i], at,
                        std::min(kPiece, n - at), a.f64});
  }
  auto scan = [](void *ctx, int64_t lo, int64_t hi) {
    auto *all = static_cast<Piece *>(ctx);
    for (int64_t p = lo; p < hi; ++p) {
      Piece &piece = all[p];
      piece.found =
          piece.f64
              ? muirrt_first_nonfinite_f64(
                    static_cast<const double *>(piece.data) + piece.offset,
                    piece.numel)
              : muirrt_first_nonfinite(
                    static_cast<const float *>(piece.data) + piece.offset,
                    piece.numel);
    }
  };
  if (pieces.size() > 2)
    muirrt_parallel_range(scan, pieces.data(),
                          static_cast<int64_t>(pieces.size()));
  else
    scan(pieces.data(), 0, static_cast<int64_t>(pieces.size()));
  for (const Piece &piece : pieces)
    if (piece.found >= 0)
      return std::make_pair(piece.arg, piece.offset + piece.found);
  return std::make_pair(int32_t(-1), int64_t(-1));
}

llvm::Error Step::run(int64_t counter, llvm::ArrayRef<double> hyper,
                      void *stream, bool wait) {
  Impl &I = *impl;
  if (!prepared || (!I.engine && !I.packedEntry && !I.jitEntry))
    return error("the step is not compiled (prepare() failed or was not "
                 "called)");
  if (!hyper.empty() && hyper.size() != hyperArgs.size())
    return error("expected " + Twine(hyperArgs.size()) +
                 " hyperparameters, got " + Twine(hyper.size()));
  for (auto [i, a] : llvm::enumerate(args))
    if (a.isTensor() && !bound[i] && a.numel() > 0)
      return error("tensor '" + a.name + "' is not bound");
  for (auto [k, v] : llvm::enumerate(hyper))
    if (!std::isfinite(v) || v < 0)
      return error("hyperparameter '" + args[hyperArgs[k]].name +
                   "' must be finite and >= 0, got " + std::to_string(v));
  if (tokenCount && (counter < 0 || counter > tokenBound))
    return error("a layer compiled for at most " + Twine(tokenBound) +
                 " tokens was called on " + Twine(counter));
  if (!tokenCount && counter < 1)
    return error("the step counter is 1-based, got " + Twine(counter));
  if (hyper.empty())
    I.hyperValues = defaultHyper();
  else
    I.hyperValues.assign(hyper.begin(), hyper.end());
  I.counterValue[0] = counter;
  SmallVector<void *> packed;
  for (auto [i, a] : llvm::enumerate(args)) {
    if (a.isTensor())
      packed.push_back(&bound[i]);
    else if (a.role == RoleCounter)
      packed.push_back(I.counterValue.data());
    else
      packed.push_back(&I.hyperValues[a.hyperIndex]);
  }
  ++runs;
  // The runtime's settings are the process's: another step may have set
  // them since this one last ran, so each run sets this step's own.
  applySettings();
  if (I.packedEntry || I.jitEntry) {
    (I.packedEntry ? I.packedEntry : I.jitEntry)(packed.data());
    return llvm::Error::success();
  }
  EngineRun r;
  r.invoke = [&]() -> std::string {
    if (llvm::Error err = I.engine->invokePacked(entryName, packed))
      return "execution failed: " + llvm::toString(std::move(err));
    return "";
  };
  r.stream = stream;
  r.wait = wait;
  r.rebound = rebound;
  r.counterUsed = counterUsed;
  r.hyperUsed = hyperUsed;
  r.hyper = &I.hyperValues;
  rebound = false;
  if (std::string why = I.backend->run(r); !why.empty())
    return error(why);
  return llvm::Error::success();
}

const float *Step::observation(int64_t slot, int64_t &numel) const {
  numel = 0;
  return impl->backend->observation(slot, numel);
}

std::string Step::deviceDescription() const {
  return impl->backend->description();
}

llvm::Expected<void *> Step::stage(void *host, size_t bytes) {
  return impl->backend->stage(host, bytes);
}

llvm::Error Step::unstage(void *host, const void *bound, size_t bytes) {
  return impl->backend->unstage(host, bound, bytes);
}

void Step::release(void *bound) { impl->backend->release(bound); }

/// The program a trace is of: a hash of the identity's IR hash, grid and
/// compile flags (what a resume compares, but the build: traces of two
/// builds are compared, to find where their bits part), each field
/// NUL-terminated.
static std::string programFingerprint(const state::StepIdentity &id) {
  std::string text;
  auto field = [&](const std::string &value) {
    text += value;
    text += '\0';
  };
  field(id.stepHash);
  field(id.grid);
  for (const auto &[name, value] : id.flags)
    field(name + "=" + value);
  return state::hex64(llvm::xxh3_64bits(llvm::arrayRefFromStringRef(text)));
}

llvm::Error Step::writeTrace(StringRef path) const {
  // Written whole or not at all.
  std::string why;
  auto out = AtomicOutput::open(path, why);
  if (!out)
    return error("cannot write the trace: " + why);
  llvm::raw_fd_ostream &os = out->os();
  int64_t r = rank();
  int64_t n = muirrt_trace_count();
  // What the trace is of (muir-trace-diff refuses to compare two programs
  // and names what differs), then the records, then their count (a trace
  // without it was cut).
  os << "# muir fingerprint trace: program " << programFingerprint(id)
     << " rank " << r << " of " << muirrt_dist_size() << "\n"
     << "# fields: step rank seq op_id name loc in|out operand type bytes "
        "hash\n"
     << "# ir " << id.stepHash << "\n"
     << "# grid " << id.grid << "\n";
  for (const auto &[name, value] : id.flags)
    os << "# flag " << name << "=" << value << "\n";
  // Not part of the program, but of its bits: OpenBLAS's results depend on
  // its thread count.
  os << impl->backend->traceHeader();
  os << "# build " << id.build << "\n";
  // How each buffer is hashed (muirrt_trace_buffer).
  os << "# hash xxh64\n";
  const MuirRtTraceRecord *rec = muirrt_trace_records();
  for (int64_t i = 0; i < n; ++i) {
    const MuirRtTraceRecord &t = rec[i];
    auto found = impl->tracedOps.find(t.op_id);
    TracedOp none;
    const TracedOp &op = found == impl->tracedOps.end() ? none
                                                        : found->second;
    auto type = op.types.find(t.index);
    os << t.step << " " << r << " " << t.seq << " " << t.op_id << " "
       << op.name << " " << op.loc << " " << (t.output ? "out" : "in") << " "
       << t.index << " " << (type == op.types.end() ? "?" : type->second)
       << " " << t.bytes << " " << state::hex64(t.hash) << "\n";
  }
  os << "# end " << n << " records\n";
  if (!out->commit(why))
    return error("cannot write the trace: " + why);
  return llvm::Error::success();
}
