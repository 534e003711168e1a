// Example: a scheduler's placement round with ets::Predictor — jobs × environments in one batch call, each job
// placed where it runs fastest, then measured iteration times fed back with observe() to correct later rounds
// (on the environment each measurement was taken on).
// Usage: scheduler_hook ENV=MODEL.etsm [ENV=MODEL.etsm...] -- TRACE...
// (an argument naming an existing file is a PATH, whatever it holds; otherwise the first '=' ends ENV. "=PATH" or a
// PATH alone uses the model's own environment. Two models for one environment are refused.)
#include <cstdio>
#include <exception>
#include <filesystem>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <ets/error.hpp>
#include <ets/log.hpp>
#include <ets/predictor.hpp>

int main(int argc, char** argv) {
  std::vector<std::string> models, traces;
  int separators = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") ++separators;
    else (separators ? traces : models).push_back(a);
  }
  if (models.empty() || traces.empty() || separators != 1) {
    std::fprintf(stderr, "usage: scheduler_hook ENV=MODEL.etsm [ENV=MODEL.etsm...] -- TRACE...\n");
    return 2;
  }
  // The library prints nothing by itself: import warnings reach the scheduler's log through a sink.
  ets::set_log_sink([](ets::LogLevel, std::string_view message) {
    std::fprintf(stderr, "scheduler_hook: warning: %.*s\n", static_cast<int>(message.size()), message.data());
  }, ets::LogLevel::warn);
  try {
    ets::Predictor predictor;  // thread-safe: share one instance between the scheduler's threads
    std::set<std::string> registered;
    for (const auto& m : models) {
      // "runs/lr=0.1/m.etsm" is a path, not the environment "runs/lr" (add_model would replace an earlier model of
      // the same environment silently: a scheduler wants to know)
      std::error_code ec;
      const auto eq = std::filesystem::is_regular_file(m, ec) ? std::string::npos : m.find('=');
      const std::string env =
          predictor.add_model(eq == std::string::npos ? "" : m.substr(0, eq), eq == std::string::npos ? m : m.substr(eq + 1));
      if (!registered.insert(env).second) {
        std::fprintf(stderr, "scheduler_hook: two models for environment '%s' ('%s'); name them apart with ENV=PATH\n",
                     env.c_str(), m.c_str());
        return 2;
      }
    }
    std::vector<std::string> jobs;
    for (std::size_t i = 0; i < traces.size(); ++i) {
      jobs.push_back("job-" + std::to_string(i));
      predictor.load_job(jobs.back(), traces[i]);
    }
    const std::vector<std::string> envs = predictor.environments();

    for (int round = 0; round < 3; ++round) {
      // one call: every job on every environment (each job is encoded once per distinct encoder)
      const ets::Predictor::Matrix m = predictor.predict_batch(jobs, envs);
      std::printf("round %d\n", round);
      for (std::size_t j = 0; j < jobs.size(); ++j) {
        std::size_t best = 0;
        for (std::size_t e = 1; e < envs.size(); ++e)
          if (m.at(j, e).iteration_us < m.at(j, best).iteration_us) best = e;
        const auto& est = m.at(j, best);
        std::printf("  %-8s -> %-12s %9.3f ms/iter [%.3f, %.3f]  correction x%.3f after %ld observations\n",
                    jobs[j].c_str(), envs[best].c_str(), est.iteration_us / 1e3, est.lo_us / 1e3, est.hi_us / 1e3,
                    est.correction, static_cast<long>(est.observations));
        // A running job reports its measured iteration time on the environment it runs on, and later predictions
        // of that job there move toward it. Here the only measurement is the trace's own, taken on the hardware it
        // was recorded on (meta.environment): it corrects that environment alone, and once, being one measurement.
        if (round != 0) continue;
        const ets::ExecutionTrace t = predictor.job_trace(jobs[j]);  // a copy: fetched once, not every round
        if (t.has_measurement()) {
          if (predictor.has_environment(t.meta.environment))
            predictor.observe(jobs[j], t.meta.environment, t.measured_us);
          else
            std::printf("  %-8s was measured on %s, not a registered environment: nothing to observe\n",
                        jobs[j].c_str(),
                        t.meta.environment.empty() ? "an unnamed environment" : ("'" + t.meta.environment + "'").c_str());
        }
      }
    }
    return 0;
  } catch (const ets::Error& e) {
    std::fprintf(stderr, "scheduler_hook: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "scheduler_hook: %s\n", e.what());
    return 1;
  }
}
