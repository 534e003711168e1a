// Fully connected ReLU network for the per-op baselines: batched GEMM forward/backward, L1 gradient.
// Weights are column-major out × in per layer, followed by the bias, all in one flat vector for Adam.
#include "train/mlp.hpp"

#include <cmath>

#include "ets/error.hpp"
#include "train/rng.hpp"

namespace ets::train {

Mlp::Mlp(std::vector<int> sizes, std::uint64_t seed) : sizes_(std::move(sizes)) {
  ETS_CHECK(sizes_.size() >= 2, Errc::invalid_argument, "ets.train.13", "an MLP needs at least an input and an output size");
  std::size_t off = 0;
  for (std::size_t k = 0; k + 1 < sizes_.size(); ++k) {
    ETS_CHECK(sizes_[k] > 0 && sizes_[k + 1] > 0, Errc::invalid_argument, "ets.train.13", "MLP layer sizes must be positive");
    offsets_.push_back(off);
    off += static_cast<std::size_t>(sizes_[k]) * static_cast<std::size_t>(sizes_[k + 1]);
    offsets_.push_back(off);
    off += static_cast<std::size_t>(sizes_[k + 1]);
  }
  params_.resize(off);
  Rng rng(seed);
  for (std::size_t k = 0; k + 1 < sizes_.size(); ++k) {
    const float bound = 1.0f / std::sqrt(static_cast<float>(sizes_[k]));
    for (std::size_t i = w_off(k); i < (k + 2 < sizes_.size() ? w_off(k + 1) : params_.size()); ++i)
      params_[i] = rng.uniform(-bound, bound);
  }
}

void Mlp::predict(const Eigen::Ref<const Mat>& x, Mat& out) const {
  ETS_CHECK(x.rows() == inputs(), Errc::shape, "ets.train.14", "MLP input has {} features, expected {}", x.rows(), inputs());
  Mat a = x, z;
  for (std::size_t k = 0; k + 1 < sizes_.size(); ++k) {
    Eigen::Map<const Mat> w(params_.data() + w_off(k), sizes_[k + 1], sizes_[k]);
    Eigen::Map<const Eigen::VectorXf> b(params_.data() + b_off(k), sizes_[k + 1]);
    z.noalias() = w * a;
    z.colwise() += b;
    if (k + 2 < sizes_.size()) z = z.cwiseMax(0.0f);
    a.swap(z);
  }
  out.swap(a);
}

double Mlp::grad_l1(const Eigen::Ref<const Mat>& x, const Eigen::Ref<const Mat>& y, float scale, float* grad) {
  ETS_CHECK(x.rows() == inputs() && y.rows() == outputs() && x.cols() == y.cols(), Errc::shape, "ets.train.14",
            "MLP batch shapes do not match ({}×{} inputs, {}×{} targets)", x.rows(), x.cols(), y.rows(), y.cols());
  const std::size_t L = sizes_.size() - 1;
  acts_.resize(L + 1);
  for (std::size_t k = 0; k < L; ++k) {
    Eigen::Map<const Mat> w(params_.data() + w_off(k), sizes_[k + 1], sizes_[k]);
    Eigen::Map<const Eigen::VectorXf> b(params_.data() + b_off(k), sizes_[k + 1]);
    Mat& z = acts_[k + 1];
    if (k == 0)
      z.noalias() = w * x;
    else
      z.noalias() = w * acts_[k];
    z.colwise() += b;
    if (k + 1 < L) z = z.cwiseMax(0.0f);
  }
  delta_ = acts_[L] - y;
  const double loss = static_cast<double>(delta_.array().abs().cast<double>().sum());
  delta_ = delta_.array().sign() * scale;
  for (std::size_t k = L; k-- > 0;) {
    Eigen::Map<Mat> gw(grad + w_off(k), sizes_[k + 1], sizes_[k]);
    Eigen::Map<Eigen::VectorXf> gb(grad + b_off(k), sizes_[k + 1]);
    if (k == 0)
      gw.noalias() += delta_ * x.transpose();
    else
      gw.noalias() += delta_ * acts_[k].transpose();
    gb += delta_.rowwise().sum();
    if (k > 0) {
      Eigen::Map<const Mat> w(params_.data() + w_off(k), sizes_[k + 1], sizes_[k]);
      delta_prev_.noalias() = w.transpose() * delta_;
      delta_ = (delta_prev_.array() * (acts_[k].array() > 0.0f).cast<float>()).matrix();
    }
  }
  return loss;
}

}  // namespace ets::train
