// ets-test-labels: unit;concurrency
// Tests of the ets::Predictor facade: batch == individual == the raw encoder → BiLSTM → aggregator pipeline,
// caching, observe() corrections (convergence, isolation, shrinkage), errors, and concurrent use from 8 threads.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ets/aggregator.hpp"
#include "ets/bilstm_predictor.hpp"
#include "ets/error.hpp"
#include "ets/predictor.hpp"
#include "ets/tracer.hpp"
#include "ets/window_encoder.hpp"
#include "predict_fixtures.hpp"
#include "test_support.hpp"
#include "train_fixtures.hpp"

namespace {

std::vector<ets::ExecutionTrace> jobs_set() {
  // sizes from 10 to ~200 ops so that several windows and padded tails occur
  std::vector<ets::ExecutionTrace> v;
  for (int i = 0; i < 6; ++i) v.push_back(ets_test::learnable_trace(100 + static_cast<std::uint32_t>(i), 3 + 13 * i));
  return v;
}

// The reference: one trace through the public pipeline pieces, without the facade.
double direct(const ets::ModelFile& m, const ets::ExecutionTrace& t) {
  const ets::WindowEncoder enc(ets::FeatureSpec::deserialize(m.encoder_state), m.window_width, m.window_stride);
  const ets::WindowBatch b = enc.encode(t);
  const ets::BiLstmPredictor p(m.weights, ets::Backend::Cpu);
  return ets::Aggregator(enc.spec()).aggregate(b, p.predict(b)).iteration_us;
}

using ets_test::error_id;

ets::Predictor::Options cpu() {
  ets::Predictor::Options o;
  o.backend = ets::Backend::Cpu;
  return o;
}

}  // namespace

TEST_CASE("predict_batch equals individual predictions and the direct pipeline", "[predictor]") {
  const auto traces = jobs_set();
  const ets::ModelFile a = ets_test::small_model(traces, 1, "env-a");
  const ets::ModelFile b = ets_test::small_model(traces, 2, "env-b");                 // same encoder as a
  const ets::ModelFile c = ets_test::small_model({traces[0], traces[3]}, 3, "env-c");  // a different encoder
  ets::Predictor p(cpu());
  CHECK(p.add_model("", a) == "env-a");
  CHECK(p.add_model("", b) == "env-b");
  CHECK(p.add_model("renamed", c) == "renamed");
  CHECK(p.environments() == std::vector<std::string>{"env-a", "env-b", "renamed"});
  std::vector<std::string> ids;
  for (std::size_t i = 0; i < traces.size(); ++i) {
    ids.push_back("job" + std::to_string(i));
    p.add_job(ids.back(), traces[i]);
  }
  const std::vector<std::string> envs{"env-a", "renamed", "env-b"};
  const ets::Predictor::Matrix m = p.predict_batch(ids, envs);
  REQUIRE(m.jobs == ids.size());
  REQUIRE(m.envs == envs.size());
  const ets::ModelFile* files[] = {&a, &c, &b};
  for (std::size_t j = 0; j < ids.size(); ++j)
    for (std::size_t e = 0; e < envs.size(); ++e) {
      const auto& est = m.at(j, e);
      const double ref = direct(*files[e], traces[j]);
      CHECK(est.iteration_us == Approx(ref).epsilon(1e-5));
      CHECK(est.raw_us == est.iteration_us);
      CHECK(est.correction == 1.0);
      CHECK(est.ops == static_cast<std::int64_t>(traces[j].ops.size()));
      CHECK(est.lo_us <= est.iteration_us * (1 + 1e-9));
      CHECK(est.hi_us >= est.iteration_us * (1 - 1e-9));
      // a fresh predictor (no cache) answering one pair gives the same number
      ets::Predictor q(cpu());
      q.add_model(envs[e], *files[e]);
      q.add_job("x", traces[j]);
      CHECK(q.predict("x", envs[e]).iteration_us == Approx(est.iteration_us).epsilon(1e-5));
    }
  // models differ, so their predictions differ (the matrix is not one column copied)
  CHECK(m.at(2, 0).iteration_us != m.at(2, 2).iteration_us);
  // cached second answer is identical; uncached trace path agrees
  const ets::Predictor::Matrix again = p.predict_batch(ids, envs);
  for (std::size_t i = 0; i < m.values.size(); ++i) CHECK(again.values[i].iteration_us == m.values[i].iteration_us);
  std::vector<const ets::ExecutionTrace*> ptrs;
  for (const auto& t : traces) ptrs.push_back(&t);
  const auto direct_m = p.predict_traces(ptrs, envs);
  for (std::size_t i = 0; i < m.values.size(); ++i)
    CHECK(direct_m.values[i].iteration_us == Approx(m.values[i].iteration_us).epsilon(1e-5));
  // a job listed twice and the breakdown API
  const auto dup = p.predict_batch({"job2", "job2"}, {"env-a"});
  CHECK(dup.at(0, 0).iteration_us == dup.at(1, 0).iteration_us);
  const ets::Prediction d = p.predict_detailed(traces[2], "env-a");
  CHECK(d.iteration_us == Approx(m.at(2, 0).iteration_us).epsilon(1e-5));
  CHECK(d.ops.size() == traces[2].ops.size());
}

