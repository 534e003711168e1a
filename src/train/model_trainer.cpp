// `ets train` as a library call. The FeatureSpec is fitted on training traces only; validation traces are used
// only for the early-stopping metric; the resulting ModelFile embeds a self-test computed by the CPU predictor.
#include "ets/model_trainer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <iterator>
#include <map>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "ets/aggregator.hpp"
#include "ets/bilstm_predictor.hpp"
#include "ets/detail/ascii.hpp"
#include "ets/detail/fnv1a.hpp"
#include "ets/error.hpp"
#include "ets/evaluator.hpp"
#include "ets/feature_spec.hpp"
#include "ets/version.hpp"
#include "ets/window_encoder.hpp"
#include "train/trace_chunks.hpp"

namespace ets {

namespace {
std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

/// (mean, scale) of z = (log1p(us) − mean) / scale: the spec's own moments, copied bit for bit (recovering them
/// from two normalised points was 1 ulp off).
void label_norm(const FeatureSpec& spec, int ch, double& mean, double& scale) {
  const FeatureSpec::Moments& m = spec.label_moments(ch);
  mean = m.mean;
  scale = m.stdev;
}

// ets.train.8 unless 0 <= power <= 2 (NaN included): checked by train() before any fitting, and by loss_weights().
void check_loss_time_power(double power) {
  ETS_CHECK(std::isfinite(power) && power >= 0 && power <= 2, Errc::invalid_argument, "ets.train.8",
            "loss_time_power must be in [0, 2], got {}", power);
}
}  // namespace

std::vector<float> ModelTrainer::loss_weights(const WindowBatch& batch, const std::vector<ExecutionTrace>& traces,
                                             double power) {
  check_loss_time_power(power);
  ETS_CHECK(batch.op_index.size() == batch.positions() && batch.trace_index.size() ==
                static_cast<std::size_t>(batch.windows) && batch.mask.size() == batch.positions(),
            Errc::shape, "ets.train.5", "window batch has {} op indices, {} trace indices and {} mask entries for {} "
            "windows of {}", batch.op_index.size(), batch.trace_index.size(), batch.mask.size(), batch.windows,
            batch.width);
  // the mean over ops, not positions: overlapping windows repeat ops, but an op's weight is its own
  double sum = 0;
  std::size_t ops = 0;
  for (const auto& t : traces)
    for (const auto& op : t.ops) {
      sum += std::max(op.time_us, 0.0) + std::max(op.gap_us, 0.0);
      ++ops;
    }
  const double mean = ops && sum > 0 ? sum / static_cast<double>(ops) : 1.0;
  std::vector<float> w(batch.positions(), 0.f);
  double wsum = 0;
  std::size_t real = 0;
  for (int n = 0; n < batch.windows; ++n) {
    const std::int32_t ti = batch.trace_index[static_cast<std::size_t>(n)];
    ETS_CHECK(ti >= 0 && static_cast<std::size_t>(ti) < traces.size(), Errc::shape, "ets.train.5",
              "window {} refers to trace {}, but {} traces were given", n, ti, traces.size());
    const auto& tr = traces[static_cast<std::size_t>(ti)];
    for (int t = 0; t < batch.width; ++t) {
      const std::size_t p = static_cast<std::size_t>(n) * static_cast<std::size_t>(batch.width) + static_cast<std::size_t>(t);
      if (!batch.mask[p]) continue;
      const std::int32_t oi = batch.op_index[p];
      ETS_CHECK(oi >= 0 && static_cast<std::size_t>(oi) < tr.ops.size(), Errc::shape, "ets.train.5",
                "window {} position {} refers to op {} of a trace of {} ops", n, t, oi, tr.ops.size());
      const auto& op = tr.ops[static_cast<std::size_t>(oi)];
      const double us = std::max(op.time_us, 0.0) + std::max(op.gap_us, 0.0);
      const double v = std::clamp(std::pow(us / mean, power), 0.1, 10.0);
      w[p] = static_cast<float>(v);
      wsum += v;
      ++real;
    }
  }
  if (real && wsum > 0)
    for (auto& v : w) v = static_cast<float>(v * static_cast<double>(real) / wsum);
  return w;
}

ModelTrainer::Result ModelTrainer::train(const std::vector<ExecutionTrace>& train_in,
                                         const std::vector<ExecutionTrace>& val_in, const Options& opt) {
  const auto t_call = std::chrono::steady_clock::now();
  check_loss_time_power(opt.loss_time_power);
  ETS_CHECK(opt.hidden >= 0, Errc::invalid_argument, "ets.train.8",
            "hidden {} must be >= 0 (0: as many units as features)", opt.hidden);  // a negative one passed as 0
  // Trainer takes 0 epochs (no step); a model of the untrained starting weights is no model
  ETS_CHECK(opt.train.epochs >= 1, Errc::invalid_argument, "ets.train.8",
            "epochs {} must be >= 1: 0 would build a model of the untrained starting weights", opt.train.epochs);
  // Traces are copied only when some must be left out: on the full dataset a copy of the training traces is a
  // quarter of the run's peak memory.
  auto usable = [](const std::vector<ExecutionTrace>& in, std::vector<ExecutionTrace>& subset, auto keep)
      -> const std::vector<ExecutionTrace>& {
    if (std::all_of(in.begin(), in.end(), keep)) return in;
    std::copy_if(in.begin(), in.end(), std::back_inserter(subset), keep);
    return subset;
  };
  std::vector<ExecutionTrace> train_subset, val_subset;
  const auto& train = usable(train_in, train_subset, [](const ExecutionTrace& t) { return FeatureSpec::has_labels(t); });
  ETS_CHECK(!train.empty(), Errc::invalid_argument, "ets.train.18",
            "none of the {} training traces carries per-op labels", train_in.size());
  const auto& val = usable(val_in, val_subset, &Evaluator::scorable);
  // The environment the model is registered under by default, chosen and checked before any training:
  // Predictor::add_model refuses an id with a control character (ets.predict.9), so such a model would only fail
  // when it is loaded, after the whole training.
  std::string hardware_env = opt.hardware_env;
  if (hardware_env.empty()) {
    std::map<std::string, std::size_t> envs;
    for (const auto& t : train) ++envs[t.meta.environment];
    std::size_t best = 0;
    for (const auto& [e, n] : envs)
      if (n > best) {
        best = n;
        hardware_env = e;
      }
  }
  ETS_CHECK(std::none_of(hardware_env.begin(), hardware_env.end(), detail::ascii_control), Errc::invalid_argument,
            "ets.train.20",
            "the model's environment id '{}' ({}) holds a control character (shown as '?'): name the environment "
            "with printable characters (Options::hardware_env, ets train --environment)",
            detail::controls_shown(hardware_env), opt.hardware_env.empty() ? "the training traces' most common" : "given");

  Result res;
  res.train_traces = train.size();
  res.val_traces = val.size();
  FeatureSpec spec = FeatureSpec::fit(train, opt.features);
  const WindowEncoder encoder(spec, opt.width, opt.stride);
  WindowBatch batch = encoder.encode(train, &res.train_stats);
  res.train_windows = batch.windows;
  if (opt.loss_time_power > 0) batch.weight = loss_weights(batch, train, opt.loss_time_power);

  LstmConfig cfg;
  cfg.input_size = spec.feature_count();
  cfg.hidden = opt.hidden > 0 ? opt.hidden : spec.feature_count();
  cfg.layers = opt.layers;
  cfg.outputs = 2;
  cfg.bidirectional = true;
  cfg.cell = opt.cell;

  Trainer::Options topt = opt.train;
  const bool own_validation = !topt.validate && !val.empty();
  if (own_validation) {
    // The validation traces reach the trainer only through the callback: their labels go into the checkpoint's
    // run fingerprint this way, so a resume against other validation data is refused too (FNV-1a, as the trainer's).
    std::uint64_t h = detail::fnv1a(&topt.run_tag, sizeof topt.run_tag);
    for (const auto& t : val) {
      const double truth = Evaluator::truth_us(t);
      const std::uint64_t ops = t.ops.size();
      h = detail::fnv1a(&truth, sizeof truth, h);
      h = detail::fnv1a(&ops, sizeof ops, h);
    }
    topt.run_tag = h;
  }
  if (opt.loss_time_power > 0) {
    // weighted labels are other labels: a checkpoint of an unweighted run must not resume into this one
    topt.run_tag = detail::fnv1a(&opt.loss_time_power, sizeof opt.loss_time_power, topt.run_tag);
  }
  // Validation scores the weights with the trainer's own forward pass on windows encoded once, in the chunks of
  // traces Evaluator::predict batches (train::trace_chunk). Its kernels use the widest instruction set the CPU runs,
  // picked at run time; BiLstmPredictor's follow the build's flags, SSE2 in a portable x86-64 build, which made a
  // validation of the shipped recipe take a quarter of its 15-minute budget. The two agree to float rounding.
  struct ValChunk {
    std::size_t first = 0;
    WindowBatch batch;
    std::size_t traces = 0;
  };
  std::vector<ValChunk> val_chunks;
  std::unique_ptr<Trainer> val_forward;
  std::unique_ptr<Aggregator> val_aggregator;
  if (own_validation) {
    for (std::size_t b = 0; b < val.size(); b += train::kChunkTraces) {
      const std::vector<const ExecutionTrace*> ptrs = train::trace_chunk(val, b);
      val_chunks.push_back({b, encoder.encode(ptrs), ptrs.size()});
    }
    Trainer::Options fopt;  // only the forward pass's threads and chunking matter
    fopt.threads = opt.threads;  // Options::threads: the validation's, as documented
    fopt.batch = topt.batch;
    val_forward = std::make_unique<Trainer>(Trainer::init(cfg, 0), fopt);
    val_aggregator = std::make_unique<Aggregator>(encoder.spec());
    topt.validate = [&](const LstmWeights& w) {
      try {
        std::vector<double> predicted(val.size()), truth(val.size());
        for (const auto& c : val_chunks) {
          const std::vector<float> y = val_forward->forward(w, c.batch);
          const auto preds = val_aggregator->aggregate_all(c.batch, y, static_cast<int>(c.traces));
          for (std::size_t i = 0; i < c.traces; ++i) {
            predicted[c.first + i] = preds[i].iteration_us;
            truth[c.first + i] = Evaluator::truth_us(val[c.first + i]);
          }
        }
        return Evaluator::metrics(predicted, truth).mre;
      } catch (const Error& e) {
        // predictions too large to denormalise: the weights diverged even if the loss is still finite
        if (e.id() != "ets.aggregate.3") throw;
        ETS_THROW(Errc::invalid_argument, "ets.train.12",
                  "training diverged (the validation predictions are not finite numbers: {}); lower the learning rate",
                  e.message());
      }
    };
  }
  if (opt.max_seconds > 0) {
    // at least a moment, so one step is trained and validated even when encoding used the whole budget
    const double used = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_call).count();
    const double left = std::max(1e-3, opt.max_seconds - used);
    topt.max_seconds = topt.max_seconds > 0 ? std::min(topt.max_seconds, left) : left;
  }
  Trainer trainer(Trainer::init(cfg, topt.seed), topt);
  res.training = trainer.fit(batch);
  // the trainer already scored the weights it returns on exactly this metric; a second pass would cost a validation
  if (own_validation && res.training.best_val_metric >= 0)
    res.val_mre = res.training.best_val_metric;
  else
    res.val_mre = val.empty() ? -1.0 : Evaluator::mre(res.training.weights, encoder, val, opt.threads);

