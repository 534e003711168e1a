// Aggregator: labels fed back as predictions reproduce the trace, padding never changes the result, overlapping
// windows are averaged in µs, the closest-centre ablation, the disagreement interval, and input validation.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "encoder_fixtures.hpp"
#include "test_support.hpp"
#include "ets/aggregator.hpp"
#include "ets/error.hpp"
#include "ets/window_encoder.hpp"

namespace {

using ets_test::make_op;

using ets_test::error_id;

const ets::FeatureSpec& spec() { return ets_test::fitted_spec(); }

void same_prediction(const ets::Prediction& a, const ets::Prediction& b) {
  CHECK(a.iteration_us == b.iteration_us);
  CHECK(a.lo_us == b.lo_us);
  CHECK(a.hi_us == b.hi_us);
  CHECK(a.forward_us == b.forward_us);
  CHECK(a.backward_us == b.backward_us);
  CHECK(a.update_us == b.update_us);
  CHECK(a.unknown_ops == b.unknown_ops);
  REQUIRE(a.ops.size() == b.ops.size());
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    CHECK(a.ops[i].time_us == b.ops[i].time_us);
    CHECK(a.ops[i].gap_us == b.ops[i].gap_us);
    CHECK(a.ops[i].lo_us == b.ops[i].lo_us);
    CHECK(a.ops[i].hi_us == b.ops[i].hi_us);
    CHECK(a.ops[i].windows == b.ops[i].windows);
  }
}

}  // namespace

TEST_CASE("labels fed back as predictions reproduce the trace, its phases and a zero-width interval") {
  for (const auto& [len, width, stride] : std::vector<std::tuple<int, int, int>>{
           {5, 12, 4}, {12, 12, 4}, {37, 12, 4}, {100, 12, 4}, {50, 7, 3}, {9, 1, 1}}) {
    INFO("length " << len << " width " << width << " stride " << stride);
    const auto trace = ets_test::synthetic_trace(static_cast<std::size_t>(len), 21);
    const ets::WindowEncoder enc(spec(), width, stride);
    const auto b = enc.encode(trace);
    for (bool average : {true, false}) {
      ets::Aggregator::Options o;
      o.overlap_average = average;
      const auto p = ets::Aggregator(spec(), o).aggregate(b, b.y);
      CHECK(p.op_count == len);
      REQUIRE(p.ops.size() == static_cast<std::size_t>(len));
      double fwd = 0, bwd = 0, upd = 0;
      for (std::size_t i = 0; i < trace.ops.size(); ++i) {
        const auto& op = trace.ops[i];
        CHECK(p.ops[i].time_us == Approx(op.time_us).epsilon(1e-5));
        CHECK(p.ops[i].gap_us == Approx(op.gap_us).epsilon(1e-5));
        CHECK(p.ops[i].phase == op.phase);
        (op.phase == ets::Phase::Forward ? fwd : op.phase == ets::Phase::Backward ? bwd : upd) += op.time_us + op.gap_us;
      }
      CHECK(p.iteration_us == Approx(trace.sum_us()).epsilon(1e-5));
      CHECK(p.forward_us == Approx(fwd).epsilon(1e-5));
      CHECK(p.backward_us == Approx(bwd).epsilon(1e-5));
      CHECK(p.update_us == Approx(upd).margin(1e-9).epsilon(1e-5));
      CHECK(p.forward_us + p.backward_us + p.update_us == Approx(p.iteration_us));
      CHECK(p.time_us + p.gap_us == Approx(p.iteration_us));
      // Every window predicts the same value for an op: no disagreement, no width.
      CHECK(p.lo_us == p.iteration_us);
      CHECK(p.hi_us == p.iteration_us);
      CHECK(p.unknown_ops == 0);
    }
  }
}

