// ets-test-labels: unit
// Baselines: opsum ignores gaps (so it underestimates by the gap share), perop_mlp learns time + gap per op,
// whole_trace regresses the iteration time; all are tuned on validation traces only.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "ets/baseline.hpp"
#include "ets/error.hpp"
#include "test_support.hpp"
#include "train/mlp.hpp"
#include "train_fixtures.hpp"

namespace {
double mre(const ets::Baseline& b, const std::vector<ets::ExecutionTrace>& ts) {
  double s = 0;
  for (const auto& t : ts) s += std::abs(b.predict(t) - t.measured_us) / t.measured_us;
  return s / static_cast<double>(ts.size());
}
}  // namespace

TEST_CASE("baselines learn what they can see", "[train][baseline]") {
  const auto train = ets_test::learnable_set(1, 60), val = ets_test::learnable_set(2, 15), test = ets_test::learnable_set(3, 15);
  const auto spec = ets::FeatureSpec::fit(train);
  ets::Baseline::Options o;
  o.epochs = 40;
  o.batch = 128;
  o.lr = 3e-3;
  auto opsum = ets::Baseline::fit(ets::Baseline::Kind::OpSum, spec, train, val, o);
  auto perop = ets::Baseline::fit(ets::Baseline::Kind::PerOpMlp, spec, train, val, o);
  auto whole = ets::Baseline::fit(ets::Baseline::Kind::WholeTrace, spec, train, val, o);
  CHECK(std::string(opsum.name()) == "opsum");
  double gap_share = 0;
  for (const auto& t : test) gap_share += t.gap_share();
  gap_share /= static_cast<double>(test.size());
  const double m_opsum = mre(opsum, test), m_perop = mre(perop, test), m_whole = mre(whole, test);
  INFO("opsum " << m_opsum << " perop_mlp " << m_perop << " whole_trace " << m_whole << " gap share " << gap_share);
  // opsum predicts Σ time only: its error is about the gap share, well above the per-op model's
  CHECK(m_opsum > 0.5 * gap_share);
  CHECK(m_perop < 0.5 * m_opsum);
  CHECK(m_perop < 0.15);
  CHECK(m_whole < 0.5);
  CHECK(perop.val_mre() >= 0);
  CHECK(whole.val_mre() >= 0);
  for (const auto& t : test) CHECK(std::isfinite(whole.predict(t)));
}

TEST_CASE("baseline names round-trip and bad input throws", "[train][baseline]") {
  for (auto k : ets::Baseline::all_kinds()) {
    ets::Baseline::Kind back{};
    REQUIRE(ets::Baseline::parse_kind(ets::Baseline::kind_name(k), back));
    CHECK(back == k);
  }
  ets::Baseline::Kind k{};
  CHECK_FALSE(ets::Baseline::parse_kind("habitat", k));
  const auto train = ets_test::learnable_set(1, 4);
  CHECK(ets_test::error_id([&] { ets::Baseline::fit(ets::Baseline::Kind::OpSum, ets::FeatureSpec{}, train, {}); }) ==
        "ets.train.15");  // an unfitted FeatureSpec
  // nothing to fit on: no training traces, or none with a time (no measurement and zero labels)
  const auto spec = ets::FeatureSpec::fit(train);
  auto unlabelled = train;
  for (auto& t : unlabelled) {
    t.measured_us = 0;
    for (auto& op : t.ops) op.time_us = op.gap_us = 0;
  }
  for (auto kind : ets::Baseline::all_kinds()) {
    INFO(ets::Baseline::kind_name(kind));
    CHECK(ets_test::error_id([&] { ets::Baseline::fit(kind, spec, {}, train); }) == "ets.train.16");
    CHECK(ets_test::error_id([&] { ets::Baseline::fit(kind, spec, unlabelled, train); }) == "ets.train.16");
  }
}

