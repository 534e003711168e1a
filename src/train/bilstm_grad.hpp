// Forward pass with cached activations and backpropagation through time for the BiLSTM + linear head,
// batched over windows (one GEMM per layer for input projections, one per time step for the recurrence).
#pragma once

#include <cstdint>
#include <vector>

#include <Eigen/Core>

#include "ets/window_batch.hpp"
#include "train/param_layout.hpp"

namespace ets::train {

#include "train/bilstm_grad_decl.inc"

extern template class BiLstmGrad<float>;
extern template class BiLstmGrad<double>;

}  // namespace ets::train
