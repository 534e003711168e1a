// Fan-out of independent shards over threads for the trainer, the evaluator and the dataset loader, and the
// default thread count. A shard whose thread cannot be started runs on the calling thread: a limit slows a call.
#pragma once

#include <exception>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace ets::train {

/// The CPUs this process may use: the count of its affinity mask (taskset, Slurm's cpusets), capped by the CPU
/// quota of its cgroup and the cgroups above it (Kubernetes CPU limits; cgroup v2 cpu.max or v1 cfs_quota_us),
/// rounded up; std::thread::hardware_concurrency() where neither can be read; at least 1.
int available_cores();

/// `threads` when positive, else available_cores(): what "threads = 0" means throughout the library.
int resolve_threads(int threads);

/// The cgroup CPU limit, in whole CPUs rounded up, of the process whose /proc/self/cgroup text is `proc_cgroup`,
/// with the cgroup file systems mounted under `sys_root` (normally "/sys/fs/cgroup"): the smallest quota along its
/// cgroup path, checked from the process's cgroup up to the root (and at the root alone when that path is not
/// visible, as inside a container). 0: no limit found.
int cgroup_cpu_limit(const std::string& sys_root, std::string_view proc_cgroup);

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
