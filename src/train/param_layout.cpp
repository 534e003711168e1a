// Flat parameter layout of the BiLSTM + head used by the trainer, and the copies to and from LstmWeights.
// Copies cost O(parameters) once per epoch at most, far below one training step.
#include "train/param_layout.hpp"

#include <algorithm>

#include "ets/error.hpp"
#include "ets/model_file.hpp"

namespace ets::train {

ParamLayout::ParamLayout(const LstmConfig& c) : config(c) {
  ETS_CHECK(c.input_size > 0 && c.hidden > 0 && c.layers > 0 && c.outputs > 0, Errc::invalid_argument,
            "ets.train.2", "LSTM config must have positive sizes (input {}, hidden {}, layers {}, outputs {})",
            c.input_size, c.hidden, c.layers, c.outputs);
  // A cell cast from a bad integer would train as an LSTM and be refused only when the trained model is checked
  ETS_CHECK(c.cell == RnnCell::lstm || c.cell == RnnCell::gru, Errc::invalid_argument, "ets.train.2",
            "LSTM config names no known cell (cell {}; lstm or gru)", static_cast<int>(c.cell));
  // The model file's limits; they also keep gates × hidden and 2 × hidden (layer_input) far from int overflow.
  ETS_CHECK(c.input_size <= (1 << 16) && c.hidden <= (1 << 16) && c.layers <= 64 && c.outputs <= (1 << 16),
            Errc::invalid_argument, "ets.train.2",
            "LSTM config beyond what a model file holds (input {} / hidden {} / outputs {} ≤ 65536, layers {} ≤ 64)",
            c.input_size, c.hidden, c.outputs, c.layers);
  const std::size_t g = c.gate_rows();
  std::size_t off = 0;
  for (int l = 0; l < c.layers; ++l) {
    for (int d = 0; d < c.directions(); ++d) {
      CellOffsets o;
      o.in = c.layer_input(l);
      o.w_ih = off;
      off += g * static_cast<std::size_t>(o.in);
      o.w_hh = off;
      off += g * static_cast<std::size_t>(c.hidden);
      o.b_ih = off;
      off += g;
      o.b_hh = off;
      off += g;
      cells.push_back(o);
    }
  }
  head_w = off;
  off += static_cast<std::size_t>(c.outputs) * static_cast<std::size_t>(c.hidden * c.directions());
  head_b = off;
  off += static_cast<std::size_t>(c.outputs);
  size = off;
  // A model file holds at most 2 GiB (load_model's limit), so at most 2^29 float parameters: a larger network would
  // train for hours and then fail to save (ets.model.10). Checked before anything is allocated.
  ETS_CHECK(size <= ModelFile::kMaxBytes / sizeof(float), Errc::invalid_argument, "ets.train.2",
            "LSTM config has {} parameters, more than the 2^29 (2 GiB of floats) a model file holds (input {}, hidden "
            "{}, layers {})",
            size, c.input_size, c.hidden, c.layers);
}

std::vector<ParamLayout::Tensor> ParamLayout::tensors() const {
  std::vector<Tensor> out;
  const std::size_t g = config.gate_rows();
  for (int l = 0; l < config.layers; ++l)
    for (int d = 0; d < config.directions(); ++d) {
      const auto& c = cell(l, d);
      const std::string sfx = std::to_string(l) + (d ? "_reverse" : "");
      out.push_back({"weight_ih_l" + sfx, c.w_ih, g * static_cast<std::size_t>(c.in)});
      out.push_back({"weight_hh_l" + sfx, c.w_hh, g * static_cast<std::size_t>(config.hidden)});
      out.push_back({"bias_ih_l" + sfx, c.b_ih, g});
      out.push_back({"bias_hh_l" + sfx, c.b_hh, g});
    }
  out.push_back({"head.weight", head_w, head_b - head_w});
  out.push_back({"head.bias", head_b, size - head_b});
  return out;
}

namespace {
void put(std::vector<float>& flat, std::size_t off, const std::vector<float>& v, std::size_t n, const char* what,
         int l, int d) {
  ETS_CHECK(v.size() == n, Errc::shape, "ets.train.1", "weights tensor {} (layer {}, direction {}) has {} values, expected {}",
            what, l, d, v.size(), n);
  std::copy(v.begin(), v.end(), flat.begin() + static_cast<std::ptrdiff_t>(off));
}
}  // namespace

std::vector<float> flatten(const LstmWeights& w, const ParamLayout& layout) {
  const LstmConfig& c = layout.config;
  ETS_CHECK(w.config == c, Errc::shape, "ets.train.1", "weights config does not match the trainer's config");
  ETS_CHECK(w.cells.size() == layout.cells.size(), Errc::shape, "ets.train.1", "weights have {} cells, expected {}",
            w.cells.size(), layout.cells.size());
  std::vector<float> flat(layout.size);
  const std::size_t g = c.gate_rows();
  for (int l = 0; l < c.layers; ++l)
    for (int d = 0; d < c.directions(); ++d) {
      const auto& o = layout.cell(l, d);
      const auto& cw = w.cell(l, d);
      put(flat, o.w_ih, cw.w_ih, g * static_cast<std::size_t>(o.in), "w_ih", l, d);
      put(flat, o.w_hh, cw.w_hh, g * static_cast<std::size_t>(c.hidden), "w_hh", l, d);
      put(flat, o.b_ih, cw.b_ih, g, "b_ih", l, d);
      put(flat, o.b_hh, cw.b_hh, g, "b_hh", l, d);
    }
  put(flat, layout.head_w, w.head_w, layout.head_b - layout.head_w, "head_w", -1, -1);
  put(flat, layout.head_b, w.head_b, layout.size - layout.head_b, "head_b", -1, -1);
  return flat;
}

LstmWeights unflatten(const float* flat, const ParamLayout& layout) {
  LstmWeights w;
  w.config = layout.config;
  const std::size_t g = layout.config.gate_rows();
  auto take = [&](std::size_t off, std::size_t n) { return std::vector<float>(flat + off, flat + off + n); };
  for (int l = 0; l < layout.config.layers; ++l)
    for (int d = 0; d < layout.config.directions(); ++d) {
      const auto& o = layout.cell(l, d);
      LstmCellWeights cw;
      cw.w_ih = take(o.w_ih, g * static_cast<std::size_t>(o.in));
      cw.w_hh = take(o.w_hh, g * static_cast<std::size_t>(layout.config.hidden));
      cw.b_ih = take(o.b_ih, g);
      cw.b_hh = take(o.b_hh, g);
      w.cells.push_back(std::move(cw));
    }
  w.head_w = take(layout.head_w, layout.head_b - layout.head_w);
  w.head_b = take(layout.head_b, layout.size - layout.head_b);
  return w;
}

}  // namespace ets::train