TEST_CASE("baseline options that would train nothing or train to NaN are refused", "[train][baseline]") {
  const auto train = ets_test::learnable_set(1, 4), val = ets_test::learnable_set(2, 2);
  const auto spec = ets::FeatureSpec::fit(train);
  using K = ets::Baseline::Kind;
  auto refused = [&](K kind, const ets::Baseline::Options& o) {
    try {
      (void)ets::Baseline::fit(kind, spec, train, val, o);
    } catch (const ets::Error& e) {
      return e.id() == "ets.train.13";
    }
    return false;
  };
  ets::Baseline::Options o;
  o.ridge_lambdas = {};  // it gave an intercept-only model (an Eigen size mismatch in a debug build)
  CHECK(refused(K::WholeTrace, o));
  o.ridge_lambdas = {1.0, -1.0};  // a negative strength predicted NaN
  CHECK(refused(K::WholeTrace, o));
  o.ridge_lambdas = {std::nan("")};
  CHECK(refused(K::WholeTrace, o));
  o = {};
  o.epochs = 2;
  for (auto set : std::vector<void (*)(ets::Baseline::Options&)>{
           [](ets::Baseline::Options& x) { x.epochs = 0; }, [](ets::Baseline::Options& x) { x.batch = 0; },
           [](ets::Baseline::Options& x) { x.lr = std::nan(""); }, [](ets::Baseline::Options& x) { x.lr = 0; },
           [](ets::Baseline::Options& x) { x.max_ops_per_epoch = 0; },
           [](ets::Baseline::Options& x) { x.patience = -1; }}) {
    ets::Baseline::Options bad = o;
    set(bad);
    CHECK(refused(K::OpSum, bad));
    CHECK(refused(K::PerOpMlp, bad));
    CHECK_FALSE(refused(K::WholeTrace, bad));  // options of the MLPs only: the ridge fit does not use them
  }
  CHECK_FALSE(refused(K::PerOpMlp, o));
}

TEST_CASE("a moved-from baseline still answers (shared, immutable fit)", "[train][baseline]") {
  const auto train = ets_test::learnable_set(1, 6), val = ets_test::learnable_set(2, 3);
  const auto spec = ets::FeatureSpec::fit(train);
  ets::Baseline::Options o;
  o.epochs = 2;
  ets::Baseline b = ets::Baseline::fit(ets::Baseline::Kind::PerOpMlp, spec, train, val, o);
  const double want = b.predict(val[0]);
  ets::Baseline moved(std::move(b));
  CHECK(moved.predict(val[0]) == want);
  // it used to hold a null pointer that kind(), name() and val_mre() (noexcept) dereferenced
  CHECK(b.kind() == ets::Baseline::Kind::PerOpMlp);
  CHECK(b.predict(val[0]) == want);
  CHECK(b.val_mre() == moved.val_mre());
}

TEST_CASE("validation traces without a measurement are left out, not fatal", "[train][baseline]") {
  const auto train = ets_test::learnable_set(1, 20), val = ets_test::learnable_set(2, 5);
  const auto spec = ets::FeatureSpec::fit(train);
  ets::Baseline::Options o;
  o.epochs = 3;
  auto with_unlabelled = val;
  ets::ExecutionTrace unlabelled = val.front();
  unlabelled.measured_us = ets::kUnknown;
  for (auto& op : unlabelled.ops) op.time_us = op.gap_us = 0;
  with_unlabelled.insert(with_unlabelled.begin() + 2, unlabelled);
  with_unlabelled.push_back(ets::ExecutionTrace{});  // no ops
  for (auto kind : ets::Baseline::all_kinds()) {
    INFO(ets::Baseline::kind_name(kind));
    const auto clean = ets::Baseline::fit(kind, spec, train, val, o);
    const auto mixed = ets::Baseline::fit(kind, spec, train, with_unlabelled, o);
    CHECK(mixed.val_mre() == clean.val_mre());  // the same traces chose the same model
    CHECK(mixed.predict(val[1]) == clean.predict(val[1]));
    // a validation set with no usable trace at all would leave the baseline silently untuned
    try {
      (void)ets::Baseline::fit(kind, spec, train, {unlabelled}, o);
      FAIL("no error for an all-unlabelled validation set");
    } catch (const ets::Error& e) {
      CHECK(e.id() == "ets.train.17");
    }
  }
}

TEST_CASE("whole_trace fitted on two traces stays finite far outside them", "[train][baseline]") {
  // Two training traces leave the ridge regression nearly free; a trace of far more ops used to give exp(huge) = inf.
  const auto train = ets_test::learnable_set(4, 2), val = ets_test::learnable_set(5, 2);
  const auto spec = ets::FeatureSpec::fit(train);
  auto whole = ets::Baseline::fit(ets::Baseline::Kind::WholeTrace, spec, train, val);
  double most = 0;
  for (const auto& t : train) most = std::max(most, t.measured_us);
  auto huge = ets_test::learnable_trace(6, 2000);
  for (auto& op : huge.ops) op.flops *= 1e12;
  const double p = whole.predict(huge);
  CHECK(std::isfinite(p));
  CHECK(p > 0);
  CHECK(p <= 1000.0 * most * (1 + 1e-9));
}

