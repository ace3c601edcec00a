//===- Tensors.cpp - tensors the runtime owns for a step ------------------===//
//
// muir-run's tensors: loaded, seeded, sliced to this rank's part, bound to
// the step, gathered back, dumped and saved; the communication counters.
// (The per-step table is in StepTable.cpp.)
//
//===----------------------------------------------------------------------===//
#include "muir/Tooling/HostTensors.h"
#include "muir/Tooling/Launcher.h"

#include "muir/Runner/Role.h"
#include "muir/Runner/State.h"
#include "muir-rt/Collectives.h"
#include "muir-rt/GroupMask.h"
#include "muir-rt/Runtime.h"
#include "muir-rt/TensorFiles.h"

#include "llvm/Support/Format.h"

#include <climits>

#include <cmath>

using namespace mlir::muir;
using namespace mlir::muir::runner;
using namespace mlir::muir::tooling;
using llvm::ArrayRef;
using llvm::SmallVector;
using llvm::StringRef;
using llvm::Twine;


HostTensors::HostTensors(Step &step) : step(step) {}

HostTensors::~HostTensors() {
  for (void *p : staged)
    step.release(p);
  // The whole tensors alias the parts of unsplit ones: they go first.
  if (whole)
    muirrt_context_destroy(whole);
  if (local)
    muirrt_context_destroy(local);
}

llvm::Error HostTensors::create() {
  local = muirrt_context_create();
  const auto &args = step.arguments();
  localIndex.assign(args.size(), -1);
  wholeIndex.assign(args.size(), -1);
  offsets.assign(args.size(), {});
  for (auto [i, a] : llvm::enumerate(args)) {
    if (!a.isTensor())
      continue;
    int32_t dtype = a.f64 ? MUIRRT_DTYPE_F64 : MUIRRT_DTYPE_F32;
    localIndex[i] = muirrt_tensor_add_typed(local, a.name.c_str(),
                                            a.shape.size(), a.shape.data(),
                                            a.role, dtype);
    if (localIndex[i] < 0)
      return error(muirrt_last_error());
    if (a.initStd > 0 &&
        muirrt_tensor_set_init_std(local, localIndex[i], a.initStd))
      return error(muirrt_last_error());
    // Where this rank's part starts in the whole tensor: its block along
    // each split dimension.
    offsets[i].assign(a.shape.size(), 0);
    for (const Split &sp : a.splits)
      offsets[i][sp.dim] = muirrt_dist_group_rank(sp.mask) * a.shape[sp.dim];
  }
  return llvm::Error::success();
}

/// The mask of every rank of the step's first grid.
static int64_t worldMask(const Step &step) {
  size_t numAxes =
      step.foldings().empty() ? 0 : step.foldings().front().axes.size();
  return muirrt_group_mask(0, (int64_t(1) << numAxes) - 1);
}

RankAgreement tooling::agreeOnEveryRank(const Step &step, bool ok,
                                       uint64_t value) {
  if (muirrt_dist_size() <= 1)
    return ok ? RankAgreement::Same : RankAgreement::SomeFailed;
  // The value in four 16-bit pieces (exact in float), each with its
  // negation: the maximum of both says whether every rank had the same.
  float mine[9], most[9];
  mine[0] = ok ? 0.0f : 1.0f;
  for (int i = 0; i < 4; ++i) {
    mine[1 + i] = static_cast<float>((value >> (16 * i)) & 0xffff);
    mine[5 + i] = -mine[1 + i];
  }
  muirrt_all_reduce(worldMask(step), MUIRRT_REDUCE_MAX, mine, most, 9);
  if (most[0] != 0.0f)
    return RankAgreement::SomeFailed;
  for (int i = 0; i < 4; ++i)
    if (most[1 + i] != -most[5 + i])
      return RankAgreement::Differ;
  return RankAgreement::Same;
}

llvm::Error HostTensors::load(StringRef dir, int32_t &loaded,
                              StringRef shownAs) {
  loaded = 0;
  // Each rank reads its part of each file only.
  std::vector<const int64_t *> shapes(muirrt_tensor_count(local), nullptr),
      starts(shapes.size(), nullptr);
  for (auto [i, a] : llvm::enumerate(step.arguments()))
    if (localIndex[i] >= 0) {
      shapes[localIndex[i]] = a.globalShape.data();
      starts[localIndex[i]] = offsets[i].data();
    }
  if (muirrt_load_dir_parts(local, dir.str().c_str(), shapes.data(),
                            starts.data(), &loaded)) {
    std::string why = muirrt_last_error();
    if (!shownAs.empty())
      for (size_t at; (at = why.find(dir.str())) != std::string::npos;)
        why.replace(at, dir.size(), shownAs.str());
    return error(why);
  }
  return llvm::Error::success();
}

