//===- Parallel.h - independent items shared out over the BLAS threads ----===//
//
// The runtime's own parallel loops: items that write disjoint memory (the
// matrices of a batch, the experts of a layer), run on the caller and
// muirrt_blas_threads() - 1 more threads, each taking the next item from a
// shared counter (uneven items balance). An item's result never depends on
// which thread ran it, so the bits are those of a serial run.
//
//===----------------------------------------------------------------------===//

#ifndef MUIR_RT_CPU_PARALLEL_H
#define MUIR_RT_CPU_PARALLEL_H

#include "muir-rt/Runtime.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace muirrt_detail {

/// Runs item(i) for i in [0, count): in order when threads < 2, else on
/// min(threads, count) threads. With `oneBlasThread` and threads > 1, BLAS
/// calls inside the items run on one thread each (restored afterwards),
/// even for a single item.
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
  std::atomic<int64_t> next{0};
  auto work = [&] {
    for (int64_t i; (i = next.fetch_add(1)) < count;)
      item(i);
  };
  std::vector<std::thread> pool;
  int64_t extra = std::max<int64_t>(std::min<int64_t>(threads, count) - 1, 0);
  for (int64_t t = 0; t < extra; ++t)
    pool.emplace_back(work);
  work();
  for (std::thread &t : pool)
    t.join();
  if (oneBlasThread)
    muirrt_set_blas_threads(threads);
}

} // namespace muirrt_detail

#endif // MUIR_RT_CPU_PARALLEL_H
