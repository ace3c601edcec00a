//===- Parallel.h - independent items shared out over the BLAS threads ----===//
//
// The runtime's own parallel loops (Parallel.cpp): items that write
// disjoint memory (the matrices of a batch, the experts of a layer) run on
// the caller and up to muirrt_blas_threads() - 1 more threads, each taking
// the next item from a shared counter (uneven items balance). An item's
// result never depends on which thread ran it, so the bits are those of a
// serial run.
//
//===----------------------------------------------------------------------===//

#ifndef MUIR_RT_CPU_PARALLEL_H
#define MUIR_RT_CPU_PARALLEL_H

#include "muir-rt/Runtime.h"

#include <cstdint>
#include <type_traits>

namespace muirrt_detail {

using RangeFn = void (*)(void *ctx, int64_t lo, int64_t hi);

/// Runs fn(ctx, lo, hi) on `parts` parts that cover [0, count) (part i is
/// [count i / parts, count (i + 1) / parts)), on up to `threads` threads,
/// the caller's among them; returns when all have run.
void runParts(RangeFn fn, void *ctx, int64_t count, int64_t parts,
              int64_t threads);

/// Runs item(i) for i in [0, count): in order when threads < 2, else each
/// item a part on min(threads, count) threads. With `oneBlasThread` and
/// threads > 1, BLAS calls inside the items run on one thread each
/// (restored afterwards), even for a single item.
template <typename Fn>
void forEachItem(int64_t count, Fn &&item, bool oneBlasThread = false) {
  int32_t threads = muirrt_blas_threads();
  if (threads < 2) {
    for (int64_t i = 0; i < count; ++i)
      item(i);
    return;
  }
  if (oneBlasThread)
    muirrt_set_blas_threads(1);
  runParts(
      [](void *ctx, int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i)
          (*static_cast<std::remove_reference_t<Fn> *>(ctx))(i);
      },
      &item, count, count, threads);
  if (oneBlasThread)
    muirrt_set_blas_threads(threads);
}

} // namespace muirrt_detail

#endif // MUIR_RT_CPU_PARALLEL_H
