// ets-test-labels: unit
// Kernel -> op assembly on synthetic records: overlap, kernels without launch, multi-stream, NCCL, CPU rule.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ets/log.hpp"
#include "import/gpu_assembly.hpp"
#include "test_support.hpp"

using namespace ets;
using namespace ets::import;

namespace {

HostSpan span(const std::string& name, double a, double b, std::int64_t tid = 1, SpanKind k = SpanKind::Auto) {
  HostSpan s;
  s.rec.raw_name = name;
  s.start_us = a;
  s.end_us = b;
  s.tid = tid;
  s.kind = k;
  return s;
}

DeviceActivity kernel(double a, double b, std::int64_t corr, std::int64_t stream = 7,
                      DeviceKind kind = DeviceKind::Kernel) {
  DeviceActivity d;
  d.start_us = a;
  d.end_us = b;
  d.correlation = corr;
  d.stream = stream;
  d.kind = kind;
  return d;
}

Launch launch(std::int64_t corr, double ts, std::int64_t tid = 1) {
  Launch l;
  l.correlation = corr;
  l.ts_us = ts;
  l.tid = tid;
  return l;
}

double sum(const ExecutionTrace& t) { return t.sum_us(); }

}  // namespace

TEST_CASE("GPU: op time is the sum of its kernels, gap the idle time until the next op's first kernel") {
  AssemblyInput in;
  in.steps = {{1, 0, 100, 100}, {2, 100, 200, 100}};
  // Step 1: conv (two kernels), relu (one kernel); step 2: conv.
  in.host = {span("aten::conv2d", 10, 20), span("aten::cudnn_convolution", 11, 19), span("aten::relu", 30, 35),
             span("aten::conv2d", 110, 120)};
  in.launches = {launch(1, 12), launch(2, 15), launch(3, 31), launch(4, 111)};
  in.device = {kernel(50, 60, 1), kernel(62, 66, 2), kernel(70, 71, 3), kernel(150, 160, 4)};
  const auto its = assemble_gpu(in);
  REQUIRE(its.size() == 2);
  REQUIRE(its[0].ops.size() == 2);
  const auto& conv = its[0].ops[0];
  CHECK(conv.name == "conv2d");
  CHECK(conv.kernels == 2);
  CHECK(conv.start_us == 50);
  CHECK(conv.time_us == Approx(14));         // 10 + 4
  CHECK(conv.gap_us == Approx(70 - 50 - 14));  // idle 60..62 and 66..70
  CHECK(its[0].ops[1].time_us == Approx(1));
  CHECK(its[0].ops[1].gap_us == Approx(150 - 71));  // runs to the next iteration's first kernel
  CHECK(sum(its[0]) == Approx(its[1].start_us - its[0].start_us));
  // The last iteration has no next kernel: it runs to its step's end (200), which comes after its last kernel (160)
  CHECK(sum(its[1]) == Approx(200 - 150));
  CHECK(its[1].ops.back().gap_us == Approx(200 - 160));
  CHECK(its[1].measured_us == 100);

  // ... and to its last kernel end where the device is still busy after the step ended on the host
  in.steps.back().end_us = 155;
  const auto late = assemble_gpu(in);
  REQUIRE(late.size() == 2);
  CHECK(sum(late[1]) == Approx(10));
  CHECK(late[1].ops.back().gap_us == Approx(0));

  // ... and to its last kernel end where the step has no finite end (a marker-derived step cut by the capture)
  in.steps.back().end_us = std::numeric_limits<double>::infinity();
  const auto open = assemble_gpu(in);
  REQUIRE(open.size() == 2);
  CHECK(sum(open[1]) == Approx(10));
}

