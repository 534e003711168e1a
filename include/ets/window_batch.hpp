// A dense batch of fixed-size windows over one or more traces: what WindowEncoder produces, what the
// predictor and trainer consume, and what Aggregator maps back to ops. Row-major, contiguous, GEMM-ready.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ets {

struct WindowBatch {
  int windows = 0;   ///< N
  int width = 0;     ///< W (positions per window)
  int features = 0;  ///< F (features per position)

  std::vector<float> x;                  ///< N × W × F features; padding rows are all zero
  std::vector<float> y;                  ///< N × W × 2 normalised (time, gap) labels; empty when unlabelled
  std::vector<std::uint8_t> mask;        ///< N × W; 1 = a real op, 0 = padding
  std::vector<std::int32_t> op_index;    ///< N × W; index of the op in its trace, -1 for padding
  std::vector<std::int32_t> trace_index; ///< N; which input trace each window came from
  /// N × W loss weight of each position, for the trainer only (ModelTrainer::Options::loss_time_power); empty =
  /// every real op weighs 1. Padding weighs 0 whatever it holds.
  std::vector<float> weight;

  std::size_t positions() const noexcept { return static_cast<std::size_t>(windows) * static_cast<std::size_t>(width); }
  const float* window(int n) const noexcept {
    const std::size_t stride = static_cast<std::size_t>(width) * static_cast<std::size_t>(features);
    return x.data() + static_cast<std::size_t>(n) * stride;
  }
};

}  // namespace ets
