// The canonical ETS trace file ("ets-trace"): writer (serialize_traces, write_trace_file) and reader (read_ets_trace).
// JSON lines so large files stream line by line; shortest round-trip doubles so read(write(x)) == x bit for bit.
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <simdjson.h>
#include <zlib.h>

#include "ets/detail/output_file.hpp"
#include "ets/detail/utf8.hpp"
#include "ets/error.hpp"
#include "ets/trace.hpp"
#include "ets/trace_file.hpp"
#include "import/importers.hpp"
#include "import/json_cpu_check.hpp"

namespace ets {
namespace {

// ---------------------------------------------------------------- writing

// JSON cannot carry arbitrary bytes; rejecting bad UTF-8 here is what keeps every written file readable
// (detail::valid_utf8).
using ets::detail::valid_utf8;

void put_string(std::string& out, std::string_view s, const char* what) {
  if (!valid_utf8(s)) ETS_THROW(Errc::invalid_argument, "ets.etst.8", "{} is not valid UTF-8", what);
  out.push_back('"');
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) fmt::format_to(std::back_inserter(out), "\\u{:04x}", static_cast<unsigned>(c));
        else out.push_back(ch);
    }
  }
  out.push_back('"');
}

// fmt's "{}" is the shortest representation that parses back to the same double.
// "-0" would come back as the integer 0, so negative zero is spelled as a float.
void put_double(std::string& out, double v) {
  if (v == 0 && std::signbit(v)) out += "-0.0";
  else fmt::format_to(std::back_inserter(out), "{}", v);
}

void put_nullable(std::string& out, double v) {
  if (std::isnan(v)) out += "null";
  else put_double(out, v);
}

void require_finite(double v, const char* what, std::size_t index) {
  if (!std::isfinite(v))
    ETS_THROW(Errc::invalid_trace, "ets.etst.7", "{} of op {} is {}; it must be finite", what, index, v);
}

void put_op(std::string& out, const OpRecord& op, std::size_t index) {
  require_finite(op.start_us, "start_us", index);
  require_finite(op.time_us, "time_us", index);
  require_finite(op.gap_us, "gap_us", index);
  if (op.time_us < 0)
    ETS_THROW(Errc::invalid_trace, "ets.etst.7", "time_us of op {} is negative ({})", index, op.time_us);
  if (std::isinf(op.flops) || std::isinf(op.bytes))
    ETS_THROW(Errc::invalid_trace, "ets.etst.7", "flops/bytes of op {} are infinite", index);
  const int phase = static_cast<int>(op.phase);
  if (phase < 0 || phase >= kPhaseCount)
    ETS_THROW(Errc::invalid_trace, "ets.etst.7", "phase of op {} is out of range ({})", index, phase);

  out += "{\"n\":";
  put_string(out, op.name, "op name");
  out += ",\"r\":";
  put_string(out, op.raw_name, "op raw name");
  fmt::format_to(std::back_inserter(out), ",\"p\":{},\"i\":[", phase);
  for (std::size_t t = 0; t < op.inputs.size(); ++t) {
    const auto& ti = op.inputs[t];
    const int d = static_cast<int>(ti.dtype);
    if (d < 0 || d >= kDTypeCount)
      ETS_THROW(Errc::invalid_trace, "ets.etst.7", "dtype of input {} of op {} is out of range", t, index);
    out += t ? ",[[" : "[[";
    for (std::size_t k = 0; k < ti.dims.size(); ++k) fmt::format_to(std::back_inserter(out), k ? ",{}" : "{}", ti.dims[k]);
    fmt::format_to(std::back_inserter(out), "],\"{}\"]", dtype_name(ti.dtype));
  }
  out += "],\"h\":{";
  bool first = true;
  for (int h = 0; h < kHyperCount; ++h) {
    if (!op.hyper.has(static_cast<Hyper>(h))) continue;
    const double v = op.hyper.value[h];
    if (!std::isfinite(v))
      ETS_THROW(Errc::invalid_trace, "ets.etst.7", "hyper-parameter {} of op {} is not finite", hyper_name(static_cast<Hyper>(h)), index);
    fmt::format_to(std::back_inserter(out), "{}\"{}\":", first ? "" : ",", hyper_name(static_cast<Hyper>(h)));
    put_double(out, v);
    first = false;
  }
  out += "},\"f\":";
  put_nullable(out, op.flops);
  out += ",\"b\":";
  put_nullable(out, op.bytes);
  out += ",\"s\":";
  put_double(out, op.start_us);
  out += ",\"t\":";
  put_double(out, op.time_us);
  out += ",\"g\":";
  put_double(out, op.gap_us);
  fmt::format_to(std::back_inserter(out), ",\"q\":{},\"k\":{}}}\n", op.sequence, op.kernels);
}

