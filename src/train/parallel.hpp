// Fan-out of independent shards over threads for the trainer, the evaluator and the dataset loader.
// A shard whose thread cannot be started runs on the calling thread: a thread limit slows a call, never aborts it.
#pragma once

#include <exception>
#include <thread>
#include <utility>
#include <vector>

namespace ets::train {

/// Starts one std::thread running f (run_on_threads' default starter).
struct StartThread {
  template <typename F>
  std::thread operator()(F&& f) const {
    return std::thread(std::forward<F>(f));
  }
};

/// Runs body(s) once for every shard s in [0, shards): shard 0 on the calling thread, the others each on a thread
/// from start(callable). When start throws (std::system_error at a pids or thread limit, std::bad_alloc), no more
/// threads are tried and the remaining shards run on the calling thread, after shard 0 and in order. Every started
/// thread is joined before returning, whatever the shards threw; then the lowest shard's exception is rethrown.
/// body must be safe to call for different shards at once.
template <typename Body, typename Start = StartThread>
void run_on_threads(int shards, Body&& body, Start&& start = Start{}) {
  if (shards <= 0) return;
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(shards));
  auto guarded = [&](int s) noexcept {
    try {
      body(s);
    } catch (...) {
      errors[static_cast<std::size_t>(s)] = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(shards - 1));  // no reallocation below: push_back cannot throw
  int started = 1;
  for (; started < shards; ++started) {
    try {
      pool.push_back(start([&guarded, s = started] { guarded(s); }));
    } catch (...) {
      break;  // the calling thread takes this shard and the rest
    }
  }
  guarded(0);
  for (int s = started; s < shards; ++s) guarded(s);
  for (auto& th : pool) th.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace ets::train
