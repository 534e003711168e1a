// Aggregator: maps per-window (time, gap) predictions back onto ops and sums them into an iteration time
// with an interval. The inverse of WindowEncoder: it reads the batch's mask, op_index and trace_index.
#pragma once

#include <cstddef>
#include <vector>

#include "ets/common.hpp"
#include "ets/feature_spec.hpp"
#include "ets/prediction.hpp"
#include "ets/window_batch.hpp"

namespace ets {

/// Per op, the covering windows' predictions are denormalised to µs and averaged (padding positions are
/// never read); iteration = Σ(time + gap). See docs/concepts.md "Windows and features" for the interval.
class Aggregator {
 public:
  struct Options {
    /// false: take each op from the one covering window whose centre is closest to it (ablation).
    bool overlap_average = true;
    /// Weighted quantiles of the windows' relative disagreement that bound the interval (0 and 1: extremes).
    double interval_lo = 0.10;
    double interval_hi = 0.90;
  };

  /// Throws ets.aggregate.8 if the spec is unfitted, ets.aggregate.6 for invalid options.
  ETS_INLINE explicit Aggregator(FeatureSpec spec);
  ETS_INLINE Aggregator(FeatureSpec spec, Options options);

  const FeatureSpec& spec() const noexcept { return spec_; }
  const Options& options() const noexcept { return options_; }

  /// pred: windows × width × 2 normalised (time, gap), the predictor's output for `batch`. The batch must
  /// come from one trace (ets.aggregate.7 otherwise), of any index ≥ 0; an empty batch gives an empty prediction. Throws
  /// ets.aggregate.1 / .2 (shapes), .4 / .5 (bad op indices) and .3 for a non-finite or overflowing prediction
  /// (never a NaN result); aggregate_all throws the same.
  ETS_INLINE Prediction aggregate(const WindowBatch& batch, const float* pred, std::size_t count) const;
  Prediction aggregate(const WindowBatch& batch, const std::vector<float>& pred) const {
    return aggregate(batch, pred.data(), pred.size());
  }

  /// One Prediction per trace index 0 … traces−1 (traces < 0: 1 + the largest trace_index in the batch, which
  /// must be below 2^31 − 1, ets.aggregate.4).
  ETS_INLINE std::vector<Prediction> aggregate_all(const WindowBatch& batch, const float* pred, std::size_t count,
                                                   int traces = -1) const;
  std::vector<Prediction> aggregate_all(const WindowBatch& batch, const std::vector<float>& pred,
                                        int traces = -1) const {
    return aggregate_all(batch, pred.data(), pred.size(), traces);
  }

 private:
  // Predictions of traces first … first + traces − 1 (the windows' trace_index less `first`): aggregate() asks
  // for its one trace alone, whatever its index, so its cost is bounded by the batch.
  ETS_INLINE std::vector<Prediction> aggregate_range(const WindowBatch& batch, const float* pred, std::size_t count,
                                                     std::int64_t first, int traces) const;

  FeatureSpec spec_;
  Options options_;
};

}  // namespace ets

#ifndef ETS_COMPILED_LIB
#include "ets/aggregator-inl.hpp"
#endif
