// ets-test-labels: unit
// CUPTI record → trace assembly without a GPU: synthetic kernel / runtime / NVTX records, checked against the GPU rule.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "ets/log.hpp"
#include "import/activity_capture.hpp"
#include "test_support.hpp"

using ets::import::ActivityApi;
using ets::import::ActivityCapture;
using ets::import::ActivityDevice;
using ets::import::ActivityMarker;

namespace {

// CUPTI timestamps are ns since an arbitrary epoch, large enough that doubles of them lose ns resolution.
constexpr std::uint64_t kBase = 1'700'000'000'000'000'000ull;
std::uint64_t at(double us) { return kBase + static_cast<std::uint64_t>(us * 1000.0); }

struct Builder {
  ActivityCapture c;
  std::uint32_t next_id = 1;
  void range(const std::string& name, double b, double e, std::uint64_t thread = 11) {
    const std::uint32_t id = next_id++;
    c.markers.push_back({at(b), id, ActivityMarker::Flag::Start, thread, name});
    c.markers.push_back({at(e), id, ActivityMarker::Flag::End, thread, {}});
  }
  void launch(std::uint32_t corr, double ts, double kb, double ke, std::string kernel = "k") {
    c.api.push_back({at(ts), at(ts + 3), 11, corr});
    c.device.push_back({at(kb), at(ke), 0, 7, corr, ets::import::DeviceKind::Kernel, std::move(kernel)});
  }
};

// Two profiler steps of two ops each; host ranges and launches precede the kernels they queue.
ActivityCapture two_steps() {
  Builder b;
  b.range("ProfilerStep#5", 0, 1000);
  b.range("aten::linear, seq = 3, sizes = [[4, 8], [8, 8]]", 10, 100);
  b.range("aten::addmm", 20, 90);  // nested: folded into aten::linear
  b.launch(100, 30, 300, 400);
  b.launch(101, 40, 400, 450);
  b.range("aten::relu, seq = 4", 150, 200);
  b.launch(102, 160, 500, 520);
  b.range("ProfilerStep#6", 1000, 2000);
  b.range("aten::linear, seq = 5", 1010, 1100);
  b.launch(200, 1020, 1300, 1400);
  b.range("aten::relu, seq = 6", 1150, 1200);
  b.launch(201, 1160, 1500, 1520);
  // Buffers arrive per kind and not in time order: the conversion must not depend on it.
  std::mt19937 rng(3);
  std::shuffle(b.c.device.begin(), b.c.device.end(), rng);
  std::shuffle(b.c.api.begin(), b.c.api.end(), rng);
  return b.c;
}

}  // namespace

TEST_CASE("NVTX op names from PyTorch's emit_nvtx are split into op, sequence and sizes") {
  auto n = ets::import::parse_nvtx_op_name("aten::addmm, seq = 12, op_id = 40, sizes = [[4, 8], [8, 2], []]");
  CHECK(n.op == "aten::addmm");
  CHECK(n.sequence == 12);
  REQUIRE(n.sizes.size() == 3);
  CHECK(n.sizes[0] == std::vector<std::int64_t>{4, 8});
  CHECK(n.sizes[1] == std::vector<std::int64_t>{8, 2});
  CHECK(n.sizes[2].empty());
  n = ets::import::parse_nvtx_op_name("conv2d");
  CHECK(n.op == "conv2d");
  CHECK(n.sequence == -1);
  CHECK(n.sizes.empty());
  n = ets::import::parse_nvtx_op_name("autograd::engine::evaluate_function: AddmmBackward0, seq = x");
  CHECK(n.op == "autograd::engine::evaluate_function: AddmmBackward0");
  CHECK(n.sequence == -1);  // malformed value: unknown, not garbage
}

TEST_CASE("records become host spans, steps, launches and activities on one µs clock") {
  ets::import::CaptureOptions opt;
  const auto in = ets::import::capture_to_assembly_input(two_steps(), opt);
  CHECK(in.meta.source_format == "cupti");
  REQUIRE(in.steps.size() == 2);
  CHECK(in.steps[0].index == 5);
  CHECK(in.steps[1].index == 6);
  CHECK(in.steps[0].start_us == Approx(0).margin(1e-9));
  CHECK(in.steps[1].start_us == Approx(1000));
  CHECK(in.steps[1].measured_us == Approx(1000));
  CHECK(in.host.size() == 5);
  CHECK(in.launches.size() == 5);
  REQUIRE(in.device.size() == 5);
  for (const auto& d : in.device) {
    CHECK(d.stream == 7);
    CHECK(d.end_us > d.start_us);
  }
  const auto linear = std::find_if(in.host.begin(), in.host.end(),
                                   [](const auto& h) { return h.rec.raw_name == "aten::linear" && h.start_us < 500; });
  REQUIRE(linear != in.host.end());
  CHECK(linear->rec.sequence == 3);
  CHECK(linear->tid == 11);
  CHECK(linear->end_us - linear->start_us == Approx(90));
}

