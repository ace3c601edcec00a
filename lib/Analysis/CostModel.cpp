//===- CostModel.cpp - choosing how Newton-Schulz runs across ranks -------===//
#include "muir/Analysis/CostModel.h"
#include "muir/Support/EnumNames.h"
#include "muir-rt/Runtime.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::muir;

const Link &MachineProfile::link(StringRef axis) const {
  auto it = axes.find(axis.str());
  return it == axes.end() ? otherAxes : it->second;
}

StringRef mlir::muir::stringify(Machine machine) {
  return stringifyMachine(machine);
}

/// The machines' help; their names are the ODS enum's.
llvm::cl::ValuesClass mlir::muir::machineValues() {
  auto value = [](Machine m, StringRef help) {
    return llvm::cl::OptionEnumValue{stringifyMachine(m),
                                     static_cast<int>(m), help};
  };
  return llvm::cl::values(
      value(Machine::Cpu, "this machine's CPUs (OpenBLAS, MPI)"),
      value(Machine::H200,
            "8 H200 per node, NVLink and InfiniBand, fp32 products"),
      value(Machine::H200Bf16, "as h200 with bf16 products (--cuda-bf16)"));
}

MachineProfile MachineProfile::get(Machine machine) {
  if (machine == Machine::Cpu) {
    // Measured here: OpenBLAS sgemm ~150 GFLOP/s on 2 cores; OpenMPI's
    // shared-memory transport ~5 GB/s with a few microseconds per message.
    // dgemm measured 0.43 of sgemm's rate here (numpy over OpenBLAS,
    // 1024^3: 99 against 233 GFLOP/s on 2 threads).
    Link shm{5e-6, 5e9};
    return MachineProfile{Machine::Cpu, 150e9, 0.43 * 150e9, true, {}, shm,
                          /*ranksShareRate=*/true};
  }
  {
    // An 8-GPU HGX H200 node: NVLink 4 (~450 GB/s achieved per direction)
    // for tensor and expert axes, InfiniBand NDR (~45 GB/s per GPU) between
    // nodes for data-parallel and pipeline axes. The rate is cuBLAS's GEMM
    // rate as the CUDA runtime runs the products, measured on an H200
    // (bench/gpu/check.sh, torch.mm 8192^3): fp32 without TF32 50.9
    // TFLOP/s; bf16 inputs with fp32 accumulation (--cuda-bf16) 768.
    // fp64 (cublasDgemm on the FP64 tensor cores): NVIDIA's 67 TFLOP/s
    // peak, not measured here.
    Link nvlink{3e-6, 450e9}, ib{8e-6, 45e9};
    return MachineProfile{machine,
                          machine == Machine::H200 ? 50.9e12 : 768e12,
                          67e12,
                          false,
                          {{"tp", nvlink},
                           {"ep", nvlink},
                           {"etp", nvlink},
                           {"dp", ib},
                           {"edp", ib},
                           {"pp", ib}},
                          ib};
  }
}

StringRef mlir::muir::stringify(NewtonSchulzMode mode) {
  return stringifyNewtonSchulzMode(mode);
}

std::optional<NewtonSchulzMode>
mlir::muir::fixedMode(NewtonSchulzMode requested) {
  if (requested == NewtonSchulzMode::auto_)
    return std::nullopt;
  return requested;
}

/// The modes' help; their names are the ODS enum's.
llvm::cl::ValuesClass mlir::muir::nsModeValues() {
  auto value = [](NewtonSchulzMode m, StringRef help) {
    return llvm::cl::OptionEnumValue{stringifyNewtonSchulzMode(m),
                                     static_cast<int>(m), help};
  };
  return llvm::cl::values(
      value(NewtonSchulzMode::auto_,
            "the cost model picks duplicated, distributed or resharded"),
      value(NewtonSchulzMode::duplicated,
            "all-gather, the whole Newton-Schulz on every rank"),
      value(NewtonSchulzMode::distributed,
            "the Gram matrix all-reduced every step"),
      value(NewtonSchulzMode::resharded,
            "all_to_all to a split of the other dimension, distributed, and "
            "back"),
      value(NewtonSchulzMode::blockwise,
            "Newton-Schulz of the local block (an approximation)"));
}