TEST_CASE("observe() converges to a constant bias and leaves other jobs and envs alone", "[predictor]") {
  const auto traces = jobs_set();
  ets::Predictor p(cpu());
  p.add_model("a", ets_test::small_model(traces, 1));
  p.add_model("b", ets_test::small_model(traces, 2));
  p.add_job("biased", traces[4]);
  p.add_job("other", traces[5]);
  const auto before = p.predict_batch({"biased", "other"}, {"a", "b"});
  const double raw = before.at(0, 0).iteration_us;
  const double truth = 1.2 * raw;  // the job really runs 20% slower than predicted
  double prev_err = std::abs(raw - truth) / truth;
  for (int n = 1; n <= 60; ++n) {
    p.observe("biased", "a", truth);
    const auto est = p.predict("biased", "a");
    const double err = std::abs(est.iteration_us - truth) / truth;
    CHECK(err < prev_err);                // every observation moves it closer
    CHECK(est.iteration_us < truth);      // shrinkage: never overshoots a constant bias
    CHECK(est.raw_us == raw);
    CHECK(est.observations == n);
    CHECK(est.lo_us == Approx(before.at(0, 0).lo_us * est.correction));
    prev_err = err;
  }
  CHECK(prev_err < 0.01);
  const auto c = p.correction("biased", "a");
  CHECK(c.mean_log_ratio == Approx(std::log(1.2)));
  CHECK(c.factor == Approx(1.2).epsilon(0.01));
  // other job, and the same job on the other environment: bit-identical to before
  const auto after = p.predict_batch({"biased", "other"}, {"a", "b"});
  CHECK(after.at(0, 1).iteration_us == before.at(0, 1).iteration_us);
  CHECK(after.at(1, 0).iteration_us == before.at(1, 0).iteration_us);
  CHECK(after.at(1, 1).iteration_us == before.at(1, 1).iteration_us);
  CHECK(after.at(1, 0).observations == 0);

  SECTION("noisy measurements: the log-space mean still converges") {
    std::mt19937_64 rng(5);
    std::lognormal_distribution<double> noise(0.0, 0.05);
    p.add_job("noisy", traces[3]);
    const double r3 = p.predict("noisy", "b").raw_us;
    for (int n = 0; n < 400; ++n) p.observe("noisy", "b", 0.8 * r3 * noise(rng));
    CHECK(p.predict("noisy", "b").iteration_us == Approx(0.8 * r3).epsilon(0.02));
  }
  SECTION("one wild outlier is clipped, and re-registering a job forgets its observations") {
    p.add_job("wild", traces[2]);
    const double r2 = p.predict("wild", "a").raw_us;
    p.observe("wild", "a", r2 * 1e6);
    CHECK(p.correction("wild", "a").mean_log_ratio == Approx(std::log(10.0)));
    p.add_job("wild", traces[2]);
    CHECK(p.correction("wild", "a").observations == 0);
    p.observe("biased", "b", 1.0);
    p.reset_observations("biased");
    CHECK(p.predict("biased", "a").correction == 1.0);
  }
  SECTION("replacing an environment's model drops the corrections measured against the old one") {
    // A correction measured the old model's bias; applied to a new model it would push that one off.
    const double r_old = p.predict("other", "b").raw_us;
    p.observe("other", "b", 2.0 * r_old);
    REQUIRE(p.correction("other", "b").observations == 1);
    p.add_model("b", ets_test::small_model(traces, 7));
    const auto est = p.predict("other", "b");
    CHECK(est.raw_us != r_old);
    CHECK(est.correction == 1.0);
    CHECK(est.observations == 0);
    CHECK(est.iteration_us == est.raw_us);
    CHECK(p.correction("other", "b").observations == 0);
    // the other environment keeps its corrections, and new observations count against the new model only
    CHECK(p.correction("biased", "a").observations == 60);
    p.observe("other", "b", 0.5 * est.raw_us);
    const auto c = p.correction("other", "b");
    CHECK(c.observations == 1);
    CHECK(c.mean_log_ratio == Approx(std::log(0.5)));
    CHECK(p.correction("other", "no-such-env").observations == 0);
  }
  SECTION("the same model loaded again keeps the corrections and caches: its predictions are the old ones") {
    const double r_old = p.predict("other", "b").raw_us;
    p.observe("other", "b", 2.0 * r_old);
    ets::ModelFile again = ets_test::small_model(traces, 2);
    again.provenance["reloaded"] = "yes";  // provenance does not change a prediction
    p.add_model("b", again);
    CHECK(p.correction("other", "b").observations == 1);
    CHECK(p.predict("other", "b").raw_us == r_old);
    CHECK(p.model("b").provenance.at("reloaded") == "yes");
    ets::ModelFile other = again;
    other.weights.head_b[0] += 0.5f;  // predicts otherwise: a replacement
    p.add_model("b", other);
    CHECK(p.predict("other", "b").raw_us != r_old);
    CHECK(p.correction("other", "b").observations == 0);
  }
  SECTION("no shrinkage: one observation sets the factor exactly") {
    ets::Predictor::Options o = cpu();
    o.prior_weight = 0;
    ets::Predictor q(o);
    q.add_model("a", ets_test::small_model(traces, 1));
    q.add_job("j", traces[1]);
    const double r = q.predict("j", "a").raw_us;
    q.observe("j", "a", 1.5 * r);
    CHECK(q.predict("j", "a").iteration_us == Approx(1.5 * r));
  }
}

