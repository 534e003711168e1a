// Trainer implementation: sharded mini-batches over worker threads (one BiLstmGrad each, gradients summed in
// shard order so a run is reproducible for a given thread count), Adam, clipping, LR schedule, early stopping.
#include "ets/trainer.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <random>
#include <sstream>

#include <Eigen/Core>

#include "ets/detail/cloexec_file.hpp"
#include "ets/detail/crc32c.hpp"
#include "ets/detail/fnv1a.hpp"
#include "ets/detail/output_file.hpp"
#include "ets/error.hpp"
#include "ets/log.hpp"
#include "train/adam.hpp"
#include "train/aligned_buffer.hpp"
#include "train/grad_engine.hpp"
#include "train/param_layout.hpp"
#include "train/parallel.hpp"
#include "train/rng.hpp"

namespace ets {

using train::ParamLayout;

namespace {

// Version 2 appends the weight average (empty without ema_decay); version 1 files, which lack it, still resume.
// Version 3 adds the step inside the epoch a run stopped in (a time budget or a cancel cuts epochs short);
// version 2 the weight average. Older versions are read as stopping at an epoch boundary. Version 4 adds the run
// fingerprint; version 5 puts the loss weights into it, records a cut epoch's loss so far and its seconds (its
// history record then stands for the whole epoch, as an unbroken run's), and ends with a CRC-32C of everything before.
constexpr char kCkptMagic[8] = {'E', 'T', 'S', 'C', 'K', 'P', 'T', '5'};
constexpr char kCkptMagicV4[8] = {'E', 'T', 'S', 'C', 'K', 'P', 'T', '4'};
constexpr char kCkptMagicV3[8] = {'E', 'T', 'S', 'C', 'K', 'P', 'T', '3'};
constexpr char kCkptMagicV2[8] = {'E', 'T', 'S', 'C', 'K', 'P', 'T', '2'};
constexpr char kCkptMagicV1[8] = {'E', 'T', 'S', 'C', 'K', 'P', 'T', '1'};

// The checkpoint's fifth shape word: bit 0 bidirectional, bit 1 GRU cell. LSTM checkpoints hold 0 or 1 as before,
// and a reader without the GRU sees a GRU checkpoint as a different network (ets.train.9), never as an LSTM.
std::int32_t shape_flags(const LstmConfig& c) {
  return (c.bidirectional ? 1 : 0) | (c.cell == RnnCell::gru ? 2 : 0);
}

// The checkpoint's run fingerprint: FNV-1a over the pieces a resumed run must share with the one that wrote it.
struct Fingerprint {
  std::uint64_t h = detail::kFnv1aBasis;
  void bytes(const void* p, std::size_t n) { h = detail::fnv1a(p, n, h); }
  template <typename T>
  void pod(const T& v) {
    bytes(&v, sizeof v);
  }
  // Every element of small vectors; of large ones (the feature tensor) a strided sample plus the size, which is
  // enough to tell two datasets or window geometries apart at a fraction of a pass over the data.
  template <typename T>
  void vec(const std::vector<T>& v, std::size_t stride = 1) {
    pod(static_cast<std::uint64_t>(v.size()));
    for (std::size_t i = 0; i < v.size(); i += stride) pod(v[i]);
  }
  void batch(const WindowBatch& b, bool loss_weights) {
    pod(b.windows);
    pod(b.width);
    pod(b.features);
    vec(b.x, 61);
    vec(b.y);
    vec(b.mask);
    // from format 5: other loss weights are another run (none, the default, hashes as format 4 did)
    if (loss_weights && !b.weight.empty()) vec(b.weight);
  }
};

// What a resumed run must share with the run that wrote the checkpoint: its data and the options that shape the
// trajectory. Left out: epochs (a run may be extended), threads, patience / min_delta / eval cadence, the time budget
// and progress reporting.
std::uint64_t run_fingerprint(const Trainer::Options& o, const WindowBatch& train, const WindowBatch* val,
                              bool loss_weights) {
  Fingerprint f;
  f.batch(train, loss_weights);
  f.pod(val != nullptr);
  if (val) f.batch(*val, loss_weights);
  f.pod(o.run_tag);
  f.pod(o.batch);
  f.pod(o.lr);
  f.pod(static_cast<int>(o.schedule));
  f.pod(o.warmup_steps);
  f.pod(o.min_lr_ratio);
  f.pod(o.step_every_epochs);
  f.pod(o.step_gamma);
  f.pod(o.beta1);
  f.pod(o.beta2);
  f.pod(o.eps);
  f.pod(o.weight_decay);
  f.pod(o.decoupled_weight_decay);
  f.pod(o.clip_norm);
  f.pod(o.seed);
  f.pod(o.max_windows_per_epoch);
  f.pod(o.ema_decay);
  return f.h;
}

train::AdamOptions adam_options(const Trainer::Options& opt) {
  train::AdamOptions ao;
  ao.beta1 = opt.beta1;
  ao.beta2 = opt.beta2;
  ao.eps = opt.eps;
  ao.weight_decay = opt.weight_decay;
  ao.decoupled = opt.decoupled_weight_decay;
  return ao;
}

void check_batch(const WindowBatch& b, const LstmConfig& c, bool labelled, const char* what) {
  ETS_CHECK(b.features == c.input_size, Errc::shape, "ets.train.3",
            "{} windows have {} features, the network expects {}", what, b.features, c.input_size);
  ETS_CHECK(b.width > 0 && b.windows >= 0 && b.x.size() == b.positions() * static_cast<std::size_t>(b.features),
            Errc::shape, "ets.train.7", "{} window batch is inconsistent: {} values for {} windows × {} × {}", what,
            b.x.size(), b.windows, b.width, b.features);
  if (labelled)
    ETS_CHECK(b.y.size() == b.positions() * static_cast<std::size_t>(c.outputs) && b.mask.size() == b.positions(),
              Errc::shape, "ets.train.5", "{} window batch has {} labels and {} mask entries for {} positions", what,
              b.y.size(), b.mask.size(), b.positions());
}

/// Runs fn(shard, begin, end) for contiguous shards of [0, n) on up to `threads` threads (run_on_threads: a shard
/// without a thread runs on the caller, the same shards either way); rethrows the first error.
template <typename Fn>
void run_shards(int threads, int n, Fn&& fn) {
  const int t = std::max(1, std::min(threads, n));
  train::run_on_threads(t, [&](int s) {
    const int b = static_cast<int>(static_cast<std::int64_t>(n) * s / t);
    const int e = static_cast<int>(static_cast<std::int64_t>(n) * (s + 1) / t);
    fn(s, b, e);
  });
}

/// Calls fn(first, n) for consecutive chunks of at most `chunk` windows of [begin, end), with idx holding their
/// indices. The position is 64-bit: first + chunk overflows int for a batch near INT_MAX in a shard past 0.
template <typename Fn>
void for_each_chunk(int begin, int end, int chunk, std::vector<std::int32_t>& idx, Fn&& fn) {
  for (std::int64_t w0 = begin; w0 < end; w0 += chunk) {
    const int n = static_cast<int>(std::min<std::int64_t>(chunk, end - w0));
    idx.resize(static_cast<std::size_t>(n));
    for (int j = 0; j < n; ++j) idx[static_cast<std::size_t>(j)] = static_cast<std::int32_t>(w0 + j);
    fn(static_cast<int>(w0), n);
  }
}

template <typename T>
void write_pod(std::ostream& o, const T& v) {
  o.write(reinterpret_cast<const char*>(&v), sizeof(T));
}
template <typename T>
T read_pod(std::istream& i) {
  T v{};
  i.read(reinterpret_cast<char*>(&v), sizeof(T));
  return v;
}
void write_floats(std::ostream& o, const std::vector<float>& v) {
  write_pod<std::uint64_t>(o, v.size());
  o.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
}
/// Checkpoint stream state: a short read is damage (ets.train.9); a failed write is FileReplacement's ets.train.11.
void require_intact(const std::istream& i, const std::string& path) {
  ETS_CHECK(static_cast<bool>(i), Errc::parse, "ets.train.9", "checkpoint {} is truncated", path);
}

/// A block written by write_floats; with allow_empty, an empty block (a value the writer did not keep) is accepted.
std::vector<float> read_floats(std::istream& i, std::size_t expect, const std::string& path, bool allow_empty = false) {
  const auto n = read_pod<std::uint64_t>(i);
  ETS_CHECK(i && (n == expect || (allow_empty && n == 0)), Errc::parse, "ets.train.9",
            "checkpoint {} holds {} parameters, expected {}", path, n, expect);
  std::vector<float> v(static_cast<std::size_t>(n));
  i.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
  require_intact(i, path);
  return v;
}

}  // namespace

struct Trainer::Impl {
  Options opt;
  ParamLayout layout;
  std::vector<float> params;
  int threads = 1;

