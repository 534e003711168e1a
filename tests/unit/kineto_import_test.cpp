// ets-test-labels: unit
// Kineto / PyTorch-profiler JSON import on the committed CPU fixture and on synthetic 2021-schema snippets.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <simdjson.h>

#include "ets/error.hpp"
#include "ets/tracer.hpp"
#include "import/importers.hpp"
#include "import/op_normalize.hpp"
#include "alloc_hooks.hpp"  // measures the heap an import holds at once (operator new replaced; not under ASan / TSan)
#include "test_support.hpp"

using namespace ets;

TEST_CASE("CPU fixture: iterations, phases, names, and Σ(time+gap) against the ProfilerStep spans") {
  const auto its = Tracer::load(ets_test::fixture("cpu_small_mlp.json.gz"));
  // tools/make_fixtures/cpu_trace.py records ProfilerStep#0..3.
  REQUIRE(its.size() == 4);
  for (std::size_t i = 0; i < its.size(); ++i) {
    const auto& t = its[i];
    CHECK(t.iteration == static_cast<std::int64_t>(i));
    CHECK(t.meta.source_format == "kineto");
    CHECK(t.meta.optimizer == "sgd");
    CHECK(t.meta.batch_size == 128);
    std::map<std::string, int> fwd;
    int phases[3] = {0, 0, 0};
    for (const auto& op : t.ops) {
      ++phases[static_cast<int>(op.phase)];
      if (op.phase == Phase::Forward) ++fwd[op.name];
      CHECK(op.time_us >= 0);
      CHECK(op.gap_us >= 0);
      CHECK(op.name.find("aten::") == std::string::npos);
    }
    // Model: conv2d, relu, flatten, linear, relu, linear + loss; backward and SGD update present.
    CHECK(fwd["conv2d"] == 1);
    CHECK(fwd["linear"] == 2);
    CHECK(fwd["relu"] == 2);
    CHECK(fwd.count("empty") == 0);  // record_function bookkeeping is filtered
    CHECK(fwd.count("zeros") == 0);
    CHECK(phases[1] > 0);
    CHECK(phases[2] > 0);
    if (i + 1 < its.size()) CHECK(t.sum_us() == Approx(its[i + 1].start_us - t.start_us).epsilon(1e-12));
    // Σ(time+gap) is the period from first op to first op; the ProfilerStep span misses prof.step()'s own
    // 40-70 µs between spans, which the fixture's ~60 ms steps keep well inside 0.5% (docs/trace-format.md).
    REQUIRE(t.has_measurement());
    CHECK(std::abs(t.sum_us() - t.measured_us) / t.measured_us < 0.005);
  }
  // FLOPs come from the trace (summed from inner ops) or analytically; conv and linear both have them.
  for (const auto& op : its[1].ops)
    if (op.phase == Phase::Forward && (op.name == "conv2d" || op.name == "linear")) {
      CHECK(op.flops > 0);
      CHECK(op.hyper.has(Hyper::InChannels));
      CHECK(op.hyper.has(Hyper::OutChannels));
    }
  const auto conv = std::find_if(its[1].ops.begin(), its[1].ops.end(), [](const OpRecord& o) { return o.name == "conv2d"; });
  REQUIRE(conv != its[1].ops.end());
  CHECK(conv->hyper.get(Hyper::KernelH) == 3);
  CHECK(conv->hyper.get(Hyper::OutChannels) == 32);
  // 2·N·Cout·Hout·Wout·Cin·k·k for a 3x3 conv 3->32 on 128x3x32x32, as torch's own flop counter reports it.
  CHECK(conv->flops == Approx(2.0 * 128 * 32 * 30 * 30 * 3 * 3 * 3));
  CHECK(conv->sequence >= 0);
}

namespace {
// 2021 schema: cat Operator/Runtime/Kernel, lower-case "external id", string tids, "stream 7".
const char* kOld = R"({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "Tesla V100"}],
"traceEvents": [
 {"ph": "X", "cat": "Operator", "name": "ProfilerStep#3", "pid": 9, "tid": "9", "ts": 1000, "dur": 100, "args": {}},
 {"ph": "X", "cat": "Operator", "name": "aten::conv2d", "pid": 9, "tid": "9", "ts": 1010, "dur": 20,
  "args": {"External id": 5, "Input Dims": [[8, 3, 32, 32], [16, 3, 3, 3], [16], [], [], [], []],
           "Input type": ["float", "float", "float", "ScalarList", "ScalarList", "ScalarList", "Scalar"]}},
 {"ph": "X", "cat": "Operator", "name": "aten::cudnn_convolution", "pid": 9, "tid": "9", "ts": 1012, "dur": 15, "args": {"External id": 6}},
 {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": "9", "ts": 1013, "dur": 5,
  "args": {"correlation": 77, "external id": 6}},
 {"ph": "X", "cat": "Kernel", "name": "implicit_gemm", "pid": 0, "tid": "stream 7", "ts": 1040.5, "dur": 30.25,
  "args": {"device": 0, "stream": 7, "correlation": 77, "external id": 6}},
 {"ph": "X", "cat": "Operator", "name": "aten::relu", "pid": 9, "tid": "9", "ts": 1040, "dur": 5, "args": {"External id": 7}},
 {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": "9", "ts": 1041, "dur": 2, "args": {"correlation": 78}},
 {"ph": "X", "cat": "Kernel", "name": "relu_kernel", "pid": 0, "tid": "stream 7", "ts": 1080, "dur": 4, "args": {"device": 0, "correlation": 78}},
 {"ph": "X", "cat": "Kernel", "name": "orphan", "pid": 0, "tid": "stream 7", "ts": 1086, "dur": 1, "args": {"device": 0, "correlation": 999}}
]})";
}  // namespace

TEST_CASE("Kineto 2021 schema: string tids, lower-case external id, fractional µs, kernel without launch") {
  const auto its = ets::import::read_kineto_json(kOld, "old.json", {});
  REQUIRE(its.size() == 1);
  const auto& t = its[0];
  CHECK(t.iteration == 3);
  CHECK(t.meta.device == "Tesla V100");
  REQUIRE(t.ops.size() == 2);
  CHECK(t.ops[0].name == "conv2d");
  CHECK(t.ops[0].time_us == Approx(30.25));
  CHECK(t.ops[0].gap_us == Approx(1080 - 1040.5 - 30.25));
  CHECK(t.ops[0].inputs.size() == 3);
  CHECK(t.ops[1].kernels == 2);  // relu_kernel + the orphan that ran inside relu's window
  CHECK(t.ops[1].time_us == Approx(5));
  CHECK(t.sum_us() == Approx(1100 - 1040.5));  // the last iteration runs to its step's end, after its last kernel
  CHECK(t.measured_us == 100);
}

namespace {
// CPU steps whose first op (aten::linear) carries no shapes itself, so its inputs come from its child aten::addmm;
// aten::conv2d carries its own shapes and scalars and has a child that must not override them.
std::string cpu_steps(int steps) {
  std::string s = R"({"schemaVersion": 1, "traceEvents": [)";
  for (int k = 0; k < steps; ++k) {
    const long b = 1000L + 200L * k;
    s += fmt::format(
        R"({{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{0}", "pid": 7, "tid": 7, "ts": {1}, "dur": 200, "args": {{"External id": {2}}}}},)"
        R"({{"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 7, "tid": 7, "ts": {3}, "dur": 20, "args": {{"External id": {4}, "Sequence number": {0}}}}},)"
        R"({{"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 7, "tid": 7, "ts": {5}, "dur": 15, "args": {{"External id": {6}, "Input Dims": [[4], [8, 16], [16, 4]], "Input type": ["float", "float", "float", "Scalar", "Scalar"], "Concrete Inputs": ["", "", "", "1", "1"], "flops": 1024}}}},)"
        R"({{"ph": "X", "cat": "cpu_op", "name": "aten::conv2d", "pid": 7, "tid": 7, "ts": {7}, "dur": 30, "args": {{"External id": {8}, "Input Dims": [[8, 3, 32, 32], [16, 3, 3, 3], [16], [], [], [], []], "Input type": ["float", "float", "float", "ScalarList", "ScalarList", "ScalarList", "Scalar"], "Concrete Inputs": ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "1"]}}}},)"
        R"({{"ph": "X", "cat": "cpu_op", "name": "aten::convolution", "pid": 7, "tid": 7, "ts": {9}, "dur": 25, "args": {{"External id": {10}, "Input Dims": [[1, 1, 5, 5], [2, 1, 5, 5]], "Input type": ["float", "float"]}}}},)"
        R"({{"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 7, "tid": 7, "ts": {11}, "dur": 5, "args": {{"External id": {12}, "Input Dims": [[8, 16, 15, 15]], "Input type": ["float"]}}}})",
        k, b, 10 * k, b + 10, 10 * k + 1, b + 12, 10 * k + 2, b + 40, 10 * k + 3, b + 42, 10 * k + 4, b + 80, 10 * k + 5);
    s += k + 1 < steps ? ",\n" : "\n";
  }
  return s + "]}";
}
}  // namespace

TEST_CASE("Kineto CPU ops read their shapes when they become ops, from themselves or their first child") {
  const std::string small = cpu_steps(3), large = cpu_steps(2600);
  REQUIRE(large.size() > (std::size_t{1} << 20));  // read in several runs: offsets must map across them
  for (const std::string* doc : {&small, &large}) {
    const auto its = ets::import::read_kineto_json(*doc, "steps.json", {});
    REQUIRE(its.size() >= 2);
    for (const auto& t : its) {
      REQUIRE(t.ops.size() == 3);
      const auto& lin = t.ops[0];
      CHECK(lin.name == "linear");
      REQUIRE(lin.inputs.size() == 3);  // the child's tensors
      CHECK(lin.inputs[2].dims == std::vector<std::int64_t>{16, 4});
      CHECK(lin.flops == Approx(1024));
      CHECK(lin.sequence == t.iteration);
      const auto& conv = t.ops[1];
      CHECK(conv.name == "conv2d");
      REQUIRE(conv.inputs.size() == 3);
      CHECK(conv.inputs[0].dims == std::vector<std::int64_t>{8, 3, 32, 32});  // its own, not the child's
      CHECK(conv.hyper.get(Hyper::StrideH) == 2);
      CHECK(conv.hyper.get(Hyper::OutChannels) == 16);
      CHECK(conv.hyper.get(Hyper::KernelW) == 3);
      CHECK(t.ops[2].name == "relu");
      CHECK(t.ops[2].inputs.size() == 1);
    }
  }
}

