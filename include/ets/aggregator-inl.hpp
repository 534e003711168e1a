// Definitions for aggregator.hpp: merge overlapping window predictions per op (in µs) and derive an
// interval from how much the overlapping windows disagree.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

#include "ets/aggregator.hpp"
#include "ets/error.hpp"

namespace ets {

ETS_INLINE Aggregator::Aggregator(FeatureSpec spec) : Aggregator(std::move(spec), Options{}) {}

ETS_INLINE Aggregator::Aggregator(FeatureSpec spec, Options options)
    : spec_(std::move(spec)), options_(options) {
  ETS_CHECK(spec_.fitted(), Errc::invalid_argument, "ets.aggregate.8", "FeatureSpec is not fitted");
  ETS_CHECK(options_.interval_lo >= 0.0 && options_.interval_lo <= options_.interval_hi &&
                options_.interval_hi <= 1.0,
            Errc::invalid_argument, "ets.aggregate.6",
            "interval quantiles must satisfy 0 <= lo <= hi <= 1, got {} and {}", options_.interval_lo,
            options_.interval_hi);
}

ETS_INLINE Prediction Aggregator::aggregate(const WindowBatch& batch, const float* pred, std::size_t count) const {
  const std::size_t n = batch.trace_index.size();
  for (std::size_t i = 1; i < n; ++i)
    ETS_CHECK(batch.trace_index[i] == batch.trace_index[0], Errc::invalid_argument, "ets.aggregate.7",
              "batch holds several traces ({} and {}); use aggregate_all", batch.trace_index[0],
              batch.trace_index[i]);
  ETS_CHECK(n == 0 || batch.trace_index[0] >= 0, Errc::invalid_argument, "ets.aggregate.4",
            "window 0 refers to trace {}, a negative index", n == 0 ? 0 : batch.trace_index[0]);
  auto one = aggregate_range(batch, pred, count, n == 0 ? 0 : batch.trace_index[0], n == 0 ? 0 : 1);
  return one.empty() ? Prediction{} : std::move(one.front());
}

ETS_INLINE std::vector<Prediction> Aggregator::aggregate_all(const WindowBatch& batch, const float* pred,
                                                             std::size_t count, int traces) const {
  if (traces < 0) {
    // 1 + the largest index, in 64 bits: INT32_MAX + 1 overflowed an int (undefined behaviour)
    std::int64_t largest = -1;
    for (auto t : batch.trace_index) largest = std::max<std::int64_t>(largest, t);
    ETS_CHECK(largest < std::numeric_limits<int>::max(), Errc::invalid_argument, "ets.aggregate.4",
              "a window refers to trace {}: 1 + that is more traces than an int counts", largest);
    traces = static_cast<int>(largest + 1);
  }
  return aggregate_range(batch, pred, count, 0, traces);
}

ETS_INLINE std::vector<Prediction> Aggregator::aggregate_range(const WindowBatch& batch, const float* pred,
                                                               std::size_t count, std::int64_t first,
                                                               int traces) const {
  ETS_CHECK(spec_.fitted(), Errc::invalid_argument, "ets.aggregate.8",
            "FeatureSpec is not fitted (a moved-from Aggregator?)");
  const int nwin = batch.windows, width = batch.width;
  ETS_CHECK(nwin >= 0 && (nwin == 0 || width >= 1) && batch.features == spec_.feature_count(), Errc::shape,
            "ets.aggregate.1", "batch shape {} × {} × {} does not match the feature spec ({} features)", nwin,
            width, batch.features, spec_.feature_count());
  const std::size_t positions = nwin == 0 ? 0 : batch.positions();
  const std::size_t f = static_cast<std::size_t>(batch.features);
  ETS_CHECK(batch.x.size() == positions * f && batch.mask.size() == positions &&
                batch.op_index.size() == positions && batch.trace_index.size() == static_cast<std::size_t>(nwin),
            Errc::shape, "ets.aggregate.1",
            "batch arrays are inconsistent (x {}, mask {}, op_index {}, trace_index {} for {} windows)",
            batch.x.size(), batch.mask.size(), batch.op_index.size(), batch.trace_index.size(), nwin);
  ETS_CHECK(count == positions * 2 && (pred != nullptr || count == 0), Errc::shape, "ets.aggregate.2",
            "predictions hold {} values, expected windows × width × 2 = {}", count, positions * 2);

  // Ops per trace: 1 + the largest op index any window of that trace holds.
  const int ntr = std::max(traces, 0);
  // Each window's trace, counted from `first`; checked here, used below.
  const auto trace_of = [&](int k) {
    return static_cast<std::size_t>(static_cast<std::int64_t>(batch.trace_index[static_cast<std::size_t>(k)]) - first);
  };
  std::vector<std::int64_t> ops(static_cast<std::size_t>(ntr), 0), real(static_cast<std::size_t>(ntr), 0);
  for (int k = 0; k < nwin; ++k) {
    const std::int64_t t = static_cast<std::int64_t>(batch.trace_index[static_cast<std::size_t>(k)]) - first;
    ETS_CHECK(t >= 0 && t < ntr, Errc::invalid_argument, "ets.aggregate.4",
              "window {} refers to trace {}, outside [{}, {})", k, batch.trace_index[static_cast<std::size_t>(k)],
              first, first + ntr);
    for (int p = 0; p < width; ++p) {
      const std::size_t pos = static_cast<std::size_t>(k) * static_cast<std::size_t>(width) + static_cast<std::size_t>(p);
      if (!batch.mask[pos]) continue;
      const std::int32_t i = batch.op_index[pos];
      ETS_CHECK(i >= 0, Errc::invalid_argument, "ets.aggregate.4",
                "window {} position {} is marked real but has op index {}", k, p, i);
      auto& m = ops[static_cast<std::size_t>(t)];
      m = std::max<std::int64_t>(m, static_cast<std::int64_t>(i) + 1);
      ++real[static_cast<std::size_t>(t)];
    }
  }
  // Each op needs a real position of its own, so more ops than real positions leaves some uncovered. Checked
  // before the per-op arrays are sized by the largest index, which a hostile batch could set to 2^31.
  for (int t = 0; t < ntr; ++t)
    ETS_CHECK(ops[static_cast<std::size_t>(t)] <= real[static_cast<std::size_t>(t)], Errc::invalid_argument,
              "ets.aggregate.5", "trace {} has op indices up to {} but only {} real positions: some op is covered by no window",
              first + t, ops[static_cast<std::size_t>(t)] - 1, real[static_cast<std::size_t>(t)]);
  std::vector<std::size_t> base(static_cast<std::size_t>(ntr) + 1, 0);
  for (int t = 0; t < ntr; ++t)
    base[static_cast<std::size_t>(t) + 1] = base[static_cast<std::size_t>(t)] + static_cast<std::size_t>(ops[static_cast<std::size_t>(t)]);
  const std::size_t total_ops = base.back();

  struct Acc {
    double sum_t = 0, sum_g = 0, lo = 0, hi = 0, pick_t = 0, pick_g = 0;
    int count = 0, pick_dist = 0;
  };
  std::vector<Acc> acc(total_ops);
  std::vector<Prediction::Op> out_ops(total_ops);
  std::vector<double> value(positions, 0.0);  // (time + gap) µs of each real position, for the interval
  const auto& lay = spec_.layout();

  for (int k = 0; k < nwin; ++k) {
    const std::size_t t = trace_of(k);
    for (int p = 0; p < width; ++p) {
      const std::size_t pos = static_cast<std::size_t>(k) * static_cast<std::size_t>(width) + static_cast<std::size_t>(p);
      if (!batch.mask[pos]) continue;
      const std::size_t op = base[t] + static_cast<std::size_t>(batch.op_index[pos]);
      const float zt = pred[2 * pos], zg = pred[2 * pos + 1];
      const double vt = std::isfinite(zt) ? spec_.denormalize_label(0, static_cast<double>(zt)) : kUnknown;
      const double vg = std::isfinite(zg) ? spec_.denormalize_label(1, static_cast<double>(zg)) : kUnknown;
      ETS_CHECK(std::isfinite(vt) && std::isfinite(vg) && std::isfinite(vt + vg), Errc::invalid_argument,
                "ets.aggregate.3", "prediction at window {} position {} is not usable ({}, {} normalised)", k, p, zt,
                zg);
      value[pos] = vt + vg;
      Acc& a = acc[op];
      // Distance from the window centre, doubled to stay integral for even widths.
      const int dist = std::abs(2 * p - (width - 1));
      if (a.count == 0) {
        a.lo = a.hi = vt + vg;
        a.pick_dist = dist;
        a.pick_t = vt;
        a.pick_g = vg;
        const float* row = batch.x.data() + pos * f;
        Prediction::Op& o = out_ops[op];
        for (int ph = 0; ph < kPhaseCount; ++ph)
          if (row[lay.phase + ph] != 0.f) o.phase = static_cast<Phase>(ph);
        o.unknown = row[lay.other] != 0.f && row[lay.freq] == 0.f && row[lay.freq + 1] == 0.f;
      } else {
        a.lo = std::min(a.lo, vt + vg);
        a.hi = std::max(a.hi, vt + vg);
        if (dist < a.pick_dist) {  // ties keep the earlier window
          a.pick_dist = dist;
          a.pick_t = vt;
          a.pick_g = vg;
        }
      }
      a.sum_t += vt;
      a.sum_g += vg;
      ++a.count;
    }
  }

  std::vector<Prediction> result(static_cast<std::size_t>(ntr));
  for (std::size_t t = 0; t < result.size(); ++t) {
    Prediction& pr = result[t];
    pr.op_count = ops[t];
    pr.ops.assign(out_ops.begin() + static_cast<std::ptrdiff_t>(base[t]),
                  out_ops.begin() + static_cast<std::ptrdiff_t>(base[t + 1]));
    for (std::size_t i = 0; i < pr.ops.size(); ++i) {
      const Acc& a = acc[base[t] + i];
      ETS_CHECK(a.count > 0, Errc::invalid_argument, "ets.aggregate.5",
                "op {} of trace {} is covered by no window", i, first + static_cast<std::int64_t>(t));
      Prediction::Op& o = pr.ops[i];
      // Closest-centre mode sums its windows too (for the interval): what overflows there is what the average
      // would overflow on, and the same error.
      ETS_CHECK(std::isfinite(a.sum_t + a.sum_g), Errc::invalid_argument, "ets.aggregate.3",
                "the predictions of op {} of trace {} overflow when summed over its windows", i,
                first + static_cast<std::int64_t>(t));
      o.windows = a.count;
      o.lo_us = a.lo;
      o.hi_us = a.hi;
      if (options_.overlap_average) {
        o.time_us = a.sum_t / a.count;
        o.gap_us = a.sum_g / a.count;
      } else {
        o.time_us = a.pick_t;
        o.gap_us = a.pick_g;
      }
      const double total = o.time_us + o.gap_us;
      pr.time_us += o.time_us;
      pr.gap_us += o.gap_us;
      (o.phase == Phase::Forward ? pr.forward_us : o.phase == Phase::Backward ? pr.backward_us : pr.update_us) += total;
      if (o.unknown) ++pr.unknown_ops;
    }
    pr.iteration_us = pr.time_us + pr.gap_us;
    // Each position is finite, yet sums of huge ones can overflow (what an ets::Error says, not an inf returned).
    ETS_CHECK(std::isfinite(pr.iteration_us) && std::isfinite(pr.forward_us) && std::isfinite(pr.backward_us) &&
                  std::isfinite(pr.update_us),
              Errc::invalid_argument, "ets.aggregate.3", "the predictions of trace {} overflow when summed ({} µs)",
              first + static_cast<std::int64_t>(t), pr.iteration_us);
  }

  // Interval: weighted quantiles of each window's relative deviation from its op's mean, applied to the total
  // as a common relative shift (see docs/concepts.md for why comonotone rather than independent).
  std::vector<std::vector<std::pair<double, double>>> dev(result.size());
  for (std::size_t op_t = 0; op_t < result.size(); ++op_t) dev[op_t].reserve(static_cast<std::size_t>(ops[op_t]) * 3);
  for (int k = 0; k < nwin; ++k) {
    const std::size_t t = trace_of(k);
    for (int p = 0; p < width; ++p) {
      const std::size_t pos = static_cast<std::size_t>(k) * static_cast<std::size_t>(width) + static_cast<std::size_t>(p);
      if (!batch.mask[pos]) continue;
      const Acc& a = acc[base[t] + static_cast<std::size_t>(batch.op_index[pos])];
      const double mean = (a.sum_t + a.sum_g) / a.count;
      if (!(mean > 0.0)) continue;
      // Unanimous windows disagree by exactly 0, whatever the rounding of their mean.
      dev[t].emplace_back(a.lo == a.hi ? 0.0 : value[pos] / mean - 1.0, mean / a.count);
    }
  }
  for (std::size_t t = 0; t < result.size(); ++t) {
    Prediction& pr = result[t];
    auto& d = dev[t];
    double qlo = 0.0, qhi = 0.0;
    if (!d.empty()) {
      std::sort(d.begin(), d.end());
      double wsum = 0.0;
      for (const auto& e : d) wsum += e.second;
      auto quantile = [&](double q) {
        const double target = q * wsum;
        double cum = 0.0;
        for (const auto& e : d) {
          cum += e.second;
          if (cum >= target) return e.first;
        }
        return d.back().first;
      };
      qlo = quantile(options_.interval_lo);
      qhi = quantile(options_.interval_hi);
    }
    pr.lo_us = std::max(0.0, std::min(pr.iteration_us, pr.iteration_us * (1.0 + qlo)));
    pr.hi_us = std::max(pr.iteration_us, pr.iteration_us * (1.0 + qhi));
    ETS_CHECK(std::isfinite(pr.hi_us), Errc::invalid_argument, "ets.aggregate.3",
              "the interval of trace {} overflows ({} µs times {})", first + static_cast<std::int64_t>(t),
              pr.iteration_us, 1.0 + qhi);
  }
  return result;
}

}  // namespace ets