void HostTensors::seed(uint64_t seed) {
  for (auto [i, a] : llvm::enumerate(step.arguments()))
    if (localIndex[i] >= 0)
      muirrt_init_part_from_seed(local, localIndex[i], seed,
                                 a.globalShape.data(), offsets[i].data());
}

/// This rank's part -> the whole tensor, by all-gathers over each split's
/// group (every rank must call it, in the same order), one split
/// dimension at a time. Counted in floats: an f64 element is two (the
/// gathers move bits only).
static void gatherPart(MuirRtContext *global, int32_t g, const Argument &a,
                       MuirRtContext *local, int32_t l) {
  int32_t rank = muirrt_tensor_rank(local, l);
  ArrayRef<int64_t> shape(muirrt_tensor_shape(local, l), rank);
  auto *shard = static_cast<float *>(muirrt_tensor_storage(local, l));
  auto *full = static_cast<float *>(muirrt_tensor_storage(global, g));
  const int64_t width = static_cast<int64_t>(a.elementBytes() / sizeof(float));
  int64_t numel = muirrt_tensor_numel(local, l) * width;
  if (shard == full) // one storage (muirrt_tensor_add_alias)
    return;
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
}

llvm::Error HostTensors::gather() {
  // The whole tensors exist from here on only (what --dump writes): a run
  // holds its parts alone.
  if (!whole) {
    whole = muirrt_context_create();
    for (auto [i, a] : llvm::enumerate(step.arguments())) {
      if (localIndex[i] < 0)
        continue;
      // A tensor this rank holds whole is its whole tensor: one storage.
      wholeIndex[i] =
          a.splits.empty()
              ? muirrt_tensor_add_alias(whole, local, localIndex[i])
              : muirrt_tensor_add_typed(
                    whole, a.name.c_str(), a.globalShape.size(),
                    a.globalShape.data(), a.role,
                    a.f64 ? MUIRRT_DTYPE_F64 : MUIRRT_DTYPE_F32);
      if (wholeIndex[i] < 0)
        return error(muirrt_last_error());
    }
  }
  for (auto [i, a] : llvm::enumerate(step.arguments()))
    if (localIndex[i] >= 0)
      gatherPart(whole, wholeIndex[i], a, local, localIndex[i]);
  return llvm::Error::success();
}

llvm::Error HostTensors::bind() {
  // The new copies are made and bound before the old ones go: a step never
  // holds a freed pointer, also when staging fails part-way.
  std::vector<void *> fresh(localIndex.size(), nullptr);
  auto dropFresh = [&] {
    for (void *p : fresh)
      step.release(p);
  };
  for (auto [i, t] : llvm::enumerate(localIndex)) {
    if (t < 0)
      continue;
    auto bound = step.stage(muirrt_tensor_storage(local, t), bytesOf(i));
    if (!bound) {
      dropFresh();
      return bound.takeError();
    }
    fresh[i] = *bound;
  }
  for (auto [i, t] : llvm::enumerate(localIndex))
    if (t >= 0)
      if (llvm::Error e = step.bind(i, fresh[i])) {
        // Rebind what was bound before (the old copies stay).
        for (auto [j, u] : llvm::enumerate(localIndex))
          if (u >= 0 && j < staged.size())
            llvm::consumeError(step.bind(j, staged[j]));
        dropFresh();
        return e;
      }
  for (void *p : staged)
    step.release(p);
  staged = std::move(fresh);
  return llvm::Error::success();
}

llvm::Error HostTensors::download() {
  if (staged.empty()) // never bound
    return llvm::Error::success();
  for (auto [i, t] : llvm::enumerate(localIndex))
    if (t >= 0)
      if (llvm::Error e = step.unstage(muirrt_tensor_storage(local, t),
                                       staged[i], bytesOf(i)))
        return e;
  return llvm::Error::success();
}

size_t HostTensors::bytesOf(size_t i) const {
  return muirrt_tensor_numel(local, localIndex[i]) *
         step.arguments()[i].elementBytes();
}

llvm::Error HostTensors::dump(StringRef dir) const {
  if (muirrt_dump_dir(whole, dir.str().c_str()))
    return error(muirrt_last_error());
  return llvm::Error::success();
}

