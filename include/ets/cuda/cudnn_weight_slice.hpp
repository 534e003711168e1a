// Where each block of cuDNN's LSTM / GRU weight space comes from in PyTorch-layout LstmWeights.
// Kept a pure, CUDA-free function so the packing index math is tested on machines without a GPU.
#pragma once

#include <cstddef>

#include "ets/common.hpp"
#include "ets/lstm_weights.hpp"

namespace ets::cuda {

/// One matrix or bias block of cuDNN's weight space, expressed as a slice of a PyTorch tensor.
/// cuDNN numbers blocks by (pseudo-layer, linLayerID): pseudo-layer = layer * directions + direction;
/// with G gates (LSTM 4: i, f, g, o; GRU 3: r, z, n), linLayerID 0..G−1 are the input-side gates
/// (weight_ih / bias_ih), G..2G−1 the recurrent ones (weight_hh / bias_hh). Gate order equals PyTorch's
/// for both cells, and each gate's H × in block is row-major in both layouts, so a block is one
/// contiguous run of floats.
struct CudnnWeightSlice {
  enum class Tensor { WeightIh, WeightHh, BiasIh, BiasHh };

  int layer = 0;
  int direction = 0;
  Tensor tensor = Tensor::WeightIh;
  int gate = 0;            ///< LSTM 0..3 = i, f, g, o; GRU 0..2 = r, z, n
  std::size_t offset = 0;  ///< first float of the block inside the PyTorch tensor
  int rows = 0;            ///< H
  int cols = 0;            ///< layer input width, H (recurrent) or 1 (bias)

  std::size_t size() const noexcept { return static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols); }
};

/// Number of cuDNN pseudo-layers (layers × directions).
inline int cudnn_pseudo_layers(const LstmConfig& c) noexcept { return c.layers * c.directions(); }

/// The PyTorch slice behind cuDNN block (pseudo_layer, lin_layer_id); `bias` selects the bias vector
/// instead of the matrix. Throws ets.cuda.5 for indices outside the network.
ETS_INLINE CudnnWeightSlice cudnn_weight_slice(const LstmConfig& c, int pseudo_layer, int lin_layer_id, bool bias);

/// First float of `s` inside `w`; throws ets.cuda.6 when the cell is missing or its tensor's size differs from the
/// config's (weights that do not match their config).
ETS_INLINE const float* cudnn_slice_data(const LstmWeights& w, const CudnnWeightSlice& s);

}  // namespace ets::cuda

#ifndef ETS_COMPILED_LIB
#include "ets/cuda/cudnn_weight_slice-inl.hpp"
#endif
