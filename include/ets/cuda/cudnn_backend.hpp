// The cuDNN BiLSTM inference backend of ets::ets_cuda, declared without any CUDA type.
// BiLstmPredictor reaches it through make_cudnn_backend() (or the factory that enable() installs).
#pragma once

#include <memory>
#include <string>

#include "ets/inference_backend.hpp"
#include "ets/lstm_weights.hpp"

namespace ets::cuda {

/// Construction options of the cuDNN backend.
struct CudnnOptions {
  int device = 0;  ///< CUDA device ordinal
};

/// The recurrent network (LSTM or GRU, one or two directions, any layer count) + linear head on cuDNN's RNN API
/// (cudnnRNNForward, inference mode, fp32 without TF32).
///
/// Weights are packed into cuDNN's weight space once, at construction, block by block from the
/// PyTorch layout (cudnn_weight_slice.hpp); the opaque buffer is never stored or exported.
/// Windows are staged in pinned host memory, transposed from the caller's N × W × F to sequence-major W × N × F (the
/// layout cuDNN's persistent kernels need), as equal-length sequences (every length = W). The RNN runs on cuDNN's
/// persistent small-hidden kernels where cuDNN grants them for the config and shape, else on its standard algorithm
/// (per-step kernels, several times slower for small batches); description() names the algorithms available.
/// The head is one cuBLAS SGEMM over all positions; its bias is added on the host while the result is put back in
/// the caller's batch-major order. Batches over 49,152 positions (4,096 windows of width 12) run in slices of whole
/// windows of at most that many positions, which bounds the pinned and device buffers of a call.
///
/// Thread safety: forward() is const and may run on many threads at once. Each concurrent call
/// borrows a private execution context (stream, cuDNN and cuBLAS handles, descriptors, grow-only
/// device buffers) from a pool; contexts are created on demand and reused, so steady-state calls
/// allocate nothing. The packed weights are shared read-only.
class CudnnBackend final : public InferenceBackend {
 public:
  /// Throws ets::Error: ets.cuda.1 without a device, ets.cuda.5 for an invalid config, ets.cuda.6 / ets.cuda.7 for
  /// weights that do not match their config, ets.cuda.8 for a device ordinal out of range, ets.cuda.2 / 3 / 9 for
  /// CUDA / cuDNN / cuBLAS failures.
  explicit CudnnBackend(const LstmWeights& weights, const CudnnOptions& options = {});
  ~CudnnBackend() override;
  CudnnBackend(const CudnnBackend&) = delete;
  CudnnBackend& operator=(const CudnnBackend&) = delete;

  /// Throws ets.cuda.8 (null buffers, width ≤ 0, windows < 0, windows × width over 2^31 − 1) and ets.cuda.2 / 3 / 9
  /// (CUDA / cuDNN / cuBLAS).
  void forward(const float* x, int windows, int width, float* y) const override;
  std::string name() const override { return "cuda-cudnn"; }
  const LstmConfig& config() const noexcept override;

  /// Device, cuDNN version and the RNN algorithms in the order tried: "NVIDIA H200 (sm_90), cuDNN 9.19.0, persistent
  /// + standard RNN" (or "..., standard RNN" where cuDNN declines the persistent kernels for this config).
  std::string description() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Convenience for predictor factories: a CudnnBackend behind the InferenceBackend interface.
std::unique_ptr<InferenceBackend> make_cudnn_backend(const LstmWeights& weights, const CudnnOptions& options = {});

/// Installs make_cudnn_backend (device 0) as BiLstmPredictor's CUDA factory, so Backend::Cuda and Backend::Auto
/// can use cuDNN. Call once before building predictors; idempotent and thread-safe. Without a working device,
/// Backend::Auto then falls back to the CPU with the reason (ets.cuda.1) in backend_note(), Backend::Cuda throws.
void enable() noexcept;

}  // namespace ets::cuda
