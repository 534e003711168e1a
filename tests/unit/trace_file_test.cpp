// The canonical ets-trace file: bit-exact round trips, version handling, strict validation, truncation/garbling.
// Reading goes through ets::import::read_ets_trace, the reader Tracer::load dispatches to.
#include <catch2/catch.hpp>

#include <zlib.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "ets/error.hpp"
#include "ets/trace.hpp"
#include "ets/trace_file.hpp"
#include "ets/tracer.hpp"
#include "import/importers.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;

namespace {

std::vector<ets::ExecutionTrace> parse(const std::string& text) {
  return ets::import::read_ets_trace(text, "mem.etst", ets::import::Options{});
}

std::string error_id(const std::string& text) {
  try {
    parse(text);
  } catch (const ets::Error& e) {
    return e.id();
  }
  return "no error";
}

std::string read_gz(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  REQUIRE(f != nullptr);
  std::string out;
  char buf[1 << 14];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  gzclose(f);
  return out;
}

std::uint64_t bits(double d) {
  std::uint64_t u;
  std::memcpy(&u, &d, sizeof u);
  return u;
}

// Bit-exact except that every NaN is "unknown" (the file stores null, not a payload).
bool same_bits(double a, double b) { return (std::isnan(a) && std::isnan(b)) || bits(a) == bits(b); }

void require_bit_exact(const std::vector<ets::ExecutionTrace>& a, const std::vector<ets::ExecutionTrace>& b) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    REQUIRE(a[i] == b[i]);
    REQUIRE(same_bits(a[i].start_us, b[i].start_us));
    REQUIRE(same_bits(a[i].measured_us, b[i].measured_us));
    for (std::size_t j = 0; j < a[i].ops.size(); ++j) {
      const auto &x = a[i].ops[j], &y = b[i].ops[j];
      REQUIRE(same_bits(x.start_us, y.start_us));
      REQUIRE(same_bits(x.time_us, y.time_us));
      REQUIRE(same_bits(x.gap_us, y.gap_us));
      REQUIRE(same_bits(x.flops, y.flops));
      REQUIRE(same_bits(x.bytes, y.bytes));
      for (int h = 0; h < ets::kHyperCount; ++h) REQUIRE(same_bits(x.hyper.value[h], y.hyper.value[h]));
    }
  }
}

class Gen {
 public:
  explicit Gen(std::uint64_t seed) : rng_(seed) {}

  // Any finite double, including subnormals, -0 and extremes: exercises the shortest round-trip formatting.
  double any_finite() {
    switch (pick(6)) {
      case 0: return 0.0 * (pick(2) ? -1 : 1);
      case 1: return std::uniform_real_distribution<double>(0, 1000)(rng_);
      case 2: return static_cast<double>(pick(100000));
      default: {
        for (;;) {
          const std::uint64_t u = rng_();
          double d;
          std::memcpy(&d, &u, sizeof d);
          if (std::isfinite(d)) return d;
        }
      }
    }
  }
  double nonneg() { return std::fabs(any_finite()); }
  double maybe_nan() { return pick(4) == 0 ? ets::kUnknown : any_finite(); }
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

  std::string text() {
    static const char* parts[] = {"conv2d", "aten::", "\"q\"", "back\\slash", "tab\t", "nl\n", "\x01\x1f", "µs",
                                  "日本", "emoji \xF0\x9F\x98\x80", "", " ", "{}[],:"};
    std::string s;
    const int n = pick(4);
    for (int i = 0; i < n; ++i) s += parts[pick(13)];
    return s;
  }

