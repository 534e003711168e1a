// BPTT for the bidirectional LSTM in PyTorch nn.LSTM semantics (gate order i, f, g, o; both biases; the
// reverse direction reads the window backwards). Column t·n + j holds window j at position t in every buffer.
#include "train/bilstm_grad.hpp"

#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <utility>

#include "ets/error.hpp"
#include "train/grad_engine.hpp"

namespace ets::train {

#include "train/bilstm_grad_defs.inc"

template class BiLstmGrad<float>;
template class BiLstmGrad<double>;

namespace {
class GenericEngine final : public GradEngine {
 public:
  explicit GenericEngine(const ParamLayout& l) : g_(l), outputs_(l.config.outputs) {}
  void forward(const float* p, const WindowBatch& b, const std::int32_t* idx, int n) override {
    g_.forward(p, b, idx, n);
    width_ = b.width;
    n_ = n;
  }
  double backward(const float* p, const WindowBatch& b, const std::int32_t* idx, int n, float scale, float* grad) override {
    return g_.backward(p, b, idx, n, scale, grad);
  }
  double loss_sum(const WindowBatch& b, const std::int32_t* idx, int n) override { return g_.loss_sum(b, idx, n); }
  void predictions(float* out) const override {
    const auto& pr = g_.predictions();
    for (int j = 0; j < n_; ++j)
      for (int t = 0; t < width_; ++t)
        for (int k = 0; k < outputs_; ++k)
          out[(static_cast<std::size_t>(j) * width_ + static_cast<std::size_t>(t)) * outputs_ + static_cast<std::size_t>(k)] =
              pr(k, static_cast<Eigen::Index>(t) * n_ + j);
  }
  const char* isa() const noexcept override { return "generic"; }

 private:
  BiLstmGrad<float> g_;
  int outputs_, width_ = 0, n_ = 0;
};
}  // namespace

std::unique_ptr<GradEngine> make_grad_engine(const ParamLayout& layout, bool allow_simd) {
  const char* env = std::getenv("ETS_TRAIN_ISA");
  if (allow_simd && !(env && std::strcmp(env, "generic") == 0))
    if (auto e = make_grad_engine_avx2(layout)) return e;
  return std::make_unique<GenericEngine>(layout);
}

}  // namespace ets::train
