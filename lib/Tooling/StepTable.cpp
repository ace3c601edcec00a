//===- StepTable.cpp - muir-run's per-step table --------------------------===//
//
// What muir-run prints after each step, the same for any number of ranks:
// per parameter its whole shape, the smallest and largest singular value
// of its Newton-Schulz output (1 is orthogonal), and the norms of its
// update and of the parameter. A split output is gathered over the axes
// that split its matrices, and every rank's singular values meet on rank
// 0; the squares of a split tensor's norms are summed over its ranks.
//
//===----------------------------------------------------------------------===//
#include "muir/Tooling/HostTensors.h"

#include "muir/Runner/Role.h"
#include "muir-rt/Runtime.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

using namespace mlir::muir;
using namespace mlir::muir::runner;
using namespace mlir::muir::tooling;
using llvm::ArrayRef;
using llvm::SmallVector;
using llvm::StringRef;

namespace {

/// The singular values of one observation on one rank, as doubles for the
/// gather: `valid` when this rank holds whole matrices (of a stack
/// split over its matrices, those from matrix `offset` on), their smallest
/// and largest, how many lie below and above the expected band, and how
/// many there are.
struct Band {
  double valid = 0, offset = 0;
  double low = std::numeric_limits<double>::infinity();
  double high = -std::numeric_limits<double>::infinity();
  double below = 0, above = 0, count = 0;
};
constexpr int64_t kBandFloats = sizeof(Band) / sizeof(float);

/// A value beyond the band by more than 1% counts as outside it.
constexpr double kBandSlack = 0.01;

/// Gathers `data` (shape `shape`) along dimension `dim` over the group of
/// `mask`, as HostTensors::gather does (every member calls it).
void gatherAlong(std::vector<float> &data, SmallVector<int64_t> &shape,
                 int64_t dim, int64_t mask) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
    (d < dim ? outer : inner) *= shape[d];
  int64_t n = muirrt_dist_group_size(mask);
  std::vector<float> whole(data.size() * n);
  muirrt_all_gather(mask, data.data(), whole.data(), outer, inner);
  data.swap(whole);
  shape[dim] *= n;
}

/// Sums `values` over the ranks of each split of `a` in turn, in rank
/// order: the whole tensor's sums of squares from its parts'. (Doubles
/// travel as pairs of floats.)
void sumOverSplits(const Argument &a, std::array<double, 2> &values) {
  for (const Split &s : a.splits) {
    int64_t n = muirrt_dist_group_size(s.mask);
    std::vector<std::array<double, 2>> all(n);
    muirrt_all_gather(s.mask, reinterpret_cast<const float *>(values.data()),
                      reinterpret_cast<float *>(all.data()), 1,
                      sizeof(values) / sizeof(float));
    values = {0, 0};
    for (const auto &v : all) {
      values[0] += v[0];
      values[1] += v[1];
    }
  }
}

std::string shapeText(ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "scalar";
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::interleave(shape, os, "x");
  return text;
}

} // namespace

void HostTensors::snapshot() {
  before.resize(count());
  for (int32_t i = 0; i < count(); ++i)
    if (muirrt_tensor_role(local, i) == RoleParam) {
      const char *d = static_cast<const char *>(muirrt_tensor_storage(local, i));
      size_t size = muirrt_tensor_dtype(local, i) == MUIRRT_DTYPE_F64 ? 8 : 4;
      before[i].assign(d, d + muirrt_tensor_numel(local, i) * size);
    }
}

std::vector<std::string> HostTensors::legend() const {
  std::vector<std::string> lines = {
      "sigma: the smallest..largest singular value of each Muon update, "
      "its Newton-Schulz output (1: orthogonal)"};
  // One band per distinct setting, in the order of the parameters.
  std::vector<std::string> bands;
  for (const Argument &a : step.arguments()) {
    auto it = step.nsSettings().find(a.name);
    if (it == step.nsSettings().end())
      continue;
    std::string band = llvm::formatv("{0:f2}..{1:f2} ({2})", it->second.low,
                                     it->second.high, it->second.text);
    if (!llvm::is_contained(bands, band))
      bands.push_back(band);
  }
  if (!bands.empty())
    lines.push_back("expected " + llvm::join(bands, ", ") +
                    " for directions holding at least 1/500 of the "
                    "momentum's norm; weaker ones stay below");
  return lines;
}