  ets::ExecutionTrace trace(int max_ops) {
    ets::ExecutionTrace t;
    t.meta.source_format = text();
    t.meta.source_path = text();
    t.meta.framework = text();
    t.meta.framework_version = text();
    t.meta.device = text();
    t.meta.environment = text();
    t.meta.model = text();
    t.meta.family = text();
    t.meta.optimizer = text();
    t.meta.batch_size = static_cast<std::int64_t>(rng_()) >> pick(64);
    for (int i = pick(5); i > 0; --i) t.meta.extra[text() + std::to_string(i)] = text();
    t.iteration = static_cast<std::int64_t>(rng_());
    t.start_us = any_finite();
    t.measured_us = pick(3) == 0 ? ets::kUnknown : nonneg();
    const int n = pick(max_ops + 1);
    for (int i = 0; i < n; ++i) {
      ets::OpRecord op;
      op.name = text();
      op.raw_name = text();
      op.phase = static_cast<ets::Phase>(pick(3));
      for (int k = pick(4); k > 0; --k) {
        ets::TensorInfo ti;
        for (int d = pick(12); d > 0; --d) ti.dims.push_back(static_cast<std::int64_t>(rng_()) >> pick(64));
        ti.dtype = static_cast<ets::DType>(pick(ets::kDTypeCount));
        op.inputs.push_back(ti);
      }
      for (int h = 0; h < ets::kHyperCount; ++h)
        if (pick(3) == 0) op.hyper.set(static_cast<ets::Hyper>(h), any_finite());
      op.flops = maybe_nan();
      op.bytes = maybe_nan();
      op.start_us = any_finite();
      op.time_us = nonneg();
      op.gap_us = any_finite();  // gaps may be negative where streams overlap
      op.sequence = pick(2) ? -1 : static_cast<std::int64_t>(rng_() >> 1);
      op.kernels = static_cast<std::uint32_t>(rng_());
      t.ops.push_back(op);
    }
    return t;
  }

 private:
  std::mt19937_64 rng_;
};

ets::ExecutionTrace small_trace() {
  ets::ExecutionTrace t;
  t.meta.source_format = "kineto";
  t.meta.model = "resnet50";
  t.meta.batch_size = 32;
  t.meta.extra["gpu"] = "V100";
  t.iteration = 3;
  t.start_us = 10.5;
  t.measured_us = 42.25;
  for (int i = 0; i < 3; ++i) {
    ets::OpRecord op;
    op.name = "conv2d";
    op.raw_name = "aten::conv2d";
    op.phase = static_cast<ets::Phase>(i);
    op.inputs.push_back({{32, 3, 224, 224}, ets::DType::Float32});
    op.hyper.set(ets::Hyper::KernelH, 3);
    op.flops = i == 1 ? ets::kUnknown : 1e9;
    op.start_us = i * 14.0;
    op.time_us = 10;
    op.gap_us = 4.0833;
    op.sequence = i;
    op.kernels = 2;
    t.ops.push_back(op);
  }
  return t;
}

struct TempDir : ets_test::TempDir {
  TempDir() : ets_test::TempDir("ets_trace_file_test") {}
};

std::string replace_first(std::string s, const std::string& from, const std::string& to) {
  const auto p = s.find(from);
  REQUIRE(p != std::string::npos);
  return s.replace(p, from.size(), to);
}

}  // namespace

TEST_CASE("ets-trace round trip is bit-exact on random traces") {
  Gen g(20240611);
  for (int round = 0; round < 40; ++round) {
    std::vector<ets::ExecutionTrace> traces;
    for (int i = g.pick(4); i > 0; --i) traces.push_back(g.trace(30));
    const std::string text = ets::serialize_traces(traces);
    const auto back = parse(text);
    require_bit_exact(traces, back);
    // Writing what was read gives the same bytes: the format has one spelling per value.
    REQUIRE(ets::serialize_traces(back) == text);
  }
}

TEST_CASE("ets-trace keeps the sign of zero and extreme doubles") {
  ets::ExecutionTrace t;
  t.start_us = -0.0;
  t.measured_us = 0.0;
  ets::OpRecord op;
  op.gap_us = -0.0;
  op.time_us = std::numeric_limits<double>::denorm_min();
  op.start_us = -std::numeric_limits<double>::max();
  op.flops = std::numeric_limits<double>::max();
  op.bytes = 0.1;
  t.ops.push_back(op);
  const auto back = parse(ets::serialize_traces({t}));
  require_bit_exact({t}, back);
  CHECK(std::signbit(back[0].ops[0].gap_us));
  CHECK(std::signbit(back[0].start_us));
}

