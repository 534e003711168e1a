// PyTorch profiler / Kineto Chrome-trace reader (CPU-only and GPU; 2021 and current schemas) on simdjson ondemand.
// One pass collects host spans, launches, device activities and step markers; gpu_assembly turns them into iterations.
#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <simdjson.h>

#include "parse_number.hpp"
#include "ets/error.hpp"
#include "ets/log.hpp"
#include "import/gpu_assembly.hpp"
#include "import/importers.hpp"
#include "import/json_cpu_check.hpp"
#include "import/op_normalize.hpp"

namespace ets::import {
namespace {

namespace od = simdjson::ondemand;

constexpr std::int64_t kNoId = -1;
constexpr std::int64_t kBadPid = std::numeric_limits<std::int64_t>::min();

enum class Cat : std::uint8_t { Other, Host, Launch, Kernel, Memcpy, Memset, Flow };

Cat classify(std::string_view c) {
  switch (c.size()) {
    case 6:
      if (c == "cpu_op" || c == "Kernel" || c == "Memcpy" || c == "Memset")
        return c == "cpu_op" ? Cat::Host : c == "Kernel" ? Cat::Kernel : c == "Memcpy" ? Cat::Memcpy : Cat::Memset;
      break;
    case 8:
      if (c == "Operator") return Cat::Host;
      break;
    case 7:
      if (c == "Runtime") return Cat::Launch;
      break;
    case 4:
      if (c == "ac2g") return Cat::Flow;
      break;
    case 5:
      if (c == "async") return Cat::Flow;
      break;
    default:
      break;
  }
  if (c == "kernel") return Cat::Kernel;
  if (c == "gpu_memcpy") return Cat::Memcpy;
  if (c == "gpu_memset") return Cat::Memset;
  if (c == "user_annotation") return Cat::Host;
  if (c == "cuda_runtime" || c == "cuda_driver" || c == "hip_runtime") return Cat::Launch;
  if (c == "async_cpu_to_gpu") return Cat::Flow;
  return Cat::Other;
}

// "stream 7" -> 7, "25738" -> 25738; other strings hash (their own thread); pids like "Traces" are not processes.
std::int64_t id_from_string(std::string_view s, bool is_pid) {
  std::uint64_t v = 0;  // unsigned: an over-long digit string wraps instead of overflowing
  bool digits = false;
  for (char c : s) {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      v = v * 10 + static_cast<unsigned>(c - '0');
      digits = true;
    } else if (digits) {
      break;
    }
  }
  if (digits) return static_cast<std::int64_t>(v & 0x7FFFFFFFFFFFFFFFull);
  if (is_pid) return kBadPid;
  return static_cast<std::int64_t>(std::hash<std::string_view>{}(s) >> 2) + (std::int64_t{1} << 60);
}

// double -> int64 without UB: NaN and values outside ±2^62 give the fallback.
std::int64_t to_i64(double d, std::int64_t fallback) {
  return d > -4.6e18 && d < 4.6e18 ? static_cast<std::int64_t>(d) : fallback;
}

std::int64_t get_id(od::value v, bool is_pid) {
  od::json_type t;
  if (v.type().get(t)) return is_pid ? kBadPid : 0;
  if (t == od::json_type::number) {
    std::int64_t i;
    if (!v.get_int64().get(i)) return i;
    double d;
    if (!v.get_double().get(d)) return to_i64(d, is_pid ? kBadPid : 0);
    return 0;
  }
  if (t == od::json_type::string) {
    std::string_view s;
    if (!v.get_string().get(s)) return id_from_string(s, is_pid);
  }
  return is_pid ? kBadPid : 0;
}

// Timestamps are µs with optional fraction; parsing the token into integer ns keeps ns resolution that a double
// of an epoch-µs value (~1.7e15) cannot hold.
enum class Ts : std::uint8_t { Ok, Bad, OutOfRange };
constexpr std::int64_t kMaxUs = 4'000'000'000'000'000;  // beyond year 2096 in epoch µs: differences stay in range
// A "dur" longer than this (11.6 days, longer than any capture) is not a duration: read as 0, as a negative one.
// (1e300 was taken, and an end of 1e300 leaves every busy-time sum after it without precision.)
constexpr double kMaxDurUs = 1e12;

Ts parse_ts_ns(od::value v, std::int64_t& ns) {
  std::string_view tok = v.raw_json_token();
  while (!tok.empty() && (tok.back() == ' ' || tok.back() == '\n' || tok.back() == '\r' || tok.back() == '\t' ||
                          tok.back() == ',' || tok.back() == '}'))
    tok.remove_suffix(1);
  if (!tok.empty() && tok.front() == '"') {  // quoted timestamps occur in hand-edited files
    tok.remove_prefix(1);
    if (!tok.empty() && tok.back() == '"') tok.remove_suffix(1);
  }
  bool neg = false;
  std::size_t i = 0;
  if (i < tok.size() && tok[i] == '-') neg = true, ++i;
  std::int64_t whole = 0;
  std::size_t start = i;
  for (; i < tok.size() && std::isdigit(static_cast<unsigned char>(tok[i])); ++i) {
    whole = whole * 10 + (tok[i] - '0');
    if (whole > kMaxUs) return Ts::OutOfRange;
  }
  if (i == start) return Ts::Bad;
  std::int64_t frac = 0;
  int fd = 0;
  if (i < tok.size() && tok[i] == '.') {
    ++i;
    for (; i < tok.size() && std::isdigit(static_cast<unsigned char>(tok[i])); ++i)
      if (fd < 3) frac = frac * 10 + (tok[i] - '0'), ++fd;
    while (fd < 3) frac *= 10, ++fd;
  }
  if (i < tok.size() && (tok[i] == 'e' || tok[i] == 'E')) {
    double d;
    if (v.get_double().get(d) || std::isnan(d)) return Ts::Bad;
    if (!(std::fabs(d) <= static_cast<double>(kMaxUs))) return Ts::OutOfRange;
    ns = static_cast<std::int64_t>(std::llround(d * 1000.0));
    return Ts::Ok;
  }
  ns = whole * 1000 + frac;
  if (neg) ns = -ns;
  return Ts::Ok;
}

double get_number(od::value v, double fallback) {
  double d;
  if (!v.get_double().get(d)) return d;
  std::string_view s;
  if (!v.get_string().get(s)) {
    if (ets::detail::parse_double(s, d)) return d;
  }
  return fallback;
}

std::int64_t get_int(od::value v, std::int64_t fallback) {
  std::int64_t i;
  if (!v.get_int64().get(i)) return i;
  double d;
  if (!v.get_double().get(d)) return to_i64(d, fallback);
  return fallback;
}

// A loop over an ondemand array or object yields an error once where the text is not JSON (a key without ':', a
// missing ',', a truncated object), and then ends. Taken as the end of the loop, that silently dropped the rest of
// an event's fields and every event after it in the run; thrown, the reader reports ets.kineto.1.
template <typename Result>
void require_json(const Result& r) {
  if (r.error()) throw simdjson::simdjson_error(r.error());
}

// "Input Dims": [[2,3],[],[[1,2],[3]]] -> a TensorList contributes its first tensor's dims.
void read_dims(od::value v, std::vector<std::vector<std::int64_t>>& out) {
  od::array arr;
  if (v.get_array().get(arr)) return;
  for (auto el : arr) {
    require_json(el);
    out.emplace_back();
    od::array inner;
    if (el.get_array().get(inner)) continue;
    bool first_list = true;
    for (auto x : inner) {
      require_json(x);
      od::json_type t;
      if (x.type().get(t)) break;
      if (t == od::json_type::number) {
        std::int64_t d;
        if (!x.get_int64().get(d)) out.back().push_back(d);
      } else if (t == od::json_type::array && first_list) {
        first_list = false;
        od::array deep;
        if (!x.get_array().get(deep))
          for (auto y : deep) {
            require_json(y);
            std::int64_t d;
            if (!y.get_int64().get(d)) out.back().push_back(d);
          }
      }
    }
  }
}

void read_strings(od::value v, std::vector<std::string>& out) {
  od::array arr;
  if (v.get_array().get(arr)) return;
  for (auto el : arr) {
    require_json(el);
    std::string_view s;
    if (!el.get_string().get(s)) out.emplace_back(s);
    else out.emplace_back();
  }
}

struct Args {
  std::int64_t external = kNoId;
  std::int64_t correlation = kNoId;
  std::int64_t sequence = -1;
  std::int64_t stream = kNoId;
  std::int64_t device = kNoId;
  double flops = kUnknown;
  RawArgs raw;
  bool has_raw = false;
};

void read_args(od::object obj, Args& a, bool want_raw) {
  for (auto field : obj) {
    require_json(field);
    std::string_view k;
    if (field.unescaped_key().get(k)) continue;
    od::value v = field.value();
    switch (k.size()) {
      case 11:
        if (k == "External id" || k == "external id") a.external = get_int(v, kNoId);
        else if (k == "correlation") a.correlation = get_int(v, kNoId);
        break;
      case 6:
        if (k == "stream") a.stream = get_int(v, kNoId);
        else if (k == "device") a.device = get_int(v, kNoId);
        break;
      case 5:
        if (k == "flops") a.flops = get_number(v, kUnknown);
        break;
      case 10:
        if (k == "Input Dims" && want_raw) read_dims(v, a.raw.dims), a.has_raw = true;
        else if (k == "Input type" && want_raw) read_strings(v, a.raw.types), a.has_raw = true;
        break;
      case 15:
        if (k == "Sequence number") a.sequence = get_int(v, -1);
        else if (k == "Concrete Inputs" && want_raw) read_strings(v, a.raw.concrete);
        break;
      default:
        break;
    }
  }
}

struct Marker {
  std::int64_t pid;
  std::int64_t tid;
  double start, end;  // while reading: 0 and the duration (times are placed once the origin is known)
  std::int64_t index;     // ProfilerStep#N's N
  std::string optimizer;  // Optimizer.zero_grad# / step#: the class torch names ("sgd"), "" for a user's scope
};

struct Flow {
  std::int64_t pid, tid, ts_ns, id;
};

struct Collected {
  std::vector<CompactSpan> host;
  std::vector<std::int64_t> host_pid;
  std::vector<Launch> launches;
  std::vector<std::int64_t> launch_pid;
  // Times are kept as read (integer ns) until the origin is known: the records' starts are 0 and their ends their
  // durations while reading, and place_times() sets them.
  std::vector<std::int64_t> host_ts_ns, launch_ts_ns;
  std::vector<std::int64_t> profiler_step_ts_ns, zero_grad_ts_ns, opt_step_ts_ns;
  std::vector<DeviceActivity> device;
  std::vector<std::int64_t> device_ts_ns;  // for kernels without correlation, matched to ac2g flow ends
  std::vector<std::int64_t> device_tid;
  std::vector<Flow> flow_ends;
  std::vector<Marker> profiler_steps, zero_grads, opt_steps;
  std::unordered_map<std::int64_t, std::size_t> cpu_ops_per_pid;
  std::string optimizer;
  std::size_t bad_durations = 0;  // "dur" negative, non-finite, not a number or absurd: clamped to 0, reported once
  // complete events of the kinds read (host, launch, device) without a readable "ts": dropped, reported once;
  // out_of_range_ts of them beyond ±kMaxUs (nanoseconds written where µs belong, for one)
  std::size_t bad_ts = 0, out_of_range_ts = 0;
  // The earliest start of the complete events read (host ops and annotations, launches, device activities): times
  // are µs from it, so doubles keep ns resolution. (The first event with a "ts" could be a metadata event at 0.)
  bool origin_set = false;
  std::int64_t origin_ns = 0;
  // Where the text being parsed sits in the source: a pointer p into it is source offset p - text_base +
  // text_offset. Host ops' shape arguments are deferred by that offset (CompactSpan::args_offset); set whenever
  // events are read.
  const char* text_base = nullptr;
  std::size_t text_offset = 0;
  double rel(std::int64_t ns) const { return static_cast<double>(ns - origin_ns) / 1000.0; }
};

// The host op's name, inputs and hyper-parameters from its shape arguments ("Input Dims", "Input type",
// "Concrete Inputs"); rec.raw_name must be set.
void apply_raw_args(OpRecord& rec, const RawArgs& raw) {
  bool bwd = false;
  const auto rank = [&](std::size_t i) { return raw.dims.size() > i ? static_cast<int>(raw.dims[i].size()) : -1; };
  rec.name = normalize_op_name_by_args(rec.raw_name, &bwd, rank(1), rank(2));
  if (bwd) rec.phase = Phase::Backward;
  fill_from_args(rec, raw);
  rec.phase = bwd ? Phase::Backward : Phase::Forward;  // the assembly decides the phase from the enclosing spans
}

std::int64_t step_index(std::string_view name) {
  const auto pos = name.find('#');
  if (pos == std::string_view::npos) return -1;
  std::int64_t v = 0;
  bool any = false;
  for (std::size_t i = pos + 1; i < name.size() && std::isdigit(static_cast<unsigned char>(name[i])); ++i) {
    if (v > std::numeric_limits<std::int64_t>::max() / 10 - 10) return -1;  // not a step number
    v = v * 10 + (name[i] - '0'), any = true;
  }
  return any ? v : -1;
}

void read_event(od::object obj, Collected& c) {
  std::string_view ph, cat, name;
  std::int64_t pid = kBadPid, tid = 0, ts_ns = 0, flow_id = kNoId;
  Ts ts_state = Ts::Bad;
  bool has_ts = false;
  double dur = 0;
  Args args;
  std::size_t args_offset = 0, args_size = 0;
  // Field order differs between writers; args may precede cat, so args are read before we know the category.
  for (auto field : obj) {
    require_json(field);
    std::string_view k;
    if (field.unescaped_key().get(k)) continue;
    od::value v = field.value();
    if (k == "ph") {
      if (v.get_string().get(ph)) ph = {};
    } else if (k == "cat") {
      if (v.get_string().get(cat)) cat = {};
    } else if (k == "name") {
      if (v.get_string().get(name)) name = {};
    } else if (k == "pid") {
      pid = get_id(v, true);
    } else if (k == "tid") {
      tid = get_id(v, false);
    } else if (k == "ts") {
      ts_state = parse_ts_ns(v, ts_ns);
      has_ts = ts_state == Ts::Ok;
    } else if (k == "dur") {
      dur = get_number(v, kUnknown);
    } else if (k == "id") {
      flow_id = get_int(v, kNoId);
    } else if (k == "args") {
      // Writers put args last, so ph/cat are usually known here: skip what no rule needs (flows, instants,
      // memory events, python_function), and shapes on anything but host ops.
      if (!ph.empty() && ph != "X") continue;
      const Cat known = cat.empty() ? Cat::Host : classify(cat);
      if (known == Cat::Other || known == Cat::Flow) continue;
      // Host ops' shape arguments are only needed for the few spans that become ops: keep where they are and read
      // them in the assembly (most spans of a CPU trace are nested ops).
      const bool defer = known == Cat::Host && c.text_base != nullptr;
      const char* from = defer ? v.raw_json_token().data() : nullptr;
      od::object a;
      if (!v.get_object().get(a)) {
        read_args(a, args, known == Cat::Host && !defer);
        if (defer) {
          const char* to = nullptr;
          if (v.current_location().get(to) || to <= from)
            ETS_THROW(Errc::parse, "ets.kineto.1", "a Kineto event's \"args\" object has no end");
          args_offset = c.text_offset + static_cast<std::size_t>(from - c.text_base);
          args_size = static_cast<std::size_t>(to - from);
        }
      }
    }
  }
  if (ph.size() != 1) return;
  const Cat kind = classify(cat);
  if (!has_ts) {
    if (ph[0] == 'X' && kind != Cat::Other && kind != Cat::Flow) ++c.bad_ts, c.out_of_range_ts += ts_state == Ts::OutOfRange;
    return;
  }
  if (ph[0] == 'f' && kind == Cat::Flow) {
    c.flow_ends.push_back({pid, tid, ts_ns, flow_id});
    return;
  }
  if (ph[0] != 'X' || pid == kBadPid) return;
  if (!(dur >= 0 && dur <= kMaxDurUs)) dur = 0, ++c.bad_durations;
  if (kind == Cat::Host || kind == Cat::Launch || kind == Cat::Kernel || kind == Cat::Memcpy || kind == Cat::Memset) {
    c.origin_ns = c.origin_set ? std::min(c.origin_ns, ts_ns) : ts_ns;
    c.origin_set = true;
  }
  // Times are placed by place_times(): until then a record's start is 0 and its end its duration.
  switch (kind) {
    case Cat::Host: {
      if (name.rfind("ProfilerStep#", 0) == 0) {
        c.profiler_steps.push_back({pid, tid, 0, dur, step_index(name), {}});
        c.profiler_step_ts_ns.push_back(ts_ns);
      } else if (name.rfind("Optimizer.zero_grad#", 0) == 0) {
        c.zero_grads.push_back({pid, tid, 0, dur, -1, torch_zero_grad_class(name)});
        c.zero_grad_ts_ns.push_back(ts_ns);
      } else if (name.rfind("Optimizer.step#", 0) == 0) {
        // torch names the span of an optimizer's step "Optimizer.step#<class>.step"; a user scope that borrows the
        // prefix to count as update ("Optimizer.step#clip", trace-format.md) names no optimizer and marks no
        // iteration boundary (without ProfilerStep# spans, each optimizer step ends an iteration)
        std::string optimizer = torch_optimizer_class(name);
        if (!optimizer.empty()) {
          c.opt_steps.push_back({pid, tid, 0, dur, -1, optimizer});
          c.opt_step_ts_ns.push_back(ts_ns);
          if (c.optimizer.empty()) c.optimizer = std::move(optimizer);
        }
      }
      CompactSpan s;
      s.raw_name.assign(name.data(), name.size());
      s.start_us = 0;
      s.end_us = dur;
      s.tid = tid;
      s.id = args.external;
      s.kind = cat == "user_annotation" ? SpanKind::Scope : SpanKind::Auto;
      s.sequence = args.sequence;
      s.flops = args.flops > 0 ? args.flops : kUnknown;
      if (cat != "user_annotation") ++c.cpu_ops_per_pid[pid];
      // (no shape arguments were read: a host op's are deferred, events being parsed only with text_base set)
      s.args_offset = args_offset;
      s.args_size = args_size;
      c.host.push_back(std::move(s));
      c.host_pid.push_back(pid);
      c.host_ts_ns.push_back(ts_ns);
      break;
    }
    case Cat::Launch:
      c.launches.push_back({args.correlation, args.external, tid, 0});
      c.launch_pid.push_back(pid);
      c.launch_ts_ns.push_back(ts_ns);
      break;
    case Cat::Kernel:
    case Cat::Memcpy:
    case Cat::Memset: {
      DeviceActivity a;
      a.start_us = 0;
      a.end_us = dur;
      a.device = args.device != kNoId ? args.device : pid;
      a.stream = args.stream != kNoId ? args.stream : tid;
      a.correlation = args.correlation;
      a.host_id = args.external;
      a.kind = kind == Cat::Memcpy ? DeviceKind::Memcpy
               : kind == Cat::Memset ? DeviceKind::Memset
               : is_communication_kernel(name) ? DeviceKind::Communication
                                               : DeviceKind::Kernel;
      c.device.push_back(a);
      c.device_ts_ns.push_back(ts_ns);
      c.device_tid.push_back(tid);
      break;
    }
    default:
      break;
  }
}

// One element of "traceEvents", read as an event; false where it is no object, which the caller refuses. Skipping
// another kind is where the parser checks least: the fields of an event whose '{' is lost read as a string and text
// skipped unchecked, and the event was dropped without a word.
bool read_element(simdjson::simdjson_result<od::value>& element, Collected& c) {
  require_json(element);
  od::object o;
  if (element.get_object().get(o)) return false;
  read_event(o, c);
  return true;
}

// Sets every record's times from its ts (ns) and the origin: start = µs from the origin, end = start + duration (the
// end read holds the duration), as read_event would have with the origin known in advance.
void place_times(Collected& c) {
  const auto place = [&](double& start, double& end, std::int64_t ts_ns) {
    const double dur = end;
    start = c.rel(ts_ns);
    end = start + dur;
  };
  for (std::size_t i = 0; i < c.host.size(); ++i) place(c.host[i].start_us, c.host[i].end_us, c.host_ts_ns[i]);
  for (std::size_t i = 0; i < c.launches.size(); ++i) c.launches[i].ts_us = c.rel(c.launch_ts_ns[i]);
  for (std::size_t i = 0; i < c.device.size(); ++i) place(c.device[i].start_us, c.device[i].end_us, c.device_ts_ns[i]);
  const auto markers = [&](std::vector<Marker>& v, const std::vector<std::int64_t>& ts) {
    for (std::size_t i = 0; i < v.size(); ++i) place(v[i].start, v[i].end, ts[i]);
  };
  markers(c.profiler_steps, c.profiler_step_ts_ns);
  markers(c.zero_grads, c.zero_grad_ts_ns);
  markers(c.opt_steps, c.opt_step_ts_ns);
}

// Keeps outer markers only (some traces nest a second Optimizer.step# inside the first).
// The marker of `sorted` (disjoint, by start) on thread `tid` that holds [start, end], or nullptr.
const Marker* enclosing(const std::vector<Marker>& sorted, double start, double end, std::int64_t tid) {
  auto m = std::upper_bound(sorted.begin(), sorted.end(), start,
                            [](double t, const Marker& mk) { return t < mk.start; });
  if (m == sorted.begin()) return nullptr;
  --m;
  return m->tid == tid && end <= m->end ? &*m : nullptr;
}

std::vector<Marker> outer_only(std::vector<Marker> v, std::int64_t pid) {
  v.erase(std::remove_if(v.begin(), v.end(), [&](const Marker& m) { return m.pid != pid; }), v.end());
  std::stable_sort(v.begin(), v.end(), [](const Marker& a, const Marker& b) { return a.start < b.start; });
  std::vector<Marker> out;
  for (const Marker& m : v)
    if (out.empty() || m.start >= out.back().end) out.push_back(m);
  return out;
}

// The first optimizer class of `markers` (in time order) where several classes take turns: between two of its
// markers every other class has exactly one, and after its last at most one; "" otherwise (one class, or a loop
// that switches from one optimizer to another). Markers of a user's scope (no class) do not count.
std::string one_iteration_per_turn(const std::vector<Marker>& markers) {
  std::vector<const std::string*> turn;  // classes in time order
  for (const Marker& m : markers)
    if (!m.optimizer.empty()) turn.push_back(&m.optimizer);
  if (turn.empty()) return "";
  const std::string& first = *turn.front();
  std::vector<std::string> others;
  for (const auto* c : turn)
    if (*c != first && std::find(others.begin(), others.end(), *c) == others.end()) others.push_back(*c);
  if (others.empty()) return "";
  std::vector<int> seen(others.size(), 0);
  for (std::size_t i = 1; i <= turn.size(); ++i) {
    const bool last = i == turn.size();
    if (last || *turn[i] == first) {
      for (const int n : seen)
        if (n > 1 || (!last && n != 1)) return "";
      std::fill(seen.begin(), seen.end(), 0);
    } else {
      ++seen[static_cast<std::size_t>(std::find(others.begin(), others.end(), *turn[i]) - others.begin())];
    }
  }
  return first;
}

using ArgsLoader = std::function<void(const CompactSpan&, OpRecord&)>;
using ShapeSet = std::vector<std::vector<std::int64_t>>;

// The distinct input shapes of the ops inside each of the (time-ordered, disjoint) markers `st`: what an
// optimizer's step touched. Two optimizers over different networks differ; one optimizer touches the same shapes at
// every step (its first step creates state, but of its parameters' shapes). A marker's shapes are read when first
// asked for: one optimizer's first two steps already tell that there is no turn, so its trace reads two steps'
// arguments, not every step's.
class StepShapes {
 public:
  StepShapes(const Collected& c, std::int64_t pid, const std::vector<Marker>& st, const ArgsLoader& load)
      : c_(c), load_(load), spans_(st.size()), shapes_(st.size()) {
    for (std::size_t i = 0; i < c.host.size(); ++i) {
      const CompactSpan& h = c.host[i];
      if (c.host_pid[i] != pid || h.kind == SpanKind::Scope) continue;
      if (const Marker* m = enclosing(st, h.start_us, h.end_us, h.tid))
        spans_[static_cast<std::size_t>(m - st.data())].push_back(i);
    }
  }

