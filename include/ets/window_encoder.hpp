// WindowEncoder: cuts traces into overlapping fixed-width windows of per-op feature rows (one dense batch
// tensor N × W × F, with mask, op/trace indices and normalised labels), the predictor's and trainer's input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ets/common.hpp"
#include "ets/encode_stats.hpp"
#include "ets/feature_spec.hpp"
#include "ets/trace.hpp"
#include "ets/window_batch.hpp"

namespace ets {

/// Windows start at ops 0, stride, 2·stride, … and stop once the last op is covered; the last window is padded
/// with zero rows (mask 0, op_index -1). A trace shorter than the width gives one padded window, an empty one none.
/// Every op is covered by between 1 and ⌈width / stride⌉ windows. Thread-safe: encode() is const.
class WindowEncoder {
 public:
  static constexpr int kDefaultWidth = 12;
  static constexpr int kDefaultStride = 4;
  /// The model file stores windows up to this width (ets.model.10), so a wider encoder could train a model that
  /// cannot be saved.
  static constexpr int kMaxWidth = 4096;

  /// Throws ets.encoder.8 unless 1 <= width <= kMaxWidth and 1 <= stride <= width; ets.encoder.9 if unfitted.
  ETS_INLINE explicit WindowEncoder(FeatureSpec spec, int width = kDefaultWidth, int stride = kDefaultStride);

  const FeatureSpec& spec() const noexcept { return spec_; }
  int width() const noexcept { return width_; }
  int stride() const noexcept { return stride_; }
  int features() const noexcept { return spec_.feature_count(); }

  /// Windows for a trace of `ops` ops: 0 for none, 1 when ops <= width, else ⌈(ops − width) / stride⌉ + 1.
  ETS_INLINE std::int64_t window_count(std::int64_t ops) const noexcept;

  /// Every encoder throws ets.encoder.10 for a null trace or a batch too large for 32-bit indices.
  /// One trace; y is filled when the trace has labels (FeatureSpec::has_labels).
  ETS_INLINE WindowBatch encode(const ExecutionTrace& trace, EncodeStats* stats = nullptr) const;
  /// Many traces in one contiguous batch; trace_index refers to positions in `traces`. y is filled only when
  /// every non-empty trace has labels (otherwise it stays empty and stats counts the unlabelled traces).
  ETS_INLINE WindowBatch encode(const std::vector<ExecutionTrace>& traces, EncodeStats* stats = nullptr) const;
  /// Same, without copying traces (e.g. a training mini-batch drawn from a larger set).
  ETS_INLINE WindowBatch encode(const std::vector<const ExecutionTrace*>& traces, EncodeStats* stats = nullptr) const;

  /// Like encode(), but reuses `out`'s buffers: on repeated calls with batches no larger than before, the tensors
  /// are neither allocated nor page-faulted, which for large batches costs more than the encoding itself. (Ops of a
  /// type the spec was not fitted on are still tallied by name, and a trace whose backward ops carry sequence
  /// numbers has its forward twins looked up (FeatureOptions::backward_twin): both allocate.) Every element of `out`
  /// is overwritten.
  ETS_INLINE void encode_into(const std::vector<const ExecutionTrace*>& traces, WindowBatch& out,
                              EncodeStats* stats = nullptr) const;
  ETS_INLINE void encode_into(const ExecutionTrace& trace, WindowBatch& out, EncodeStats* stats = nullptr) const;

 private:
  ETS_INLINE void encode_span(const ExecutionTrace* const* traces, std::size_t count, WindowBatch& out,
                              EncodeStats* stats) const;

  FeatureSpec spec_;
  int width_;
  int stride_;
};

}  // namespace ets

#ifndef ETS_COMPILED_LIB
#include "ets/window_encoder-inl.hpp"
#endif