TEST_CASE("padding never changes the aggregated result (random predictions, garbage in padding)") {
  std::mt19937 rng(1234);
  std::normal_distribution<float> z(0.f, 1.f);
  std::uniform_int_distribution<int> len_d(1, 80), width_d(1, 16);
  const float garbage[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(), 1e30f,
                           -1e30f, 7.f};
  for (int round = 0; round < 60; ++round) {
    const int len = len_d(rng), width = width_d(rng);
    const int stride = std::uniform_int_distribution<int>(1, width)(rng);
    INFO("round " << round << ": length " << len << " width " << width << " stride " << stride);
    const auto trace = ets_test::synthetic_trace(static_cast<std::size_t>(len), static_cast<std::uint32_t>(round));
    const ets::WindowEncoder enc(spec(), width, stride);
    auto b = enc.encode(trace);
    std::vector<float> pred(b.positions() * 2, 0.f);
    for (std::size_t p = 0; p < b.positions(); ++p)
      if (b.mask[p]) {
        pred[2 * p] = z(rng);
        pred[2 * p + 1] = z(rng);
      }
    auto dirty_pred = pred;
    auto dirty = b;
    const std::size_t f = static_cast<std::size_t>(b.features);
    for (std::size_t p = 0; p < b.positions(); ++p)
      if (!b.mask[p]) {
        const float g = garbage[std::uniform_int_distribution<int>(0, 4)(rng)];
        dirty_pred[2 * p] = g;
        dirty_pred[2 * p + 1] = z(rng) * 100.f;
        for (std::size_t c = 0; c < f; ++c) dirty.x[p * f + c] = z(rng);
        dirty.op_index[p] = std::uniform_int_distribution<int>(-5, 5)(rng);
      }
    for (bool average : {true, false}) {
      ets::Aggregator::Options o;
      o.overlap_average = average;
      const ets::Aggregator agg(spec(), o);
      same_prediction(agg.aggregate(b, pred), agg.aggregate(dirty, dirty_pred));
    }
  }
}

TEST_CASE("overlapping windows are averaged in microseconds; closest-centre ablation; disagreement interval") {
  ets::ExecutionTrace t;
  t.ops = {make_op("op0"), make_op("op1"), make_op("op2", ets::Phase::Backward)};
  const ets::WindowEncoder enc(spec(), 2, 1);  // windows {0,1} and {1,2}: op1 is seen twice
  const auto b = enc.encode(t);
  REQUIRE(b.windows == 2);
  const float zero_gap = -1e3f;  // denormalises to exactly 0 µs
  auto zt = [](double us) { return static_cast<float>(spec().normalize_time(us)); };
  const std::vector<float> pred = {zt(10), zero_gap, zt(20), zero_gap,   // window 0: op0, op1
                                   zt(40), zero_gap, zt(30), zero_gap};  // window 1: op1, op2
  const auto avg = ets::Aggregator(spec()).aggregate(b, pred);
  REQUIRE(avg.ops.size() == 3);
  CHECK(avg.ops[1].time_us == Approx(30.0).epsilon(1e-5));  // (20 + 40) / 2, not the log-space mean √800
  CHECK(avg.ops[1].windows == 2);
  CHECK(avg.ops[1].lo_us == Approx(20.0).epsilon(1e-5));
  CHECK(avg.ops[1].hi_us == Approx(40.0).epsilon(1e-5));
  CHECK(avg.ops[0].gap_us == 0.0);
  CHECK(avg.iteration_us == Approx(70.0).epsilon(1e-5));
  CHECK(avg.forward_us == Approx(40.0).epsilon(1e-5));
  CHECK(avg.backward_us == Approx(30.0).epsilon(1e-5));
  // Relative deviations −1/3 and +1/3 (weight 15 each) against 0 (weight 10 + 30): the 10 % / 90 % weighted
  // quantiles are ∓1/3, applied to the whole iteration.
  CHECK(avg.lo_us == Approx(70.0 * 2 / 3).epsilon(1e-5));
  CHECK(avg.hi_us == Approx(70.0 * 4 / 3).epsilon(1e-5));
  ets::Aggregator::Options quartiles;
  quartiles.interval_lo = 0.25;
  quartiles.interval_hi = 0.75;
  const auto q = ets::Aggregator(spec(), quartiles).aggregate(b, pred);
  CHECK(q.lo_us == q.iteration_us);  // 57 % of the weight does not disagree at all
  CHECK(q.hi_us == q.iteration_us);

  ets::Aggregator::Options closest;
  closest.overlap_average = false;
  const auto c = ets::Aggregator(spec(), closest).aggregate(b, pred);
  // op1 sits at distance 0.5 from both window centres: the earlier window wins.
  CHECK(c.ops[1].time_us == Approx(20.0).epsilon(1e-5));
  CHECK(c.iteration_us == Approx(60.0).epsilon(1e-5));
  CHECK(c.lo_us <= c.iteration_us);
  CHECK(c.hi_us >= c.iteration_us);
}

