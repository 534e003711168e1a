// ets::Labeler — turns several timing passes of one configuration into the one labelled iteration the dataset stores.
// The iteration label is the median of the per-pass median periods; per-op labels (by default) average the
// iterations that bracket that median, weighted so that they add up to it.
#pragma once

#include <cstddef>
#include <vector>

#include "ets/trace.hpp"

namespace ets {

/// Labels a configuration from its passes (each pass: the profiled iterations of one fresh process).
/// Needs the compiled library ets::ets (definitions in src/dataset/label.cpp). Used by `ets label`.
///
/// Definitions (docs/dataset.md):
///  - period of an iteration = Σ(time + gap) = distance between its start and the next iteration's start;
///  - measured_us = median over passes of each pass's median period;
///  - per-op label (OpStatistic::Bracket, the default) = weighted mean of that op's time, and separately of its
///    gap, over the m iterations (all passes pooled, m = ⌈samples / 6⌉) whose periods lie nearest below
///    measured_us and the m nearest above it, the two groups weighted so that Σ(time + gap) = measured_us;
///  - disagreement = max/min − 1 of the per-pass median periods, flagged above Options::disagreement_threshold.
/// A sum of medians is not a median of sums: with per-op medians (OpStatistic::Pooled / PassMedian) Σ(time + gap)
/// of the labels can differ from measured_us by several percent under timing noise. The relative difference is
/// recorded and must stay within Options::sum_tolerance (else ets.label.4).
class Labeler {
 public:
  /// How an op's label pools its samples.
  enum class OpStatistic {
    Bracket,     ///< mean over the iterations bracketing the label, adding up to it (the dataset's definition)
    Pooled,      ///< median over all passes × iterations
    PassMedian,  ///< median over passes of each pass's median: follows the middle pass when a pass drifts
  };

  struct Options {
    double disagreement_threshold = 0.10;  ///< flag passes whose median periods differ by more (max/min − 1)
    double sum_tolerance = 0.03;           ///< max |Σ(time + gap) of labels − measured_us| / measured_us
    OpStatistic op_statistic = OpStatistic::Bracket;
  };

  /// What label() found besides the labelled trace (all of it is also stored in trace.meta.extra).
  struct Result {
    ExecutionTrace trace;                 ///< one iteration: per-op labels, measured_us = the label
    std::vector<double> pass_median_us;   ///< each pass's median period, in pass order
    std::vector<std::size_t> iterations;  ///< iterations used per pass
    double disagreement = 0;              ///< max/min − 1 of pass_median_us, to 5 decimals as stored
    bool disagrees = false;               ///< disagreement > Options::disagreement_threshold, both to 5 decimals
    double sum_discrepancy = 0;           ///< (Σ(time + gap) of the labels − measured_us) / measured_us
    double single_pass_deviation = 0;     ///< mean over passes of |pass median − measured_us| / measured_us
  };

  Labeler() : Labeler(Options{}) {}
  /// Throws ets.label.5 on a negative threshold or a tolerance outside (0, 1).
  explicit Labeler(Options options);

  /// Labels one configuration. Every iteration of every pass must carry the same op sequence (normalised names
  /// and phases; shapes may vary, as data-dependent ops make them), passes that name their model, batch size, environment or device
  /// the same ones (each compared with the first iteration naming it; device "cpu" / "gpu" names none), all
  /// profiled with the same tail steps (meta.extra "tail_steps", absent = 0) — else ets.label.2
  /// naming the first difference; empty input → ets.label.1; an iteration
  /// with a period outside [0.001, 1e15] µs (labels are stored to 1 ns) or not finite → ets.label.3; labels off
  /// measured_us by more than the tolerance → ets.label.4; passes with different iteration counts → ets.label.6. The template for op attributes (shapes, hyper-parameters, FLOPs) is the first iteration of the
  /// first pass; its meta is kept, its label.* entries (a labelled template's) replaced by this label's.
  Result label(const std::vector<std::vector<ExecutionTrace>>& passes) const;

  const Options& options() const noexcept { return options_; }

 private:
  Options options_;
};

}  // namespace ets
