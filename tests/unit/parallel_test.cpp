// ets-test-labels: unit;concurrency
// run_on_threads: every shard runs once, a thread that cannot be started leaves its shard to the caller, and
// errors are rethrown only after every thread is joined.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "train/parallel.hpp"

using ets::train::run_on_threads;

namespace {

// Starts real threads for the first `allowed` calls, then throws as std::thread does at a pids limit.
struct LimitedStarter {
  int allowed;
  int* calls;
  template <typename F>
  std::thread operator()(F&& f) const {
    if ((*calls)++ >= allowed) throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again));
    return std::thread(std::forward<F>(f));
  }
};

struct ShardLog {
  std::vector<std::atomic<int>> runs;
  std::vector<std::thread::id> ran_on;
  explicit ShardLog(int n) : runs(static_cast<std::size_t>(n)), ran_on(static_cast<std::size_t>(n)) {}
  void record(int s) {
    runs[static_cast<std::size_t>(s)].fetch_add(1);
    ran_on[static_cast<std::size_t>(s)] = std::this_thread::get_id();
  }
};

}  // namespace

TEST_CASE("run_on_threads runs every shard exactly once, shard 0 on the caller") {
  const int n = GENERATE(1, 2, 5);
  ShardLog log(n);
  run_on_threads(n, [&](int s) { log.record(s); });
  for (int s = 0; s < n; ++s) CHECK(log.runs[static_cast<std::size_t>(s)] == 1);
  CHECK(log.ran_on[0] == std::this_thread::get_id());
  for (int s = 1; s < n; ++s) CHECK(log.ran_on[static_cast<std::size_t>(s)] != std::this_thread::get_id());
}

TEST_CASE("run_on_threads with no shards calls nothing") {
  int calls = 0;
  run_on_threads(0, [&](int) { ++calls; });
  run_on_threads(-3, [&](int) { ++calls; });
  CHECK(calls == 0);
}

TEST_CASE("run_on_threads runs the shards whose thread fails to start on the caller") {
  const int n = 6;
  const int allowed = GENERATE(0, 1, 3);
  int starts = 0;
  ShardLog log(n);
  run_on_threads(n, [&](int s) { log.record(s); }, LimitedStarter{allowed, &starts});
  // one failed start and no further tries; shards 1..allowed got threads, the rest ran here
  CHECK(starts == allowed + 1);
  for (int s = 0; s < n; ++s) {
    CHECK(log.runs[static_cast<std::size_t>(s)] == 1);
    const bool on_caller = s == 0 || s > allowed;
    CHECK((log.ran_on[static_cast<std::size_t>(s)] == std::this_thread::get_id()) == on_caller);
  }
}

TEST_CASE("run_on_threads joins every thread before rethrowing the lowest shard's error") {
  const int n = 4;
  const int allowed = GENERATE(0, 3);  // all shards on the caller, or each on its own thread
  int starts = 0;
  std::atomic<int> finished{0};
  auto body = [&](int s) {
    if (s == 1 || s == 3) throw std::runtime_error("shard " + std::to_string(s));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a slow sibling: still joined, not abandoned
    finished.fetch_add(1);
  };
  try {
    run_on_threads(n, body, LimitedStarter{allowed, &starts});
    FAIL("no exception");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()) == "shard 1");
  }
  CHECK(finished == 2);  // shards 0 and 2 both completed before the call returned
}