  const ShapeSet& operator[](std::size_t k) {
    if (shapes_[k]) return *shapes_[k];
    ShapeSet& set = shapes_[k].emplace();
    for (const std::size_t i : spans_[k]) {
      const CompactSpan& h = c_.host[i];
      OpRecord rec = span_record(h);
      try {
        if (h.args_size > 0 && load_) load_(h, rec);
      } catch (const Error&) {
        continue;  // a nested span's arguments the import may never read: no shape to tell by, and no reason to fail
      }
      for (const TensorInfo& t : rec.inputs) set.push_back(t.dims);
    }
    std::sort(set.begin(), set.end());
    set.erase(std::unique(set.begin(), set.end()), set.end());
    return set;
  }

 private:
  const Collected& c_;
  const ArgsLoader& load_;
  std::vector<std::vector<std::size_t>> spans_;  // per marker: the host spans inside it
  std::vector<std::optional<ShapeSet>> shapes_;  // read on first use
};

// How many optimizer steps one iteration holds where several optimizers of one class take turns (a GAN's two
// Adams; a WGAN's critic stepping five times per generator step), told apart by the shapes their steps touch: the
// smallest turn p (2..8 steps) such that the steps repeat with period p, a turn holds steps of at least two
// different shapes (none without shapes), and at least two whole turns were recorded; 1 when there is none (one
// optimizer, or several over networks of the same shapes, which look alike).
std::size_t optimizer_turn(const std::vector<Marker>& st, StepShapes& shapes) {
  constexpr std::size_t kMaxTurn = 8;
  const std::size_t n = st.size();
  for (const Marker& m : st)
    if (m.optimizer.empty()) return 1;  // a user's scope among the steps: no pattern to trust
  if (shapes[0].empty()) return 1;
  bool differ = false;  // one of steps 1..p-1 has other shapes than step 0 (kept from the smaller p)
  for (std::size_t p = 2; p <= kMaxTurn && 2 * p <= n; ++p) {
    if (shapes[p - 1].empty()) return 1;
    differ = differ || shapes[p - 1] != shapes[0];
    bool ok = differ;
    for (std::size_t i = p; ok && i < n; ++i) ok = st[i].optimizer == st[i - p].optimizer && shapes[i] == shapes[i - p];
    if (ok) return p;
  }
  return 1;
}

// keep_incomplete: keep a trailing marker-derived step that has no end (Options::keep_incomplete, or a declared
// tail step: it only closes the one before and is dropped later). keep_after_last: also keep the ops after the last
// Optimizer.step#'s end (Options::keep_incomplete without a declared tail, which says where the last one ends).
// shape_turn: set to the steps per turn where optimizer_turn grouped them, else 1.
std::vector<StepSpan> make_steps(const Collected& c, std::int64_t pid, bool keep_incomplete, bool keep_after_last,
                                 const ArgsLoader& load, std::size_t& shape_turn) {
  std::vector<StepSpan> steps;
  shape_turn = 1;
  const double inf = std::numeric_limits<double>::infinity();
  auto ps = outer_only(c.profiler_steps, pid);
  if (!ps.empty()) {
    for (const Marker& m : ps) steps.push_back({m.index, m.start, m.end, m.end - m.start});
    return steps;
  }
  auto zg = outer_only(c.zero_grads, pid);
  const auto all_steps = outer_only(c.opt_steps, pid);
  // A zero_grad inside an optimizer's step is its closure's (LBFGS evaluates the loss several times a step): it
  // starts no iteration. (The steps are disjoint and sorted by start.)
  zg.erase(std::remove_if(zg.begin(), zg.end(),
                          [&](const Marker& z) { return enclosing(all_steps, z.start, z.end, z.tid) != nullptr; }),
           zg.end());
  auto st = all_steps;
  // Several optimizers of different classes (a GAN's SGD and Adam) step once each per iteration: where their
  // markers take turns, the first class delimits iterations and the others' fall inside them. (Two of one class
  // look alike, and a loop that switches optimizers keeps every marker: ProfilerStep# spans tell, trace-format.md.)
  if (const std::string cls = one_iteration_per_turn(!zg.empty() ? zg : st); !cls.empty()) {
    const auto other = [&](const Marker& m) { return !m.optimizer.empty() && m.optimizer != cls; };
    zg.erase(std::remove_if(zg.begin(), zg.end(), other), zg.end());
    st.erase(std::remove_if(st.begin(), st.end(), other), st.end());
  } else if (st.size() >= 4) {
    // Several optimizers of one class, told apart by their shapes: the first of each turn delimits iterations.
    // Zero_grad markers follow suit where each step has one (just before it, or all of a turn's at its top, as a
    // GAN loop that zeroes both networks first); one a turn already delimits it; any other count delimits nothing
    // for sure, so the steps do.
    StepShapes shapes(c, pid, st, load);
    if (const std::size_t turn = optimizer_turn(st, shapes); turn > 1) {
      const auto every_turn = [turn](std::vector<Marker>& v) {
        std::size_t k = 0;
        v.erase(std::remove_if(v.begin(), v.end(), [&](const Marker&) { return k++ % turn != 0; }), v.end());
      };
      if (zg.size() == st.size()) every_turn(zg);
      else if (zg.size() * turn != st.size()) zg.clear();
      every_turn(st);
      shape_turn = turn;
    }
  }
  if (!zg.empty()) {
    for (std::size_t k = 0; k < zg.size(); ++k) {
      if (k + 1 < zg.size()) {
        steps.push_back({static_cast<std::int64_t>(k), zg[k].start, zg[k + 1].start, zg[k + 1].start - zg[k].start});
      } else {
        double end = -inf;  // every optimizer's step: the others' come after the first's
        for (const Marker& m : all_steps)
          if (m.start >= zg[k].start) end = std::max(end, m.end);
        if (std::isfinite(end)) steps.push_back({static_cast<std::int64_t>(k), zg[k].start, end, end - zg[k].start});
        else if (keep_incomplete) steps.push_back({static_cast<std::int64_t>(k), zg[k].start, inf, kUnknown});
      }
    }
    return steps;
  }
  if (!st.empty()) {
    // the iterations the markers close on one side only: the first (no start: it runs to the first step's end) and
    // the last (the ops after the last step's end, kept as the zero_grad rule keeps its last)
    if (keep_incomplete) steps.push_back({0, -inf, st[0].end, kUnknown});
    for (std::size_t k = 1; k < st.size(); ++k)
      steps.push_back({static_cast<std::int64_t>(k), st[k - 1].end, st[k].end, st[k].end - st[k - 1].end});
    if (keep_after_last) steps.push_back({static_cast<std::int64_t>(st.size()), st.back().end, inf, kUnknown});
  }
  return steps;
}

struct Meta {
  std::int64_t rank = -1;
  std::string device, framework_version, model, family, environment, optimizer;
  std::int64_t batch_size = 0;
  std::string bad_batch_size;  // the value given, when it is not a whole number >= 0 (the size is then unknown)
  // Trailing ProfilerStep#s recorded only to close the step before them (tools/trace_export.py); -2 = unreadable.
  std::int64_t tail_steps = 0;
  // The heap the collector's worker pre-faulted, in MiB (-1: none declared, -2: unreadable): a fact of the run that
  // a label keeps, so that a re-collection (tools/collect/reproduce.py) runs as its passes did.
  std::int64_t heap_mb = -1;
};

// A whole number >= 0, as a JSON number (8, 8.0) or the decimal digits of one in a string ("8": a value passed on
// from argparse or the environment). Anything else leaves the batch size unknown and is kept for a warning: the
// batch size is a feature, so a prediction without it moves.
// A whole number >= 0 as a JSON number (3, 3.0) or the decimal digits of one in a string ("3"); -1 for anything
// else (3.7, "three", -1, an object).
std::int64_t whole_number(od::value v) {
  std::int64_t n = -1;
  std::string_view s;
  double d;
  if (!v.get_int64().get(n)) {
  } else if (!v.get_double().get(d)) {
    n = d >= 0 && d <= 9e15 && d == std::floor(d) ? static_cast<std::int64_t>(d) : -1;
  } else if (!v.get_string().get(s)) {
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size()) n = -1;
  }
  return n < 0 ? -1 : n;
}

