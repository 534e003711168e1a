// ets-test-labels: unit;slow
// Every trace under ../shared/data/kineto-gpu imports (read in place; .tar.gz members extracted to a temp dir),
// iterations telescope exactly, steady steps match the ProfilerStep spans, and ResNet-50 has its 53 convolutions.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>


#include "ets/error.hpp"
#include "ets/tracer.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace ets;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Imports one file and checks the invariants that hold for every source; returns the iterations.
std::vector<ExecutionTrace> check_file(const std::string& path) {
  INFO(path);
  std::vector<ExecutionTrace> its;
  REQUIRE_NOTHROW(its = Tracer::load(path));
  REQUIRE(!its.empty());
  const bool timed = its.front().meta.source_format == "kineto";
  if (!timed) return its;  // PyTorch ET: operators without timings (formats' reader)
  for (std::size_t i = 0; i + 1 < its.size(); ++i) {
    const double dist = its[i + 1].start_us - its[i].start_us;
    CHECK(its[i].sum_us() == Approx(dist).epsilon(1e-9).margin(1e-6));
  }
  for (const auto& t : its)
    for (const auto& op : t.ops) {
      CHECK(op.time_us >= 0);
      CHECK(op.gap_us >= 0);
    }
  // Steady steps (a predecessor and a successor): median Σ(time+gap) within 5% of the median ProfilerStep span.
  // Medians, because a GPU job's host spans jitter while the CPU runs ahead of the GPU queue (ns_resolution_trace).
  std::vector<double> sums, spans;
  for (std::size_t i = 1; i + 1 < its.size(); ++i)
    if (its[i].has_measurement()) sums.push_back(its[i].sum_us()), spans.push_back(its[i].measured_us);
  if (!sums.empty()) {
    const double dev = std::abs(median(sums) - median(spans)) / median(spans);
    WARN(fs::path(path).filename().string() << ": " << sums.size() << " steady steps, median sum "
                                            << median(sums) << " us vs span " << median(spans) << " us ("
                                            << 100 * dev << "%)");
    CHECK(dev < 0.05);
  }
  return its;
}

