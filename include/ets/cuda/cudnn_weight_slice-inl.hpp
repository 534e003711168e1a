// Definitions for cudnn_weight_slice.hpp; included by the header in header-only mode, compiled once in ets::ets.
// Pure index arithmetic: no CUDA, so CPU-only builds and tests use it too.
#pragma once

#include "ets/cuda/cudnn_weight_slice.hpp"
#include "ets/error.hpp"

namespace ets::cuda {

ETS_INLINE CudnnWeightSlice cudnn_weight_slice(const LstmConfig& c, int pseudo_layer, int lin_layer_id, bool bias) {
  ETS_CHECK(c.layers > 0 && c.hidden > 0 && c.input_size > 0, Errc::invalid_argument, "ets.cuda.5",
            "LSTM config has non-positive sizes (layers {}, hidden {}, input {})", c.layers, c.hidden,
            c.input_size);
  ETS_CHECK(pseudo_layer >= 0 && pseudo_layer < cudnn_pseudo_layers(c), Errc::invalid_argument, "ets.cuda.5",
            "cuDNN pseudo-layer {} outside 0..{}", pseudo_layer, cudnn_pseudo_layers(c) - 1);
  const int gates = c.gates();
  ETS_CHECK(lin_layer_id >= 0 && lin_layer_id < 2 * gates, Errc::invalid_argument, "ets.cuda.5",
            "cuDNN {} linLayerID {} outside 0..{}", c.cell == RnnCell::gru ? "GRU" : "LSTM", lin_layer_id,
            2 * gates - 1);
  CudnnWeightSlice s;
  s.layer = pseudo_layer / c.directions();
  s.direction = pseudo_layer % c.directions();
  const bool recurrent = lin_layer_id >= gates;
  s.gate = lin_layer_id % gates;
  s.rows = c.hidden;
  if (bias) {
    s.tensor = recurrent ? CudnnWeightSlice::Tensor::BiasHh : CudnnWeightSlice::Tensor::BiasIh;
    s.cols = 1;
  } else {
    s.tensor = recurrent ? CudnnWeightSlice::Tensor::WeightHh : CudnnWeightSlice::Tensor::WeightIh;
    s.cols = recurrent ? c.hidden : c.layer_input(s.layer);
  }
  s.offset = static_cast<std::size_t>(s.gate) * s.size();
  return s;
}

ETS_INLINE const float* cudnn_slice_data(const LstmWeights& w, const CudnnWeightSlice& s) {
  const int dirs = w.config.directions();
  const std::size_t index =
      static_cast<std::size_t>(s.layer) * static_cast<std::size_t>(dirs) + static_cast<std::size_t>(s.direction);
  ETS_CHECK(s.direction >= 0 && s.direction < dirs && index < w.cells.size(), Errc::shape, "ets.cuda.6",
            "LSTM weights hold {} cells; layer {} direction {} is missing", w.cells.size(), s.layer, s.direction);
  const LstmCellWeights& cell = w.cells[index];
  const std::vector<float>* t = nullptr;
  const char* name = "";
  switch (s.tensor) {
    case CudnnWeightSlice::Tensor::WeightIh: t = &cell.w_ih; name = "weight_ih"; break;
    case CudnnWeightSlice::Tensor::WeightHh: t = &cell.w_hh; name = "weight_hh"; break;
    case CudnnWeightSlice::Tensor::BiasIh: t = &cell.b_ih; name = "bias_ih"; break;
    case CudnnWeightSlice::Tensor::BiasHh: t = &cell.b_hh; name = "bias_hh"; break;
  }
  const std::size_t expected = static_cast<std::size_t>(w.config.gates()) * s.size();
  ETS_CHECK(t->size() == expected, Errc::shape, "ets.cuda.6",
            "{}_l{}{} has {} floats, the config needs {} ({} gates × {} × {})", name, s.layer,
            s.direction ? "_reverse" : "", t->size(), expected, w.config.gates(), s.rows, s.cols);
  return t->data() + s.offset;
}

}  // namespace ets::cuda