TEST_CASE("max_observations: the correction follows a job whose speed changed", "[predictor][observe]") {
  const auto traces = jobs_set();
  ets::Predictor::Options o = cpu();
  o.max_observations = 50;
  ets::Predictor windowed(o);
  ets::Predictor plain(cpu());
  for (ets::Predictor* p : {&windowed, &plain}) {
    p->add_model("a", ets_test::small_model(traces, 1));
    p->add_job("j", traces[4]);
  }
  const double raw = plain.predict("j", "a").raw_us;
  for (int n = 0; n < 2000; ++n) {  // a long spell at 2x the prediction
    windowed.observe("j", "a", 2 * raw);
    plain.observe("j", "a", 2 * raw);
  }
  CHECK(windowed.correction("j", "a").factor == Approx(std::pow(2.0, 50.0 / 52.0)).epsilon(1e-6));
  CHECK(windowed.correction("j", "a").observations == 50);
  for (int n = 0; n < 300; ++n) {  // then the job runs as predicted: 6 time constants of the window
    windowed.observe("j", "a", raw);
    plain.observe("j", "a", raw);
  }
  CHECK(windowed.correction("j", "a").factor < 1.01);  // followed the change
  CHECK(plain.correction("j", "a").factor > 1.8);      // the mean over all 2,300 still says ~1.9
  CHECK(windowed.predict("j", "a").iteration_us == Approx(raw * windowed.correction("j", "a").factor));
  o.max_observations = -1;
  CHECK_THROWS_WITH(ets::Predictor(o), Catch::Contains("ets.predict.7"));
}

