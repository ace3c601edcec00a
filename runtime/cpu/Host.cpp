//===- Host.cpp - muir runtime host API -----------------------------------===//
//
// The host half of the runtime: a context that owns named float32 tensors,
// deterministic seeded initialisation and double-precision metrics (but
// the orthogonality error, in Kernels.cpp: these files need no BLAS, so the
// GPU machine's step runner compiles them as they are). See
// muir-rt/Runtime.h for the contract. The tensors' files (directories and
// .npy files) are TensorFiles.cpp's, a library of their own for the tools.
//
// Nothing here throws across the C API: every entry point either cannot
// throw or catches and turns the exception into an error return.
//
//===----------------------------------------------------------------------===//

#include "muir-rt/Runtime.h"

#include "HostInternal.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <set>
#include <new>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

// The .npy payload is little-endian float32 and is read and written with a
// plain memory copy, which is only right on a little-endian host.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "muir runtime assumes a little-endian host");

namespace [[gnu::visibility("hidden")]] muirrt_host {

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

thread_local std::string lastError;

int fail(std::string message) {
  lastError = std::move(message);
  return 1;
}

std::string errnoText(int err) { return std::strerror(err); }

// Python's repr() of a shape tuple: (), (5,), (3, 4).
std::string shapeString(int32_t rank, const int64_t *shape) {
  std::string s = "(";
  for (int32_t i = 0; i < rank; ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  if (rank == 1)
    s += ",";
  s += ")";
  return s;
}

} // namespace muirrt_host

using namespace muirrt_host;

namespace [[gnu::visibility("hidden")]] muirrt_host {

const Tensor *getTensor(const MuirRtContext *ctx, int32_t index) {
  if (!ctx || index < 0 || static_cast<size_t>(index) >= ctx->tensors.size())
    return nullptr;
  return &ctx->tensors[static_cast<size_t>(index)];
}

//===----------------------------------------------------------------------===//
// Seeded initialisation
//===----------------------------------------------------------------------===//

uint64_t fnv1a(const std::string &s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

// splitmix64: tiny, fast, and good enough for initial weights; above all its
// output is fully specified, so runs are reproducible across platforms.
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
};

/// The seed's stream for the tensor `name`. The seed is mixed before
/// combining so that nearby seeds (0, 1, 2...) do not give streams that
/// are mere offsets of one another.
uint64_t streamStart(uint64_t seed, const std::string &name) {
  SplitMix64 seedMixer{seed};
  return seedMixer.next() ^ fnv1a(name);
}

// Pair i of Box-Muller values (elements 2i, 2i + 1) takes the generator's
// calls 2i + 1 and 2i + 2; SplitMix64's state only adds a constant per call,
// so a chunk starts at its own pair directly and threads fill a large tensor
// with exactly the values one thread would (a timing run's billion values
// in a second on a many-core machine rather than half a minute), and a
// rank's part of a tensor holds the whole tensor's values.
//
// Elements [begin, begin + count) of the tensor into out[0, count).
template <typename T>
void fillNormalPart(T *out, int64_t begin, int64_t count, uint64_t start,
                    double stddev) {
  int64_t i = begin & ~int64_t(1), end = begin + count;
  SplitMix64 rng{start + static_cast<uint64_t>(i) * 0x9e3779b97f4a7c15ULL};
  const double twoPi = 6.283185307179586476925286766559;
  for (; i < end; i += 2) {
    // u1 in (0, 1] so log(u1) is finite; u2 in [0, 1). 53 bits each.
    double u1 = static_cast<double>((rng.next() >> 11) + 1) * 0x1.0p-53;
    double u2 = static_cast<double>(rng.next() >> 11) * 0x1.0p-53;
    double r = std::sqrt(-2.0 * std::log(u1));
    if (i >= begin)
      out[i - begin] = static_cast<T>(stddev * r * std::cos(twoPi * u2));
    if (i + 1 >= begin && i + 1 < end)
      out[i + 1 - begin] = static_cast<T>(stddev * r * std::sin(twoPi * u2));
  }
}

// Elements [begin, end) of the tensor into out[begin, end).
template <typename T>
void fillNormalRange(T *out, int64_t begin, int64_t end, uint64_t start,
                     double stddev) {
  fillNormalPart(out + begin, begin, end - begin, start, stddev);
}

/// float32 tensors take the float32 rounding of the float64 tensor's values
/// (the same draws).
template <typename T>
void fillNormal(T *out, int64_t numel, uint64_t seed, const std::string &name,
                double stddev) {
  uint64_t start = streamStart(seed, name);
  const int64_t perThread = int64_t(1) << 20;
  int64_t threads = std::min<int64_t>(
      std::max(1u, std::thread::hardware_concurrency()),
      (numel + perThread - 1) / perThread);
  if (threads <= 1) {
    fillNormalRange<T>(out, 0, numel, start, stddev);
    return;
  }
  // Even chunk boundaries: a pair never straddles two threads.
  int64_t chunk = ((numel + threads - 1) / threads + 1) & ~int64_t(1);
  std::vector<std::thread> pool;
  int64_t b = chunk;
  // A thread that cannot start leaves its chunks to this one (nothing
  // throws across the C API).
  try {
    for (; b < numel; b += chunk)
      pool.emplace_back(fillNormalRange<T>, out, b,
                        std::min(numel, b + chunk), start, stddev);
  } catch (...) {
  }
  for (int64_t rest = b; rest < numel; rest += chunk)
    fillNormalRange<T>(out, rest, std::min(numel, rest + chunk), start,
                       stddev);
  fillNormalRange<T>(out, 0, std::min(numel, chunk), start, stddev);
  for (std::thread &t : pool)
    t.join();
}

/// The standard deviation a tensor is seeded with (0: zeros).
double seedStd(const Tensor &t) {
  return t.initStd >= 0                   ? t.initStd
         : t.role == MUIRRT_ROLE_PARAM    ? 0.02
         : t.role == MUIRRT_ROLE_STATE    ? 0.0
                                          : 1.0; // data, grad
}

//===----------------------------------------------------------------------===//
// Paths (the staging of Staging.cpp uses them too)
//===----------------------------------------------------------------------===//

// mkdir -p. Existing directories are fine; an existing non-directory is an
// error naming the offending prefix.
int makeDirs(const std::string &dir, std::vector<std::string> *created) {
  if (dir.empty())
    return fail("empty directory path");
  std::string prefix;
  size_t pos = 0;
  while (pos <= dir.size()) {
    size_t slash = dir.find('/', pos);
    if (slash == std::string::npos)
      slash = dir.size();
    prefix = dir.substr(0, slash);
    pos = slash + 1;
    if (prefix.empty() || prefix.back() == '/')
      continue; // leading '/' or '//'
    struct stat st;
    if (::stat(prefix.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode))
        return fail("cannot create directory '" + prefix +
                    "': " + errnoText(ENOTDIR));
      continue;
    }
    if (::mkdir(prefix.c_str(), 0777) == 0) {
      if (created)
        created->push_back(prefix);
    } else if (errno != EEXIST) {
      return fail("cannot create directory '" + prefix +
                  "': " + errnoText(errno));
    }
  }
  return 0;
}

std::string joinPath(const std::string &dir, const std::string &rel) {
  if (!dir.empty() && dir.back() == '/')
    return dir + rel;
  return dir + "/" + rel;
}

} // namespace muirrt_host

