// CUPTI plain records → AssemblyInput → ExecutionTraces (the same assembly the Kineto reader uses).
// No CUDA here: the live tracer converts CUPTI structs to the plain records, everything else happens on the CPU.
#include "import/activity_capture.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "ets/detail/ascii.hpp"
#include "ets/log.hpp"

namespace ets::import {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && ets::detail::ascii_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && ets::detail::ascii_space(s.back())) s.remove_suffix(1);
  return s;
}

bool parse_int(std::string_view s, std::int64_t& out) {
  s = trim(s);
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

// "[[4, 8], [8], []]" → {{4, 8}, {8}, {}}; anything malformed gives what was parsed before it.
std::vector<std::vector<std::int64_t>> parse_sizes(std::string_view s) {
  std::vector<std::vector<std::int64_t>> out;
  s = trim(s);
  if (s.size() < 2 || s.front() != '[' || s.back() != ']') return out;
  s = s.substr(1, s.size() - 2);
  std::size_t i = 0;
  while (i < s.size()) {
    const std::size_t open = s.find('[', i);
    if (open == std::string_view::npos) break;
    const std::size_t close = s.find(']', open);
    if (close == std::string_view::npos) break;
    std::vector<std::int64_t> dims;
    std::string_view inner = s.substr(open + 1, close - open - 1);
    while (!trim(inner).empty()) {
      const std::size_t comma = inner.find(',');
      std::int64_t v = 0;
      if (!parse_int(inner.substr(0, comma), v)) break;
      dims.push_back(v);
      if (comma == std::string_view::npos) break;
      inner.remove_prefix(comma + 1);
    }
    out.push_back(std::move(dims));
    i = close + 1;
  }
  return out;
}

}  // namespace

NvtxOpName parse_nvtx_op_name(std::string_view name) {
  // Fields are separated by ", " outside brackets (a sizes list holds ", " of its own).
  std::vector<std::string_view> fields;
  int depth = 0;
  std::size_t from = 0;
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (name[i] == '[') ++depth;
    else if (name[i] == ']') depth = std::max(0, depth - 1);
    else if (depth == 0 && name[i] == ',' && i + 1 < name.size() && name[i + 1] == ' ') {
      fields.push_back(name.substr(from, i - from));
      from = i + 2;
    }
  }
  fields.push_back(name.substr(from));
  NvtxOpName r;
  r.op = std::string(trim(fields.front()));
  for (std::size_t f = 1; f < fields.size(); ++f) {
    const std::size_t eq = fields[f].find(" = ");
    if (eq == std::string_view::npos) continue;
    const std::string_view key = trim(fields[f].substr(0, eq)), value = fields[f].substr(eq + 3);
    if (key == "seq") parse_int(value, r.sequence);
    else if (key == "sizes") r.sizes = parse_sizes(value);
  }
  return r;
}