// A value as the file writes it, for a message: at most 64 bytes, "?" for none (an object or array shows as its
// first character).
std::string shown_token(od::value v) {
  std::string_view raw = v.raw_json_token();
  while (!raw.empty() && (raw.back() == ' ' || raw.back() == '\n' || raw.back() == '\r' || raw.back() == '\t'))
    raw.remove_suffix(1);
  return raw.empty() ? std::string("?") : std::string(raw.substr(0, 64));
}

void read_batch_size(od::value v, Meta& m) {
  const std::int64_t n = whole_number(v);
  if (n >= 0) {
    m.batch_size = n;
    m.bad_batch_size.clear();
    return;
  }
  m.bad_batch_size = shown_token(v);
  m.batch_size = 0;
}

// distributedInfo.rank: a whole number >= 0 (whole_number); null leaves it unknown. Anything else (3.7, "three", -1)
// is refused: read as unknown it skipped the --rank check, and truncated (3.7 -> 3) it passed the check for another
// rank.
void read_rank(od::value v, Meta& m, const std::string& path) {
  if (v.is_null()) return;
  const std::int64_t n = whole_number(v);
  ETS_CHECK(n >= 0, Errc::invalid_trace, "ets.kineto.10", "'{}': \"distributedInfo\".\"rank\" {} is not a whole number >= 0",
            path, shown_token(v));
  m.rank = n;
}