/// Whether this rank writes its part of `a` into a saved state: the first
/// (group rank 0) of the ranks that hold the same part, those that differ
/// from it only in the axes that do not split `a`. A tensor split over the
/// axes of two foldings: each holder writes (the same bytes).
static bool writesPart(const Step &step, const Argument &a) {
  if (step.foldings().empty())
    return true;
  int64_t folding = 0, bits = 0;
  for (auto [k, sp] : llvm::enumerate(a.splits)) {
    int64_t f = muirrt_mask_folding(sp.mask);
    if (k && f != folding)
      return true;
    folding = f;
    bits |= muirrt_mask_axes(sp.mask);
  }
  size_t axes = step.foldings()[folding].axes.size();
  int64_t rest = ((int64_t(1) << axes) - 1) & ~bits;
  return rest == 0 ||
         muirrt_dist_group_rank(muirrt_group_mask(folding, rest)) == 0;
}

/// Rank 0's staging path, or its failure (empty), to every rank of `world`.
static std::string shareStaged(int64_t world, const std::string &staged,
                               bool ok) {
  std::vector<float> buf(2 + PATH_MAX, 0.0f);
  if (muirrt_dist_rank() == 0) {
    // (A staging path fits: muirrt_stage_dir writes it into PATH_MAX.)
    buf[0] = ok && staged.size() < PATH_MAX ? 1.0f : 0.0f;
    buf[1] = static_cast<float>(staged.size());
    for (auto [i, c] : llvm::enumerate(staged))
      buf[2 + i] = static_cast<float>(static_cast<unsigned char>(c));
  }
  muirrt_broadcast(world, 0, buf.data(), static_cast<int64_t>(buf.size()));
  if (buf[0] != 1.0f)
    return "";
  std::string out(static_cast<size_t>(buf[1]), '\0');
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<char>(static_cast<unsigned char>(buf[2 + i]));
  return out;
}

llvm::Error HostTensors::save(StringRef dir, int64_t stepNumber) const {
  // Streamed: rank 0 stages the state and makes each tensor's file (its
  // whole shape, zeros), every rank writes the parts it is the first to
  // hold (no rank gathers a whole tensor), then rank 0 hashes the files,
  // writes the manifest and puts the state in place. The staging path and
  // the ranks' failures travel over the run's grid.
  int64_t world = worldMask(step);
  bool root = muirrt_dist_rank() == 0;
  const auto &args = step.arguments();
  std::string staged, why;
  if (root) {
    auto begun = state::beginSave(dir);
    if (!begun) {
      why = llvm::toString(begun.takeError());
    } else {
      staged = *begun;
      for (auto [i, a] : llvm::enumerate(args)) {
        if (localIndex[i] < 0)
          continue;
        if (muirrt_npy_create(staged.c_str(), a.name.c_str(),
                              a.f64 ? MUIRRT_DTYPE_F64 : MUIRRT_DTYPE_F32,
                              a.globalShape.size(), a.globalShape.data())) {
          why = "cannot save the state to '" + dir.rtrim('/').str() +
                "': " + muirrt_last_error();
          state::abortSave(staged);
          break;
        }
      }
    }
  }
  staged = shareStaged(world, staged, why.empty());
  if (staged.empty())
    return error(why); // rank 0 says why; the others exit quietly
  // The fault tests' "kill:R:-1": rank R dies here, its staging made.
  testFault(muirrt_dist_rank(), kSavingFaultStep);
  std::vector<std::string> names;
  for (auto [i, a] : llvm::enumerate(args)) {
    if (localIndex[i] < 0)
      continue;
    names.push_back(a.name);
    if (why.empty() && writesPart(step, a) &&
        muirrt_npy_write_part(local, localIndex[i], staged.c_str(),
                              a.globalShape.data(), offsets[i].data()))
      why = "cannot save the state to '" + dir.rtrim('/').str() +
            "': " + muirrt_last_error();
  }
  float failed = why.empty() ? 0.0f : 1.0f, anyFailed = 0.0f;
  muirrt_all_reduce(world, MUIRRT_REDUCE_MAX, &failed, &anyFailed, 1);
  if (anyFailed != 0.0f) {
    if (root)
      state::abortSave(staged);
    return error(why); // the rank that failed says why
  }
  if (!root)
    return llvm::Error::success();
  return state::finishSave(staged, dir, step.identity(), stepNumber, names);
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

void tooling::printCommStats(const Step &step, llvm::raw_ostream &os) {
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