ModeCost NSCostModel::duplicated(const NSProblem &p) const {
  ModeCost c;
  const Link &l = profile.link(p.axis);
  double g = static_cast<double>(p.group);
  double bytes = 4.0 * p.m * p.n * p.batch;
  c.commBytes = (g - 1) / g * bytes;
  c.commSeconds = p.group > 1 ? (g - 1) * l.alpha + c.commBytes / l.beta : 0;
  c.flops = p.batch * nsFlops(p.m, p.n, p.steps);
  c.computeSeconds = c.flops / rate;
  c.seconds = c.commSeconds + c.computeSeconds;
  return c;
}

int64_t mlir::muir::gramChunkRows(const Link &link, int64_t s) {
  double minBytes = 4 * link.alpha * link.beta;
  int64_t rows = std::max<int64_t>(1, (s + 3) / 4);
  while (rows < s && 4.0 * rows * s / 2 < minBytes)
    rows *= 2;
  return std::max<int64_t>(1, std::min(rows, s));
}

ModeCost NSCostModel::distributed(const NSProblem &p) const {
  ModeCost c;
  const Link &l = profile.link(p.axis);
  double g = static_cast<double>(p.group);
  // The Gram matrix is over the unsplit dimension s; k is the split one.
  double s = p.splitDim == 0 ? p.n : p.m;
  double k = p.splitDim == 0 ? p.m : p.n;
  // Only the packed triangle travels (muir-fuse-syrk-all-reduce).
  double gramBytes = 4.0 * s * (s + 1) / 2 * p.batch;
  double perStep = 2 * (g - 1) / g * gramBytes;
  double normBytes = 2 * (g - 1) / g * 4.0 * p.batch;
  c.commBytes = p.steps * perStep + normBytes;
  c.commSeconds = p.group > 1 ? (p.steps + 1) * 2 * (g - 1) * l.alpha +
                                    c.commBytes / l.beta
                              : 0;
  c.flops = p.batch * p.steps * (4 * s * s * k / g + 2 * s * s * s);
  c.computeSeconds = c.flops / rate;
  c.seconds = c.commSeconds + c.computeSeconds;
  return c;
}

bool NSCostModel::canReshard(const NSProblem &p) {
  int64_t other = p.splitDim == 0 ? p.n : p.m;
  return p.batch == 1 && p.group > 1 && other % p.group == 0;
}

ModeCost NSCostModel::resharded(const NSProblem &p) const {
  NSProblem flipped = p;
  flipped.splitDim = 1 - p.splitDim;
  ModeCost c = distributed(flipped);
  // Two all_to_all of the local shard (there and back), each sending all
  // but the own block: (g - 1) / g of it.
  const Link &l = profile.link(p.axis);
  double g = static_cast<double>(p.group);
  double moved = 2 * (g - 1) / g * 4.0 * p.m * p.n / g;
  c.commBytes += moved;
  c.commSeconds += 2 * (g - 1) * l.alpha + moved / l.beta;
  c.seconds = c.commSeconds + c.computeSeconds;
  return c;
}

ModeCost NSCostModel::distributedGram(const NSProblem &p) const {
  ModeCost c;
  const Link &l = profile.link(p.axis);
  double g = static_cast<double>(p.group);
  double s = p.splitDim == 0 ? p.n : p.m;
  double k = (p.splitDim == 0 ? p.m : p.n) / g; // the local slice
  double b = static_cast<double>(p.batch);
  // The packed triangles go whole to every peer (an allgather, then the
  // ordered sum), as the runtime counts them.
  c.commBytes = (g - 1) * 8.0 * s * (s + 1) / 2 * b;
  c.commSeconds = p.group > 1 ? (g - 1) * l.alpha + c.commBytes / l.beta : 0;
  // A0 of the slice (SYRK into f64), the iteration on s x s, the slice
  // times Q (f32).
  double fp64 = b * (s * (s + 1) * k +
                     gramIterationFlops(static_cast<int64_t>(s), p.steps,
                                        /*syrk=*/true));
  double fp32 = b * 2 * s * s * k;
  double share = rankRate() / profile.flopsPerSecond;
  c.flops = fp64 + fp32;
  c.computeSeconds =
      fp64 / (profile.fp64FlopsPerSecond * share) + fp32 / rankRate();
  c.seconds = c.commSeconds + c.computeSeconds;
  return c;
}