TEST_CASE("write_trace_file writes plain and gzip files that read back exactly") {
  TempDir dir;
  Gen g(7);
  std::vector<ets::ExecutionTrace> traces{g.trace(50), g.trace(50), small_trace()};
  const std::string plain = (dir.path / "t.etst").string();
  const std::string gz = (dir.path / "t.etst.gz").string();
  ets::write_trace_file(plain, traces);
  ets::write_trace_file(gz, traces);
  std::ifstream in(plain, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  CHECK(ss.str() == ets::serialize_traces(traces));
  require_bit_exact(traces, parse(ss.str()));
  // gzip magic, and the content inflates to the same text
  std::ifstream gin(gz, std::ios::binary);
  unsigned char magic[2] = {0, 0};
  gin.read(reinterpret_cast<char*>(magic), 2);
  CHECK(magic[0] == 0x1f);
  CHECK(magic[1] == 0x8b);
  CHECK(read_gz(gz) == ss.str());
  // no temporary files left behind
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir.path)) files += e.is_regular_file();
  CHECK(files == 2);
}

TEST_CASE("a failed write leaves no file") {
  TempDir dir;
  auto t = small_trace();
  t.ops[1].time_us = std::numeric_limits<double>::infinity();
  const std::string path = (dir.path / "bad.etst.gz").string();
  try {
    ets::write_trace_file(path, {small_trace(), t});
    FAIL("expected an error");
  } catch (const ets::Error& e) {
    CHECK(e.id() == "ets.etst.7");
  }
  CHECK(fs::is_empty(dir.path));
  try {
    ets::write_trace_file((dir.path / "no" / "such" / "dir.etst").string(), {small_trace()});
    FAIL("expected an error");
  } catch (const ets::Error& e) {
    CHECK(e.id() == "ets.etst.1");
    CHECK(e.code() == ets::Errc::io);
    // The message names the path the caller gave and the system's reason, not the temporary file's name.
    const std::string what = e.what();
    CHECK(what.find("such/dir.etst'") != std::string::npos);
    CHECK(what.find(".part-") == std::string::npos);
    CHECK(what.find("No such file or directory") != std::string::npos);
  }
  CHECK(fs::is_empty(dir.path));
}

TEST_CASE("a full device is reported with its reason, gzip or plain") {
  // A link to /dev/full is written in place. The gzip writer said only "gzip close ... failed (-1)" where the plain
  // one names the system's reason.
  TempDir dir;
  for (const char* name : {"full.etst.gz", "full.etst"}) {
    const fs::path link = dir.path / name;
    fs::create_symlink("/dev/full", link);
    try {
      ets::write_trace_file(link.string(), {small_trace()});
      FAIL("expected an error");
    } catch (const ets::Error& e) {
      CAPTURE(name, e.what());
      CHECK(e.id() == "ets.etst.1");
      CHECK(std::string(e.what()).find(std::strerror(ENOSPC)) != std::string::npos);
    }
  }
}

TEST_CASE("the writer rejects what the format cannot hold") {
  auto id_of = [](const ets::ExecutionTrace& t) {
    try {
      ets::serialize_traces({t});
    } catch (const ets::Error& e) {
      return e.id();
    }
    return std::string("no error");
  };
  auto t = small_trace();
  t.ops[0].time_us = -1;
  CHECK(id_of(t) == "ets.etst.7");
  t = small_trace();
  t.ops[2].gap_us = ets::kUnknown;
  CHECK(id_of(t) == "ets.etst.7");
  t = small_trace();
  t.measured_us = std::numeric_limits<double>::infinity();
  CHECK(id_of(t) == "ets.etst.7");
  t = small_trace();
  t.ops[0].flops = -std::numeric_limits<double>::infinity();
  CHECK(id_of(t) == "ets.etst.7");
  t = small_trace();
  t.ops[0].name = "bad\xff";
  CHECK(id_of(t) == "ets.etst.8");
  t = small_trace();
  t.meta.extra["k"] = "\xc0\x80";  // overlong encoding of NUL
  CHECK(id_of(t) == "ets.etst.8");
  t = small_trace();
  t.ops[0].gap_us = -3.5;  // overlap: allowed
  CHECK(id_of(t) == "no error");
}