TEST_CASE("GPU: overlapping kernels of one op count once; overlap into the next op goes to the later op") {
  AssemblyInput in;
  in.host = {span("aten::a", 0, 1), span("aten::b", 2, 3)};
  in.launches = {launch(1, 0.5), launch(2, 0.6), launch(3, 2.5)};
  // a: streams 7 and 8 overlap [10,20) and [15,30); b starts on stream 7 at 25 while a's second kernel runs.
  in.device = {kernel(10, 20, 1, 7), kernel(15, 30, 2, 8), kernel(25, 35, 3, 7)};
  const auto its = assemble_gpu(in);
  REQUIRE(its.size() == 1);
  REQUIRE(its[0].ops.size() == 2);
  CHECK(its[0].ops[0].time_us == Approx(15));  // union [10,30) clipped at b's start 25
  CHECK(its[0].ops[0].gap_us == Approx(0));
  CHECK(its[0].ops[1].start_us == 25);
  CHECK(its[0].ops[1].time_us == Approx(10));
  CHECK(sum(its[0]) == Approx(25));
  for (const auto& op : its[0].ops) CHECK(op.gap_us >= 0);
}

TEST_CASE("GPU: work still running when the next op starts is that op's time, not its gap") {
  // a's kernel [10,40) on stream 7 runs on while b ([20,25) on stream 8) and c ([45,50)) start: the device is busy
  // until 40, so b's window [20,45) holds 20 busy µs and 5 idle ones. (Counting only b's own kernel booked 15 µs of
  // a's work as idle gap, and a's overflow as nobody's time.)
  AssemblyInput in;
  in.host = {span("aten::a", 0, 1), span("aten::b", 2, 3), span("aten::c", 4, 5)};
  in.launches = {launch(1, 0.5), launch(2, 2.5), launch(3, 4.5)};
  in.device = {kernel(10, 40, 1, 7), kernel(20, 25, 2, 8), kernel(45, 50, 3, 7)};
  const auto its = assemble_gpu(in);
  REQUIRE(its.size() == 1);
  REQUIRE(its[0].ops.size() == 3);
  const auto& ops = its[0].ops;
  CHECK(ops[0].time_us == Approx(10));  // [10,20)
  CHECK(ops[0].gap_us == Approx(0));
  CHECK(ops[1].time_us == Approx(20));  // [20,40): b's kernel and the rest of a's
  CHECK(ops[1].gap_us == Approx(5));    // idle [40,45)
  CHECK(ops[2].time_us == Approx(5));
  double busy = 0;
  for (const auto& op : ops) busy += op.time_us;
  CHECK(busy == Approx(35));  // the device's busy time [10,40) ∪ [45,50): every kernel µs counted exactly once
  CHECK(sum(its[0]) == Approx(40));
}

TEST_CASE("GPU: an iteration whose device work starts inside the previous one is placed at the boundary, with a warning") {
  // Step 2's copy (stream 16) runs at [45,55): before step 1's second op starts on the device at 50, and while
  // step 1's work runs until 60.
  AssemblyInput in;
  in.steps = {{1, 0, 100, 100}, {2, 100, 200, 100}};
  in.host = {span("aten::a", 10, 11), span("aten::b", 20, 21), span("aten::to", 110, 111), span("aten::c", 120, 121)};
  in.launches = {launch(1, 10.5), launch(2, 20.5), launch(3, 110.5), launch(4, 120.5)};
  in.device = {kernel(40, 45, 1), kernel(50, 60, 2), kernel(45, 55, 3, 16), kernel(70, 80, 4)};
  ets_test::CapturedWarnings log;
  const auto its = assemble_gpu(in);
  const std::vector<std::string> warnings = log.lines;
  REQUIRE(its.size() == 2);
  REQUIRE(its[1].ops.size() == 2);
  CHECK(its[1].start_us == 60);  // at the end of step 1's device work
  CHECK(its[0].ops[0].time_us == Approx(5 + 5));  // a's window [40,50) holds a's kernel and the copy's first 5 µs
  CHECK(its[0].ops[1].time_us == Approx(10));     // b keeps its own kernel: not cut to nothing by the copy
  CHECK(its[1].ops[0].time_us == 0);              // the copy ran inside step 1's windows
  CHECK(sum(its[0]) == Approx(20));
  double busy = 0;
  for (const auto& t : its)
    for (const auto& op : t.ops) busy += op.time_us;
  CHECK(busy == Approx(30));  // [40,60) ∪ [70,80): every busy µs once
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].rfind("[ets.import.3]", 0) == 0);
  CHECK(warnings[0].find("1 iterations") != std::string::npos);
}

