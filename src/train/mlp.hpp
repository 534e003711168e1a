// Small fully connected ReLU network with masked-free L1 training, for the per-op baselines. Samples are
// columns (a row-major ops × F feature matrix is already F × ops column-major), so no copy is needed.
#pragma once

#include <cstdint>
#include <vector>

#include <Eigen/Core>

namespace ets::train {

class Mlp {
 public:
  using Mat = Eigen::MatrixXf;

  Mlp() = default;
  /// sizes = {in, hidden..., out}; PyTorch nn.Linear initialisation U(±1/√fan_in) from seed.
  Mlp(std::vector<int> sizes, std::uint64_t seed);

  const std::vector<int>& sizes() const noexcept { return sizes_; }
  std::vector<float>& params() noexcept { return params_; }
  const std::vector<float>& params() const noexcept { return params_; }
  int inputs() const noexcept { return sizes_.front(); }
  int outputs() const noexcept { return sizes_.back(); }

  /// x: inputs × n (column = sample) → out: outputs × n. Thread-safe (const, local buffers).
  void predict(const Eigen::Ref<const Mat>& x, Mat& out) const;

  /// Adds scale · ∂Σ|pred − y|/∂params into grad (size params().size()); returns Σ|pred − y|.
  /// y: outputs × n. Uses member caches: one trainer thread per Mlp object.
  double grad_l1(const Eigen::Ref<const Mat>& x, const Eigen::Ref<const Mat>& y, float scale, float* grad);

 private:
  std::size_t w_off(std::size_t k) const { return offsets_[2 * k]; }
  std::size_t b_off(std::size_t k) const { return offsets_[2 * k + 1]; }

  std::vector<int> sizes_;
  std::vector<std::size_t> offsets_;
  std::vector<float> params_;
  std::vector<Mat> acts_;  ///< post-activation of each layer (acts_[0] unused: the input is x)
  Mat delta_, delta_prev_;
};

}  // namespace ets::train