TEST_CASE("text that is not JSON inside an event is ets.kineto.1 with its place, not the end of the events") {
  // Read as the end of an object or array, such damage silently dropped the rest of the event and every event after
  // it in its run: a file damaged in its first event read as "no iteration with operators", one damaged later lost
  // ops without a word. The large document puts the damage in a later run (runs are ~512 KiB; a step ~1.3 KB).
  struct Damage {
    const char* what;
    std::string from, to;
  };
  for (const auto& [steps, k] : {std::pair<int, int>{5, 2}, {2600, 2000}}) {
    const std::string good = cpu_steps(steps);
    REQUIRE(ets::import::read_kineto_json(good, "steps.json", {}).size() == static_cast<std::size_t>(steps));
    const long b = 1000L + 200L * k;  // step k's ops, as cpu_steps writes them
    const std::string conv = fmt::format(R"("ts": {}, "dur": 30,)", b + 40);
    const std::string addmm = fmt::format(R"("External id": {}, "Input Dims")", 10 * k + 2);
    const std::string conv_dims = fmt::format(R"("External id": {}, "Input Dims": [[8, 3, 32, 32], [16)", 10 * k + 3);
    const std::string relu = fmt::format(R"("External id": {}, "Input Dims": [[8, 16, 15, 15]], "Input type": ["float"]}}}},)",
                                         10 * k + 5);
    const std::vector<Damage> damages = {
        {"a key without ':'", conv, fmt::format(R"("ts": {}, "dur", 30,)", b + 40)},
        {"two fields without ','", conv, fmt::format(R"("ts": {} "dur": 30,)", b + 40)},
        {"two events without ','", relu, relu.substr(0, relu.size() - 1)},
        {"an args field without ':'", addmm, fmt::format(R"("External id" {}, "Input Dims")", 10 * k + 2)},
        {"input dims without ','", conv_dims, fmt::format(R"("External id": {}, "Input Dims": [[8, 3, 32, 32] [16)", 10 * k + 3)},
        {"input types without ','", relu,
         fmt::format(R"("External id": {}, "Input Dims": [[8, 16, 15, 15]], "Input type": ["float" "x"]}}}},)", 10 * k + 5)}};
    for (const Damage& d : damages) {
      INFO(d.what << ", step " << k << " of " << steps);
      const std::size_t at = good.find(d.from);
      REQUIRE(at != std::string::npos);
      REQUIRE(good.find(d.from, at + 1) == std::string::npos);
      std::string bad = good;
      bad.replace(at, d.from.size(), d.to);
      const std::string text = ets_test::error_text([&] { ets::import::read_kineto_json(bad, "steps.json", {}); });
      REQUIRE_THAT(text, Catch::StartsWith("[ets.kineto.1] 'steps.json' is not a readable Kineto JSON trace"));
      // The place given is where the parse stood when it met the damage (within a few tokens after it), or the start
      // of the op's "args" where the damage lies in shapes that are read only when the event turns out to be an op.
      const bool in_args = text.find("(in the \"args\" at byte ") != std::string::npos;
      const auto place = text.find(in_args ? " at byte " : "(near byte ");
      REQUIRE(place != std::string::npos);
      const std::size_t byte = std::stoul(text.substr(place + (in_args ? 9 : 11)));
      if (in_args) {
        CHECK(byte <= at);
        CHECK(at - byte < 300);
        CHECK(bad.compare(byte, 15, "{\"External id\":") == 0);
      } else {
        CHECK(byte + 40 >= at);  // the damage's start, or a token before it (a missing ',' is seen at the next key)
        CHECK(byte <= at + d.to.size() + 40);
      }
    }
  }
}

TEST_CASE("a lost or extra bracket in the events is ets.kineto.1, not an event dropped or read in part") {
  // The lazy parse skips what it does not read with little checking: an event whose '{' is lost read as a string
  // and was dropped; an "args" whose '{' is lost ended its event there, and the op took its child's shapes.
  for (int steps : {5, 2600}) {
    const std::string good = cpu_steps(steps);
    const long b = 1000L + 200L * 2;  // step 2's ops
    const std::string relu = fmt::format(R"({{"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 7, "tid": 7, "ts": {})", b + 80);
    const std::string linear_args = fmt::format(R"("ts": {}, "dur": 20, "args": {{"External id")", b + 10);
    const std::pair<std::string, std::string> damages[] = {
        {relu, relu.substr(1)},                                   // an event's '{' lost
        {linear_args, linear_args.substr(0, linear_args.size() - 14) + "\"External id\""},  // its args' '{' lost
        {relu, "{" + relu}};                                       // one '{' too many
    for (const auto& [from, to] : damages) {
      INFO(to << ", " << steps << " steps");
      const std::size_t at = good.find(from);
      REQUIRE(at != std::string::npos);
      std::string bad = good;
      bad.replace(at, from.size(), to);
      CHECK(ets_test::error_id([&] { ets::import::read_kineto_json(bad, "steps.json", {}); }) == "ets.kineto.1");
    }
  }
}

TEST_CASE("a file whose events the scan does not cut is checked whole, numbers out of range still read by the rules") {
  // An escaped key hides the events from the scan: the file is parsed whole, and checked whole first. A number too
  // large for a double is JSON, and read as the rules say (ets.kineto.5 / .11); a broken number or a missing ','
  // is not.
  const auto doc = [](const std::string& dur, const std::string& ts, const char* sep) {
    return std::string(R"({"trace\u0045vents": [)") +
           R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 100, "dur": 100},)" +
           R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 110, "dur": )" + dur + "}," +
           R"({"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 1, "tid": 1, "ts": )" + ts + R"(, "dur": 5})" + sep +
           R"({"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 150, "dur": 5},)" +
           R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": 200, "dur": 100},)" +
           R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 210, "dur": 5}]})";
  };
  ets::import::detail::ArrayRuns layout;
  REQUIRE_FALSE(ets::import::detail::find_array_runs(doc("5", "120", ","), "traceEvents", 1 << 19, true, layout));
  {
    const ets_test::CapturedWarnings log;
    const auto its = ets::import::read_kineto_json(doc("1e999", "99999999999999999999999", ","), "big.json", {});
    REQUIRE(its.size() == 2);
    CHECK(its[0].ops.size() == 2);  // mm (its dur clamped) and add; relu's ts is beyond range: dropped
    const auto said = [&](const char* id) {
      return std::any_of(log.lines.begin(), log.lines.end(), [&](const std::string& l) { return l.find(id) == 1; });
    };
    CHECK(said("ets.kineto.5"));
    CHECK(said("ets.kineto.11"));
  }
  CHECK(ets_test::error_id([&] { ets::import::read_kineto_json(doc("5x", "120", ","), "x.json", {}); }) == "ets.kineto.1");
  CHECK(ets_test::error_id([&] { ets::import::read_kineto_json(doc("1e999", "12.", ","), "x.json", {}); }) ==
        "ets.kineto.1");
  CHECK(ets_test::error_id([&] { ets::import::read_kineto_json(doc("5", "120", ""), "x.json", {}); }) == "ets.kineto.1");
  // JSON nested deeper than simdjson's default limit (1,024 levels) is JSON to the whole check, as it is to the runs,
  // which read such a file: an op's argument 5,000 levels deep (the check said "too deep" and refused the file).
  const std::string nested = std::string(5000, '[') + std::string(5000, ']');
  const std::string deep = doc("5, \"args\": {\"x\": " + nested + "}", "120", ",");
  CHECK(ets::import::read_kineto_json(deep, "deep.json", {}).size() == 2);
}

TEST_CASE("a missing event (',]', ',,') is refused whatever the file's size, where a run is cut beside it too") {
  // The runs are cut at commas once ~512 KiB long: when the last comma, before a missing last event, is cut, the
  // last run held nothing but blanks, which read as no events, and the file was taken as it stood. The same file
  // with a shorter last event was refused. Both are now parsed whole, and refused.
  const auto event = [](const char* name, int ts, const std::string& pad) {
    return fmt::format(R"({{"ph": "X", "cat": "cpu_op", "name": "{}", "pid": 1, "tid": 1, "ts": {}, "dur": 10, )"
                       R"("args": {{"pad": "{}"}}}})", name, ts, pad);
  };
  for (const std::size_t pad : {std::size_t{10}, std::size_t{600000}})
    for (const char* missing : {",]", ",,"}) {
      INFO("pad " << pad << ", missing event: " << missing);
      std::string doc = R"({"traceEvents": [)" + event("ProfilerStep#1", 0, "") + "," + event("aten::relu", 1, "") +
                        "," + event("ProfilerStep#2", 100, "") + "," + event("aten::add", 120, std::string(pad, 'x'));
      doc += std::string(missing) == ",]" ? ",]}" : ",," + event("aten::relu", 150, "") + "]}";
      CHECK(ets_test::error_id([&] { ets::import::read_kineto_json(doc, "missing.json", {}); }) == "ets.kineto.1");
    }
}

TEST_CASE("Kineto reader errors") {
  CHECK_THROWS_WITH(ets::import::read_kineto_json("{\"traceEvents\": [", "bad.json", {}), Catch::Contains("ets.kineto.1"));
  CHECK_THROWS_WITH(ets::import::read_kineto_json("{\"other\": 1}", "bad.json", {}), Catch::Contains("ets.kineto.1"));
  CHECK_THROWS_WITH(ets::import::read_kineto_json("{\"traceEvents\": []}", "empty.json", {}),
                    Catch::Contains("ets.kineto.3"));
  ets::import::Options o;
  o.rank = 3;
  CHECK_THROWS_WITH(ets::import::read_kineto_json(R"({"distributedInfo": {"rank": 1}, "traceEvents": []})", "r.json", o),
                    Catch::Contains("ets.kineto.2"));
  // a metadata string longer than one may hold: every iteration would keep a copy (a 1 MB model name in a file of
  // 4,000 steps took 4 GB), so the file is refused before they are made; at the limit, it reads
  const auto with_model = [](std::size_t bytes) {
    return R"({"ets": {"model": ")" + std::string(bytes, 'm') + R"("}, "traceEvents": [)"
           R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 10},)"
           R"({"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 1, "tid": 1, "ts": 1, "dur": 5}]})";
  };
  CHECK(ets::import::read_kineto_json(with_model(4096), "m.json", {}).at(0).meta.model.size() == 4096);
  CHECK_THROWS_WITH(ets::import::read_kineto_json(with_model(4097), "m.json", {}), Catch::Contains("ets.import.6"));
  const std::string long_device = R"({"deviceProperties": [{"name": ")" + std::string(5000, 'g') +
                                  R"("}], "traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 1,)"
                                  R"( "tid": 1, "ts": 1, "dur": 5}]})";
  CHECK_THROWS_WITH(ets::import::read_kineto_json(long_device, "d.json", {}), Catch::Contains("ets.import.6"));
}