TEST_CASE("synthetic capture assembles by the GPU rule: time = kernel union, gap = idle to the next op") {
  ets::import::CaptureOptions opt;
  opt.meta.model = "tiny";
  const auto traces = ets::import::assemble_capture(two_steps(), opt);
  REQUIRE(traces.size() == 2);
  const auto& a = traces[0];
  CHECK(a.iteration == 5);
  CHECK(a.meta.model == "tiny");
  CHECK(a.measured_us == Approx(1000));
  REQUIRE(a.ops.size() == 2);
  CHECK(a.ops[0].raw_name == "aten::linear");
  CHECK(a.ops[0].kernels == 2);
  CHECK(a.ops[0].sequence == 3);
  REQUIRE(a.ops[0].inputs.size() == 2);
  CHECK(a.ops[0].inputs[0].dims == std::vector<std::int64_t>{4, 8});
  CHECK(a.ops[0].time_us == Approx(150));  // [300, 400] ∪ [400, 450]
  CHECK(a.ops[0].gap_us == Approx(50));    // idle until relu's kernel at 500
  CHECK(a.ops[1].raw_name == "aten::relu");
  CHECK(a.ops[1].time_us == Approx(20));
  CHECK(a.ops[1].gap_us == Approx(780));   // to the next iteration's first kernel at 1300
  // Σ(time + gap) telescopes to the distance between the iterations' first kernels.
  CHECK(a.sum_us() == Approx(1300 - 300));
  const auto& b = traces[1];
  CHECK(b.iteration == 6);
  REQUIRE(b.ops.size() == 2);
  CHECK(b.ops[0].time_us == Approx(100));
  CHECK(b.ops[0].gap_us == Approx(100));
  CHECK(b.sum_us() == Approx(2000 - 1300));  // the last iteration runs to its step's end, after its last kernel (1520)
}

TEST_CASE("unpaired markers are ignored and named ranges become ops only when asked") {
  Builder b;
  b.range("ProfilerStep#0", 0, 100);
  b.range("lstm_forward", 5, 50);
  b.launch(1, 6, 10, 20);
  b.c.markers.push_back({at(60), 999, ActivityMarker::Flag::Start, 11, "never closed"});
  b.c.markers.push_back({at(70), 998, ActivityMarker::Flag::End, 11, {}});
  ets::import::CaptureOptions opt;
  opt.keep_incomplete = true;
  const auto in = ets::import::capture_to_assembly_input(b.c, opt);
  CHECK(in.host.size() == 1);
  CHECK(in.host[0].kind == ets::import::SpanKind::Auto);  // "lstm_forward" is no ns::op name: a scope
  opt.all_ranges_are_ops = true;
  const auto traces = ets::import::assemble_capture(b.c, opt);
  REQUIRE(traces.size() == 1);
  REQUIRE(traces[0].ops.size() == 1);
  CHECK(traces[0].ops[0].raw_name == "lstm_forward");
  CHECK(traces[0].ops[0].time_us == Approx(10));
}