ModeCost NSCostModel::reshardedGram(const NSProblem &p) const {
  NSProblem flipped = p;
  flipped.splitDim = 1 - p.splitDim;
  ModeCost c = distributedGram(flipped);
  ModeCost moves = resharded(p), plain = distributed(flipped);
  // The two all_to_all of resharded(), on top.
  c.commBytes += moves.commBytes - plain.commBytes;
  c.commSeconds += moves.commSeconds - plain.commSeconds;
  c.seconds = c.commSeconds + c.computeSeconds;
  return c;
}

NewtonSchulzMode NSCostModel::choose(const NSProblem &p,
                                     SmallVectorImpl<NSCandidate> *weighed,
                                     NSFormOption form, bool *gram) const {
  bool standard = form != NSFormOption::Gram;
  bool gramForm = form != NSFormOption::Standard;
  // Duplicated runs the whole matrix on every rank, in the form
  // muir-gram-newton-schulz then picks for it.
  ModeCost dup = duplicated(p);
  FormCost whole = formCost(p.m, p.n, p.batch, p.steps);
  bool dupGram = form == NSFormOption::Gram ||
                 (gramForm && preferGram(p.m, p.n, p.batch, p.steps));
  if (dupGram) {
    dup.flops = whole.gramFp64Flops + whole.gramFp32Flops;
    dup.computeSeconds = whole.gramSeconds;
    dup.seconds = dup.commSeconds + dup.computeSeconds;
  }
  SmallVector<NSCandidate> all = {{NewtonSchulzMode::duplicated, dupGram, dup}};
  if (standard)
    all.push_back({NewtonSchulzMode::distributed, false, distributed(p)});
  if (gramForm)
    all.push_back({NewtonSchulzMode::distributed, true, distributedGram(p)});
  // Split on the smaller dimension, the Gram matrix is over the larger one:
  // moving the split to the larger dimension first may pay.
  int64_t split = p.splitDim == 0 ? p.m : p.n;
  int64_t other = p.splitDim == 0 ? p.n : p.m;
  if (split < other && canReshard(p)) {
    if (standard)
      all.push_back({NewtonSchulzMode::resharded, false, resharded(p)});
    if (gramForm)
      all.push_back({NewtonSchulzMode::resharded, true, reshardedGram(p)});
  }
  const NSCandidate *best = &all.front();
  for (const NSCandidate &c : all)
    if (c.cost.seconds < best->cost.seconds)
      best = &c;
  if (gram)
    *gram = best->gram && best->mode != NewtonSchulzMode::duplicated;
  if (weighed)
    weighed->assign(all.begin(), all.end());
  return best->mode;
}

double NSCostModel::modeSeconds(NewtonSchulzMode mode, const NSProblem &p,
                                bool gram) const {
  switch (mode) {
  case NewtonSchulzMode::distributed:
    return (gram ? distributedGram(p) : distributed(p)).seconds;
  case NewtonSchulzMode::resharded:
    return (gram ? reshardedGram(p) : resharded(p)).seconds;
  default:
    return duplicated(p).seconds;
  }
}

double NSCostModel::blockwiseSeconds(int64_t rows, int64_t cols,
                                     int64_t batch, int64_t steps) const {
  return static_cast<double>(batch) * nsFlops(rows, cols, steps) / rankRate();
}