namespace {
// The reviewers' GPU trace t1 at epoch time T0 (host events pid 100 tid 1): ProfilerStep#1 [0,1000) and #2
// [1000,2000); conv2d launches two overlapping kernels (streams 7 and 8), relu a memcpy and a memset, add and mul a
// kernel each. Correct: conv2d t150 g50, relu t30 g670 | add t50 g50, mul t10 g790. `without`: launches (by
// correlation id) left out; `extra`: events added (each followed by a comma); `top`: top-level members before
// "traceEvents" (each followed by a comma); `scale`: every ts and dur multiplied by it (1000: written in ns).
constexpr long long kT0 = 1700000000000000;
std::string t1_json(const std::vector<int>& without = {}, const std::string& extra = "", const std::string& top = "",
                    long long scale = 1) {
  const auto x = [scale](const char* cat, const char* name, double ts, double dur, int pid, int tid,
                         const std::string& args) {
    return fmt::format(R"({{"ph": "X", "cat": "{}", "name": "{}", "pid": {}, "tid": {}, "ts": {}, "dur": {}{}}},)",
                       cat, name, pid, tid, (kT0 + static_cast<long long>(ts)) * scale, dur * static_cast<double>(scale),
                       args.empty() ? "" : R"(, "args": {)" + args + "}");
  };
  std::string s = "{" + top + R"("traceEvents": [)" + extra;
  s += x("user_annotation", "ProfilerStep#1", 0, 1000, 100, 1, "") + x("user_annotation", "ProfilerStep#2", 1000, 1000, 100, 1, "");
  s += x("cpu_op", "aten::conv2d", 10, 90, 100, 1, "") + x("cpu_op", "aten::relu", 100, 50, 100, 1, "") +
       x("cpu_op", "aten::add", 1010, 40, 100, 1, "") + x("cpu_op", "aten::mul", 1060, 20, 100, 1, "");
  const struct { int corr; double launch; const char* cat; double ts, dur; int stream; } dev[] = {
      {1, 20, "kernel", 200, 100, 7}, {2, 30, "kernel", 250, 100, 8}, {3, 110, "gpu_memcpy", 400, 20, 7},
      {4, 120, "gpu_memset", 430, 10, 7}, {5, 1020, "kernel", 1100, 50, 7}, {6, 1070, "kernel", 1200, 10, 7}};
  for (const auto& d : dev) {
    if (std::find(without.begin(), without.end(), d.corr) == without.end())
      s += x("cuda_runtime", "cudaLaunchKernel", d.launch, 5, 100, 1, fmt::format(R"("correlation": {})", d.corr));
    s += x(d.cat, "k", d.ts, d.dur, 0, d.stream, fmt::format(R"("device": 0, "stream": {}, "correlation": {})", d.stream, d.corr));
  }
  s.pop_back();
  return s + "]}";
}
using TG = std::vector<std::pair<double, double>>;
TG times(const std::vector<ExecutionTrace>& its) {
  TG v;
  for (const auto& t : its)
    for (const auto& op : t.ops) v.emplace_back(op.time_us, op.gap_us);
  return v;
}
const TG kT1{{150, 50}, {30, 670}, {50, 50}, {10, 790}};
}  // namespace

TEST_CASE("Kineto GPU trace t1: kernels by launch; a GPU trace without launches is an error, not empty iterations") {
  const auto its = ets::import::read_kineto_json(t1_json(), "t1.json", {});
  REQUIRE(its.size() == 2);
  CHECK(times(its) == kT1);
  CHECK(its[0].ops[0].kernels == 2);
  // Without any launch event no kernel can be attributed: it read as two iterations of zero ops (exit 0), while
  // ets.import.2 said each kernel went to the op running when it started.
  CHECK_THROWS_WITH(ets::import::read_kineto_json(t1_json({1, 2, 3, 4, 5, 6}), "t1.json", {}),
                    Catch::Contains("ets.kineto.3") && Catch::Contains("no runtime launch events"));
  // Launches that exist but lie in no operator's span: the operators ran on another thread
  std::string outside = t1_json();
  for (const char* op : {"aten::conv2d", "aten::relu", "aten::add", "aten::mul"}) {
    const std::string on_1 = fmt::format(R"("name": "{}", "pid": 100, "tid": 1,)", op);
    outside.replace(outside.find(on_1), on_1.size(), fmt::format(R"("name": "{}", "pid": 100, "tid": 9,)", op));
  }
  CHECK_THROWS_WITH(ets::import::read_kineto_json(outside, "t1.json", {}), Catch::Contains("ets.kineto.3"));
  // Spans without an operator name that launch the work themselves are ops of it (launch scopes), timed alike
  std::string unnamed = t1_json();
  for (const char* op : {"aten::conv2d", "aten::relu", "aten::add", "aten::mul"})
    unnamed.replace(unnamed.find(op), std::string(op).size(), std::string("user_") + (op + 6));
  const auto u = ets::import::read_kineto_json(unnamed, "t1.json", {});
  REQUIRE(u.size() == 2);
  CHECK(times(u) == kT1);
  CHECK(u[0].ops[0].name == "user_conv2d");
  CHECK(u[0].ops[0].raw_name == "user_conv2d");
}

namespace {
// One step of a torch.compile'd model trained with apex FusedAdam (the shape of HTA's trace_diff fixtures): the
// compiled forward replays a CUDA graph from its CompiledFunction span (a cpu_op without "::"), which also copies
// the inputs in (aten::copy_); the backward runs on the autograd engine's thread 2; FusedAdam launches its kernel
// straight from its Optimizer.step# span. A stray launch lies directly in the ProfilerStep#.
const char* kLaunchScopes = R"({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "A100"}],
"traceEvents": [
 {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 1000, "dur": 1000},
 {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 1, "ts": 1010, "dur": 20, "args": {"Sequence number": 1}},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1015, "dur": 2, "args": {"correlation": 1}},
 {"ph": "X", "cat": "cpu_op", "name": "CompiledFunction", "pid": 1, "tid": 1, "ts": 1040, "dur": 60, "args": {"Sequence number": 2}},
 {"ph": "X", "cat": "cpu_op", "name": "aten::copy_", "pid": 1, "tid": 1, "ts": 1045, "dur": 10},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 1, "tid": 1, "ts": 1048, "dur": 2, "args": {"correlation": 2}},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": 1, "tid": 1, "ts": 1070, "dur": 5, "args": {"correlation": 3}},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1110, "dur": 2, "args": {"correlation": 4}},
 {"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: AddmmBackward0", "pid": 1, "tid": 2, "ts": 1120, "dur": 30},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, "ts": 1125, "dur": 2, "args": {"correlation": 5}},
 {"ph": "X", "cat": "user_annotation", "name": "Optimizer.step#FusedAdam.step", "pid": 1, "tid": 1, "ts": 1200, "dur": 50},
 {"ph": "X", "cat": "cpu_op", "name": "aten::add_", "pid": 1, "tid": 1, "ts": 1202, "dur": 3},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1210, "dur": 2, "args": {"correlation": 6}},
 {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 1100, "dur": 50, "args": {"device": 0, "stream": 7, "correlation": 1}},
 {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": 7, "ts": 1160, "dur": 10, "args": {"device": 0, "stream": 7, "correlation": 2}},
 {"ph": "X", "cat": "kernel", "name": "triton_fused_a", "pid": 0, "tid": 7, "ts": 1180, "dur": 30, "args": {"device": 0, "stream": 7, "correlation": 3}},
 {"ph": "X", "cat": "kernel", "name": "triton_fused_b", "pid": 0, "tid": 7, "ts": 1215, "dur": 20, "args": {"device": 0, "stream": 7, "correlation": 3}},
 {"ph": "X", "cat": "kernel", "name": "gemm_bwd", "pid": 0, "tid": 7, "ts": 1300, "dur": 20, "args": {"device": 0, "stream": 7, "correlation": 5}},
 {"ph": "X", "cat": "kernel", "name": "stray", "pid": 0, "tid": 7, "ts": 1330, "dur": 5, "args": {"device": 0, "stream": 7, "correlation": 4}},
 {"ph": "X", "cat": "kernel", "name": "multi_tensor_apply_kernel", "pid": 0, "tid": 7, "ts": 1400, "dur": 40, "args": {"device": 0, "stream": 7, "correlation": 6}}
]})";
}  // namespace

TEST_CASE("Kineto GPU: a span without an operator name that launches device work itself is an op of that work") {
  // Before: no op candidate held the graph launch or FusedAdam's launch, so the graph's kernels fell to aten::copy_'s
  // window and the update kernel to the backward op's (update work counted as backward; no update op at all).
  const auto its = ets::import::read_kineto_json(kLaunchScopes, "launch_scopes.json", {});
  REQUIRE(its.size() == 1);
  const auto& ops = its[0].ops;
  std::vector<std::string> names;
  for (const auto& op : ops) names.push_back(op.name);
  REQUIRE(names == std::vector<std::string>{"linear", "copy", "compiled_function", "linear", "fused_adam.step"});
  CHECK(ops[1].kernels == 1);  // the input copy stays aten::copy_'s, nested in CompiledFunction as it is
  CHECK(ops[2].raw_name == "CompiledFunction");
  CHECK(ops[2].phase == Phase::Forward);
  CHECK(ops[2].kernels == 2);
  CHECK(ops[2].time_us == Approx(50));
  CHECK(ops[2].gap_us == Approx(1300 - 1180 - 50));
  CHECK(ops[2].sequence == 2);
  // the ProfilerStep# marker is no op: the stray launch directly in it falls to the window holding its kernel
  CHECK(ops[3].phase == Phase::Backward);
  CHECK(ops[3].kernels == 2);
  CHECK(ops[4].raw_name == "Optimizer.step#FusedAdam.step");
  CHECK(ops[4].phase == Phase::Update);
  CHECK(ops[4].kernels == 1);
  CHECK(ops[4].time_us == Approx(40));
  CHECK(its[0].sum_us() == Approx(2000 - 1100));  // to the step's end
  CHECK(its[0].meta.optimizer == "fusedadam");
  // the name rule: a record_function label's detail, snake-cased; a Backward node's name maps as one
  bool bwd = true;
  CHECK(ets::import::launch_scope_op_name("CompiledFunction", &bwd) == "compiled_function");
  CHECK(!bwd);
  CHECK(ets::import::launch_scope_op_name("CompiledFunctionBackward", &bwd) == "compiled_function");
  CHECK(bwd);
}