TEST_CASE("communication kernels are classified by name, and an empty capture gives no input") {
  Builder b;
  b.launch(1, 0, 10, 20, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  b.launch(2, 1, 10, 20, "volta_sgemm_128x64_nn");
  const auto in = ets::import::capture_to_assembly_input(b.c, {});
  REQUIRE(in.device.size() == 2);
  CHECK(in.device[0].kind == ets::import::DeviceKind::Communication);
  CHECK(in.device[1].kind == ets::import::DeviceKind::Kernel);
  const auto empty = ets::import::capture_to_assembly_input({}, {});
  CHECK(empty.host.empty());
  CHECK(empty.device.empty());
  CHECK(empty.steps.empty());
}

TEST_CASE("records CUPTI could not time are dropped, counted in one warning, and leave the clock alone") {
  // cupti_activity.h: start == end == 0 (kernel, copy, API call) or a marker timestamp of 0 means "not collected".
  ActivityCapture c = two_steps();
  const auto relu6 = std::find_if(c.device.begin(), c.device.end(), [](const auto& d) { return d.correlation == 201; });
  REQUIRE(relu6 != c.device.end());
  relu6->start_ns = relu6->end_ns = 0;
  c.api.push_back({0, 0, 11, 300});
  c.markers.push_back({0, 500, ActivityMarker::Flag::Start, 11, "aten::mul"});  // its End alone is unpaired
  c.markers.push_back({at(1170), 500, ActivityMarker::Flag::End, 11, {}});
  c.markers.push_back({0, 501, ActivityMarker::Flag::Instant, 11, "mark"});
  ets_test::CapturedWarnings log;
  const auto in = ets::import::capture_to_assembly_input(c, {});
  const auto traces = ets::import::assemble_capture(c, {});
  const std::vector<std::string> warnings = log.lines;
  REQUIRE(in.steps.size() == 2);
  CHECK(in.steps[0].start_us == Approx(0).margin(1e-9));  // the origin is the earliest timed record
  CHECK(in.steps[1].start_us == Approx(1000));
  CHECK(in.device.size() == 4);
  CHECK(in.launches.size() == 5);
  CHECK(in.host.size() == 5);
  const auto ours = std::count_if(warnings.begin(), warnings.end(),
                                  [](const std::string& w) { return w.rfind("[ets.import.5]", 0) == 0; });
  CHECK(ours == 2);  // once per conversion, with the count
  for (const auto& w : warnings)
    if (w.rfind("[ets.import.5]", 0) == 0) CHECK(w.find(" 4 ") != std::string::npos);
  // Step 6's relu lost its only kernel: step 6 keeps linear, step 5's last gap still runs to step 6's first kernel.
  REQUIRE(traces.size() == 2);
  REQUIRE(traces[0].ops.size() == 2);
  CHECK(traces[0].ops[1].gap_us == Approx(780));
  REQUIRE(traces[1].ops.size() == 1);
  CHECK(traces[1].ops[0].raw_name == "aten::linear");
  CHECK(traces[1].start_us == Approx(1300));
  // A capture with nothing timed is empty, like an empty one.
  ActivityCapture untimed;
  untimed.device.push_back({0, 0, 0, 7, 1, ets::import::DeviceKind::Kernel, "k"});
  const auto none = ets::import::capture_to_assembly_input(untimed, {});
  CHECK(none.device.empty());
}

TEST_CASE("an NVTX range whose End record arrives before its Start is paired by id") {
  Builder b;
  b.range("ProfilerStep#0", 0, 100);
  b.range("aten::mm", 5, 50);
  b.launch(1, 6, 10, 20);
  b.range("ProfilerStep#1", 100, 200);
  b.range("aten::mm", 105, 150);
  b.launch(2, 106, 110, 130);
  // CUPTI delivers per-thread buffers in no set order: both ranges of step 0 come End first.
  std::swap(b.c.markers[0], b.c.markers[1]);
  std::swap(b.c.markers[2], b.c.markers[3]);
  const auto in = ets::import::capture_to_assembly_input(b.c, {});
  REQUIRE(in.steps.size() == 2);
  CHECK(in.steps[0].index == 0);
  CHECK(in.steps[0].measured_us == Approx(100));
  CHECK(in.host.size() == 2);
  const auto traces = ets::import::assemble_capture(b.c, {});
  REQUIRE(traces.size() == 2);
  CHECK(traces[0].iteration == 0);
  REQUIRE(traces[0].ops.size() == 1);
  CHECK(traces[0].ops[0].time_us == Approx(10));
  // An id used again pairs each End with the Start just before it, whatever the record order.
  Builder r;
  r.range("ProfilerStep#0", 0, 100);
  r.c.markers.push_back({at(60), 9, ActivityMarker::Flag::End, 11, {}});
  r.c.markers.push_back({at(40), 9, ActivityMarker::Flag::Start, 11, "aten::add"});
  r.c.markers.push_back({at(20), 9, ActivityMarker::Flag::End, 11, {}});
  r.c.markers.push_back({at(10), 9, ActivityMarker::Flag::Start, 11, "aten::mul"});
  const auto reused = ets::import::capture_to_assembly_input(r.c, {});
  REQUIRE(reused.host.size() == 2);
  std::vector<std::pair<std::string, double>> spans;
  for (const auto& h : reused.host) spans.emplace_back(h.rec.raw_name, h.end_us - h.start_us);
  std::sort(spans.begin(), spans.end());
  CHECK(spans[0] == std::pair<std::string, double>("aten::add", 20.0));
  CHECK(spans[1] == std::pair<std::string, double>("aten::mul", 10.0));
}
