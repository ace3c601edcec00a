//===- Arena.cpp - where a CPU step's buffers live ------------------------===//
//
// A compiled CPU step allocates its temporaries with muirrt_alloc and frees
// each right after its last use (muir-exec-to-runtime-calls). Through
// glibc's malloc the large ones were either mmap'd and unmapped at every
// run (each run then pays a page fault per page touched: in a VM a
// third of an MoE layer's backward) or, with the thresholds raised, kept
// in the process's heap, where the user's other allocations (PyTorch's
// tensors) share and fragment it and nothing is given back.
//
// Here blocks of kMinBytes and more are placed first fit in one address
// range reserved once per process (MAP_NORESERVE: only touched pages take
// memory), as the CUDA runtime places a step's temporaries in its arena:
// the same sequence of allocations lands at the same offsets at every run,
// so its pages stay resident and warm, and the process holds the highest
// end a sequence reached, about what the step has live at once.
// muirrt_arena_release_memory gives the pages past the live blocks back.
// Smaller blocks, those the range cannot hold, and every block under a
// sanitizer (which should see each buffer's own lifetime) or with
// MUIR_ARENA=0, are malloc's.
//
//===----------------------------------------------------------------------===//
#include "muir-rt/ArenaPlan.h"
#include "muir-rt/Runtime.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
#define MUIR_RT_ARENA_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define MUIR_RT_ARENA_SANITIZED 1
#endif

namespace {

constexpr size_t kMinBytes = size_t(64) << 10;
constexpr size_t kBlockAlign = 4096;

struct Arena {
  std::mutex mutex;
  bool tried = false;
  char *base = nullptr;
  size_t reserved = 0;
  /// Where the blocks go (first fit, as the CUDA runtime places its
  /// temporaries); its need is the highest end placed since a release.
  muirrt_detail::ArenaPlan plan;

  /// Reserves the range on first use: the machine's physical memory of
  /// address space, none of it committed.
  bool ready() {
    if (tried)
      return base != nullptr;
    tried = true;
#ifdef MUIR_RT_ARENA_SANITIZED
    return false;
#else
    const char *env = std::getenv("MUIR_ARENA");
    if (env && std::strcmp(env, "0") == 0)
      return false;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0)
      return false;
    size_t bytes = static_cast<size_t>(pages) * static_cast<size_t>(page);
    bytes = (bytes + (size_t(2) << 20) - 1) & ~((size_t(2) << 20) - 1);
    void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
      return false;
#ifdef MADV_HUGEPAGE
    // Large blocks in 2 MiB pages where the kernel offers them: fewer
    // faults the first time and fewer TLB misses.
    madvise(p, bytes, MADV_HUGEPAGE);
#endif
    base = static_cast<char *>(p);
    reserved = bytes;
    return true;
#endif
  }

  /// The lowest offset where `bytes` fit between the live blocks, or
  /// SIZE_MAX where the range cannot hold them.
  size_t place(size_t bytes) {
    size_t before = plan.need();
    size_t at = plan.place(bytes);
    if (at + bytes <= reserved)
      return at;
    plan.release(at);
    plan.lowerNeed(before);
    return SIZE_MAX;
  }

  bool holds(const void *p) const {
    const char *c = static_cast<const char *>(p);
    return base && c >= base && c < base + reserved;
  }
};

Arena &arena() {
  static Arena *a = new Arena(); // never destroyed: steps may run at exit
  return *a;
}

} // namespace

extern "C" void *muirrt_alloc(int64_t bytes) {
  size_t n = bytes > 0 ? static_cast<size_t>(bytes) : 1;
  if (n >= kMinBytes) {
    Arena &a = arena();
    std::lock_guard<std::mutex> lock(a.mutex);
    if (a.ready()) {
      size_t rounded = (n + kBlockAlign - 1) & ~(kBlockAlign - 1);
      size_t at = a.place(rounded);
      if (at != SIZE_MAX)
        return a.base + at;
    }
  }
  return std::malloc(n);
}

extern "C" void muirrt_free(void *ptr) {
  if (!ptr)
    return;
  Arena &a = arena();
  {
    // (Under the lock: the range is set by the first large allocation,
    // perhaps on another thread.)
    std::lock_guard<std::mutex> lock(a.mutex);
    if (a.holds(ptr)) {
      a.plan.release(static_cast<size_t>(static_cast<char *>(ptr) - a.base));
      return;
    }
  }
  std::free(ptr);
}

extern "C" size_t muirrt_arena_release_memory(void) {
  Arena &a = arena();
  std::lock_guard<std::mutex> lock(a.mutex);
  if (!a.base)
    return 0;
  size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  size_t end = (a.plan.liveEnd() + page - 1) / page * page;
  size_t high = a.plan.need();
  size_t released = high > end ? high - end : 0;
  if (released)
    madvise(a.base + end, released, MADV_DONTNEED);
  a.plan.lowerNeed(0);
  return released;
}

extern "C" size_t muirrt_arena_bytes(void) {
  Arena &a = arena();
  std::lock_guard<std::mutex> lock(a.mutex);
  return a.plan.need();
}
