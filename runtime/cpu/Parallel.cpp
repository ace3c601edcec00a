//===- Parallel.cpp - the runtime's parallel parts ------------------------===//
//
// runParts runs parts of a range side by side: the compiled step's
// element-wise loop nests (muirrt_parallel_range, from
// muir-parallel-loop-calls), the matrices of a batch, the experts of a
// layer, the pieces of a non-finite scan. Each thread takes the next part
// from a shared counter until none is left, so every part runs even when
// fewer threads come than asked, and the caller returns when all have
// run.
//
// With oneDNN (MUIR_RT_HAVE_DNNL) the threads are libgomp's team, the one
// oneDNN's bf16 products run on: its workers spin a while after a product
// and take the next loop at once, where a second pool would wait for them
// to yield the cores. Without it, a pool of threads made on first use and
// kept (never joined: the process may exit while they wait); one range at a
// time, a second caller runs its parts alone.
//
//===----------------------------------------------------------------------===//

#include "Parallel.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#if MUIR_RT_HAVE_DNNL
// What `#pragma omp parallel num_threads(n)` compiles to with GCC (libgomp's
// ABI; clang ships no omp.h without libomp).
extern "C" void GOMP_parallel(void (*fn)(void *), void *data, unsigned threads,
                              unsigned flags);
#endif

namespace {

struct Job {
  muirrt_detail::RangeFn fn;
  void *ctx;
  int64_t count, parts;
  std::atomic<int64_t> next{0};

  /// Runs parts until none is left; returns how many it ran.
  int64_t work() {
    int64_t ran = 0;
    for (int64_t i; (i = next.fetch_add(1)) < parts; ++ran)
      fn(ctx, count * i / parts, count * (i + 1) / parts);
    return ran;
  }
};

#if !MUIR_RT_HAVE_DNNL
class Pool {
public:
  void run(Job &job, int64_t threads) {
    std::unique_lock<std::mutex> running(busy, std::try_to_lock);
    if (!running.owns_lock()) {
      job.work();
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mutex);
      while (static_cast<int64_t>(workers.size()) < threads - 1)
        workers.emplace_back([this] { serve(); });
      current = &job;
      finished = 0;
      holders = 0;
      ++generation;
    }
    wake.notify_all();
    int64_t ran = job.work();
    // Wait for the parts others took, and for every worker that holds the
    // job to let go of it (it lives on the caller's stack).
    std::unique_lock<std::mutex> lock(mutex);
    finished += ran;
    done.wait(lock, [&] { return finished == job.parts && !holders; });
    current = nullptr;
  }

private:
  void serve() {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      wake.wait(lock, [&] { return generation != seen && current; });
      seen = generation;
      Job &job = *current;
      ++holders;
      lock.unlock();
      int64_t ran = job.work();
      lock.lock();
      finished += ran;
      --holders;
      if (finished == job.parts && !holders)
        done.notify_all();
    }
  }

  std::mutex busy;
  std::mutex mutex;
  std::condition_variable wake, done;
  uint64_t generation = 0;
  Job *current = nullptr;
  int64_t finished = 0, holders = 0; // under mutex
  std::vector<std::thread> workers;
};

/// Never destroyed: a worker may still wait on it while the process exits.
Pool &pool() {
  static Pool *instance = new Pool;
  return *instance;
}
#endif

} // namespace

namespace muirrt_detail {

void runParts(RangeFn fn, void *ctx, int64_t count, int64_t parts,
              int64_t threads) {
  if (count <= 0)
    return;
  parts = std::clamp<int64_t>(parts, 1, count);
  threads = std::clamp<int64_t>(threads, 1, parts);
  Job job{fn, ctx, count, parts};
  if (threads < 2) {
    job.work();
    return;
  }
#if MUIR_RT_HAVE_DNNL
  GOMP_parallel([](void *j) { static_cast<Job *>(j)->work(); }, &job,
                static_cast<unsigned>(threads), 0);
#else
  pool().run(job, threads);
#endif
}

} // namespace muirrt_detail

extern "C" void muirrt_parallel_range(void (*fn)(void *, int64_t, int64_t),
                                      void *ctx, int64_t count) {
  int64_t threads = muirrt_blas_threads();
  muirrt_detail::runParts(fn, ctx, count, threads, threads);
}
