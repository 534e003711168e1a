// ModelTrainer: the whole `ets train` pipeline as a library call — fit the FeatureSpec on the training traces,
// window them, train the BiLSTM with early stopping on the validation traces' iteration-level MRE, build the .etsm.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ets/encode_stats.hpp"
#include "ets/feature_options.hpp"
#include "ets/model_file.hpp"
#include "ets/trace.hpp"
#include "ets/trainer.hpp"
#include "ets/window_batch.hpp"

namespace ets {

/// Compiled library only (ets::ets).
class ModelTrainer {
 public:
  struct Options {
    int hidden = 0;  ///< hidden units per direction; 0 = the feature count
    int layers = 4;
    RnnCell cell = RnnCell::lstm;  ///< the paper's LSTM, or a GRU (the ablation's alternative)
    int width = 12;
    int stride = 4;
    FeatureOptions features;
    /// Loss weight of each training op: (its labelled time + gap / the training ops' mean)^p, clipped to
    /// [1/10, 10] and rescaled to a mean of 1 over the training ops. The masked MAE counts every op alike while the
    /// iteration time is a sum dominated by the long ops; p > 0 moves the loss towards them. 0 (default) = off;
    /// ets.train.8 outside [0, 2].
    double loss_time_power = 0;
    /// Optimiser, schedule, early stopping, progress. If train.validate is empty it is set to the validation
    /// traces' iteration-level MRE (Evaluator::mre); without validation traces no early stop happens.
    Trainer::Options train;
    std::string hardware_env;  ///< "" = the most common meta.environment of the training traces
    std::map<std::string, std::string> provenance;  ///< merged into the model's provenance (dataset, commit, ...)
    int threads = 0;           ///< for validation predictions (0 = the CPUs this process may use)
    /// > 0: wall-clock budget of train() from its call: feature fitting and windowing come out of it, and what is
    /// left (or train.max_seconds if smaller) bounds the training, final validation included.
    double max_seconds = 0;
  };

  struct Result {
    ModelFile model;
    Trainer::Result training;
    EncodeStats train_stats;
    std::size_t train_traces = 0, val_traces = 0;
    std::int64_t train_windows = 0;
    double val_mre = -1;  ///< of the returned weights (−1 without validation traces)
  };

  /// The loss weights of loss_time_power for a batch that `encoder.encode(traces)` produced (N × W; padding 0).
  static std::vector<float> loss_weights(const WindowBatch& batch, const std::vector<ExecutionTrace>& traces,
                                         double power);

  /// Throws ets.train.18 when no training trace carries labels, ets.train.20 (before training) when the model's
  /// environment id holds a control character.
  static Result train(const std::vector<ExecutionTrace>& train, const std::vector<ExecutionTrace>& val,
                      const Options& options);
};

}  // namespace ets
