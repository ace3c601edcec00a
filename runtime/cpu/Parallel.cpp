//===- Parallel.cpp - the step's loop nests shared out over threads -------===//
//
// muirrt_parallel_range: a pool of threads, made on first use and kept
// (never joined: the process may exit while they wait), that run parts of
// a compiled step's parallel loop nests beside the calling thread. One
// range at a time; a second caller runs its range alone. Waking a waiting
// worker costs a few microseconds, so muir-outline-loops leaves nests of
// fewer than 2^18 iterations serial.
//
//===----------------------------------------------------------------------===//

#include "muir-rt/Runtime.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace {

using RangeFn = void (*)(void *, int64_t, int64_t);

class Pool {
public:
  void run(RangeFn fn, void *ctx, int64_t count) {
    int64_t threads = muirrt_blas_threads();
    std::unique_lock<std::mutex> running(busy, std::try_to_lock);
    if (threads < 2 || count < 2 || !running.owns_lock()) {
      fn(ctx, 0, count);
      return;
    }
    Job job{fn, ctx, count, std::min(threads, count)};
    {
      std::lock_guard<std::mutex> lock(mutex);
      while (static_cast<int64_t>(workers.size()) < job.parts - 1)
        workers.emplace_back([this] { serve(); });
      current = &job;
      ++generation;
    }
    wake.notify_all();
    work(job);
    // Wait for the parts others took, and for every worker that holds the
    // job to let go of it (it lives on this stack).
    std::unique_lock<std::mutex> lock(mutex);
    done.wait(lock, [&] { return job.finished == job.parts && !job.holders; });
    current = nullptr;
  }

private:
  struct Job {
    RangeFn fn;
    void *ctx;
    int64_t count, parts;
    std::atomic<int64_t> next{0};
    int64_t finished = 0; // under mutex
    int64_t holders = 0;  // under mutex
  };

  /// Runs parts of `job` until none is left.
  void work(Job &job) {
    int64_t ran = 0;
    for (int64_t i; (i = job.next.fetch_add(1)) < job.parts; ++ran)
      job.fn(job.ctx, job.count * i / job.parts,
             job.count * (i + 1) / job.parts);
    std::lock_guard<std::mutex> lock(mutex);
    job.finished += ran;
  }

  void serve() {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      wake.wait(lock, [&] { return generation != seen && current; });
      seen = generation;
      Job &job = *current;
      ++job.holders;
      lock.unlock();
      work(job);
      lock.lock();
      --job.holders;
      if (job.finished == job.parts && !job.holders)
        done.notify_all();
    }
  }

  std::mutex busy;
  std::mutex mutex;
  std::condition_variable wake, done;
  uint64_t generation = 0;
  Job *current = nullptr;
  std::vector<std::thread> workers;
};

/// Never destroyed: a worker may still wait on it while the process exits.
Pool &pool() {
  static Pool *instance = new Pool;
  return *instance;
}

} // namespace

extern "C" void muirrt_parallel_range(void (*fn)(void *, int64_t, int64_t),
                                      void *ctx, int64_t count) {
  if (count <= 0)
    return;
  pool().run(fn, ctx, count);
}
