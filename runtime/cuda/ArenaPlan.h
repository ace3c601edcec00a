//===- ArenaPlan.h - where a step's temporaries go in its arena -*- C++ -*-===//
//
// The CUDA runtime places every temporary of a step (mgpuMemAlloc) at the
// lowest offset where it fits between the live ones (first fit). The same
// allocation sequence therefore lands at the same offsets at every run, so
// a captured CUDA graph holds the same pointers and no memory nodes. This
// planner keeps those offsets for every live temporary, whether or not the
// arena reserved so far holds it, and the bytes the sequences seen so far
// need: a step compiled after the one that sized the arena, with a larger
// peak, grows the arena before its capture instead of overflowing inside
// it. Plain C++, so the unit tests compile it without CUDA.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_RUNTIME_CUDA_ARENAPLAN_H
#define MUIR_RUNTIME_CUDA_ARENAPLAN_H

#include <algorithm>
#include <cstddef>
#include <map>

namespace muirrt_cuda_detail {

class ArenaPlan {
public:
  /// Places a block of `bytes` at the lowest offset where it fits between
  /// the live blocks, and returns the offset.
  size_t place(size_t bytes) {
    size_t at = 0;
    for (auto [offset, size] : live) {
      if (offset >= at + bytes)
        break;
      at = std::max(at, offset + size);
    }
    live[at] = bytes;
    needed = std::max(needed, at + bytes);
    return at;
  }
  /// Frees the block placed at `offset`.
  void release(size_t offset) { live.erase(offset); }
  /// No block is live: between steps.
  bool idle() const { return live.empty(); }
  /// The bytes an arena needs to hold every block placed so far at its
  /// offset: the highest end of any block since the start.
  size_t need() const { return needed; }

private:
  std::map<size_t, size_t> live; ///< offset -> bytes
  size_t needed = 0;
};

} // namespace muirrt_cuda_detail

#endif // MUIR_RUNTIME_CUDA_ARENAPLAN_H
