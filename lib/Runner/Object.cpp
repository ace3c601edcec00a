//===- Object.cpp - a step as an object file ------------------------------===//
//
// The ahead-of-time form of a step: its LLVM-dialect module with a packed
// entry and its manifest, compiled to a relocatable object for a CPU.
// muir-compile --emit=object writes one; the step library's cache links
// one into a shared library and loads it.
//
//===----------------------------------------------------------------------===//
#include "muir/Runner/Step.h"
#include "MuirExec/MuirExecDialect.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"

using namespace mlir;
using namespace mlir::muir;

std::string runner::entryManifest(ModuleOp module, std::string &entryName) {
  std::string text;
  llvm::raw_string_ostream os(text);
  for (auto f : module.getOps<func::FuncOp>()) {
    if (!f->hasAttr(MuirDialect::EntryAttrHelper::getNameStr()))
      continue;
    entryName = f.getName().str();
    for (unsigned i = 0; i < f.getNumArguments(); ++i) {
      Type t = f.getArgument(i).getType();
      auto name = f.getArgAttrOfType<StringAttr>(
          i, MuirDialect::NameAttrHelper::getNameStr());
      auto role = f.getArgAttrOfType<ArgRoleAttr>(
          i, MuirDialect::RoleAttrHelper::getNameStr());
      if (auto mt = dyn_cast<MemRefType>(t)) {
        os << i << " " << (name ? name.getValue() : "?") << " "
           << (role ? stringifyArgRole(role.getValue()) : "?") << " ";
        if (mt.getRank() == 0)
          os << "scalar";
        llvm::interleave(mt.getShape(), os, "x");
        os << " f32";
        // Seeded data's standard deviation (1 without it).
        if (auto std = f.getArgAttrOfType<FloatAttr>(
                i, MuirDialect::InitStdAttrHelper::getNameStr()))
          os << " init_std=" << llvm::formatv("{0:e16}",
                                              std.getValueAsDouble());
        os << "\n";
      } else if (t.isF64()) {
        auto value = f.getArgAttrOfType<FloatAttr>(
            i, MuirDialect::DefaultAttrHelper::getNameStr());
        os << i << " " << (name ? name.getValue() : "?") << " hyper scalar f64 "
           << llvm::formatv("{0:e16}",
                            value ? value.getValueAsDouble() : 0.0)
           << "\n";
      } else {
        // "step-unused": the step does not read its counter, so a captured
        // CUDA graph can be replayed as it is.
        os << i << " step "
           << (f.getArgument(i).use_empty() ? "step-unused" : "step")
           << " scalar i64\n";
      }
    }
  }
  module.walk([&](muir_exec::ObserveOp op) {
    StringRef label = op.getLabel();
    if (label.consume_front("loss "))
      os << "loss " << op.getSlot() << " " << label << "\n";
  });
  return text;
}

LogicalResult runner::addPackedEntry(ModuleOp module, StringRef entryName,
                                    StringRef manifest, StringRef metadata) {
  auto entry = module.lookupSymbol<LLVM::LLVMFuncOp>(entryName);
  if (!entry)
    return module.emitError("no entry function '") << entryName << "'";
  // The muir.* argument attributes are in the manifest.
  muir::dropMuirArgAttrs(entry);
  // The entry keeps its name but is local to the object: a plain global
  // `step` lost to libc's step(3) (regexp.h), which the packed entry
  // called instead on the first GPU run. It is inlined into the packed
  // entry: a call with one argument per tensor and hyperparameter (2000
  // for 400 tensors) took longer to compile than the whole step.
  entry.setLinkage(LLVM::Linkage::Internal);
  entry.setAlwaysInline(true);
  MLIRContext *ctx = module.getContext();
  Location loc = entry.getLoc();
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto fnType = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx),
                                            {ptr});
  auto packed = LLVM::LLVMFuncOp::create(b, loc, "muir_step_packed", fnType);
  Block *body = packed.addEntryBlock(b);
  b.setInsertionPointToStart(body);
  SmallVector<Value> values;
  for (auto [i, type] :
       llvm::enumerate(entry.getFunctionType().getParams())) {
    Value slot = LLVM::GEPOp::create(b, loc, ptr, ptr, body->getArgument(0),
                                     ArrayRef<LLVM::GEPArg>{int32_t(i)});
    Value argPtr = LLVM::LoadOp::create(b, loc, ptr, slot);
    values.push_back(LLVM::LoadOp::create(b, loc, type, argPtr));
  }
  LLVM::CallOp::create(b, loc, entry, values);
  LLVM::ReturnOp::create(b, loc, ValueRange{});
  b.setInsertionPointToEnd(module.getBody());
  auto addText = [&](StringRef name, StringRef value) {
    std::string text = value.str();
    text.push_back('\0');
    auto type =
        LLVM::LLVMArrayType::get(IntegerType::get(ctx, 8), text.size());
    LLVM::GlobalOp::create(b, loc, type, /*isConstant=*/true,
                           LLVM::Linkage::External, name,
                           b.getStringAttr(text));
  };
  addText("muir_step_manifest", manifest);
  if (!metadata.empty())
    addText("muir_step_metadata", metadata);
  return success();
}

llvm::Error runner::optimizeHostCode(llvm::Module &module,
                                     llvm::TargetMachine *tm) {
  llvm::PipelineTuningOptions tuning;
  tuning.LoopUnrolling = false;
  tuning.LoopInterleaving = false;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(tm, tuning);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm =
      pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(module, mam);
  return llvm::Error::success();
}

std::string runner::emitObject(ModuleOp module, StringRef march,
                               llvm::raw_pwrite_stream &os) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext);
  if (!llvmModule)
    return "cannot translate the module to LLVM IR";
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  std::string error;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple,
                                                                  error);
  if (!target)
    return error;
  llvm::TargetOptions options;
  // The kernels' module loads run as constructors: .init_array, as every
  // current ELF linker and loader expects.
  options.UseInitArray = true;
  std::string cpu = march.str(), features;
  if (march == "native") {
    cpu = llvm::sys::getHostCPUName().str();
    llvm::SubtargetFeatures host;
    for (const auto &[feature, on] : llvm::sys::getHostCPUFeatures())
      host.AddFeature(feature, on);
    features = host.getString();
  }
  std::unique_ptr<llvm::MCSubtargetInfo> known(
      target->createMCSubtargetInfo(triple, "", ""));
  if (!known || !known->isCPUStringValid(cpu))
    return "--march: unknown CPU '" + cpu + "' for " + triple.str();
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, cpu, features, options, llvm::Reloc::PIC_, std::nullopt,
      kHostCodeGenLevel));
  if (!tm)
    return "cannot create a target machine for " + triple.str();

  llvmModule->setTargetTriple(triple);
  llvmModule->setDataLayout(tm->createDataLayout());
  if (llvm::Error e = optimizeHostCode(*llvmModule, tm.get()))
    return llvm::toString(std::move(e));
  llvm::legacy::PassManager passes;
  if (tm->addPassesToEmitFile(passes, os, nullptr,
                              llvm::CodeGenFileType::ObjectFile))
    return "the target cannot emit object files";
  passes.run(*llvmModule);
  return "";
}