TEST_CASE("baselines stay finite and bounded for values far outside any training set", "[train][baseline]") {
  const auto train = ets_test::learnable_set(7, 30), val = ets_test::learnable_set(8, 8);
  const auto spec = ets::FeatureSpec::fit(train);
  ets::Baseline::Options o;
  o.epochs = 3;
  double most_op = 0, most_iteration = 0;
  for (const auto& t : train) {
    most_iteration = std::max(most_iteration, t.measured_us);
    for (const auto& op : t.ops) most_op = std::max({most_op, op.time_us, op.gap_us});
  }
  // finite FLOPs and bytes whose sum passes a double's range: whole_trace's summed features used to be inf, and
  // its prediction NaN
  auto vast_costs = ets_test::learnable_trace(9, 40);
  for (auto& op : vast_costs.ops) op.flops = op.bytes = 1e308;
  // a tensor of rank 100,000: the rank is z-scored linearly, and a ReLU network extrapolates it without bound
  auto vast_rank = ets_test::learnable_trace(10, 40);
  for (auto& op : vast_rank.ops)
    if (!op.inputs.empty()) op.inputs[0].dims.assign(100000, 2);
  for (auto kind : ets::Baseline::all_kinds()) {
    const auto b = ets::Baseline::fit(kind, spec, train, val, o);
    for (const auto* t : {&vast_costs, &vast_rank}) {
      const double p = b.predict(*t);
      INFO(b.name() << " on " << (t == &vast_costs ? "summed costs past DBL_MAX" : "rank 100,000") << ": " << p);
      CHECK(std::isfinite(p));
      // whole_trace: within 1000x the training iterations; per-op: each op within 1000x the largest training op
      CHECK(p <= (kind == ets::Baseline::Kind::WholeTrace ? 1000.0 * most_iteration
                                                           : 2 * 1000.0 * most_op * static_cast<double>(t->ops.size())) *
                     (1 + 1e-9));
    }
  }
}

TEST_CASE("a baseline kind cast from a bad integer is refused before fitting", "[train][baseline]") {
  const auto train = ets_test::learnable_set(1, 4);
  const auto spec = ets::FeatureSpec::fit(train);
  CHECK_THROWS_WITH(ets::Baseline::fit(static_cast<ets::Baseline::Kind>(9), spec, train, {}),
                    Catch::Contains("ets.train.13") && Catch::Contains("9"));
}

TEST_CASE("the baselines' MLP refuses inputs and targets of another shape (ets.train.14)", "[train][baseline]") {
  ets::train::Mlp mlp({3, 4, 2}, 1);
  const ets::train::Mlp::Mat x = ets::train::Mlp::Mat::Ones(3, 5), y = ets::train::Mlp::Mat::Zero(2, 5);
  ets::train::Mlp::Mat out;
  mlp.predict(x, out);
  CHECK((out.rows() == 2 && out.cols() == 5));
  std::vector<float> grad(mlp.params().size(), 0.0f);
  CHECK(mlp.grad_l1(x, y, 1.0f, grad.data()) > 0);
  const ets::train::Mlp::Mat four_features = ets::train::Mlp::Mat::Ones(4, 5);
  const ets::train::Mlp::Mat three_targets = ets::train::Mlp::Mat::Zero(3, 5), six_samples = ets::train::Mlp::Mat::Zero(2, 6);
  using ets_test::error_id;
  CHECK(error_id([&] { mlp.predict(four_features, out); }) == "ets.train.14");
  CHECK(error_id([&] { mlp.grad_l1(four_features, y, 1.0f, grad.data()); }) == "ets.train.14");
  CHECK(error_id([&] { mlp.grad_l1(x, three_targets, 1.0f, grad.data()); }) == "ets.train.14");
  CHECK(error_id([&] { mlp.grad_l1(x, six_samples, 1.0f, grad.data()); }) == "ets.train.14");
}
