// Reader for Nsight Systems SQLite exports: ops are NVTX ranges that launch kernels, timed by their kernels.
// Opened read-only (or deserialized from memory); every SQLite failure becomes an ets.nsight.* error.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <sqlite3.h>

#include "ets/detail/ascii.hpp"
#include "ets/detail/cloexec_file.hpp"
#include "ets/error.hpp"
#include "ets/log.hpp"
#include "ets/trace.hpp"
#include "import/importers.hpp"
#include "import/op_normalize.hpp"
#include "import/skip_links.hpp"

namespace ets::import {
namespace {

// a − b of two nanosecond timestamps, or ets.nsight.6 when the export's values are so far out that it would wrap.
std::int64_t ns_diff(std::int64_t a, std::int64_t b, const std::string& path) {
  std::int64_t d = 0;
  if (__builtin_sub_overflow(a, b, &d))
    ETS_THROW(Errc::invalid_trace, "ets.nsight.6", "'{}': timestamps {} and {} ns are too far apart to subtract", path,
              a, b);
  return d;
}

struct DbCloser {
  void operator()(sqlite3* db) const noexcept { sqlite3_close_v2(db); }
};
using Db = std::unique_ptr<sqlite3, DbCloser>;

struct StmtCloser {
  void operator()(sqlite3_stmt* s) const noexcept { sqlite3_finalize(s); }
};
using Stmt = std::unique_ptr<sqlite3_stmt, StmtCloser>;

[[noreturn]] void sql_fail(sqlite3* db, int rc, const std::string& path, const char* what) {
  const int primary = rc & 0xFF;
  if (primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT)
    ETS_THROW(Errc::parse, "ets.nsight.2", "'{}' is not a readable SQLite database ({})", path, sqlite3_errmsg(db));
  ETS_THROW(Errc::parse, "ets.nsight.5", "'{}': {} failed: {}", path, what, sqlite3_errmsg(db));
}

Stmt prepare(sqlite3* db, const std::string& sql, const std::string& path, bool must = true) {
  sqlite3_stmt* s = nullptr;
  const int rc = sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(s);
    if (!must) return Stmt{};
    sql_fail(db, rc, path, sql.c_str());
  }
  return Stmt{s};
}

// Runs a query, calling row(stmt) for each row.
template <typename F>
void each_row(sqlite3* db, sqlite3_stmt* s, const std::string& path, const char* what, F&& row) {
  for (;;) {
    const int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
      row(s);
    } else if (rc == SQLITE_DONE) {
      return;
    } else {
      sql_fail(db, rc, path, what);
    }
  }
}

std::string column_text(sqlite3_stmt* s, int i) {
  const auto* p = sqlite3_column_text(s, i);
  return p ? std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(sqlite3_column_bytes(s, i)))
           : std::string();
}

struct Range {
  std::int64_t start, end, tid;
  std::string text;
};
struct Launch {
  std::int64_t start, end, tid, corr;
};
// Nsight's global thread id holds the process in its upper bits and the thread in the low 24
// (globalPid = globalTid with those zeroed). Correlation ids are unique only within a process.
std::int64_t process_of(std::int64_t global_tid) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(global_tid) & ~std::uint64_t{0xFFFFFF});
}
struct CorrKey {
  std::int64_t process, corr;
  bool operator==(const CorrKey& o) const { return process == o.process && corr == o.corr; }
};
struct CorrKeyHash {
  std::size_t operator()(const CorrKey& k) const {
    return std::hash<std::int64_t>()(k.corr) ^ (std::hash<std::int64_t>()(k.process) * 0x9E3779B97F4A7C15ull);
  }
};
struct Kernel {
  std::int64_t start, end;
  std::int64_t device = -1;  // deviceId: the CUDA device index in its process; -1 when the export has no such column
};
// TARGET_INFO_CUDA_DEVICE: a process's CUDA device index (a kernel's deviceId) is the GPU TARGET_INFO_GPU lists
// as gpuId. The two differ under CUDA_VISIBLE_DEVICES (index 0 is whichever GPU it names first) and where CUDA's
// fastest-first order is not the machine's.
struct CudaDevice {
  std::int64_t gpu, cuda, pid;
};

// Keeps the iteration markers of one process (and their indices, element for element).
void iterations_of_process(std::vector<Range>& iterations, std::vector<std::int64_t>& index, std::int64_t process) {
  std::size_t kept = 0;
  for (std::size_t i = 0; i < iterations.size(); ++i)
    if (process_of(iterations[i].tid) == process) {
      iterations[kept] = std::move(iterations[i]);
      index[kept] = index[i];
      ++kept;
    }
  iterations.resize(kept);
  index.resize(kept);
}