TEST_CASE("remove_model frees an environment: its model, caches and every job's observations", "[predictor]") {
  const auto traces = jobs_set();
  ets::Predictor p(cpu());
  p.add_model("a", ets_test::small_model(traces, 1));
  p.add_model("b", ets_test::small_model(traces, 2));
  p.add_model("c", ets_test::small_model(traces, 3));
  p.add_job("j", traces[4]);
  const auto before = p.predict_batch({"j"}, {"a", "c"});
  p.observe("j", "b", 3 * p.predict("j", "b").raw_us);
  p.observe("j", "c", 2 * before.at(0, 1).raw_us);
  CHECK(p.remove_model("b"));
  CHECK_FALSE(p.remove_model("b"));
  CHECK_FALSE(p.has_environment("b"));
  CHECK(p.environments() == std::vector<std::string>{"a", "c"});
  CHECK_THROWS_WITH(p.predict("j", "b"), Catch::Contains("ets.predict.2"));
  // the others are untouched, their order and lookups too (the index is rebuilt)
  const auto after = p.predict_batch({"j"}, {"a", "c"});
  CHECK(after.at(0, 0).iteration_us == before.at(0, 0).iteration_us);
  CHECK(after.at(0, 1).correction == Approx(std::pow(2.0, 1.0 / 3.0)));
  // model() hands back the model as registered, weights included (the Predictor keeps them in the network only)
  const ets::ModelFile c_file = ets_test::small_model(traces, 3);
  const ets::ModelFile got = p.model("c");
  CHECK(ets::serialize_model(got) == ets::serialize_model(c_file));
  // a new model under the removed id starts without the old observations
  p.add_model("b", ets_test::small_model(traces, 2));
  CHECK(p.correction("j", "b").observations == 0);
  CHECK(p.environments() == std::vector<std::string>{"a", "c", "b"});
  CHECK(p.predict("j", "b").raw_us == Approx(p.predict("j", "b").iteration_us));
}

