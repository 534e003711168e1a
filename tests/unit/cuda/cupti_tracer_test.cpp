// ets-test-labels: cuda
// CUPTI live tracer on a real GPU: NVTX-annotated cuDNN forward passes become iterations of traced ops.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "lstm_reference.hpp"
#include "ets/cuda/cudnn_backend.hpp"
#include "ets/cuda/cupti_tracer.hpp"
#include "ets/cuda/device.hpp"
#include "ets/cuda/nvtx_range.hpp"
#include "ets/error.hpp"

namespace {
void require_device() {
  std::string why;
  if (ets::cuda::device_available(&why)) return;
  if (const char* require = std::getenv("ETS_REQUIRE_GPU"); require && *require == '1')
    FAIL("ETS_REQUIRE_GPU=1 but no usable CUDA device: " << why);
  WARN("skipping: " << why);
  std::exit(77);
}
}  // namespace

TEST_CASE("the tracer turns NVTX-marked GPU work into iterations whose Σ(time+gap) telescopes", "[cuda]") {
  require_device();
  ets::cuda::CuptiTracerOptions opt;
  opt.all_ranges_are_ops = true;
  opt.meta.model = "cudnn-lstm";
  ets::cuda::CuptiTracer tracer(opt);
  tracer.start();  // before any NVTX call, so NVTX loads CUPTI as its tool
  CHECK(tracer.running());

  ets::LstmConfig c;
  c.input_size = 16;
  c.hidden = 32;
  c.layers = 2;
  const auto w = ets_test::random_lstm_weights(c, 1);
  ets::cuda::CudnnBackend backend(w);
  const int n = 32, width = 12;
  std::vector<float> x(static_cast<std::size_t>(n) * width * 16, 0.5f), y(static_cast<std::size_t>(n) * width * 2);
  const int steps = 4;
  for (int s = 0; s < steps; ++s) {
    ets::cuda::NvtxRange step("ProfilerStep#" + std::to_string(s));
    {
      ets::cuda::NvtxRange op("lstm_a");
      backend.forward(x.data(), n, width, y.data());
    }
    {
      ets::cuda::NvtxRange op("lstm_b");
      backend.forward(x.data(), n, width, y.data());
    }
  }
  const auto traces = tracer.stop();
  CHECK_FALSE(tracer.running());
  INFO("device " << tracer.stats().device << " api " << tracer.stats().api << " markers "
                 << tracer.stats().markers);
  CHECK(tracer.stats().markers >= 2u * 3u * steps);
  CHECK(tracer.stats().device > 0);
  CHECK(tracer.stats().dropped == 0);
  REQUIRE(traces.size() == static_cast<std::size_t>(steps));
  for (std::size_t i = 0; i < traces.size(); ++i) {
    const auto& t = traces[i];
    CHECK(t.iteration == static_cast<std::int64_t>(i));
    CHECK(t.meta.source_format == "cupti");
    REQUIRE(t.ops.size() == 2);
    CHECK(t.ops[0].raw_name == "lstm_a");
    CHECK(t.ops[1].raw_name == "lstm_b");
    for (const auto& op : t.ops) {
      CHECK(op.kernels > 0);  // H2D copy, cuDNN kernels, the head GEMM, D2H copy
      CHECK(op.time_us > 0);
      CHECK(op.gap_us >= 0);
    }
    if (i + 1 < traces.size()) CHECK(t.sum_us() == Approx(traces[i + 1].ops[0].start_us - t.ops[0].start_us));
  }
  // A second capture in the same process works and sees only its own work.
  tracer.start();
  {
    ets::cuda::NvtxRange step("ProfilerStep#9");
    ets::cuda::NvtxRange op("lstm_a");
    backend.forward(x.data(), n, width, y.data());
  }
  const auto again = tracer.stop();
  REQUIRE(again.size() == 1);
  CHECK(again[0].iteration == 9);
}

TEST_CASE("only one tracer captures at a time, and misuse has documented ids", "[cuda]") {
  require_device();
  ets::cuda::CuptiTracer a, b;
  CHECK_THROWS_WITH(a.stop(), Catch::Contains("ets.cuda.13"));
  a.start();
  CHECK_THROWS_WITH(a.start(), Catch::Contains("ets.cuda.13"));
  CHECK_THROWS_WITH(b.start(), Catch::Contains("ets.cuda.10"));
  a.stop();
  b.start();  // free again
  b.stop();
  ets::cuda::CuptiTracerOptions bad;
  bad.buffer_bytes = 100;
  CHECK_THROWS_WITH(ets::cuda::CuptiTracer(bad), Catch::Contains("ets.cuda.13"));
}