TEST_CASE("Kineto times are µs from the earliest complete event read, not from the first event with a ts") {
  // A metadata event at ts 0 first in the file made epoch 0 the origin: times of ~1.7e15 µs kept 0.25 µs steps, so
  // conv2d's gap read 49.75 and relu's start 399.75.
  const std::string meta0 = R"({"ph": "M", "name": "process_name", "pid": 100, "tid": 0, "ts": 0, "args": {"name": "python"}},)";
  const std::string python = fmt::format(R"({{"ph": "X", "cat": "python_function", "name": "f", "pid": 100, "tid": 1, )"
                                          R"("ts": {}, "dur": 1}},)", kT0 - 5000000);
  for (const std::string& extra : {meta0, python, std::string()}) {
    const auto its = ets::import::read_kineto_json(t1_json({}, extra), "t1.json", {});
    REQUIRE(its.size() == 2);
    CHECK(times(its) == kT1);
    CHECK(its[0].ops[1].start_us == 400);
  }
  // The earliest event need not come first: the first in the file (a kernel here) is not the origin
  std::string late_first = t1_json({}, fmt::format(R"({{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 9, )"
                                                   R"("ts": {}, "dur": 1, "args": {{"correlation": 1}}}},)", kT0 + 260));
  const auto its = ets::import::read_kineto_json(late_first, "t1.json", {});
  REQUIRE(its.size() == 2);
  CHECK(its[0].start_us == 200);  // ProfilerStep#1 at T0 is the earliest: time 0
}

TEST_CASE("Kineto distributedInfo.rank: a whole number, also as a string of digits; anything else is refused") {
  const auto with_rank = [](const std::string& rank) {
    return t1_json({}, "", R"("distributedInfo": {"backend": "nccl", "rank": )" + rank + "},");
  };
  ets::import::Options want3, want2;
  want3.rank = 3;
  want2.rank = 2;
  for (const char* rank : {"3", "3.0", "\"3\""}) {
    INFO(rank);
    const auto its = ets::import::read_kineto_json(with_rank(rank), "r.json", want3);
    REQUIRE(!its.empty());
    CHECK(its[0].meta.extra.at("rank") == "3");
    // a string rank skipped the check (read as unknown)
    CHECK_THROWS_WITH(ets::import::read_kineto_json(with_rank(rank), "r.json", want2), Catch::Contains("ets.kineto.2"));
  }
  // 3.7 was truncated to 3 and passed the check for rank 3; others read as unknown and passed any
  for (const char* rank : {"3.7", "-1", "\"3.7\"", "\"three\"", "\"\"", "[3]", "1e300"}) {
    INFO(rank);
    CHECK_THROWS_WITH(ets::import::read_kineto_json(with_rank(rank), "r.json", want3), Catch::Contains("ets.kineto.10"));
    CHECK_THROWS_WITH(ets::import::read_kineto_json(with_rank(rank), "r.json", {}), Catch::Contains("ets.kineto.10"));
  }
  // null, or no rank at all: unknown, no check
  CHECK(ets::import::read_kineto_json(with_rank("null"), "r.json", want3).at(0).meta.extra.count("rank") == 0);
  CHECK(ets::import::read_kineto_json(t1_json(), "r.json", want3).size() == 2);
}

TEST_CASE("Kineto events without a readable ts, or with an absurd dur, are counted and reported") {
  const auto replaced = [](std::string doc, const std::string& what, const std::string& by) {
    const auto at = doc.find(what);
    REQUIRE(at != std::string::npos);
    return doc.replace(at, what.size(), by);
  };
  const std::string t1 = t1_json();
  const std::string step2_ts = fmt::format(R"("ProfilerStep#2", "pid": 100, "tid": 1, "ts": {})", kT0 + 1000);
  const std::string k5_ts = fmt::format(R"("ts": {}, "dur": 50)", kT0 + 1100);
  // A step or a kernel whose ts is unreadable or out of range was dropped in silence (and its iteration with it).
  for (const char* bad : {R"("x")", "1e300", "99999999999999999999", "null"}) {
    INFO(bad);
    {
      const ets_test::CapturedWarnings log;
      const auto its = ets::import::read_kineto_json(
          replaced(t1, step2_ts, R"("ProfilerStep#2", "pid": 100, "tid": 1, "ts": )" + std::string(bad)), "t.json", {});
      CHECK(its.size() == 1);
      REQUIRE(log.lines.size() == 1);
      CHECK(log.lines[0].rfind("[ets.kineto.11]", 0) == 0);
      CHECK(log.lines[0].find(" 1 complete events") != std::string::npos);
    }
    const ets_test::CapturedWarnings log;
    const auto its = ets::import::read_kineto_json(
        replaced(t1, k5_ts, R"("ts": )" + std::string(bad) + R"(, "dur": 50)"), "t.json", {});
    REQUIRE(its.size() == 2);
    CHECK(its[1].ops.size() == 1);  // add lost its kernel
    REQUIRE(!log.lines.empty());
    CHECK(log.lines[0].rfind("[ets.kineto.11]", 0) == 0);
  }
  // A kernel or a step of dur 1e300 was taken (the step then held every later op, the kernel every later µs)
  {
    const ets_test::CapturedWarnings log;
    const auto its = ets::import::read_kineto_json(replaced(t1, k5_ts, fmt::format(R"("ts": {}, "dur": 1e300)", kT0 + 1100)),
                                                   "t.json", {});
    REQUIRE(its.size() == 2);
    CHECK(times(its) == TG{{150, 50}, {30, 670}, {0, 100}, {10, 790}});
    REQUIRE(log.lines.size() == 1);
    CHECK(log.lines[0].rfind("[ets.kineto.5]", 0) == 0);
  }
  {
    const ets_test::CapturedWarnings log;
    const auto its = ets::import::read_kineto_json(replaced(t1, step2_ts + R"(, "dur": 1000)", step2_ts + R"(, "dur": 1e300)"),
                                                   "t.json", {});
    CHECK(its.size() == 1);  // step 2 of no length holds no op
    REQUIRE(log.lines.size() == 2);
    CHECK(log.lines[0].rfind("[ets.kineto.5]", 0) == 0);
    CHECK(log.lines[1].rfind("[ets.import.11]", 0) == 0);  // and it is named as not returned
    CHECK(log.lines[1].find("step 2") != std::string::npos);
  }
  // A trace written in ns (epoch ns beyond any µs time) said only that it held no CPU operator events
  CHECK_THROWS_WITH(ets::import::read_kineto_json(t1_json({}, "", "", 1000), "ns.json", {}),
                    Catch::Contains("ets.kineto.3") && Catch::Contains("are they ns?"));
}

TEST_CASE("Kineto \"ets\".\"tail_steps\": trailing steps recorded only to close the one before") {
  const auto doc = [](const std::string& ets_meta) {
    std::string s = "{" + ets_meta + "\"traceEvents\": [";
    for (int k = 0; k < 3; ++k) {
      const int t = 100 * k;
      s += fmt::format(R"({}{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{}", "pid": 1, "tid": 1, )"
                       R"("ts": {}, "dur": 90}},)", k ? "," : "", k, t);
      s += fmt::format(R"({{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": {}, "dur": 20}},)",
                       t + 5);
      s += fmt::format(R"({{"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 1, "tid": 1, "ts": {}, "dur": 40}})",
                       t + 40);
    }
    return s + "]}";
  };
  // Without the key every step is an iteration, and the last one ends at its span's end (290), 15 µs short of the
  // 100 µs the others last.
  const auto all = ets::import::read_kineto_json(doc(""), "t.json", {});
  REQUIRE(all.size() == 3);
  CHECK(all[1].sum_us() == Approx(100));
  CHECK(all[2].sum_us() == Approx(85));
  const auto tailed = ets::import::read_kineto_json(doc(R"("ets": {"tail_steps": 1}, )"), "t.json", {});
  REQUIRE(tailed.size() == 2);
  CHECK(tailed[1].iteration == 1);
  CHECK(tailed[1].sum_us() == Approx(100));
  CHECK(tailed[1].ops.back().gap_us == Approx(205 - 180));
  CHECK(tailed[1].meta.extra.at("tail_steps") == "1");  // a label made of these iterations says how they ended
  CHECK(all[1].meta.extra.count("tail_steps") == 0);
  CHECK(ets::import::read_kineto_json(doc(R"("ets": {"tail_steps": 0}, )"), "t.json", {}).size() == 3);
  // a tail step without an op cannot close anything: the last iteration would end at its span after all
  std::string empty_tail = doc(R"("ets": {"tail_steps": 1}, )");
  const auto cut = empty_tail.find(R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 205)");
  REQUIRE(cut != std::string::npos);
  empty_tail = empty_tail.substr(0, cut - 1) + "]}";  // the third step's span stays, its ops go
  CHECK_THROWS_WITH(ets::import::read_kineto_json(empty_tail, "t.json", {}), Catch::Contains("ets.import.7"));
  // Optimizer markers: the tail step is the trailing zero_grad# without a step# after it; it still closes the one
  // before (which used to be dropped with it)
  const auto markers = [](const std::string& ets_meta) {
    std::string s = "{" + ets_meta + "\"traceEvents\": [";
    for (int k = 0; k < 3; ++k) {
      const int t = 100 * k;
      s += fmt::format(R"({}{{"ph": "X", "cat": "user_annotation", "name": "Optimizer.zero_grad#SGD.zero_grad", )"
                       R"("pid": 1, "tid": 1, "ts": {}, "dur": 2}},)", k ? "," : "", t);
      s += fmt::format(R"({{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": {}, "dur": 20}})",
                       t + 5);
      if (k < 2)
        s += fmt::format(R"(,{{"ph": "X", "cat": "user_annotation", "name": "Optimizer.step#SGD.step", "pid": 1, )"
                         R"("tid": 1, "ts": {}, "dur": 30}})", t + 40);
    }
    return s + "]}";
  };
  CHECK(ets::import::read_kineto_json(markers(""), "m.json", {}).size() == 2);
  const auto closed = ets::import::read_kineto_json(markers(R"("ets": {"tail_steps": 1}, )"), "m.json", {});
  REQUIRE(closed.size() == 2);
  CHECK(closed[1].sum_us() == Approx(205 - 105));  // to the tail's first op, past its step#'s end (170)
  // a count that leaves nothing, or that is not a non-negative integer, is refused
  for (const char* bad : {"3", "7", "-1", "1.5", "\"1\"", "null"})
    CHECK_THROWS_WITH(
        ets::import::read_kineto_json(doc(fmt::format(R"("ets": {{"tail_steps": {}}}, )", bad)), "t.json", {}),
        Catch::Contains("ets.kineto.7"));
}