std::vector<std::string> files_under(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("shared kineto-gpu traces: every file imports; iterations telescope; steady steps match", "[shared]") {
  ETS_REQUIRE_SHARED("kineto-gpu");
  const ets_test::TempDir scratch("ets_kineto_shared");
  const fs::path& tmp = scratch.path;
  int files = 0;
  for (const std::string& f : files_under(ets_test::shared_data("kineto-gpu"))) {
    if (f.size() >= 7 && f.compare(f.size() - 7, 7, ".tar.gz") == 0) {
      const fs::path dst = tmp / fs::path(f).filename();
      fs::create_directories(dst);
      const std::string cmd = "tar -xzf '" + f + "' -C '" + dst.string() + "'";
      REQUIRE(std::system(cmd.c_str()) == 0);
      for (const std::string& m : files_under(dst.string())) check_file(m), ++files;
    } else if (f.size() >= 3 && f.compare(f.size() - 3, 3, ".gz") == 0) {
      check_file(f);
      ++files;
    }
  }
  CHECK(files >= 35);
}

TEST_CASE("ResNet-50 V100 traces: 53 convolution forward ops per iteration, all three phases", "[shared]") {
  ETS_REQUIRE_SHARED("kineto-gpu/kineto-resnet50-v100");
  int seen = 0;
  for (const std::string& f : files_under(ets_test::shared_data("kineto-gpu/kineto-resnet50-v100"))) {
    if (f.find(".json.gz") == std::string::npos) continue;
    INFO(f);
    const auto its = Tracer::load(f);
    REQUIRE(its.size() == 6);  // ProfilerStep#5..10
    for (const auto& t : its) {
      int conv_fwd = 0, conv_bwd = 0;
      int phases[3] = {0, 0, 0};
      for (const auto& op : t.ops) {
        ++phases[static_cast<int>(op.phase)];
        if (op.name == "conv2d" && op.phase == Phase::Forward) {
          ++conv_fwd;
          CHECK(op.hyper.has(Hyper::KernelH));
          CHECK(op.flops > 0);
        }
        if (op.name == "conv2d" && op.phase == Phase::Backward) ++conv_bwd;
      }
      CHECK(conv_fwd == 53);
      CHECK(conv_bwd == 53);
      CHECK(phases[0] > 0);
      CHECK(phases[1] > 0);
      CHECK(phases[2] > 0);
    }
    ++seen;
  }
  CHECK(seen == 4);
}

TEST_CASE("HTA trace_diff traces: torch.compile's CUDA graph and apex FusedAdam's kernels are ops of their own",
          "[shared]") {
  ETS_REQUIRE_SHARED("kineto-gpu/hta/trace_diff__test__test.json.gz");
  ETS_REQUIRE_SHARED("kineto-gpu/hta/trace_diff__control__control.json.gz");
  // Launched from CompiledFunction and Optimizer.step#FusedAdam.step, with no aten:: op around the launch, they fell
  // to the op windows holding them: the graph's to aten::item / aten::fill_, FusedAdam's to GatherBackward0.
  for (const char* name : {"trace_diff__test__test.json.gz", "trace_diff__control__control.json.gz"}) {
    INFO(name);
    const bool compiled = std::string(name).find("test__test") != std::string::npos;  // control: no torch.compile
    const auto its = Tracer::load(ets_test::shared_data(std::string("kineto-gpu/hta/") + name));
    REQUIRE(its.size() == 6);
    for (const auto& t : its) {
      int fused_adam = 0, compiled_fn = 0;
      double update_us = 0;
      for (const auto& op : t.ops) {
        if (op.phase == Phase::Update) update_us += op.time_us;
        if (op.raw_name == "Optimizer.step#FusedAdam.step") {
          ++fused_adam;
          CHECK(op.name == "fused_adam.step");
          CHECK(op.phase == Phase::Update);
          CHECK(op.kernels == 8);
        } else if (op.raw_name == "CompiledFunction") {
          ++compiled_fn;
          CHECK(op.name == "compiled_function");
          CHECK(op.phase == Phase::Forward);
          CHECK(op.kernels == 339);  // the graph's replay
        } else if (op.raw_name == "aten::item" || op.raw_name == "aten::fill_") {
          CHECK(op.kernels <= 2);  // they held up to 298 of the graph's kernels
        }
      }
      CHECK(fused_adam == 1);
      CHECK(compiled_fn == (compiled ? 1 : 0));
      CHECK(update_us > 1000);  // about 2 ms (test) and 1.3 ms (control) a step; there was no update op
    }
  }
}

TEST_CASE("HTA MI250 minitoy trace: the step the profiler stopped in is named, not dropped in silence", "[shared]") {
  ETS_REQUIRE_SHARED("kineto-gpu/hta/amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz");
  // ProfilerStep#2 lasts 49 us and holds no operator: the profiler stopped in it. Step 1 is the one iteration.
  const std::string path = ets_test::shared_data("kineto-gpu/hta/amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz");
  for (const bool keep : {false, true}) {
    INFO("keep_incomplete " << keep);
    Tracer::LoadOptions opt;
    opt.keep_incomplete = keep;
    ets_test::CapturedWarnings log;
    const auto its = Tracer::load(path, opt);
    REQUIRE(its.size() == 1);
    CHECK(its[0].iteration == 1);
    CHECK(its[0].ops.size() == 12);
    // from its first kernel (ts ...603454.206) to its own step's end (...603187.439 + 9288.291), as a last
    // iteration does: its last kernel ended 0.11 ms before that
    CHECK(its[0].measured_us == Approx(9288.291).margin(1e-3));
    CHECK(its[0].sum_us() == Approx(603187.439 + 9288.291 - 603454.206).margin(1e-3));
    REQUIRE(log.lines.size() == 1);
    CHECK(log.lines[0].rfind("[ets.import.11]", 0) == 0);
    CHECK(log.lines[0].find("1 step holds no operator with device work and is not returned") != std::string::npos);
    CHECK(log.lines[0].find("step 2") != std::string::npos);
  }
}