std::string mlir::muir::describe(ArrayRef<NSCandidate> weighed,
                                 StringRef machine) {
  std::string s;
  llvm::raw_string_ostream os(s);
  for (const NSCandidate &c : weighed) {
    if (&c != &weighed.front())
      os << ", ";
    const char *what =
        c.mode == NewtonSchulzMode::duplicated ? "gather"
        : c.gram
            ? (c.mode == NewtonSchulzMode::resharded ? "all_to_all and one Gram"
                                                     : "one Gram all-reduce")
        : c.mode == NewtonSchulzMode::resharded ? "all_to_all and Gram"
                                                : "Gram all-reduces";
    // (Duplicated's form is muir-gram-newton-schulz's choice later.)
    os << stringify(c.mode)
       << (c.gram && c.mode != NewtonSchulzMode::duplicated ? " (gram)" : "")
       << llvm::format(" %.3g ms (%s %.3g MB)", c.cost.seconds * 1e3, what,
                       c.cost.commBytes / 1e6);
  }
  os << " on " << machine;
  return s;
}

/// The ns-form option's values, declared once.
static constexpr EnumName<NSFormOption> nsForms[] = {
    {NSFormOption::Auto, "auto", "the cost model picks the form per matrix"},
    {NSFormOption::Standard, "standard", "iterate on X (m x n) in f32"},
    {NSFormOption::Gram, "gram",
     "iterate on the min(m, n)-square Gram matrix in f64, touching X only "
     "at the start and the end"},
};

StringRef mlir::muir::stringify(NSFormOption option) {
  return enumName(nsForms, option);
}

llvm::cl::ValuesClass mlir::muir::nsFormValues() {
  return enumValues(nsForms);
}

std::optional<NSFormOption> mlir::muir::symbolizeNSFormOption(StringRef name) {
  return enumValue(nsForms, name);
}

double NSCostModel::gramIterationFlops(int64_t s, int64_t steps,
                                       bool syrk) const {
  double r = static_cast<double>(s), k = static_cast<double>(steps);
  double sym = syrk ? r * (r + 1) * r : 2 * r * r * r;
  // Q <- P Q and A P^2: products known symmetric.
  double symGemm = profile.triangularSymmetricGemm
                       ? muirrt_symmetric_gemm_flops(s, s)
                       : 2 * r * r * r;
  // Per step A A (B); after the first Q <- P Q; before the last P^2, A P^2.
  return k * sym + (k - 1) * symGemm + (k - 1) * (sym + symGemm);
}

bool NSCostModel::gramForMode(NewtonSchulzMode mode, const NSProblem &p,
                              NSFormOption form) const {
  if (mode != NewtonSchulzMode::distributed &&
      mode != NewtonSchulzMode::resharded)
    return false;
  if (form != NSFormOption::Auto)
    return form == NSFormOption::Gram;
  return mode == NewtonSchulzMode::resharded
             ? reshardedGram(p).seconds < resharded(p).seconds
             : distributedGram(p).seconds < distributed(p).seconds;
}

FormCost NSCostModel::formCost(int64_t m, int64_t n, int64_t batch,
                               int64_t steps, bool syrk) const {
  double r = static_cast<double>(std::min(m, n));
  double c = static_cast<double>(std::max(m, n));
  double k = static_cast<double>(steps), b = static_cast<double>(batch);
  // A symmetric product of an r x q operand: r (r + 1) q with SYRK, the
  // GEMM's 2 r^2 q without.
  auto sym = [&](double q) { return syrk ? r * (r + 1) * q : 2 * r * r * q; };
  FormCost f;
  f.standardFlops = b * k * (sym(c) + sym(r) + 2 * r * r * c);
  f.gramFp64Flops =
      b * (sym(c) + gramIterationFlops(std::min(m, n), steps, syrk));
  f.gramFp32Flops = b * 2 * r * r * c;
  double share = rankRate() / profile.flopsPerSecond;
  double rate64 = profile.fp64FlopsPerSecond * share;
  f.standardSeconds = f.standardFlops / rankRate();
  f.gramSeconds = f.gramFp64Flops / rate64 + f.gramFp32Flops / rankRate();
  return f;
}

bool NSCostModel::preferGram(int64_t m, int64_t n, int64_t batch,
                             int64_t steps, bool syrk,
                             FormCost *costs) const {
  FormCost f = formCost(m, n, batch, steps, syrk);
  if (costs)
    *costs = f;
  return m != n && f.gramSeconds < 0.8 * f.standardSeconds;
}

