//===- Tensors.cpp - tensors the runtime owns for a step ------------------===//
//
// muir-run's tensors: loaded, seeded, sliced to this rank's part, bound to
// the step, gathered back, dumped and saved; the communication counters.
// (The per-step table is in StepTable.cpp.)
//
//===----------------------------------------------------------------------===//
#include "muir/Runner/Step.h"

#include "muir/Runner/Role.h"
#include "muir-rt/Runtime.h"

#include "llvm/Support/Format.h"

#include <cmath>

using namespace mlir::muir;
using namespace mlir::muir::runner;
using llvm::ArrayRef;
using llvm::SmallVector;
using llvm::StringRef;
using llvm::Twine;


HostTensors::HostTensors(Step &step) : step(step) {}

HostTensors::~HostTensors() {
  for (void *p : device)
    step.deviceFree(p);
  if (local)
    muirrt_context_destroy(local);
  if (whole)
    muirrt_context_destroy(whole);
}

llvm::Error HostTensors::create() {
  local = muirrt_context_create();
  whole = muirrt_context_create();
  const auto &args = step.arguments();
  localIndex.assign(args.size(), -1);
  wholeIndex.assign(args.size(), -1);
  for (auto [i, a] : llvm::enumerate(args)) {
    if (!a.isTensor())
      continue;
    int32_t dtype = a.f64 ? MUIRRT_DTYPE_F64 : MUIRRT_DTYPE_F32;
    wholeIndex[i] = muirrt_tensor_add_typed(whole, a.name.c_str(),
                                            a.globalShape.size(),
                                            a.globalShape.data(), a.role,
                                            dtype);
    // A tensor this rank holds whole is its whole tensor: one storage,
    // no copies between the two.
    localIndex[i] =
        wholeIndex[i] < 0 ? -1
        : a.splits.empty()
            ? muirrt_tensor_add_alias(local, whole, wholeIndex[i])
            : muirrt_tensor_add_typed(local, a.name.c_str(), a.shape.size(),
                                      a.shape.data(), a.role, dtype);
    if (localIndex[i] < 0 || wholeIndex[i] < 0)
      return error(muirrt_last_error());
    if (a.initStd > 0 &&
        muirrt_tensor_set_init_std(whole, wholeIndex[i], a.initStd))
      return error(muirrt_last_error());
  }
  return llvm::Error::success();
}

llvm::Error HostTensors::load(StringRef dir, int32_t &loaded) {
  loaded = 0;
  if (muirrt_load_dir(whole, dir.str().c_str(), &loaded))
    return error(muirrt_last_error());
  return llvm::Error::success();
}

void HostTensors::seed(uint64_t seed) { muirrt_init_from_seed(whole, seed); }

/// Copies between a whole tensor and this rank's part: to the part by
/// slicing (rank-local), back by all-gathers over each split's group
/// (every rank must call it, in the same order). Counted in floats: an
/// f64 element is two (the copies and gathers move bits only).
static void copyShard(MuirRtContext *global, int32_t g, const Argument &a,
                      MuirRtContext *local, int32_t l, bool toShard) {
  int32_t rank = muirrt_tensor_rank(local, l);
  ArrayRef<int64_t> shape(muirrt_tensor_shape(local, l), rank);
  ArrayRef<int64_t> wholeShape(muirrt_tensor_shape(global, g), rank);
  auto *shard = static_cast<float *>(muirrt_tensor_storage(local, l));
  auto *full = static_cast<float *>(muirrt_tensor_storage(global, g));
  const int64_t width = static_cast<int64_t>(a.elementBytes() / sizeof(float));
  int64_t numel = muirrt_tensor_numel(local, l) * width;
  if (shard == full) // one storage (muirrt_tensor_add_alias)
    return;
  if (a.splits.empty()) {
    if (toShard)
      std::copy(full, full + numel, shard);
    else
      std::copy(shard, shard + numel, full);
    return;
  }
  if (!toShard) {
    // Gather one split dimension at a time, growing the tensor.
    std::vector<float> cur(shard, shard + numel);
    SmallVector<int64_t> curShape(shape);
    for (const Split &s : a.splits) {
      int64_t outer = 1, inner = width;
      for (int64_t d = 0; d < rank; ++d)
        (d < s.dim ? outer : inner) *= curShape[d];
      int64_t n = muirrt_dist_group_size(s.mask);
      std::vector<float> next(cur.size() * n);
      muirrt_all_gather(s.mask, cur.data(), next.data(), outer, inner);
      cur.swap(next);
      curShape[s.dim] *= n;
    }
    std::copy(cur.begin(), cur.end(), full);
    return;
  }
  // Slice: offset of this rank's block along each split dimension; copy
  // row by row (the last dimension is contiguous in both).
  SmallVector<int64_t> offset(rank, 0);
  for (const Split &s : a.splits)
    offset[s.dim] = muirrt_dist_group_rank(s.mask) * shape[s.dim];
  int64_t rowLen = shape.back() * width;
  int64_t rows = numel / std::max<int64_t>(1, rowLen);
  SmallVector<int64_t> idx(rank, 0);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t rem = r;
    for (int64_t d = rank - 2; d >= 0; --d) {
      idx[d] = rem % shape[d];
      rem /= shape[d];
    }
    int64_t src = 0;
    for (int64_t d = 0; d < rank; ++d)
      src = src * wholeShape[d] +
            (d == rank - 1 ? offset[d] : idx[d] + offset[d]);
    src *= width;
    std::copy(full + src, full + src + rowLen, shard + r * rowLen);
  }
}