void put_trace(std::string& out, const ExecutionTrace& t) {
  if (!std::isfinite(t.start_us))
    ETS_THROW(Errc::invalid_trace, "ets.etst.7", "start_us of iteration {} is not finite", t.iteration);
  if (std::isinf(t.measured_us) || t.measured_us < 0)
    ETS_THROW(Errc::invalid_trace, "ets.etst.7", "measured_us of iteration {} is {}; it must be finite and >= 0 or unknown",
              t.iteration, t.measured_us);
  const auto& m = t.meta;
  out += "{\"trace\":{\"source_format\":";
  put_string(out, m.source_format, "source_format");
  out += ",\"source_path\":";
  put_string(out, m.source_path, "source_path");
  out += ",\"framework\":";
  put_string(out, m.framework, "framework");
  out += ",\"framework_version\":";
  put_string(out, m.framework_version, "framework_version");
  out += ",\"device\":";
  put_string(out, m.device, "device");
  out += ",\"environment\":";
  put_string(out, m.environment, "environment");
  out += ",\"model\":";
  put_string(out, m.model, "model");
  out += ",\"family\":";
  put_string(out, m.family, "family");
  out += ",\"optimizer\":";
  put_string(out, m.optimizer, "optimizer");
  fmt::format_to(std::back_inserter(out), ",\"batch_size\":{},\"extra\":{{", m.batch_size);
  bool first = true;
  for (const auto& [k, v] : m.extra) {
    if (!first) out.push_back(',');
    put_string(out, k, "extra key");
    out.push_back(':');
    put_string(out, v, "extra value");
    first = false;
  }
  fmt::format_to(std::back_inserter(out), "}},\"iteration\":{},\"start_us\":", t.iteration);
  put_double(out, t.start_us);
  out += ",\"measured_us\":";
  put_nullable(out, t.measured_us);
  fmt::format_to(std::back_inserter(out), ",\"ops\":{}}}}}\n", t.ops.size());
  for (std::size_t i = 0; i < t.ops.size(); ++i) put_op(out, t.ops[i], i);
}

std::string header_line() {
  return fmt::format("{{\"format\":\"ets-trace\",\"version\":[{},{}]}}\n", kTraceFileMajor, kTraceFileMinor);
}

std::string end_line(std::size_t n) { return fmt::format("{{\"end\":{{\"traces\":{}}}}}\n", n); }

// Output sink for write_trace_file: a plain or zlib gzip stream on the replacement's descriptor (its temporary, or
// a pipe or device written in place; close-on-exec), moved into place by commit().
class TempSink {
 public:
  // Errors name the destination the caller asked for; the temporary beside it is an implementation detail.
  TempSink(std::string path, bool gz) : path_(std::move(path)), file_(path_, "ets.etst.1", "ets-trace file", ".part"), gz_(gz) {
    errno = 0;
    const int fd = file_.open_for_write();
    if (fd < 0) ETS_THROW(Errc::io, "ets.etst.1", "cannot create '{}': {}", path_, reason());
    if (gz_) {
      // Level 9: a dataset is written once and committed under a size limit; on a labelled file (~150 KB of JSON
      // lines) it is 6% smaller than level 6 for a few milliseconds more.
      gz_file_ = gzdopen(fd, "wb9");  // takes the descriptor over: gzclose closes it
      if (!gz_file_) {
        const int err = errno;
        ::close(fd);  // gzdopen does not close it when it fails
        errno = err;
        ETS_THROW(Errc::io, "ets.etst.1", "cannot create '{}': {}", path_, reason());
      }
    } else {
      out_ = ::fdopen(fd, "wb");
      if (!out_) {
        const int err = errno;
        ::close(fd);
        errno = err;
        ETS_THROW(Errc::io, "ets.etst.1", "cannot create '{}': {}", path_, reason());
      }
    }
  }
  ~TempSink() {  // before ~FileReplacement removes an uncommitted temporary
    if (gz_file_) gzclose(gz_file_);
    if (out_) std::fclose(out_);
  }
  TempSink(const TempSink&) = delete;
  TempSink& operator=(const TempSink&) = delete;

