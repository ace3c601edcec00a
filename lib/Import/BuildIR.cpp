//===- BuildIR.cpp - a description as high-level muir IR ------------------===//
//
// One optimizer step: a `muir.grid` per folding, and a function whose
// arguments are every parameter, its gradient and its optimizer state
// (named as muir-run's --load/--dump files are), updated by one
// `muir.muon_update` or `muir.adamw_update` each. Shapes are global; the
// shardings ride along as argument attributes for the distribution passes.
//
//===----------------------------------------------------------------------===//
#include "muir/Import/Description.h"
#include "muir/Passes.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::muir;
using namespace mlir::muir::desc;

static muir::GridOp buildGrid(OpBuilder &b, Location loc, StringRef name,
                              const std::vector<GridAxis> &axes) {
  SmallVector<StringRef> names;
  SmallVector<int64_t> sizes;
  for (const GridAxis &a : axes) {
    names.push_back(a.name);
    sizes.push_back(a.size);
  }
  return muir::GridOp::create(b, loc, b.getStringAttr(name),
                              b.getStrArrayAttr(names),
                              b.getDenseI64ArrayAttr(sizes), StringAttr());
}

static Location locFor(MLIRContext &ctx, const Loc &l) {
  if (l.file.empty())
    return UnknownLoc::get(&ctx);
  return FileLineColLoc::get(&ctx, l.file, l.line, l.col);
}

