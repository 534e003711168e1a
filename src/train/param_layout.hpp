// Flat parameter vector <-> LstmWeights (LSTM or GRU): the trainer keeps all tensors in one contiguous buffer so that
// Adam, clipping and gradient summation are single vector operations; the order is PyTorch's state_dict order.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "ets/lstm_weights.hpp"

namespace ets::train {

/// Offsets of one direction of one layer inside the flat vector.
struct CellOffsets {
  std::size_t w_ih = 0, w_hh = 0, b_ih = 0, b_hh = 0;
  int in = 0;  ///< input width of the layer
};

/// Where every tensor of an LstmConfig lives in the flat vector (state_dict order:
/// weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0, ..._reverse, ..., then the head weight and bias).
struct ParamLayout {
  LstmConfig config;
  std::vector<CellOffsets> cells;  ///< [layer * directions + direction]
  std::size_t head_w = 0, head_b = 0;
  std::size_t size = 0;

  explicit ParamLayout(const LstmConfig& c);
  const CellOffsets& cell(int layer, int direction) const {
    return cells[static_cast<std::size_t>(layer * config.directions() + direction)];
  }
  /// PyTorch-style names and (offset, count) of every tensor, in layout order; the head is "head.weight"/"head.bias".
  struct Tensor {
    std::string name;
    std::size_t offset, count;
  };
  std::vector<Tensor> tensors() const;
};

/// Checks shapes and copies weights into a flat vector (throws ets.train.1 on a shape mismatch).
std::vector<float> flatten(const LstmWeights& w, const ParamLayout& layout);
/// Copies a flat vector back into LstmWeights with the layout's config.
LstmWeights unflatten(const float* flat, const ParamLayout& layout);

}  // namespace ets::train