  void write(std::string_view data) {
    if (gz_) {
      while (!data.empty()) {
        const unsigned chunk = static_cast<unsigned>(std::min<std::size_t>(data.size(), 1u << 30));
        errno = 0;
        if (gzwrite(gz_file_, data.data(), chunk) != static_cast<int>(chunk)) {
          const int saved = errno;
          int code = Z_OK;
          const char* text = gzerror(gz_file_, &code);
          ETS_THROW(Errc::io, "ets.etst.1", "gzip write to '{}' failed: {}", path_,
                    code == Z_ERRNO ? std::string(saved ? std::strerror(saved) : "I/O error") : std::string(text));
        }
        data.remove_prefix(chunk);
      }
    } else {
      errno = 0;
      if (std::fwrite(data.data(), 1, data.size(), out_) != data.size())
        ETS_THROW(Errc::io, "ets.etst.1", "write to '{}' failed: {}", path_, reason());
    }
  }

  void commit() {
    if (gz_) {
      errno = 0;
      const int rc = gzclose(gz_file_);
      const int saved = errno;
      gz_file_ = nullptr;
      // Z_ERRNO: the flush of the last compressed block failed (a full disk): say why, as the plain writer does
      if (rc != Z_OK)
        ETS_THROW(Errc::io, "ets.etst.1", "gzip close of '{}' failed: {}", path_,
                  rc == Z_ERRNO && saved ? std::string(std::strerror(saved)) : fmt::format("zlib error {}", rc));
    } else {
      errno = 0;
      const int rc = std::fclose(out_);
      out_ = nullptr;
      if (rc != 0) ETS_THROW(Errc::io, "ets.etst.1", "closing '{}' failed: {}", path_, reason());
    }
    file_.commit();
  }

 private:
  static std::string reason() { return errno ? std::strerror(errno) : "unknown reason"; }

  std::string path_;
  detail::FileReplacement file_;  // declared before the streams: they close before it removes a temporary
  bool gz_;
  gzFile gz_file_ = nullptr;
  std::FILE* out_ = nullptr;
};

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::string serialize_traces(const std::vector<ExecutionTrace>& traces) {
  std::string out = header_line();
  for (const auto& t : traces) put_trace(out, t);
  out += end_line(traces.size());
  return out;
}

void write_trace_file(const std::string& path, const std::vector<ExecutionTrace>& traces) {
  // A symlink keeps pointing at the file (its target is replaced); a pipe or device is written in place.
  TempSink sink(path, ends_with(path, ".gz"));
  sink.write(header_line());
  std::string chunk;
  for (const auto& t : traces) {
    chunk.clear();
    put_trace(chunk, t);  // one iteration at a time keeps memory bounded by the largest iteration
    sink.write(chunk);
  }
  sink.write(end_line(traces.size()));
  sink.commit();
}

// ---------------------------------------------------------------- reading

namespace import {
namespace {

namespace dom = simdjson::dom;

class Reader {
 public:
  Reader(std::string_view bytes, const std::string& path) : bytes_(bytes), path_(path) {
    require_runnable_json_parser();
  }

