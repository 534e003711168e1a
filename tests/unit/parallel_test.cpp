// ets-test-labels: unit;concurrency
// run_on_threads: every shard runs once, a thread that cannot be started leaves its shard to the caller, and
// errors are rethrown only after every thread is joined; the default thread count follows affinity and cgroup quota.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#endif

#include "test_support.hpp"
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

namespace {

namespace fs = std::filesystem;

// A fake cgroup mount: files written under a fresh temporary root.
struct FakeCgroups {
  ets_test::TempDir dir{"ets_cgroup"};
  const fs::path& root = dir.path;
  void write(const std::string& rel, const std::string& text) const {
    fs::create_directories((root / rel).parent_path());
    std::ofstream(root / rel) << text;
  }
  int limit(const std::string& proc_cgroup) const { return ets::train::cgroup_cpu_limit(root.string(), proc_cgroup); }
};

}  // namespace

TEST_CASE("cgroup v2: the smallest cpu.max quota on the path, rounded up") {
  FakeCgroups cg;
  cg.write("cgroup.controllers", "cpu memory\n");
  cg.write("cpu.max", "max 100000\n");
  CHECK(cg.limit("0::/\n") == 0);  // unlimited
  cg.write("kubepods/cpu.max", "400000 100000\n");
  cg.write("kubepods/pod1/cpu.max", "150000 100000\n");  // 1.5 CPUs: two threads
  cg.write("kubepods/pod1/ctr/cpu.max", "max 100000\n");
  CHECK(cg.limit("0::/kubepods/pod1/ctr\n") == 2);
  cg.write("kubepods/cpu.max", "100000 100000\n");  // a tighter parent wins
  CHECK(cg.limit("0::/kubepods/pod1/ctr\n") == 1);
  // a path this mount does not show (a cgroup namespace) or that leaves it: the mount's own limit only
  cg.write("cpu.max", "300000 100000\n");
  CHECK(cg.limit("0::/elsewhere/ctr\n") == 3);
  CHECK(cg.limit("0::/../../kubepods/pod1\n") == 3);
}

TEST_CASE("cgroup v1: cpu.cfs_quota_us over cpu.cfs_period_us, any cpu mount name") {
  FakeCgroups cg;
  cg.write("cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
  cg.write("cpu,cpuacct/cpu.cfs_period_us", "100000\n");
  const std::string self = "9:name=systemd:/\n4:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n0::/\n";
  CHECK(cg.limit(self) == 0);  // -1: no quota
  cg.write("cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "250000\n");
  cg.write("cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
  CHECK(cg.limit(self) == 3);
  CHECK(cg.limit("4:memory:/docker/abc\n") == 0);  // no cpu controller listed: nothing read
  CHECK(cg.limit("3:cpuacct:/docker/abc\n") == 0);   // "cpuacct" is not "cpu"
}

TEST_CASE("cgroup limits: unreadable or malformed text is no limit, not an error") {
  FakeCgroups cg;
  cg.write("cgroup.controllers", "cpu\n");
  for (const std::string text : {"", "max", "abc 100000", "100000 0", "-5 100000", "nan 100000", "1e300 1"}) {
    cg.write("cpu.max", text);
    CAPTURE(text);
    CHECK(cg.limit("0::/\n") == (text == "1e300 1" ? 1000000 : 0));
  }
  CHECK(cg.limit("") == 0);
  CHECK(cg.limit("garbage without colons\n::\n0:\n") == 0);
}

#if defined(__linux__)
TEST_CASE("available_cores follows the affinity mask; threads = 0 resolves to it") {
  cpu_set_t saved;
  REQUIRE(sched_getaffinity(0, sizeof(saved), &saved) == 0);
  const int before = ets::train::available_cores();
  CHECK(before >= 1);
  CHECK(before <= CPU_COUNT(&saved));
  CHECK(ets::train::resolve_threads(0) == before);
  CHECK(ets::train::resolve_threads(3) == 3);
  int first = 0;
  while (!CPU_ISSET(first, &saved)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  REQUIRE(sched_setaffinity(0, sizeof(one), &one) == 0);
  const int pinned = ets::train::available_cores();
  REQUIRE(sched_setaffinity(0, sizeof(saved), &saved) == 0);
  CHECK(pinned == 1);
}
#endif
