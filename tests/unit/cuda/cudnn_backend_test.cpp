// ets-test-labels: cuda
// cuDNN BiLSTM / BiGRU backend: parity with a naive double-precision reference (≤ 1e-4), shapes, threads, bad input.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "lstm_reference.hpp"
#include "ets/cuda/cudnn_backend.hpp"
#include "ets/cuda/device.hpp"
#include "ets/error.hpp"

namespace {

ets::LstmConfig make_config(int f, int h, int layers, bool bidir) {
  ets::LstmConfig c;
  c.input_size = f;
  c.hidden = h;
  c.layers = layers;
  c.outputs = 2;
  c.bidirectional = bidir;
  return c;
}

std::vector<float> random_input(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = g(rng);
  return v;
}

// A NaN or infinite output (an element never written, a NaN pre-fill left in place) counts as an infinite error:
// std::max would skip a NaN.
double max_abs_diff(const std::vector<float>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i])) return std::numeric_limits<double>::infinity();
    m = std::max(m, std::abs(static_cast<double>(a[i]) - b[i]));
  }
  return m;
}

// Compute capability from device_description() ("NVIDIA H200 (sm_90, 139.8 GiB)"); 0 if absent.
int compute_capability() {
  const std::string d = ets::cuda::device_description();
  const auto at = d.find("(sm_");
  return at == std::string::npos ? 0 : std::atoi(d.c_str() + at + 4);
}

// Without a device every case is skipped (exit 77) after checking that construction fails cleanly.
void require_device() {
  std::string why;
  if (ets::cuda::device_available(&why)) return;
  const auto w = ets_test::random_lstm_weights(make_config(4, 3, 1, true), 1);
  try {
    ets::cuda::CudnnBackend b(w);
    FAIL("constructed a cuDNN backend without a device");
  } catch (const ets::Error& e) {
    // checked here, before the skip exit that would hide a CHECK: a wrong id fails the run
    if (e.id() != "ets.cuda.1") FAIL("no device, but the backend threw " << e.what());
  }
  if (const char* require = std::getenv("ETS_REQUIRE_GPU"); require && *require == '1')
    FAIL("ETS_REQUIRE_GPU=1 but no usable CUDA device: " << why);
  WARN("skipping: " << why);
  std::exit(77);
}

}  // namespace

TEST_CASE("cuDNN forward matches the reference on a real-shaped batch", "[cuda]") {
  require_device();
  // ETS shape: 4 layers, bidirectional, width 12; F = H as the paper's default, plus a F != H case.
  for (auto [f, h] : {std::pair{32, 32}, std::pair{19, 64}}) {
    const auto cfg = make_config(f, h, 4, true);
    const auto w = ets_test::random_lstm_weights(cfg, 7u + static_cast<unsigned>(f));
    ets::cuda::CudnnBackend backend(w);
    CHECK(backend.name() == "cuda-cudnn");
    CHECK(backend.config() == cfg);
    for (int windows : {1, 37, 256}) {
      const int width = 12;
      const auto x = random_input(static_cast<std::size_t>(windows) * width * f, 99u + windows);
      std::vector<float> y(static_cast<std::size_t>(windows) * width * 2, std::nanf(""));
      backend.forward(x.data(), windows, width, y.data());
      const double err = max_abs_diff(y, ets_test::reference_forward(w, x, windows, width));
      INFO("F=" << f << " H=" << h << " N=" << windows << " max abs err " << err);
      CHECK(err <= 1e-4);
    }
  }
}

TEST_CASE("cuDNN forward matches the reference whichever RNN algorithm cuDNN grants", "[cuda]") {
  require_device();
  // The persistent kernels are tried first and the standard algorithm takes over where cuDNN declines them (per
  // construction or per shape): the shipped model's F = H = 102, a wide hidden layer, a large batch.
  struct Case {
    int f, h, layers;
    std::vector<int> windows;
  };
  // 5000 windows also cross the backend's 4,096-window slices.
  for (const Case& c : {Case{102, 102, 4, {1, 300}}, Case{64, 512, 2, {3}}, Case{8, 16, 4, {5000, 2}}}) {
    const auto w = ets_test::random_lstm_weights(make_config(c.f, c.h, c.layers, true), 21u + c.h);
    ets::cuda::CudnnBackend backend(w);
    const std::string d = backend.description();
    INFO(d);
    const std::string tail = "standard RNN";  // the last resort, always there and listed last
    CHECK((d.size() > tail.size() && d.compare(d.size() - tail.size(), tail.size(), tail) == 0));
    // cuDNN 9.19 on an H200 grants its persistent kernels for these small-hidden LSTMs: the fast path is really
    // taken where it exists (Volta and newer), not silently lost to the fallback.
    if (c.h <= 128 && compute_capability() >= 70) CHECK(d.find("persistent + standard") != std::string::npos);
    for (int windows : c.windows) {
      const int width = 12;
      const auto x = random_input(static_cast<std::size_t>(windows) * width * c.f, 5u + windows);
      std::vector<float> y(static_cast<std::size_t>(windows) * width * 2, std::nanf(""));
      backend.forward(x.data(), windows, width, y.data());
      const double err = max_abs_diff(y, ets_test::reference_forward(w, x, windows, width));
      INFO("F=" << c.f << " H=" << c.h << " N=" << windows << " max abs err " << err);
      CHECK(err <= 1e-4);
    }
  }
}