TEST_CASE("GPU: kernels without a launch fall to the op window holding them; NCCL kernels never count") {
  AssemblyInput in;
  in.host = {span("aten::a", 0, 1), span("aten::b", 2, 3), span("nccl:all_reduce", 3, 4, 1, SpanKind::Scope)};
  in.launches = {launch(1, 0.5), launch(2, 2.5), launch(3, 3.5)};
  in.device = {kernel(10, 12, 1), kernel(13, 14, 99 /* no launch */), kernel(20, 22, 2),
               kernel(11, 40, 3, 20, DeviceKind::Communication)};
  const auto its = assemble_gpu(in);
  REQUIRE(its.size() == 1);
  REQUIRE(its[0].ops.size() == 2);
  CHECK(its[0].ops[0].kernels == 2);
  CHECK(its[0].ops[0].time_us == Approx(3));
  CHECK(its[0].ops[1].time_us == Approx(2));
  CHECK(sum(its[0]) == Approx(12));  // the communication kernel's 40 µs end does not extend the iteration
}

TEST_CASE("GPU: a correlation id two launches carry goes, per activity, to the latest launch not after its start") {
  // a launches at 10 and b at 30, both with id 5 (listed b first: file order used to decide, the later listed
  // winning for every kernel of the id). The kernel at 20 can only be a's; the one at 40 is b's.
  AssemblyInput in;
  in.host = {span("aten::a", 0, 15, 1), span("aten::b", 25, 35, 2)};
  in.launches = {launch(5, 30, 2), launch(5, 10, 1)};
  in.device = {kernel(20, 24, 5), kernel(40, 42, 5)};
  ets_test::CapturedWarnings log;
  const auto its = assemble_gpu(in);
  const std::vector<std::string> warnings = log.lines;
  REQUIRE(its.size() == 1);
  REQUIRE(its[0].ops.size() == 2);
  CHECK(its[0].ops[0].raw_name == "aten::a");
  CHECK(its[0].ops[0].kernels == 1);
  CHECK(its[0].ops[0].time_us == Approx(4));
  CHECK(its[0].ops[0].gap_us == Approx(40 - 20 - 4));
  CHECK(its[0].ops[1].raw_name == "aten::b");
  CHECK(its[0].ops[1].kernels == 1);
  CHECK(its[0].ops[1].time_us == Approx(2));
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].rfind("[ets.import.10]", 0) == 0);
  CHECK(warnings[0].find(" 1 correlation ids") != std::string::npos);
  // listed the other way round, the same
  std::swap(in.launches[0], in.launches[1]);
  const auto again = assemble_gpu(in);
  REQUIRE(again.size() == 1);
  REQUIRE(again[0].ops.size() == 2);
  CHECK(again[0].ops[0].kernels == 1);
  CHECK(again[0].ops[1].kernels == 1);
  // a kernel that starts before every launch of its id goes to the earliest
  in.device = {kernel(5, 8, 5), kernel(40, 42, 5)};
  const auto early = assemble_gpu(in);
  REQUIRE(early.size() == 1);
  REQUIRE(early[0].ops.size() == 2);
  CHECK(early[0].ops[0].raw_name == "aten::a");
  CHECK(early[0].ops[0].start_us == 5);
}

namespace {
// The reviewers' trace t1: ProfilerStep#1 [0,1000) and #2 [1000,2000); conv2d launches two overlapping kernels on
// streams 7 and 8, relu a memcpy and a memset, add and mul a kernel each. Correct: conv2d t150 g50, relu t30 g670 |
// add t50 g50, mul t10 g790.
AssemblyInput t1() {
  AssemblyInput in;
  in.steps = {{1, 0, 1000, 1000}, {2, 1000, 2000, 1000}};
  in.host = {span("ProfilerStep#1", 0, 1000, 1, SpanKind::Scope), span("ProfilerStep#2", 1000, 2000, 1, SpanKind::Scope),
             span("aten::conv2d", 10, 100), span("aten::relu", 100, 150), span("aten::add", 1010, 1050),
             span("aten::mul", 1060, 1080)};
  in.launches = {launch(1, 20), launch(2, 30), launch(3, 110), launch(4, 120), launch(5, 1020), launch(6, 1070)};
  in.device = {kernel(200, 300, 1, 7), kernel(250, 350, 2, 8), kernel(400, 420, 3, 7, DeviceKind::Memcpy),
               kernel(430, 440, 4, 7, DeviceKind::Memset), kernel(1100, 1150, 5), kernel(1200, 1210, 6)};
  return in;
}
// (time, gap) of every op of every iteration
std::vector<std::pair<double, double>> times(const std::vector<ExecutionTrace>& its) {
  std::vector<std::pair<double, double>> v;
  for (const auto& t : its)
    for (const auto& op : t.ops) v.emplace_back(op.time_us, op.gap_us);
  return v;
}
using TG = std::vector<std::pair<double, double>>;
}  // namespace

