//===- HostInternal.h - what Host.cpp and Npy.cpp share ---------*- C++ -*-===//
//
// The runtime's host half is two files: Host.cpp (tensors, seeding,
// directories, metrics) and Npy.cpp (the .npy format). These are the
// helpers both use; nothing here is part of the runtime's C API.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_RUNTIME_CPU_HOSTINTERNAL_H
#define MUIR_RUNTIME_CPU_HOSTINTERNAL_H

#include <sys/types.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <new>
#include <string>
#include <vector>

namespace [[gnu::visibility("hidden")]] muirrt_host {

constexpr int32_t kMaxRank = 8;
/// Tensors' data alignment, and the .npy data offset's.
constexpr size_t kAlign = 64;

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

#endif // MUIR_RUNTIME_CPU_HOSTINTERNAL_H
