//===- HostInternal.h - what Host.cpp and Npy.cpp share ---------*- C++ -*-===//
//
// The runtime's host half: Host.cpp (tensors, seeding, metrics), and the
// tensors' files, TensorFiles.cpp (directories, single files) and Npy.cpp
// (the .npy format). These are the types and helpers they share; nothing
// here is part of the runtime's C API.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_RUNTIME_CPU_HOSTINTERNAL_H
#define MUIR_RUNTIME_CPU_HOSTINTERNAL_H

#include "muir-rt/Runtime.h"

#include <sys/types.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <exception>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

namespace [[gnu::visibility("hidden")]] muirrt_host {

constexpr int32_t kMaxRank = 8;
/// Tensors' data alignment, and the .npy data offset's.
constexpr size_t kAlign = 64;

/// Frees what the tensor owns; a tensor sharing another's storage
/// (muirrt_tensor_add_alias) owns none.
struct FreeDeleter {
  bool owned = true;
  void operator()(void *p) const {
    if (owned)
      std::free(p);
  }
};

struct Tensor {
  std::string name;
  int32_t rank = 0;
  int64_t shape[kMaxRank] = {};
  int64_t numel = 0;
  int32_t role = 0;
  int32_t dtype = MUIRRT_DTYPE_F32;
  double initStd = -1; ///< seeded N(0, initStd^2); < 0: the role's default
  bool loaded = false;
  std::unique_ptr<void, FreeDeleter> data;
  int32_t elementSize() const { return dtype == MUIRRT_DTYPE_F64 ? 8 : 4; }
};

inline const char *npyDescr(int32_t elementSize) {
  return elementSize == 8 ? "'<f8' (float64)" : "'<f4' (float32)";
}

/// Tensor `index` of `ctx`, or null.
const Tensor *getTensor(const MuirRtContext *ctx, int32_t index);

/// The runs of a rank's part [shape] at `offset` of a whole [global]
/// tensor, row by row of the last dimension, adjacent rows joined:
/// fn(whole's first element, part's first element, count).
template <typename Fn>
void forEachRun(int32_t rank, const int64_t *global, const int64_t *offset,
                const int64_t *shape, Fn fn) {
  int64_t rowLen = rank ? shape[rank - 1] : 1, rows = 1;
  for (int32_t d = 0; d + 1 < rank; ++d)
    rows *= shape[d];
  if (rowLen == 0 || rows == 0)
    return;
  int64_t runWhole = -1, runPart = 0, runLen = 0;
  int64_t idx[kMaxRank] = {};
  for (int64_t r = 0; r < rows; ++r) {
    int64_t rem = r;
    for (int32_t d = rank - 2; d >= 0; --d) {
      idx[d] = rem % shape[d];
      rem /= shape[d];
    }
    int64_t at = 0;
    for (int32_t d = 0; d < rank; ++d)
      at = at * global[d] + offset[d] + (d + 1 < rank ? idx[d] : 0);
    if (runWhole >= 0 && at == runWhole + runLen) {
      runLen += rowLen;
      continue;
    }
    if (runWhole >= 0)
      fn(runWhole, runPart, runLen);
    runWhole = at;
    runPart = r * rowLen;
    runLen = rowLen;
  }
  fn(runWhole, runPart, runLen);
}

/// Sets the runtime's last error (muirrt_last_error) and returns 1.
int fail(std::string message);
std::string errnoText(int err);
/// Python's repr() of a shape tuple: (), (5,), (3, 4).
std::string shapeString(int32_t rank, const int64_t *shape);

/// Closes a file descriptor on scope exit.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0)
      ::close(fd);
  }
};

/// read() until `size` bytes or end of file; the count read, or -1 with
/// errno set.
ssize_t readFull(int fd, void *buf, size_t size);
bool writeFull(int fd, const void *buf, size_t size);

/// What lies at `path`, not following a symbolic link there.
// Runs `body` (returning 0/non-zero) and converts any escaping exception into
// an error return, so no exception crosses the C boundary.
template <typename Fn> int guarded(Fn &&body) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return fail("out of memory");
  } catch (const std::exception &e) {
    return fail(e.what());
  } catch (...) {
    return fail("unknown error");
  }
}

/// mkdir -p; the folders it made are appended to `created`.
int makeDirs(const std::string &dir,
             std::vector<std::string> *created = nullptr);
/// DIR/rel.
std::string joinPath(const std::string &dir, const std::string &rel);
/// The .npy v1.0 preamble (magic, version, length, header dict) of a
/// tensor, padded so that the data starts at a multiple of 64 bytes.
std::string npyPreamble(int32_t elementSize, int32_t rank,
                        const int64_t *shape);
/// Checks a tensor's rank and shape for writing `path`; numel on success.
int checkShapeArgs(const std::string &path, int32_t rank, const int64_t *shape,
                   int64_t &numel);
/// Writes a complete .npy file at `file`, which must not exist.
/// `elementSize` is 4 (float32, '<f4') or 8 (float64, '<f8'). Null `data`:
/// the data are zeros (muirrt_npy_create's file, which ranks fill by
/// parts).
int writeNpyFile(const std::string &file, const void *data,
                 int32_t elementSize, int32_t rank, const int64_t *shape);

enum class Entry { None, File, Directory, Link, Other };
Entry entryAt(const std::string &path, int &err);
/// A new name beside `path` for a temporary.
std::string tempPathFor(const std::string &path);

/// A .npy file's header, validated (float32 or float64, C order, at most
/// kMaxRank dimensions).
struct NpyHeader {
  int32_t rank = 0;
  int64_t shape[kMaxRank] = {};
  int64_t numel = 1;
  int32_t elementSize = 4; ///< 4: '<f4', 8: '<f8'
  size_t dataOffset = 0;
};

int openForRead(const std::string &path, int &fd);
/// Reads and validates the header of the open .npy file `fd`; on success
/// `h` describes the data, which the file holds exactly.
int readNpyHeader(int fd, const std::string &path, NpyHeader &h);
/// Reads the payload that follows the header (h.elementSize bytes each).
int readNpyData(int fd, const std::string &path, const NpyHeader &h,
                void *dst);
/// Writes the tensor to a new temporary beside `path` (its name in `tmp`).
int writeTemp(const std::string &path, const void *data, int32_t elementSize,
              int32_t rank, const int64_t *shape, std::string &tmp);
/// Renames `tmp` over `path` (removing `tmp` if that fails).
int renameInto(const std::string &tmp, const std::string &path);

} // namespace muirrt_host

/// The runtime's context (muir-rt/Runtime.h's opaque MuirRtContext): its
/// tensors, by index and by name.
struct MuirRtContext {
  std::vector<muirrt_host::Tensor> tensors;
  std::unordered_map<std::string, int32_t> byName;
};

#endif // MUIR_RUNTIME_CPU_HOSTINTERNAL_H