TEST_CASE("GPU: activities without a launch stay inside their iteration, those queued before the capture too") {
  CHECK(times(assemble_gpu(t1())) == TG{{150, 50}, {30, 670}, {50, 50}, {10, 790}});

  // A kernel without a launch long after the capture's work (50 ms on) fell into mul's window and stretched the
  // last iteration to it (mul's gap 48790): it lies past the last iteration's end and is dropped.
  {
    AssemblyInput in = t1();
    in.device.push_back(kernel(50000, 50010, 99));
    ets_test::CapturedWarnings log;
    const auto its = assemble_gpu(in);
    CHECK(times(its) == TG{{150, 50}, {30, 670}, {50, 50}, {10, 790}});
    REQUIRE(its.size() == 2);
    CHECK(its[1].ops[1].kernels == 1);
    REQUIRE(log.lines.size() == 1);
    CHECK(log.lines[0].rfind("[ets.import.2]", 0) == 0);
    CHECK(log.lines[0].find("(1 outside every iteration's span are dropped)") != std::string::npos);
  }
  // Inside an iteration's span it still counts for the op whose window holds it (here in add's idle [1150,1200)).
  {
    AssemblyInput in = t1();
    in.device.push_back(kernel(1160, 1170, 99));
    CHECK(times(assemble_gpu(in)) == TG{{150, 50}, {30, 670}, {60, 40}, {10, 790}});
  }
  // Without the launches of step 2 its kernels fell into relu's window (relu t90 g720, as if step 1 ran on to
  // 1210): they lie past step 1's end (1000) and are dropped; step 2, with no op of known device work, goes.
  {
    AssemblyInput in = t1();
    in.launches.resize(4);
    ets_test::CapturedWarnings log;
    const auto its = assemble_gpu(in);
    REQUIRE(its.size() == 1);
    CHECK(times(its) == TG{{150, 50}, {30, 1000 - 430}});
    REQUIRE(log.lines.size() == 2);
    CHECK(log.lines[0].find("2 device activities") != std::string::npos);
    CHECK(log.lines[0].find("(2 outside") != std::string::npos);
    CHECK(log.lines[1].rfind("[ets.import.11]", 0) == 0);  // and the step is named as not returned
    CHECK(log.lines[1].find("step 2") != std::string::npos);
  }
  // Ids below the first launch's were queued before the capture began (HTA's negative_queue trace: 867 of them,
  // in the first step). The device is busy with them where they run: device busy time of the op whose window holds
  // their start, as any work without a launch, under their own warning (not ets.import.2's).
  {
    AssemblyInput in = t1();
    for (auto& l : in.launches) l.correlation += 100;
    for (auto& d : in.device) d.correlation += 100;
    in.device.push_back(kernel(1160, 1170, 3));   // inside add's window
    in.device.push_back(kernel(450, 950, 100));   // inside relu's
    in.device.push_back(kernel(50000, 50010, 1));  // past the last iteration's end: dropped
    ets_test::CapturedWarnings log;
    CHECK(times(assemble_gpu(in)) == TG{{150, 50}, {530, 170}, {60, 40}, {10, 790}});
    REQUIRE(log.lines.size() == 1);
    CHECK(log.lines[0].rfind("[ets.import.9]", 0) == 0);
    CHECK(log.lines[0].find(" 3 device activities") != std::string::npos);
  }
}

