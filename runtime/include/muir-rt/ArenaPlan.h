//===- ArenaPlan.h - where a step's temporaries go in its arena -*- C++ -*-===//
//
// Both runtimes place a step's temporaries at the lowest offset where they
// fit between the live ones (first fit): the CUDA runtime every
// mgpuMemAlloc in its arena, the CPU runtime every large muirrt_alloc in
// its reserved range (cpu/Arena.cpp). The same
// allocation sequence therefore lands at the same offsets at every run, so
// a captured CUDA graph holds the same pointers and no memory nodes. This
// planner keeps those offsets for every live temporary, whether or not the
// arena reserved so far holds it, and the bytes the sequences seen so far
// need: a step compiled after the one that sized the arena, with a larger
// peak, grows the arena before its capture instead of overflowing inside
// it. Plain C++, so the unit tests compile it without CUDA.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_RT_ARENAPLAN_H
#define MUIR_RT_ARENAPLAN_H

#include <algorithm>
#include <cstddef>
#include <map>

namespace muirrt_detail {

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
  /// The end of the highest live block (0: none).
  size_t liveEnd() const {
    return live.empty() ? 0 : live.rbegin()->first + live.rbegin()->second;
  }
  /// Lowers the need to `to`, or to the live blocks' end if higher (after
  /// the arena gave back the pages past them, or a placement it could not
  /// hold was released).
  void lowerNeed(size_t to) { needed = std::max(liveEnd(), to); }

private:
  std::map<size_t, size_t> live; ///< offset -> bytes
  size_t needed = 0;
};

} // namespace muirrt_detail

#endif // MUIR_RT_ARENAPLAN_H
