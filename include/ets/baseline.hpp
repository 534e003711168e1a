// Baseline predictors ETS is compared against, trained on the same split and the same FeatureSpec rows:
// opsum (per-op time only, summed), perop_mlp (per-op time + gap, no context), whole_trace (trace-level regressor).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ets/feature_spec.hpp"
#include "ets/trace.hpp"

namespace ets {

/// Compiled library only (ets::ets). Immutable after fit(); predict() is thread-safe.
class Baseline {
 public:
  enum class Kind {
    OpSum,      ///< MLP on one op's features → its execution time; iteration = Σ time (ignores framework gaps)
    PerOpMlp,   ///< MLP on one op's features → (time, gap); iteration = Σ(time + gap), no neighbouring ops
    WholeTrace  ///< ridge regression of log(iteration time) on trace-level aggregates of the op features
  };

  struct Options {
    std::vector<int> hidden = {64, 64};  ///< MLP hidden widths
    int epochs = 30;
    int batch = 512;                     ///< ops per step
    double lr = 1e-3;
    int patience = 5;                    ///< epochs without a better validation MRE before stopping
    std::int64_t max_ops_per_epoch = 400000;  ///< random subset per epoch when the training set is larger
    std::uint64_t seed = 42;
    /// Ridge strengths tried for WholeTrace; the one with the lowest validation MRE wins (first one without val).
    std::vector<double> ridge_lambdas = {1e-3, 1e-2, 1e-1, 1, 10, 100, 1000};
    /// Called after every MLP epoch with (epoch, train loss, validation MRE or −1), and for WholeTrace after every
    /// ridge candidate with (index, λ, validation MRE or −1).
    std::function<void(int, double, double)> progress;
  };

  /// "opsum", "perop_mlp", "whole_trace".
  static const char* kind_name(Kind kind) noexcept;
  /// Inverse of kind_name(); false when unknown.
  static bool parse_kind(std::string_view name, Kind& out) noexcept;
  static std::vector<Kind> all_kinds() { return {Kind::OpSum, Kind::PerOpMlp, Kind::WholeTrace}; }

  /// Throws ets.train.15 (spec not fitted), ets.train.16 (no usable training trace), and as described below.
  /// Trains on `train` (labelled traces), choosing epochs / ridge strength by the iteration-level MRE on `val`
  /// (may be empty; traces without ops or a positive iteration time are left out, ets.train.17 when that leaves
  /// none). The spec is the one ETS uses (fitted on the same training traces).
  static Baseline fit(Kind kind, const FeatureSpec& spec, const std::vector<ExecutionTrace>& train,
                      const std::vector<ExecutionTrace>& val, const Options& options);
  static Baseline fit(Kind kind, const FeatureSpec& spec, const std::vector<ExecutionTrace>& train,
                      const std::vector<ExecutionTrace>& val) {
    return fit(kind, spec, train, val, Options{});
  }

  /// Predicted iteration time in µs.
  double predict(const ExecutionTrace& trace) const;

  Kind kind() const noexcept;
  const char* name() const noexcept { return kind_name(kind()); }
  /// Validation MRE of the chosen model (−1 without validation traces).
  double val_mre() const noexcept;

  Baseline(const Baseline&) = default;
  /// Moving shares the fitted model like a copy (a shared_ptr copy cannot throw), so a moved-from Baseline stays
  /// usable: kind(), name(), val_mre() and predict() never dereference a null model.
  Baseline(Baseline&& o) noexcept : impl_(o.impl_) {}
  Baseline& operator=(const Baseline&) = default;
  Baseline& operator=(Baseline&& o) noexcept {
    impl_ = o.impl_;
    return *this;
  }
  ~Baseline();

 private:
  struct Impl;
  explicit Baseline(std::shared_ptr<const Impl> impl);
  std::shared_ptr<const Impl> impl_;
};

}  // namespace ets