  std::vector<ExecutionTrace> run() {
    std::string_view line;
    // Blank lines before the header are skipped, as format detection skips them: a file detected as ets-trace
    // must not be refused as "not an ets-trace file".
    bool have = next_line(line);
    while (have && line.find_first_not_of(" \t\r") == std::string_view::npos) have = next_line(line);
    if (!have) ETS_THROW(Errc::parse, "ets.etst.3", "'{}' is empty, not an ets-trace file", path_);
    read_header(line);

    std::vector<ExecutionTrace> traces;
    bool ended = false;
    while (next_line(line)) {
      if (ended) fail("ets.etst.6", Errc::invalid_trace, "content after the end line");
      dom::object obj = parse_object(line);
      if (obj.size() == 0) fail("ets.etst.5", Errc::parse, "expected a \"trace\" or \"end\" line, got {}");
      // The line's kind is its "trace" or "end" member, wherever it stands: a newer minor version may add members
      // beside it (skipped), which a file of this reader's version must not have.
      std::string key(std::string_view((*obj.begin()).key));
      dom::element value = (*obj.begin()).value;
      int kinds = 0;
      for (const auto [k, v] : obj)
        if (k == "trace" || k == "end") {
          if (kinds++ > 0) fail("ets.etst.9", Errc::parse, "a line with two \"trace\" / \"end\" members");
          key = std::string(k);
          value = v;
        }
      if (kinds == 1 && obj.size() != 1 && !lenient_)
        fail("ets.etst.9", Errc::parse, fmt::format("\"{}\" line with extra members", key));
      if (key == "trace") {
        ExecutionTrace t;
        const std::uint64_t n = read_trace(value, t);
        // A garbled count must not make us reserve absurd memory; the loop below checks it exactly.
        t.ops.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(n, (bytes_.size() - pos_) / 16 + 1)));
        for (std::uint64_t i = 0; i < n; ++i) {
          if (!next_line(line))
            fail("ets.etst.6", Errc::invalid_trace,
                 fmt::format("iteration {} declares {} ops but the file ends after {}", t.iteration, n, i));
          t.ops.push_back(read_op(line));
        }
        traces.push_back(std::move(t));
      } else if (key == "end") {
        dom::object end = as_object(value, "end");
        std::uint64_t count = 0;
        bool seen = false;
        for (const auto [k, v] : end) {
          if (k == "traces") {
            count = as_uint(v, "traces");
            seen = true;
          } else {
            unknown(k);
          }
        }
        if (!seen) fail("ets.etst.5", Errc::parse, "end line lacks \"traces\"");
        if (count != traces.size())
          fail("ets.etst.6", Errc::invalid_trace,
               fmt::format("end line says {} iterations but the file holds {}", count, traces.size()));
        ended = true;
      } else {
        // A line that is neither: either an op line beyond the declared count or garbage.
        fail("ets.etst.6", Errc::invalid_trace, fmt::format("unexpected line (member \"{}\"); op count wrong?", key));
      }
    }
    if (!ended)
      ETS_THROW(Errc::parse, "ets.etst.10", "'{}' ends without its end line (truncated after {} iterations)", path_,
                traces.size());
    return traces;
  }

 private:
  // ---- lines
  bool next_line(std::string_view& line) {
    if (pos_ >= bytes_.size()) return false;
    std::size_t nl = bytes_.find('\n', pos_);
    if (nl == std::string_view::npos) nl = bytes_.size();
    line = bytes_.substr(pos_, nl - pos_);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    pos_ = nl < bytes_.size() ? nl + 1 : nl;  // never past the end: the reserve bound below subtracts it
    ++line_no_;
    return true;
  }

  dom::object parse_object(std::string_view line) {
    buf_.assign(line.data(), line.size());
    buf_.resize(line.size() + simdjson::SIMDJSON_PADDING);
    dom::element doc;
    const auto err = parser_.parse(buf_.data(), line.size(), false).get(doc);
    if (err) fail("ets.etst.4", Errc::parse, fmt::format("malformed JSON ({})", simdjson::error_message(err)));
    dom::object obj;
    if (doc.get_object().get(obj)) fail("ets.etst.4", Errc::parse, "line is not a JSON object");
    return obj;
  }

  // ---- errors
  [[noreturn]] void fail(const char* id, Errc code, const std::string& what) const {
    ETS_THROW(code, id, "{}:{}: {}", path_, line_no_, what);
  }
  void unknown(std::string_view key) const {
    if (lenient_) return;  // a newer minor version may add members; 1.0 files must not have any
    fail("ets.etst.9", Errc::parse, fmt::format("unknown member \"{}\"", key));
  }
  void duplicate(std::uint32_t& seen, int bit, std::string_view key) const {
    if (seen & (1u << bit)) fail("ets.etst.9", Errc::parse, fmt::format("duplicate member \"{}\"", key));
    seen |= 1u << bit;
  }
  [[noreturn]] void wrong_type(std::string_view key, const char* want) const {
    fail("ets.etst.5", Errc::parse, fmt::format("member \"{}\" must be {}", key, want));
  }