//===----------------------------------------------------------------------===//
// Context and tensors
//===----------------------------------------------------------------------===//

extern "C" MuirRtContext *muirrt_context_create(void) {
  return new (std::nothrow) MuirRtContext();
}

extern "C" void muirrt_context_destroy(MuirRtContext *ctx) { delete ctx; }

extern "C" const char *muirrt_last_error(void) { return lastError.c_str(); }

extern "C" int32_t muirrt_tensor_add(MuirRtContext *ctx, const char *name,
                                     int32_t rank, const int64_t *shape,
                                     int32_t role) {
  return muirrt_tensor_add_typed(ctx, name, rank, shape, role,
                                 MUIRRT_DTYPE_F32);
}

/// muirrt_tensor_add_typed, on `shared` storage when it is not null (not
/// owned, not cleared).
static int32_t addTensor(MuirRtContext *ctx, const char *name, int32_t rank,
                         const int64_t *shape, int32_t role, int32_t dtype,
                         void *shared) {
  int32_t index = -1;
  guarded([&]() -> int {
    if (!ctx)
      return fail("muirrt_tensor_add: null context");
    if (!name || !*name)
      return fail("muirrt_tensor_add: empty tensor name");
    std::string n = name;
    if (ctx->byName.count(n))
      return fail("tensor '" + n + "' is already registered");
    if (role < MUIRRT_ROLE_PARAM || role > MUIRRT_ROLE_DATA)
      return fail("tensor '" + n + "': invalid role " + std::to_string(role));
    if (dtype != MUIRRT_DTYPE_F32 && dtype != MUIRRT_DTYPE_F64)
      return fail("tensor '" + n + "': invalid dtype " +
                  std::to_string(dtype));
    if (rank < 0 || rank > kMaxRank)
      return fail("tensor '" + n + "': rank " + std::to_string(rank) +
                  " out of range [0, " + std::to_string(kMaxRank) + "]");
    if (rank > 0 && !shape)
      return fail("tensor '" + n + "': null shape");
    Tensor t;
    t.name = n;
    t.rank = rank;
    t.role = role;
    t.dtype = dtype;
    t.numel = 1;
    for (int32_t i = 0; i < rank; ++i) {
      if (shape[i] <= 0)
        return fail("tensor '" + n + "': non-positive dimension in shape " +
                    shapeString(rank, shape));
      if (t.numel > std::numeric_limits<int64_t>::max() / 8 / shape[i])
        return fail("tensor '" + n + "': shape too large");
      t.shape[i] = shape[i];
      t.numel *= shape[i];
    }
    if (shared) {
      t.data = std::unique_ptr<void, FreeDeleter>(shared, FreeDeleter{false});
    } else {
      size_t bytes = static_cast<size_t>(t.numel) * t.elementSize();
      // Round up so whole 64-byte vectors at the tail stay inside the
      // block.
      size_t padded = (bytes + kAlign - 1) / kAlign * kAlign;
      void *mem = nullptr;
      if (::posix_memalign(&mem, kAlign, padded) != 0)
        return fail("tensor '" + n + "': out of memory (" +
                    std::to_string(padded) + " bytes)");
      std::memset(mem, 0, padded);
      t.data.reset(mem);
    }
    int32_t newIndex = static_cast<int32_t>(ctx->tensors.size());
    ctx->tensors.push_back(std::move(t));
    try {
      ctx->byName.emplace(n, newIndex);
    } catch (...) {
      ctx->tensors.pop_back(); // keep the two tables consistent
      throw;
    }
    index = newIndex;
    return 0;
  });
  return index;
}

