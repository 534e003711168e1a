// BiLstmPredictor: runs the recurrent network (the shipped model: a 4-layer bidirectional LSTM; any layer count, one or
// two directions, LSTM or GRU cell) + linear head over a batch of windows on a chosen backend.
// It sees only windows (never traces) and returns normalised (time, gap) per position.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ets/common.hpp"
#include "ets/inference_backend.hpp"
#include "ets/lstm_weights.hpp"
#include "ets/window_batch.hpp"

namespace ets {

/// Builds the CUDA backend for a set of weights; throws ets::Error (e.g. ets.cuda.1) when no device works.
/// The header-only core cannot see ets::ets_cuda, so ets_cuda installs one of these at run time:
///
///     // in ets_cuda (cuda/*.cpp), called by ets::cuda::enable():
///     ets::detail::set_cuda_backend_factory(
///         [](const ets::LstmWeights& w) -> std::unique_ptr<ets::InferenceBackend> { return make_cudnn(w); });
///
/// The factory must pack from LstmWeights (PyTorch layout) and return a backend whose forward() is
/// thread-safe. Backend::Cuda without an installed factory throws ets.predictor.3; Backend::Auto falls back to
/// the CPU and records why in backend_note().
using CudaBackendFactory = std::unique_ptr<InferenceBackend> (*)(const LstmWeights&);

namespace detail {
/// Installs (or, with nullptr, removes) the process-wide CUDA backend factory. Thread-safe.
ETS_INLINE void set_cuda_backend_factory(CudaBackendFactory factory) noexcept;
/// The installed factory, or nullptr.
ETS_INLINE CudaBackendFactory cuda_backend_factory() noexcept;
}  // namespace detail

/// The sequence model. Immutable after construction; predict() may be called from many threads at once on one
/// shared const instance (each thread reuses its own workspace, so steady-state calls do not allocate on the CPU
/// backend beyond the returned vector).
class BiLstmPredictor {
 public:
  /// Validates the weights against weights.config (ets.predictor.1/.2) and builds the backend:
  /// Cpu → Eigen; Cuda → the installed CUDA factory or ets.predictor.3; Auto → Cuda when a factory is installed
  /// and succeeds, else Cpu with the reason in backend_note().
  explicit BiLstmPredictor(LstmWeights weights, Backend backend = Backend::Cpu);

  /// Wraps a caller-made backend (tests, custom accelerators); its config must equal weights.config.
  BiLstmPredictor(LstmWeights weights, std::unique_ptr<InferenceBackend> backend);

  /// Copies share the immutable weights and backend. Moving copies the two shared pointers, so a moved-from
  /// predictor stays usable (config() / predict() never see a null pointer).
  BiLstmPredictor(const BiLstmPredictor&) = default;
  BiLstmPredictor& operator=(const BiLstmPredictor&) = default;
  BiLstmPredictor(BiLstmPredictor&& o) noexcept
      : weights_(o.weights_), backend_(o.backend_), note_(std::move(o.note_)) {}
  BiLstmPredictor& operator=(BiLstmPredictor&& o) noexcept {
    weights_ = o.weights_;
    backend_ = o.backend_;
    note_ = std::move(o.note_);
    return *this;
  }

  /// batch.x (N × W × F) → N × W × outputs normalised (time, gap). F must equal config().input_size
  /// (ets.predictor.4). Padding positions get values too; the aggregator ignores them via the mask.
  std::vector<float> predict(const WindowBatch& batch) const;

  /// Raw form: x is windows × width × input_size, y receives windows × width × outputs.
  void predict(const float* x, int windows, int width, float* y) const;

  const LstmConfig& config() const noexcept { return weights_->config; }
  const LstmWeights& weights() const noexcept { return *weights_; }
  /// "cpu-eigen", "cuda-cudnn", ...
  std::string backend_name() const { return backend_->name(); }
  /// Why Auto chose what it chose (empty when the requested backend was used as asked).
  const std::string& backend_note() const noexcept { return note_; }

 private:
  std::shared_ptr<const LstmWeights> weights_;
  std::shared_ptr<const InferenceBackend> backend_;
  std::string note_;
};

}  // namespace ets

#ifndef ETS_COMPILED_LIB
#include "ets/bilstm_predictor-inl.hpp"
#endif