  // ---- typed accessors
  dom::object as_object(dom::element e, std::string_view key) const {
    dom::object o;
    if (e.get_object().get(o)) wrong_type(key, "an object");
    return o;
  }
  dom::array as_array(dom::element e, std::string_view key) const {
    dom::array a;
    if (e.get_array().get(a)) wrong_type(key, "an array");
    return a;
  }
  std::string as_string(dom::element e, std::string_view key) const {
    std::string_view s;
    if (e.get_string().get(s)) wrong_type(key, "a string");
    return std::string(s);
  }
  std::int64_t as_int(dom::element e, std::string_view key) const {
    std::int64_t v = 0;
    if (e.get_int64().get(v)) wrong_type(key, "an integer");
    return v;
  }
  std::uint64_t as_uint(dom::element e, std::string_view key) const {
    std::uint64_t v = 0;
    if (e.get_uint64().get(v)) wrong_type(key, "a non-negative integer");
    return v;
  }
  double as_double(dom::element e, std::string_view key) const {
    double v = 0;
    if (e.get_double().get(v)) wrong_type(key, "a number");
    return v;
  }
  double as_nullable(dom::element e, std::string_view key) const {
    if (e.is_null()) return kUnknown;
    return as_double(e, key);
  }
  void check_missing(std::uint32_t seen, std::uint32_t required, const char* const* names, int n) const {
    for (int i = 0; i < n; ++i)
      if ((required >> i & 1u) && !(seen >> i & 1u))
        fail("ets.etst.5", Errc::parse, fmt::format("missing member \"{}\"", names[i]));
  }

  // ---- header
  void read_header(std::string_view line) {
    buf_.assign(line.data(), line.size());
    buf_.resize(line.size() + simdjson::SIMDJSON_PADDING);
    dom::element doc;
    dom::object obj;
    std::string_view format;
    if (parser_.parse(buf_.data(), line.size(), false).get(doc) || doc.get_object().get(obj) ||
        obj["format"].get_string().get(format) || format != "ets-trace")
      ETS_THROW(Errc::parse, "ets.etst.3", "'{}' is not an ets-trace file (first line is not its header)", path_);
    dom::array version;
    std::uint64_t major = 0, minor = 0;
    if (obj["version"].get_array().get(version) || version.size() != 2 || version.at(0).get_uint64().get(major) ||
        version.at(1).get_uint64().get(minor))
      ETS_THROW(Errc::parse, "ets.etst.3", "'{}': the header's \"version\" must be [major, minor]", path_);
    if (major != static_cast<std::uint64_t>(kTraceFileMajor))
      ETS_THROW(Errc::version, "ets.etst.2", "'{}' is ets-trace version {}.{}; this reader reads version {}.x (written as {}.{})",
                path_, major, minor, kTraceFileMajor, kTraceFileMajor, kTraceFileMinor);
    lenient_ = minor > static_cast<std::uint64_t>(kTraceFileMinor);
    // the header's members follow the rules of every other line: known ones once each, no others in a 1.0 file
    static constexpr const char* names[] = {"format", "version"};
    std::uint32_t seen = 0;
    for (const auto [key, v] : obj) {
      (void)v;
      int idx = -1;
      for (int i = 0; i < 2; ++i)
        if (key == names[i]) idx = i;
      if (idx < 0) { unknown(key); continue; }
      duplicate(seen, idx, key);
    }
  }

  // ---- iteration line; returns the declared op count
  std::uint64_t read_trace(dom::element value, ExecutionTrace& t) {
    static constexpr const char* names[] = {"source_format", "source_path", "framework", "framework_version",
                                            "device", "environment", "model", "family", "optimizer",
                                            "batch_size", "extra", "iteration", "start_us", "measured_us", "ops"};
    constexpr int n_names = 15;
    std::uint32_t seen = 0;
    std::uint64_t ops = 0;
    auto& m = t.meta;
    std::string* strings[] = {&m.source_format, &m.source_path, &m.framework, &m.framework_version, &m.device,
                              &m.environment, &m.model, &m.family, &m.optimizer};
    for (const auto [key, v] : as_object(value, "trace")) {
      int idx = -1;
      for (int i = 0; i < n_names; ++i)
        if (key == names[i]) idx = i;
      if (idx < 0) { unknown(key); continue; }
      duplicate(seen, idx, key);
      if (idx < 9) {
        *strings[idx] = as_string(v, key);
      } else if (idx == 9) {
        m.batch_size = as_int(v, key);
      } else if (idx == 10) {
        for (const auto [k, s] : as_object(v, key))
          if (!m.extra.emplace(std::string(k), as_string(s, k)).second)
            fail("ets.etst.9", Errc::parse, fmt::format("duplicate extra key \"{}\"", k));
      } else if (idx == 11) {
        t.iteration = as_int(v, key);
      } else if (idx == 12) {
        t.start_us = as_double(v, key);
      } else if (idx == 13) {
        t.measured_us = as_nullable(v, key);
        if (t.measured_us < 0) fail("ets.etst.7", Errc::invalid_trace, "measured_us is negative");
      } else {
        ops = as_uint(v, key);
      }
    }
    check_missing(seen, (1u << n_names) - 1, names, n_names);
    return ops;
  }