// Phase marks of one kind, to ask whether one of them (other than the range itself) on the range's thread contains
// it: per thread, marks by start with the two latest ends so far, so one question is a binary search (checking
// every mark for every op was quadratic: 40,000 ops and marks took 13 s).
class Marks {
 public:
  explicit Marks(std::vector<const Range*> marks) : marks_(std::move(marks)) {
    std::sort(marks_.begin(), marks_.end(), [](const Range* a, const Range* b) {
      return a->tid != b->tid ? a->tid < b->tid : a->start < b->start;
    });
    best_.resize(marks_.size());
    for (std::size_t i = 0; i < marks_.size(); ++i) {
      Best b = i > 0 && marks_[i - 1]->tid == marks_[i]->tid ? best_[i - 1] : Best{};
      const Range* m = marks_[i];
      if (!b.first || m->end > b.first->end) b.second = b.first, b.first = m;
      else if (!b.second || m->end > b.second->end) b.second = m;
      best_[i] = b;
    }
  }
  bool contain(const Range& g) const {
    // the last mark of g's thread that starts at or before g
    const auto pos = std::upper_bound(marks_.begin(), marks_.end(), g, [](const Range& x, const Range* m) {
      return x.tid != m->tid ? x.tid < m->tid : x.start < m->start;
    });
    if (pos == marks_.begin() || (*std::prev(pos))->tid != g.tid) return false;
    const Best& b = best_[static_cast<std::size_t>(pos - marks_.begin()) - 1];
    const Range* m = b.first != &g ? b.first : b.second;
    return m && g.end <= m->end;
  }

 private:
  struct Best {
    const Range* first = nullptr;   // the latest end among the marks so far
    const Range* second = nullptr;  // the next latest, for when the first is the range asked about
  };
  std::vector<const Range*> marks_;
  std::vector<Best> best_;
};

bool icontains(std::string_view s, std::string_view needle) {
  if (needle.size() > s.size()) return false;
  for (std::size_t i = 0; i + needle.size() <= s.size(); ++i) {
    bool eq = true;
    for (std::size_t j = 0; j < needle.size() && eq; ++j)
      eq = ets::detail::ascii_tolower(s[i + j]) == ets::detail::ascii_tolower(needle[j]);
    if (eq) return true;
  }
  return false;
}

// "ProfilerStep#12", "iteration 3", "iter_3", "step 7" (case-insensitive): the iteration markers we recognise.
// Under emit_nvtx a record_function range is spelt like an op ("ProfilerStep#3, op_id = 5"): the marker is the
// text before the first comma, as an op's name is.
bool iteration_marker(std::string_view text, std::int64_t& index) {
  text = text.substr(0, text.find(','));
  static constexpr std::string_view prefixes[] = {"ProfilerStep#", "iteration", "iter", "step"};
  for (std::string_view p : prefixes) {
    if (text.size() <= p.size()) continue;
    bool eq = true;
    for (std::size_t i = 0; i < p.size() && eq; ++i)
      eq = ets::detail::ascii_tolower(text[i]) == ets::detail::ascii_tolower(p[i]);
    if (!eq) continue;
    std::string_view rest = text.substr(p.size());
    while (!rest.empty() && (rest.front() == ' ' || rest.front() == '_' || rest.front() == '#' || rest.front() == ':'))
      rest.remove_prefix(1);
    if (rest.empty() || !std::all_of(rest.begin(), rest.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      continue;
    if (rest.size() > 18) continue;
    index = std::stoll(std::string(rest));
    return true;
  }
  return false;
}

// torch.autograd.profiler.emit_nvtx spells ranges "aten::conv2d, seq = 12, op_id = 3, sizes = [[2, 3], []]".
std::string_view range_op_name(std::string_view text) { return text.substr(0, text.find(',')); }

std::int64_t range_seq(std::string_view text) {
  const auto p = text.find("seq = ");
  if (p == std::string_view::npos) return -1;
  std::int64_t v = 0;
  bool any = false;
  for (std::size_t i = p + 6; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) && v < (1LL << 58); ++i) {
    v = v * 10 + (text[i] - '0');
    any = true;
  }
  return any ? v : -1;
}

// "sizes = [[2, 3, 4], [], [5]]" -> tensor inputs (dtype unknown; empty lists are non-tensor arguments).
std::vector<TensorInfo> range_sizes(std::string_view text) {
  std::vector<TensorInfo> out;
  const auto p = text.find("sizes = [");
  if (p == std::string_view::npos) return out;
  std::size_t i = p + 9;
  int depth = 1;
  TensorInfo cur;
  std::int64_t num = 0;
  bool in_num = false;
  for (; i < text.size() && depth > 0; ++i) {
    const char c = text[i];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      if (num < (1LL << 58)) num = num * 10 + (c - '0');
      in_num = true;
      continue;
    }
    if (in_num) {
      if (depth == 2) cur.dims.push_back(num);
      num = 0;
      in_num = false;
    }
    if (c == '[') {
      if (++depth == 2) cur = TensorInfo{};
    } else if (c == ']') {
      if (depth-- == 2 && !cur.dims.empty()) out.push_back(cur);
    }
  }
  return out;
}

