// Weights of the BiLSTM + linear head in PyTorch nn.LSTM layout, the one format every backend packs from.
// Row-major float32; gate order i, f, g, o; names follow PyTorch's state_dict (weight_ih_l0_reverse, ...).
#pragma once

#include <string>
#include <vector>

namespace ets {

/// Shape of the network.
struct LstmConfig {
  int input_size = 0;   ///< F, features per op
  int hidden = 0;       ///< H, hidden units per direction
  int layers = 4;       ///< L
  int outputs = 2;      ///< per-position outputs: (time, gap) in normalised units
  bool bidirectional = true;

  int directions() const noexcept { return bidirectional ? 2 : 1; }
  /// Input width of layer l: F for l = 0, H * directions otherwise.
  int layer_input(int l) const noexcept { return l == 0 ? input_size : hidden * directions(); }
  bool operator==(const LstmConfig& o) const noexcept {
    return input_size == o.input_size && hidden == o.hidden && layers == o.layers &&
           outputs == o.outputs && bidirectional == o.bidirectional;
  }
};

/// One direction of one layer. w_ih: 4H × in, w_hh: 4H × H, biases 4H each (PyTorch keeps both).
struct LstmCellWeights {
  std::vector<float> w_ih, w_hh, b_ih, b_hh;
};

/// All weights. cells[l * directions + d]; head maps H * directions → outputs at every position.
struct LstmWeights {
  LstmConfig config;
  std::vector<LstmCellWeights> cells;
  std::vector<float> head_w;  ///< outputs × (H * directions)
  std::vector<float> head_b;  ///< outputs

  const LstmCellWeights& cell(int layer, int direction) const {
    return cells.at(static_cast<std::size_t>(layer * config.directions() + direction));
  }
};

}  // namespace ets