extern "C" int32_t muirrt_tensor_add_typed(MuirRtContext *ctx,
                                           const char *name, int32_t rank,
                                           const int64_t *shape, int32_t role,
                                           int32_t dtype) {
  return addTensor(ctx, name, rank, shape, role, dtype, nullptr);
}

extern "C" int32_t muirrt_tensor_add_alias(MuirRtContext *ctx,
                                           const MuirRtContext *owner,
                                           int32_t index) {
  const Tensor *t = getTensor(owner, index);
  if (!t) {
    fail("muirrt_tensor_add_alias: bad tensor index " +
         std::to_string(index));
    return -1;
  }
  int32_t added = addTensor(ctx, t->name.c_str(), t->rank, t->shape, t->role,
                            t->dtype, t->data.get());
  if (added >= 0)
    ctx->tensors[static_cast<size_t>(added)].initStd = t->initStd;
  return added;
}

extern "C" int32_t muirrt_tensor_count(const MuirRtContext *ctx) {
  return ctx ? static_cast<int32_t>(ctx->tensors.size()) : 0;
}

extern "C" int32_t muirrt_tensor_find(const MuirRtContext *ctx,
                                      const char *name) {
  if (!ctx || !name)
    return -1;
  try {
    auto it = ctx->byName.find(name);
    return it == ctx->byName.end() ? -1 : it->second;
  } catch (...) {
    return -1;
  }
}

extern "C" const char *muirrt_tensor_name(const MuirRtContext *ctx,
                                          int32_t index) {
  const Tensor *t = getTensor(ctx, index);
  return t ? t->name.c_str() : nullptr;
}

extern "C" int32_t muirrt_tensor_rank(const MuirRtContext *ctx, int32_t index) {
  const Tensor *t = getTensor(ctx, index);
  return t ? t->rank : -1;
}

extern "C" const int64_t *muirrt_tensor_shape(const MuirRtContext *ctx,
                                              int32_t index) {
  const Tensor *t = getTensor(ctx, index);
  return t ? t->shape : nullptr;
}

extern "C" int64_t muirrt_tensor_numel(const MuirRtContext *ctx,
                                       int32_t index) {
  const Tensor *t = getTensor(ctx, index);
  return t ? t->numel : -1;
}

extern "C" int32_t muirrt_tensor_role(const MuirRtContext *ctx, int32_t index) {
  const Tensor *t = getTensor(ctx, index);
  return t ? t->role : -1;
}

extern "C" int32_t muirrt_tensor_dtype(const MuirRtContext *ctx,
                                       int32_t index) {
  const Tensor *t = getTensor(ctx, index);
  return t ? t->dtype : -1;
}

extern "C" float *muirrt_tensor_data(MuirRtContext *ctx, int32_t index) {
  const Tensor *t = getTensor(ctx, index);
  return t && t->dtype == MUIRRT_DTYPE_F32 ? static_cast<float *>(t->data.get())
                                           : nullptr;
}

extern "C" void *muirrt_tensor_storage(MuirRtContext *ctx, int32_t index) {
  const Tensor *t = getTensor(ctx, index);
  return t ? t->data.get() : nullptr;
}