  ModelFile& m = res.model;
  m.weights = res.training.weights;
  m.window_width = opt.width;
  m.window_stride = opt.stride;
  m.encoder_state = spec.serialize();
  m.labels.transform = "log1p";
  label_norm(spec, 0, m.labels.time_mean, m.labels.time_scale);
  label_norm(spec, 1, m.labels.gap_mean, m.labels.gap_scale);
  m.hardware_env = hardware_env;
  // self-test: the first few training windows through the CPU predictor that will load this file
  // up to 4 windows, and never more positions than a reader accepts: at width 2,000 that is 2 windows, at 4,096 one
  const int st = std::max(1, std::min({batch.windows, 4, ModelFile::SelfTest::kMaxPositions / batch.width}));
  m.self_test.windows = st;
  m.self_test.width = batch.width;
  m.self_test.input.assign(batch.x.begin(), batch.x.begin() + static_cast<std::ptrdiff_t>(st) * batch.width * batch.features);
  m.self_test.expected.resize(static_cast<std::size_t>(st) * batch.width * 2);
  BiLstmPredictor(m.weights, Backend::Cpu).predict(m.self_test.input.data(), st, batch.width, m.self_test.expected.data());
  m.self_test.tolerance = 1e-4;

  auto& p = m.provenance;
  p["trainer"] = fmt::format("ets {} (Eigen BPTT, Adam, masked MAE)", version_string());
  p["created_utc"] = utc_now();
  p["train_traces"] = std::to_string(res.train_traces);
  p["val_traces"] = std::to_string(res.val_traces);
  p["train_windows"] = std::to_string(res.train_windows);
  p["epochs_run"] = std::to_string(res.training.epochs_run);
  p["best_epoch"] = std::to_string(res.training.best_epoch);
  p["steps"] = std::to_string(res.training.steps);
  p["val_mre"] = fmt::format("{:.6f}", res.val_mre);
  p["train_seconds"] = fmt::format("{:.1f}", res.training.seconds);
  p["windows_per_s"] = fmt::format("{:.0f}", res.training.windows_per_s);
  p["train_kernels"] = res.training.kernels;
  p["early_stopped"] = res.training.early_stopped ? "1" : "0";
  p["hyper"] = fmt::format("cell={} hidden={} layers={} width={} stride={} batch={} lr={} schedule={} warmup={} clip={} wd={} seed={} "
                           "max_windows_per_epoch={} ema={} loss_time_power={} backward_twin={}",
                           cfg.cell == RnnCell::gru ? "gru" : "lstm", cfg.hidden, cfg.layers, opt.width, opt.stride,
                           topt.batch, topt.lr,
                           topt.schedule == Trainer::Schedule::Cosine ? "cosine"
                           : topt.schedule == Trainer::Schedule::Step ? "step" : "constant",
                           topt.warmup_steps, topt.clip_norm, topt.weight_decay, topt.seed, topt.max_windows_per_epoch,
                           topt.ema_decay, opt.loss_time_power, spec.options().backward_twin ? 1 : 0);
  for (const auto& [k, v] : opt.provenance) p[k] = v;
  return res;
}

}  // namespace ets