TEST_CASE("Kineto \"ets\".\"heap_mb\": the worker's pre-faulted heap is kept in extra for the label") {
  const auto doc = [](const std::string& value) {
    return fmt::format(R"({{"ets": {{"heap_mb": {}}}, "traceEvents": [)"
                       R"({{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 90}},)"
                       R"({{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 5, "dur": 20}}]}})",
                       value);
  };
  for (const char* v : {"8192", "8192.0", "\"8192\""}) {
    const auto t = ets::import::read_kineto_json(doc(v), "h.json", {});
    REQUIRE(t.size() == 1);
    CHECK(t[0].meta.extra.at("heap_mb") == "8192");
  }
  for (const char* none : {"0", "null"})  // 0 is the worker's default: recorded as none, as a trace without the key
    CHECK(ets::import::read_kineto_json(doc(none), "h.json", {})[0].meta.extra.count("heap_mb") == 0);
  for (const char* bad : {"-1", "1.5", "\"lots\"", "[]"})
    CHECK_THROWS_WITH(ets::import::read_kineto_json(doc(bad), "h.json", {}), Catch::Contains("ets.kineto.12"));
}

TEST_CASE("Kineto \"ets\".\"batch_size\": a whole number, also as a string of digits; anything else warns") {
  const auto doc = [](const std::string& value) {
    return fmt::format(R"({{"ets": {{"batch_size": {}}}, "traceEvents": [)"
                       R"({{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 90}},)"
                       R"({{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 5, "dur": 20}},)"
                       R"({{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": 100, "dur": 90}},)"
                       R"({{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 105, "dur": 20}}]}})",
                       value);
  };
  for (const auto& [value, want] : std::map<std::string, std::int64_t>{{"8", 8}, {"8.0", 8}, {"\"8\"", 8}, {"0", 0}}) {
    INFO(value);
    const ets_test::CapturedWarnings warnings;
    const auto its = ets::import::read_kineto_json(doc(value), "b.json", {});
    REQUIRE(!its.empty());
    CHECK(its[0].meta.batch_size == want);
    CHECK(warnings.lines.empty());
  }
  // a value that is not a whole number >= 0 leaves the size unknown, and says so (it used to pass in silence)
  for (const char* value : {"\"eight\"", "-3", "8.5", "1e300", "\"8 \"", "null", "[8]"}) {
    INFO(value);
    const ets_test::CapturedWarnings warnings;
    const auto its = ets::import::read_kineto_json(doc(value), "b.json", {});
    REQUIRE(!its.empty());
    CHECK(its[0].meta.batch_size == 0);
    REQUIRE(warnings.lines.size() == 1);
    CHECK(warnings.lines[0].find("[ets.kineto.8]") != std::string::npos);
  }
}

namespace {
// Two ProfilerStep# spans on thread 1, each holding what body(t) writes (events after the step's start t, each
// followed by a comma but the last); the phases of the first imported iteration, and its optimizer.
struct PhaseRun {
  std::vector<Phase> phases;
  std::string optimizer;
};
PhaseRun phases_of(const std::function<std::string(int)>& body) {
  std::string s = R"({"traceEvents": [)";
  for (int k = 0; k < 2; ++k) {
    const int t = 1000 * k;
    s += fmt::format(R"({}{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{}", "pid": 1, "tid": 1, )"
                     R"("ts": {}, "dur": 900}},)", k ? "," : "", k, t);
    s += body(t);
  }
  const auto its = ets::import::read_kineto_json(s + "]}", "phases.json", {});
  REQUIRE(!its.empty());
  PhaseRun r;
  for (const auto& op : its[0].ops) r.phases.push_back(op.phase);
  r.optimizer = its[0].meta.optimizer;
  return r;
}
// One event (thread 1 unless told); args empty or an object's members.
std::string event(const char* cat, const char* name, int ts, int dur, const std::string& args = "", bool last = false,
                  int tid = 1) {
  return fmt::format(R"({{"ph": "X", "cat": "{}", "name": "{}", "pid": 1, "tid": {}, "ts": {}, "dur": {}{}}}{})", cat,
                     name, tid, ts, dur, args.empty() ? "" : R"(, "args": {)" + args + "}", last ? "" : ",");
}
}  // namespace

TEST_CASE("Kineto phases: a closure's forward and backward ops inside an optimizer's span (as LBFGS runs) keep their phases") {
  // Optimizer.step#LBFGS.step [closure: zero_grad (aten::zero_), aten::linear (forward), evaluate_function:
  // AddmmBackward0; then the update, aten::add_]. With grad enabled in the closure, torch gives its ops autograd
  // sequence numbers (zero_grad's too); the update runs with grad disabled and has none (torch 1.13).
  const PhaseRun r = phases_of([](int t) {
    return event("user_annotation", "Optimizer.step#LBFGS.step", t + 10, 800) +
           event("user_annotation", "Optimizer.zero_grad#LBFGS.zero_grad", t + 12, 6) +
           event("cpu_op", "aten::zero_", t + 13, 4, R"("Sequence number": 3)") +
           event("cpu_op", "aten::linear", t + 20, 50, R"("Sequence number": 4)") +
           event("cpu_op", "autograd::engine::evaluate_function: AddmmBackward0", t + 100, 100) +
           event("cpu_op", "AddmmBackward0", t + 105, 90) + event("cpu_op", "aten::add_", t + 300, 30, "", true);
  });
  CHECK(r.phases == std::vector<Phase>{Phase::Update, Phase::Forward, Phase::Backward, Phase::Update});
  CHECK(r.optimizer == "lbfgs");
}

TEST_CASE("Kineto iterations without ProfilerStep# spans: a closure's zero_grads inside an LBFGS step start none") {
  // optimizer.step(closure) with the closure zeroing the gradients on each of its (here 2) evaluations: those
  // zero_grads lie inside the step's span. Each used to start an iteration (8 fragments of 4 steps); the steps
  // delimit them now, each iteration a whole step with both evaluations and the update.
  std::string s = R"({"traceEvents": [)";
  for (int k = 0; k < 4; ++k) {
    const int t = 1000 * k;
    s += event("user_annotation", "Optimizer.step#LBFGS.step", t + 10, 800);
    for (int e = 0; e < 2; ++e) {
      const int u = t + 20 + 300 * e;
      s += event("user_annotation", "Optimizer.zero_grad#LBFGS.zero_grad", u, 6) +
           event("cpu_op", "aten::zero_", u + 1, 4, R"("Sequence number": 3)") +
           event("cpu_op", "aten::linear", u + 10, 50, R"("Sequence number": 4)") +
           event("cpu_op", "autograd::engine::evaluate_function: AddmmBackward0", u + 100, 100) +
           event("cpu_op", "AddmmBackward0", u + 105, 90);
    }
    s += event("cpu_op", "aten::add_", t + 700, 30, "", k == 3);
  }
  const auto its = ets::import::read_kineto_json(s + "]}", "lbfgs.json", {});
  REQUIRE(its.size() == 3);  // from one step's end to the next: the first step has no start
  for (const auto& it : its) {
    CHECK(it.measured_us == Approx(1000));
    std::size_t forward = 0, backward = 0, update = 0;
    for (const auto& op : it.ops) {
      forward += op.name == "linear" && op.phase == ets::Phase::Forward;
      backward += op.phase == ets::Phase::Backward;
      update += op.name == "add" && op.phase == ets::Phase::Update;
    }
    CHECK(forward == 2);
    CHECK(backward == 2);
    CHECK(update == 1);
  }
}

TEST_CASE("Kineto phases: a closure whose backward runs on the autograd engine's thread (as on CUDA) keeps its phases") {
  // the training thread waits in the step span while thread 2 runs the backward pass
  const PhaseRun r = phases_of([](int t) {
    return event("user_annotation", "Optimizer.step#LBFGS.step", t + 10, 800) +
           event("cpu_op", "aten::linear", t + 20, 50, R"("Sequence number": 4)") +
           event("cpu_op", "aten::add_", t + 300, 30) +
           event("cpu_op", "autograd::engine::evaluate_function: AddmmBackward0", t + 100, 100, "", true, 2);
  });
  CHECK(r.phases == std::vector<Phase>{Phase::Forward, Phase::Update});
}

TEST_CASE("Kineto phases: work wrapped in an Optimizer.step# span without a backward pass is all update, and names no optimizer") {
  // clip_grad_norm_ wrapped in record_function("Optimizer.step#clip"), as trace-format.md advises: it runs with grad
  // enabled, so its ops carry sequence numbers, yet they are update work, not a closure's forward pass. Then the
  // optimizer's own step.
  const PhaseRun r = phases_of([](int t) {
    return event("cpu_op", "aten::linear", t + 10, 50, R"("Sequence number": 4)") +
           event("user_annotation", "Optimizer.step#clip", t + 100, 100) +
           event("cpu_op", "aten::norm", t + 110, 20, R"("Sequence number": 9)") +
           event("cpu_op", "aten::mul_", t + 140, 20, R"("Sequence number": 10)") +
           event("user_annotation", "Optimizer.step#SGD.step", t + 300, 100) +
           event("cpu_op", "aten::add_", t + 310, 20, "", true);
  });
  CHECK(r.phases == std::vector<Phase>{Phase::Forward, Phase::Update, Phase::Update, Phase::Update});
  // the optimizer is the one torch named (Optimizer.step#<class>.step), not the user scope that came first
  CHECK(r.optimizer == "sgd");
}

TEST_CASE("Kineto iterations without ProfilerStep# spans: a user's Optimizer.step# scope marks no boundary") {
  // three loop iterations marked only by the optimizer's step spans; each also wraps clip_grad_norm_ in
  // Optimizer.step#clip. The steps end iterations; the user scope used to end one too (5 iterations, not 2).
  std::string s = R"({"traceEvents": [)";
  for (int k = 0; k < 3; ++k) {
    const int t = 1000 * k;
    s += event("cpu_op", "aten::linear", t + 10, 50, R"("Sequence number": 4)") +
         event("user_annotation", "Optimizer.step#clip", t + 100, 100) + event("cpu_op", "aten::norm", t + 110, 20) +
         event("user_annotation", "Optimizer.step#SGD.step", t + 300, 100) +
         event("cpu_op", "aten::add_", t + 310, 20, "", k == 2);
  }
  const auto its = ets::import::read_kineto_json(s + "]}", "no-steps.json", {});
  REQUIRE(its.size() == 2);  // the first step has no start: the iterations run from one step's end to the next's
  for (const auto& it : its) {
    CHECK(it.ops.size() == 3);
    CHECK(it.meta.optimizer == "sgd");
    CHECK(it.measured_us == Approx(1000));
  }
}

