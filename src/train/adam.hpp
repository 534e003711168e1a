// Adam / AdamW over a flat float parameter vector with PyTorch's exact update order, plus global-norm clipping.
// Matching torch.optim lets a fixture produced by PyTorch check one step bit-for-bit up to float rounding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ets::train {

struct AdamOptions {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  /// 0 disables. decoupled = true → AdamW (param *= 1 − lr·wd before the Adam step, torch.optim.AdamW);
  /// decoupled = false → L2 (grad += wd·param, torch.optim.Adam's weight_decay).
  double weight_decay = 0.0;
  bool decoupled = true;
};

class Adam {
 public:
  Adam(std::size_t size, AdamOptions options);

  /// One update with learning rate lr: step count t += 1, then
  ///   m = β1 m + (1−β1) g;  v = β2 v + (1−β2) g²;  p −= (lr / (1−β1ᵗ)) · m / (√v / √(1−β2ᵗ) + ε)
  /// (ε added after the bias-corrected square root, as torch.optim.Adam does). grad is not modified.
  void step(float* params, const float* grad, double lr);

  std::int64_t steps() const noexcept { return t_; }
  std::vector<float>& m() noexcept { return m_; }
  std::vector<float>& v() noexcept { return v_; }
  void set_steps(std::int64_t t) noexcept { t_ = t; }
  const AdamOptions& options() const noexcept { return opt_; }

 private:
  AdamOptions opt_;
  std::vector<float> m_, v_;
  std::int64_t t_ = 0;
};

/// Scales grad in place so its global L2 norm is at most max_norm, exactly as torch.nn.utils.clip_grad_norm_
/// (coefficient max_norm / (norm + 1e-6), applied only when below 1). Returns the norm before clipping.
/// max_norm <= 0 only measures.
double clip_global_norm(float* grad, std::size_t n, double max_norm);

}  // namespace ets::train
