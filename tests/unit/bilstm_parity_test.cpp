// CPU backend vs PyTorch: models exported by tools/export_etsm.py (random init and briefly trained; LSTM and GRU) must
// give torch's own float32 outputs on the committed parity windows within 1e-5.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ets/bilstm_predictor.hpp"
#include "ets/model_file.hpp"
#include "test_support.hpp"

namespace {

struct Parity {
  int windows = 0, width = 0, features = 0, outputs = 0;
  std::vector<float> x, y;
};

// Format written by tools/export_etsm.py write_parity(): "ETSPAR01", u32 N, W, F, O, then x and y as float32 LE.
Parity read_parity(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  REQUIRE(f.good());
  std::vector<char> b((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  REQUIRE(b.size() >= 24);
  REQUIRE(std::string(b.data(), 8) == "ETSPAR01");
  std::uint32_t h[4];
  std::memcpy(h, b.data() + 8, 16);
  Parity p{static_cast<int>(h[0]), static_cast<int>(h[1]), static_cast<int>(h[2]), static_cast<int>(h[3]), {}, {}};
  const std::size_t nx = std::size_t(h[0]) * h[1] * h[2], ny = std::size_t(h[0]) * h[1] * h[3];
  REQUIRE(b.size() == 24 + 4 * (nx + ny));
  p.x.resize(nx);
  p.y.resize(ny);
  std::memcpy(p.x.data(), b.data() + 24, 4 * nx);
  std::memcpy(p.y.data(), b.data() + 24 + 4 * nx, 4 * ny);
  return p;
}

void check_parity(const std::string& model, const std::string& parity) {
  const ets::ModelFile m = ets::load_model(ets_test::fixture(model));
  const Parity p = read_parity(ets_test::fixture(parity));
  REQUIRE(p.features == m.weights.config.input_size);
  REQUIRE(p.outputs == m.weights.config.outputs);
  ets::BiLstmPredictor pred(m.weights);
  ets::WindowBatch batch;
  batch.windows = p.windows;
  batch.width = p.width;
  batch.features = p.features;
  batch.x = p.x;
  const std::vector<float> y = pred.predict(batch);
  REQUIRE(y.size() == p.y.size());
  double worst = 0, scale = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    worst = std::max(worst, double(std::abs(y[i] - p.y[i])));
    scale = std::max(scale, double(std::abs(p.y[i])));
  }
  INFO(model << ": max |ETS - torch| = " << worst << " (outputs up to " << scale << ")");
  CHECK(worst <= 1e-5);
  CHECK(scale > 1e-3);  // the fixture really exercises the network (not all-zero outputs)
}

}  // namespace

TEST_CASE("CPU output equals PyTorch nn.LSTM output: random-init 4-layer BiLSTM F=16 H=16") {
  check_parity("lstm_f16_h16.etsm", "lstm_f16_h16.parity");
}

TEST_CASE("CPU output equals PyTorch nn.LSTM output: trained 2-layer BiLSTM F=5 H=7 (state_dict export)") {
  check_parity("lstm_f5_h7_trained.etsm", "lstm_f5_h7_trained.parity");
}

TEST_CASE("CPU output equals PyTorch nn.GRU output: trained 2-layer BiGRU F=5 H=7 (state_dict export)") {
  const ets::ModelFile m = ets::load_model(ets_test::fixture("gru_f5_h7_trained.etsm"));
  CHECK(m.weights.config.cell == ets::RnnCell::gru);
  check_parity("gru_f5_h7_trained.etsm", "gru_f5_h7_trained.parity");
}