TEST_CASE("Predictor errors carry stable ids", "[predictor]") {
  const auto traces = jobs_set();
  ets::Predictor p(cpu());
  p.add_model("a", ets_test::small_model(traces, 1));
  p.add_job("j", traces[0]);
  CHECK(error_id([&] { p.predict("nope", "a"); }) == "ets.predict.1");
  CHECK(error_id([&] { p.predict("j", "nope"); }) == "ets.predict.2");
  CHECK(error_id([&] { p.backend_name("nope"); }) == "ets.predict.2");
  CHECK(error_id([&] { p.backend_note("nope"); }) == "ets.predict.2");
  CHECK(error_id([&] { p.observe("j", "a", 0.0); }) == "ets.predict.3");
  CHECK(error_id([&] { p.observe("j", "a", std::nan("")); }) == "ets.predict.3");
  CHECK(error_id([&] { p.observe("nope", "a", 5.0); }) == "ets.predict.1");
  CHECK(error_id([&] { p.correction("nope", "a"); }) == "ets.predict.1");
  CHECK(error_id([&] { p.reset_observations("nope"); }) == "ets.predict.1");
  CHECK(error_id([&] { p.job_trace("nope"); }) == "ets.predict.1");
  CHECK(error_id([&] { p.predict_batch({"j", "nope"}, {"a"}); }) == "ets.predict.1");
  CHECK(error_id([&] { p.add_job("e", ets::ExecutionTrace{}); }) == "ets.predict.5");
  CHECK(error_id([&] { p.add_job("", traces[0]); }) == "ets.predict.1");
  CHECK(error_id([&] { ets::Predictor::representative_iteration({}); }) == "ets.predict.4");
  // Matrix::at checks each index on its own: (0, 1) of a 2 × 1 matrix must not land on (1, 0)
  p.add_job("k", traces[1]);
  const auto m21 = p.predict_batch({"j", "k"}, {"a"});
  CHECK(&m21.at(1, 0) == &m21.values[1]);
  CHECK_THROWS_AS(m21.at(0, 1), std::out_of_range);
  CHECK_THROWS_AS(m21.at(2, 0), std::out_of_range);
  CHECK(error_id([&] { p.load_job("f", ets_test::fixture("does-not-exist.json")); }).rfind("ets.", 0) == 0);
  ets::Predictor::Options bad = cpu();
  bad.prior_weight = -1;
  CHECK(error_id([&] { ets::Predictor q(bad); }) == "ets.predict.7");
  // a model whose LSTM input does not match its encoder
  ets::ModelFile m = ets_test::small_model(traces, 1);
  ets::ModelFile other = ets_test::small_model({ets_test::learnable_trace(1, 2)}, 1);
  m.encoder_state = other.encoder_state;
  REQUIRE(ets::FeatureSpec::deserialize(other.encoder_state).feature_count() != m.weights.config.input_size);
  CHECK(error_id([&] { p.add_model("bad", m); }) == "ets.predict.6");
  // an LSTM with a third output per op: refused when added, not at every later prediction
  ets::ModelFile three = ets_test::small_model(traces, 1);
  auto& c3 = three.weights.config;
  c3.outputs = 3;
  three.weights.head_w.resize(static_cast<std::size_t>(3 * c3.hidden * c3.directions()), 0.f);
  three.weights.head_b.resize(3, 0.f);
  CHECK(error_id([&] { p.add_model("three", three); }) == "ets.predict.6");
  // a bare network (e.g. exported from PyTorch without an encoder) cannot encode traces: refused by name
  ets::ModelFile bare = ets_test::small_model(traces, 1);
  bare.encoder_state.clear();
  CHECK(error_id([&] { p.add_model("bare", bare); }) == "ets.predict.6");
  // environment ids with control characters: a NUL could not be named from C, given or taken from the file
  CHECK(error_id([&] { p.add_model(std::string("gpu\0x", 5), m); }) == "ets.predict.9");
  ets::ModelFile nl = ets_test::small_model(traces, 1);
  nl.hardware_env = "gpu\nfake log line";
  CHECK(error_id([&] { p.add_model("", nl); }) == "ets.predict.9");
  CHECK(p.environments().size() == 1);
  CHECK(p.remove_job("j"));
  CHECK_FALSE(p.remove_job("j"));
  CHECK_FALSE(p.has_job("j"));
}

