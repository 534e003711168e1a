// Example: predict one training iteration's time from an execution trace with a trained model.
// Usage: predict_from_trace MODEL.etsm TRACE... (Kineto JSON, Nsight SQLite, ETS CSV / trace; plain or .gz)
#include <cstdio>
#include <exception>
#include <string>

#include <ets/error.hpp>
#include <ets/predictor.hpp>
#include <ets/tracer.hpp>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: predict_from_trace MODEL.etsm TRACE...\n");
    return 2;
  }
  try {
    ets::Predictor predictor;
    const std::string env = predictor.add_model("", argv[1]);  // "" = the environment the model was trained for
    for (int i = 2; i < argc; ++i) {
      const auto iterations = ets::Tracer::load(argv[i]);
      const auto& trace = iterations[ets::Predictor::representative_iteration(iterations)];
      const ets::Prediction p = predictor.predict_detailed(trace, env);
      std::printf("%s on %s: %zu ops\n", argv[i], env.c_str(), trace.ops.size());
      std::printf("  predicted %.3f ms  (interval %.3f .. %.3f ms)\n", p.iteration_us / 1e3, p.lo_us / 1e3,
                  p.hi_us / 1e3);
      std::printf("  operators %.3f ms + framework gaps %.3f ms; forward %.3f, backward %.3f, update %.3f ms\n",
                  p.time_us / 1e3, p.gap_us / 1e3, p.forward_us / 1e3, p.backward_us / 1e3, p.update_us / 1e3);
      if (trace.has_measurement())
        std::printf("  measured  %.3f ms  (error %+.1f%%)\n", trace.measured_us / 1e3,
                    100.0 * (p.iteration_us - trace.measured_us) / trace.measured_us);
    }
    return 0;
  } catch (const ets::Error& e) {  // every ETS failure: a stable id (docs/errors.md) and a message
    std::fprintf(stderr, "predict_from_trace: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "predict_from_trace: %s\n", e.what());
    return 1;
  }
}
