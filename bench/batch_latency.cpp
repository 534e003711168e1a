// Scheduler-query latency of ets::Predictor: cold predictions (encode + BiLSTM forward + aggregate per job) and
// 10,000 warm batch queries of registered mid-size jobs, as p50/p90/p99 per prediction. Measures, never asserts.
// Usage: batch_latency [--model M.etsm] [--jobs N] [--ops-min A] [--ops-max B] [--envs E] [--queries Q] [--batch K]
//                      [--hidden H] [--json]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "../tests/unit/encoder_fixtures.hpp"
#include "../tests/unit/predict_fixtures.hpp"
#include "ets/model_file.hpp"
#include "ets/predictor.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double us_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

double thread_cpu_us() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) * 1e-3;
}

struct Dist {
  double p50 = 0, p90 = 0, p99 = 0, max = 0, mean = 0;
  std::size_t n = 0;
};

Dist dist(std::vector<double> v) {
  Dist d;
  if (v.empty()) return d;
  std::sort(v.begin(), v.end());
  // nearest rank: the ⌈p·n⌉-th smallest (p99 of 100 samples is the 99th, not the maximum)
  auto q = [&](double p) {
    const auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(v.size())));
    return v[std::min(v.size() - 1, std::max<std::size_t>(rank, 1) - 1)];
  };
  d.p50 = q(0.50);
  d.p90 = q(0.90);
  d.p99 = q(0.99);
  d.max = v.back();
  for (double x : v) d.mean += x;
  d.mean /= static_cast<double>(v.size());
  d.n = v.size();
  return d;
}

void print(const char* what, const Dist& d, const char* unit) {
  // three decimals: a warm query takes well under a microsecond
  std::printf("%-44s n=%-6zu p50 %12.3f  p90 %12.3f  p99 %12.3f  max %12.3f  mean %12.3f %s\n", what, d.n, d.p50, d.p90,
              d.p99, d.max, d.mean, unit);
}

std::string json(const Dist& d) {
  char b[256];
  std::snprintf(b, sizeof b, "{\"n\":%zu,\"p50\":%.3f,\"p90\":%.3f,\"p99\":%.3f,\"max\":%.3f,\"mean\":%.3f}", d.n, d.p50,
                d.p90, d.p99, d.max, d.mean);
  return b;
}

}  // namespace

int run(int argc, char** argv);

// Bad arguments and library errors end with a message and exit 2 / 1, not an abort.
int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "batch_latency: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "batch_latency: %s\n", e.what());
    return 1;
  }
}

// A whole number in [lo, hi] for option `name`, or std::invalid_argument.
int whole(const std::string& name, const std::string& s, int lo, int hi) {
  std::size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != s.size() || s.empty() || v < lo || v > hi)
    throw std::invalid_argument(name + " takes a whole number in " + std::to_string(lo) + ".." + std::to_string(hi) +
                                ", not '" + s + "'");
  return static_cast<int>(v);
}