TEST_CASE("Kineto keep_incomplete with Optimizer.step# markers only: the first and last iterations, from finite starts") {
  // three iterations ending in SGD steps, then the next one's forward op after the last step
  std::string s = R"({"traceEvents": [)";
  for (int k = 0; k < 3; ++k) {
    const int t = 1000 * k;
    s += event("cpu_op", "aten::linear", t + 10, 50) + event("user_annotation", "Optimizer.step#SGD.step", t + 300, 100) +
         event("cpu_op", "aten::add_", t + 310, 20);
  }
  s += event("cpu_op", "aten::linear", 3010, 50, "", true) + "]}";
  ets::import::Options keep;
  keep.keep_incomplete = true;
  CHECK(ets::import::read_kineto_json(s, "steps.json", {}).size() == 2);
  const auto all = ets::import::read_kineto_json(s, "steps.json", keep);
  REQUIRE(all.size() == 4);  // the one before the first step's end, two whole ones, the ops after the last step's end
  CHECK(all.front().ops.size() == 2);
  CHECK(all.back().iteration == 3);
  REQUIRE(all.back().ops.size() == 1);
  CHECK(all.back().start_us == Approx(3010 - 10));  // µs from the earliest event
  CHECK(all.back().sum_us() == Approx(50));          // no successor: it ends with its last op
  for (std::size_t i = 0; i + 1 < all.size(); ++i)
    CHECK(all[i].sum_us() == Approx(all[i + 1].start_us - all[i].start_us));

  // a single step, every op after it (fuzzing found this): the ops come back, not an empty iteration at -inf
  std::string late = R"({"traceEvents": [)" + event("user_annotation", "Optimizer.step#SGD.step", 0, 100) +
                     event("cpu_op", "aten::linear", 200, 50) + event("cpu_op", "aten::add_", 300, 20, "", true) + "]}";
  const auto whole = ets::import::read_kineto_json(late, "late.json", {});  // no complete iteration: all as one
  REQUIRE(whole.size() == 1);
  CHECK(whole[0].ops.size() == 2);
  const auto after = ets::import::read_kineto_json(late, "late.json", keep);
  REQUIRE(after.size() == 1);
  CHECK(after[0].ops.size() == 2);
  CHECK(after[0].start_us == Approx(200));

  // no op at all but the step's own span: refused in both modes, not an iteration without ops from -inf
  const std::string only_step =
      R"({"traceEvents": [)" + event("cpu_op", "Optimizer.step#SGD.step", 75, 9, "", true) + "]}";
  for (const bool kept : {false, true}) {
    INFO("keep_incomplete " << kept);
    const ets::import::Options opt = kept ? keep : ets::import::Options{};
    CHECK(ets_test::error_id([&] { ets::import::read_kineto_json(only_step, "step.json", opt); }) == "ets.kineto.3");
  }
}

TEST_CASE("Kineto iterations without ProfilerStep# spans: a second optimizer's markers fall inside the first's iterations") {
  // A GAN-style loop: the discriminator's SGD and the generator's Adam each zero their gradients and step once per
  // iteration. Each optimizer's markers used to start an iteration of their own: 6 half-iterations, not 3.
  for (const bool zero_grad : {true, false}) {
    INFO((zero_grad ? "zero_grad and step markers" : "step markers only"));
    std::string s = R"({"traceEvents": [)";
    for (int k = 0; k < 3; ++k) {
      const int t = 1000 * k;
      if (zero_grad) s += event("user_annotation", "Optimizer.zero_grad#SGD.zero_grad", t + 10, 10);
      s += event("cpu_op", "aten::linear", t + 30, 100, R"("Sequence number": 4)") +
           event("user_annotation", "Optimizer.step#SGD.step", t + 200, 100) + event("cpu_op", "aten::add_", t + 210, 20);
      if (zero_grad) s += event("user_annotation", "Optimizer.zero_grad#Adam.zero_grad", t + 400, 10);
      s += event("cpu_op", "aten::conv2d", t + 420, 200, R"("Sequence number": 9)") +
           event("user_annotation", "Optimizer.step#Adam.step", t + 700, 100) +
           event("cpu_op", "aten::mul_", t + 710, 20, "", k == 2);
    }
    const auto its = ets::import::read_kineto_json(s + "]}", "two-optimizers.json", {});
    // zero_grad markers: each iteration from one SGD zero_grad to the next, the last to the end of its Adam step;
    // steps only: from one SGD step's end to the next (the first step has no start)
    REQUIRE(its.size() == (zero_grad ? 3u : 2u));
    for (std::size_t i = 0; i < its.size(); ++i) {
      INFO("iteration " << i);
      std::vector<std::string> names;
      for (const auto& op : its[i].ops) names.push_back(op.name);
      std::sort(names.begin(), names.end());
      CHECK(names == std::vector<std::string>{"add", "conv2d", "linear", "mul"});  // both optimizers' work
      CHECK(its[i].meta.optimizer == "sgd");  // the first one's
      if (!zero_grad || i < 2) CHECK(its[i].measured_us == Approx(1000));
    }
    if (zero_grad) CHECK(its[2].measured_us == Approx(800 - 10));  // to the end of the Adam step
  }
  // A loop that switches optimizers (two iterations with Adam, then two with SGD) keeps every marker: 4 iterations.
  std::string s = R"({"traceEvents": [)";
  for (int k = 0; k < 4; ++k) {
    const int t = 1000 * k;
    const std::string cls = k < 2 ? "Adam" : "SGD";
    s += event("user_annotation", ("Optimizer.zero_grad#" + cls + ".zero_grad").c_str(), t + 10, 10) +
         event("cpu_op", "aten::linear", t + 30, 100, R"("Sequence number": 4)") +
         event("user_annotation", ("Optimizer.step#" + cls + ".step").c_str(), t + 200, 100) +
         event("cpu_op", "aten::add_", t + 210, 20, "", k == 3);
  }
  const auto its = ets::import::read_kineto_json(s + "]}", "switch.json", {});
  REQUIRE(its.size() == 4);
  for (std::size_t i = 0; i < its.size(); ++i) CHECK(its[i].ops.size() == 2);
}

TEST_CASE("Kineto iterations without ProfilerStep# spans: two optimizers of one class are told apart by their shapes") {
  // A DCGAN loop: the discriminator's Adam and the generator's Adam step once each per iteration, each over its own
  // network (parameters [48, 32] and [16, 64]). The first steps also create the optimizers' state (zeros_like of
  // the parameters: the same shapes). Every marker used to start an iteration: 6 half-iterations, not 3.
  const auto adam = [](int t, const char* dims, bool first, bool zero_grad, bool last) {
    const std::string shape = fmt::format(R"("Input Dims": [{}, {}], "Input type": ["float", "float"])", dims, dims);
    std::string s;
    if (zero_grad) s += event("user_annotation", "Optimizer.zero_grad#Adam.zero_grad", t, 10);
    s += event("cpu_op", "aten::linear", t + 20, 100, R"("Sequence number": 4)") +
         event("user_annotation", "Optimizer.step#Adam.step", t + 200, 100);
    if (first) s += event("cpu_op", "aten::zeros_like", t + 205, 2, fmt::format(R"("Input Dims": [{}])", dims));
    return s + event("cpu_op", "aten::addcdiv_", t + 210, 20, shape, last);
  };
  const auto loop = [&](int iterations, const char* d_dims, const char* g_dims, bool zero_grad) {
    std::string s = R"({"traceEvents": [)";
    for (int k = 0; k < iterations; ++k)
      s += adam(1000 * k, d_dims, k == 0, zero_grad, false) +
           adam(1000 * k + 400, g_dims, k == 0, zero_grad, k + 1 == iterations);
    return s + "]}";
  };
  for (const bool zero_grad : {true, false}) {
    INFO((zero_grad ? "zero_grad and step markers" : "step markers only"));
    ets_test::CapturedWarnings log;
    const auto its = ets::import::read_kineto_json(loop(3, "[48, 32]", "[16, 64]", zero_grad), "gan.json", {});
    // zero_grad markers: from one discriminator zero_grad to the next, the last to the end of the generator's step;
    // steps only: from one discriminator step's end to the next (the first step has no start)
    REQUIRE(its.size() == (zero_grad ? 3u : 2u));
    for (std::size_t i = 0; i < its.size(); ++i) {
      INFO("iteration " << i);
      std::size_t updates = 0;
      for (const auto& op : its[i].ops) updates += op.name == "addcdiv";
      CHECK(updates == 2);  // both optimizers' work
      if (!zero_grad || i < 2) CHECK(its[i].measured_us == Approx(1000));
    }
    if (zero_grad) CHECK(its[2].measured_us == Approx(700));  // to the end of the generator's step
    REQUIRE(log.lines.size() == 1);
    CHECK_THAT(log.lines[0], Catch::Contains("[ets.kineto.9]") && Catch::Contains("turns of 2 steps"));
  }
  {
    // A WGAN loop: the critic steps twice per generator step, so a turn holds two alike steps and a third
    ets_test::CapturedWarnings log;
    std::string s = R"({"traceEvents": [)";
    for (int k = 0; k < 3; ++k)
      s += adam(1500 * k, "[48, 32]", k == 0, true, false) + adam(1500 * k + 400, "[48, 32]", false, true, false) +
           adam(1500 * k + 800, "[16, 64]", k == 0, true, k == 2);
    const auto its = ets::import::read_kineto_json(s + "]}", "wgan.json", {});
    REQUIRE(its.size() == 3);
    for (std::size_t i = 0; i < its.size(); ++i) {
      std::size_t updates = 0;
      for (const auto& op : its[i].ops) updates += op.name == "addcdiv";
      CHECK(updates == 3);
    }
    CHECK(its[0].measured_us == Approx(1500));
    REQUIRE(log.lines.size() == 1);
    CHECK_THAT(log.lines[0], Catch::Contains("turns of 3 steps"));
  }
  {
    // Both networks zeroed at the top of the loop (oD.zero_grad(); oG.zero_grad(); ...; oD.step(); oG.step()): two
    // zero_grads a turn, not each before its step. They split every iteration in two (the zero_grads alone, then the
    // rest); the first of each turn delimits it now. With one zero_grad a turn (a single model.zero_grad()), that
    // one does.
    for (const int zero_grads : {2, 1}) {
      INFO(zero_grads << " zero_grad markers a turn");
      ets_test::CapturedWarnings log;
      std::string s = R"({"traceEvents": [)";
      for (int k = 0; k < 3; ++k) {
        const int t = 1000 * k;
        s += event("user_annotation", "Optimizer.zero_grad#Adam.zero_grad", t, 10) + event("cpu_op", "aten::zero_", t + 1, 4);
        if (zero_grads == 2)
          s += event("user_annotation", "Optimizer.zero_grad#Adam.zero_grad", t + 12, 6) +
               event("cpu_op", "aten::zero_", t + 13, 4);
        s += adam(t + 20, "[48, 32]", k == 0, false, false) + adam(t + 420, "[16, 64]", k == 0, false, k == 2);
      }
      const auto its = ets::import::read_kineto_json(s + "]}", "gan-top.json", {});
      REQUIRE(its.size() == 3);
      for (std::size_t i = 0; i < its.size(); ++i) {
        std::size_t updates = 0;
        for (const auto& op : its[i].ops) updates += op.name == "addcdiv";
        CHECK(updates == 2);
        if (i < 2) CHECK(its[i].measured_us == Approx(1000));
      }
      REQUIRE(log.lines.size() == 1);
      CHECK_THAT(log.lines[0], Catch::Contains("turns of 2 steps"));
    }
  }
  // Where the shapes cannot tell, every marker still delimits an iteration, without a warning: two optimizers over
  // networks of the same shapes; one turn recorded only (its repetition is the evidence); a loop that moves from one
  // network's optimizer to another's (D, D, G, G).
  const auto iterations_of = [](const std::string& doc) {
    ets_test::CapturedWarnings log;
    const std::size_t n = ets::import::read_kineto_json(doc, "gan.json", {}).size();
    CHECK(log.lines.empty());
    return n;
  };
  CHECK(iterations_of(loop(3, "[48, 32]", "[48, 32]", true)) == 6);
  CHECK(iterations_of(loop(1, "[48, 32]", "[16, 64]", true)) == 2);
  std::string moves = R"({"traceEvents": [)";
  for (int k = 0; k < 4; ++k) moves += adam(1000 * k, k < 2 ? "[48, 32]" : "[16, 64]", k == 0, true, k == 3);
  CHECK(iterations_of(moves + "]}") == 4);
}

