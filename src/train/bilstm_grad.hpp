// Forward pass with cached activations and backpropagation through time for the BiLSTM + linear head,
// batched over windows (one GEMM per layer for input projections, one per time step for the recurrence).
#pragma once

#include <cstdint>
#include <vector>

#include <Eigen/Core>

#include "ets/window_batch.hpp"
#include "train/param_layout.hpp"

namespace ets::train {

/// Gradient engine for one shard of a mini-batch. T = float for training, double for the gradient check.
/// Not thread-safe: the trainer owns one engine per worker thread. Buffers are reused across calls.
template <typename T>
class BiLstmGrad {
 public:
  using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;

  explicit BiLstmGrad(const ParamLayout& layout);

  /// Runs the network over windows idx[0..n) of b (all windows when idx is null), caching what backward needs.
  /// Padding positions are fed through the LSTM like PyTorch does for an unpacked padded batch.
  void forward(const T* params, const WindowBatch& b, const std::int32_t* idx, int n);

  /// Predictions of the last forward(): outputs × (width · n), column t·n + j = window j, position t.
  const Mat& predictions() const noexcept { return pred_; }

  /// After forward(): returns Σ over real positions and outputs of |pred − y| and adds
  /// scale · ∂(that sum)/∂params into grad (so scale = 1 / (outputs · real positions of the whole batch)
  /// yields the gradient of the masked MAE). Padding never contributes.
  double backward(const T* params, const WindowBatch& b, const std::int32_t* idx, int n, T scale, T* grad);

  /// Masked absolute-error sum of the last forward() without gradients.
  double loss_sum(const WindowBatch& b, const std::int32_t* idx, int n);

 private:
  struct Layer {
    Mat gates[2];  ///< post-activation i, f, g, o stacked: 4H × (W·n)
    Mat cell[2];   ///< c_t: H × (W·n)
    Mat tcell[2];  ///< tanh(c_t)
    Mat out;       ///< h of both directions stacked: (H·D) × (W·n); the next layer's input
  };
  void load_targets(const WindowBatch& b, const std::int32_t* idx, int n);

  ParamLayout layout_;
  int width_ = 0, n_ = 0;
  Mat x0_;
  std::vector<Layer> layers_;
  Mat pred_, target_, mask_, dpred_, dy_, dx_, da_, dh_, dhn_, dc_, dcn_;
};

extern template class BiLstmGrad<float>;
extern template class BiLstmGrad<double>;

}  // namespace ets::train