TEST_CASE("GPU: nested spans roll up to the outermost op; phases from enclosing scopes; launch by thread and time") {
  AssemblyInput in;
  in.host = {span("aten::linear", 0, 10), span("aten::addmm", 1, 9),
             span("autograd::engine::evaluate_function: AddmmBackward0", 20, 30, 2),
             span("AddmmBackward0", 21, 29, 2), span("aten::mm", 22, 25, 2),
             span("Optimizer.step#SGD.step", 40, 50, 1, SpanKind::Scope), span("aten::add_", 41, 45)};
  in.launches = {launch(1, 5), launch(2, 23, 2), launch(3, 42)};
  in.device = {kernel(100, 110, 1), kernel(120, 130, 2), kernel(140, 145, 3)};
  const auto its = assemble_gpu(in);
  REQUIRE(its.size() == 1);
  REQUIRE(its[0].ops.size() == 3);
  CHECK(its[0].ops[0].name == "linear");
  CHECK(its[0].ops[0].phase == Phase::Forward);
  CHECK(its[0].ops[1].name == "linear");
  CHECK(its[0].ops[1].phase == Phase::Backward);
  CHECK(its[0].ops[1].raw_name == "autograd::engine::evaluate_function: AddmmBackward0");
  CHECK(its[0].ops[2].phase == Phase::Update);
}

TEST_CASE("GPU: a launch belongs to the innermost span still open at it, in any order the launches are listed") {
  // Spans that ended before a launch are passed over for it and every later one; their parents still count.
  AssemblyInput in;
  in.host = {span("aten::conv2d", 0, 100), span("aten::convolution", 10, 90), span("aten::_convolution", 20, 30),
             span("aten::relu", 200, 300), span("aten::clamp_min", 210, 220)};
  in.launches = {launch(6, 250), launch(1, 95), launch(3, 50), launch(2, 25), launch(5, 215)};  // not in time order
  in.device = {kernel(1000, 1001, 2), kernel(1002, 1003, 3), kernel(1004, 1005, 1), kernel(1010, 1011, 5),
               kernel(1012, 1013, 6)};
  const auto its = assemble_gpu(in);
  REQUIRE(its.size() == 1);
  REQUIRE(its[0].ops.size() == 2);
  CHECK(its[0].ops[0].name == "conv2d");
  CHECK(its[0].ops[0].kernels == 3);  // at 25 (innermost), at 50 (its child ended), at 95 (both children ended)
  CHECK(its[0].ops[1].name == "relu");
  CHECK(its[0].ops[1].kernels == 2);

  // A chain of 3,000 nested spans, each launch after the innermost spans have ended: every launch finds the op.
  AssemblyInput deep;
  const int depth = 3000;
  for (int i = 0; i < depth; ++i) deep.host.push_back(span(i == 0 ? "aten::linear" : "aten::mm", i, 2.0 * depth - i));
  for (int i = 0; i < depth; ++i) {
    deep.launches.push_back(launch(i + 1, 1.5 * depth + 0.25 * i));  // inside the outer half of the chain
    deep.device.push_back(kernel(10.0 * depth + i, 10.0 * depth + i + 0.5, i + 1));
  }
  const auto d = assemble_gpu(deep);
  REQUIRE(d.size() == 1);
  REQUIRE(d[0].ops.size() == 1);
  CHECK(d[0].ops[0].kernels == static_cast<std::uint32_t>(depth));
}

TEST_CASE("CPU: outermost ops, gap to next start, last gap to the next iteration; bookkeeping filtered") {
  AssemblyInput in;
  in.steps = {{0, 0, 100, 100}, {1, 100, 200, 100}};
  in.host = {span("ProfilerStep#0", 0, 100, 1, SpanKind::Scope), span("aten::empty", 1, 2),
             span("aten::conv2d", 5, 20), span("aten::convolution", 6, 19), span("aten::relu", 25, 30),
             span("ProfilerStep#1", 100, 200, 1, SpanKind::Scope), span("aten::empty", 101, 102),
             span("aten::conv2d", 104, 120), span("aten::relu", 124, 190),
             span("aten::other_thread", 10, 90, 5)};
  const auto its = assemble_cpu(in);
  REQUIRE(its.size() == 2);
  REQUIRE(its[0].ops.size() == 2);
  CHECK(its[0].start_us == 5);
  CHECK(its[0].ops[0].time_us == 15);
  CHECK(its[0].ops[0].gap_us == 5);
  CHECK(its[0].ops[1].gap_us == 104 - 30);
  CHECK(sum(its[0]) == its[1].start_us - its[0].start_us);
  CHECK(sum(its[1]) == 200 - 104);  // last iteration runs to its ProfilerStep end
}

