// A second translation unit of header_only_test: with the first it includes every public header, so a definition
// that is not inline in a header fails the link (multiple definition), and every header compiles header-only.
#include <catch2/catch.hpp>

#include "ets_all_headers.hpp"

TEST_CASE("header-only: the CPU predictor runs without ets::ets (second translation unit)") {
  // All-zero cells leave h = 0 at every position, so each output is the head's bias: a result known without the math.
  ets::LstmWeights w;
  w.config = ets::LstmConfig{3, 4, 2, 2, true};
  const auto g = w.config.gate_rows();
  for (int i = 0; i < w.config.layers * w.config.directions(); ++i) {
    const auto in = static_cast<std::size_t>(i < w.config.directions() ? w.config.input_size : 2 * w.config.hidden);
    w.cells.push_back({std::vector<float>(g * in), std::vector<float>(g * 4), std::vector<float>(g),
                       std::vector<float>(g)});
  }
  w.head_w.assign(2 * 8, 0.0f);
  w.head_b = {1.5f, -0.5f};
  ets::BiLstmPredictor p(w, ets::Backend::Cpu);
  ets::WindowBatch b;
  b.windows = 2;
  b.width = 5;
  b.features = 3;
  b.x.assign(2 * 5 * 3, 0.25f);
  const std::vector<float> y = p.predict(b);
  REQUIRE(y.size() == 2 * 5 * 2);
  for (std::size_t i = 0; i < y.size(); i += 2) {
    CHECK(y[i] == 1.5f);
    CHECK(y[i + 1] == -0.5f);
  }
  CHECK(p.backend_name() == "cpu-eigen");
}