TEST_CASE("closest-centre mode takes each op from the window where it sits nearest the centre") {
  const auto trace = ets_test::synthetic_trace(61, 8);
  const ets::WindowEncoder enc(spec(), 12, 4);
  const auto b = enc.encode(trace);
  std::mt19937 rng(5);
  std::normal_distribution<float> z(0.f, 1.f);
  std::vector<float> pred(b.positions() * 2);
  for (auto& v : pred) v = z(rng);
  ets::Aggregator::Options o;
  o.overlap_average = false;
  const auto p = ets::Aggregator(spec(), o).aggregate(b, pred);
  for (int i = 0; i < 61; ++i) {
    double best = 1e9;
    std::size_t pick = 0;
    for (std::size_t pos = 0; pos < b.positions(); ++pos) {  // window order, so ties keep the earlier one
      if (!b.mask[pos] || b.op_index[pos] != i) continue;
      const double d = std::abs(static_cast<double>(pos % 12) - 5.5);
      if (d < best) {
        best = d;
        pick = pos;
      }
    }
    INFO("op " << i);
    CHECK(p.ops[static_cast<std::size_t>(i)].time_us == spec().denormalize_time(pred[2 * pick]));
    CHECK(p.ops[static_cast<std::size_t>(i)].gap_us == spec().denormalize_gap(pred[2 * pick + 1]));
  }
}

TEST_CASE("unknown ops are counted and several traces aggregate separately") {
  auto a = ets_test::synthetic_trace(30, 2);
  a.ops[3].name = "brand_new_op";
  a.ops[17].name = "another_new_op";
  a.ops[18].name = "brand_new_op";
  const auto c = ets_test::synthetic_trace(9, 6);
  const std::vector<ets::ExecutionTrace> traces = {a, ets::ExecutionTrace{}, c, ets::ExecutionTrace{}};
  const ets::WindowEncoder enc(spec());
  ets::EncodeStats st;
  const auto b = enc.encode(traces, &st);
  CHECK(st.unknown_ops == 3);
  const ets::Aggregator agg(spec());
  const auto all = agg.aggregate_all(b, b.y, 4);
  REQUIRE(all.size() == 4);
  CHECK(all[0].unknown_ops == 3);
  CHECK(all[0].ops[17].unknown);
  CHECK_FALSE(all[0].ops[16].unknown);
  CHECK(all[0].iteration_us == Approx(a.sum_us()).epsilon(1e-5));
  CHECK(all[1].op_count == 0);
  CHECK(all[1].iteration_us == 0.0);
  CHECK(all[2].iteration_us == Approx(c.sum_us()).epsilon(1e-5));
  CHECK(all[2].unknown_ops == 0);
  CHECK(all[3].op_count == 0);
  CHECK(agg.aggregate_all(b, b.y).size() == 3);  // inferred: 1 + largest trace index
  CHECK(error_id([&] { agg.aggregate(b, b.y); }) == "ets.aggregate.7");
  const auto empty = enc.encode(ets::ExecutionTrace{});
  CHECK(agg.aggregate(empty, std::vector<float>{}).iteration_us == 0.0);
}

