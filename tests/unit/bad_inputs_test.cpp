// ets-test-labels: unit
// Table-driven bad-input test (issue #10): every row of tests/bad_inputs/cases.tsv ends in its documented
// ets::Error id, its documented warning, or a clean load — never a crash, another exception, or partial output.
#include <catch2/catch.hpp>

#include <sqlite3.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "ets/bilstm_predictor.hpp"
#include "ets/error.hpp"
#include "ets/feature_spec.hpp"
#include "ets/log.hpp"
#include "ets/model_file.hpp"
#include "ets/trace_file.hpp"
#include "ets/tracer.hpp"
#include "ets/window_encoder.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;

namespace {

const fs::path kDir = fs::path(ETS_SOURCE_DIR) / "tests" / "bad_inputs";

struct TempDir : ets_test::TempDir {
  TempDir() : ets_test::TempDir("ets_bad_inputs") {}
};

std::string write(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(f.good());
  return p.string();
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  REQUIRE(f.good());
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// ---- Kineto JSON pieces ----

std::string op_event(const std::string& name, double ts, const std::string& dur, int tid = 1) {
  return "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"" + name + "\",\"pid\":1,\"tid\":" + std::to_string(tid) +
         ",\"ts\":" + fmt::format("{}", ts) + ",\"dur\":" + dur + "}";
}
std::string step_event(int n, double ts, double dur) {
  return "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#" + std::to_string(n) +
         "\",\"pid\":1,\"tid\":1,\"ts\":" + fmt::format("{}", ts) + ",\"dur\":" + fmt::format("{}", dur) + "}";
}
std::string kineto(const std::vector<std::string>& events) {
  std::string s = "{\"schemaVersion\":1,\"traceEvents\":[";
  for (std::size_t i = 0; i < events.size(); ++i) s += (i ? ",\n" : "") + events[i];
  return s + "]}";
}
// Two complete steps of three ops each; `dur1` is the second op's duration token.
std::string two_steps(const std::string& dur1) {
  return kineto({step_event(1, 100, 100), op_event("aten::mm", 110, "10"), op_event("aten::relu", 130, dur1),
                 op_event("aten::add", 160, "5"), step_event(2, 200, 100), op_event("aten::mm", 210, "10"),
                 op_event("aten::relu", 230, "10"), op_event("aten::add", 260, "5")});
}

// ---- ETS CSV pieces ----

const char* kCsvHeader =
    "op,dir,params,flops,bytes,kStartTime,kEndTime,space,seq,kernels,kduration,batch,input_type\n";
std::string csv_row(const std::string& kdur) {
  return "152,1,\"[4, 8, 16, 30, 30]\",10,20,1000,1100,5," "1,1," + kdur + ",8,1\n";
}

// ---- ets-trace pieces ----

std::vector<ets::ExecutionTrace> small_traces(int n_ops = 3, const std::string& name = "relu") {
  ets::ExecutionTrace t;
  t.meta.source_format = "live";
  t.measured_us = 0;
  for (int i = 0; i < n_ops; ++i) {
    ets::OpRecord op;
    op.name = i % 2 ? name : (name == "relu" ? "conv2d" : name);
    op.raw_name = "aten::" + op.name;
    op.inputs.push_back({{8, 16, 32, 32}, ets::DType::Float32});
    op.start_us = 10.0 * i;
    op.time_us = 4 + i;
    op.gap_us = 1;
    t.measured_us += op.time_us + op.gap_us;
    t.ops.push_back(op);
  }
  return {t};
}
std::string replace_once(std::string s, const std::string& from, const std::string& to) {
  const auto pos = s.find(from);
  REQUIRE(pos != std::string::npos);
  return s.replace(pos, from.size(), to);
}

// ---- model pieces ----

std::uint32_t crc32c(const std::uint8_t* p, std::size_t n) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < n; ++i) {
    crc ^= p[i];
    for (int k = 0; k < 8; ++k) crc = (crc & 1u) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
  }
  return crc ^ 0xFFFFFFFFu;
}
// Recomputes the trailer CRC (docs/model-format.md: CRC-32C of everything before it, incl. the end magic).
void fix_crc(std::string& b) {
  const std::size_t body = b.size() - 16;
  const std::uint32_t c = crc32c(reinterpret_cast<const std::uint8_t*>(b.data()), body + 8);
  for (int i = 0; i < 4; ++i) b[body + 8 + i] = static_cast<char>(c >> (8 * i));
}
std::string fixture_model() { return slurp(ets_test::fixture("lstm_f16_h16.etsm")); }
// Offset of the value of int metadata `key` (u16 length, key, u8 type 1, i64 little-endian).
std::size_t int_meta_value(const std::string& b, const std::string& key) {
  std::string pat;
  pat += static_cast<char>(key.size());
  pat += '\0';
  pat += key;
  pat += '\x01';
  const auto pos = b.find(pat);
  REQUIRE(pos != std::string::npos);
  return pos + pat.size();
}