AssemblyInput capture_to_assembly_input(const ActivityCapture& c, const CaptureOptions& opt) {
  AssemblyInput in;
  in.meta = opt.meta;
  if (in.meta.source_format.empty()) in.meta.source_format = "cupti";

  // cupti_activity.h: start == end == 0 (kernels, copies, sets, API calls) or a marker at 0 means CUPTI could not
  // collect the time. Kept, such a record would pull the origin to 0 and sort before every timed one: dropped.
  const auto timed_device = [](const ActivityDevice& d) { return d.start_ns != 0 || d.end_ns != 0; };
  const auto timed_api = [](const ActivityApi& a) { return a.start_ns != 0 || a.end_ns != 0; };
  const auto timed_marker = [](const ActivityMarker& m) { return m.ts_ns != 0; };

  // One origin for every record so doubles keep ns resolution (CUPTI timestamps are ~1e18 ns).
  std::uint64_t origin = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t untimed = 0;
  const auto note = [&](bool timed, std::uint64_t ts) {
    if (timed) origin = std::min(origin, ts);
    else ++untimed;
  };
  for (const auto& d : c.device) note(timed_device(d), d.start_ns);
  for (const auto& a : c.api) note(timed_api(a), a.start_ns);
  for (const auto& m : c.markers) note(timed_marker(m), m.ts_ns);
  if (untimed > 0)
    log(LogLevel::warn, "[ets.import.5] {}: {} records CUPTI could not time (start = end = 0, or a marker at 0) "
        "were dropped", in.meta.source_path.empty() ? std::string("CUPTI capture") : in.meta.source_path, untimed);
  if (origin == std::numeric_limits<std::uint64_t>::max()) return in;
  auto us = [origin](std::uint64_t ns) {
    return ns >= origin ? static_cast<double>(ns - origin) / 1000.0 : -static_cast<double>(origin - ns) / 1000.0;
  };

  // Markers arrive in buffer order, not time order: a range's End may come before its Start. Pair them once all
  // are collected, per id in time order, each End with the latest open Start (so an id used again pairs again).
  std::vector<const ActivityMarker*> edges;
  for (const auto& m : c.markers)
    if (m.flag != ActivityMarker::Flag::Instant && timed_marker(m)) edges.push_back(&m);
  std::stable_sort(edges.begin(), edges.end(), [](const ActivityMarker* a, const ActivityMarker* b) {
    if (a->id != b->id) return a->id < b->id;
    if (a->ts_ns != b->ts_ns) return a->ts_ns < b->ts_ns;
    return a->flag == ActivityMarker::Flag::Start && b->flag != ActivityMarker::Flag::Start;  // zero-length range
  });
  std::vector<std::pair<const ActivityMarker*, const ActivityMarker*>> ranges;
  const ActivityMarker* open = nullptr;
  for (std::size_t i = 0; i < edges.size(); ++i) {
    if (i > 0 && edges[i - 1]->id != edges[i]->id) open = nullptr;
    if (edges[i]->flag == ActivityMarker::Flag::Start) open = edges[i];
    else if (open) ranges.emplace_back(std::exchange(open, nullptr), edges[i]);
  }
  // Time order, so steps without a numeric suffix are numbered as they ran.
  std::stable_sort(ranges.begin(), ranges.end(),
                   [](const auto& a, const auto& b) { return a.first->ts_ns < b.first->ts_ns; });
  std::int64_t running = 0;
  for (const auto& [b, e] : ranges) {
    const double start = us(b->ts_ns), end = us(e->ts_ns);
    const std::string& name = b->name;
    if (!opt.step_prefix.empty() && name.compare(0, opt.step_prefix.size(), opt.step_prefix) == 0) {
      StepSpan s;
      std::int64_t n = 0;
      s.index = parse_int(std::string_view(name).substr(opt.step_prefix.size()), n) ? n : running;
      ++running;
      s.start_us = start;
      s.end_us = end;
      s.measured_us = end - start;
      in.steps.push_back(s);
      continue;
    }
    HostSpan h;
    const NvtxOpName parsed = parse_nvtx_op_name(name);
    h.rec.raw_name = parsed.op.empty() ? name : parsed.op;
    h.rec.sequence = parsed.sequence;
    for (const auto& dims : parsed.sizes) h.rec.inputs.push_back(TensorInfo{dims, DType::Unknown});
    h.start_us = start;
    h.end_us = end;
    h.tid = static_cast<std::int64_t>(b->thread);
    h.kind = opt.all_ranges_are_ops ? SpanKind::Op : SpanKind::Auto;
    in.host.push_back(std::move(h));
  }
  std::sort(in.steps.begin(), in.steps.end(),
            [](const StepSpan& a, const StepSpan& b) { return a.start_us < b.start_us; });

  in.launches.reserve(c.api.size());
  for (const auto& a : c.api) {
    if (!timed_api(a)) continue;
    Launch l;
    l.correlation = a.correlation;
    l.tid = a.thread;
    l.ts_us = us(a.start_ns);
    in.launches.push_back(l);
  }
  in.device.reserve(c.device.size());
  for (const auto& d : c.device) {
    if (!timed_device(d)) continue;
    DeviceActivity a;
    a.start_us = us(d.start_ns);
    a.end_us = us(std::max(d.end_ns, d.start_ns));
    a.device = d.device;
    a.stream = d.stream;
    a.correlation = d.correlation;
    a.kind = d.kind == DeviceKind::Kernel && is_communication_kernel(d.name) ? DeviceKind::Communication : d.kind;
    in.device.push_back(a);
  }
  return in;
}

std::vector<ExecutionTrace> assemble_capture(const ActivityCapture& capture, const CaptureOptions& options) {
  AssemblyOptions ao;
  ao.keep_incomplete = options.keep_incomplete;
  return assemble_gpu(capture_to_assembly_input(capture, options), ao);
}

}  // namespace ets::import