bool has_table(sqlite3* db, const std::string& path, const char* name) {
  // Tables only: a view computes its rows (a recursive one without bound), so a file's size would not bound what
  // reading it costs; views are also switched off on the connection (from_db).
  Stmt s = prepare(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1", path);
  sqlite3_bind_text(s.get(), 1, name, -1, SQLITE_STATIC);
  bool found = false;
  each_row(db, s.get(), path, "listing tables", [&](sqlite3_stmt*) { found = true; });
  return found;
}

struct OpBuild {
  const Range* range;
  std::vector<Kernel> kernels;
};

std::vector<ExecutionTrace> from_db(sqlite3* db, const std::string& path) {
#ifdef SQLITE_DBCONFIG_ENABLE_VIEW
  sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_VIEW, 0, nullptr);
#endif
  // SQLite takes a page's cell pointers as it finds them: one past the page's end read whatever memory lay beyond
  // it, so a damaged export gave rows on some runs and SQLITE_CORRUPT on others, as the process's address layout
  // fell (SQLite 3.40; found by fuzzing). Checking every cell of a page as it is loaded refuses it on every run.
  if (sqlite3_exec(db, "PRAGMA cell_size_check = ON", nullptr, nullptr, nullptr) != SQLITE_OK)
    sql_fail(db, sqlite3_errcode(db), path, "PRAGMA cell_size_check");
  if (!has_table(db, path, "CUPTI_ACTIVITY_KIND_KERNEL"))
    ETS_THROW(Errc::unsupported, "ets.nsight.3",
              "'{}' has no CUPTI_ACTIVITY_KIND_KERNEL table: the capture recorded no GPU kernels", path);
  for (const char* t : {"CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS", "StringIds"})
    if (!has_table(db, path, t))
      ETS_THROW(Errc::unsupported, "ets.nsight.4", "'{}' has no {} table, which ETS needs to form ops", path, t);

  // Kernels by (process, correlation id): in a capture of several processes (torchrun) each reuses the same ids.
  // An export without the kernel's process (globalPid) joins by correlation id alone.
  std::unordered_multimap<CorrKey, Kernel, CorrKeyHash> kernels;
  bool by_process = true;
  {
    // the richest query the export's columns allow: the process (globalPid) and the GPU (deviceId) are optional
    static constexpr const char* kQueries[] = {
        "SELECT start, end, correlationId, globalPid, deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL "
        "WHERE correlationId IS NOT NULL",
        "SELECT start, end, correlationId, globalPid, -1 FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE correlationId IS NOT NULL",
        "SELECT start, end, correlationId, 0, deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE correlationId IS NOT NULL",
        "SELECT start, end, correlationId, 0, -1 FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE correlationId IS NOT NULL"};
    Stmt s;
    for (std::size_t q = 0; q < std::size(kQueries) && !s; ++q) {
      s = prepare(db, kQueries[q], path, q + 1 == std::size(kQueries));  // the last one must work
      by_process = q < 2;
    }
    each_row(db, s.get(), path, "reading kernels", [&](sqlite3_stmt* r) {
      const Kernel k{sqlite3_column_int64(r, 0), sqlite3_column_int64(r, 1),
                     sqlite3_column_type(r, 4) == SQLITE_NULL ? -1 : sqlite3_column_int64(r, 4)};
      if (k.end >= k.start)
        kernels.emplace(CorrKey{process_of(sqlite3_column_int64(r, 3)), sqlite3_column_int64(r, 2)}, k);
    });
  }
  const auto key_of = [&](const Launch& l) { return CorrKey{by_process ? process_of(l.tid) : 0, l.corr}; };
  std::vector<Launch> launches;
  {
    Stmt s = prepare(db,
                     "SELECT start, end, globalTid, correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME "
                     "WHERE correlationId IS NOT NULL",
                     path);
    each_row(db, s.get(), path, "reading runtime calls", [&](sqlite3_stmt* r) {
      const Launch l{sqlite3_column_int64(r, 0), sqlite3_column_int64(r, 1), sqlite3_column_int64(r, 2),
                     sqlite3_column_int64(r, 3)};
      if (kernels.find(key_of(l)) != kernels.end()) launches.push_back(l);  // count() walks every equal key
    });
  }
  std::vector<Range> ranges;
  {
    // Push/pop (59) and start/end (60) ranges; text inline or, in newer exports, through StringIds. The strings
    // are looked up here, not joined in SQL: a join multiplies rows where ids repeat (n events and n StringIds
    // rows of one id gave n² ranges); the first row of an id counts.
    const char* range_cols = "FROM NVTX_EVENTS WHERE end IS NOT NULL AND eventType IN (59, 60)";
    Stmt s = prepare(db, std::string("SELECT start, end, globalTid, text, textId ") + range_cols, path, false);
    const bool with_ids = static_cast<bool>(s);
    if (!with_ids) s = prepare(db, std::string("SELECT start, end, globalTid, text, NULL ") + range_cols, path);
    std::unordered_map<std::int64_t, std::string> strings;
    if (with_ids) {
      Stmt ids = prepare(db,
                         "SELECT id, value FROM StringIds WHERE id IN "
                         "(SELECT textId FROM NVTX_EVENTS WHERE textId IS NOT NULL)",
                         path);
      each_row(db, ids.get(), path, "reading NVTX strings",
               [&](sqlite3_stmt* r) { strings.emplace(sqlite3_column_int64(r, 0), column_text(r, 1)); });
    }
    each_row(db, s.get(), path, "reading NVTX ranges", [&](sqlite3_stmt* r) {
      Range g{sqlite3_column_int64(r, 0), sqlite3_column_int64(r, 1), sqlite3_column_int64(r, 2), {}};
      if (g.end < g.start) return;
      if (sqlite3_column_type(r, 3) != SQLITE_NULL) {
        g.text = column_text(r, 3);
      } else if (sqlite3_column_type(r, 4) != SQLITE_NULL) {
        const auto it = strings.find(sqlite3_column_int64(r, 4));
        if (it != strings.end()) g.text = it->second;
      }
      ranges.push_back(std::move(g));
    });
  }
  // GPU names by device id, in table order (the first row names the device when the kernels' is not known)
  std::vector<std::pair<std::int64_t, std::string>> gpus;
  if (has_table(db, path, "TARGET_INFO_GPU")) {
    Stmt s = prepare(db, "SELECT id, name FROM TARGET_INFO_GPU ORDER BY rowid", path, false);
    if (!s) s = prepare(db, "SELECT -1, name FROM TARGET_INFO_GPU ORDER BY rowid", path, false);
    if (s)
      each_row(db, s.get(), path, "reading the GPU name", [&](sqlite3_stmt* r) {
        gpus.emplace_back(sqlite3_column_type(r, 0) == SQLITE_NULL ? -1 : sqlite3_column_int64(r, 0), column_text(r, 1));
      });
  }

  std::vector<CudaDevice> cuda_devices;
  if (has_table(db, path, "TARGET_INFO_CUDA_DEVICE")) {
    Stmt s = prepare(db, "SELECT gpuId, cudaId, pid FROM TARGET_INFO_CUDA_DEVICE", path, false);
    if (s)
      each_row(db, s.get(), path, "reading the CUDA devices", [&](sqlite3_stmt* r) {
        if (sqlite3_column_type(r, 0) != SQLITE_NULL)
          cuda_devices.push_back({sqlite3_column_int64(r, 0), sqlite3_column_int64(r, 1), sqlite3_column_int64(r, 2)});
      });
  }

  // Split ranges into iteration markers and op candidates. When the capture names operators ("aten::..."),
  // module / user ranges wrapping them are not ops.
  std::vector<Range> iterations;
  std::vector<std::int64_t> iteration_index;
  std::vector<const Range*> candidates;
  bool qualified = false;
  for (const auto& g : ranges) qualified = qualified || g.text.find("::") != std::string::npos;
  for (const auto& g : ranges) {
    std::int64_t idx = 0;
    if (iteration_marker(g.text, idx)) {
      iterations.push_back(g);
      iteration_index.push_back(idx);
    } else if (!qualified || g.text.find("::") != std::string::npos || g.text.find("Backward") != std::string::npos) {
      candidates.push_back(&g);
    }
  }
  // Outermost candidates per thread: sorted by (tid, start, longer first), a range inside the current outer one is not.
  std::sort(candidates.begin(), candidates.end(), [](const Range* a, const Range* b) {
    if (a->tid != b->tid) return a->tid < b->tid;
    if (a->start != b->start) return a->start < b->start;
    return a->end > b->end;
  });
  std::vector<const Range*> outer;
  for (const Range* g : candidates) {
    if (!outer.empty() && outer.back()->tid == g->tid && g->start >= outer.back()->start && g->end <= outer.back()->end)
      continue;
    outer.push_back(g);
  }
  // Attribute each launch to the outermost op range on its thread that contains it.
  std::map<const Range*, OpBuild> ops;
  for (const auto& l : launches) {
    auto it = std::upper_bound(outer.begin(), outer.end(), l, [](const Launch& x, const Range* g) {
      return x.tid != g->tid ? x.tid < g->tid : x.start < g->start;
    });
    if (it == outer.begin()) continue;
    const Range* g = *std::prev(it);
    if (g->tid != l.tid || l.start < g->start || l.end > g->end) continue;
    // A launch's kernels are taken once: a second launch of the same id (malformed) gets none, instead of a copy of
    // all of them each (n launches × k kernels of one id); a range holding only such launches is no op.
    const auto [lo, hi] = kernels.equal_range(key_of(l));
    if (lo == hi) continue;
    auto& b = ops[g];
    b.range = g;
    for (auto k = lo; k != hi; ++k) b.kernels.push_back(k->second);
    kernels.erase(lo, hi);
  }
  if (ops.empty())
    ETS_THROW(Errc::invalid_trace, "ets.nsight.6",
              "'{}': no NVTX range contains a kernel launch ({} ranges, {} launches, {} kernels); "
              "capture with NVTX ranges around operators (e.g. torch.autograd.profiler.emit_nvtx)",
              path, ranges.size(), launches.size(), kernels.size());
  // One process per import, as with a Kineto file (one rank): the processes of a multi-process capture run their
  // iterations side by side, and their ops in one sequence would be neither's. The one kept is the one with
  // iteration markers, and of those (or of all, without markers) the one with the most ops.
  std::int64_t chosen = 0;  // the imported process (its global id: the pid in bits 24-47)
  {
    std::map<std::int64_t, std::pair<bool, std::size_t>> processes;  // process -> (has markers, ops)
    for (const auto& [g, b] : ops) ++processes[process_of(g->tid)].second;
    for (const auto& m : iterations)
      if (auto it = processes.find(process_of(m.tid)); it != processes.end()) it->second.first = true;
    chosen = std::max_element(processes.begin(), processes.end(), [](const auto& a, const auto& b) {
               return a.second < b.second;
             })->first;
    for (auto it = ops.begin(); it != ops.end();) it = process_of(it->first->tid) == chosen ? std::next(it) : ops.erase(it);
    // Its iteration markers only: another process's (also one without operator ranges that still marks its loop)
    // would split its iterations at that process's own, slightly different, times.
    const std::size_t markers = iterations.size();
    iterations_of_process(iterations, iteration_index, chosen);
    if (processes.size() > 1)
      log(LogLevel::warn,
          "[ets.nsight.8] '{}': kernels launched by {} processes; importing process {} ({} ops, the {}), as one "
          "import holds one process",
          path, processes.size(), (static_cast<std::uint64_t>(chosen) >> 24) & 0xFFFFFF, ops.size(),
          processes[chosen].first ? "one with iteration markers and the most ops" : "one with the most ops");
    else if (iterations.size() < markers)
      log(LogLevel::warn,
          "[ets.nsight.8] '{}': {} of {} iteration markers belong to processes without operator ranges and are "
          "not used, as one import holds one process",
          path, markers - iterations.size(), markers);
  }

  // The device: the GPU most of the imported kernels ran on (a machine lists every GPU it has, in any order, and
  // the job may have run on any of them); the table's first GPU when the kernels' device is not recorded. A
  // kernel's deviceId is its process's CUDA index, which TARGET_INFO_CUDA_DEVICE maps to the GPU's id; an export
  // without that table (or without the process's row) is read as if the two were the same.
  std::string device;
  {
    std::map<std::int64_t, std::size_t> kernels_on;
    for (const auto& [g, b] : ops)
      for (const Kernel& k : b.kernels) ++kernels_on[k.device];
    const auto most = std::max_element(kernels_on.begin(), kernels_on.end(),
                                       [](const auto& a, const auto& b) { return a.second < b.second; });
    std::int64_t gpu_id = most != kernels_on.end() ? most->first : -1;
    if (gpu_id >= 0) {
      // the imported process's row; without the kernels' process (or its row), one that every process agrees on
      const std::int64_t pid = static_cast<std::int64_t>((static_cast<std::uint64_t>(chosen) >> 24) & 0xFFFFFF);
      std::set<std::int64_t> own, any;
      for (const CudaDevice& d : cuda_devices)
        if (d.cuda == gpu_id) (by_process && d.pid == pid ? own : any).insert(d.gpu);
      if (own.size() == 1) gpu_id = *own.begin();
      else if (own.empty() && any.size() == 1) gpu_id = *any.begin();
    }
    const auto named = std::find_if(gpus.begin(), gpus.end(), [&](const auto& gpu) {
      return gpu_id >= 0 && gpu.first == gpu_id;
    });
    if (named != gpus.end()) device = named->second;
    else if (!gpus.empty()) device = gpus.front().second;
  }
  check_meta_field("device", device, path);  // every iteration keeps a copy of the name

  // Phase markers: user ranges that say backward / optimizer (e.g. record_function("backward")).
  std::vector<const Range*> backward_marks, update_marks;
  for (const auto& g : ranges) {
    if (icontains(g.text, "optimizer")) update_marks.push_back(&g);
    else if (icontains(g.text, "backward") && g.text.find("::") == std::string::npos) backward_marks.push_back(&g);
  }
  const Marks in_update(update_marks), in_backward(backward_marks);
  // The optimizer, as the other readers name it: the earliest range torch writes as Optimizer.step#<class>.step
  // (emit_nvtx appends ", seq = ..." and the like after a comma).
  std::string optimizer;
  std::int64_t optimizer_start = std::numeric_limits<std::int64_t>::max();
  for (const auto& g : ranges) {
    const std::string_view text = std::string_view(g.text).substr(0, g.text.find(','));
    if (g.start < optimizer_start)
      if (std::string c = torch_optimizer_class(text); !c.empty()) optimizer = std::move(c), optimizer_start = g.start;
  }
  check_meta_field("optimizer", optimizer, path);

  struct Built {
    OpRecord rec;
    std::int64_t cpu_start, kstart, kend;
  };
  std::vector<Built> built;
  built.reserve(ops.size());
  for (auto& [g, b] : ops) {
    Built x;
    const std::string_view raw = range_op_name(g->text);
    bool backward = false;
    x.rec.raw_name = std::string(raw);
    x.rec.inputs = range_sizes(g->text);
    const auto& in = x.rec.inputs;
    const auto rank = [&](std::size_t i) { return in.size() > i ? static_cast<int>(in[i].dims.size()) : -1; };
    x.rec.name = normalize_op_name_by_args(raw, &backward, rank(1), rank(2));
    // A non-operator range that is itself an op says its phase by its own name too, as one around it would (a
    // capture without operator ranges, where a hand-placed "backward" or "optimizer.step" range is the op); an
    // operator's own name (aten::optimizer_like_op) says nothing of the phase.
    const bool own_name = g->text.find("::") == std::string::npos;
    if (in_update.contain(*g) || (own_name && icontains(g->text, "optimizer"))) x.rec.phase = Phase::Update;
    else if (backward || in_backward.contain(*g) || (own_name && icontains(g->text, "backward")))
      x.rec.phase = Phase::Backward;
    {
      // Hyper-parameters and analytic FLOPs from the recorded shapes, as the Kineto reader derives them from the
      // same shapes (bytes stay unknown: no dtype is recorded). The inputs stay as recorded.
      RawArgs args;
      for (const TensorInfo& t : x.rec.inputs) args.dims.push_back(t.dims);
      std::vector<TensorInfo> recorded = x.rec.inputs;
      fill_from_args(x.rec, args);
      x.rec.inputs = std::move(recorded);
      fill_analytic(x.rec);
    }
    x.rec.sequence = range_seq(g->text);
    x.kstart = b.kernels.front().start;
    x.kend = b.kernels.front().end;
    std::int64_t busy = 0;
    for (const auto& k : b.kernels) {
      x.kstart = std::min(x.kstart, k.start);
      x.kend = std::max(x.kend, k.end);
      if (__builtin_add_overflow(busy, ns_diff(k.end, k.start, path), &busy))
        ETS_THROW(Errc::invalid_trace, "ets.nsight.6", "'{}': the kernels of one op add up past 64-bit nanoseconds", path);
    }
    x.rec.kernels = static_cast<std::uint32_t>(b.kernels.size());
    x.rec.time_us = static_cast<double>(busy) / 1000.0;
    x.rec.start_us = static_cast<double>(x.kstart) / 1000.0;
    x.cpu_start = g->start;
    built.push_back(std::move(x));
  }

  // Iterations: ops whose CPU range starts inside an iteration marker; without markers, one iteration.
  std::vector<std::size_t> order(iterations.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return iterations[a].start < iterations[b].start; });
  struct Group {
    std::int64_t index = 0;
    double measured = kUnknown;
    std::int64_t marker_end = std::numeric_limits<std::int64_t>::min();  // the iteration range's end, when there is one
    std::size_t position = 0;  // among the iteration ranges, by start
    std::vector<Built*> ops;
  };
  std::vector<Group> groups;
  if (iterations.empty()) {
    groups.emplace_back();
    for (auto& x : built) groups.back().ops.push_back(&x);
  } else {
    for (std::size_t i : order) {
      Group gr;
      gr.index = iteration_index[i];
      gr.measured = static_cast<double>(ns_diff(iterations[i].end, iterations[i].start, path)) / 1000.0;
      gr.marker_end = iterations[i].end;
      gr.position = groups.size();
      groups.push_back(std::move(gr));
    }
    // Each op joins the first iteration (in start order) that holds its start. Taken by start, an iteration that
    // ended before one op ended before every later one too, so it is passed over from then on (forwarding links
    // with path compression): trying every iteration for every op was quadratic (40,000 steps: seconds).
    std::vector<std::size_t> by_start(built.size());
    for (std::size_t i = 0; i < by_start.size(); ++i) by_start[i] = i;
    std::sort(by_start.begin(), by_start.end(),
              [&](std::size_t a, std::size_t b) { return built[a].cpu_start < built[b].cpu_start; });
    SkipLinks ended(order.size());  // an iteration found ended links to the next one
    const auto first_open_from = [&](std::size_t j) {  // order.size(): none
      const std::int64_t r = j < order.size() ? ended.find(static_cast<std::int64_t>(j)) : -1;
      return r < 0 ? order.size() : static_cast<std::size_t>(r);
    };
    std::vector<std::size_t> group_of(built.size(), order.size());  // order.size(): none
    for (std::size_t i : by_start) {
      const std::int64_t cs = built[i].cpu_start;
      // iterations [0, started) start at or before the op
      const std::size_t started = static_cast<std::size_t>(
          std::upper_bound(order.begin(), order.end(), cs,
                           [&](std::int64_t t, std::size_t k) { return t < iterations[k].start; }) -
          order.begin());
      std::size_t j = first_open_from(0);
      while (j < started && !(cs < iterations[order[j]].end)) {
        ended.close(static_cast<std::int64_t>(j), j + 1 < order.size() ? static_cast<std::int64_t>(j + 1) : -1);
        j = first_open_from(j + 1);
      }
      if (j < started) group_of[i] = j;
    }
    for (std::size_t i = 0; i < built.size(); ++i)
      if (group_of[i] < order.size()) groups[group_of[i]].ops.push_back(&built[i]);
    std::vector<std::int64_t> unreturned;  // iteration ranges without an op: said once, unless none has one
    for (const Group& g : groups)
      if (g.ops.empty()) unreturned.push_back(g.index);
    groups.erase(std::remove_if(groups.begin(), groups.end(), [](const Group& g) { return g.ops.empty(); }),
                 groups.end());
    if (groups.empty())
      ETS_THROW(Errc::invalid_trace, "ets.nsight.6", "'{}': no op range lies inside an iteration range", path);
    warn_unreturned_steps(unreturned, path, "with device work");
  }
  for (auto& g : groups)
    std::sort(g.ops.begin(), g.ops.end(), [](const Built* a, const Built* b) {
      return a->kstart != b->kstart ? a->kstart < b->kstart : a->cpu_start < b->cpu_start;
    });

  std::vector<ExecutionTrace> out;
  for (std::size_t gi = 0; gi < groups.size(); ++gi) {
    auto& g = groups[gi];
    ExecutionTrace t;
    t.meta.source_format = "nsight";
    t.meta.source_path = path;
    t.meta.device = device;
    t.meta.optimizer = optimizer;
    t.iteration = iterations.empty() ? 0 : g.index;
    t.start_us = static_cast<double>(g.ops.front()->kstart) / 1000.0;
    std::int64_t last_end = std::numeric_limits<std::int64_t>::min();  // timestamps may be negative
    for (const Built* x : g.ops) last_end = std::max(last_end, x->kend);
    // The iteration ends where the next one's first kernel starts. The last one, and one whose next iteration range
    // holds no op, at the later of its last kernel's end and its range's end (the next step's first kernel comes
    // after both), as in Kineto: not at a later range's first kernel, which would count the ranges between in its
    // last gap.
    const bool successor = gi + 1 < groups.size() && groups[gi + 1].position == g.position + 1;
    std::int64_t end = successor ? groups[gi + 1].ops.front()->kstart : std::max(last_end, g.marker_end);
    if (!successor && gi + 1 < groups.size()) end = std::min(end, groups[gi + 1].ops.front()->kstart);
    for (std::size_t i = 0; i < g.ops.size(); ++i) {
      OpRecord rec = std::move(g.ops[i]->rec);
      const std::int64_t next = i + 1 < g.ops.size() ? g.ops[i + 1]->kstart : end;
      rec.gap_us = static_cast<double>(ns_diff(next, g.ops[i]->kstart, path)) / 1000.0 - rec.time_us;
      t.ops.push_back(std::move(rec));
    }
    t.measured_us =
        iterations.empty() ? static_cast<double>(ns_diff(end, g.ops.front()->kstart, path)) / 1000.0 : g.measured;
    out.push_back(std::move(t));
  }
  return out;
}