OwningOpRef<ModuleOp> mlir::muir::desc::buildModule(MLIRContext &ctx,
                                                     const Description &d) {
  ctx.loadDialect<muir::MuirDialect, func::FuncDialect>();
  OpBuilder b(&ctx);
  Location loc = locFor(ctx, d.loc);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc, StringRef(d.name));
  b.setInsertionPointToEnd(module->getBody());
  buildGrid(b, locFor(ctx, d.grid.loc), "world", d.grid.axes);
  if (!d.grid.moeAxes.empty())
    buildGrid(b, locFor(ctx, d.grid.loc), "moe", d.grid.moeAxes);

  // Arguments: per parameter the tensor, its gradient and its state.
  struct Slot {
    std::string name;
    StringRef role;
  };
  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs;
  SmallVector<std::pair<const Parameter *, Assignment>> plan;
  SmallVector<unsigned> firstArg;
  bool needsStep = false;
  auto f32 = b.getF32Type();
  for (const Parameter &p : d.params) {
    Assignment a = assignOptimizer(d, p);
    plan.push_back({&p, a});
    firstArg.push_back(argTypes.size());
    auto type = RankedTensorType::get(p.shape, f32);
    SmallVector<Slot> slots = {{p.name, "param"}, {p.name + ".grad", "grad"}};
    if (a.optimizer == Optimizer::Muon) {
      slots.push_back({p.name + ".momentum", "state"});
    } else {
      slots.push_back({p.name + ".exp_avg", "state"});
      slots.push_back({p.name + ".exp_avg_sq", "state"});
      needsStep = true;
    }
    for (const Slot &s : slots) {
      SmallVector<NamedAttribute> attrs = {
          b.getNamedAttr("muir.name", b.getStringAttr(s.name)),
          b.getNamedAttr("muir.role", b.getStringAttr(s.role))};
      if (s.role == "param") {
        attrs.push_back(b.getNamedAttr("muir.kind",
                                       b.getStringAttr(stringify(p.role))));
        if (p.dtype != "f32")
          attrs.push_back(
              b.getNamedAttr("muir.dtype", b.getStringAttr(p.dtype)));
      }
      if (!p.shards.empty()) {
        SmallVector<Attribute> shards;
        for (const Sharding &sh : p.shards)
          shards.push_back(b.getStringAttr(stringify(sh.kind) + "@" + sh.axis +
                                           ":" + std::to_string(sh.dim)));
        attrs.push_back(b.getNamedAttr("muir.shards", b.getArrayAttr(shards)));
        // Shards of MoE parameters name axes of the MoE folding.
        if (p.moeFolding && !d.grid.moeAxes.empty())
          attrs.push_back(
              b.getNamedAttr("muir.folding", b.getStringAttr("moe")));
      }
      argTypes.push_back(type);
      argAttrs.push_back(b.getDictionaryAttr(attrs));
    }
  }
  int64_t stepArg = -1;
  if (needsStep) {
    stepArg = argTypes.size();
    argTypes.push_back(b.getI64Type());
    argAttrs.push_back(b.getDictionaryAttr(
        {b.getNamedAttr("muir.role", b.getStringAttr("step"))}));
  }

  // Results: the updated parameter and state, in argument order.
  SmallVector<Type> resultTypes;
  SmallVector<DictionaryAttr> resultAttrs;
  for (auto [i, entry] : llvm::enumerate(plan)) {
    unsigned states = entry.second.optimizer == Optimizer::Muon ? 1 : 2;
    for (unsigned s = 0; s < 1 + states; ++s) {
      unsigned arg = firstArg[i] + (s == 0 ? 0 : 1 + s);
      resultTypes.push_back(argTypes[arg]);
      resultAttrs.push_back(b.getDictionaryAttr({b.getNamedAttr(
          "muir.updates", argAttrs[arg].get("muir.name"))}));
    }
  }

  auto func = func::FuncOp::create(b, loc, "step",
                                   b.getFunctionType(argTypes, resultTypes));
  func.setAllArgAttrs(argAttrs);
  func.setAllResultAttrs(resultAttrs);
  Block *body = func.addEntryBlock();
  b.setInsertionPointToStart(body);

  SmallVector<Value> results;
  for (auto [i, entry] : llvm::enumerate(plan)) {
    const Parameter &p = *entry.first;
    const Assignment &a = entry.second;
    Location ploc = locFor(ctx, p.loc);
    auto arg = [&](unsigned k) { return body->getArgument(firstArg[i] + k); };
    auto type = cast<RankedTensorType>(arg(0).getType());
    if (a.optimizer == Optimizer::Muon) {
      const MuonSettings &m = a.muon;
      auto schedule = *symbolizeNSSchedule(m.schedule);
      DenseF64ArrayAttr coeffs;
      if (schedule == NSSchedule::custom)
        coeffs = b.getDenseF64ArrayAttr(m.coefficients);
      auto op = MuonUpdateOp::create(
          b, ploc, type, type, arg(0), arg(1), arg(2), b.getF64FloatAttr(m.lr),
          b.getF64FloatAttr(m.beta),
          MomentumKindAttr::get(&ctx, *symbolizeMomentumKind(m.momentumKind)),
          b.getBoolAttr(m.nesterov), b.getF64FloatAttr(m.weightDecay),
          ScaleModeAttr::get(&ctx, *symbolizeScaleMode(m.scaleMode)),
          b.getF64FloatAttr(m.scaleExtra), b.getI64IntegerAttr(m.nsSteps),
          NSScheduleAttr::get(&ctx, schedule), coeffs,
          b.getF64FloatAttr(m.eps),
          m.splitFused && !p.splitRows.empty()
              ? b.getDenseI64ArrayAttr(p.splitRows)
              : DenseI64ArrayAttr());
      if (!p.nsMode.empty() && p.nsMode != "auto")
        op->setAttr("muir.ns_mode", b.getStringAttr(p.nsMode));
      results.push_back(op.getNewParam());
      results.push_back(op.getNewMomentumBuffer());
    } else {
      const AdamWSettings &w = a.adamw;
      auto op = AdamWUpdateOp::create(
          b, ploc, type, type, type, arg(0), arg(1), arg(2), arg(3),
          body->getArgument(stepArg), b.getF64FloatAttr(w.lr),
          b.getF64FloatAttr(w.beta1), b.getF64FloatAttr(w.beta2),
          b.getF64FloatAttr(w.eps), b.getF64FloatAttr(w.weightDecay));
      results.push_back(op.getNewParam());
      results.push_back(op.getNewExpAvg());
      results.push_back(op.getNewExpAvgSq());
    }
  }
  func::ReturnOp::create(b, loc, results);
  return module;
}