// ---- generators: each returns what to do with its input (load it, or run a small pipeline) ----

struct Outcome {
  std::size_t outputs = 0;  // traces loaded / models parsed / predictions made
};
using Action = std::function<Outcome()>;

Action load_trace(const std::string& path) {
  return [path] { return Outcome{ets::Tracer::load(path).size()}; };
}
Action load_model_file(const std::string& path) {
  return [path] {
    (void)ets::load_model(path);
    return Outcome{1};
  };
}

std::map<std::string, std::function<Action(const fs::path&)>> generators() {
  std::map<std::string, std::function<Action(const fs::path&)>> g;
  auto trace_gen = [](std::string file, std::function<std::string()> make) {
    return [file, make](const fs::path& dir) { return load_trace(write(dir / file, make())); };
  };
  g["binary_garbage"] = trace_gen("garbage.bin", [] {
    std::mt19937 rng(7);
    std::string s(4096, '\0');
    for (char& c : s) c = static_cast<char>(rng());
    s[0] = '\x01';  // neither '{', gzip nor SQLite
    return s;
  });
  g["kineto_no_iterations"] = trace_gen("no_iter.json", [] {
    return kineto({op_event("aten::mm", 10, "5"), op_event("aten::relu", 20, "5"), op_event("aten::add", 30, "5")});
  });
  g["kineto_markers_without_ops"] =
      trace_gen("markers.json", [] { return kineto({step_event(1, 100, 100), step_event(2, 200, 100)}); });
  g["kineto_one_op"] = trace_gen("one_op.json", [] {
    return kineto({step_event(1, 100, 100), op_event("aten::mm", 110, "10"), step_event(2, 200, 100),
                   op_event("aten::mm", 210, "10"), op_event("aten::relu", 230, "10")});
  });
  g["kineto_negative_dur"] = trace_gen("neg.json", [] { return two_steps("-7"); });
  g["kineto_nan_dur"] = trace_gen("nan.json", [] { return two_steps("\"nan\""); });
  g["kineto_inf_dur"] = trace_gen("inf.json", [] { return two_steps("1e999"); });
  g["kineto_unmatched_correlation"] = trace_gen("corr.json", [] {
    auto launch = [](double ts, int corr) {
      return "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,\"ts\":" +
             fmt::format("{}", ts) + ",\"dur\":2,\"args\":{\"correlation\":" + std::to_string(corr) + "}}";
    };
    auto kernel = [](double ts, int corr) {
      return "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":" + fmt::format("{}", ts) +
             ",\"dur\":5,\"args\":{\"device\":0,\"stream\":7,\"correlation\":" + std::to_string(corr) + "}}";
    };
    return kineto({step_event(1, 100, 100), op_event("aten::mm", 110, "10"), launch(112, 1), kernel(120, 1),
                   op_event("aten::relu", 130, "10"), launch(132, 2), kernel(140, 2), kernel(150, 99),
                   step_event(2, 200, 100), op_event("aten::mm", 210, "10"), launch(212, 3), kernel(220, 3)});
  });
  g["kineto_duplicated_steps"] = trace_gen("dup.json", [] {
    return kineto({step_event(1, 100, 100), op_event("aten::mm", 110, "10"), step_event(1, 200, 100),
                   op_event("aten::mm", 210, "10"), step_event(2, 300, 100), op_event("aten::mm", 310, "10")});
  });
  g["kineto_tail_steps_all"] = trace_gen("tail.json", [] {
    std::string s = two_steps("10");
    return s.insert(1, "\"ets\":{\"tail_steps\":2},");
  });
  g["kineto_million_ops"] = [](const fs::path& dir) -> Action {
    std::string s = "{\"traceEvents\":[" + step_event(1, 0, 1e6) + ",\n" + step_event(2, 1e6, 1e6);
    s.reserve(80'000'000);
    for (int i = 0; i < 1'000'000; ++i)
      s += fmt::format(",\n{{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"pid\":1,\"tid\":1,\"ts\":{},\"dur\":1}}",
                       2 * i);
    s += "]}";
    const std::string path = write(dir / "million.json", s);
    return [path] {
      const auto traces = ets::Tracer::load(path);
      std::size_t ops = 0;
      for (const auto& t : traces) ops += t.ops.size();
      CHECK(traces.size() == 2);
      CHECK(ops == 1'000'000);
      return Outcome{traces.size()};
    };
  };
  auto csv_gen = [&](std::string body) {
    return trace_gen("T4CPUALL__alexnet.1_1.csv", [body] { return std::string(kCsvHeader) + body; });
  };
  g["csv_header_only"] = csv_gen("");
  g["csv_field_count"] = csv_gen(csv_row("95").substr(0, csv_row("95").rfind(',')) + "\n");
  g["csv_bad_number"] = csv_gen(csv_row("fast"));
  g["csv_nan_duration"] = csv_gen(csv_row("nan"));
  g["csv_negative_duration"] = csv_gen(csv_row("-95"));
  // kStartTime / kEndTime near the int64 limits: their sums and spans would wrap
  g["csv_time_overflow"] = csv_gen("152,1,\"[4]\",10,20,-9223372036854775000,9223372036854775000,"
                                   "9223372036854775000,1,1,9223372036854775000,8,1\n");
  g["csv_rows_out_of_order"] = csv_gen(csv_row("95") + "152,1,\"[4]\",10,20,100,500,5,2,1,95,8,1\n");
  // a UTF-8 BOM, then the required columns in another order with quoted names: found by name
  g["csv_bom_reordered_header"] = trace_gen("bom.csv", [] {
    return std::string("\xEF\xBB\xBF\"dir\",op,params,flops,bytes,kStartTime,kEndTime,space,seq,kernels,kduration,"
                       "batch,input_type\n1,152,\"[4, 8, 16, 30, 30]\",10,20,1000,1100,5,1,1,95,8,1\n");
  });
  g["directory_as_trace"] = [](const fs::path& dir) -> Action {
    fs::create_directories(dir / "a_dir.json");
    return load_trace((dir / "a_dir.json").string());
  };
  // a complete gzip file whose trailer claims ~2 GiB: refused without reserving what it claims
  g["gzip_forged_size"] = [](const fs::path& dir) -> Action {
    std::string b = slurp(ets_test::fixture("cpu_small_mlp.json.gz"));
    b.replace(b.size() - 4, 4, std::string("\xF0\xFF\xFF\x7F", 4));
    return load_trace(write(dir / "forged.json.gz", b));
  };
  auto etst_gen = [&](std::function<std::string(std::string)> edit) {
    return trace_gen("t.etst", [edit] { return edit(ets::serialize_traces(small_traces())); });
  };
  g["etst_truncated"] = etst_gen([](std::string s) { return s.substr(0, s.rfind("{\"end\"")); });
  g["etst_wrong_major"] = etst_gen([](std::string s) { return replace_once(s, "\"version\":[1,", "\"version\":[2,"); });
  g["etst_inf_time"] = etst_gen([](std::string s) { return replace_once(s, "\"t\":4,", "\"t\":1e999,"); });
  g["etst_negative_time"] = etst_gen([](std::string s) { return replace_once(s, "\"t\":4,", "\"t\":-4,"); });
  g["etst_op_count_mismatch"] = etst_gen([](std::string s) { return replace_once(s, "\"ops\":3", "\"ops\":4"); });
  g["nsight_no_kernel_table"] = [](const fs::path& dir) -> Action {
    const std::string path = (dir / "no_kernels.sqlite").string();
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);", nullptr, nullptr,
                         nullptr) == SQLITE_OK);
    sqlite3_close(db);
    return load_trace(path);
  };
  auto model_gen = [](std::function<void(std::string&)> edit) {
    return [edit](const fs::path& dir) {
      std::string b = fixture_model();
      edit(b);
      return load_model_file(write(dir / "m.etsm", b));
    };
  };
  g["model_wrong_major"] = model_gen([](std::string& b) { b[8] = 2; });
  g["model_bad_checksum"] = model_gen([](std::string& b) { b[b.size() / 2] ^= 0x10; });
  g["model_truncated"] = model_gen([](std::string& b) { b.resize(b.size() / 2); });
  g["model_tensor_shape_mismatch"] = model_gen([](std::string& b) {
    b[int_meta_value(b, "lstm.hidden")] += 1;
    fix_crc(b);
  });
  g["model_wrong_arch"] = model_gen([](std::string& b) {
    b = replace_once(b, "bilstm", "bilstX");
    fix_crc(b);
  });
  // serialize_model refuses such a model (ets.model.10), so the stored output is moved in the file's bytes
  g["model_selftest_fails"] = [](const fs::path& dir) -> Action {
    std::string b = fixture_model();
    const ets::ModelFile m = ets::parse_model(reinterpret_cast<const std::uint8_t*>(b.data()), b.size());
    REQUIRE(!m.self_test.empty());
    const std::string expected(reinterpret_cast<const char*>(m.self_test.expected.data()),
                               m.self_test.expected.size() * sizeof(float));
    const std::size_t at = b.find(expected);
    REQUIRE(at != std::string::npos);
    float v = 0;
    std::memcpy(&v, &b[at], sizeof v);
    v += 1.0f;
    std::memcpy(&b[at], &v, sizeof v);
    fix_crc(b);
    return load_model_file(write(dir / "selftest.etsm", b));
  };
  // A model whose stored encoder was fitted on other features than its LSTM reads: caught when predicting.
  g["encoder_model_mismatch"] = [](const fs::path& dir) -> Action {
    const std::string fx = fixture_model();
    ets::ModelFile m = ets::parse_model(reinterpret_cast<const std::uint8_t*>(fx.data()), fx.size());
    const ets::FeatureSpec spec = ets::FeatureSpec::fit(small_traces(20));
    REQUIRE(spec.feature_count() != m.weights.config.input_size);
    m.encoder_state = spec.serialize();
    const std::string path = (dir / "mismatch.etsm").string();
    ets::save_model(m, path);
    return [path] {
      const ets::ModelFile loaded = ets::load_model(path);
      const ets::WindowEncoder enc(ets::FeatureSpec::deserialize(loaded.encoder_state), loaded.window_width,
                                   loaded.window_stride);
      const ets::BiLstmPredictor pred(loaded.weights);
      const auto y = pred.predict(enc.encode(small_traces(20)));
      return Outcome{y.size()};
    };
  };
  // Encoding ops of types the encoder never saw: valid, but predictions degrade, so it warns.
  g["unknown_ops_only"] = [](const fs::path&) -> Action {
    return [] {
      const ets::WindowEncoder enc(ets::FeatureSpec::fit(small_traces(20)));
      const auto batch = enc.encode(small_traces(20, "frobnicate"));
      return Outcome{static_cast<std::size_t>(batch.windows)};
    };
  };
  return g;
}

