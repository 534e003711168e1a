// Trainer: fits the BiLSTM + head (LstmWeights, PyTorch layout) on windows with masked MAE, Adam, clipping,
// an LR schedule, multi-threaded mini-batches and early stopping on a caller-supplied validation metric.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ets/lstm_weights.hpp"
#include "ets/window_batch.hpp"

namespace ets {

/// Compiled library only (ets::ets). The library never prints: progress goes to Options::progress.
class Trainer {
 public:
  enum class Schedule { Constant, Cosine, Step };

  /// Reported through Options::progress every progress_every steps and after every evaluation.
  struct Progress {
    int epoch = 0;               ///< 0-based epoch in progress
    int epochs = 0;              ///< maximum epochs
    std::int64_t step = 0;       ///< optimizer steps done so far
    std::int64_t steps_total = 0;///< steps if no early stop happens (the ETA is an upper bound)
    double train_loss = 0;       ///< mean masked MAE (normalised units) over the epoch so far
    double val_metric = -1;      ///< last validation metric (e.g. iteration-level MRE); −1 before the first
    double best_val_metric = -1;
    double lr = 0;
    double elapsed_s = 0, windows_per_s = 0;
    double eta_s = 0;            ///< time to the last planned step, or to the end of max_seconds when that is sooner
    bool evaluated = false;      ///< this report follows a validation run (end of an epoch)
  };

  struct Options {
    int epochs = 40;
    int batch = 256;                ///< windows per optimizer step
    double lr = 2e-3;               ///< peak learning rate
    Schedule schedule = Schedule::Cosine;
    int warmup_steps = 100;         ///< linear warm-up from lr/warmup to lr
    double min_lr_ratio = 0.05;     ///< cosine floor as a fraction of lr
    int step_every_epochs = 10;     ///< Step schedule: lr *= step_gamma every this many epochs
    double step_gamma = 0.5;
    double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
    double weight_decay = 0.0;      ///< decoupled (AdamW) when decoupled_weight_decay, else L2 added to the gradient
    bool decoupled_weight_decay = true;
    double clip_norm = 1.0;         ///< global gradient-norm bound; 0 disables
    std::uint64_t seed = 42;        ///< initialisation (init()) and shuffling
    int threads = 0;                ///< 0 = the CPUs this process may use (affinity mask, cgroup CPU quota); results are
                                    ///< deterministic for a given count
    int patience = 6;               ///< stop after this many evaluations without improvement; 0 = never
    double min_delta = 0.0;         ///< improvement below this does not reset patience
    int eval_every_epochs = 1;
    std::int64_t max_windows_per_epoch = 0;  ///< > 0: each epoch trains on this many of the shuffled windows
    /// > 0: wall-clock budget of fit(), final validation included: training stops once the time left is shorter
    /// than the last validation took plus 10% and one step (before the first validation, the run can overshoot
    /// by one validation).
    double max_seconds = 0;
    /// Cosine schedule with max_seconds: the decay follows the budget's elapsed fraction when that is ahead of the
    /// step count, so the learning rate reaches its floor as the budget runs out. The weights then depend on the
    /// machine's speed, not only on the seed and thread count. Without max_seconds > 0 or with another schedule
    /// there is nothing to follow: ets.train.8.
    bool anneal_within_budget = false;
    /// > 0: Polyak averaging. An exponential moving average of the weights, updated after every step with decay
    /// min(ema_decay, (1 + step) / (10 + step)), is what gets validated, kept as best and returned; the raw weights
    /// keep training. Smooths the step-to-step noise of a learning rate still near its peak (short budgets).
    double ema_decay = 0.0;
    int progress_every = 20;        ///< steps between progress reports
    std::string checkpoint_path;    ///< written (atomically) after every evaluation when not empty
    /// Continue from checkpoint_path if it exists. The checkpoint records a fingerprint of the training windows,
    /// the validation windows, run_tag and the options that shape the run (all but epochs, threads, patience,
    /// min_delta, eval_every_epochs, progress, max_seconds and anneal_within_budget); resuming with others throws
    /// ets.train.9 instead of mixing two runs. The windows' exact float values count, so a checkpoint resumes on a
    /// build (libm) that encodes the data as the writing one did.
    bool resume = false;
    /// Mixed into the checkpoint fingerprint: e.g. a hash of the data a `validate` callback scores on, which the
    /// trainer cannot see (ModelTrainer sets it from its validation traces).
    std::uint64_t run_tag = 0;
    /// Seconds on a monotonic clock for the time budget, ETA and timings (empty: std::chrono::steady_clock). Tests
    /// drive the budget with a fake clock instead of sleeping.
    std::function<double()> clock;
    /// Validation metric of a candidate (lower is better), e.g. iteration-level MRE on the validation traces.
    /// When empty, the masked MAE of the validation windows passed to fit() is used; with neither, no early stop.
    /// A negative value means "not validated" (the latest weights are kept); NaN or infinity counts as no
    /// improvement, and the latest weights are kept until a finite value is seen.
    std::function<double(const LstmWeights&)> validate;
    /// Return false to stop training after the current step (best weights are still returned).
    std::function<bool(const Progress&)> progress;
  };

  struct EpochRecord {
    int epoch;
    double train_loss, val_metric, lr, seconds;
  };

  struct Result {
    LstmWeights weights;            ///< best by validation metric (last when there is no validation)
    int epochs_run = 0;
    int best_epoch = -1;            ///< counted from 0, as EpochRecord::epoch (-1: none)
    double best_val_metric = -1;
    double final_train_loss = 0;
    double seconds = 0;
    double windows_per_s = 0;       ///< training throughput (forward + backward + update), excluding validation
    std::int64_t steps = 0;
    bool early_stopped = false;
    bool cancelled = false;
    bool out_of_time = false;       ///< stopped by max_seconds
    std::string kernels;            ///< instruction set of the training kernels: "avx512", "avx2-fma" or "generic"
                                    ///< (the widest the CPU runs, picked at run time; ETS_TRAIN_ISA caps it)
    std::vector<EpochRecord> history;
  };

  /// PyTorch's nn.LSTM / nn.GRU / nn.Linear default initialisation: U(−1/√H, 1/√H) for the recurrent cells,
  /// U(−1/√fan_in, 1/√fan_in) for the head; deterministic for a seed on every platform.
  static LstmWeights init(const LstmConfig& config, std::uint64_t seed);

  Trainer(LstmWeights initial, Options options);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  /// Trains on train (x, y, mask required). val may be null; see Options::validate.
  Result fit(const WindowBatch& train, const WindowBatch* val = nullptr);

  /// Masked MAE (mean over real positions and both outputs, normalised units) of weights on a batch; −1 when the
  /// mask has no real position. Throws ets.train.1 (another network), .3 / .5 / .7 (batch shapes).
  double loss(const LstmWeights& weights, const WindowBatch& batch) const;

  /// Network outputs for every position: windows × width × outputs (the trainer's own forward; matches
  /// BiLstmPredictor up to float rounding). Handy for evaluation without a model file.
  std::vector<float> forward(const LstmWeights& weights, const WindowBatch& batch) const;

  const Options& options() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ets