void check_magic(std::string_view head, const std::string& path) {
  if (head.substr(0, kSqliteMagic.size()) != kSqliteMagic)
    ETS_THROW(Errc::parse, "ets.nsight.2", "'{}' is not an SQLite database (bad header)", path);
}

}  // namespace

std::vector<ExecutionTrace> read_nsight_sqlite(const std::string& path, const Options&) {
  bool wal = false;
  {
    const ets::detail::UniqueFile in(ets::detail::fopen_cloexec(path.c_str(), "rb"));  // close-on-exec
    if (!in) ETS_THROW(Errc::io, "ets.nsight.1", "cannot open '{}'", path);
    char head[20] = {};
    const std::size_t got = std::fread(head, 1, sizeof head, in.get());
    check_magic(std::string_view(head, got), path);
    wal = got == sizeof head && head[18] == 2;  // file format read version 2: WAL mode
  }
  // A WAL-mode database makes even a read-only connection create -wal / -shm files beside it (and fail in a
  // read-only directory). Without a -wal file there is nothing unmerged to read, so open it as immutable.
  std::error_code ec;
  const bool immutable = wal && !std::filesystem::exists(path + "-wal", ec);
  std::string uri;
  if (immutable) {
    uri = "file:";
    for (const char c : path) {
      if (c == '%' || c == '?' || c == '#') uri += fmt::format("%{:02X}", static_cast<unsigned char>(c));
      else uri += c;
    }
    uri += "?immutable=1";
  }
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(immutable ? uri.c_str() : path.c_str(), &raw,
                                 SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | (immutable ? SQLITE_OPEN_URI : 0), nullptr);
  Db db(raw);
  if (rc != SQLITE_OK)
    ETS_THROW(Errc::io, "ets.nsight.1", "cannot open '{}' read-only: {}", path, raw ? sqlite3_errmsg(raw) : "out of memory");
  return from_db(db.get(), path);
}