  Impl(const LstmWeights& w, Options o) : opt(std::move(o)), layout(w.config), params(train::flatten(w, layout)) {
    threads = train::resolve_threads(opt.threads);
    // Negated comparisons so that a NaN fails them too. A step_gamma ≤ 0 turned the Step schedule into gradient
    // ascent, a min_lr_ratio > 1 made the cosine rise above the peak.
    ETS_CHECK(opt.batch > 0 && opt.epochs >= 0 && opt.lr > 0 && std::isfinite(opt.lr) && opt.eval_every_epochs > 0 &&
                  opt.warmup_steps >= 0 && opt.clip_norm >= 0 && opt.patience >= 0 && opt.min_lr_ratio >= 0 &&
                  opt.min_lr_ratio <= 1 && opt.step_every_epochs > 0 && opt.step_gamma > 0 &&
                  std::isfinite(opt.step_gamma) && opt.min_delta >= 0 && opt.weight_decay >= 0 &&
                  opt.threads >= 0 && opt.max_windows_per_epoch >= 0 && opt.max_seconds >= 0 && opt.ema_decay >= 0 &&
                  opt.ema_decay < 1,
              Errc::invalid_argument, "ets.train.8",
              "training options out of range (batch {}, epochs {}, lr {}, eval_every_epochs {}, warmup_steps {}, "
              "clip_norm {}, patience {}, min_lr_ratio {}, step_every_epochs {}, step_gamma {}, min_delta {}, "
              "weight_decay {}, threads {}, max_windows_per_epoch {}, max_seconds {}, ema_decay {})",
              opt.batch, opt.epochs, opt.lr, opt.eval_every_epochs, opt.warmup_steps, opt.clip_norm, opt.patience,
              opt.min_lr_ratio, opt.step_every_epochs, opt.step_gamma, opt.min_delta, opt.weight_decay, opt.threads,
              opt.max_windows_per_epoch, opt.max_seconds, opt.ema_decay);
    // Annealing to a budget needs the budget and the cosine it stretches; otherwise it would be silently ignored.
    ETS_CHECK(!opt.anneal_within_budget || (opt.max_seconds > 0 && opt.schedule == Schedule::Cosine),
              Errc::invalid_argument, "ets.train.8",
              "anneal_within_budget needs a time budget (max_seconds > 0, got {}) and the cosine schedule",
              opt.max_seconds);
  }

