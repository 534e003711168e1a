// Labelling of dataset configurations: aligns the iterations of all timing passes and takes robust medians.
// Medians, not means: slow spells on a shared machine hit whole stretches of a pass and would drag a mean along.
#include "ets/labeler.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "ets/error.hpp"

namespace ets {
namespace {

double median(std::vector<double> v) {
  const std::size_t n = v.size();
  const std::size_t mid = n / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double hi = v[mid];
  if (n % 2) return hi;
  const double lo = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
  return lo / 2 + hi / 2;  // the same double as (lo + hi) / 2, without its overflow for periods above DBL_MAX / 2
}

// Source traces resolve 1 ns; rounding the labels to it drops float noise of the µs arithmetic (259.19299999999373)
// and roughly halves the size of a labelled file.
double to_ns(double us) { return std::round(us * 1000.0) / 1000.0; }

constexpr double kMinPeriodUs = 0.001;
constexpr double kMaxPeriodUs = 1e15;

std::string join(const std::vector<double>& v, int decimals) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) s += ';';
    s += fmt::format("{:.{}f}", v[i], decimals);
  }
  return s;
}

// Every iteration of a label is one job on one machine. Each field a pass may name (model, batch size,
// environment, device) is compared with the first iteration that names it, not with pass 1 iteration 1 alone: a
// first pass that names nothing would let two named passes of different jobs through. (Input shapes are not compared:
// data-dependent ops, e.g. a masked-LM's selected positions, change them between iterations.)
void check_one_job(const std::vector<std::vector<ExecutionTrace>>& passes) {
  struct Field {
    const char* what;
    std::string (*value)(const TraceMeta&);  // "" when the pass does not tell
  };
  static const Field fields[] = {
      {"model", [](const TraceMeta& m) { return m.model; }},
      {"batch size", [](const TraceMeta& m) { return m.batch_size > 0 ? std::to_string(m.batch_size) : std::string(); }},
      {"environment", [](const TraceMeta& m) { return m.environment; }},
      // "cpu" / "gpu" tell only the kind (a source without the device's name), not another device
      {"device", [](const TraceMeta& m) { return m.device == "cpu" || m.device == "gpu" ? std::string() : m.device; }},
  };
  for (const Field& f : fields) {
    std::string first;
    std::size_t first_pass = 0, first_iter = 0;
    for (std::size_t p = 0; p < passes.size(); ++p)
      for (std::size_t i = 0; i < passes[p].size(); ++i) {
        const std::string v = f.value(passes[p][i].meta);
        if (v.empty()) continue;
        if (first.empty()) {
          first = v;
          first_pass = p;
          first_iter = i;
        } else if (v != first) {
          ETS_THROW(Errc::invalid_trace, "ets.label.2",
                    "pass {} iteration {} is of another job than pass {} iteration {}: {} '{}', not '{}'", p + 1, i + 1,
                    first_pass + 1, first_iter + 1, f.what, v, first);
        }
      }
  }
}

