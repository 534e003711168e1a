// ets-test-labels: cuda
// ets::cuda::enable() wires cuDNN into BiLstmPredictor: Auto picks it (or falls back, saying why), Cuda insists.
// Runs fully on machines without a GPU too: the fallback path is the one to check there.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "lstm_reference.hpp"
#include "ets/bilstm_predictor.hpp"
#include "ets/cuda/cudnn_backend.hpp"
#include "ets/cuda/device.hpp"
#include "ets/error.hpp"

TEST_CASE("after enable(), Backend::Auto uses cuDNN when a device works and the CPU otherwise") {
  ets::cuda::enable();
  ets::LstmConfig c;
  c.input_size = 8;
  c.hidden = 16;
  c.layers = 4;
  const auto w = ets_test::random_lstm_weights(c, 4);
  const ets::BiLstmPredictor cpu(w, ets::Backend::Cpu);
  const ets::BiLstmPredictor automatic(w, ets::Backend::Auto);
  std::string why;
  if (!ets::cuda::device_available(&why)) {
    CHECK(automatic.backend_name() == cpu.backend_name());
    CHECK(automatic.backend_note().find("ets.cuda.1") != std::string::npos);
    CHECK_THROWS_WITH(ets::BiLstmPredictor(w, ets::Backend::Cuda), Catch::Contains("ets.cuda.1"));
    return;
  }
  CHECK(automatic.backend_name() == "cuda-cudnn");
  CHECK(automatic.backend_note().empty());
  const ets::BiLstmPredictor cuda(w, ets::Backend::Cuda);
  CHECK(cuda.backend_name() == "cuda-cudnn");
  const int n = 50, width = 12;
  std::mt19937 rng(8);
  std::normal_distribution<float> g;
  std::vector<float> x(static_cast<std::size_t>(n) * width * c.input_size);
  for (auto& v : x) v = g(rng);
  std::vector<float> a(static_cast<std::size_t>(n) * width * 2), b(a.size());
  cpu.predict(x.data(), n, width, a.data());
  cuda.predict(x.data(), n, width, b.data());
  double err = 0;
  for (std::size_t i = 0; i < a.size(); ++i) err = std::max(err, static_cast<double>(std::abs(a[i] - b[i])));
  INFO("max abs err cuDNN vs CPU backend " << err);
  CHECK(err <= 1e-4);
}