TEST_CASE("tail steps close the step before them and are not returned, on both rules") {
  // CPU: three steps; the third is a tail, so the second's last gap runs to the third's first op (204), not to the
  // second's ProfilerStep end (200), and the third is dropped.
  AssemblyInput cpu;
  cpu.steps = {{0, 0, 100, 100}, {1, 100, 200, 100}, {2, 200, 300, 100}};
  cpu.host = {span("aten::conv2d", 5, 20), span("aten::relu", 25, 30), span("aten::conv2d", 104, 120),
              span("aten::relu", 124, 190), span("aten::conv2d", 204, 220), span("aten::relu", 224, 290)};
  AssemblyOptions tail;
  tail.tail_steps = 1;
  const auto untailed = assemble_cpu(cpu);
  REQUIRE(untailed.size() == 3);
  CHECK(sum(untailed[1]) == 204 - 104);
  CHECK(sum(untailed[2]) == 300 - 204);  // ends at its span's end: 4 µs short of the time between steps
  const auto its = assemble_cpu(cpu, tail);
  REQUIRE(its.size() == 2);
  CHECK(its[1].iteration == 1);
  CHECK(its[1].ops.back().gap_us == 204 - 190);
  CHECK(sum(its[1]) == 204 - 104);
  tail.tail_steps = 2;
  const auto one = assemble_cpu(cpu, tail);
  REQUIRE(one.size() == 1);
  CHECK(sum(one[0]) == 104 - 5);

  // GPU: the second step's last op's gap runs to the tail step's first kernel (250), not to its step end (200)
  AssemblyInput gpu;
  gpu.steps = {{1, 0, 100, 100}, {2, 100, 200, 100}, {3, 200, 300, 100}};
  gpu.host = {span("aten::conv2d", 10, 20), span("aten::conv2d", 110, 120), span("aten::conv2d", 210, 220)};
  gpu.launches = {launch(1, 12), launch(2, 112), launch(3, 212)};
  gpu.device = {kernel(50, 60, 1), kernel(150, 160, 2), kernel(250, 260, 3)};
  tail.tail_steps = 1;
  const auto g = assemble_gpu(gpu, tail);
  REQUIRE(g.size() == 2);
  CHECK(g[1].iteration == 2);
  CHECK(g[1].ops.back().gap_us == Approx(250 - 160));
  CHECK(assemble_gpu(gpu).size() == 3);
  // a tail step without device work (or, on the CPU rule, without an op) closes nothing: refused
  gpu.device.pop_back();
  CHECK_THROWS_WITH(assemble_gpu(gpu, tail), Catch::Contains("ets.import.7"));
  cpu.host.resize(4);
  CHECK_THROWS_WITH(assemble_cpu(cpu, tail), Catch::Contains("ets.import.7"));
}

