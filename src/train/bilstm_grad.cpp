// BPTT for the bidirectional LSTM in PyTorch nn.LSTM semantics (gate order i, f, g, o; both biases; the
// reverse direction reads the window backwards). Column t·n + j holds window j at position t in every buffer.
#include "train/bilstm_grad.hpp"

#include <utility>

#include "ets/error.hpp"

namespace ets::train {

namespace {
template <typename T>
using MapRM = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;
template <typename T>
using MapRMw = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;
template <typename T>
using MapV = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, 1>>;
template <typename T>
using MapVw = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, 1>>;

template <typename Block>
void sigmoid_inplace(Block&& b) {
  using T = typename std::decay_t<Block>::Scalar;
  b = (T(1) / (T(1) + (-b.array()).exp())).matrix();
}
}  // namespace

template <typename T>
BiLstmGrad<T>::BiLstmGrad(const ParamLayout& layout) : layout_(layout) {
  layers_.resize(static_cast<std::size_t>(layout.config.layers));
}

template <typename T>
void BiLstmGrad<T>::forward(const T* params, const WindowBatch& b, const std::int32_t* idx, int n) {
  const LstmConfig& cfg = layout_.config;
  const int F = cfg.input_size, H = cfg.hidden, D = cfg.directions(), W = b.width;
  ETS_CHECK(b.features == F && W > 0 && n >= 0, Errc::shape, "ets.train.3",
            "window batch has {} features and width {}, the network expects {} features", b.features, W, F);
  width_ = W;
  n_ = n;
  const Eigen::Index WN = static_cast<Eigen::Index>(W) * n;
  x0_.resize(F, WN);
  for (int j = 0; j < n; ++j) {
    const std::size_t w = static_cast<std::size_t>(idx ? idx[j] : j);
    const float* src = b.x.data() + w * static_cast<std::size_t>(W) * F;
    for (int t = 0; t < W; ++t)
      x0_.col(static_cast<Eigen::Index>(t) * n + j) =
          Eigen::Map<const Eigen::VectorXf>(src + static_cast<std::size_t>(t) * F, F).template cast<T>();
  }
  for (int l = 0; l < cfg.layers; ++l) {
    const Mat& xin = l == 0 ? x0_ : layers_[static_cast<std::size_t>(l - 1)].out;
    Layer& L = layers_[static_cast<std::size_t>(l)];
    L.out.resize(static_cast<Eigen::Index>(D) * H, WN);
    for (int d = 0; d < D; ++d) {
      const CellOffsets& o = layout_.cell(l, d);
      MapRM<T> wih(params + o.w_ih, 4 * H, o.in), whh(params + o.w_hh, 4 * H, H);
      MapV<T> bih(params + o.b_ih, 4 * H), bhh(params + o.b_hh, 4 * H);
      Mat& G = L.gates[d];
      G.resize(4 * H, WN);
      G.noalias() = wih * xin;
      G.colwise() += bih + bhh;
      L.cell[d].resize(H, WN);
      L.tcell[d].resize(H, WN);
      for (int s = 0; s < W; ++s) {
        const int t = d == 0 ? s : W - 1 - s;
        const int tp = d == 0 ? t - 1 : t + 1;
        auto g = G.middleCols(static_cast<Eigen::Index>(t) * n, n);
        if (s > 0) g.noalias() += whh * L.out.block(static_cast<Eigen::Index>(d) * H, static_cast<Eigen::Index>(tp) * n, H, n);
        sigmoid_inplace(g.topRows(2 * H));
        g.middleRows(2 * H, H) = g.middleRows(2 * H, H).array().tanh().matrix();
        sigmoid_inplace(g.bottomRows(H));
        auto c = L.cell[d].middleCols(static_cast<Eigen::Index>(t) * n, n);
        if (s > 0)
          c = (g.middleRows(H, H).array() * L.cell[d].middleCols(static_cast<Eigen::Index>(tp) * n, n).array() +
               g.topRows(H).array() * g.middleRows(2 * H, H).array()).matrix();
        else
          c = (g.topRows(H).array() * g.middleRows(2 * H, H).array()).matrix();
        auto tc = L.tcell[d].middleCols(static_cast<Eigen::Index>(t) * n, n);
        tc = c.array().tanh().matrix();
        L.out.block(static_cast<Eigen::Index>(d) * H, static_cast<Eigen::Index>(t) * n, H, n) =
            (g.bottomRows(H).array() * tc.array()).matrix();
      }
    }
  }
  const Mat& top = layers_.back().out;
  MapRM<T> hw(params + layout_.head_w, cfg.outputs, D * H);
  MapV<T> hb(params + layout_.head_b, cfg.outputs);
  pred_.resize(cfg.outputs, WN);
  pred_.noalias() = hw * top;
  pred_.colwise() += hb;
}

template <typename T>
void BiLstmGrad<T>::load_targets(const WindowBatch& b, const std::int32_t* idx, int n) {
  const int O = layout_.config.outputs, W = width_;
  ETS_CHECK(n == n_, Errc::internal, "ets.train.4", "backward over {} windows after a forward over {}", n, n_);
  ETS_CHECK(b.y.size() == b.positions() * static_cast<std::size_t>(O) && b.mask.size() == b.positions(),
            Errc::shape, "ets.train.5", "window batch has {} labels and {} mask entries for {} positions × {} outputs",
            b.y.size(), b.mask.size(), b.positions(), O);
  const Eigen::Index WN = static_cast<Eigen::Index>(W) * n;
  target_.resize(O, WN);
  mask_.resize(1, WN);
  for (int j = 0; j < n; ++j) {
    const std::size_t w = static_cast<std::size_t>(idx ? idx[j] : j);
    for (int t = 0; t < W; ++t) {
      const std::size_t p = w * static_cast<std::size_t>(W) + static_cast<std::size_t>(t);
      const Eigen::Index col = static_cast<Eigen::Index>(t) * n + j;
      const bool real = b.mask[p] != 0;
      mask_(0, col) = real ? T(1) : T(0);
      for (int k = 0; k < O; ++k) target_(k, col) = real ? static_cast<T>(b.y[p * O + static_cast<std::size_t>(k)]) : T(0);
    }
  }
}

template <typename T>
double BiLstmGrad<T>::loss_sum(const WindowBatch& b, const std::int32_t* idx, int n) {
  load_targets(b, idx, n);
  return static_cast<double>(
      ((pred_ - target_).array().abs().rowwise() * mask_.row(0).array()).template cast<double>().sum());
}

template <typename T>
double BiLstmGrad<T>::backward(const T* params, const WindowBatch& b, const std::int32_t* idx, int n, T scale,
                               T* grad) {
  const LstmConfig& cfg = layout_.config;
  const int H = cfg.hidden, D = cfg.directions(), W = width_, O = cfg.outputs;
  load_targets(b, idx, n);
  const Eigen::Index WN = static_cast<Eigen::Index>(W) * n;
  const Eigen::Index N = n;

  dpred_ = pred_ - target_;
  const double loss = static_cast<double>(
      (dpred_.array().abs().rowwise() * mask_.row(0).array()).template cast<double>().sum());
  // d|e|/de = sign(e) with sign(0) = 0, as torch.abs's backward.
  dpred_ = ((dpred_.array().sign().rowwise() * mask_.row(0).array()) * scale).matrix();

  const Mat& top = layers_.back().out;
  MapRM<T> hw(params + layout_.head_w, O, D * H);
  MapRMw<T>(grad + layout_.head_w, O, D * H).noalias() += dpred_ * top.transpose();
  MapVw<T>(grad + layout_.head_b, O) += dpred_.rowwise().sum();
  dy_.resize(static_cast<Eigen::Index>(D) * H, WN);
  dy_.noalias() = hw.transpose() * dpred_;

  for (int l = cfg.layers - 1; l >= 0; --l) {
    const Mat& xin = l == 0 ? x0_ : layers_[static_cast<std::size_t>(l - 1)].out;
    Layer& L = layers_[static_cast<std::size_t>(l)];
    if (l > 0) dx_.setZero(xin.rows(), WN);
    for (int d = 0; d < D; ++d) {
      const CellOffsets& o = layout_.cell(l, d);
      MapRM<T> wih(params + o.w_ih, 4 * H, o.in), whh(params + o.w_hh, 4 * H, H);
      const Mat& G = L.gates[d];
      da_.resize(4 * H, WN);
      for (int s = W - 1; s >= 0; --s) {
        const int t = d == 0 ? s : W - 1 - s;
        const int tp = d == 0 ? t - 1 : t + 1;
        const Eigen::Index c0 = static_cast<Eigen::Index>(t) * N;
        auto g = G.middleCols(c0, N);
        auto gi = g.topRows(H).array();
        auto gf = g.middleRows(H, H).array();
        auto gg = g.middleRows(2 * H, H).array();
        auto go = g.bottomRows(H).array();
        auto tc = L.tcell[d].middleCols(c0, N).array();
        dh_ = dy_.block(static_cast<Eigen::Index>(d) * H, c0, H, N);
        if (s < W - 1) dh_ += dhn_;
        dc_ = (dh_.array() * go * (T(1) - tc.square())).matrix();
        if (s < W - 1) dc_ += dcn_;
        auto a = da_.middleCols(c0, N);
        a.bottomRows(H) = (dh_.array() * tc * go * (T(1) - go)).matrix();
        a.topRows(H) = (dc_.array() * gg * gi * (T(1) - gi)).matrix();
        if (s > 0)
          a.middleRows(H, H) =
              (dc_.array() * L.cell[d].middleCols(static_cast<Eigen::Index>(tp) * N, N).array() * gf * (T(1) - gf)).matrix();
        else
          a.middleRows(H, H).setZero();
        a.middleRows(2 * H, H) = (dc_.array() * gi * (T(1) - gg.square())).matrix();
        dcn_ = (dc_.array() * gf).matrix();
        if (s > 0) dhn_.noalias() = whh.transpose() * a;
      }
      MapRMw<T>(grad + o.w_ih, 4 * H, o.in).noalias() += da_ * xin.transpose();
      if (W > 1) {
        const Eigen::Index m = static_cast<Eigen::Index>(W - 1) * N;
        auto hprev_fw = L.out.block(static_cast<Eigen::Index>(d) * H, 0, H, m);
        auto hprev_bw = L.out.block(static_cast<Eigen::Index>(d) * H, N, H, m);
        if (d == 0)
          MapRMw<T>(grad + o.w_hh, 4 * H, H).noalias() += da_.middleCols(N, m) * hprev_fw.transpose();
        else
          MapRMw<T>(grad + o.w_hh, 4 * H, H).noalias() += da_.leftCols(m) * hprev_bw.transpose();
      }
      const auto db = da_.rowwise().sum().eval();
      MapVw<T>(grad + o.b_ih, 4 * H) += db;
      MapVw<T>(grad + o.b_hh, 4 * H) += db;
      if (l > 0) dx_.noalias() += wih.transpose() * da_;
    }
    if (l > 0) std::swap(dy_, dx_);
  }
  return loss;
}

template class BiLstmGrad<float>;
template class BiLstmGrad<double>;

}  // namespace ets::train