/// Per parameter, the band of the singular values of its Newton-Schulz
/// outputs: each output's (gathered where its matrix is split), every
/// rank's to every rank, merged once per (slot, first matrix) from the
/// first rank that holds it (replicas and the members of a gather hold the
/// same). Every rank must call it.
static std::map<std::string, Band> parameterBands(const Step &step) {
  const std::vector<Argument> &args = step.arguments();
  bool several = step.devices() > 1;
  // Each Newton-Schulz output's singular values, on every rank.
  std::vector<int64_t> slots;
  std::vector<Band> bands;
  for (auto &[slot, obs] : step.observations()) {
    if (obs.shape.size() < 2)
      continue;
    StringRef name = StringRef(obs.label).split('[').first;
    int32_t index = step.find(name);
    if (index < 0)
      continue;
    const Argument &a = args[index];
    int64_t numel = 1;
    for (int64_t d : obs.shape)
      numel *= d;
    int64_t have = 0;
    const float *data = step.observation(slot, have);
    Band band;
    band.valid = data && have == numel;
    std::vector<float> values(numel, 0.0f);
    if (band.valid)
      std::copy(data, data + numel, values.begin());
    // Split like its parameter (this rank's part): gathered along the
    // splits of the matrix dimensions; a stack split over its matrices
    // keeps this rank's matrices. Only the shapes decide, so every rank
    // takes part in the same gathers.
    SmallVector<int64_t> shape(obs.shape);
    int64_t rank = static_cast<int64_t>(shape.size());
    if (several && ArrayRef<int64_t>(shape) == ArrayRef<int64_t>(a.shape))
      for (const Split &s : a.splits) {
        if (s.dim >= rank - 2)
          gatherAlong(values, shape, s.dim, s.mask);
        else
          band.offset = static_cast<double>(muirrt_dist_group_rank(s.mask) *
                                            shape[s.dim]);
      }
    auto settings = step.nsSettings().find(a.name);
    int64_t m = shape[rank - 2], n = shape[rank - 1];
    std::vector<double> sigma(std::min(m, n));
    for (int64_t off = 0;
         band.valid && off + m * n <= static_cast<int64_t>(values.size());
         off += m * n) {
      if (muirrt_singular_values(values.data() + off, m, n, sigma.data())) {
        band.valid = 0;
        break;
      }
      if (sigma.empty())
        continue;
      band.low = std::min(band.low, sigma.front());
      band.high = std::max(band.high, sigma.back());
      band.count += static_cast<double>(sigma.size());
      if (settings == step.nsSettings().end())
        continue;
      for (double v : sigma) {
        band.below += v < settings->second.low * (1 - kBandSlack);
        band.above += v > settings->second.high * (1 + kBandSlack);
      }
    }
    slots.push_back(slot);
    bands.push_back(band);
  }
  // Every rank's bands to every rank (rank 0 prints).
  std::vector<Band> every = bands;
  int64_t numRanks = 1;
  if (several && !bands.empty()) {
    size_t numAxes = step.foldings().front().axes.size();
    int64_t world = (int64_t(1) << numAxes) - 1;
    numRanks = muirrt_dist_group_size(world);
    every.resize(bands.size() * numRanks);
    muirrt_all_gather(world, reinterpret_cast<const float *>(bands.data()),
                      reinterpret_cast<float *>(every.data()), 1,
                      kBandFloats * static_cast<int64_t>(bands.size()));
  }
  std::map<std::string, Band> merged;
  std::set<std::pair<int64_t, double>> seen;
  for (int64_t r = 0; r < numRanks; ++r)
    for (size_t k = 0; k < slots.size(); ++k) {
      const Band &b = every[r * slots.size() + k];
      if (!b.valid || !seen.insert({slots[k], b.offset}).second)
        continue;
      StringRef label = step.observations().at(slots[k]).label;
      Band &p = merged[label.split('[').first.str()];
      p.valid = 1;
      p.low = std::min(p.low, b.low);
      p.high = std::max(p.high, b.high);
      p.below += b.below;
      p.above += b.above;
      p.count += b.count;
    }
  return merged;
}