TEST_CASE("steps without an op are not returned, and one warning names them, on both rules") {
  // CPU: steps 1 and 3 ran no op on the training thread (3 only on another thread)
  AssemblyInput cpu;
  cpu.steps = {{0, 0, 100, 100}, {1, 100, 200, 100}, {2, 200, 300, 100}, {3, 300, 400, 100}};
  cpu.host = {span("aten::conv2d", 5, 20), span("aten::relu", 225, 290), span("aten::relu", 310, 320, 7)};
  ets_test::CapturedWarnings log;
  const auto its = assemble_cpu(cpu);
  REQUIRE(its.size() == 2);
  CHECK(its[0].iteration == 0);
  CHECK(its[1].iteration == 2);
  CHECK(sum(its[0]) == 100 - 5);  // no successor with ops: to its own step's end
  REQUIRE(log.lines.size() == 1);
  CHECK(log.lines[0].rfind("[ets.import.11]", 0) == 0);
  CHECK(log.lines[0].find("2 steps hold no operator on the training thread and are not returned") != std::string::npos);
  CHECK(log.lines[0].find("steps 1, 3") != std::string::npos);

  // where no step has an op nothing is returned and nothing is said (the reader decides: ets.kineto.3, or zero-op
  // iterations)
  log.lines.clear();
  AssemblyInput none = cpu;
  none.host = {span("ProfilerStep#0", 0, 100, 1, SpanKind::Scope)};
  CHECK(assemble_cpu(none).empty());
  CHECK(log.lines.empty());

  // more than five are counted, the first five named
  AssemblyInput many;
  for (std::int64_t k = 0; k < 8; ++k) many.steps.push_back({k, 100.0 * k, 100.0 * k + 100, 100});
  many.host = {span("aten::conv2d", 5, 20)};
  CHECK(assemble_cpu(many).size() == 1);
  REQUIRE(log.lines.size() == 1);
  CHECK(log.lines[0].find("7 steps hold") != std::string::npos);
  CHECK(log.lines[0].find("steps 1, 2, 3, 4, 5, …") != std::string::npos);

  // GPU: step 2's op launched no device work; a step the profiler stopped in (step 3) holds nothing
  log.lines.clear();
  AssemblyInput gpu;
  gpu.steps = {{1, 0, 100, 100}, {2, 100, 200, 100}, {3, 200, 210, 10}};
  gpu.host = {span("aten::conv2d", 10, 20), span("aten::size", 110, 120)};
  gpu.launches = {launch(1, 12)};
  gpu.device = {kernel(50, 60, 1)};
  const auto g = assemble_gpu(gpu);
  REQUIRE(g.size() == 1);
  CHECK(g[0].iteration == 1);
  REQUIRE(log.lines.size() == 1);
  CHECK(log.lines[0].rfind("[ets.import.11]", 0) == 0);
  CHECK(log.lines[0].find("2 steps hold no operator with device work") != std::string::npos);
  CHECK(log.lines[0].find("steps 2, 3") != std::string::npos);
  // one such step: said in the singular
  log.lines.clear();
  gpu.steps.pop_back();
  CHECK(assemble_gpu(gpu).size() == 1);
  REQUIRE(log.lines.size() == 1);
  CHECK(log.lines[0].find("1 step holds no operator with device work and is not returned") != std::string::npos);
  CHECK(log.lines[0].find("step 2") != std::string::npos);
  // tail steps are not counted: they close the step before them
  log.lines.clear();
  gpu.steps.push_back({3, 200, 300, 100});
  gpu.host.push_back(span("aten::conv2d", 210, 220));
  gpu.launches.push_back(launch(3, 212));
  gpu.device.push_back(kernel(250, 260, 3));
  AssemblyOptions tail;
  tail.tail_steps = 1;
  CHECK(assemble_gpu(gpu, tail).size() == 1);
  REQUIRE(log.lines.size() == 1);
  CHECK(log.lines[0].find("step 2") != std::string::npos);
}

TEST_CASE("GPU: an iteration whose next step has no device work ends as a last one does, not at a later step's kernel") {
  // Step 2 ran host work only. Step 1's last gap ran to step 3's first kernel (250): Σ 200 µs against a step of 100.
  AssemblyInput in;
  in.steps = {{1, 0, 100, 100}, {2, 100, 200, 100}, {3, 200, 300, 100}};
  in.host = {span("aten::conv2d", 10, 20), span("aten::size", 110, 120), span("aten::conv2d", 210, 220)};
  in.launches = {launch(1, 12), launch(3, 212)};
  in.device = {kernel(50, 60, 1), kernel(250, 260, 3)};
  {
    const auto its = assemble_gpu(in);
    REQUIRE(its.size() == 2);
    CHECK(sum(its[0]) == Approx(100 - 50));  // to its step's end
    CHECK(its[0].ops[0].time_us == Approx(10));
    CHECK(sum(its[1]) == Approx(300 - 250));
  }
  // Its device work running on past its step's end counts: it ends at its last kernel then
  in.device[0] = kernel(50, 160, 1);
  CHECK(sum(assemble_gpu(in)[0]) == Approx(160 - 50));
  // A kernel without a launch between the two iterations (after step 1's close, before step 3's first kernel)
  // belongs to neither: dropped, as one past the last iteration's end is
  in.device[0] = kernel(50, 60, 1);
  in.device.push_back(kernel(150, 155, 99));
  ets_test::CapturedWarnings log;
  const auto its = assemble_gpu(in);
  REQUIRE(its.size() == 2);
  CHECK(its[0].ops[0].time_us == Approx(10));
  CHECK(its[0].ops[0].kernels == 1);
  CHECK(sum(its[0]) == Approx(50));
  REQUIRE(!log.lines.empty());
  CHECK(log.lines[0].rfind("[ets.import.2]", 0) == 0);
  CHECK(log.lines[0].find("(1 outside every iteration's span are dropped)") != std::string::npos);
  // Inside step 1's span it still counts for step 1's op
  in.device.back() = kernel(80, 90, 99);
  CHECK(assemble_gpu(in)[0].ops[0].time_us == Approx(20));
}