TEST_CASE("a prediction that overflows names its job and environment; the other jobs still predict", "[predictor]") {
  // A model fitted on labels of 1 µs and 1e300 µs, its head bias raised so that exactly one of six jobs gets a
  // time that denormalises past double's range (ets.aggregate.3). The error said "window 4", in the batch of all
  // jobs, and named neither the job nor the environment.
  auto train = ets_test::learnable_set(1, 4);
  for (auto& t : train)
    for (std::size_t i = 0; i < t.ops.size(); ++i) t.ops[i].time_us = (i % 2) ? 1e300 : 1.0;
  ets::ModelFile mf = ets_test::small_model(train);
  const auto spec = ets::FeatureSpec::deserialize(mf.encoder_state);
  const ets::WindowEncoder enc(spec, mf.window_width, mf.window_stride);
  std::vector<ets::ExecutionTrace> jobs;
  std::vector<float> top;  // each job's largest normalised time
  for (int i = 0; i < 6; ++i) {
    jobs.push_back(ets_test::learnable_trace(100 + static_cast<std::uint32_t>(i), 1 + i));
    const auto b = enc.encode(jobs.back());
    const auto y = ets::BiLstmPredictor(mf.weights).predict(b);
    float m = -1e9f;
    for (std::size_t k = 0; k < b.positions(); ++k)
      if (b.mask[k]) m = std::max(m, y[2 * k]);
    top.push_back(m);
  }
  const auto worst = static_cast<std::size_t>(std::max_element(top.begin(), top.end()) - top.begin());
  std::vector<float> sorted = top;
  std::sort(sorted.begin(), sorted.end());
  const double z_max =
      (std::log(std::numeric_limits<double>::max()) - spec.label_moments(0).mean) / spec.label_moments(0).stdev;
  mf.weights.head_b[0] += static_cast<float>(z_max - (sorted[5] + sorted[4]) / 2);  // between the two largest
  ets::BiLstmPredictor(mf.weights)
      .predict(mf.self_test.input.data(), mf.self_test.windows, mf.self_test.width, mf.self_test.expected.data());
  ets::Predictor p(cpu());
  p.add_model("env-x", mf);
  std::vector<std::string> ids;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    ids.push_back("job" + std::to_string(i));
    p.add_job(ids.back(), jobs[i]);
  }
  const std::string bad = ids[worst];
  CHECK_THROWS_WITH(p.predict_batch(ids, {"env-x"}), Catch::Contains("[ets.aggregate.3] job '" + bad +
                                                                     "' on environment 'env-x': "));
  CHECK_THROWS_WITH(p.predict(bad, "env-x"), Catch::Contains("job '" + bad + "' on environment 'env-x'"));
  CHECK_THROWS_WITH(p.predict_detailed(jobs[worst], "env-x"), Catch::Contains("on environment 'env-x'"));
  const std::vector<const ets::ExecutionTrace*> ptrs = {&jobs[worst == 0 ? 1 : 0], &jobs[worst]};
  CHECK_THROWS_WITH(p.predict_traces(ptrs, {"env-x"}), Catch::Contains("trace 1 on environment 'env-x'"));
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (i != worst) CHECK(std::isfinite(p.predict(ids[i], "env-x").iteration_us));
}

TEST_CASE("backend_name / backend_note say where each env's network runs and why", "[predictor]") {
  const auto traces = jobs_set();
  ets::Predictor asked(cpu());  // Backend::Cpu: used as asked, no note
  asked.add_model("a", ets_test::small_model(traces, 1));
  CHECK(asked.backend_name("a") == "cpu-eigen");
  CHECK(asked.backend_note("a").empty());
  // Auto in this test binary, which never calls ets::cuda::enable(): the CPU, with the reason
  ets::Predictor autop;
  REQUIRE(autop.options().backend == ets::Backend::Auto);
  autop.add_model("a", ets_test::small_model(traces, 1));
  CHECK(autop.backend_name("a") == "cpu-eigen");
  CHECK(autop.backend_note("a").find("no CUDA backend registered") != std::string::npos);
}

TEST_CASE("load_job imports a trace file and picks the median iteration", "[predictor]") {
  const std::string path = ets_test::fixture("cpu_small_mlp.json.gz");
  const auto its = ets::Tracer::load(path);
  REQUIRE(its.size() >= 2);
  ets::Predictor p(cpu());
  p.add_model("cpu", ets_test::small_model(its, 4));
  const std::size_t ops = p.load_job("mlp", path);
  const std::size_t k = ets::Predictor::representative_iteration(its);
  CHECK(ops == its[k].ops.size());
  int below = 0, above = 0;
  for (const auto& t : its) {
    below += t.measured_us < its[k].measured_us;
    above += t.measured_us > its[k].measured_us;
  }
  CHECK(std::abs(below - above) <= 1);
  CHECK(p.job_trace("mlp") == its[k]);
  CHECK(p.predict("mlp", "cpu").iteration_us > 0);
  // a service caps what an untrusted file may hold: beyond the limit the job is not replaced
  ets::Tracer::LoadOptions capped;
  capped.max_bytes = 1024;
  CHECK(error_id([&] { p.load_job("mlp", path, capped); }) == "ets.io.6");
  CHECK(p.job_trace("mlp") == its[k]);
  capped.max_bytes = 0;
  CHECK(p.load_job("mlp2", path, capped) == ops);
  // without measurements the last iteration stands for the file
  auto unmeasured = its;
  for (auto& t : unmeasured) t.measured_us = ets::kUnknown;
  CHECK(ets::Predictor::representative_iteration(unmeasured) == its.size() - 1);
  // ... the last one with ops: a capture's last step is often cut short
  unmeasured.push_back(ets::ExecutionTrace{});
  CHECK(ets::Predictor::representative_iteration(unmeasured) == its.size() - 1);
  // an iteration timed at 0 µs was not timed: no measurement, so it is not the median one
  auto zeroed = its;
  for (auto& t : zeroed) t.measured_us = 0;
  CHECK_FALSE(zeroed[0].has_measurement());
  CHECK(ets::Predictor::representative_iteration(zeroed) == its.size() - 1);
}