  // ---- op line
  OpRecord read_op(std::string_view line) {
    static constexpr const char* names[] = {"n", "r", "p", "i", "h", "f", "b", "s", "t", "g", "q", "k"};
    constexpr int n_names = 12;
    OpRecord op;
    std::uint32_t seen = 0;
    for (const auto [key, v] : parse_object(line)) {
      int idx = -1;
      if (key.size() == 1)
        for (int i = 0; i < n_names; ++i)
          if (key[0] == names[i][0]) idx = i;
      if (idx < 0) {
        if (key == "trace" || key == "end")
          fail("ets.etst.6", Errc::invalid_trace, "an iteration has fewer ops than its \"ops\" count says");
        unknown(key);
        continue;
      }
      duplicate(seen, idx, key);
      switch (idx) {
        case 0: op.name = as_string(v, key); break;
        case 1: op.raw_name = as_string(v, key); break;
        case 2: {
          const std::int64_t p = as_int(v, key);
          if (p < 0 || p >= kPhaseCount) fail("ets.etst.7", Errc::invalid_trace, fmt::format("phase {} out of range", p));
          op.phase = static_cast<Phase>(p);
          break;
        }
        case 3: read_inputs(v, op); break;
        case 4: read_hyper(v, op); break;
        case 5: op.flops = as_nullable(v, key); break;
        case 6: op.bytes = as_nullable(v, key); break;
        case 7: op.start_us = as_double(v, key); break;
        case 8: op.time_us = as_double(v, key); break;
        case 9: op.gap_us = as_double(v, key); break;
        case 10: op.sequence = as_int(v, key); break;
        case 11: {
          const std::uint64_t k = as_uint(v, key);
          if (k > 0xFFFFFFFFull) fail("ets.etst.7", Errc::invalid_trace, "kernel count out of range");
          op.kernels = static_cast<std::uint32_t>(k);
          break;
        }
        default: break;
      }
    }
    check_missing(seen, (1u << n_names) - 1, names, n_names);
    // The reader mirrors the writer's rules: what one rejects, the other does too.
    if (op.time_us < 0) fail("ets.etst.7", Errc::invalid_trace, fmt::format("negative time {}", op.time_us));
    return op;
  }

  void read_inputs(dom::element v, OpRecord& op) {
    for (dom::element item : as_array(v, "i")) {
      dom::array pair = as_array(item, "i[]");
      if (pair.size() != 2) wrong_type("i[]", "a [dims, dtype] pair");
      TensorInfo ti;
      for (dom::element d : as_array(pair.at(0).value_unsafe(), "i[][0]")) ti.dims.push_back(as_int(d, "i[][0][]"));
      const std::string dt = as_string(pair.at(1).value_unsafe(), "i[][1]");
      int found = -1;
      for (int d = 0; d < kDTypeCount; ++d)
        if (dt == dtype_name(static_cast<DType>(d))) found = d;
      if (found < 0) fail("ets.etst.5", Errc::parse, fmt::format("unknown dtype \"{}\"", dt));
      ti.dtype = static_cast<DType>(found);
      op.inputs.push_back(std::move(ti));
    }
  }

  void read_hyper(dom::element v, OpRecord& op) {
    for (const auto [key, val] : as_object(v, "h")) {
      int found = -1;
      for (int h = 0; h < kHyperCount; ++h)
        if (key == hyper_name(static_cast<Hyper>(h))) found = h;
      if (found < 0) {
        unknown(key);
        continue;
      }
      if (op.hyper.has(static_cast<Hyper>(found)))
        fail("ets.etst.9", Errc::parse, fmt::format("duplicate hyper-parameter \"{}\"", key));
      op.hyper.set(static_cast<Hyper>(found), as_double(val, key));
    }
  }

  std::string_view bytes_;
  const std::string& path_;
  std::size_t pos_ = 0;
  std::size_t line_no_ = 0;
  bool lenient_ = false;
  std::string buf_;
  dom::parser parser_;
};

}  // namespace

std::vector<ExecutionTrace> read_ets_trace(std::string_view bytes, const std::string& path, const Options&) {
  return Reader(bytes, path).run();
}

}  // namespace import
}  // namespace ets