int run(int argc, char** argv) {
  std::string model_path;
  int jobs = 100, ops_min = 400, ops_max = 800, envs = 2, queries = 10000, batch = 8, hidden = 0;
  bool as_json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--model") model_path = next();
    else if (a == "--jobs") jobs = whole(a, next(), 1, 1000000);
    else if (a == "--ops-min") ops_min = whole(a, next(), 1, 10000000);
    else if (a == "--ops-max") ops_max = whole(a, next(), 1, 10000000);
    else if (a == "--envs") envs = whole(a, next(), 1, 1000);
    else if (a == "--queries") queries = whole(a, next(), 1, 1000000000);
    else if (a == "--batch") batch = whole(a, next(), 1, 1000000);
    else if (a == "--hidden") hidden = whole(a, next(), 0, 65536);
    else if (a == "--json") as_json = true;
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }

  if (ops_min > ops_max) throw std::invalid_argument("--ops-min must not exceed --ops-max");
  // Mid-size jobs: op counts uniform in [ops_min, ops_max] (the middle of the dataset's 0–1,200+ op buckets).
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> size(ops_min, ops_max);
  std::vector<ets::ExecutionTrace> traces;
  for (int j = 0; j < jobs; ++j) traces.push_back(ets_test::synthetic_trace(static_cast<std::size_t>(size(rng)), 900 + static_cast<std::uint32_t>(j)));

  ets::Predictor::Options opt;
  opt.backend = ets::Backend::Cpu;
  ets::Predictor p(opt);
  std::vector<std::string> env_ids;
  int lstm_hidden = 0, lstm_layers = 0, features = 0;
  for (int e = 0; e < envs; ++e) {
    ets::ModelFile m;
    if (!model_path.empty()) {
      m = ets::load_model(model_path);
    } else {
      // the default model's shape: hidden = feature count, 4 layers (ModelTrainer's defaults)
      std::vector<ets::ExecutionTrace> fit(traces.begin(), traces.begin() + std::min(jobs, 20));
      const int f = ets::FeatureSpec::fit(fit).feature_count();
      m = ets_test::small_model(fit, 11 + static_cast<std::uint64_t>(e), "bench", hidden > 0 ? hidden : f, 4);
    }
    lstm_hidden = m.weights.config.hidden;
    lstm_layers = m.weights.config.layers;
    features = m.weights.config.input_size;
    env_ids.push_back(p.add_model("env" + std::to_string(e), m));
  }
  std::vector<std::string> ids;
  for (int j = 0; j < jobs; ++j) {
    ids.push_back("job" + std::to_string(j));
    p.add_job(ids.back(), traces[static_cast<std::size_t>(j)]);
  }
  std::int64_t total_ops = 0;
  for (const auto& t : traces) total_ops += static_cast<std::int64_t>(t.ops.size());

  // 1. cold: each job's first prediction on env0 (encode + forward + aggregate), one at a time
  std::vector<double> cold_wall, cold_cpu;
  for (const auto& id : ids) {
    const double c0 = thread_cpu_us();
    const auto t0 = Clock::now();
    (void)p.predict(id, env_ids[0]);
    cold_wall.push_back(us_since(t0));
    cold_cpu.push_back(thread_cpu_us() - c0);
  }
  // 2. cold batch: all jobs × the remaining envs in one predict_batch call (one forward chunk series per model)
  double cold_batch_us = 0;
  std::size_t cold_batch_n = 0;
  if (envs > 1) {
    const std::vector<std::string> rest(env_ids.begin() + 1, env_ids.end());
    const auto t0 = Clock::now();
    const auto m = p.predict_batch(ids, rest);
    cold_batch_us = us_since(t0);
    cold_batch_n = m.values.size();
  }
  // 3. warm: `queries` predictions as predict_batch calls of `batch` random jobs × all envs
  std::vector<double> call_us, per_pred_us;
  std::uniform_int_distribution<int> pick(0, jobs - 1);
  int done = 0;
  double observe_total = 0;
  const auto w0 = Clock::now();
  while (done < queries) {
    const int k = std::max(1, std::min(batch, (queries - done + envs - 1) / envs));
    std::vector<std::string> sub;
    for (int i = 0; i < k; ++i) sub.push_back(ids[static_cast<std::size_t>(pick(rng))]);
    const auto t0 = Clock::now();
    const auto m = p.predict_batch(sub, env_ids);
    const double us = us_since(t0);
    call_us.push_back(us);
    per_pred_us.push_back(us / static_cast<double>(m.values.size()));
    done += static_cast<int>(m.values.size());
    if (call_us.size() % 10 == 0) {  // a scheduler reports progress now and then
      const auto o0 = Clock::now();
      p.observe(sub[0], env_ids[0], m.at(0, 0).raw_us * 1.1);
      observe_total += us_since(o0);
    }
  }
  const double warm_total_s = us_since(w0) / 1e6;

  const Dist cw = dist(cold_wall), cc = dist(cold_cpu), wc = dist(call_us), wp = dist(per_pred_us);
  if (as_json) {
    std::printf("{\"jobs\":%d,\"mean_ops\":%.1f,\"envs\":%d,\"features\":%d,\"hidden\":%d,\"layers\":%d,"
                "\"cold_wall_us\":%s,\"cold_cpu_us\":%s,\"cold_batch_us_per_prediction\":%.3f,"
                "\"warm_call_us\":%s,\"warm_per_prediction_us\":%s,\"warm_predictions\":%d,\"warm_total_s\":%.3f}\n",
                jobs, static_cast<double>(total_ops) / jobs, envs, features, lstm_hidden, lstm_layers, json(cw).c_str(),
                json(cc).c_str(), cold_batch_n ? cold_batch_us / static_cast<double>(cold_batch_n) : 0.0,
                json(wc).c_str(), json(wp).c_str(), done, warm_total_s);
    return 0;
  }
  std::printf("model: F=%d hidden=%d layers=%d (%s); %d jobs, %.0f ops on average (%d..%d), %d envs\n", features,
              lstm_hidden, lstm_layers, model_path.empty() ? "random weights, default shape" : model_path.c_str(), jobs,
              static_cast<double>(total_ops) / jobs, ops_min, ops_max, envs);
  print("cold prediction (wall)", cw, "us");
  print("cold prediction (thread cpu)", cc, "us");
  if (cold_batch_n)
    std::printf("%-44s n=%-6zu %.1f us per prediction (%.3f s total)\n", "cold batch, all jobs x other envs",
                cold_batch_n, cold_batch_us / static_cast<double>(cold_batch_n), cold_batch_us / 1e6);
  print("warm predict_batch call", wc, "us");
  print("warm, per prediction", wp, "us");
  std::printf("%d warm predictions in %.6f s (%zu calls of up to %d jobs x %d envs, %.1f jobs per call on average; "
              "1 observe per 10 calls, %.3f us each)\n",
              done, warm_total_s, call_us.size(), batch, envs,
              static_cast<double>(done) / static_cast<double>(std::max<std::size_t>(1, call_us.size())) / envs,
              call_us.size() >= 10 ? observe_total / static_cast<double>(call_us.size() / 10) : 0.0);
  return 0;
}
