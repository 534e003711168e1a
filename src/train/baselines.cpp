// The three baselines of `ets eval --baselines`, fitted on the training split with the same FeatureSpec rows as
// ETS and tuned on the validation split's iteration-level MRE (never on test), as the comparison demands.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <numeric>

#include <Eigen/Cholesky>
#include <Eigen/Core>

#include "ets/baseline.hpp"
#include "ets/error.hpp"
#include "ets/evaluator.hpp"
#include "train/adam.hpp"
#include "train/mlp.hpp"
#include "train/rng.hpp"

namespace ets {

namespace {

/// Trace-level regressors of WholeTrace: mean op row, then log counts and log summed costs.
constexpr int kTraceExtra = 8;

Eigen::VectorXd trace_features(const FeatureSpec& spec, const ExecutionTrace& t) {
  const int F = spec.feature_count();
  Eigen::VectorXd f = Eigen::VectorXd::Zero(F + kTraceExtra);
  const std::size_t n = t.ops.size();
  if (n > 0) {
    std::vector<float> rows(n * static_cast<std::size_t>(F));
    spec.encode_ops(t, rows.data());
    Eigen::Map<const Eigen::MatrixXf> m(rows.data(), F, static_cast<Eigen::Index>(n));
    f.head(F) = m.rowwise().mean().cast<double>();
  }
  double phase[kPhaseCount] = {0, 0, 0}, flops = 0, bytes = 0;
  for (const auto& op : t.ops) {
    const int p = static_cast<int>(op.phase);
    if (p >= 0 && p < kPhaseCount) phase[p] += 1;  // a Phase cast from a bad integer counts nowhere
    if (std::isfinite(op.flops) && op.flops > 0) flops += op.flops;
    if (std::isfinite(op.bytes) && op.bytes > 0) bytes += op.bytes;
  }
  // Finite counts can still sum past a double's range: an infinite feature would make the prediction NaN
  flops = std::min(flops, std::numeric_limits<double>::max());
  bytes = std::min(bytes, std::numeric_limits<double>::max());
  f(F + 0) = std::log1p(static_cast<double>(n));
  f(F + 1) = std::log1p(phase[0]);
  f(F + 2) = std::log1p(phase[1]);
  f(F + 3) = std::log1p(phase[2]);
  f(F + 4) = std::log1p(flops);
  f(F + 5) = std::log1p(bytes);
  f(F + 6) = std::log1p(static_cast<double>(std::max<std::int64_t>(0, t.meta.batch_size)));
  f(F + 7) = t.meta.batch_size > 0 ? 1.0 : 0.0;
  return f;
}

// A validation MRE m replaces the best so far only when it is finite and lower (or the best is not finite): a
// NaN from a diverged candidate must neither win nor freeze the choice.
bool improves(double m, double best) {
  return std::isfinite(m) && m >= 0 && (!std::isfinite(best) || best < 0 || m < best);
}

}  // namespace

struct Baseline::Impl {
  Kind kind = Kind::OpSum;
  FeatureSpec spec;
  double val_mre = -1;
  train::Mlp mlp;                  // OpSum, PerOpMlp
  Eigen::VectorXd mean, scale, w;  // WholeTrace: standardisation and ridge weights
  double bias = 0;
  // WholeTrace: log-time bounds, the training labels' range widened 1000× both ways. A trace whose features lie far
  // outside the training set (few training traces) must not extrapolate to an overflowing exp().
  double log_lo = -std::numeric_limits<double>::infinity(), log_hi = std::numeric_limits<double>::infinity();
  // OpSum, PerOpMlp: the largest op time / gap of the training set, 1000× (as WholeTrace's bounds).
  double op_hi[2] = {std::numeric_limits<double>::max(), std::numeric_limits<double>::max()};

  double predict(const ExecutionTrace& t) const {
    if (kind == Kind::WholeTrace) {
      const Eigen::VectorXd f = (trace_features(spec, t) - mean).cwiseQuotient(scale);
      const double log_t = bias + f.dot(w);
      return std::exp(std::isnan(log_t) ? log_hi : std::clamp(log_t, log_lo, log_hi));  // clamp passes NaN through
    }
    const std::size_t n = t.ops.size();
    if (n == 0) return 0.0;
    const int F = spec.feature_count();
    std::vector<float> rows(n * static_cast<std::size_t>(F));
    spec.encode_ops(t, rows.data());
    Eigen::MatrixXf out;
    mlp.predict(Eigen::Map<const Eigen::MatrixXf>(rows.data(), F, static_cast<Eigen::Index>(n)), out);
    double sum = 0;
    for (Eigen::Index j = 0; j < out.cols(); ++j) {
      sum += bounded(spec.denormalize_label(0, out(0, j)), 0);
      if (kind == Kind::PerOpMlp) sum += bounded(spec.denormalize_label(1, out(1, j)), 1);
    }
    return sum;
  }

  // An op's predicted time (channel 0) or gap (1), at most op_hi[channel]: far outside the training set (a tensor of
  // rank 1,000) a ReLU network extrapolates linearly, up to an infinite sum.
  double bounded(double v, int channel) const {
    const double hi = op_hi[channel];
    return std::isnan(v) || v > hi ? hi : v;
  }