extern "C" int muirrt_tensor_set_init_std(MuirRtContext *ctx, int32_t index,
                                          double std) {
  if (!ctx || index < 0 ||
      index >= static_cast<int32_t>(ctx->tensors.size()))
    return fail("muirrt_tensor_set_init_std: bad tensor index " +
                std::to_string(index));
  if (!(std >= 0))
    return fail("tensor '" + ctx->tensors[static_cast<size_t>(index)].name +
                "': negative init std");
  ctx->tensors[static_cast<size_t>(index)].initStd = std;
  return 0;
}

extern "C" void muirrt_init_from_seed(MuirRtContext *ctx, uint64_t seed) {
  if (!ctx)
    return;
  for (Tensor &t : ctx->tensors) {
    if (t.loaded)
      continue;
    double stddev = seedStd(t);
    if (stddev == 0.0 && t.initStd < 0)
      std::memset(t.data.get(), 0,
                  static_cast<size_t>(t.numel) * t.elementSize());
    else if (t.dtype == MUIRRT_DTYPE_F64)
      fillNormal(static_cast<double *>(t.data.get()), t.numel, seed, t.name,
                 stddev);
    else
      fillNormal(static_cast<float *>(t.data.get()), t.numel, seed, t.name,
                 stddev);
  }
}

extern "C" void muirrt_init_part_from_seed(MuirRtContext *ctx, int32_t index,
                                           uint64_t seed,
                                           const int64_t *global_shape,
                                           const int64_t *offset) {
  if (!ctx || index < 0 ||
      static_cast<size_t>(index) >= ctx->tensors.size() || !global_shape ||
      !offset)
    return;
  Tensor &t = ctx->tensors[static_cast<size_t>(index)];
  if (t.loaded)
    return;
  double stddev = seedStd(t);
  if (stddev == 0.0 && t.initStd < 0) {
    std::memset(t.data.get(), 0,
                static_cast<size_t>(t.numel) * t.elementSize());
    return;
  }
  uint64_t start = streamStart(seed, t.name);
  forEachRun(t.rank, global_shape, offset, t.shape,
             [&](int64_t whole, int64_t part, int64_t count) {
               if (t.dtype == MUIRRT_DTYPE_F64)
                 fillNormalPart(static_cast<double *>(t.data.get()) + part,
                                whole, count, start, stddev);
               else
                 fillNormalPart(static_cast<float *>(t.data.get()) + part,
                                whole, count, start, stddev);
             });
}

//===----------------------------------------------------------------------===//
// Metrics
//===----------------------------------------------------------------------===//

namespace {
/// The index of the first NaN or infinity in x (T float or double, Bits
/// its unsigned integer of the same width), or -1: exponent bits all ones.
/// Blocks of 4096 with an OR-reduction the compiler vectorises; the index
/// is found in the block.
template <typename T, typename Bits>
int64_t firstNonFinite(const T *x, int64_t numel, Bits exponent) {
  const int64_t block = 4096;
  for (int64_t start = 0; start < numel; start += block) {
    int64_t end = std::min(numel, start + block);
    Bits any = 0;
    for (int64_t i = start; i < end; ++i) {
      Bits bits;
      std::memcpy(&bits, x + i, sizeof(bits));
      any |= (bits & exponent) == exponent;
    }
    if (any)
      for (int64_t i = start; i < end; ++i)
        if (!std::isfinite(x[i]))
          return i;
  }
  return -1;
}
} // namespace

extern "C" int64_t muirrt_first_nonfinite(const float *x, int64_t numel) {
  return firstNonFinite<float, uint32_t>(x, numel, 0x7f800000u);
}

extern "C" int64_t muirrt_first_nonfinite_f64(const double *x,
                                              int64_t numel) {
  return firstNonFinite<double, uint64_t>(x, numel, 0x7ff0000000000000ull);
}

extern "C" double muirrt_norm(const float *x, int64_t numel) {
  if (!x || numel <= 0)
    return 0.0;
  double sum = 0.0;
  for (int64_t i = 0; i < numel; ++i) {
    double v = static_cast<double>(x[i]);
    sum += v * v;
  }
  return std::sqrt(sum);
}

extern "C" double muirrt_diff_norm(const float *x, const float *y,
                                   int64_t numel) {
  if (!x || !y || numel <= 0)
    return 0.0;
  double sum = 0.0;
  for (int64_t i = 0; i < numel; ++i) {
    double v = static_cast<double>(x[i]) - static_cast<double>(y[i]);
    sum += v * v;
  }
  return std::sqrt(sum);
}

// Lets the other runtime files (Dist.cpp) report through muirrt_last_error.
namespace muirrt_detail {
void setLastError(std::string message) { lastError = std::move(message); }
} // namespace muirrt_detail
