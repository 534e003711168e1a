// Evaluator: iteration-level accuracy of ETS and of the baselines on labelled traces — MRE (|pred − true| / true,
// never divided by the prediction), RMSE, per-family and per-op-count tables, phase split, and the noise floor.
#pragma once

#include <array>
#include <cstddef>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ets/aggregator.hpp"
#include "ets/lstm_weights.hpp"
#include "ets/model_file.hpp"
#include "ets/prediction.hpp"
#include "ets/trace.hpp"
#include "ets/window_encoder.hpp"

namespace ets {

/// Compiled library only (ets::ets). All functions are stateless.
class Evaluator {
 public:
  struct Metrics {
    double mre = std::numeric_limits<double>::quiet_NaN();      ///< mean of |pred − true| / true
    double rmse_ms = std::numeric_limits<double>::quiet_NaN();  ///< √mean((pred − true)²) in milliseconds
    /// Mean of (pred − true) / true: > 0 over-predicts, < 0 under-predicts on average.
    double bias = std::numeric_limits<double>::quiet_NaN();
    std::size_t n = 0;   ///< traces scored (method(): the scorable ones); mre, rmse_ms and bias are NaN when it is 0
  };

  /// One predictor's results on the evaluated traces.
  struct Method {
    std::string name;                                    ///< "ets", "opsum", "perop_mlp", "whole_trace"
    Metrics all;
    /// Groups hold only traces with a positive truth; a group without one is not listed.
    std::map<std::string, Metrics> by_family;            ///< meta.family ("" → "unknown")
    std::vector<std::pair<std::string, Metrics>> by_ops; ///< op-count buckets 0–200, …, 1200+ (empty ones skipped)
    /// Buckets of the label's pass disagreement (label.disagreement, max/min − 1 of its timing passes): "<=10%",
    /// "10-25%", "25-50%", "50%+" (upper bounds inclusive); empty ones and traces that do not carry it are skipped.
    std::vector<std::pair<std::string, Metrics>> by_disagreement;
    bool has_phases = false;                             ///< per-phase predictions exist (per-op methods)
    std::array<Metrics, kPhaseCount> by_phase{};         ///< error of Σ(time + gap) per phase (n = 0 without)
    std::vector<double> predicted_us;                    ///< per trace, input order
  };

  /// Ground truth: measured_us when the trace has it, else Σ(time + gap) of its labels (NaN when that sum is past a
  /// double's range).
  static double truth_us(const ExecutionTrace& trace) noexcept;
  /// Whether a trace can be scored (validation, baseline tuning): at least one op and a finite, positive truth_us().
  static bool scorable(const ExecutionTrace& trace) noexcept;
  /// "0-200", "200-400", …, "1000-1200", "1200+".
  static std::string ops_bucket(std::size_t ops);
  /// "<=10%", "10-25%", "25-50%", "50%+" for a pass disagreement of 0.1, 0.25, 0.5, 0.51, …: upper bounds inclusive,
  /// as Labeler's flag (disagreement > threshold). "" when not finite or < 0.
  static std::string disagreement_bucket(double disagreement);
  static Metrics metrics(const std::vector<double>& predicted_us, const std::vector<double>& truth_us);

  /// ETS predictions (encoder → CPU BiLSTM → aggregator), traces split into chunks over `threads` threads.
  /// `aggregation` selects overlap averaging (default) or the nearest-centre window (the ablation).
  static std::vector<Prediction> predict(const LstmWeights& weights, const WindowEncoder& encoder,
                                         const std::vector<ExecutionTrace>& traces, int threads = 0,
                                         const Aggregator::Options& aggregation = {});
  static std::vector<Prediction> predict(const ModelFile& model, const std::vector<ExecutionTrace>& traces,
                                         int threads = 0, const Aggregator::Options& aggregation = {});

  /// Tables for one method. With `breakdown` (one Prediction per trace) the phase split is filled too.
  static Method method(std::string name, const std::vector<ExecutionTrace>& traces,
                       const std::vector<double>& predicted_us, const std::vector<Prediction>* breakdown = nullptr);
  static Method method(std::string name, const std::vector<ExecutionTrace>& traces,
                       const std::vector<Prediction>& predictions);

  /// Where a per-op method's error comes from: for each family, op type and phase, what the labels and the
  /// predictions give those ops, summed over the family's scorable traces (µs).
  struct OpTypeRow {
    std::string family;  ///< meta.family ("" → "unknown")
    std::string type;    ///< OpRecord::name
    Phase phase = Phase::Forward;
    std::size_t ops = 0;  ///< occurrences over the family's traces
    double measured_time_us = 0, measured_gap_us = 0;
    double predicted_time_us = 0, predicted_gap_us = 0;
    double family_truth_us = 0;  ///< Σ truth_us() of the family's traces: the denominator of a share
  };
  /// Rows sorted by family, type, phase. ets.eval.2 when the counts of predictions, or of one trace's predicted
  /// ops, differ from the traces'.
  static std::vector<OpTypeRow> by_op_type(const std::vector<ExecutionTrace>& traces,
                                           const std::vector<Prediction>& predictions);

  /// Noise floor: mean over traces of the collector's label.single_pass_deviation (|one pass − label| / label,
  /// written by ets label); −1 when no trace carries it. n receives how many traces did.
  static double noise_floor(const std::vector<ExecutionTrace>& traces, std::size_t* n = nullptr);

  /// The test–retest figures of the traces that the dataset's `retest_json` re-collected in another run
  /// (written by tools/collect/card.py --retest: {"labels": {config id: {"measured_us": …}}}); traces match by
  /// their `config_id` extra.
  struct Retest {
    /// mean |retest label − label| / label: how far two labels of one configuration lie apart. A predictor can
    /// score below it (against one label, one that knew each configuration's expected time would score about
    /// mre / √2 when the label noise is Gaussian).
    double mre = -1;
    /// ½ · mean |retest label − label| / max(label, retest label): the MRE below which no predictor that sees
    /// only the configuration can fall on average, if the two runs are alike (|L − R| ≤ |P − L| + |P − R|).
    double predictor_bound = -1;
    std::size_t n = 0;  ///< traces matched; the figures are −1 when 0
  };
  /// Missing file or no shared configuration → n = 0; throws ets.eval.3 when the file exists but cannot be read,
  /// ets.eval.8 when a matched trace's labels were collected with other tail steps (`extra` "tail_steps", absent: 0)
  /// than the file's "tail_steps" (absent: 0): their difference would be counted as noise.
  static Retest retest(const std::string& retest_json, const std::vector<ExecutionTrace>& traces);
  /// As above, and refuses a file holding more than max_bytes (ets.io.6, naming it; 0 = no limit), as
  /// DatasetSplit::load bounds a split's files (`ets eval --max-bytes`).
  static Retest retest(const std::string& retest_json, const std::vector<ExecutionTrace>& traces,
                       std::uint64_t max_bytes);

  /// Iteration-level MRE of ETS weights on traces: the early-stopping metric of `ets train`.
  static double mre(const LstmWeights& weights, const WindowEncoder& encoder, const std::vector<ExecutionTrace>& traces,
                    int threads = 0);
};

}  // namespace ets
