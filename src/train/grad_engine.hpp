// Float gradient engine behind a virtual interface, so the trainer can run an AVX2+FMA build of the BPTT kernels
// on CPUs that have them while the library itself stays compiled for the baseline x86-64 ISA.
#pragma once

#include <cstdint>
#include <memory>

#include "ets/window_batch.hpp"
#include "train/param_layout.hpp"

namespace ets::train {

/// Results are bit-identical wherever the caller's weights and gradients lie: buffers that are not 64-byte aligned
/// are used through an aligned copy (the trainer allocates its gradients aligned, train/aligned_buffer.hpp).
class GradEngine {
 public:
  virtual ~GradEngine() = default;
  /// See BiLstmGrad<float>.
  virtual void forward(const float* params, const WindowBatch& b, const std::int32_t* idx, int n) = 0;
  virtual double backward(const float* params, const WindowBatch& b, const std::int32_t* idx, int n, float scale,
                          float* grad) = 0;
  virtual double loss_sum(const WindowBatch& b, const std::int32_t* idx, int n) = 0;
  /// Predictions of the last forward() as n × width × outputs (window-major, like WindowBatch::y).
  virtual void predictions(float* out) const = 0;
  /// "avx512", "avx2-fma" or "generic".
  virtual const char* isa() const noexcept = 0;
};

/// The fastest engine this CPU runs: AVX-512, else AVX2+FMA, else generic. ETS_TRAIN_ISA=generic|avx2|avx512 caps it
/// (ets.train.19 for any other value); allow_simd = false gives the generic one.
std::unique_ptr<GradEngine> make_grad_engine(const ParamLayout& layout, bool allow_simd = true);

/// AVX2+FMA engine, or nullptr when this build or CPU has none (defined in bilstm_grad_avx2.cpp).
std::unique_ptr<GradEngine> make_grad_engine_avx2(const ParamLayout& layout);

/// AVX-512 (F, DQ, VL, BW) engine, or nullptr when this build or CPU has none (defined in bilstm_grad_avx512.cpp).
std::unique_ptr<GradEngine> make_grad_engine_avx512(const ParamLayout& layout);

}  // namespace ets::train