TEST_CASE("cuDNN forward handles unidirectional nets, odd widths and shape changes", "[cuda]") {
  require_device();
  const auto w = ets_test::random_lstm_weights(make_config(5, 8, 2, false), 3);
  ets::cuda::CudnnBackend backend(w);
  // 60 windows of width 1,000 cross the backend's slices of 49,152 positions (49 windows, then 11)
  for (auto [n, width] : {std::pair{3, 7}, std::pair{1, 1}, std::pair{9, 12}, std::pair{3, 7}, std::pair{60, 1000}}) {
    const auto x = random_input(static_cast<std::size_t>(n) * width * 5, 5u + n);
    std::vector<float> y(static_cast<std::size_t>(n) * width * 2);
    backend.forward(x.data(), n, width, y.data());
    CHECK(max_abs_diff(y, ets_test::reference_forward(w, x, n, width)) <= 1e-4);
  }
}

TEST_CASE("cuDNN GRU forward (CUDNN_GRU) matches the nn.GRU reference", "[cuda]") {
  require_device();
  for (bool bidir : {true, false}) {
    auto cfg = make_config(19, 24, 3, bidir);
    cfg.cell = ets::RnnCell::gru;
    const auto w = ets_test::random_lstm_weights(cfg, 13u);
    ets::cuda::CudnnBackend backend(w);
    CHECK(backend.config() == cfg);
    for (auto [n, width] : {std::pair{37, 12}, std::pair{1, 1}, std::pair{5, 7}}) {
      const auto x = random_input(static_cast<std::size_t>(n) * width * 19, 17u + n);
      std::vector<float> y(static_cast<std::size_t>(n) * width * 2, std::nanf(""));
      backend.forward(x.data(), n, width, y.data());
      const double err = max_abs_diff(y, ets_test::reference_forward(w, x, n, width));
      INFO("GRU bidir=" << bidir << " N=" << n << " W=" << width << " max abs err " << err);
      CHECK(err <= 1e-4);
    }
  }
}

TEST_CASE("cuDNN forward is safe and deterministic from many threads", "[cuda]") {
  require_device();
  const auto w = ets_test::random_lstm_weights(make_config(16, 32, 4, true), 11);
  const ets::cuda::CudnnBackend backend(w);
  const int n = 64, width = 12;
  const auto x = random_input(static_cast<std::size_t>(n) * width * 16, 12);
  std::vector<float> expected(static_cast<std::size_t>(n) * width * 2);
  backend.forward(x.data(), n, width, expected.data());
  std::vector<std::vector<float>> got(8, std::vector<float>(expected.size()));
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 5; ++rep) backend.forward(x.data(), n, width, got[t].data());
    });
  for (auto& th : threads) th.join();
  for (const auto& g : got) CHECK(g == expected);
}

TEST_CASE("cuDNN backend rejects bad weights and arguments with documented ids", "[cuda]") {
  require_device();
  auto w = ets_test::random_lstm_weights(make_config(4, 6, 2, true), 2);
  {
    ets::cuda::CudnnBackend backend(w);
    std::vector<float> x(12 * 4), y(12 * 2);
    backend.forward(x.data(), 0, 12, y.data());  // no windows: nothing to do, not an error
    CHECK_THROWS_WITH(backend.forward(x.data(), 1, 0, y.data()), Catch::Contains("ets.cuda.8"));
    CHECK_THROWS_WITH(backend.forward(nullptr, 1, 12, y.data()), Catch::Contains("ets.cuda.8"));
  }
  auto bad = w;
  bad.cells[3].w_hh.pop_back();
  CHECK_THROWS_WITH(ets::cuda::CudnnBackend(bad), Catch::Contains("ets.cuda.6"));
  bad = w;
  bad.cells.pop_back();
  CHECK_THROWS_WITH(ets::cuda::CudnnBackend(bad), Catch::Contains("ets.cuda.6"));
  bad = w;
  bad.head_b.push_back(0.0f);
  CHECK_THROWS_WITH(ets::cuda::CudnnBackend(bad), Catch::Contains("ets.cuda.6"));
  CHECK_THROWS_WITH(ets::cuda::CudnnBackend(w, ets::cuda::CudnnOptions{1 << 20}), Catch::Contains("ets.cuda.8"));
}
