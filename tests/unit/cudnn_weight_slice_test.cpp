// ets-test-labels: unit
// cuDNN weight-packing index math (no GPU): every (pseudo-layer, linLayerID) block maps to the right PyTorch slice.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "ets/cuda/cudnn_weight_slice.hpp"
#include "ets/error.hpp"

namespace {

using Slice = ets::cuda::CudnnWeightSlice;

// Each float encodes where it sits: cell (1 digit), tensor (1 digit), flat index in the tensor.
// Decoding a packed block's floats then says exactly which tensor elements were chosen.
float tag(int cell, int tensor, std::size_t index) {
  return static_cast<float>(cell * 1000000 + tensor * 100000 + static_cast<int>(index));
}

ets::LstmWeights tagged(const ets::LstmConfig& c) {
  ets::LstmWeights w;
  w.config = c;
  const std::size_t g = c.gate_rows();
  for (int l = 0; l < c.layers; ++l)
    for (int d = 0; d < c.directions(); ++d) {
      const int cell = l * c.directions() + d;
      ets::LstmCellWeights cw;
      const std::size_t sizes[4] = {g * c.layer_input(l), g * c.hidden, g, g};
      std::vector<float>* t[4] = {&cw.w_ih, &cw.w_hh, &cw.b_ih, &cw.b_hh};
      for (int k = 0; k < 4; ++k)
        for (std::size_t i = 0; i < sizes[k]; ++i) t[k]->push_back(tag(cell, k, i));
      w.cells.push_back(cw);
    }
  w.head_w.assign(static_cast<std::size_t>(c.outputs) * c.hidden * c.directions(), 0.0f);
  w.head_b.assign(c.outputs, 0.0f);
  return w;
}

ets::LstmConfig config(int f, int h, int layers, bool bidir, ets::RnnCell cell = ets::RnnCell::lstm) {
  ets::LstmConfig c;
  c.cell = cell;
  c.input_size = f;
  c.hidden = h;
  c.layers = layers;
  c.bidirectional = bidir;
  return c;
}

}  // namespace

TEST_CASE("cuDNN blocks follow cuDNN's numbering: pseudo-layer = layer*dirs + dir, ids 0-3 input, 4-7 recurrent") {
  const auto c = config(7, 5, 3, true);
  // Written out from cuDNN's documentation rather than computed: (pseudo, lin) → (layer, dir, tensor, gate, cols).
  struct Row { int pseudo, lin; bool bias; int layer, dir; Slice::Tensor tensor; int gate, cols; };
  const Row rows[] = {
      {0, 0, false, 0, 0, Slice::Tensor::WeightIh, 0, 7},   // layer 0 input gate sees F inputs
      {1, 3, false, 0, 1, Slice::Tensor::WeightIh, 3, 7},   // reverse direction, output gate
      {2, 2, false, 1, 0, Slice::Tensor::WeightIh, 2, 10},  // layer 1 input is both directions: 2H
      {3, 4, false, 1, 1, Slice::Tensor::WeightHh, 0, 5},   // recurrent input gate: H × H
      {5, 7, false, 2, 1, Slice::Tensor::WeightHh, 3, 5},
      {4, 1, true, 2, 0, Slice::Tensor::BiasIh, 1, 1},
      {4, 6, true, 2, 0, Slice::Tensor::BiasHh, 2, 1},
  };
  for (const auto& r : rows) {
    const Slice s = ets::cuda::cudnn_weight_slice(c, r.pseudo, r.lin, r.bias);
    INFO("pseudo " << r.pseudo << " lin " << r.lin << " bias " << r.bias);
    CHECK(s.layer == r.layer);
    CHECK(s.direction == r.dir);
    CHECK(s.tensor == r.tensor);
    CHECK(s.gate == r.gate);
    CHECK(s.rows == 5);
    CHECK(s.cols == r.cols);
    CHECK(s.offset == static_cast<std::size_t>(r.gate) * 5 * r.cols);
  }
}