TEST_CASE("Kineto: a real DCGAN-style loop with two Adams and no ProfilerStep# reads as whole iterations") {
  // tests/data/gan_two_adams_*: three iterations of a torch 1.13 CPU loop, the discriminator's Adam (a Linear(32,
  // 48) first: weight [48, 32]) and the generator's (a Linear(16, 64) first: weight [64, 16]), profiled without
  // prof.step() (tools/make_fixtures/gan_loop.py). "optimizer": Optimizer.zero_grad# and step# spans;
  // "module": module.zero_grad(), so step spans only, and the first step has no start.
  for (const std::string kind : {"optimizer", "module"}) {
    INFO(kind);
    ets_test::CapturedWarnings log;
    const auto its = Tracer::load(ets_test::fixture("gan_two_adams_" + kind + ".kineto.json.gz"));
    REQUIRE(its.size() == (kind == "optimizer" ? 3u : 2u));
    for (std::size_t i = 0; i < its.size(); ++i) {
      INFO("iteration " << i);
      bool disc = false, gen = false;
      for (const auto& op : its[i].ops)
        if (op.phase == Phase::Update)
          for (const auto& t : op.inputs) {
            disc = disc || t.dims == std::vector<std::int64_t>{48, 32};
            gen = gen || t.dims == std::vector<std::int64_t>{64, 16};
          }
      CHECK(disc);  // both optimizers' updates in every iteration
      CHECK(gen);
      CHECK(its[i].meta.optimizer == "adam");
    }
    REQUIRE(log.lines.size() == 1);
    CHECK_THAT(log.lines[0], Catch::Contains("[ets.kineto.9]"));
  }
}

namespace {
// One ProfilerStep#0 of CPU ops without a "flops" field, 5 µs each, 5 µs apart: {name, Input Dims, Input type,
// Concrete Inputs} per op, each a JSON text.
std::string one_step_of_cpu_ops(const std::vector<std::array<std::string, 4>>& ops) {
  const std::string op = R"({{"ph": "X", "cat": "cpu_op", "name": "{0}", "pid": 7, "tid": 7, "ts": {1}, "dur": 5, "args": {{"External id": {2}, "Input Dims": {3}, "Input type": {4}, "Concrete Inputs": {5}}}}})";
  std::string doc = R"({"schemaVersion": 1, "traceEvents": [)"
                    R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#0", "pid": 7, "tid": 7, "ts": 1000, "dur": 200, "args": {"External id": 1}})";
  for (std::size_t i = 0; i < ops.size(); ++i)
    doc += "," + fmt::format(op, ops[i][0], 1010 + 10 * i, 2 + i, ops[i][1], ops[i][2], ops[i][3]);
  return doc + "]}";
}
}  // namespace

TEST_CASE("analytic FLOPs broadcast batch and element-wise shapes; conv arguments follow each schema") {
  // One step of ops without a "flops" field, so FLOPs and bytes come from the shapes.
  const std::vector<std::array<std::string, 4>> ops = {
      // [20,16] @ [3,16,32]: b's batch dim counts (3 products), [2,1,20,16] @ [1,3,16,32]: batch 2 × 3
      {"aten::matmul", "[[20, 16], [3, 16, 32]]", R"(["float", "float"])", R"(["", ""])"},
      {"aten::matmul", "[[2, 1, 20, 16], [1, 3, 16, 32]]", R"(["float", "float"])", R"(["", ""])"},
      {"aten::matmul", "[[20, 16], [16]]", R"(["float", "float"])", R"(["", ""])"},  // matrix × vector
      {"aten::add", "[[64, 1], [1, 32], []]", R"(["float", "float", "Scalar"])", R"(["", "", "1"])"},
      // mkldnn_convolution(self, weight, bias, padding, stride, dilation, groups): stride 2, padding 1
      {"aten::mkldnn_convolution", "[[1, 3, 16, 16], [8, 3, 3, 3], [8], [], [], [], []]",
       R"(["float", "float", "float", "ScalarList", "ScalarList", "ScalarList", "Scalar"])",
       R"(["", "", "", "[1, 1]", "[2, 2]", "[1, 1]", "1"])"},
      // cudnn_convolution(self, weight, padding, stride, dilation, groups, ...): padding 0, stride 1
      {"aten::cudnn_convolution", "[[1, 3, 16, 16], [8, 3, 3, 3], [], [], [], [], [], [], []]",
       R"(["float", "float", "ScalarList", "ScalarList", "ScalarList", "Scalar", "Scalar", "Scalar", "Scalar"])",
       R"(["", "", "[0, 0]", "[1, 1]", "[1, 1]", "1", "False", "False", "True"])"},
      // cudnn_convolution_relu has conv2d's order (not cudnn_convolution's): stride 1, padding 0, dilation 1
      {"aten::cudnn_convolution_relu", "[[1, 3, 16, 16], [8, 3, 3, 3], [8], [], [], [], []]",
       R"(["float", "float", "float", "ScalarList", "ScalarList", "ScalarList", "Scalar"])",
       R"(["", "", "", "[1, 1]", "[0, 0]", "[1, 1]", "1"])"},
      // _nnpack_spatial_convolution(input, weight, bias, padding, stride): padding 0 must not read as stride 0
      {"aten::_nnpack_spatial_convolution", "[[1, 3, 16, 16], [8, 3, 3, 3], [8], [], []]",
       R"(["float", "float", "float", "ScalarList", "ScalarList"])", R"(["", "", "", "[0, 0]", "[1, 1]"])"},
      // batch_norm's [C] tensors are per channel, not broadcast against the input's last dim (1 here)
      {"aten::batch_norm", "[[8, 16, 1, 1], [16], [16], [16], [16]]",
       R"(["float", "float", "float", "float", "float"])", R"(["", "", "", "", ""])"}};
  const auto its = ets::import::read_kineto_json(one_step_of_cpu_ops(ops), "flops.json", {});
  REQUIRE(its.size() == 1);
  const auto& t = its[0];
  REQUIRE(t.ops.size() == ops.size());
  CHECK(t.ops[0].flops == Approx(2.0 * 3 * 20 * 16 * 32));
  CHECK(t.ops[0].bytes == Approx(4.0 * (20 * 16 + 3 * 16 * 32 + 3 * 20 * 32)));  // inputs + the [3,20,32] output
  CHECK(t.ops[1].flops == Approx(2.0 * 6 * 20 * 16 * 32));
  CHECK(t.ops[2].flops == Approx(2.0 * 20 * 16));
  CHECK(t.ops[3].flops == Approx(64.0 * 32));                   // the broadcast [64,32] output
  CHECK(t.ops[3].bytes == Approx(4.0 * (64 + 32 + 64 * 32)));   // the Scalar carries no bytes
  const auto& mk = t.ops[4];
  CHECK(mk.hyper.get(Hyper::StrideH) == 2);
  CHECK(mk.hyper.get(Hyper::PadW) == 1);
  CHECK(mk.flops == Approx(2.0 * 8 * 8 * 8 * 3 * 3 * 3));  // 16 + 2·1 − 3 = 15, /2 + 1 = 8 per side
  const auto& cu = t.ops[5];
  CHECK(cu.hyper.get(Hyper::PadH) == 0);
  CHECK(cu.hyper.get(Hyper::StrideW) == 1);
  CHECK(cu.hyper.get(Hyper::Groups) == 1);
  CHECK(cu.flops == Approx(2.0 * 8 * 14 * 14 * 3 * 3 * 3));
  for (std::size_t i : {6, 7}) {
    INFO(t.ops[i].raw_name);
    CHECK(t.ops[i].hyper.get(Hyper::PadH) == 0);
    CHECK(t.ops[i].hyper.get(Hyper::StrideH) == 1);
    CHECK(t.ops[i].flops == Approx(2.0 * 8 * 14 * 14 * 3 * 3 * 3));
  }
  CHECK(t.ops[6].hyper.get(Hyper::DilationH) == 1);
  CHECK(t.ops[8].flops == Approx(5.0 * 8 * 16));  // 5 · numel of the input
}

