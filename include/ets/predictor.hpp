// ets::Predictor — the scheduler-facing facade: models per hardware environment, registered jobs, batch queries
// jobs × environments → iteration time with interval, and observe() to correct later predictions of a running job.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "ets/inference_backend.hpp"
#include "ets/model_file.hpp"
#include "ets/prediction.hpp"
#include "ets/trace.hpp"
#include "ets/tracer.hpp"

namespace ets {

/// Compiled library only (ets::ets). All members are thread-safe: any number of threads may call predict*,
/// observe() and the job/model registration functions on one shared Predictor at the same time.
///
/// Pipeline per model: WindowEncoder → BiLstmPredictor → Aggregator. A batch encodes each job once per distinct
/// encoder (FeatureSpec + window geometry) and runs every window of every job through one forward pass per model.
/// The uncorrected ("raw") prediction of a registered job is cached per model, so repeated scheduler queries cost
/// a lookup plus the correction; the cache dies with the job (re-registering an id) or the model (re-adding an env).
///
/// Latency budget (CPU backend, one core; measured by bench/batch_latency.cpp, figures in docs/scheduling.md):
/// a cold prediction costs one BiLSTM forward over ⌈(ops − 12) / 4⌉ + 1 windows, i.e. linear in the op count and
/// dominated by the forward; a warm query of a registered job costs microseconds.
///
/// observe() estimator (per job × environment): with r_i = ln(measured_i / raw_prediction), the correction factor
/// is c = exp(Σ r_i / (n + k)), the posterior mean of a log-space bias under a N(0, σ²/k) prior (k =
/// Options::prior_weight pseudo-observations of "no bias"), i.e. the mean log ratio shrunk toward 0 (c toward 1).
/// Each r_i is clipped to ±ln(Options::max_ratio) so one straggler cannot swing the job. A constant bias b gives
/// c = b^(n / (n + k)) → b. The corrected estimate is c × raw, interval scaled alike. With Options::max_observations
/// N > 0, once n reaches N each new r first scales Σ r_i by (N − 1) / N and n stays N.
class Predictor {
 public:
  struct Options {
    Backend backend = Backend::Auto;  ///< CPU unless ets_cuda is linked and ets::cuda::enable() was called
    double prior_weight = 2.0;        ///< k: shrinkage of the observe() correction toward 1 (0: no shrinkage)
    double max_ratio = 10.0;          ///< clip of a single observation's measured / predicted ratio
    bool verify_self_test = true;     ///< run each model file's self-test on load
    bool cache = true;                ///< cache raw predictions of registered jobs per model
    /// N > 0: observe() weighs the last ~N observations (an exponentially weighted mean with a time constant of N
    /// observations), so a job whose speed changes is followed within a few N, where the plain mean over days of
    /// observations would take about six times as many as it has to move. 0 (the default): every observation
    /// counts alike.
    std::int64_t max_observations = 0;
  };

  /// One answer: a job on an environment.
  struct Estimate {
    double iteration_us = 0;  ///< corrected prediction (= raw_us × correction)
    double lo_us = 0;         ///< interval, corrected alike
    double hi_us = 0;
    double raw_us = 0;        ///< the model's own prediction
    double correction = 1;    ///< observe() factor applied (1 without observations; capped so hi_us stays finite)
    std::int64_t observations = 0;
    std::int64_t ops = 0;     ///< ops in the job's trace
  };

  /// Row-major jobs × environments.
  struct Matrix {
    std::size_t jobs = 0, envs = 0;
    std::vector<Estimate> values;
    /// std::out_of_range unless job < jobs and env < envs (each index on its own, so no index wraps into the next row).
    const Estimate& at(std::size_t job, std::size_t env) const {
      if (job >= jobs || env >= envs) throw std::out_of_range("Predictor::Matrix::at: index outside jobs × envs");
      return values.at(job * envs + env);
    }
  };

  /// State of one observe() correction.
  struct Correction {
    double factor = 1;
    std::int64_t observations = 0;
    double mean_log_ratio = 0;  ///< unshrunk mean of the clipped log ratios
  };

  Predictor();
  /// Throws ets.predict.7 for options out of range (prior_weight < 0, max_ratio ≤ 1, max_observations < 0).
  explicit Predictor(Options options);
  ~Predictor();
  Predictor(const Predictor&) = delete;
  Predictor& operator=(const Predictor&) = delete;

  const Options& options() const noexcept;

  // ---- models (one per hardware environment) ----