// The reference op sequence is the first iteration of the first pass; every other iteration must match it.
void check_aligned(const ExecutionTrace& ref, const ExecutionTrace& it, std::size_t pass, std::size_t iter) {
  // A pass without a tail step ends its last iteration at its ProfilerStep# span, short of the time between steps
  // (docs/dataset.md, Labels): one label never mixes the two.
  const auto extra = [](const ExecutionTrace& t, const char* key) {
    const auto f = t.meta.extra.find(key);
    return f == t.meta.extra.end() ? std::string("0") : f->second;
  };
  if (extra(ref, "tail_steps") != extra(it, "tail_steps"))
    ETS_THROW(Errc::invalid_trace, "ets.label.2",
              "pass {} iteration {} was profiled with {} tail step(s), pass 1 iteration 1 with {}: its passes' last "
              "iterations end differently",
              pass + 1, iter + 1, extra(it, "tail_steps"), extra(ref, "tail_steps"));
  // A pre-faulted heap takes the first touches' page faults out of the timed steps: one label never mixes the two
  // (the label keeps pass 1's heap_mb, so that a re-collection pre-faults as its passes did).
  if (extra(ref, "heap_mb") != extra(it, "heap_mb"))
    ETS_THROW(Errc::invalid_trace, "ets.label.2",
              "pass {} iteration {} ran with a pre-faulted heap of {} MiB, pass 1 iteration 1 with {} MiB: its passes "
              "were timed differently",
              pass + 1, iter + 1, extra(it, "heap_mb"), extra(ref, "heap_mb"));
  const std::size_t n = std::min(ref.ops.size(), it.ops.size());
  for (std::size_t j = 0; j < n; ++j) {
    const OpRecord& a = ref.ops[j];
    const OpRecord& b = it.ops[j];
    if (a.name != b.name || a.phase != b.phase)
      ETS_THROW(Errc::invalid_trace, "ets.label.2",
                "pass {} iteration {} does not align with pass 1 iteration 1: op {} is '{}' ({}), expected '{}' ({})",
                pass + 1, iter + 1, j, b.name, phase_name(b.phase), a.name, phase_name(a.phase));
  }
  if (ref.ops.size() != it.ops.size())
    ETS_THROW(Errc::invalid_trace, "ets.label.2",
              "pass {} iteration {} does not align with pass 1 iteration 1: {} ops instead of {}", pass + 1, iter + 1,
              it.ops.size(), ref.ops.size());
}

}  // namespace

Labeler::Labeler(Options options) : options_(options) {
  ETS_CHECK(std::isfinite(options_.disagreement_threshold) && options_.disagreement_threshold >= 0,
            Errc::invalid_argument, "ets.label.5", "disagreement threshold must be a finite number >= 0, got {}",
            options_.disagreement_threshold);
  ETS_CHECK(std::isfinite(options_.sum_tolerance) && options_.sum_tolerance > 0 && options_.sum_tolerance < 1,
            Errc::invalid_argument, "ets.label.5", "sum tolerance must lie in (0, 1), got {}", options_.sum_tolerance);
}