TEST_CASE("inconsistent batches and predictions are rejected") {
  const auto trace = ets_test::synthetic_trace(20, 9);
  const ets::WindowEncoder enc(spec());
  const auto b = enc.encode(trace);
  const ets::Aggregator agg(spec());
  auto pred = b.y;
  CHECK(error_id([&] { agg.aggregate(b, std::vector<float>(pred.begin(), pred.end() - 1)); }) == "ets.aggregate.2");
  CHECK(error_id([&] { agg.aggregate(b, nullptr, pred.size()); }) == "ets.aggregate.2");
  auto nan_pred = pred;
  nan_pred[6] = std::numeric_limits<float>::quiet_NaN();
  CHECK(error_id([&] { agg.aggregate(b, nan_pred); }) == "ets.aggregate.3");
  nan_pred[6] = 1e30f;  // denormalises to infinity
  CHECK(error_id([&] { agg.aggregate(b, nan_pred); }) == "ets.aggregate.3");
  // Finite channels whose sums overflow: time + gap at one position, or the ops' sum over a trace. Either is an
  // error, never an infinite prediction.
  const auto z_of = [&](int channel, double us) {
    const auto& m = spec().label_moments(channel);
    return static_cast<float>((std::log1p(us) - m.mean) / m.stdev);
  };
  auto huge = pred;
  for (std::size_t i = 0; i < b.positions(); ++i) {
    huge[2 * i] = z_of(0, 1.5e308);
    huge[2 * i + 1] = z_of(1, 1.5e308);
  }
  REQUIRE(std::isfinite(spec().denormalize_label(0, huge[0])));
  CHECK(error_id([&] { agg.aggregate(b, huge); }) == "ets.aggregate.3");
  for (std::size_t i = 0; i < b.positions(); ++i) {
    huge[2 * i] = z_of(0, 8e307);
    huge[2 * i + 1] = z_of(1, 8e307);
  }
  REQUIRE(std::isfinite(spec().denormalize_label(0, huge[0]) + spec().denormalize_label(1, huge[1])));
  CHECK(error_id([&] { agg.aggregate(b, huge); }) == "ets.aggregate.3");
  auto shape = b;
  shape.features -= 1;
  CHECK(error_id([&] { agg.aggregate(shape, pred); }) == "ets.aggregate.1");
  shape = b;
  shape.mask.pop_back();
  CHECK(error_id([&] { agg.aggregate(shape, pred); }) == "ets.aggregate.1");
  auto idx = b;
  idx.op_index[2] = -1;
  CHECK(error_id([&] { agg.aggregate(idx, pred); }) == "ets.aggregate.4");
  idx = b;
  idx.trace_index[0] = -2;
  CHECK(error_id([&] { agg.aggregate_all(idx, pred); }) == "ets.aggregate.4");
  auto hole = b;
  hole.mask[0] = 0;  // op 0 is only in window 0
  CHECK(error_id([&] { agg.aggregate(hole, pred); }) == "ets.aggregate.5");
  // an op index far beyond the batch: refused before anything is sized by it (2^31 − 1 ops would need ~200 GB)
  auto far = b;
  far.op_index.back() = std::numeric_limits<std::int32_t>::max();
  CHECK(error_id([&] { agg.aggregate(far, pred); }) == "ets.aggregate.5");
  // a trace index far beyond the batch: aggregate() of one trace costs what the batch costs, whatever the index
  // (it built 1 + index predictions: 20,000,000 took 3 GB), and 2^31 − 1 is no longer an int overflow (1 + it)
  const ets::Prediction want = agg.aggregate(b, pred);
  for (const std::int32_t index : {20000000, std::numeric_limits<std::int32_t>::max()}) {
    auto renamed = b;
    for (auto& t : renamed.trace_index) t = index;
    same_prediction(agg.aggregate(renamed, pred), want);
  }
  idx = b;
  idx.trace_index[0] = -2;  // negative: as before, whether every window says it or not
  CHECK(error_id([&] { agg.aggregate(idx, pred); }) == "ets.aggregate.7");
  for (auto& t : idx.trace_index) t = -2;
  CHECK(error_id([&] { agg.aggregate(idx, pred); }) == "ets.aggregate.4");
  idx = b;
  for (auto& t : idx.trace_index) t = std::numeric_limits<std::int32_t>::max();
  CHECK(error_id([&] { agg.aggregate_all(idx, pred); }) == "ets.aggregate.4");  // 2^31 predictions: not an int
  ets::Aggregator::Options bad;
  bad.interval_lo = 0.9;
  bad.interval_hi = 0.1;
  CHECK(error_id([&] { ets::Aggregator(spec(), bad); }) == "ets.aggregate.6");
  CHECK(error_id([&] { ets::Aggregator(ets::FeatureSpec{}); }) == "ets.aggregate.8");
}