/// The dp-assign policies, declared once.
static constexpr EnumName<DpAssign> dpAssigns[] = {
    {DpAssign::Greedy, "greedy",
     "each matrix on one dp rank, largest first to the least loaded"},
    {DpAssign::RoundRobin, "round-robin",
     "each matrix on one dp rank, in turn (a baseline)"},
    {DpAssign::Replicated, "replicated",
     "every dp rank runs every Newton-Schulz"},
};

StringRef mlir::muir::stringify(DpAssign policy) {
  return enumName(dpAssigns, policy);
}

llvm::cl::ValuesClass mlir::muir::dpAssignValues() {
  return enumValues(dpAssigns);
}

std::optional<DpAssign> mlir::muir::symbolizeDpAssign(StringRef name) {
  return enumValue(dpAssigns, name);
}

double mlir::muir::layerwiseWeight(int64_t m, int64_t n, int64_t batch,
                                   int64_t steps) {
  return double(steps) * double(batch) * double(m) * double(n) *
         double(std::min(m, n));
}

std::vector<int64_t> mlir::muir::assignToRanks(ArrayRef<double> weights,
                                               int64_t ranks,
                                               DpAssign policy) {
  std::vector<int64_t> owners(weights.size(), 0);
  if (ranks <= 1 || policy == DpAssign::Replicated)
    return owners;
  if (policy == DpAssign::RoundRobin) {
    for (size_t i = 0; i < weights.size(); ++i)
      owners[i] = static_cast<int64_t>(i) % ranks;
    return owners;
  }
  std::vector<size_t> order(weights.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  // Heaviest first, ties in index order (what a stable sort gives; a total
  // order, so std::sort is enough).
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return weights[a] > weights[b] || (weights[a] == weights[b] && a < b);
  });
  std::vector<double> load(static_cast<size_t>(ranks), 0.0);
  for (size_t i : order) {
    size_t best = 0;
    for (size_t r = 1; r < load.size(); ++r)
      if (load[r] < load[best])
        best = r;
    owners[i] = static_cast<int64_t>(best);
    load[best] += weights[i];
  }
  return owners;
}

LoadStats mlir::muir::loadStats(ArrayRef<double> weights,
                                ArrayRef<int64_t> owners, int64_t ranks) {
  std::vector<double> load(static_cast<size_t>(std::max<int64_t>(1, ranks)),
                           0.0);
  double total = 0;
  for (auto [w, o] : llvm::zip(weights, owners)) {
    load[static_cast<size_t>(o)] += w;
    total += w;
  }
  LoadStats s;
  s.mean = total / double(load.size());
  for (double l : load)
    s.max = std::max(s.max, l);
  return s;
}

llvm::cl::ValuesClass mlir::muir::nsPrecisionValues() {
  // The names are the ODS enum's (MuirEnums.td), which the IR prints.
  return llvm::cl::values(
      clEnumValN(NSPrecision::f32, stringifyNSPrecision(NSPrecision::f32),
                 "iterate in f32"),
      clEnumValN(NSPrecision::bf16, stringifyNSPrecision(NSPrecision::bf16),
                 "iterate in bf16: products on bf16 operands accumulated "
                 "in f32, rounded to bf16 (the standard form)"));
}

double mlir::muir::nsFlops(int64_t m, int64_t n, int64_t steps) {
  double r = std::min(m, n), c = std::max(m, n);
  return steps * (4 * r * r * c + 2 * r * r * r);
}

double mlir::muir::nsFlopsPerformed(int64_t m, int64_t n, int64_t steps,
                                    bool syrk) {
  if (!syrk)
    return nsFlops(m, n, steps);
  double r = std::min(m, n), c = std::max(m, n);
  return steps * (r * (r + 1) * c + r * (r + 1) * r + 2 * r * r * c);
}

int64_t mlir::muir::nsCalls(int64_t steps, bool gram) {
  return gram ? 2 + 2 * steps + 3 * (steps - 1) + 2 : 1 + 3 * steps;
}