Labeler::Result Labeler::label(const std::vector<std::vector<ExecutionTrace>>& passes) const {
  ETS_CHECK(!passes.empty(), Errc::invalid_argument, "ets.label.1", "no passes to label");
  for (std::size_t p = 0; p < passes.size(); ++p)
    ETS_CHECK(!passes[p].empty(), Errc::invalid_argument, "ets.label.1", "pass {} holds no iteration", p + 1);
  // An iteration without operators is one defect wherever it is (not a misalignment when it is not the first).
  for (std::size_t p = 0; p < passes.size(); ++p)
    for (std::size_t i = 0; i < passes[p].size(); ++i)
      ETS_CHECK(!passes[p][i].ops.empty(), Errc::invalid_argument, "ets.label.1", "pass {} iteration {} holds no operator",
                p + 1, i + 1);
  const ExecutionTrace& ref = passes.front().front();

  // Passes of one configuration run the same number of steps. One that lost or gained an iteration (a cut capture,
  // an empty step) would also skew the bracket: with every iteration on one side of the label, its weights no
  // longer sum the per-op labels to the label.
  for (std::size_t p = 1; p < passes.size(); ++p)
    ETS_CHECK(passes[p].size() == passes.front().size(), Errc::invalid_trace, "ets.label.6",
              "pass {} holds {} iterations, pass 1 holds {}: passes of one configuration must hold as many", p + 1,
              passes[p].size(), passes.front().size());

  check_one_job(passes);

  Result r;
  std::size_t samples = 0;
  for (std::size_t p = 0; p < passes.size(); ++p) {
    std::vector<double> periods;
    periods.reserve(passes[p].size());
    for (std::size_t i = 0; i < passes[p].size(); ++i) {
      const ExecutionTrace& it = passes[p][i];
      check_aligned(ref, it, p, i);
      const double period = it.sum_us();
      // Labels are stored to 1 ns: a shorter period would round to 0 (and the sum check divide by it). The top
      // keeps that rounding's µs → ns product finite, with room for any real job (1e15 µs is about 31.7 years).
      ETS_CHECK(std::isfinite(period) && period >= kMinPeriodUs && period <= kMaxPeriodUs, Errc::invalid_trace,
                "ets.label.3",
                "pass {} iteration {} has period {} us; a labelled iteration needs a period from {} us (1 ns, the "
                "resolution of labels) to {:g} us",
                p + 1, i + 1, period, kMinPeriodUs, kMaxPeriodUs);
      periods.push_back(period);
    }
    r.pass_median_us.push_back(median(std::move(periods)));
    r.iterations.push_back(passes[p].size());
    samples += passes[p].size();
  }

  const double label_us = median(r.pass_median_us);

  // Bracket: the m iterations nearest below the label and the m nearest above it (all passes pooled), mixed with
  // weights that make their mean period the label itself. Iterations of slow spells and outliers fall outside.
  std::vector<std::pair<const ExecutionTrace*, double>> bracket;  // iteration, weight
  if (options_.op_statistic == OpStatistic::Bracket) {
    std::vector<std::pair<double, const ExecutionTrace*>> below, above;
    for (const auto& pass : passes)
      for (const auto& it : pass) (it.sum_us() <= label_us ? below : above).emplace_back(it.sum_us(), &it);
    std::sort(below.begin(), below.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::sort(above.begin(), above.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    const std::size_t m = std::max<std::size_t>(1, (samples + 5) / 6);
    below.resize(std::min(m, below.size()));
    above.resize(std::min(m, above.size()));
    // Mean distance of a group's periods from the label: each term is exact and ≥ 0 (> 0 above), so the weights
    // below lie in [0, 1] even where periods tie with the label to the last bit. Means of the periods themselves
    // could round across the label (four copies of L averaging one ulp above it), giving a weight of NaN or 2 and
    // per-op labels outside every sample, while their sum still matched. Running means: no overflow.
    auto mean_distance = [label_us](const auto& v) {
      double mean = 0, k = 0;
      for (const auto& e : v) mean += (std::abs(e.first - label_us) - mean) / ++k;
      return mean;
    };
    const double db = mean_distance(below), da = mean_distance(above);
    // weight of the lower group: alpha·(label − db) + (1 − alpha)·(label + da) = label; one-sided when the other
    // group is empty, or when every bracketing period is the label itself
    const double alpha = above.empty() ? 1.0 : below.empty() ? 0.0 : da + db > 0 ? da / (da + db) : 1.0;
    for (const auto& e : below) bracket.emplace_back(e.second, alpha / static_cast<double>(below.size()));
    for (const auto& e : above) bracket.emplace_back(e.second, (1 - alpha) / static_cast<double>(above.size()));
  }

  ExecutionTrace out;
  out.meta = ref.meta;
  out.iteration = 0;
  out.start_us = 0;
  out.ops = ref.ops;
  const bool pooled = options_.op_statistic == OpStatistic::Pooled;
  std::vector<double> times(samples), gaps(samples), pass_t, pass_g, it_t, it_g;
  double cursor = 0;
  for (std::size_t j = 0; j < out.ops.size(); ++j) {
    double t_label = 0, g_label = 0;
    if (!bracket.empty()) {
      for (const auto& [it, w] : bracket) {
        t_label += w * it->ops[j].time_us;
        g_label += w * it->ops[j].gap_us;
      }
    } else if (pooled) {
      std::size_t s = 0;
      for (const auto& pass : passes)
        for (const auto& it : pass) {
          times[s] = it.ops[j].time_us;
          gaps[s] = it.ops[j].gap_us;
          ++s;
        }
      t_label = median(times);
      g_label = median(gaps);
    } else {
      pass_t.clear();
      pass_g.clear();
      for (const auto& pass : passes) {
        it_t.clear();
        it_g.clear();
        for (const auto& it : pass) {
          it_t.push_back(it.ops[j].time_us);
          it_g.push_back(it.ops[j].gap_us);
        }
        pass_t.push_back(median(it_t));
        pass_g.push_back(median(it_g));
      }
      t_label = median(pass_t);
      g_label = median(pass_g);
    }
    OpRecord& op = out.ops[j];
    op.time_us = to_ns(t_label);
    op.gap_us = to_ns(g_label);
    op.start_us = to_ns(cursor);
    cursor += op.time_us + op.gap_us;
  }
  out.measured_us = to_ns(label_us);

  const auto [mn, mx] = std::minmax_element(r.pass_median_us.begin(), r.pass_median_us.end());
  // The flag and every reader of the stored value (ets eval's buckets, card.py) see the same number: the one
  // written to label.disagreement, to 5 decimals. Flagging the unrounded value let them part within 5e-6 of a cut.
  r.disagreement = std::round((*mx / *mn - 1.0) * 1e5) / 1e5;
  // The threshold is stored to 5 decimals too: the flag must agree with the two numbers written beside it.
  const double threshold = std::round(options_.disagreement_threshold * 1e5) / 1e5;
  r.disagrees = r.disagreement > threshold;
  r.sum_discrepancy = (out.sum_us() - out.measured_us) / out.measured_us;
  double dev = 0;
  for (double m : r.pass_median_us) dev += std::abs(m - out.measured_us) / out.measured_us;
  r.single_pass_deviation = dev / static_cast<double>(r.pass_median_us.size());

  std::vector<double> iters(r.iterations.begin(), r.iterations.end());
  auto& x = out.meta.extra;
  // Relabelling labelled files: the template's label.* entries describe its own label, not this one (a pooled
  // label of bracket-labelled passes kept their label.bracket_iterations).
  for (auto e = x.begin(); e != x.end();) e = e->first.rfind("label.", 0) == 0 ? x.erase(e) : std::next(e);
  x["label.method"] = !bracket.empty()
                         ? "op: weighted mean of time and of gap over the iterations bracketing the label (m nearest "
                           "below, m nearest above, m = ceil(samples/6)), summing to it; measured: median of pass "
                           "median periods"
                     : pooled ? "op: median over passes x iterations of time and of gap; measured: median of pass "
                                "median periods"
                              : "op: median over passes of pass medians of time and of gap; measured: median of pass "
                                "median periods";
  if (!bracket.empty()) x["label.bracket_iterations"] = std::to_string(bracket.size());
  x["label.passes"] = std::to_string(passes.size());
  x["label.iterations"] = join(iters, 0);
  x["label.pass_median_us"] = join(r.pass_median_us, 3);
  x["label.disagreement"] = fmt::format("{:.5f}", r.disagreement);
  x["label.disagreement_threshold"] = fmt::format("{:.5f}", threshold);
  x["label.disagrees"] = r.disagrees ? "1" : "0";
  x["label.sum_discrepancy"] = fmt::format("{:.5f}", r.sum_discrepancy);
  x["label.single_pass_deviation"] = fmt::format("{:.5f}", r.single_pass_deviation);

  // Each op's time and gap are rounded to 1 ns: where that alone can move the sum this far, say so, since the
  // samples themselves then agree and only a trace with longer ops can be labelled.
  const double rounding_us = 0.001 * static_cast<double>(out.ops.size()) + 0.0005;  // and the label's own
  ETS_CHECK(std::abs(r.sum_discrepancy) <= options_.sum_tolerance, Errc::invalid_trace, "ets.label.4",
            "sum of per-op labels {:.3f} us is {:+.2f}% off the iteration label {:.3f} us (tolerance {:.1f}%){}",
            out.sum_us(), 100 * r.sum_discrepancy, out.measured_us, 100 * options_.sum_tolerance,
            std::abs(out.sum_us() - out.measured_us) <= rounding_us
                ? fmt::format("; labels are stored to 1 ns, and rounding the {} ops' times and gaps to it can "
                              "move their sum by up to {:.3f} us",
                              out.ops.size(), rounding_us)
                : std::string());
  r.trace = std::move(out);
  return r;
}

}  // namespace ets
