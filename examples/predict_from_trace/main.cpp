// Example: predict one training iteration's time from an execution trace with a trained model.
// Usage: predict_from_trace MODEL.etsm TRACE... (Kineto JSON, Nsight SQLite, ETS CSV / trace; plain or .gz)
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>

#include <ets/error.hpp>
#include <ets/log.hpp>
#include <ets/predictor.hpp>
#include <ets/tracer.hpp>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: predict_from_trace MODEL.etsm TRACE...\n");
    return 2;
  }
  // The library prints nothing by itself: import warnings (e.g. GPU activity without a launch) reach a sink.
  ets::set_log_sink([](ets::LogLevel level, std::string_view message) {
    std::fprintf(stderr, "predict_from_trace: warning: %.*s\n", static_cast<int>(message.size()), message.data());
  }, ets::LogLevel::warn);
  ets::Predictor predictor;
  std::string env;
  try {
    env = predictor.add_model("", argv[1]);  // "" = the environment the model was trained for
  } catch (const ets::Error& e) {  // every ETS failure: a stable id (docs/errors.md) and a message
    std::fprintf(stderr, "predict_from_trace: %s\n", e.what());
    return 1;
  }
  int failed = 0;
  for (int i = 2; i < argc; ++i) {
    try {  // one bad trace does not stop the others, and its error names it
      const auto iterations = ets::Tracer::load(argv[i]);
      const auto& trace = iterations[ets::Predictor::representative_iteration(iterations)];
      const ets::Prediction p = predictor.predict_detailed(trace, env);
      std::printf("%s on %s: %zu ops (%lld of a type the model never saw)\n", argv[i], env.c_str(), trace.ops.size(),
                  static_cast<long long>(p.unknown_ops));
      std::printf("  predicted %.3f ms  (interval %.3f .. %.3f ms)\n", p.iteration_us / 1e3, p.lo_us / 1e3,
                  p.hi_us / 1e3);
      std::printf("  operators %.3f ms + framework gaps %.3f ms; forward %.3f, backward %.3f, update %.3f ms\n",
                  p.time_us / 1e3, p.gap_us / 1e3, p.forward_us / 1e3, p.backward_us / 1e3, p.update_us / 1e3);
      // A model predicts for its own environment: a measurement taken on other hardware is no error of it
      // (ExecutionTrace::measured_on: the trace's environment id, else its device kind, as `ets predict` reads it).
      const std::string& named = trace.meta.environment;
      if (trace.has_measurement() && trace.measured_on(env))
        std::printf("  measured  %.3f ms  (error %+.1f%%)\n", trace.measured_us / 1e3,
                    100.0 * (p.iteration_us - trace.measured_us) / trace.measured_us);
      else if (trace.has_measurement())
        std::printf("  measured  %.3f ms on %s, not on %s: no error to compute\n", trace.measured_us / 1e3,
                    !named.empty() ? ("'" + named + "'").c_str() : trace.ran_gpu_kernels() ? "a GPU" : "a CPU",
                    env.c_str());
    } catch (const std::exception& e) {  // ets::Error (stable id, docs/errors.md) or e.g. std::bad_alloc
      std::fprintf(stderr, "predict_from_trace: %s: %s\n", argv[i], e.what());
      ++failed;
    }
  }
  return failed ? 1 : 0;
}