void read_meta_object(od::object obj, Meta& m) {
  for (auto field : obj) {
    require_json(field);
    std::string_view k;
    if (field.unescaped_key().get(k)) continue;
    od::value v = field.value();
    std::string_view s;
    if (k == "framework_version" && !v.get_string().get(s)) m.framework_version = std::string(s);
    else if (k == "device" && !v.get_string().get(s)) m.device = std::string(s);
    else if (k == "model" && !v.get_string().get(s)) m.model = std::string(s);
    else if (k == "family" && !v.get_string().get(s)) m.family = std::string(s);
    else if (k == "environment" && !v.get_string().get(s)) m.environment = std::string(s);
    else if (k == "optimizer" && !v.get_string().get(s)) m.optimizer = std::string(s);
    else if (k == "batch_size") read_batch_size(v, m);
    else if (k == "tail_steps") {
      std::int64_t n;
      m.tail_steps = !v.get_int64().get(n) && n >= 0 ? n : -2;
    } else if (k == "heap_mb" && !v.is_null()) {
      const std::int64_t n = whole_number(v);
      m.heap_mb = n >= 0 ? n : -2;
    }
  }
}

// The top-level "traceEvents" array is parsed in runs of whole events of about kChunkBytes, each as its own small
// document (detail::find_array_runs): the parser's index and string buffers stay O(chunk) instead of O(file)
// (about 2.5× the file for one whole-file parse) and no padded copy of the file is made. Runs are small enough
// that the parser's buffers (~5× the run) stay in cache and are reused: 8 MiB runs spent ~40% of the import in
// page faults on fresh buffers (bench/import_throughput.cpp). A layout the scan does not recognise (escaped
// key, root not an object, unterminated string) falls back to one whole parse.
#ifndef ETS_KINETO_CHUNK_BYTES
#define ETS_KINETO_CHUNK_BYTES (std::size_t{512} << 10)
#endif
constexpr std::size_t kChunkBytes = ETS_KINETO_CHUNK_BYTES;

}  // namespace