struct Row {
  std::string name, input, expect, what;
};

std::vector<Row> read_manifest() {
  std::ifstream f(kDir / "cases.tsv");
  REQUIRE(f.good());
  std::vector<Row> rows;
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> cols;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, '\t');) cols.push_back(c);
    INFO(line);
    REQUIRE(cols.size() == 4);
    rows.push_back({cols[0], cols[1], cols[2], cols[3]});
  }
  return rows;
}

}  // namespace

TEST_CASE("bad inputs: each manifest case ends in its documented id or warning, never a crash") {
  const auto rows = read_manifest();
  REQUIRE(rows.size() >= 20);
  auto gens = generators();
  std::map<std::string, int> seen;
  for (const Row& row : rows) {
    INFO("case " << row.name << " (" << row.input << "): expected " << row.expect);
    REQUIRE(++seen[row.name] == 1);
    TempDir tmp;
    Action act;
    if (row.input.rfind("file:", 0) == 0) {
      const fs::path p = kDir / row.input.substr(5);
      REQUIRE(fs::exists(p));
      // Rows named model_* load the file as a model, all others as a trace.
      act = row.name.rfind("model_", 0) == 0 ? load_model_file(p.string()) : load_trace(p.string());
    } else {
      REQUIRE(row.input.rfind("gen:", 0) == 0);
      auto it = gens.find(row.input.substr(4));
      REQUIRE(it != gens.end());
      act = it->second(tmp.path);
    }

    std::string thrown_id, thrown_what;
    Outcome out;
    bool threw = false;
    std::vector<std::string> warnings;
    {
      ets_test::CapturedWarnings log;
      try {
        out = act();
      } catch (const ets::Error& e) {
        threw = true;
        thrown_id = e.id();
        thrown_what = e.what();
      } catch (const std::exception& e) {
        FAIL("non-ets exception: " << e.what());
      }
      warnings = log.lines;
    }
    std::string logged;
    for (const auto& w : warnings) logged += "\n  warning: " + w;
    INFO("threw " << thrown_what << logged);

    if (row.expect == "ok") {
      CHECK_FALSE(threw);
      CHECK(out.outputs > 0);
      CHECK(warnings.empty());
    } else if (row.expect.rfind("warn:", 0) == 0) {
      const std::string id = "[" + row.expect.substr(5) + "]";
      CHECK_FALSE(threw);
      CHECK(out.outputs > 0);
      bool found = false;
      for (const auto& w : warnings) found |= w.rfind(id, 0) == 0;
      CHECK(found);
    } else {
      CHECK(threw);
      CHECK(thrown_id == row.expect);
      CHECK(thrown_what.size() > thrown_id.size() + 3);  // a message, not just the id
    }
  }
}