TEST_CASE("9 threads share one Predictor: batches, observations, job and model churn", "[predictor][threads]") {
  std::vector<ets::ExecutionTrace> traces;
  for (int i = 0; i < 16; ++i) traces.push_back(ets_test::learnable_trace(500 + static_cast<std::uint32_t>(i), 5 + 7 * i));
  ets::Predictor p(cpu());
  p.add_model("a", ets_test::small_model(traces, 1));
  p.add_model("b", ets_test::small_model(traces, 2));
  std::vector<std::string> ids;
  for (std::size_t i = 0; i < traces.size(); ++i) ids.push_back("j" + std::to_string(i));
  // reference from a separate predictor, single-threaded
  ets::Predictor ref(cpu());
  ref.add_model("a", ets_test::small_model(traces, 1));
  ref.add_model("b", ets_test::small_model(traces, 2));
  for (std::size_t i = 0; i < traces.size(); ++i) ref.add_job(ids[i], traces[i]);
  const auto expect = ref.predict_batch(ids, {"a", "b"});
  for (std::size_t i = 0; i < traces.size(); ++i) p.add_job(ids[i], traces[i]);

  const ets::ModelFile model_c = ets_test::small_model(traces, 3);
  std::atomic<int> mismatches{0}, failures{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < 9; ++t)
    pool.emplace_back([&, t] {
      try {
        std::mt19937 rng(static_cast<unsigned>(t));
        for (int it = 0; it < 40; ++it) {
          if (t == 7) {  // churn: a job that no other thread queries comes and goes
            p.add_job("churn", traces[static_cast<std::size_t>(it) % traces.size()]);
            p.observe("churn", "a", 100.0 + it);
            p.remove_job("churn");
            continue;
          }
          if (t == 8) {  // an environment that no other thread queries comes and goes, observed meanwhile
            p.add_model("c", model_c);
            p.observe(ids[static_cast<std::size_t>(it) % ids.size()], "c", 50.0 + it);
            p.remove_model("c");
            continue;
          }
          std::vector<std::string> sub;
          for (int k = 0; k < 4; ++k) sub.push_back(ids[rng() % ids.size()]);
          const auto m = p.predict_batch(sub, {"b", "a"});
          for (std::size_t k = 0; k < sub.size(); ++k) {
            const std::size_t j = static_cast<std::size_t>(std::stoi(sub[k].substr(1)));
            // j0 on b is being corrected concurrently (thread 6), so only its raw part is fixed
            const double b_got = j == 0 ? m.at(k, 0).raw_us : m.at(k, 0).iteration_us;
            if (std::abs(b_got - expect.at(j, 1).iteration_us) > 1e-5 * expect.at(j, 1).iteration_us ||
                std::abs(m.at(k, 1).iteration_us - expect.at(j, 0).iteration_us) > 1e-5 * expect.at(j, 0).iteration_us)
              ++mismatches;
          }
          if (t == 6) p.observe("j0", "b", 2.0 * expect.at(0, 1).raw_us);  // only j0 on b is ever corrected
        }
      } catch (...) {
        ++failures;
      }
    });
  for (auto& th : pool) th.join();
  CHECK(failures == 0);
  CHECK(mismatches == 0);
  const auto final_m = p.predict_batch(ids, {"a", "b"});
  for (std::size_t j = 1; j < ids.size(); ++j)
    for (std::size_t e = 0; e < 2; ++e) CHECK(final_m.at(j, e).iteration_us == Approx(expect.at(j, e).iteration_us).epsilon(1e-5));
  CHECK(p.correction("j0", "b").observations == 40);
  CHECK(final_m.at(0, 1).iteration_us > expect.at(0, 1).iteration_us);
  CHECK_FALSE(p.has_job("churn"));
  CHECK(p.environments() == std::vector<std::string>{"a", "b"});
}

