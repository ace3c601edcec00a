//===- npy_fuzzer.cpp - fuzzes the runtime's .npy reader ------------------===//
//
// Input: the bytes of a .npy file. muirrt_npy_read reads it from a memfd
// (through /proc/self/fd, as a path) and must fail with a message or return
// a buffer holding exactly the product of the shape's floats (every one is
// read, so ASan sees a short buffer). muirrt_load_dir then loads the same
// bytes as DIR/w.npy into a tensor of the shape read (or [2, 3] when the
// read failed), which goes through the directory reader's two passes.
//
//===----------------------------------------------------------------------===//
#include "muir-rt/Runtime.h"
#include "muir-rt/TensorFiles.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace {

[[noreturn]] void bug(const char *what) {
  std::fprintf(stderr, "muir fuzz: %s\n", what);
  std::abort();
}

bool writeAll(int fd, const uint8_t *data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n <= 0)
      return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// The directory that holds w.npy for muirrt_load_dir: made once, in memory
// where /dev/shm exists.
const std::string &scratchDir() {
  static const std::string dir = [] {
    const char *base = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    std::string templ = std::string(base) + "/muir-npy-fuzz-XXXXXX";
    if (!::mkdtemp(&templ[0]))
      bug("cannot create a scratch directory");
    return templ;
  }();
  static const bool cleanup = [] {
    std::atexit([] {
      ::unlink((dir + "/w.npy").c_str());
      ::rmdir(dir.c_str());
    });
    return true;
  }();
  (void)cleanup;
  return dir;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int fd = ::memfd_create("fuzz.npy", MFD_CLOEXEC);
  if (fd < 0 || !writeAll(fd, data, size))
    bug("cannot write the input to a memfd");
  std::string path = "/proc/self/fd/" + std::to_string(fd);

  float *values = nullptr;
  int32_t rank = -1;
  int64_t shape[8] = {0};
  int rc = muirrt_npy_read(path.c_str(), &values, &rank, shape);
  ::close(fd);
  int32_t loadRank = 2;
  int64_t loadShape[8] = {2, 3};
  if (rc == 0) {
    if (!values || rank < 0 || rank > 8)
      bug("muirrt_npy_read succeeded with a null buffer or a bad rank");
    int64_t numel = 1;
    for (int32_t i = 0; i < rank; ++i)
      numel *= shape[i];
    volatile float sink = 0;
    for (int64_t i = 0; i < numel; ++i)
      sink = sink + values[i];
    std::free(values);
    loadRank = rank;
    std::memcpy(loadShape, shape, sizeof(loadShape));
  } else {
    if (values)
      bug("muirrt_npy_read failed but returned a buffer");
    if (!*muirrt_last_error())
      bug("muirrt_npy_read failed without a message");
  }

  // The same bytes through the directory reader.
  std::string file = scratchDir() + "/w.npy";
  int out =
      ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (out < 0 || !writeAll(out, data, size))
    bug("cannot write the input to the scratch directory");
  ::close(out);
  MuirRtContext *ctx = muirrt_context_create();
  if (muirrt_tensor_add(ctx, "w", loadRank, loadShape, MUIRRT_ROLE_PARAM) >=
      0) {
    int32_t loaded = -1;
    int loadRc = muirrt_load_dir(ctx, scratchDir().c_str(), &loaded);
    if (loadRc == 0 && loaded != 1)
      bug("muirrt_load_dir succeeded without loading w.npy");
    if (loadRc == 0 && rc != 0)
      bug("muirrt_load_dir accepted a file muirrt_npy_read rejected");
    if (loadRc != 0 && rc == 0)
      bug("muirrt_load_dir rejected a file muirrt_npy_read accepted");
  }
  muirrt_context_destroy(ctx);
  return 0;
}