std::vector<ExecutionTrace> read_nsight_sqlite_bytes(std::string_view bytes, const std::string& path, const Options&) {
  check_magic(bytes, path);
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(":memory:", &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr);
  Db db(raw);
  if (rc != SQLITE_OK) ETS_THROW(Errc::internal, "ets.nsight.7", "cannot open an in-memory SQLite database");
  auto* buf = static_cast<unsigned char*>(sqlite3_malloc64(bytes.size()));
  if (!buf) ETS_THROW(Errc::internal, "ets.nsight.7", "out of memory copying '{}' ({} bytes)", path, bytes.size());
  std::memcpy(buf, bytes.data(), bytes.size());
  // An in-memory database cannot be in WAL mode (every query would fail with "unable to open database file"), and
  // an image of the file carries no -wal content to merge: read it as the rollback-journal database it then is.
  if (bytes.size() >= 20 && buf[18] == 2 && buf[19] == 2) buf[18] = buf[19] = 1;
  // FREEONCLOSE hands buf to SQLite even when deserialize fails.
  if (sqlite3_deserialize(db.get(), "main", buf, static_cast<sqlite3_int64>(bytes.size()),
                          static_cast<sqlite3_int64>(bytes.size()),
                          SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_READONLY) != SQLITE_OK)
    ETS_THROW(Errc::parse, "ets.nsight.2", "'{}' is not a readable SQLite database ({})", path, sqlite3_errmsg(db.get()));
  return from_db(db.get(), path);
}

}  // namespace ets::import