void HostTensors::scatter() {
  for (auto [i, a] : llvm::enumerate(step.arguments()))
    if (localIndex[i] >= 0)
      copyShard(whole, wholeIndex[i], a, local, localIndex[i], true);
}

void HostTensors::gather() {
  for (auto [i, a] : llvm::enumerate(step.arguments()))
    if (localIndex[i] >= 0)
      copyShard(whole, wholeIndex[i], a, local, localIndex[i], false);
}

llvm::Error HostTensors::bind() {
  device.assign(localIndex.size(), nullptr);
  for (auto [i, t] : llvm::enumerate(localIndex)) {
    if (t < 0)
      continue;
    void *data = muirrt_tensor_storage(local, t);
    if (step.cuda()) {
      size_t bytes = muirrt_tensor_numel(local, t) *
                     step.arguments()[i].elementBytes();
      std::string why;
      device[i] = step.deviceAlloc(bytes, why);
      if (!device[i])
        return error("--target=cuda: " + why);
      if (llvm::Error e = step.copyToDevice(device[i], data, bytes))
        return e;
    }
    if (llvm::Error e = step.bind(i, step.cuda() ? device[i] : data))
      return e;
  }
  return llvm::Error::success();
}

llvm::Error HostTensors::download() {
  if (!step.cuda())
    return llvm::Error::success();
  for (auto [i, t] : llvm::enumerate(localIndex))
    if (t >= 0)
      if (llvm::Error e = step.copyToHost(
              muirrt_tensor_storage(local, t), device[i],
              muirrt_tensor_numel(local, t) *
                  step.arguments()[i].elementBytes()))
        return e;
  return llvm::Error::success();
}

llvm::Error HostTensors::dump(StringRef dir) const {
  if (muirrt_dump_dir(whole, dir.str().c_str()))
    return error(muirrt_last_error());
  return llvm::Error::success();
}

llvm::Error HostTensors::save(StringRef dir, int64_t stepNumber) const {
  return state::saveState(whole, dir, step.identity(), stepNumber);
}

HostTensors::NonFinite
HostTensors::firstNonFinite(std::initializer_list<int32_t> roles) const {
  for (int32_t i = 0; i < muirrt_tensor_count(local); ++i) {
    const char *name = muirrt_tensor_name(local, i);
    if (!llvm::is_contained(roles, muirrt_tensor_role(local, i)) ||
        step.computesGradient(name))
      continue;
    const void *d = muirrt_tensor_storage(local, i);
    int64_t numel = muirrt_tensor_numel(local, i);
    if (muirrt_tensor_dtype(local, i) == MUIRRT_DTYPE_F64) {
      const auto *x = static_cast<const double *>(d);
      int64_t at = muirrt_first_nonfinite_f64(x, numel);
      if (at >= 0)
        return {name, at, static_cast<float>(x[at])};
      continue;
    }
    const auto *x = static_cast<const float *>(d);
    int64_t at = muirrt_first_nonfinite(x, numel);
    if (at >= 0)
      return {name, at, x[at]};
  }
  return {};
}