// remove_model releases the registry lock while it clears every job's observations of the removed environment. A
// model registered again under that id meanwhile, and observed, keeps its observations: they used to be cleared too
// (by the id alone). The observations race the clearing, so each round checks, for every observed job, that none
// of the observations made against the new model was lost.
TEST_CASE("remove_model racing a re-add of its environment keeps the new model's observations", "[predictor][threads]") {
  const std::vector<ets::ExecutionTrace> traces{ets_test::learnable_trace(900, 2)};
  const ets::ModelFile model = ets_test::small_model(traces, 5);
  ets::Predictor p(cpu());  // max_observations 0: every observation counts, so a lost one shows in the count
  std::vector<std::string> ids;
  for (int i = 0; i < 20000; ++i) {
    ids.push_back("j" + std::to_string(i));
    p.add_job(ids.back(), traces[0]);
  }
  const std::size_t observed = 64, step = ids.size() / observed;
  int lost = 0, raced_rounds = 0;
  // rounds until four of them overlapped the removal (a loaded machine may let the removal finish first)
  for (int round = 0; round < 200 && raced_rounds < 4; ++round) {
    p.add_model("e", model);
    std::atomic<bool> removed{false};
    std::thread remover([&] {
      p.remove_model("e");
      removed = true;
    });
    while (p.has_environment("e")) std::this_thread::yield();
    p.add_model("e", model);
    std::vector<int> made(observed, 0);
    bool during = false;  // some observations were made while remove_model still ran
    do {
      during = during || !removed;
      for (std::size_t k = 0; k < observed; ++k) {
        p.observe(ids[k * step], "e", 1000.0);
        ++made[k];
      }
    } while (!removed);
    remover.join();
    raced_rounds += during;
    for (std::size_t k = 0; k < observed; ++k) lost += p.correction(ids[k * step], "e").observations != made[k];
    p.remove_model("e");
  }
  CHECK(lost == 0);
  INFO("rounds in which observations overlapped the removal: " << raced_rounds);
  CHECK(raced_rounds > 0);  // the race was reached at all
}

// A finite, accepted observe() must never make predict() return an infinite estimate or interval.
TEST_CASE("observe() with max_ratio near DBL_MAX keeps the corrected estimate finite", "[predictor][observe]") {
  std::vector<ets::ExecutionTrace> traces;
  for (int i = 0; i < 3; ++i) traces.push_back(ets_test::learnable_trace(100 + static_cast<std::uint32_t>(i), 40));
  ets::Predictor::Options o;
  o.backend = ets::Backend::Cpu;
  o.prior_weight = 0;                                   // valid: no shrinkage
  o.max_ratio = std::numeric_limits<double>::max();     // valid: finite and > 1 ("no clipping")
  ets::Predictor p(o);
  const std::string env = p.add_model("e", ets_test::small_model(traces, 1, "e"));
  p.add_job("j", traces[0]);
  const ets::Predictor::Estimate before = p.predict("j", env);
  REQUIRE(before.hi_us > before.iteration_us);  // a real interval, so hi_us overflows first
  p.observe("j", env, std::numeric_limits<double>::max());  // finite and > 0: accepted
  const ets::Predictor::Estimate e = p.predict("j", env);
  CHECK(std::isfinite(e.iteration_us));
  CHECK(std::isfinite(e.lo_us));
  CHECK(std::isfinite(e.hi_us));
  CHECK(e.lo_us <= e.iteration_us);
  CHECK(e.iteration_us <= e.hi_us);
  CHECK(e.iteration_us == e.raw_us * e.correction);
}
