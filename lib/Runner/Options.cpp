//===- Options.cpp - a step's options from "name=value" items -------------===//
//
// StepOptions::parse: the C API's and the Python package's spelling of the
// step's compile and run options (muir/Step.h lists them).
//
//===----------------------------------------------------------------------===//
#include "muir/Runner/Step.h"

#include "muir/Driver/PipelineFlags.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::muir;
using namespace mlir::muir::runner;
using llvm::StringRef;
using llvm::Twine;


llvm::Expected<StepOptions> StepOptions::parse(StringRef text) {
  StepOptions o;
  o.pipeline.probeUpdates = false;
  bool precisionGiven = false;
  llvm::SmallVector<StringRef> items;
  text.split(items, ' ', -1, false);
  for (StringRef item : items) {
    item = item.trim();
    if (item.empty())
      continue;
    auto [key, value] = item.split('=');
    auto boolean = [&](bool &out) -> llvm::Error {
      if (value == "true" || value == "1")
        out = true;
      else if (value == "false" || value == "0")
        out = false;
      else
        return error("option '" + item + "': expected true or false");
      return llvm::Error::success();
    };
    auto integer = [&](int64_t &out) -> llvm::Error {
      if (value.getAsInteger(10, out))
        return error("option '" + item + "': expected an integer");
      return llvm::Error::success();
    };
    llvm::Error e = llvm::Error::success();
    if (key == "target") {
      if (value != "cpu" && value != "cuda")
        return error("option '" + item + "': expected cpu or cuda");
      o.target.target = value == "cuda" ? Target::Cuda : Target::Cpu;
    } else if (key == "ns-mode") {
      std::optional<NSModeOption> m;
      for (NSModeOption v :
           {NSModeOption::Auto, NSModeOption::Duplicated,
            NSModeOption::Distributed, NSModeOption::Resharded,
            NSModeOption::Blockwise})
        if (stringify(v) == value)
          m = v;
      if (!m)
        return error("option '" + item +
                     "': expected auto, duplicated, distributed, resharded "
                     "or blockwise");
      o.pipeline.nsMode = *m;
    } else if (key == "ns-form") {
      std::optional<NSFormOption> f = symbolizeNSFormOption(value);
      if (!f)
        return error("option '" + item + "': expected auto, standard or gram");
      o.pipeline.nsForm = *f;
    } else if (key == "ns-precision") {
      std::optional<NSPrecision> p = symbolizeNSPrecision(value);
      if (!p)
        return error("option '" + item + "': expected f32 or bf16");
      o.pipeline.nsPrecision = *p;
      precisionGiven = true;
    } else if (key == "dp-assign") {
      auto d = symbolizeDpAssign(value);
      if (!d)
        return error("option '" + item + "': unknown dp-assign policy");
      o.pipeline.dpAssign = *d;
    } else if (key == "syrk") {
      e = boolean(o.pipeline.syrk);
    } else if (key == "batch") {
      e = boolean(o.pipeline.batch);
    } else if (key == "fuse-syrk-all-reduce") {
      e = boolean(o.pipeline.fuseAllReduce);
    } else if (key == "syrk-chunk-rows") {
      e = integer(o.pipeline.chunkRows);
    } else if (key == "machine") {
      std::optional<Machine> m = symbolizeMachine(value);
      if (!m)
        return error("option '" + item + "': expected cpu, h200 or h200-bf16");
      o.pipeline.machine = *m;
    } else if (key == "probe-updates") {
      e = boolean(o.pipeline.probeUpdates);
    } else if (key == "cuda-arch") {
      int ptx = PipelineFlags::ptxVersion(value);
      if (!ptx)
        return error("option '" + item + "': expected sm_80 or newer");
      o.target.cudaArch = value.str();
      o.target.ptxFeatures = "+ptx" + std::to_string(ptx);
    } else if (key == "cuda-bf16") {
      e = boolean(o.cudaBf16);
    } else if (key == "cuda-graph") {
      e = boolean(o.cudaGraph);
    } else if (key == "deterministic") {
      e = boolean(o.deterministic);
    } else if (key == "cuda-device") {
      e = integer(o.cudaDevice);
    } else if (key == "cache-dir") {
      o.cacheDir = value.str();
    } else if (key == "nccl-id") {
      o.ncclId = value.str();
    } else if (key == "nccl-rank") {
      e = integer(o.ncclRank);
    } else if (key == "nccl-world") {
      e = integer(o.ncclWorld);
    } else {
      return error("unknown option '" + key +
                   "' (see muir/Step.h for the options)");
    }
    if (e)
      return std::move(e);
  }
  // cuda-bf16 iterates Newton-Schulz in bf16 unless ns-precision says.
  if (o.cudaBf16 && !precisionGiven)
    o.pipeline.nsPrecision = NSPrecision::bf16;
  if (o.cudaBf16 && o.target.target != Target::Cuda)
    return error("option 'cuda-bf16' needs target=cuda (a CPU step iterates "
                 "in bf16 with ns-precision=bf16)");
  if (o.pipeline.nsForm == NSFormOption::Gram &&
      o.pipeline.nsPrecision == NSPrecision::bf16)
    return error("option 'ns-form=gram' iterates on the Gram matrix in f64; "
                 "a bf16 iterate takes the standard form");
  if (!o.ncclId.empty() && (o.ncclRank < 0 || o.ncclWorld < 1 ||
                            o.ncclRank >= o.ncclWorld))
    return error("nccl-id needs nccl-rank and nccl-world (0 <= rank < "
                 "world)");
  return o;
}