TEST_CASE("a moved-from encoder or aggregator refuses to work instead of reading emptied tables") {
  const ets::FeatureSpec& spec = ets_test::fitted_spec();
  const auto trace = ets_test::synthetic_trace(40, 11);
  ets::WindowEncoder enc(spec);
  ets::WindowEncoder enc2(std::move(enc));
  const ets::WindowBatch batch = enc2.encode(trace);  // the moved-to one works
  CHECK(batch.windows > 0);
  CHECK(ets_test::error_id([&] { (void)enc.encode(trace); }) == "ets.encoder.9");  // it used to segfault

  ets::FeatureSpec spec_copy = spec;
  ets::WindowEncoder takes(std::move(spec_copy));
  CHECK(ets_test::error_id([&] { ets::WindowEncoder again(spec_copy); }) == "ets.encoder.9");

  const std::vector<float> pred(batch.positions() * 2, 0.f);
  ets::Aggregator agg(spec);
  ets::Aggregator agg2(std::move(agg));
  CHECK(std::isfinite(agg2.aggregate(batch, pred).iteration_us));
  CHECK(ets_test::error_id([&] { (void)agg.aggregate(batch, pred); }) == "ets.aggregate.8");
}

TEST_CASE("sums that overflow are ets.aggregate.3 in both modes, naming the trace by its batch index") {
  // Width-1 windows, each holding one op of one trace (features copied from real encoded rows).
  const auto batch_of = [](const std::vector<int>& ops, int trace) {
    ets::ExecutionTrace t;
    t.ops = {make_op(spec().type_name(0)), make_op(spec().type_name(1))};
    const ets::WindowBatch enc = ets::WindowEncoder(spec(), 1, 1).encode(t);
    ets::WindowBatch b;
    b.windows = static_cast<int>(ops.size());
    b.width = 1;
    b.features = spec().feature_count();
    const auto f = static_cast<std::ptrdiff_t>(b.features);
    for (int op : ops) {
      b.x.insert(b.x.end(), enc.x.begin() + op * f, enc.x.begin() + (op + 1) * f);
      b.mask.push_back(1);
      b.op_index.push_back(op);
      b.trace_index.push_back(trace);
    }
    return b;
  };
  const auto z = [](double us) { return static_cast<float>(spec().normalize_time(us)); };
  const float zero = -1000.f;  // denormalises to 0 µs
  // two finite windows of ~1e308 µs for one op: the closest-centre mode returned the interval [0, 1e308]
  const ets::WindowBatch two = batch_of({0, 0}, 0);
  const std::vector<float> huge = {z(1.0e308), zero, z(0.9e308), zero};
  for (bool average : {true, false}) {
    INFO("overlap_average " << average);
    ets::Aggregator::Options o;
    o.overlap_average = average;
    CHECK(error_id([&] { ets::Aggregator(spec(), o).aggregate(two, huge); }) == "ets.aggregate.3");
  }
  // an overflowing interval names the trace as every other message does: by its index in the batch (5), not 0
  const ets::WindowBatch four = batch_of({0, 1, 1, 1}, 5);
  const std::vector<float> skewed = {z(1e307), zero, zero, zero, zero, zero, z(1.6e308), zero};
  try {
    ets::Aggregator(spec()).aggregate(four, skewed);
    FAIL("an overflowing interval must be refused");
  } catch (const ets::Error& e) {
    CHECK(e.id() == "ets.aggregate.3");
    CHECK(std::string(e.what()).find("trace 5") != std::string::npos);
  }
}
