// Adam / AdamW and global-norm clipping in torch.optim / torch.nn.utils semantics (float32 state, like PyTorch).
// The arithmetic is vectorised through Eigen arrays; no per-parameter branches.
#include "train/adam.hpp"

#include <cmath>

#include <Eigen/Core>

#include "ets/error.hpp"

namespace ets::train {

Adam::Adam(std::size_t size, AdamOptions options) : opt_(options), m_(size, 0.0f), v_(size, 0.0f) {
  // eps > 0, not torch's eps >= 0: with 0 a parameter whose gradient is exactly 0 steps by 0/0 = NaN, reported as a
  // divergence ("lower the learning rate"); an infinite eps or weight decay freezes or destroys every weight.
  ETS_CHECK(opt_.beta1 >= 0 && opt_.beta1 < 1 && opt_.beta2 >= 0 && opt_.beta2 < 1 && opt_.eps > 0 &&
                std::isfinite(opt_.eps) && opt_.weight_decay >= 0 && std::isfinite(opt_.weight_decay),
            Errc::invalid_argument, "ets.train.6",
            "Adam needs 0 <= beta < 1, a finite eps > 0 and a finite weight_decay >= 0 (beta1 {}, beta2 {}, eps {}, "
            "weight_decay {})",
            opt_.beta1, opt_.beta2, opt_.eps, opt_.weight_decay);
}

void Adam::step(float* params, const float* grad, double lr) {
  using A = Eigen::Map<Eigen::ArrayXf>;
  using CA = Eigen::Map<const Eigen::ArrayXf>;
  const Eigen::Index n = static_cast<Eigen::Index>(m_.size());
  A p(params, n), m(m_.data(), n), v(v_.data(), n);
  CA g0(grad, n);
  ++t_;
  const float b1 = static_cast<float>(opt_.beta1), b2 = static_cast<float>(opt_.beta2);
  const float wd = static_cast<float>(opt_.weight_decay);
  if (wd != 0.0f && opt_.decoupled) p *= 1.0f - static_cast<float>(lr) * wd;
  if (wd != 0.0f && !opt_.decoupled) {
    m = b1 * m + (1.0f - b1) * (g0 + wd * p);
    v = b2 * v + (1.0f - b2) * (g0 + wd * p).square();
  } else {
    m = b1 * m + (1.0f - b1) * g0;
    v = b2 * v + (1.0f - b2) * g0.square();
  }
  const double bc1 = 1.0 - std::pow(opt_.beta1, static_cast<double>(t_));
  const double bc2 = 1.0 - std::pow(opt_.beta2, static_cast<double>(t_));
  const float step_size = static_cast<float>(lr / bc1);
  const float bc2_sqrt = static_cast<float>(std::sqrt(bc2));
  p -= step_size * (m / (v.sqrt() / bc2_sqrt + static_cast<float>(opt_.eps)));
}

double clip_global_norm(float* grad, std::size_t n, double max_norm) {
  Eigen::Map<Eigen::ArrayXf> g(grad, static_cast<Eigen::Index>(n));
  const double norm = std::sqrt(g.cast<double>().square().sum());
  if (max_norm > 0) {
    const double coef = max_norm / (norm + 1e-6);
    if (coef < 1.0) g *= static_cast<float>(coef);
  }
  return norm;
}

}  // namespace ets::train