void HostTensors::printStep(llvm::raw_ostream &os) const {
  const std::vector<Argument> &args = step.arguments();
  bool several = step.devices() > 1;
  std::map<std::string, Band> merged = parameterBands(step);

  // The whole tensors' norms: squares summed over the parts.
  std::vector<std::array<double, 2>> norms;
  for (auto [i, a] : llvm::enumerate(args)) {
    int32_t t = localIndex[i];
    if (t < 0 || a.role != RoleParam)
      continue;
    int64_t numel = muirrt_tensor_numel(local, t);
    std::array<double, 2> squares = {0, 0};
    if (a.f64) {
      const auto *d = static_cast<const double *>(muirrt_tensor_storage(local, t));
      const auto *b = reinterpret_cast<const double *>(before[t].data());
      for (int64_t k = 0; k < numel; ++k) {
        squares[0] += d[k] * d[k];
        squares[1] += (d[k] - b[k]) * (d[k] - b[k]);
      }
    } else {
      const float *d = muirrt_tensor_data(local, t);
      double w = muirrt_norm(d, numel);
      double dw = muirrt_diff_norm(
          reinterpret_cast<const float *>(before[t].data()), d, numel);
      squares = {w * w, dw * dw};
    }
    if (several)
      sumOverSplits(a, squares);
    norms.push_back(squares);
  }
  if (step.rank() != 0)
    return;

  for (auto &[slot, obs] : step.observations()) {
    int64_t numel = 0;
    const float *data = step.observation(slot, numel);
    // A trained MoE layer's loss ("loss <layer>", one float).
    if (data && numel > 0 && StringRef(obs.label).starts_with("loss "))
      os << "  " << obs.label << " "
         << llvm::format("%.6e", static_cast<double>(data[0])) << "\n";
  }
  // Columns as wide as their longest entry (at least 20 and 11), so that
  // long names never run into the next column.
  size_t nameWidth = 20, shapeWidth = 11;
  for (const Argument &a : args)
    if (a.role == RoleParam && a.isTensor()) {
      nameWidth = std::max(nameWidth, a.name.size());
      shapeWidth = std::max(shapeWidth, shapeText(a.globalShape).size());
    }
  size_t row = 0;
  for (const Argument &a : args) {
    if (a.role != RoleParam || !a.isTensor())
      continue;
    const std::array<double, 2> &squares = norms[row++];
    os << "  " << llvm::left_justify(a.name, nameWidth) << " "
       << llvm::left_justify(shapeText(a.globalShape), shapeWidth);
    auto it = merged.find(a.name);
    if (it != merged.end())
      os << " sigma "
         << llvm::format("%.3f..%.3f", it->second.low, it->second.high);
    else
      os << "                   ";
    os << "  |dW| " << llvm::format("%.3e", std::sqrt(squares[1])) << "  |W| "
       << llvm::format("%.3e", std::sqrt(squares[0]));
    auto settings = step.nsSettings().find(a.name);
    if (it != merged.end() && settings != step.nsSettings().end()) {
      const Band &b = it->second;
      if (b.below > 0)
        os << llvm::format("  (%.0f of %.0f below the band)", b.below, b.count);
      if (b.above > 0)
        os << llvm::format("  (%.0f of %.0f above the band)", b.above, b.count);
    }
    os << "\n";
  }
}
