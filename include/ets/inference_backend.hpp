// The seam between BiLstmPredictor and its compute backends (Eigen CPU in the header-only core, cuDNN in ets_cuda).
// A backend sees only a dense batch of windows, never traces.
#pragma once

#include <memory>
#include <string>

#include "ets/lstm_weights.hpp"

namespace ets {

/// Which compute backend a predictor should use.
enum class Backend {
  Auto,  ///< CUDA when ets_cuda is linked and a device works, else CPU (the reason is recorded)
  Cpu,   ///< Eigen
  Cuda,  ///< cuDNN; throws ets::Error when unavailable
};

/// A loaded network able to run forward passes. Implementations are immutable after construction
/// and forward() is safe to call from many threads at once.
class InferenceBackend {
 public:
  virtual ~InferenceBackend() = default;

  /// x: windows × width × input_size (row-major; padding rows zero, as WindowEncoder writes them: the reverse
  /// direction starts at the window's last position, as in PyTorch's unpacked batches, so padding does reach the
  /// real positions' outputs, and the model was trained with zeros there);
  /// y: windows × width × outputs. Each window is processed independently.
  virtual void forward(const float* x, int windows, int width, float* y) const = 0;

  /// "cpu-eigen", "cuda-cudnn", ...
  virtual std::string name() const = 0;
  virtual const LstmConfig& config() const noexcept = 0;
};

}  // namespace ets
