// The default thread count: the CPUs the affinity mask and the cgroup CPU quota leave this process, so a job in a
// 2-CPU container on a 64-core node starts 2 training threads (each with its own gradient workspace), not 64.
#include "train/parallel.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <locale>
#include <sstream>
#include <vector>

#include "ets/detail/cloexec_file.hpp"
#include "parse_number.hpp"

#if defined(__linux__)
#include <sched.h>
#endif

namespace ets::train {
namespace {

namespace fs = std::filesystem;

bool read_text(const fs::path& p, std::string& out) {
  const ets::detail::UniqueFile in(ets::detail::fopen_cloexec(p.string().c_str(), "rb"));  // close-on-exec
  if (!in) return false;
  out.clear();
  ets::detail::read_rest(in.get(), out);
  return true;
}

// The tighter of two limits, where 0 means none.
int tighter(int a, int b) { return a > 0 && b > 0 ? std::min(a, b) : std::max(a, b); }

// CPUs of one quota / period pair (ceil, at least 1); 0 for no limit or text that is not a limit.
int cpus_of(double quota, double period) {
  if (!(quota > 0) || !(period > 0) || !std::isfinite(quota / period)) return 0;
  const double c = std::ceil(quota / period - 1e-9);
  return c >= 1e6 ? 1000000 : std::max(1, static_cast<int>(c));
}

// cgroup v2 "cpu.max": "<quota> <period>" or "max <period>".
int v2_limit(const fs::path& dir) {
  std::string text;
  if (!read_text(dir / "cpu.max", text)) return 0;
  std::istringstream in(text);
  in.imbue(std::locale::classic());  // the kernel writes C-locale numbers, whatever the global locale
  std::string quota;
  double period = 0;
  if (!(in >> quota >> period) || quota == "max") return 0;
  double q = 0;
  return ets::detail::parse_double(quota, q) ? cpus_of(q, period) : 0;
}

// cgroup v1 "cpu.cfs_quota_us" (-1: none) and "cpu.cfs_period_us".
int v1_limit(const fs::path& dir) {
  std::string q, p;
  if (!read_text(dir / "cpu.cfs_quota_us", q) || !read_text(dir / "cpu.cfs_period_us", p)) return 0;
  double quota = 0, period = 0;
  return ets::detail::parse_double(q, quota) && ets::detail::parse_double(p, period) ? cpus_of(quota, period) : 0;
}

// Smallest limit over `mount / rel` and each cgroup above it up to `mount`; only `mount` itself when `mount / rel`
// is not there or leaves the mount ("/../.." for a process outside the reader's cgroup namespace).
template <typename Limit>
int walk_up(const fs::path& mount, const std::string& rel, Limit&& limit) {
  std::vector<fs::path> dirs{mount};
  for (const auto& part : fs::path(rel).relative_path().lexically_normal()) {
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      dirs.resize(1);
      break;
    }
    dirs.push_back(dirs.back() / part);
  }
  std::error_code ec;
  if (dirs.size() > 1 && !fs::is_directory(dirs.back(), ec)) dirs.resize(1);
  int best = 0;
  for (const auto& d : dirs) best = tighter(best, limit(d));
  return best;
}

bool has_controller(std::string_view list, std::string_view name) {
  while (!list.empty()) {
    const auto comma = list.find(',');
    if (list.substr(0, comma) == name) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace

int cgroup_cpu_limit(const std::string& sys_root, std::string_view proc_cgroup) {
  const fs::path root(sys_root);
  int best = 0;
  std::istringstream lines{std::string(proc_cgroup)};
  for (std::string line; std::getline(lines, line);) {
    // "<id>:<controllers>:<path>"; the path may itself hold ':'
    const auto a = line.find(':');
    const auto b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string_view controllers = std::string_view(line).substr(a + 1, b - a - 1);
    const std::string path = line.substr(b + 1);
    std::error_code ec;
    if (line.compare(0, a, "0") == 0 && controllers.empty()) {
      // cgroup v2: mounted at the root, or at "unified" beside the v1 hierarchies (hybrid)
      const fs::path mount = fs::exists(root / "cgroup.controllers", ec) ? root : root / "unified";
      best = tighter(best, walk_up(mount, path, v2_limit));
    } else if (has_controller(controllers, "cpu")) {
      for (const char* name : {"cpu", "cpu,cpuacct", "cpuacct,cpu"}) {
        if (fs::is_directory(root / name, ec)) {
          best = tighter(best, walk_up(root / name, path, v1_limit));
          break;
        }
      }
    }
  }
  return best;
}

int available_cores() {
  int cores = 0;
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) cores = CPU_COUNT(&set);
  std::string self;
  if (read_text("/proc/self/cgroup", self)) cores = tighter(cores, cgroup_cpu_limit("/sys/fs/cgroup", self));
#endif
  if (cores <= 0) cores = static_cast<int>(std::thread::hardware_concurrency());
  return std::max(1, cores);
}

int resolve_threads(int threads) { return threads > 0 ? threads : available_cores(); }

}  // namespace ets::train