HostTensors::NonFinite HostTensors::nonFiniteLoss() const {
  for (auto &[slot, obs] : step.observations()) {
    int64_t numel = 0;
    const float *data = step.observation(slot, numel);
    StringRef label = obs.label;
    if (data && numel > 0 && label.consume_front("loss ") &&
        !std::isfinite(data[0]))
      return {label.str(), 0, data[0]};
  }
  return {};
}

int32_t HostTensors::count() const { return muirrt_tensor_count(local); }

int32_t HostTensors::numParams() const {
  int32_t n = 0;
  for (int32_t i = 0; i < count(); ++i)
    n += muirrt_tensor_role(local, i) == RoleParam;
  return n;
}

int32_t HostTensors::numMuon() const {
  std::set<std::string> observed;
  for (auto &kv : step.observations())
    observed.insert(StringRef(kv.second.label).split('[').first.str());
  int32_t n = 0;
  for (const std::string &name : observed)
    n += muirrt_tensor_find(local, name.c_str()) >= 0;
  return n;
}

void runner::printCommStats(const Step &step, llvm::raw_ostream &os) {
  // Rank 0 prints every rank's counters, gathered over the whole grid (the
  // int64 counters travel as raw bytes). Every axes subset of every
  // folding, as the runtime's masks.
  struct MaskName {
    int64_t mask;
    std::string axes;
  };
  std::vector<MaskName> masks;
  for (auto [f, folding] : llvm::enumerate(step.foldings())) {
    int64_t all = (int64_t(1) << folding.axes.size()) - 1;
    for (int64_t bits = 1; bits <= all; ++bits) {
      // Axes of later foldings as grid.axis (--comm-stats' group names).
      std::string axes;
      for (auto [i, name] : llvm::enumerate(folding.axes))
        if (bits & (int64_t(1) << i))
          axes += (axes.empty() ? "" : ",") +
                  (f ? folding.name + "." + name : name);
      masks.push_back({muirrt_group_mask(static_cast<int64_t>(f), bits), axes});
    }
  }
  size_t numAxes =
      step.foldings().empty() ? 0 : step.foldings().front().axes.size();
  int64_t world = (int64_t(1) << numAxes) - 1;
  int64_t ranks = muirrt_dist_group_size(world);
  int64_t rank = muirrt_dist_rank();
  // Snapshot first: the gather below is a collective and counts too. Two
  // more per rank: its GEMM calls and flops (no Newton-Schulz may run
  // twice across data-parallel ranks; tests add them up).
  int64_t n = static_cast<int64_t>(masks.size());
  int64_t width = 2 * n + 3;
  std::vector<int64_t> mine(width), every(width * ranks);
  for (int64_t k = 0; k < n; ++k) {
    mine[2 * k] = muirrt_comm_bytes(masks[k].mask);
    mine[2 * k + 1] = muirrt_comm_calls(masks[k].mask);
  }
  MuirRtCounters counters;
  muirrt_counters_get(&counters);
  mine[2 * n] = counters.gemm_calls + counters.syrk_calls;
  mine[2 * n + 1] = static_cast<int64_t>(counters.flops);
  mine[2 * n + 2] = counters.other_calls;
  static_assert(sizeof(int64_t) == 2 * sizeof(float), "int64 = 2 floats");
  muirrt_all_gather(world, reinterpret_cast<const float *>(mine.data()),
                    reinterpret_cast<float *>(every.data()), 1,
                    2 * mine.size());
  for (int64_t k = 0; rank == 0 && k < n; ++k)
    for (int64_t r = 0; r < ranks; ++r) {
      const int64_t *c = &every[r * width + 2 * k];
      if (c[1])
        os << "comm: rank " << r << " axes " << masks[k].axes << " bytes "
           << c[0] << " calls " << c[1] << "\n";
    }
  for (int64_t r = 0; rank == 0 && r < ranks; ++r)
    os << "compute: rank " << r << " gemm_calls " << every[r * width + 2 * n]
       << " flops " << every[r * width + 2 * n + 1] << " other_calls "
       << every[r * width + 2 * n + 2] << "\n";
  muirrt_comm_reset();
}