TEST_CASE("ets-trace header and versions") {
  const std::string good = ets::serialize_traces({small_trace()});
  REQUIRE(good.rfind("{\"format\":\"ets-trace\",\"version\":[1,0]}\n", 0) == 0);

  // unknown major: error names both versions
  const std::string v2 = replace_first(good, "[1,0]", "[2,0]");
  try {
    parse(v2);
    FAIL("expected an error");
  } catch (const ets::Error& e) {
    CHECK(e.id() == "ets.etst.2");
    CHECK(e.code() == ets::Errc::version);
    CHECK_THAT(e.what(), Catch::Contains("2.0") && Catch::Contains("1.0"));
  }
  // a higher minor is read, and the members it adds are skipped
  std::string v13 = replace_first(good, "[1,0]", "[1,3]");
  v13 = replace_first(v13, "\"n\":", "\"future\":[1,{\"x\":2}],\"n\":");
  v13 = replace_first(v13, "\"iteration\":", "\"future_meta\":\"x\",\"iteration\":");
  const auto read13 = parse(v13);
  REQUIRE(read13.size() == 1);
  CHECK(read13[0] == small_trace());
  // ... but version 1.0 files must not carry unknown members
  CHECK(error_id(replace_first(good, "\"n\":", "\"future\":1,\"n\":")) == "ets.etst.9");
  // ... beside the "trace" and "end" members of their lines too, before or after them (docs/trace-format.md)
  std::string lines13 = replace_first(good, "[1,0]", "[1,3]");
  lines13 = replace_first(lines13, "{\"trace\":", "{\"checksum\":\"abc\",\"trace\":");
  lines13 = replace_first(lines13, "{\"end\":{\"traces\":1}}", "{\"end\":{\"traces\":1},\"signed\":[1]}");
  const auto read_lines13 = parse(lines13);
  REQUIRE(read_lines13.size() == 1);
  CHECK(read_lines13[0] == small_trace());
  CHECK(error_id(replace_first(lines13, "[1,3]", "[1,0]")) == "ets.etst.9");
  CHECK(error_id(replace_first(good, "{\"trace\":", "{\"trace\":{},\"trace\":")) == "ets.etst.9");

  // the header obeys the rules of every line: a 1.0 header has no unknown members and none twice
  CHECK(error_id(replace_first(good, "\"version\":[1,0]", "\"version\":[1,0],\"extra\":1")) == "ets.etst.9");
  CHECK(error_id(replace_first(good, "\"version\":[1,0]", "\"version\":[1,0],\"version\":[1,0]")) == "ets.etst.9");
  CHECK(parse(replace_first(good, "\"version\":[1,0]", "\"version\":[1,1],\"extra\":1")).size() == 1);

  CHECK(error_id("") == "ets.etst.3");
  CHECK(error_id("{\"format\":\"kineto\",\"version\":[1,0]}\n") == "ets.etst.3");
  CHECK(error_id("{\"format\":\"ets-trace\",\"version\":\"1.0\"}\n") == "ets.etst.3");
  CHECK(error_id("{\"traceEvents\":[]}") == "ets.etst.3");
  CHECK(error_id("{\"format\":\"ets-trace\",\"version\":[1,0]}\n{\"end\":{\"traces\":0}}\n") == "no error");
}