  /// Loads an .etsm file for `env` ("" = the model's own hardware_env, or "default" when that is empty), replacing
  /// any model of that env. observe() corrections on a replaced env are dropped: they measured the old model's bias
  /// (the same model again, bit for bit, keeps them and the caches: its predictions are the old ones).
  /// Returns the env id used. Throws the model reader's errors (ets.model.*), ets.encoder.* (embedded spec),
  /// ets.predict.6 (no encoder, widths differ, not 2 outputs), ets.predict.9 (an env id with a control character)
  /// and the backend's (ets.predictor.*, ets.cuda.*).
  std::string add_model(const std::string& env, const std::string& path);
  /// Same, from a model in memory (e.g. fresh from ModelTrainer).
  std::string add_model(const std::string& env, const ModelFile& model);
  /// Forgets an environment's model, its cached predictions and every job's observations on it; false if it was not
  /// registered. A long-running scheduler that retires environments calls it, or their models stay in memory.
  bool remove_model(const std::string& env);
  /// Environment ids in insertion order.
  std::vector<std::string> environments() const;
  bool has_environment(const std::string& env) const;
  /// A copy of the model file behind an env (weights, provenance); ets.predict.2 if unknown.
  ModelFile model(const std::string& env) const;
  /// Where an env's network runs: "cpu-eigen", "cuda-cudnn", ... ets.predict.2 if unknown.
  std::string backend_name(const std::string& env) const;
  /// Why Options::backend = Auto chose what it chose for an env ("" when the requested backend is used as asked).
  /// ets.predict.2 if unknown.
  std::string backend_note(const std::string& env) const;

  /// The shipped default model: $ETS_MODEL when set, else the first existing of `candidates`, then
  /// <executable dir>/../share/ets/models/default.etsm, <executable dir>/models/default.etsm, and beside a shared
  /// libets: <library dir>/../share/ets/models/default.etsm (or ../../share for lib/<multiarch>). "" when none exists.
  static std::string find_default_model(const std::vector<std::string>& candidates = {});

  // ---- jobs ----

  /// Registers (or replaces, dropping its cache and corrections) a job by id. Throws ets.predict.1 (empty id) and
  /// ets.predict.5 (a trace without ops). The job keeps its trace, to encode it for models added later: about
  /// 0.44 KB per op until remove_job (docs/scheduling.md).
  void add_job(const std::string& job_id, ExecutionTrace trace);
  /// Loads a trace file (any format Tracer::load reads) and registers representative_iteration() of it.
  /// Returns the registered trace's op count. `options` as for Tracer::load: a service reading traces it did not
  /// make sets options.max_bytes (ets.io.6 beyond it).
  std::size_t load_job(const std::string& job_id, const std::string& path);
  std::size_t load_job(const std::string& job_id, const std::string& path, const Tracer::LoadOptions& options);
  /// Forgets a job; false if it was not registered.
  bool remove_job(const std::string& job_id);
  bool has_job(const std::string& job_id) const;
  std::vector<std::string> jobs() const;
  /// The registered trace; ets.predict.1 if unknown.
  ExecutionTrace job_trace(const std::string& job_id) const;

  /// The iteration a multi-iteration file stands for: the one with the median measured time among those with ops
  /// (steady state, not the warm-up), or the last one with ops when none carries a measurement (the last one when
  /// none has ops). ets.predict.4 for an empty list.
  static std::size_t representative_iteration(const std::vector<ExecutionTrace>& iterations);

  // ---- queries ----

  /// Registered jobs × environments, corrected by observe(). Unknown ids throw ets.predict.1 / ets.predict.2; a
  /// prediction that is no usable number (past double's range) throws ets.aggregate.3 naming the job and environment.
  Matrix predict_batch(const std::vector<std::string>& job_ids, const std::vector<std::string>& envs) const;
  /// One registered job on one environment.
  Estimate predict(const std::string& job_id, const std::string& env) const;
  /// Unregistered traces × environments (no cache, no correction).
  Matrix predict_traces(const std::vector<const ExecutionTrace*>& traces, const std::vector<std::string>& envs) const;
  /// The full breakdown (per op, per phase) of one trace on one environment, uncorrected.
  Prediction predict_detailed(const ExecutionTrace& trace, const std::string& env) const;

  // ---- feedback ----

  /// Records a measured iteration time of a registered job on an environment; later predictions for that job on
  /// that environment are corrected (estimator above). Other jobs and environments are unaffected.
  /// ets.predict.3 unless measured_us is finite and > 0.
  void observe(const std::string& job_id, const std::string& env, double measured_us);
  /// Current correction of a job on an env (factor 1, 0 observations when none).
  Correction correction(const std::string& job_id, const std::string& env) const;
  /// Drops a job's observations (all envs).
  void reset_observations(const std::string& job_id);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ets