namespace detail {
std::vector<ExecutionTrace> read_kineto_json_runs(std::string_view bytes, const std::string& path, const Options& opt,
                                                  std::size_t run_bytes) {
  require_runnable_json_parser();
  Collected c;
  Meta meta;
  bool saw_events = false;
  {
    ArrayRuns layout;
    const bool chunked = run_bytes != kWholeDocument && find_array_runs(bytes, "traceEvents", run_bytes, true, layout);
    od::parser parser;
    // Chunked: the events first, run by run, then the rest of the file with an empty "traceEvents":[] in place.
    const std::string skeleton = chunked ? text_without_array(bytes, layout) : std::string();  // padded: read in place
    try {
      if (chunked) {
        layout.cuts.push_back(layout.close);
        std::size_t begin = layout.open + 1;
        std::string run;
        for (std::size_t r = 0; r < layout.cuts.size(); ++r) {
          const std::size_t end = layout.cuts[r];
          array_run_text(bytes, begin, end, run);
          c.text_base = run.data() + 1;  // run = '[' + bytes[begin, end) + ']'
          c.text_offset = begin;
          od::document events;
          bool iterating = false;  // a document that iterate() did not set up has no position to ask for
          // Where the parse stands, as a byte of the file, for a message (the run's start if it cannot say).
          const auto here = [&] {
            const char* at = nullptr;
            if (!iterating || events.current_location().get(at) || at < c.text_base) at = c.text_base;
            return c.text_offset + static_cast<std::size_t>(at - c.text_base);
          };
          try {
            events = parser.iterate(run.data(), run.size(), run.capacity());
            iterating = true;
            od::array arr = events.get_array();
            for (auto ev : arr)
              if (!read_element(ev, c))
                ETS_THROW(Errc::parse, "ets.kineto.1", "'{}' is not a readable Kineto JSON trace: an element of "
                          "\"traceEvents\" is not an event object (near byte {})", path, here());
          } catch (const simdjson::simdjson_error& e) {
            ETS_THROW(Errc::parse, "ets.kineto.1", "'{}' is not a readable Kineto JSON trace: {} (near byte {})", path,
                      e.what(), here());
          }
          if (r == 0 && layout.cuts.size() > 1) {
            // Size the event vectors once from the first run's mix (+10%) instead of regrowing (and copying)
            // them as the file goes on.
            const double scale = 1.1 * static_cast<double>(layout.close - layout.open) / static_cast<double>(end - begin);
            c.host.reserve(static_cast<std::size_t>(static_cast<double>(c.host.size()) * scale));
            c.host_pid.reserve(c.host.capacity());
            c.host_ts_ns.reserve(c.host.capacity());
            c.device.reserve(static_cast<std::size_t>(static_cast<double>(c.device.size()) * scale));
            c.device_ts_ns.reserve(c.device.capacity());
            c.device_tid.reserve(c.device.capacity());
            c.launches.reserve(static_cast<std::size_t>(static_cast<double>(c.launches.size()) * scale));
            c.launch_pid.reserve(c.launches.capacity());
            c.launch_ts_ns.reserve(c.launches.capacity());
          }
          begin = end + 1;
        }
      }
      // A whole file is copied for simdjson's padding; the skeleton has it already.
      const simdjson::padded_string copy =
          chunked ? simdjson::padded_string() : simdjson::padded_string(bytes.data(), bytes.size());
      const std::string_view top = chunked ? std::string_view(skeleton) : std::string_view(copy);
      // Events met here are deferred as the runs' are: the whole file's, or (chunked) those of a second
      // "traceEvents" key, which lies after the first one's array, so skeleton offset p is source offset
      // p + (close - open - 1). (Read without deferral, their input shapes were dropped: a file's ops kept or lost
      // their shapes by its size.)
      c.text_base = top.data();
      c.text_offset = chunked ? layout.close - layout.open - 1 : 0;
      {
        // The lazy parse below checks little of what it skips. A whole file gets here when the scan above did not
        // recognise its events, often for a lost or extra bracket, whose damage that parse skipped without a word:
        // a full parse checks it first (and the rest of a chunked file, which is small). Its buffers go before the
        // lazy parse takes its own. (Checking every run of a chunked file so cost 13-25% of the import.)
        simdjson::dom::parser whole_check;
        if (const auto err = check_json(whole_check, top.data(), top.size()))
          ETS_THROW(Errc::parse, "ets.kineto.1", "'{}' is not a readable Kineto JSON trace: {}", path,
                    simdjson::error_message(err));
      }
      const std::size_t readable = chunked ? skeleton.capacity() : copy.size() + simdjson::SIMDJSON_PADDING;
      od::document doc = parser.iterate(top.data(), top.size(), readable);
      od::object root = doc.get_object();
      for (auto field : root) {
        std::string_view k = field.unescaped_key();
        od::value v = field.value();
        if (k == "traceEvents") {
          od::array arr = v.get_array();
          saw_events = true;
          if (!chunked) {
            c.host.reserve(bytes.size() / 1000);
            c.device.reserve(bytes.size() / 4000);
            c.launches.reserve(bytes.size() / 3000);
          }
          for (auto ev : arr)
            if (!read_element(ev, c))
              ETS_THROW(Errc::parse, "ets.kineto.1", "'{}' is not a readable Kineto JSON trace: an element of "
                        "\"traceEvents\" is not an event object", path);
        } else if (k == "distributedInfo") {
          od::object o;
          if (!v.get_object().get(o))
            for (auto f2 : o) {
              std::string_view k2 = f2.unescaped_key();
              if (k2 == "rank") read_rank(f2.value(), meta, path);
            }
        } else if (k == "deviceProperties") {
          od::array a;
          if (!v.get_array().get(a))
            for (auto d : a) {
              require_json(d);
              od::object o;
              if (d.get_object().get(o)) continue;
              for (auto f2 : o) {
                std::string_view k2 = f2.unescaped_key();
                std::string_view s;
                if (k2 == "name" && !f2.value().get_string().get(s) && meta.device.empty()) meta.device = std::string(s);
              }
            }
        } else if (k == "ets") {
          od::object o;
          if (!v.get_object().get(o)) read_meta_object(o, meta);
        }
      }
    } catch (const simdjson::simdjson_error& e) {
      ETS_THROW(Errc::parse, "ets.kineto.1", "'{}' is not a readable Kineto JSON trace: {}", path, e.what());
    }
    // The parser (and its string buffer, which the string_views above point into) dies here; all kept data is copied.
  }
  if (!saw_events)
    ETS_THROW(Errc::parse, "ets.kineto.1", "'{}' is not a readable Kineto JSON trace: no \"traceEvents\" array", path);
  place_times(c);
  if (opt.rank >= 0 && meta.rank >= 0 && meta.rank != opt.rank)
    ETS_THROW(Errc::invalid_argument, "ets.kineto.2", "'{}' holds rank {}, not the requested rank {}", path, meta.rank,
              opt.rank);

  // The host process: the one that ran ProfilerStep#s, else the one with most CPU ops.
  std::int64_t pid = kBadPid;
  for (const Marker& m : c.profiler_steps)
    if (m.pid != kBadPid) {
      pid = m.pid;
      break;
    }
  if (pid == kBadPid) {
    std::size_t best = 0;
    for (const auto& [p, n] : c.cpu_ops_per_pid)
      if (n > best || (n == best && p < pid)) best = n, pid = p;
  }
  if (pid == kBadPid && c.out_of_range_ts > 0)
    ETS_THROW(Errc::invalid_trace, "ets.kineto.3", "'{}' holds no CPU operator events with a readable \"ts\": {} "
              "complete events have a \"ts\" beyond {} µs (year 2096 in epoch µs). Kineto writes µs: are they ns?",
              path, c.out_of_range_ts, kMaxUs);
  if (pid == kBadPid) ETS_THROW(Errc::invalid_trace, "ets.kineto.3", "'{}' holds no CPU operator events", path);
  if (c.bad_ts > 0)
    log(LogLevel::warn, "[ets.kineto.11] '{}': {} complete events (operators, annotations, launches, device "
        "activities) have a missing, non-numeric or out-of-range \"ts\" ({} beyond {} µs); they are dropped", path,
        c.bad_ts, c.out_of_range_ts, kMaxUs);

  CompactAssemblyInput in;
  in.meta.source_format = "kineto";
  in.meta.source_path = path;
  in.meta.framework = "pytorch";
  in.meta.framework_version = meta.framework_version;
  in.meta.device = meta.device;
  in.meta.model = meta.model;
  in.meta.family = meta.family;
  in.meta.environment = meta.environment;
  in.meta.batch_size = meta.batch_size;
  in.meta.optimizer = !meta.optimizer.empty() ? meta.optimizer : c.optimizer;
  if (meta.rank >= 0) in.meta.extra["rank"] = std::to_string(meta.rank);
  check_meta_size(in.meta, path);
  if (!meta.bad_batch_size.empty())
    log(LogLevel::warn, "[ets.kineto.8] '{}': \"ets\".\"batch_size\" {} is not a whole number >= 0; the batch size is "
        "unknown", path, meta.bad_batch_size);
  if (meta.tail_steps < 0)
    ETS_THROW(Errc::invalid_trace, "ets.kineto.7", "'{}': \"ets\".\"tail_steps\" is not a non-negative integer", path);
  ETS_CHECK(meta.heap_mb != -2, Errc::invalid_trace, "ets.kineto.12",
            "'{}': \"ets\".\"heap_mb\" is not a whole number >= 0", path);
  if (meta.heap_mb > 0) in.meta.extra["heap_mb"] = std::to_string(meta.heap_mb);  // 0: the default, not recorded
  // Deferred shape arguments are read from the source text, which outlives the assembly.
  in.load_args = [bytes, path, parser = std::make_shared<od::parser>(), buf = std::make_shared<std::string>()](
                     const CompactSpan& span, OpRecord& rec) {
    if (span.args_offset > bytes.size() || span.args_size > bytes.size() - span.args_offset)
      ETS_THROW(Errc::parse, "ets.kineto.1", "'{}': deferred arguments outside the trace text", path);
    buf->assign(bytes.data() + span.args_offset, span.args_size);
    pad_with_zeros(*buf);
    Args args;
    try {
      od::document d = parser->iterate(buf->data(), buf->size(), buf->capacity());
      od::object o = d.get_object();
      read_args(o, args, true);
    } catch (const simdjson::simdjson_error& e) {
      ETS_THROW(Errc::parse, "ets.kineto.1", "'{}' is not a readable Kineto JSON trace: {} (in the \"args\" at byte {})",
                path, e.what(), span.args_offset);
    }
    if (args.has_raw) apply_raw_args(rec, args.raw);
  };
  std::size_t shape_turn = 1;
  in.steps = make_steps(c, pid, opt.keep_incomplete || meta.tail_steps > 0,
                        opt.keep_incomplete && meta.tail_steps == 0, in.load_args, shape_turn);
  if (shape_turn > 1)
    log(LogLevel::warn, "[ets.kineto.9] '{}' has no ProfilerStep# spans, and its optimizers take turns of {} steps "
        "(told apart by the shapes they update): each iteration holds one turn. Record with prof.step() to say where "
        "iterations end", path, shape_turn);
  const auto tail_steps = static_cast<std::size_t>(meta.tail_steps);
  if (tail_steps > 0 && tail_steps >= in.steps.size())
    ETS_THROW(Errc::invalid_trace, "ets.kineto.7",
              "'{}' declares its last {} step(s) as recorded only to close the one before, but holds {} step(s)", path,
              tail_steps, in.steps.size());
  // kept with every iteration (and so in a label): a dataset tells how its periods were closed
  if (tail_steps > 0) in.meta.extra["tail_steps"] = std::to_string(tail_steps);
  if (c.bad_durations > 0)
    log(LogLevel::warn, "[ets.kineto.5] '{}': {} complete events have a negative, non-finite, non-numeric or "
        "absurd (over {:.0e} µs) \"dur\"; read as 0", path, c.bad_durations, kMaxDurUs);
  {
    std::vector<std::int64_t> idx;
    for (const StepSpan& s : in.steps)
      if (s.index >= 0) idx.push_back(s.index);
    std::sort(idx.begin(), idx.end());
    const auto dup = std::adjacent_find(idx.begin(), idx.end());
    if (dup != idx.end())
      log(LogLevel::warn, "[ets.kineto.6] '{}': step #{} appears more than once; each is kept as an iteration", path,
          *dup);
  }
  // Keep the host process's spans and launches in place (no second copy of the largest vectors).
  {
    std::size_t kept = 0;
    for (std::size_t i = 0; i < c.host.size(); ++i)
      if (c.host_pid[i] == pid) {
        if (kept != i) c.host[kept] = std::move(c.host[i]);
        ++kept;
      }
    c.host.erase(c.host.begin() + static_cast<std::ptrdiff_t>(kept), c.host.end());
    in.host = std::move(c.host);
    kept = 0;
    for (std::size_t i = 0; i < c.launches.size(); ++i)
      if (c.launch_pid[i] == pid) c.launches[kept++] = c.launches[i];
    c.launches.resize(kept);
    in.launches = std::move(c.launches);
    // The per-record pids and read times are done with (the times were placed): freed before the assembly.
    release(c.host_pid);
    release(c.host_ts_ns);
    release(c.launch_pid);
    release(c.launch_ts_ns);
    release(c.cpu_ops_per_pid);
  }
  // Kernels without a correlation arg: the ac2g flow ending on them carries the launch's correlation id.
  bool need_flows = false;
  for (const auto& a : c.device) need_flows |= a.correlation < 0;
  if (need_flows && !c.flow_ends.empty()) {
    // Unsigned mixing: epoch ns × 31 does not fit an int64 (signed overflow is UB).
    auto key = [](std::int64_t ts, std::int64_t tid) { return std::uint64_t(ts) * 31u + std::uint64_t(tid); };
    std::unordered_map<std::uint64_t, std::int64_t> by_ts;
    for (const Flow& f : c.flow_ends) by_ts[key(f.ts_ns, f.tid)] = f.id;
    for (std::size_t i = 0; i < c.device.size(); ++i)
      if (c.device[i].correlation < 0) {
        auto it = by_ts.find(key(c.device_ts_ns[i], c.device_tid[i]));
        if (it != by_ts.end()) c.device[i].correlation = it->second;
      }
  }
  release(c.flow_ends);
  release(c.device_ts_ns);
  release(c.device_tid);
  bool gpu = false;
  for (const auto& a : c.device) gpu |= a.kind != DeviceKind::Communication;
  if (gpu) {
    in.device = std::move(c.device);
    if (in.meta.device.empty()) in.meta.device = "gpu";
  } else if (in.meta.device.empty()) {
    in.meta.device = "cpu";
  }
  release(c.device);  // moved out, or (communication only) not assembled
  AssemblyOptions aopt;
  aopt.keep_incomplete = opt.keep_incomplete;
  aopt.tail_steps = tail_steps;
  if (!gpu && !c.profiler_steps.empty()) aopt.training_tid = outer_only(c.profiler_steps, pid).front().tid;
  const std::vector<StepSpan> steps = in.steps;
  const TraceMeta meta_copy = in.meta;
  const std::size_t launches = in.launches.size(), activities = in.device.size();
  std::vector<ExecutionTrace> out = gpu ? assemble_gpu(std::move(in), aopt) : assemble_cpu(std::move(in), aopt);
  if (steps.empty() && !out.empty())
    log(LogLevel::warn, "[ets.kineto.4] '{}': no complete iteration markers (ProfilerStep#, Optimizer.zero_grad#/step#); "
        "the whole trace is read as one iteration without a measured time", path);
  // A GPU trace whose device work no operator launched: without launches (a trace recorded without the runtime
  // events) no kernel can be attributed, and iterations of zero ops would read as a trace of no GPU work.
  if (gpu && out.empty()) {
    if (launches == 0)
      ETS_THROW(Errc::invalid_trace, "ets.kineto.3", "'{}' holds {} GPU activities but no runtime launch events "
                "(cuda_runtime / cuda_driver / Runtime) in process {}: no kernel can be attributed to an operator",
                path, activities, pid);
    ETS_THROW(Errc::invalid_trace, "ets.kineto.3", "'{}' holds {} GPU activities, none of them attributed to an "
              "operator of an iteration by its launch (pid {})", path, activities, pid);
  }
  // Steps whose training thread ran no operator (HTA's cpu_only fixture: only gloo annotations on other threads)
  // still carry a measured iteration time; they come back with zero ops rather than as an error.
  if (out.empty())
    for (std::size_t k = 0; k + tail_steps < steps.size(); ++k) {
      const StepSpan& s = steps[k];
      if (!std::isfinite(s.start_us) || !std::isfinite(s.end_us)) continue;  // kept incomplete: no time to carry
      ExecutionTrace t;
      t.meta = meta_copy;
      t.iteration = s.index;
      t.start_us = s.start_us;
      t.measured_us = s.measured_us;
      out.push_back(std::move(t));
    }
  if (out.empty())
    ETS_THROW(Errc::invalid_trace, "ets.kineto.3", "'{}' holds no iteration with operators (pid {})", path, pid);
  return out;
}

}  // namespace detail

std::vector<ExecutionTrace> read_kineto_json(std::string_view bytes, const std::string& path, const Options& opt) {
  return detail::read_kineto_json_runs(bytes, path, opt, kChunkBytes);
}

}  // namespace ets::import