TEST_CASE("Tracer::load reads what detection saw: after a BOM or blank lines, header members in any order") {
  const TempDir scratch;
  const fs::path& dir = scratch.path;
  auto put = [&](const std::string& name, const std::string& bytes) {
    const fs::path p = dir / name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p.string();
  };
  const std::string bom = "\xEF\xBB\xBF";
  const std::string etst = ets::serialize_traces({small_trace()});
  CHECK(ets::Tracer::load(put("bom.etst", bom + etst)).at(0) == small_trace());
  // blank lines before the header, which detection skips: detected as ets-trace, then refused as not one (ets.etst.3)
  for (const std::string lead : {"\n", "\r\n", " \t\n\n", "\xEF\xBB\xBF\n", "\r\r\n", " \r \n"}) {
    const std::string p = put("blank.etst", lead + etst);
    CHECK(ets::Tracer::detect(p) == "ets-trace");
    CHECK(ets::Tracer::load(p).at(0) == small_trace());
  }
  CHECK(error_id("\n\n") == "ets.etst.3");  // nothing but blank lines is still no ets-trace file
  const std::string reordered = replace_first(etst, "{\"format\":\"ets-trace\",\"version\":[1,0]}",
                                              "{\"version\":[1,0],\"format\":\"ets-trace\"}");
  CHECK(ets::Tracer::detect(put("reordered.etst", reordered)) == "ets-trace");
  CHECK(ets::Tracer::load(put("reordered2.etst", reordered)).at(0) == small_trace());
  // a Kineto trace with a BOM and a blank line in front was detected as Kineto, then refused (ets.kineto.1)
  const std::string kineto = ets::import::read_file_bytes(ets_test::fixture("cpu_small_mlp.json.gz"));
  const auto plain = ets::Tracer::load(ets_test::fixture("cpu_small_mlp.json.gz"));
  const auto with_bom = ets::Tracer::load(put("bom.json", bom + "\n" + kineto));
  REQUIRE(with_bom.size() == plain.size());
  CHECK(with_bom[0].ops.size() == plain[0].ops.size());
  CHECK(with_bom[0].measured_us == plain[0].measured_us);
}

TEST_CASE("ets-trace strict validation on read") {
  const std::string good = ets::serialize_traces({small_trace()});
  // op counts that do not match the op lines
  CHECK(error_id(replace_first(good, "\"ops\":3", "\"ops\":2")) == "ets.etst.6");
  CHECK(error_id(replace_first(good, "\"ops\":3", "\"ops\":4")) == "ets.etst.6");
  CHECK(error_id(replace_first(good, "\"ops\":3", "\"ops\":99999999999")) == "ets.etst.6");
  // ... also when the file's last line has no newline (the reserve bound once wrapped there: std::bad_alloc)
  std::string no_newline = replace_first(good, "\"ops\":3", "\"ops\":1000000000000000");
  no_newline = no_newline.substr(0, no_newline.find('\n', no_newline.find("{\"trace\"")));
  CHECK(error_id(no_newline) == "ets.etst.6");
  CHECK(error_id(replace_first(good, "{\"end\":{\"traces\":1}}", "{\"end\":{\"traces\":2}}")) == "ets.etst.6");
  // missing and mistyped members
  CHECK(error_id(replace_first(good, "\"t\":10,", "")) == "ets.etst.5");
  CHECK(error_id(replace_first(good, "\"model\":\"resnet50\",", "")) == "ets.etst.5");
  CHECK(error_id(replace_first(good, "\"t\":10", "\"t\":\"10\"")) == "ets.etst.5");
  CHECK(error_id(replace_first(good, "\"q\":0", "\"q\":0.5")) == "ets.etst.5");
  CHECK(error_id(replace_first(good, "\"float32\"", "\"float33\"")) == "ets.etst.5");
  // durations: negative, NaN-as-null, out-of-range numbers
  CHECK(error_id(replace_first(good, "\"t\":10", "\"t\":-10")) == "ets.etst.7");
  CHECK(error_id(replace_first(good, "\"t\":10", "\"t\":null")) == "ets.etst.5");
  CHECK(error_id(replace_first(good, "\"g\":4.0833", "\"g\":NaN")) == "ets.etst.4");
  CHECK(error_id(replace_first(good, "\"t\":10", "\"t\":1e999")) == "ets.etst.4");
  CHECK(error_id(replace_first(good, "\"measured_us\":42.25", "\"measured_us\":-1")) == "ets.etst.7");
  CHECK(error_id(replace_first(good, "\"p\":0", "\"p\":3")) == "ets.etst.7");
  // duplicates and trailing garbage
  CHECK(error_id(replace_first(good, "\"t\":10", "\"t\":10,\"t\":11")) == "ets.etst.9");
  CHECK(error_id(replace_first(good, "\"k\":2}", "\"k\":2} x")) == "ets.etst.4");
  CHECK(error_id(good + "{\"end\":{\"traces\":1}}\n") == "ets.etst.6");
  // a truncated file (missing end line) is an error, not a shorter trace list
  CHECK(error_id(good.substr(0, good.rfind("{\"end\""))) == "ets.etst.10");
}