TEST_CASE("the 8 (LSTM) or 6 (GRU) blocks of every pseudo-layer tile each PyTorch tensor exactly once") {
  for (const auto rnn : {ets::RnnCell::lstm, ets::RnnCell::gru}) {
    for (bool bidir : {true, false}) {
      const auto c = config(3, 4, 4, bidir, rnn);
      const auto w = tagged(c);
      for (int p = 0; p < ets::cuda::cudnn_pseudo_layers(c); ++p) {
        const int cell = p;  // cells are stored layer-major, direction-minor, exactly like pseudo-layers
        // seen[tensor][index] counts how often a tensor element was packed.
        std::vector<std::vector<int>> seen(4);
        for (int k = 0; k < 4; ++k) {
          const auto& cw = w.cells[cell];
          const std::vector<float>* t[4] = {&cw.w_ih, &cw.w_hh, &cw.b_ih, &cw.b_hh};
          seen[k].assign(t[k]->size(), 0);
        }
        for (int lin = 0; lin < 2 * c.gates(); ++lin)
          for (bool bias : {false, true}) {
            const Slice s = ets::cuda::cudnn_weight_slice(c, p, lin, bias);
            CHECK(s.gate == lin % c.gates());
            const float* data = ets::cuda::cudnn_slice_data(w, s);
            for (std::size_t i = 0; i < s.size(); ++i) {
              const auto v = static_cast<std::int64_t>(data[i]);
              REQUIRE(v / 1000000 == cell);
              const int tensor = static_cast<int>(v / 100000 % 10);
              REQUIRE(tensor == static_cast<int>(s.tensor));
              ++seen[tensor][static_cast<std::size_t>(v % 100000)];
            }
          }
        for (const auto& t : seen)
          for (int n : t) REQUIRE(n == 1);
      }
    }
  }
}

TEST_CASE("a gate block is H consecutive rows of the PyTorch matrix (row-major, no transpose)") {
  const auto c = config(3, 2, 1, true);
  const auto w = tagged(c);
  // Forward direction, forget gate (lin 1) of weight_ih_l0: rows 2..3 of the 8 × 3 matrix.
  const Slice s = ets::cuda::cudnn_weight_slice(c, 0, 1, false);
  const float* d = ets::cuda::cudnn_slice_data(w, s);
  CHECK(d[0] == tag(0, 0, 2 * 3 + 0));
  CHECK(d[1] == tag(0, 0, 2 * 3 + 1));
  CHECK(d[3] == tag(0, 0, 3 * 3 + 0));
  CHECK(d[5] == tag(0, 0, 3 * 3 + 2));
  // Reverse direction, recurrent output gate (lin 7) bias: bias_hh_l0_reverse[6..7].
  const Slice b = ets::cuda::cudnn_weight_slice(c, 1, 7, true);
  const float* bd = ets::cuda::cudnn_slice_data(w, b);
  CHECK(bd[0] == tag(1, 3, 6));
  CHECK(bd[1] == tag(1, 3, 7));
}

TEST_CASE("out-of-range blocks and mismatched weights are errors, never reads past the end") {
  const auto c = config(3, 4, 2, true);
  CHECK_THROWS_WITH(ets::cuda::cudnn_weight_slice(c, 4, 0, false), Catch::Contains("ets.cuda.5"));
  CHECK_THROWS_WITH(ets::cuda::cudnn_weight_slice(c, -1, 0, false), Catch::Contains("ets.cuda.5"));
  CHECK_THROWS_WITH(ets::cuda::cudnn_weight_slice(c, 0, 8, false), Catch::Contains("ets.cuda.5"));
  // a GRU has 6 blocks: id 6 is out of range, 3 is its first recurrent one (weight_hh, gate r)
  const auto g = config(3, 4, 2, true, ets::RnnCell::gru);
  CHECK_THROWS_WITH(ets::cuda::cudnn_weight_slice(g, 0, 6, false), Catch::Contains("ets.cuda.5"));
  CHECK(ets::cuda::cudnn_weight_slice(g, 0, 3, false).tensor == Slice::Tensor::WeightHh);
  CHECK(ets::cuda::cudnn_weight_slice(g, 0, 3, false).gate == 0);
  // LSTM-sized tensors under a GRU config are a shape error, not a silent read of the wrong gates
  ets::LstmWeights lstm_sized = tagged(c);
  lstm_sized.config = g;
  CHECK_THROWS_WITH(ets::cuda::cudnn_slice_data(lstm_sized, ets::cuda::cudnn_weight_slice(g, 0, 0, false)),
                    Catch::Contains("ets.cuda.6"));
  CHECK_THROWS_WITH(ets::cuda::cudnn_weight_slice(config(3, 0, 2, true), 0, 0, false), Catch::Contains("ets.cuda.5"));
  auto w = tagged(c);
  w.cells[2].w_ih.resize(5);
  const Slice s = ets::cuda::cudnn_weight_slice(c, 2, 0, false);
  try {
    ets::cuda::cudnn_slice_data(w, s);
    FAIL("no throw");
  } catch (const ets::Error& e) {
    CHECK(e.id() == "ets.cuda.6");
    CHECK(e.code() == ets::Errc::shape);
    CHECK(e.message().find("weight_ih_l1") != std::string::npos);
  }
  w.cells.pop_back();
  CHECK_THROWS_WITH(ets::cuda::cudnn_slice_data(w, ets::cuda::cudnn_weight_slice(c, 3, 4, false)),
                    Catch::Contains("ets.cuda.6"));
}