  double mre(const std::vector<ExecutionTrace>& traces) const {
    if (traces.empty()) return -1;
    double s = 0;
    for (const auto& t : traces) s += std::abs(predict(t) - Evaluator::truth_us(t)) / Evaluator::truth_us(t);
    return s / static_cast<double>(traces.size());
  }
};

const char* Baseline::kind_name(Kind kind) noexcept {
  switch (kind) {
    case Kind::OpSum: return "opsum";
    case Kind::PerOpMlp: return "perop_mlp";
    case Kind::WholeTrace: return "whole_trace";
  }
  return "?";
}

bool Baseline::parse_kind(std::string_view name, Kind& out) noexcept {
  // not all_kinds(): its vector may throw, and this is noexcept
  for (Kind k : {Kind::OpSum, Kind::PerOpMlp, Kind::WholeTrace})
    if (name == kind_name(k)) {
      out = k;
      return true;
    }
  return false;
}

Baseline::Baseline(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
Baseline::~Baseline() = default;
Baseline::Kind Baseline::kind() const noexcept { return impl_->kind; }
double Baseline::val_mre() const noexcept { return impl_->val_mre; }
double Baseline::predict(const ExecutionTrace& trace) const { return impl_->predict(trace); }

Baseline Baseline::fit(Kind kind, const FeatureSpec& spec, const std::vector<ExecutionTrace>& train,
                       const std::vector<ExecutionTrace>& val_in, const Options& opt) {
  ETS_CHECK(kind == Kind::OpSum || kind == Kind::PerOpMlp || kind == Kind::WholeTrace, Errc::invalid_argument,
            "ets.train.13", "baseline kind {} is none of opsum, perop_mlp, whole_trace", static_cast<int>(kind));
  ETS_CHECK(spec.fitted(), Errc::invalid_argument, "ets.train.15", "baseline needs a fitted FeatureSpec");
  std::vector<const ExecutionTrace*> usable;
  for (const auto& t : train)
    if (FeatureSpec::has_labels(t) && Evaluator::truth_us(t) > 0) usable.push_back(&t);
  ETS_CHECK(!usable.empty(), Errc::invalid_argument, "ets.train.16", "baseline {}: no labelled training traces",
            kind_name(kind));
  // Validation traces without a measurement are left out, as ModelTrainer does; a validation set with none left
  // would silently leave the baseline untuned.
  std::vector<ExecutionTrace> val_subset;
  const auto keep_val = &Evaluator::scorable;
  const bool all_usable = std::all_of(val_in.begin(), val_in.end(), keep_val);
  if (!all_usable) std::copy_if(val_in.begin(), val_in.end(), std::back_inserter(val_subset), keep_val);
  const std::vector<ExecutionTrace>& val = all_usable ? val_in : val_subset;
  ETS_CHECK(val_in.empty() || !val.empty(), Errc::invalid_trace, "ets.train.17",
            "baseline {}: none of the {} validation traces has ops and a positive iteration time", kind_name(kind),
            val_in.size());
  if (kind == Kind::WholeTrace) {
    ETS_CHECK(!opt.ridge_lambdas.empty(), Errc::invalid_argument, "ets.train.13",
              "baseline whole_trace: ridge_lambdas is empty (no ridge strength to try)");
    for (double lambda : opt.ridge_lambdas)
      ETS_CHECK(std::isfinite(lambda) && lambda >= 0, Errc::invalid_argument, "ets.train.13",
                "baseline whole_trace: ridge strength {} is not a finite number >= 0", lambda);
  } else {  // an MLP: options that would train nothing or train to NaN, silently
    ETS_CHECK(opt.epochs >= 1 && opt.batch >= 1 && opt.max_ops_per_epoch >= 1 && opt.patience >= 0 &&
                  std::isfinite(opt.lr) && opt.lr > 0,
              Errc::invalid_argument, "ets.train.13",
              "baseline {}: options out of range (epochs {}, batch {}, max_ops_per_epoch {} must be >= 1, patience {} "
              ">= 0, lr {} a finite number > 0)",
              kind_name(kind), opt.epochs, opt.batch, opt.max_ops_per_epoch, opt.patience, opt.lr);
  }
  auto impl = std::make_shared<Impl>();
  impl->kind = kind;
  impl->spec = spec;
  const int F = spec.feature_count();

  if (kind == Kind::WholeTrace) {
    const Eigen::Index n = static_cast<Eigen::Index>(usable.size()), d = F + kTraceExtra;
    Eigen::MatrixXd X(n, d);
    Eigen::VectorXd y(n);
    for (Eigen::Index i = 0; i < n; ++i) {
      X.row(i) = trace_features(spec, *usable[static_cast<std::size_t>(i)]).transpose();
      y(i) = std::log(Evaluator::truth_us(*usable[static_cast<std::size_t>(i)]));
    }
    impl->mean = X.colwise().mean().transpose();
    impl->scale = ((X.rowwise() - impl->mean.transpose()).array().square().colwise().mean().sqrt()).transpose();
    for (Eigen::Index j = 0; j < d; ++j)
      if (!(impl->scale(j) > 1e-12)) impl->scale(j) = 1.0;
    const Eigen::MatrixXd Z = (X.rowwise() - impl->mean.transpose()).array().rowwise() / impl->scale.transpose().array();
    impl->bias = y.mean();
    impl->log_lo = y.minCoeff() - std::log(1000.0);
    impl->log_hi = y.maxCoeff() + std::log(1000.0);
    const Eigen::VectorXd yc = y.array() - impl->bias;
    const Eigen::MatrixXd G = Z.transpose() * Z;
    const Eigen::VectorXd r = Z.transpose() * yc;
    double best = -1;
    Eigen::VectorXd best_w;
    int step = 0;
    for (double lambda : opt.ridge_lambdas) {
      Eigen::MatrixXd A = G;
      A.diagonal().array() += lambda * static_cast<double>(n);
      impl->w = A.ldlt().solve(r);
      const double m = impl->mre(val);
      if (opt.progress) opt.progress(step++, lambda, m);
      if (best_w.size() == 0 || improves(m, best)) {
        best = m;
        best_w = impl->w;
      }
      if (m < 0) break;  // no validation: keep the first (mildest listed) strength
    }
    impl->w = best_w;
    impl->val_mre = best;
    return Baseline(std::move(impl));
  }

  // Per-op MLPs: one sample per op of every training trace.
  const int O = kind == Kind::OpSum ? 1 : 2;
  std::size_t total = 0;
  for (auto* t : usable) total += t->ops.size();
  std::vector<float> xs(total * static_cast<std::size_t>(F));
  Eigen::MatrixXf Y(O, static_cast<Eigen::Index>(total));
  std::size_t at = 0;
  double max_label[2] = {0, 0};
  for (auto* t : usable) {
    spec.encode_ops(*t, xs.data() + at * static_cast<std::size_t>(F));
    for (const auto& op : t->ops) {
      if (std::isfinite(op.time_us)) max_label[0] = std::max(max_label[0], op.time_us);
      if (std::isfinite(op.gap_us)) max_label[1] = std::max(max_label[1], op.gap_us);
      Y(0, static_cast<Eigen::Index>(at)) = static_cast<float>(spec.normalize_label(0, op.time_us));
      if (O == 2) Y(1, static_cast<Eigen::Index>(at)) = static_cast<float>(spec.normalize_label(1, op.gap_us));
      ++at;
    }
  }
  for (int ch = 0; ch < 2; ++ch)
    impl->op_hi[ch] = std::min(1000.0 * std::max(max_label[ch], 1.0), std::numeric_limits<double>::max());
  Eigen::Map<const Eigen::MatrixXf> X(xs.data(), F, static_cast<Eigen::Index>(total));
  std::vector<int> sizes{F};
  for (int h : opt.hidden) sizes.push_back(h);
  sizes.push_back(O);
  impl->mlp = train::Mlp(sizes, opt.seed);
  train::Adam adam(impl->mlp.params().size(), train::AdamOptions{});
  train::Rng rng(opt.seed ^ 0xba5eULL);
  std::vector<std::int32_t> order(total);
  std::vector<float> grad(impl->mlp.params().size());
  std::vector<float> best = impl->mlp.params();
  double best_mre = std::numeric_limits<double>::quiet_NaN();
  int bad = 0;
  const int B = opt.batch;
  Eigen::MatrixXf xb(F, B), yb(O, B);
  for (int epoch = 0; epoch < opt.epochs; ++epoch) {
    std::iota(order.begin(), order.end(), 0);
    rng.shuffle(order);
    const std::size_t use = std::min<std::size_t>(total, static_cast<std::size_t>(opt.max_ops_per_epoch));
    double loss = 0;
    for (std::size_t b0 = 0; b0 < use; b0 += static_cast<std::size_t>(B)) {
      const int n = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(B), use - b0));
      xb.resize(F, n);
      yb.resize(O, n);
      for (int j = 0; j < n; ++j) {
        xb.col(j) = X.col(order[b0 + static_cast<std::size_t>(j)]);
        yb.col(j) = Y.col(order[b0 + static_cast<std::size_t>(j)]);
      }
      std::fill(grad.begin(), grad.end(), 0.0f);
      loss += impl->mlp.grad_l1(xb, yb, 1.0f / static_cast<float>(n * O), grad.data());
      adam.step(impl->mlp.params().data(), grad.data(), opt.lr);
    }
    loss /= static_cast<double>(use) * O;
    const double m = impl->mre(val);
    if (opt.progress) opt.progress(epoch, loss, m);
    // Without validation (m = −1) the latest weights win; a non-finite MRE never beats a finite one, and the
    // latest weights are kept until a finite one appears.
    if (m < 0 || !std::isfinite(best_mre) || improves(m, best_mre)) {
      best_mre = m;
      best = impl->mlp.params();
      bad = 0;
    } else if (opt.patience > 0 && ++bad >= opt.patience) {
      break;
    }
  }
  impl->mlp.params() = best;
  impl->val_mre = best_mre;
  return Baseline(std::move(impl));
}

}  // namespace ets