TEST_CASE("truncated and garbled ets-trace files raise ets::Error, never crash") {
  Gen g(99);
  const std::string text = ets::serialize_traces({small_trace(), g.trace(6), small_trace()});
  REQUIRE(text.size() > 500);
  // Every cut point short of the final newline loses information and must be reported.
  for (std::size_t cut = 0; cut + 1 < text.size(); ++cut) {
    INFO("cut at " << cut);
    CHECK_THROWS_AS(parse(text.substr(0, cut)), ets::Error);
  }
  CHECK(parse(text.substr(0, text.size() - 1)).size() == 3);
  // Byte flips may or may not still parse; they must never escape as anything but ets::Error.
  std::mt19937 rng(5);
  for (int i = 0; i < 3000; ++i) {
    std::string bad = text;
    const std::size_t at = rng() % bad.size();
    bad[at] = static_cast<char>(rng() & 0xFF);
    try {
      parse(bad);
    } catch (const ets::Error&) {
    }
  }
}

TEST_CASE("real traces convert to ets-trace and load back identical through Tracer::load", "[shared]") {
  const char* rels[] = {"ets-reference/T4CPUALL__vgg11_bn.50_7.csv",
                        "kineto-gpu/kineto-resnet50-v100/resnet50_num_workers_0__worker0.1623143089861.pt.trace.json.gz",
                        "kineto-gpu/param/resnet_et_2023-07-12.json.gz"};
  TempDir dir;
  for (const char* rel : rels) {
    if (!ets_test::have_shared(rel)) {
      ets_test::note_shared_skip(rel);
      continue;
    }
    INFO(rel);
    const auto original = ets::Tracer::load(ets_test::shared_data(rel));
    REQUIRE(!original.empty());
    const std::string out = (dir.path / "converted.etst.gz").string();
    ets::write_trace_file(out, original);
    CHECK(ets::Tracer::detect(out) == "ets-trace");
    const auto back = ets::Tracer::load(out);
    require_bit_exact(original, back);
  }
}

TEST_CASE("LoadOptions::batch_size gives traces that record none a batch size; a trace's own wins") {
  ets::Tracer::LoadOptions options;
  const auto et = ets::Tracer::load(ets_test::fixture("et_pair_sgd.et.json.gz"));  // an ET records no batch size
  REQUIRE(!et.empty());
  for (const auto& t : et) CHECK(t.meta.batch_size == 0);
  options.batch_size = 8;
  for (const auto& t : ets::Tracer::load(ets_test::fixture("et_pair_sgd.et.json.gz"), options))
    CHECK(t.meta.batch_size == 8);
  for (const auto& t : ets::Tracer::load(ets_test::fixture("cpu_small_mlp.json.gz"), options))
    CHECK(t.meta.batch_size == 128);  // the trace's own
  std::string format;
  CHECK(ets::Tracer::load(ets_test::fixture("et_pair_sgd.et.json.gz"), options, format).at(0).meta.batch_size == 8);
  options.batch_size = -1;
  try {
    ets::Tracer::load(ets_test::fixture("et_pair_sgd.et.json.gz"), options);
    FAIL("a negative batch size must be refused");
  } catch (const ets::Error& e) {
    CHECK(e.id() == "ets.import.4");
  }
}
