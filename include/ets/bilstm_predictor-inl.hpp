// Definitions for bilstm_predictor.hpp: backend selection (with the CUDA factory hook) and batch checks.
// Included by the header in header-only mode, compiled once in ets::ets.
#pragma once

#include "ets/bilstm_predictor.hpp"

#include <atomic>
#include <cstdint>
#include <exception>
#include <limits>
#include <utility>

#include "ets/detail/cpu_lstm.hpp"
#include "ets/error.hpp"

namespace ets {

namespace detail {
// Inline in both modes, as log_state(): one slot per process, also where header-only and compiled code meet.
ETS_DETAIL_PROCESS_WIDE inline std::atomic<CudaBackendFactory>& cuda_factory_slot() noexcept {
  static std::atomic<CudaBackendFactory> slot{nullptr};
  return slot;
}
ETS_INLINE void set_cuda_backend_factory(CudaBackendFactory factory) noexcept {
  cuda_factory_slot().store(factory, std::memory_order_release);
}
ETS_INLINE CudaBackendFactory cuda_backend_factory() noexcept {
  return cuda_factory_slot().load(std::memory_order_acquire);
}
}  // namespace detail

ETS_INLINE BiLstmPredictor::BiLstmPredictor(LstmWeights weights, Backend backend) {
  detail::validate_weights(weights);
  weights_ = std::make_shared<const LstmWeights>(std::move(weights));
  if (backend != Backend::Cpu) {
    const CudaBackendFactory factory = detail::cuda_backend_factory();
    if (factory == nullptr) {
      ETS_CHECK(backend != Backend::Cuda, Errc::backend, "ets.predictor.3",
                "Backend::Cuda requested but no CUDA backend is available (link ets::ets_cuda and call "
                "ets::cuda::enable())");
      note_ = "cpu: no CUDA backend registered (ets::ets_cuda not linked or ets::cuda::enable() not called)";
    } else if (backend == Backend::Cuda) {
      backend_ = factory(*weights_);
      ETS_CHECK(backend_ != nullptr, Errc::backend, "ets.predictor.3", "the CUDA backend factory returned nothing");
    } else {
      try {
        backend_ = factory(*weights_);
        if (backend_ == nullptr) note_ = "cpu: the CUDA backend factory returned nothing";
      } catch (const std::exception& e) {  // Auto falls back whatever the backend threw (ets::Error or not)
        note_ = std::string("cpu: CUDA backend unavailable: ") + e.what();
      } catch (...) {  // a factory's own exception type, not derived from std::exception
        note_ = "cpu: CUDA backend unavailable: the factory threw a non-standard exception";
      }
    }
  }
  if (backend_ == nullptr) backend_ = std::make_shared<const detail::CpuLstmBackend>(*weights_);
  // as for a caller-made backend: a factory's backend must run the network it was given
  ETS_CHECK(backend_->config() == weights_->config, Errc::shape, "ets.predictor.1",
            "backend '{}' was built for a different network shape than the weights", backend_->name());
}

ETS_INLINE BiLstmPredictor::BiLstmPredictor(LstmWeights weights, std::unique_ptr<InferenceBackend> backend) {
  detail::validate_weights(weights);
  ETS_CHECK(backend != nullptr, Errc::invalid_argument, "ets.predictor.5", "null backend");
  ETS_CHECK(backend->config() == weights.config, Errc::shape, "ets.predictor.1",
            "backend '{}' was built for a different network shape than the weights", backend->name());
  weights_ = std::make_shared<const LstmWeights>(std::move(weights));
  backend_ = std::move(backend);
}

ETS_INLINE std::vector<float> BiLstmPredictor::predict(const WindowBatch& batch) const {
  ETS_CHECK(batch.windows >= 0 && batch.width > 0 &&
                static_cast<std::int64_t>(batch.windows) * batch.width <= std::numeric_limits<std::int32_t>::max(),
            Errc::invalid_argument, "ets.predictor.5", "invalid batch shape: {} windows of width {}", batch.windows,
            batch.width);
  ETS_CHECK(batch.features == config().input_size, Errc::shape, "ets.predictor.4",
            "batch has {} features per position, the model expects {}", batch.features, config().input_size);
  ETS_CHECK(batch.x.size() == batch.positions() * static_cast<std::size_t>(batch.features),
            Errc::shape, "ets.predictor.4", "batch holds {} values, {} windows × {} × {} need {}", batch.x.size(),
            batch.windows, batch.width, batch.features, batch.positions() * static_cast<std::size_t>(batch.features));
  std::vector<float> y(batch.positions() * static_cast<std::size_t>(config().outputs));
  if (batch.windows > 0) backend_->forward(batch.x.data(), batch.windows, batch.width, y.data());
  return y;
}

ETS_INLINE void BiLstmPredictor::predict(const float* x, int windows, int width, float* y) const {
  ETS_CHECK(windows >= 0 && width > 0, Errc::invalid_argument, "ets.predictor.5",
            "invalid batch shape: {} windows of width {}", windows, width);
  if (windows == 0) return;
  ETS_CHECK(x != nullptr && y != nullptr, Errc::invalid_argument, "ets.predictor.5",
            "null input or output buffer for {} windows", windows);
  backend_->forward(x, windows, width, y);
}

}  // namespace ets