TEST_CASE("communication kernels are recognised by name") {
  CHECK(is_communication_kernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"));
  CHECK(is_communication_kernel("ncclDevKernel_AllGather_RING_LL"));
  CHECK_FALSE(is_communication_kernel("volta_sgemm_128x64_nn"));
}

TEST_CASE("GPU assembly across many ops: each op's record, kernels, time, gap; host-only ops, a tail step left out") {
  // Thousands of ops, so that the ops the output takes and those it leaves lie in many chunks of the op list: per
  // step, op i launches at 10i + 1 µs into the step and its kernel runs [10i + 5, 10i + 9); every seventh op launches
  // nothing (no device work: not an op of the GPU rule).
  const std::vector<int> ops = {1300, 517, 2049, 700};
  AssemblyInput in;
  std::int64_t corr = 0;
  double t0 = 0;
  for (std::size_t s = 0; s < ops.size(); ++s) {
    const double len = 10.0 * ops[s] + 100;
    in.steps.push_back({static_cast<std::int64_t>(s), t0, t0 + len, len});
    for (int i = 0; i < ops[s]; ++i) {
      in.host.push_back(span(i % 2 ? "aten::mul" : "aten::add", t0 + 10 * i, t0 + 10 * i + 3));
      if (i % 7 == 6) continue;
      in.launches.push_back(launch(++corr, t0 + 10 * i + 1));
      in.device.push_back(kernel(t0 + 10 * i + 5, t0 + 10 * i + 9, corr));
    }
    t0 += len;
  }
  const auto check = [&](const std::vector<ExecutionTrace>& its, std::size_t n, bool tail) {
    REQUIRE(its.size() == n);
    double s0 = 0;
    for (std::size_t s = 0; s < n; ++s) {
      INFO("step " << s);
      const auto& it = its[s];
      CHECK(it.iteration == static_cast<std::int64_t>(s));
      std::vector<int> with_kernel;
      for (int i = 0; i < ops[s]; ++i)
        if (i % 7 != 6) with_kernel.push_back(i);
      REQUIRE(it.ops.size() == with_kernel.size());
      for (std::size_t k = 0; k < it.ops.size(); ++k) {
        const OpRecord& op = it.ops[k];
        const int i = with_kernel[k];
        // to the next op's kernel, the next step's first kernel (5 µs into it), or (last, no tail) the step's end
        const double next = k + 1 < it.ops.size() ? s0 + 10 * with_kernel[k + 1] + 5
                            : tail || s + 1 < n   ? s0 + 10.0 * ops[s] + 100 + 5
                                                  : s0 + 10.0 * ops[s] + 100;
        if (op.raw_name != (i % 2 ? "aten::mul" : "aten::add") || op.kernels != 1 || op.start_us != s0 + 10 * i + 5 ||
            op.time_us != Approx(4) || op.gap_us != Approx(next - (s0 + 10 * i + 9))) {
          FAIL_CHECK("op " << k << " (" << i << "): " << op.raw_name << " at " << op.start_us << ", " << op.kernels
                           << " kernels, time " << op.time_us << ", gap " << op.gap_us << " (next at " << next << ")");
          break;
        }
      }
      s0 += 10.0 * ops[s] + 100;
    }
  };
  check(assemble_gpu(in), 4, false);
  AssemblyOptions tail;
  tail.tail_steps = 1;
  check(assemble_gpu(in, tail), 3, true);
}
