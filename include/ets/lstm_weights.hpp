// Weights of the bidirectional recurrent net + linear head in PyTorch nn.LSTM / nn.GRU layout, the one format every
// backend packs from. Row-major float32; gate order i, f, g, o (LSTM) or r, z, n (GRU); names follow PyTorch's
// state_dict (weight_ih_l0_reverse, ...).
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace ets {

/// The recurrent cell. LSTM is the method's cell; GRU (PyTorch nn.GRU semantics: n = tanh(W_in x + b_in +
/// r ⊙ (W_hn h + b_hn))) has three gates instead of four and no cell state, so it costs ~3/4 of the work.
enum class RnnCell { lstm, gru };

/// Shape of the network. (The name predates the GRU cell: it describes either.)
struct LstmConfig {
  int input_size = 0;   ///< F, features per op
  int hidden = 0;       ///< H, hidden units per direction
  int layers = 4;       ///< L
  int outputs = 2;      ///< per-position outputs: (time, gap) in normalised units
  bool bidirectional = true;
  RnnCell cell = RnnCell::lstm;

  int directions() const noexcept { return bidirectional ? 2 : 1; }
  /// Input width of layer l: F for l = 0, H * directions otherwise.
  int layer_input(int l) const noexcept { return l == 0 ? input_size : hidden * directions(); }
  /// Gates per cell: 4 (LSTM) or 3 (GRU); every weight_ih / weight_hh / bias has gates() × H rows.
  int gates() const noexcept { return cell == RnnCell::gru ? 3 : 4; }
  /// gates() × hidden: the rows of every weight_ih / weight_hh / bias of a cell.
  std::size_t gate_rows() const noexcept { return static_cast<std::size_t>(gates()) * static_cast<std::size_t>(hidden); }
  bool operator==(const LstmConfig& o) const noexcept {
    return input_size == o.input_size && hidden == o.hidden && layers == o.layers &&
           outputs == o.outputs && bidirectional == o.bidirectional && cell == o.cell;
  }
  bool operator!=(const LstmConfig& o) const noexcept { return !(*this == o); }
};

/// One direction of one layer. w_ih: G·H × in, w_hh: G·H × H, biases G·H each (PyTorch keeps both); G = gates().
struct LstmCellWeights {
  std::vector<float> w_ih, w_hh, b_ih, b_hh;
};

/// All weights. cells[l * directions + d]; head maps H * directions → outputs at every position.
struct LstmWeights {
  LstmConfig config;
  std::vector<LstmCellWeights> cells;
  std::vector<float> head_w;  ///< outputs × (H * directions)
  std::vector<float> head_b;  ///< outputs

  /// std::out_of_range unless 0 <= layer < config.layers and 0 <= direction < config.directions() (each on its
  /// own: direction 2 of layer 0 is not layer 1's forward cell), or the cell is missing from `cells`.
  const LstmCellWeights& cell(int layer, int direction) const {
    if (layer < 0 || layer >= config.layers || direction < 0 || direction >= config.directions())
      throw std::out_of_range("LstmWeights::cell: layer or direction outside the network");
    return cells.at(static_cast<std::size_t>(layer) * static_cast<std::size_t>(config.directions()) +
                    static_cast<std::size_t>(direction));
  }
};

}  // namespace ets