TEST_CASE("recurrent ops get input size, hidden size and layers from their arguments, in every overload") {
  const std::vector<std::array<std::string, 4>> ops = {
      // gru.input(input, hx, params[], has_biases, num_layers, dropout, train, bidirectional, batch_first), as
      // torch 1.13 writes it (checked on nn.GRU(16, 32, num_layers=2, bidirectional=True, batch_first=True))
      {"aten::gru", "[[4, 10, 16], [4, 4, 32], [], [], [], [], [], [], []]",
       R"(["float", "float", "TensorList", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar"])",
       R"(["", "", "", "True", "2", "0.0", "True", "True", "True"])"},
      // gru.data(data, batch_sizes, hx, params[], has_biases, num_layers, dropout, train, bidirectional)
      {"aten::gru", "[[37, 16], [10], [3, 4, 24], [], [], [], [], [], []]",
       R"(["float", "long int", "float", "TensorList", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar"])",
       R"(["", "", "", "", "True", "3", "0.0", "True", "False"])"},
      // lstm.input(input, hx[], params[], ...): torch 1.13 records no shape for the hx list, so no hidden size
      {"aten::lstm", "[[10, 4, 16], [], [], [], [], [], [], [], []]",
       R"(["float", "TensorList", "TensorList", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar"])",
       R"(["", "", "", "True", "1", "0.0", "True", "False", "False"])"},
      // a list's first tensor where the profiler records list shapes: hx = [h0, c0]
      {"aten::lstm", "[[10, 4, 16], [[1, 4, 20], [1, 4, 20]], [], [], [], [], [], [], []]",
       R"(["float", "TensorList", "TensorList", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar"])",
       R"(["", "", "", "True", "1", "0.0", "True", "False", "False"])"},
      // no list argument to find the positions by: nothing is guessed
      {"aten::gru", "[[4, 10, 16], [4, 4, 32]]", R"(["float", "float"])", R"(["", ""])"}};
  const auto its = ets::import::read_kineto_json(one_step_of_cpu_ops(ops), "rnn.json", {});
  REQUIRE(its.size() == 1);
  const auto& t = its[0];
  REQUIRE(t.ops.size() == ops.size());
  CHECK(t.ops[0].name == "gru");
  CHECK(t.ops[0].hyper.get(Hyper::InChannels) == 16);
  CHECK(t.ops[0].hyper.get(Hyper::Hidden) == 32);
  CHECK(t.ops[0].hyper.get(Hyper::Layers) == 2);
  CHECK(t.ops[1].hyper.get(Hyper::InChannels) == 16);
  CHECK(t.ops[1].hyper.get(Hyper::Hidden) == 24);
  CHECK(t.ops[1].hyper.get(Hyper::Layers) == 3);
  CHECK(t.ops[2].name == "lstm");
  CHECK(t.ops[2].hyper.get(Hyper::InChannels) == 16);
  CHECK_FALSE(t.ops[2].hyper.has(Hyper::Hidden));
  CHECK(t.ops[2].hyper.get(Hyper::Layers) == 1);
  CHECK(t.ops[3].hyper.get(Hyper::Hidden) == 20);
  CHECK(t.ops[4].hyper.present == 0);
}

TEST_CASE("Kineto: ops of a second traceEvents key keep their shapes in a file read in runs") {
  // A file over one run (512 KiB) is read run by run, then the rest of it; a second "traceEvents" key (malformed,
  // but read) lies in that rest, and its ops lost their input shapes there while a small file's kept them.
  const std::string ops =
      R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100},)"
      R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 5, "dur": 20, )"
      R"("args": {"Input Dims": [[4, 8], [8, 16]], "Input type": ["float", "float"]}},)"
      R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": 100, "dur": 100},)"
      R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 105, "dur": 20, )"
      R"("args": {"Input Dims": [[4, 8], [8, 16]], "Input type": ["float", "float"]}})";
  const auto doc = [&](std::size_t padding) {
    std::string s = R"({"traceEvents": [)";
    for (std::size_t k = 0; k < padding; ++k)
      s += fmt::format(R"({}{{"ph": "i", "cat": "x", "name": "pad{}", "pid": 9, "tid": 9, "ts": 1}})", k ? ", " : "", k);
    return s + R"(], "traceEvents": [)" + ops + "]}";
  };
  const std::string small = doc(1), big = doc(12000);
  REQUIRE(big.size() > (std::size_t{512} << 10));  // more than one run
  const auto a = ets::import::read_kineto_json(small, "small.json", {});
  const auto b = ets::import::read_kineto_json(big, "big.json", {});
  REQUIRE(a.size() == 2);
  REQUIRE(b.size() == 2);
  for (std::size_t i = 0; i < a.size(); ++i) {
    REQUIRE(a[i].ops.size() == 1);
    REQUIRE(b[i].ops.size() == 1);
    CHECK(a[i].ops[0].inputs.size() == 2);
    CHECK(b[i].ops[0].inputs == a[i].ops[0].inputs);
    CHECK(b[i].ops[0].flops == a[i].ops[0].flops);
  }
}

namespace {
// An implementation no CPU can run (it asks for an instruction-set bit none reports): where this CPU runs every
// implementation simdjson was built with (an AVX-512 host), the case below would otherwise check nothing. Its
// kernels are never reached: the check refuses it before any parse.
struct UnrunnableJsonImplementation final : simdjson::implementation {
  explicit UnrunnableJsonImplementation(const simdjson::implementation& real)
      : simdjson::implementation("unrunnable-test", "needs an instruction set no CPU has", 0x80000000u), real_(real) {}
  simdjson::error_code create_dom_parser_implementation(
      std::size_t capacity, std::size_t max_depth,
      std::unique_ptr<simdjson::internal::dom_parser_implementation>& dst) const noexcept override {
    return real_.create_dom_parser_implementation(capacity, max_depth, dst);
  }
  simdjson::error_code minify(const std::uint8_t* buf, std::size_t len, std::uint8_t* dst,
                              std::size_t& dst_len) const noexcept override {
    return real_.minify(buf, len, dst, dst_len);
  }
  bool validate_utf8(const char* buf, std::size_t len) const noexcept override {
    return real_.validate_utf8(buf, len);
  }
  const simdjson::implementation& real_;
};
}  // namespace

TEST_CASE("a JSON parser implementation this CPU cannot run is ets.import.8, not SIGILL") {
  // What SIMDJSON_FORCE_IMPLEMENTATION=icelake does on a CPU without AVX-512: simdjson runs the kernels it names.
  const simdjson::implementation* unrunnable = nullptr;
  for (const simdjson::implementation* impl : simdjson::get_available_implementations())
    if (!impl->supported_by_runtime_system()) unrunnable = impl;
  const UnrunnableJsonImplementation stand_in(*simdjson::get_active_implementation());
  if (!unrunnable) unrunnable = &stand_in;  // this CPU runs every built-in one
  REQUIRE_FALSE(unrunnable->supported_by_runtime_system());
  auto& active = simdjson::get_active_implementation();
  const simdjson::implementation* chosen = active;
  active = unrunnable;
  INFO("forced " << unrunnable->name());
  CHECK_THROWS_WITH(ets::import::read_kineto_json(kOld, "old.json", {}), Catch::Contains("ets.import.8"));
  CHECK_THROWS_WITH(ets::import::read_ets_trace("{}", "t.etst", {}), Catch::Contains("ets.import.8"));
  active = chosen;
  CHECK(ets::import::read_kineto_json(kOld, "old.json", {}).size() == 1);
}

namespace {
// A CPU trace of `steps` ProfilerStep spans holding ops[s] bare ops each on the training thread (tid 1): op i of a step
// starts at 3i µs into it and runs 2 µs, named aten::add or aten::mul by i's parity; `other` ops on a second thread
// run beside each step. The steps' spans follow each other with 1 µs between them.
std::string bare_ops_trace(const std::vector<int>& ops, int other, const std::string& ets_meta = "") {
  std::string s = "{" + ets_meta + "\"traceEvents\": [\n";
  double t0 = 1000;
  for (std::size_t k = 0; k < ops.size(); ++k) {
    const double span = 3.0 * ops[k];
    s += fmt::format(R"({{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{}","pid":1,"tid":1,"ts":{},"dur":{}}},)"
                     "\n", k, t0, span);
    for (int i = 0; i < ops[k]; ++i)
      s += fmt::format(R"({{"ph":"X","cat":"cpu_op","name":"aten::{}","pid":1,"tid":1,"ts":{},"dur":2}},)" "\n",
                       i % 2 ? "mul" : "add", t0 + 3.0 * i);
    for (int i = 0; i < other; ++i)
      s += fmt::format(R"({{"ph":"X","cat":"cpu_op","name":"aten::copy_","pid":1,"tid":2,"ts":{},"dur":1}},)" "\n",
                       t0 + 3.0 * i + 0.5);
    t0 += span + 1;
  }
  s.resize(s.size() - 2);  // the last ",\n"
  return s + "\n]}";
}
}  // namespace

TEST_CASE("CPU assembly across many ops: each op's record, time, gap; a second thread's, a tail step's ops left out") {
  // Thousands of ops per step, so that the ops the output takes and those it leaves lie in many chunks of the op list
  const std::vector<int> ops = {1300, 517, 2049, 700};
  // n iterations, the last one closed by a tail step's first op, or (no tail) ending at its own span, 1 µs earlier
  const auto check = [&](const std::vector<ExecutionTrace>& its, std::size_t n, bool tail) {
    REQUIRE(its.size() == n);
    double t0 = 0;  // times count from the trace's first event
    for (std::size_t k = 0; k < n; ++k) {
      const auto& it = its[k];
      INFO("step " << k);
      CHECK(it.iteration == static_cast<std::int64_t>(k));
      REQUIRE(it.ops.size() == static_cast<std::size_t>(ops[k]));
      const bool closed = tail || k + 1 < n;  // by the next step's first op
      for (std::size_t i = 0; i < it.ops.size(); ++i) {
        const OpRecord& op = it.ops[i];
        if (op.raw_name != (i % 2 ? "aten::mul" : "aten::add") || op.start_us != t0 + 3.0 * i || op.time_us != 2.0 ||
            op.gap_us != (i + 1 < it.ops.size() || !closed ? 1.0 : 2.0)) {
          FAIL_CHECK("op " << i << ": " << op.raw_name << " at " << op.start_us << ", time " << op.time_us << ", gap "
                           << op.gap_us);
          break;
        }
      }
      CHECK(it.sum_us() == Approx(3.0 * ops[k] + (closed ? 1 : 0)));
      t0 += 3.0 * ops[k] + 1;
    }
  };
  check(ets::import::read_kineto_json(bare_ops_trace(ops, 300), "bare.json", {}), 4, false);
  check(ets::import::read_kineto_json(bare_ops_trace(ops, 300, R"("ets": {"tail_steps": 1}, )"), "t.json", {}), 3,
        true);
}

#if ETS_TEST_ALLOC_HOOKS
TEST_CASE("a CPU trace's op list is freed as its records move into the iterations, not held beside them to the end") {
  constexpr int kSteps = 4, kOps = 5000;  // bare op events: their records are most of what the import holds
  const std::string doc = bare_ops_trace(std::vector<int>(kSteps, kOps), 0);
  namespace alloc = ets_test::alloc;
  ets::import::Options keep;
  keep.keep_incomplete = true;
  std::vector<ExecutionTrace> its;
  const long long peak = alloc::peak_while([&] { its = ets::import::read_kineto_json(doc, "bare.json", keep); });
  REQUIRE(its.size() == kSteps);
  std::size_t n = 0;
  for (const auto& it : its) n += it.ops.size();
  REQUIRE(n == static_cast<std::size_t>(kSteps) * kOps);
  const double records = static_cast<double>(n) * sizeof(OpRecord);
  INFO("peak " << peak << " bytes, " << peak / records << "x the output's records");
  // The op list (a record and the span's times per op) was held whole until the last iteration was built: over 2.1x
  // the records at once. Now the peak is where the ops are made, beside the host spans and their nesting (~1.7x).
  CHECK(peak < 2.0 * records);
}
#endif