  /// time_progress: fraction of the time budget used (0 without one); the cosine follows whichever of step and
  /// time progress is further along when anneal_within_budget is set.
  double lr_at(std::int64_t step, std::int64_t total, int epoch, double time_progress) const {
    double lr = opt.lr;
    if (opt.schedule == Schedule::Cosine && total > opt.warmup_steps) {
      double p = std::clamp(static_cast<double>(step - opt.warmup_steps) / static_cast<double>(total - opt.warmup_steps), 0.0, 1.0);
      if (opt.anneal_within_budget) p = std::max(p, std::clamp(time_progress, 0.0, 1.0));
      const double floor = opt.lr * opt.min_lr_ratio;
      lr = floor + (opt.lr - floor) * 0.5 * (1.0 + std::cos(M_PI * p));
    } else if (opt.schedule == Schedule::Step) {
      lr = opt.lr * std::pow(opt.step_gamma, epoch / opt.step_every_epochs);
    }
    if (opt.warmup_steps > 0 && step < opt.warmup_steps) lr *= static_cast<double>(step + 1) / opt.warmup_steps;
    return lr;
  }

  /// Masked MAE sum and real-position count of flat weights p on a batch, sharded over threads.
  double masked_mae(const std::vector<float>& p, const WindowBatch& b) const {
    const int chunk = std::max(1, opt.batch);
    // one sum per shard, as run_shards makes them: at most one per window (a vector per thread asked for let
    // threads = 2^30 allocate 8 GB for a batch of one window)
    std::vector<double> sums(static_cast<std::size_t>(std::max(1, std::min(threads, b.windows))), 0.0);
    run_shards(threads, b.windows, [&](int s, int begin, int end) {
      auto eng = train::make_grad_engine(layout);
      std::vector<std::int32_t> idx;
      for_each_chunk(begin, end, chunk, idx, [&](int, int n) {
        eng->forward(p.data(), b, idx.data(), n);
        sums[static_cast<std::size_t>(s)] += eng->loss_sum(b, idx.data(), n);
      });
    });
    double total = 0;
    for (double v : sums) total += v;
    std::size_t real = 0;
    for (auto m : b.mask) real += m != 0;
    return real ? total / (static_cast<double>(real) * layout.config.outputs) : -1.0;  // -1: nothing to validate on
  }
};

LstmWeights Trainer::init(const LstmConfig& config, std::uint64_t seed) {
  ParamLayout layout(config);
  std::vector<float> flat(layout.size);
  train::Rng rng(seed);
  const float k = 1.0f / std::sqrt(static_cast<float>(config.hidden));
  for (std::size_t i = 0; i < layout.head_w; ++i) flat[i] = rng.uniform(-k, k);
  const float kh = 1.0f / std::sqrt(static_cast<float>(config.hidden * config.directions()));
  for (std::size_t i = layout.head_w; i < layout.size; ++i) flat[i] = rng.uniform(-kh, kh);
  return train::unflatten(flat.data(), layout);
}

Trainer::Trainer(LstmWeights initial, Options options) : impl_(std::make_unique<Impl>(initial, std::move(options))) {
  train::Adam(0, adam_options(impl_->opt));  // Adam's own check (ets.train.6) at construction, not at fit()
}
Trainer::~Trainer() = default;

const Trainer::Options& Trainer::options() const noexcept { return impl_->opt; }

double Trainer::loss(const LstmWeights& weights, const WindowBatch& batch) const {
  check_batch(batch, weights.config, true, "evaluation");
  // The same network, not just as many parameters: a GRU of hidden 5 has as many as an LSTM of hidden 4.
  ETS_CHECK(weights.config == impl_->layout.config, Errc::shape, "ets.train.1",
            "weights do not match the trainer's network");
  return impl_->masked_mae(train::flatten(weights, impl_->layout), batch);
}

std::vector<float> Trainer::forward(const LstmWeights& weights, const WindowBatch& batch) const {
  check_batch(batch, weights.config, false, "input");
  ParamLayout layout(weights.config);
  const std::vector<float> p = train::flatten(weights, layout);
  const int O = weights.config.outputs, W = batch.width;
  std::vector<float> out(batch.positions() * static_cast<std::size_t>(O));
  const int chunk = std::max(1, impl_->opt.batch);
  run_shards(impl_->threads, batch.windows, [&](int, int begin, int end) {
    auto eng = train::make_grad_engine(layout);
    std::vector<std::int32_t> idx;
    for_each_chunk(begin, end, chunk, idx, [&](int first, int n) {
      eng->forward(p.data(), batch, idx.data(), n);
      eng->predictions(out.data() + static_cast<std::size_t>(first) * W * O);
    });
  });
  return out;
}

Trainer::Result Trainer::fit(const WindowBatch& train_set, const WindowBatch* val) {
  Impl& im = *impl_;
  const Options& opt = im.opt;
  const LstmConfig& cfg = im.layout.config;
  check_batch(train_set, cfg, true, "training");
  if (val) check_batch(*val, cfg, true, "validation");
  ETS_CHECK(train_set.windows > 0, Errc::invalid_argument, "ets.train.10", "no training windows");
  // Seconds on a monotonic clock: steady_clock, or the caller's (tests drive the time budget with a fake one).
  const auto now = [&opt] {
    return opt.clock ? opt.clock()
                     : std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  };
  const double t_start = now();

  const int N = train_set.windows, W = train_set.width, O = cfg.outputs;
  std::vector<std::int32_t> real(static_cast<std::size_t>(N), 0);
  for (int w = 0; w < N; ++w)
    for (int t = 0; t < W; ++t) real[static_cast<std::size_t>(w)] += train_set.mask[static_cast<std::size_t>(w) * W + t] != 0;

  train::Adam adam(im.layout.size, adam_options(opt));
  train::Rng rng(opt.seed ^ 0x5eed5eedULL);

  const int shards = std::max(1, std::min(im.threads, opt.batch));
  std::vector<std::unique_ptr<train::GradEngine>> engines;
  for (int s = 0; s < shards; ++s) engines.push_back(train::make_grad_engine(im.layout));
  std::vector<train::AlignedFloats> grads(static_cast<std::size_t>(shards), train::AlignedFloats(im.layout.size));
  std::vector<double> shard_loss(static_cast<std::size_t>(shards));

  std::vector<std::int32_t> order(static_cast<std::size_t>(N));
  const std::int64_t per_epoch = opt.max_windows_per_epoch > 0 ? std::min<std::int64_t>(N, opt.max_windows_per_epoch) : N;
  const std::int64_t steps_per_epoch = (per_epoch + opt.batch - 1) / opt.batch;
  const std::int64_t total_steps = steps_per_epoch * opt.epochs;

  Result res;
  std::vector<float> best = im.params;
  std::vector<float> ema;  // the weight average (ema_decay > 0): what is validated, kept and returned
  if (opt.ema_decay > 0) ema = im.params;
  double best_metric = -1;
  int bad_evals = 0, start_epoch = 0;
  std::int64_t step = 0;
  std::int64_t resume_step = 0;  // steps of start_epoch already trained before the checkpoint

  const std::string& ck = opt.checkpoint_path;
  if (!ck.empty()) {  // find out now, not after the first epoch's training, that checkpoints cannot be written
    // (a symlink keeps pointing at the checkpoint; a pipe or device is refused: a checkpoint is read back to resume)
    const std::string why = detail::unwritable_reason(ck, false);
    ETS_CHECK(why.empty(), Errc::io, "ets.train.11", "cannot write checkpoint '{}': {}", ck, why);
  }
  const std::uint64_t fingerprint = ck.empty() ? 0 : run_fingerprint(opt, train_set, val, true);
  double resumed_loss = 0, resumed_weight = 0, resumed_seconds = 0;  // a cut epoch's training before the checkpoint
  if (opt.resume && !ck.empty() && std::filesystem::exists(ck)) {
    std::string bytes;
    {
      // close-on-exec. One that cannot be opened (another user's, mode 600) is an io error with its reason: read as
      // empty it was "not an ETS checkpoint", which invites deleting a good one.
      const detail::UniqueFile file(detail::fopen_cloexec(ck.c_str(), "rb"));
      const int open_error = errno;
      ETS_CHECK(file, Errc::io, "ets.train.11", "cannot open checkpoint {} to resume from it: {}", ck,
                std::strerror(open_error));
      ETS_CHECK(detail::read_rest(file.get(), bytes), Errc::parse, "ets.train.9", "cannot read checkpoint {}", ck);
    }
    const bool v1 = bytes.compare(0, 8, kCkptMagicV1, 8) == 0;
    const bool v2 = bytes.compare(0, 8, kCkptMagicV2, 8) == 0;
    const bool v3 = bytes.compare(0, 8, kCkptMagicV3, 8) == 0;
    const bool v4 = bytes.compare(0, 8, kCkptMagicV4, 8) == 0;
    ETS_CHECK(bytes.size() >= 8 && (v1 || v2 || v3 || v4 || bytes.compare(0, 8, kCkptMagic, 8) == 0), Errc::parse,
              "ets.train.9", "{} is not an ETS checkpoint", ck);
    if (!(v1 || v2 || v3 || v4)) {  // format 5 on: a damaged byte anywhere is found before anything is used
      ETS_CHECK(bytes.size() >= 12, Errc::parse, "ets.train.9", "checkpoint {} is truncated", ck);
      std::uint32_t stored = 0;
      std::memcpy(&stored, bytes.data() + bytes.size() - 4, 4);
      const std::uint32_t actual =
          detail::crc32c(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size() - 4);
      ETS_CHECK(stored == actual, Errc::parse, "ets.train.9",
                "checkpoint {} is damaged (stored CRC-32C {:08x}, computed {:08x}): delete it to start over", ck,
                stored, actual);
      bytes.resize(bytes.size() - 4);
    }
    std::istringstream in(std::move(bytes));
    in.seekg(8);
    const auto cfg_words = std::array<std::int32_t, 5>{read_pod<std::int32_t>(in), read_pod<std::int32_t>(in),
                                                        read_pod<std::int32_t>(in), read_pod<std::int32_t>(in),
                                                        read_pod<std::int32_t>(in)};
    ETS_CHECK(cfg_words[0] == cfg.input_size && cfg_words[1] == cfg.hidden && cfg_words[2] == cfg.layers &&
                  cfg_words[3] == cfg.outputs && cfg_words[4] == shape_flags(cfg),
              Errc::parse, "ets.train.9", "checkpoint {} is for a different network shape", ck);
    start_epoch = read_pod<std::int32_t>(in);
    step = read_pod<std::int64_t>(in);
    const auto adam_steps = read_pod<std::int64_t>(in);
    res.best_epoch = read_pod<std::int32_t>(in);
    bad_evals = read_pod<std::int32_t>(in);
    best_metric = read_pod<double>(in);
    const auto rs = read_pod<std::uint64_t>(in);
    std::string rstate(static_cast<std::size_t>(std::min<std::uint64_t>(rs, 1 << 20)), '\0');
    in.read(rstate.data(), static_cast<std::streamsize>(rstate.size()));
    require_intact(in, ck);
    // Counters as save_checkpoint writes them; anything else is damage (a negative epoch would loop ~2^31 times).
    ETS_CHECK(start_epoch >= 0 && step >= 0 && adam_steps >= 0 && bad_evals >= 0 &&
                  res.best_epoch >= -1 && res.best_epoch <= start_epoch &&
                  (best_metric == -1 || (std::isfinite(best_metric) && best_metric >= 0)) && rng.load(rstate),
              Errc::parse, "ets.train.9",
              "checkpoint {} holds inconsistent counters (epoch {}, step {}, Adam steps {}, best epoch {}, evaluations "
              "without improvement {}, best metric {}) or no generator state",
              ck, start_epoch, step, adam_steps, res.best_epoch, bad_evals, best_metric);
    adam.set_steps(adam_steps);
    im.params = read_floats(in, im.layout.size, ck);
    adam.m() = read_floats(in, im.layout.size, ck);
    adam.v() = read_floats(in, im.layout.size, ck);
    best = read_floats(in, im.layout.size, ck);
    // What training writes is finite, and Adam's second moment never negative: anything else is damage (an older
    // format has no checksum), not a divergence to report as one.
    const auto finite = [](const std::vector<float>& v) {
      return std::all_of(v.begin(), v.end(), [](float x) { return std::isfinite(x); });
    };
    ETS_CHECK(finite(im.params) && finite(adam.m()) && finite(best) &&
                  std::all_of(adam.v().begin(), adam.v().end(), [](float x) { return std::isfinite(x) && x >= 0; }),
              Errc::parse, "ets.train.9", "checkpoint {} holds non-finite weights or moments: it is damaged", ck);
    const auto nh = read_pod<std::uint64_t>(in);
    ETS_CHECK(in && nh < 1000000, Errc::parse, "ets.train.9", "checkpoint {} is truncated", ck);
    for (std::uint64_t i = 0; i < nh; ++i) {
      EpochRecord r{};
      r.epoch = read_pod<std::int32_t>(in);
      r.train_loss = read_pod<double>(in);
      r.val_metric = read_pod<double>(in);
      r.lr = read_pod<double>(in);
      r.seconds = read_pod<double>(in);
      res.history.push_back(r);
    }
    require_intact(in, ck);
    if (v1 || v2 || v3)
      log(LogLevel::warn, "checkpoint {} predates run fingerprints: it is resumed without checking that the data "
                          "and options are those it was written with", ck);
    // the weight average: empty when the interrupted run kept none (or predates version 2)
    std::vector<float> saved = v1 ? std::vector<float>{} : read_floats(in, im.layout.size, ck, true);
    ETS_CHECK(finite(saved), Errc::parse, "ets.train.9", "checkpoint {} holds a non-finite weight average", ck);
    if (opt.ema_decay > 0) ema = saved.empty() ? im.params : std::move(saved);
    if (!v1 && !v2) {
      resume_step = read_pod<std::int64_t>(in);
      require_intact(in, ck);
      if (!v3) {  // format 4 on: the run it belongs to (format 4's fingerprint left out the loss weights)
        const auto saved_fingerprint = read_pod<std::uint64_t>(in);
        require_intact(in, ck);
        ETS_CHECK(saved_fingerprint == (v4 ? run_fingerprint(opt, train_set, val, false) : fingerprint), Errc::parse,
                  "ets.train.9",
                  "checkpoint {} was written by a run with other training or validation data or other options (batch, "
                  "learning rate and schedule, Adam, clipping, seed, EMA, windows per epoch, window geometry, loss "
                  "weights): resume with the same ones, or delete it to start over",
                  ck);
      }
      if (!v3 && !v4) {  // format 5: the cut epoch's loss so far and its seconds
        resumed_loss = read_pod<double>(in);
        resumed_weight = read_pod<double>(in);
        resumed_seconds = read_pod<double>(in);
        require_intact(in, ck);
        ETS_CHECK(std::isfinite(resumed_loss) && resumed_loss >= 0 && std::isfinite(resumed_weight) &&
                      resumed_weight >= 0 && std::isfinite(resumed_seconds) && resumed_seconds >= 0,
                  Errc::parse, "ets.train.9", "checkpoint {} holds an inconsistent cut epoch", ck);
        in.peek();
        ETS_CHECK(in.eof(), Errc::parse, "ets.train.9", "checkpoint {} has bytes after its end", ck);
      }
      // steps_per_epoch: a stop signal ended the epoch's last step before its validation, which the resumed run makes
      ETS_CHECK(resume_step >= 0 && resume_step <= steps_per_epoch, Errc::parse, "ets.train.9",
                "checkpoint {} stops at step {} of an epoch of {} steps", ck, resume_step, steps_per_epoch);
      // the cut epoch's partial record gives way to the whole epoch's
      if (resume_step > 0 && !res.history.empty() && res.history.back().epoch == start_epoch) res.history.pop_back();
    }
    res.epochs_run = start_epoch;
    log(LogLevel::info, "resuming from {} at epoch {}", ck, start_epoch);
  }

  // next_epoch / epoch_step: where a resumed run continues; rstate: the generator state its shuffle starts from
  // The model choice a checkpoint records: the best weights so far, their metric and epoch, and the patience count.
  struct Choice {
    const std::vector<float>& best;
    double best_metric;
    int best_epoch, bad_evals;
  };
  // cut: a cut epoch's summed loss, its weight and seconds so far (zeros for a whole one)
  struct Cut {
    double loss = 0, weight = 0, seconds = 0;
  };
  auto save_checkpoint = [&](int next_epoch, std::int64_t epoch_step, const std::string& rstate, const Choice& c,
                             const Cut& cut) {
    if (ck.empty()) return;
    // Writable when the run started (checked above): a failure now (a full disk, a quota) loses this checkpoint,
    // not the run. Thrown, it ended the run without its model; the previous checkpoint is kept, and the next
    // one is tried at the next validation.
    try {
      detail::FileReplacement file(ck, "ets.train.11", "checkpoint", ".tmp", false);
      {
        std::ostringstream o;  // in memory first: the checksum covers every byte
        o.write(kCkptMagic, 8);
        for (std::int32_t v : {cfg.input_size, cfg.hidden, cfg.layers, cfg.outputs, shape_flags(cfg)}) write_pod(o, v);
        write_pod<std::int32_t>(o, next_epoch);
        write_pod<std::int64_t>(o, step);
        write_pod<std::int64_t>(o, adam.steps());
        write_pod<std::int32_t>(o, c.best_epoch);
        write_pod<std::int32_t>(o, c.bad_evals);
        write_pod<double>(o, c.best_metric);
        write_pod<std::uint64_t>(o, rstate.size());
        o.write(rstate.data(), static_cast<std::streamsize>(rstate.size()));
        write_floats(o, im.params);
        write_floats(o, adam.m());
        write_floats(o, adam.v());
        write_floats(o, c.best);
        write_pod<std::uint64_t>(o, res.history.size());
        for (const auto& r : res.history) {
          write_pod<std::int32_t>(o, r.epoch);
          write_pod<double>(o, r.train_loss);
          write_pod<double>(o, r.val_metric);
          write_pod<double>(o, r.lr);
          write_pod<double>(o, r.seconds);
        }
        write_floats(o, ema);
        write_pod<std::int64_t>(o, epoch_step);
        write_pod<std::uint64_t>(o, fingerprint);
        write_pod<double>(o, cut.loss);
        write_pod<double>(o, cut.weight);
        write_pod<double>(o, cut.seconds);
        std::string bytes = std::move(o).str();
        const std::uint32_t crc = detail::crc32c(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
        bytes.append(reinterpret_cast<const char*>(&crc), 4);
        file.write_all(bytes.data(), bytes.size());  // synced, given the old checkpoint's mode, renamed over it
      }
    } catch (const Error& e) {
      if (e.code() != Errc::io) throw;
      log(LogLevel::warn, "{}; training goes on (the previous checkpoint, if any, is kept)", e.what());
    }
  };

  double train_seconds = 0;
  double last_eval_s = 0, last_step_s = 0;
  auto elapsed = [&] { return now() - t_start; };
  // kept free for the final validation: the latest one's duration with 10% to spare (on the full dataset two
  // validations of the same split differed by 7%), plus one step, since the clock is read after each step
  auto reserve = [&] { return last_eval_s * 1.1 + last_step_s; };
  auto out_of_budget = [&] { return opt.max_seconds > 0 && elapsed() + reserve() > opt.max_seconds; };
  // a budget ends the run long before the epochs do (a 15-minute default model, 40 planned epochs)
  auto eta_within_budget = [&](double by_steps) {
    return opt.max_seconds > 0 ? std::clamp(opt.max_seconds - elapsed(), 0.0, by_steps) : by_steps;
  };
  std::int64_t windows_trained = 0;
  const std::int64_t step0 = step;
  // A run that had early-stopped is finished: resuming it must not train another epoch each time.
  bool stop = opt.patience > 0 && bad_evals >= opt.patience;
  res.early_stopped = stop;
  Progress pr;
  pr.epochs = opt.epochs;
  pr.steps_total = total_steps;

  for (int epoch = start_epoch; epoch < opt.epochs && !stop; ++epoch) {
    const bool resumed_cut = epoch == start_epoch && resume_step > 0;
    const double e_start = now() - (resumed_cut ? resumed_seconds : 0.0);
    // the permutation depends only on the generator state, so a resumed run shuffles exactly like an unbroken one
    for (int i = 0; i < N; ++i) order[static_cast<std::size_t>(i)] = i;
    const std::string rng_before_shuffle = rng.save();
    rng.shuffle(order);
    // a resumed cut epoch's record covers its steps before the checkpoint too, as an unbroken run's does
    double epoch_loss = resumed_cut ? resumed_loss : 0, epoch_weight = resumed_cut ? resumed_weight : 0;
    double lr = 0;
    // A checkpoint after an epoch's last step (a stop signal before its validation) resumes with no step of it left
    // to train: its record and progress show the rate of that last step, as an unbroken run's do. (With
    // anneal_within_budget the rate followed the cut run's clock; this is the step count's.)
    if (epoch == start_epoch && resume_step == steps_per_epoch && step > 0)
      lr = im.lr_at(step - 1, total_steps, epoch, 0.0);
    const std::int64_t first_k = epoch == start_epoch ? resume_step : 0;  // a resumed cut epoch goes on where it stopped
    std::int64_t k_next = first_k;  // the first step not yet trained
    for (std::int64_t k = first_k; k < steps_per_epoch && !stop; ++k) {
      k_next = k + 1;
      const double s_start = now();
      const int b0 = static_cast<int>(k * opt.batch);
      const int n = static_cast<int>(std::min<std::int64_t>(opt.batch, per_epoch - b0));
      const std::int32_t* idx = order.data() + b0;
      std::int64_t count = 0;
      for (int j = 0; j < n; ++j) count += real[static_cast<std::size_t>(idx[j])];
      if (count == 0) continue;
      const float scale = 1.0f / static_cast<float>(count * O);
      run_shards(shards, n, [&](int s, int begin, int end) {
        auto& g = grads[static_cast<std::size_t>(s)];
        std::fill(g.begin(), g.end(), 0.0f);
        auto& eng = engines[static_cast<std::size_t>(s)];
        eng->forward(im.params.data(), train_set, idx + begin, end - begin);
        shard_loss[static_cast<std::size_t>(s)] = eng->backward(im.params.data(), train_set, idx + begin, end - begin, scale, g.data());
      });
      const int used = std::max(1, std::min(shards, n));
      double loss_sum = 0;
      for (int s = 0; s < used; ++s) loss_sum += shard_loss[static_cast<std::size_t>(s)];
      auto& g0 = grads[0];
      for (int s = 1; s < used; ++s) {
        Eigen::Map<Eigen::ArrayXf>(g0.data(), static_cast<Eigen::Index>(g0.size())) +=
            Eigen::Map<const Eigen::ArrayXf>(grads[static_cast<std::size_t>(s)].data(), static_cast<Eigen::Index>(g0.size()));
      }
      train::clip_global_norm(g0.data(), g0.size(), opt.clip_norm);
      const double train_budget = opt.max_seconds > 0 ? std::max(1e-3, opt.max_seconds - reserve()) : 0.0;
      lr = im.lr_at(step, total_steps, epoch, train_budget > 0 ? elapsed() / train_budget : 0.0);
      adam.step(im.params.data(), g0.data(), lr);
      ++step;
      if (!ema.empty()) {
        // the warm-up form of the decay keeps the first steps' average from clinging to the initial weights
        const float d = static_cast<float>(std::min(opt.ema_decay, (1.0 + step) / (10.0 + step)));
        Eigen::Map<Eigen::ArrayXf> avg(ema.data(), static_cast<Eigen::Index>(ema.size()));
        avg = d * avg + (1.0f - d) * Eigen::Map<const Eigen::ArrayXf>(im.params.data(), static_cast<Eigen::Index>(ema.size()));
      }
      epoch_loss += loss_sum;
      epoch_weight += static_cast<double>(count * O);
      windows_trained += n;
      last_step_s = now() - s_start;
      train_seconds += last_step_s;
      if (out_of_budget()) {
        stop = true;  // the epoch ends here and is still evaluated below
        res.out_of_time = true;
      }
      if (!std::isfinite(loss_sum))
        ETS_THROW(Errc::invalid_argument, "ets.train.12", "training diverged (non-finite loss at step {}); lower the learning rate", step);
      if (opt.progress && opt.progress_every > 0 && step % opt.progress_every == 0) {
        pr.epoch = epoch;
        pr.step = step;
        pr.train_loss = epoch_loss / epoch_weight;
        pr.lr = lr;
        pr.evaluated = false;
        pr.elapsed_s = elapsed();
        pr.windows_per_s = train_seconds > 0 ? windows_trained / train_seconds : 0;
        const double per_step = pr.elapsed_s / static_cast<double>(std::max<std::int64_t>(1, step - step0));
        pr.eta_s = eta_within_budget(per_step * static_cast<double>(total_steps - step));
        if (!opt.progress(pr)) {
          stop = true;
          res.cancelled = true;
        }
      }
    }
    res.final_train_loss = epoch_weight > 0 ? epoch_loss / epoch_weight : 0;
    res.epochs_run = epoch + 1;
    EpochRecord rec{epoch, res.final_train_loss, -1, lr, now() - e_start};
    const bool last = epoch + 1 == opt.epochs || stop || out_of_budget();
    const bool cut = k_next < steps_per_epoch;
    const bool on_cadence = (epoch + 1) % opt.eval_every_epochs == 0 || epoch + 1 == opt.epochs;
    if (res.cancelled) {
      // A stop signal (Ctrl-C, scancel, a pod's termination) leaves now: validating the weights so far takes as long
      // as any validation (~34 s on the full val split), past a scheduler's 30 s kill delay. The checkpoint keeps
      // the choice as it stood; the resumed run trains the rest of the epoch (none when it was whole) and validates
      // it where an unbroken run does. Nothing validated yet: this run returns the latest weights.
      res.history.push_back(rec);
      save_checkpoint(epoch, k_next, rng_before_shuffle, {best, best_metric, res.best_epoch, bad_evals},
                      {epoch_loss, epoch_weight, rec.seconds});
      if (best_metric < 0) {
        best = ema.empty() ? im.params : ema;
        res.best_epoch = epoch;
      }
      break;
    }
    if (on_cadence || last) {
      // A validation an unbroken run would not make (a cut epoch's half-trained weights, or an epoch off the
      // eval_every_epochs cadence that the time budget ends) serves this run's result, but the checkpoint keeps
      // the choice as it stood before it: the resumed run finishes the epoch and validates where an unbroken run
      // does. (Counted, a bad partial validation could end the resumed run at once as early-stopped.)
      const bool keep_choice = cut || !on_cadence;
      std::vector<float> best_before;
      const double metric_before = best_metric;
      const int epoch_before = res.best_epoch, bad_before = bad_evals;
      if (keep_choice) best_before = best;
      double metric = -1;
      const double v_start = now();
      const std::vector<float>& candidate = ema.empty() ? im.params : ema;
      if (opt.validate)
        metric = opt.validate(train::unflatten(candidate.data(), im.layout));
      else if (val)
        metric = im.masked_mae(candidate, *val);
      if (opt.validate || val) last_eval_s = now() - v_start;
      if (metric >= 0 && std::isfinite(metric)) {
        if (best_metric < 0 || metric < best_metric - opt.min_delta) {
          best_metric = metric;
          best = candidate;
          res.best_epoch = epoch;
          bad_evals = 0;
        } else {
          ++bad_evals;
        }
      } else if (metric < 0) {
        if (best_metric < 0) {  // no validation (yet): keep the latest; never over weights that were validated
          best = candidate;
          res.best_epoch = epoch;
        }
      } else {  // NaN or infinite: no improvement; until a finite one is seen, keep the latest, not the start
        ++bad_evals;
        if (best_metric < 0) {
          best = candidate;
          res.best_epoch = epoch;
        }
      }
      rec.val_metric = metric;
      res.history.push_back(rec);
      if (opt.patience > 0 && bad_evals >= opt.patience) {
        stop = true;
        res.early_stopped = true;
      }
      if (out_of_budget()) {  // no time left for another epoch and its validation
        stop = true;
        res.out_of_time = true;
      }
      // an epoch cut short resumes inside itself, from the same shuffle; a whole one at the next epoch
      const Choice choice = keep_choice ? Choice{best_before, metric_before, epoch_before, bad_before}
                                        : Choice{best, best_metric, res.best_epoch, bad_evals};
      if (cut)
        save_checkpoint(epoch, k_next, rng_before_shuffle, choice, {epoch_loss, epoch_weight, rec.seconds});
      else
        save_checkpoint(epoch + 1, 0, rng.save(), choice, {});
      if (opt.progress) {
        pr.epoch = epoch;
        pr.step = step;
        pr.train_loss = res.final_train_loss;
        pr.val_metric = metric;
        pr.best_val_metric = best_metric;
        pr.lr = lr;
        pr.evaluated = true;
        pr.elapsed_s = elapsed();
        pr.windows_per_s = train_seconds > 0 ? windows_trained / train_seconds : 0;
        pr.eta_s = stop ? 0.0 : eta_within_budget(pr.elapsed_s / std::max(1, epoch + 1 - start_epoch) * (opt.epochs - epoch - 1));
        if (!opt.progress(pr)) {
          stop = true;
          res.cancelled = true;
        }
      }
    } else {
      res.history.push_back(rec);
    }
  }
  res.kernels = engines.front()->isa();
  res.weights = train::unflatten(best.data(), im.layout);
  im.params = best;
  res.best_val_metric = best_metric;
  res.steps = step;
  res.seconds = elapsed();
  res.windows_per_s = train_seconds > 0 ? windows_trained / train_seconds : 0;
  return res;
}

}  // namespace ets
