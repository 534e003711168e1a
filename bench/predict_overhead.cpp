// predict_overhead: where the time of `ets predict` on one trace goes — import (Tracer::load of the file), encoding
// (WindowEncoder), the BiLSTM forward (CPU) and aggregation — with the model loaded once, as a long-lived scheduler
// or one `ets predict` call over many traces would. Stages run back to back in each round; medians over rounds.
// (The CPU forward flushes denormals itself for its duration; see cpu_kernel::DenormalGuard.)
// Usage: predict_overhead MODEL.etsm TRACE [ROUNDS=21] [--json]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ets/aggregator.hpp"
#include "ets/bilstm_predictor.hpp"
#include "ets/error.hpp"
#include "ets/feature_spec.hpp"
#include "ets/model_file.hpp"
#include "ets/predictor.hpp"
#include "ets/tracer.hpp"
#include "ets/window_encoder.hpp"

namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: predict_overhead MODEL.etsm TRACE [ROUNDS=21] [--json]\n");
    return 2;
  }
  const std::string model_path = argv[1], trace_path = argv[2];
  int rounds = 21;
  bool json = false;
  for (int i = 3; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0) {
      json = true;
    } else {  // a whole number of rounds (at least 3, for a median), nothing else
      char* end = nullptr;
      const long v = std::strtol(argv[i], &end, 10);
      if (end == argv[i] || *end != '\0' || v < 3 || v > 100000) {
        std::fprintf(stderr, "predict_overhead: ROUNDS must be a whole number in 3..100000, not '%s'\n", argv[i]);
        return 2;
      }
      rounds = static_cast<int>(v);
    }
  }
  try {
    auto t0 = Clock::now();
    const ets::ModelFile model = ets::load_model(model_path);
    const double load_model_ms = ms_since(t0);
    const ets::WindowEncoder encoder(ets::FeatureSpec::deserialize(model.encoder_state), model.window_width,
                                     model.window_stride);
    const ets::BiLstmPredictor predictor(model.weights, ets::Backend::Cpu);
    const ets::Aggregator aggregator(encoder.spec());
    std::vector<double> imp, enc, fwd, agg;
    std::size_t ops = 0, windows = 0;
    double predicted = 0;
    for (int r = 0; r < rounds; ++r) {
      t0 = Clock::now();
      const auto its = ets::Tracer::load(trace_path);
      const ets::ExecutionTrace& trace = its[ets::Predictor::representative_iteration(its)];
      imp.push_back(ms_since(t0));
      t0 = Clock::now();
      const ets::WindowBatch batch = encoder.encode(trace);
      enc.push_back(ms_since(t0));
      t0 = Clock::now();
      const std::vector<float> y = predictor.predict(batch);
      fwd.push_back(ms_since(t0));
      t0 = Clock::now();
      const ets::Prediction p = aggregator.aggregate(batch, y.data(), y.size());
      agg.push_back(ms_since(t0));
      ops = trace.ops.size();
      windows = static_cast<std::size_t>(batch.windows);
      predicted = p.iteration_us;
    }
    const double i = median(imp), e = median(enc), f = median(fwd), a = median(agg);
    const double overhead = (i + e + a) / f;
    if (json) {
      std::printf("{\"trace\":\"%s\",\"ops\":%zu,\"windows\":%zu,\"rounds\":%d,\"load_model_ms\":%.3f,\"import_ms\":%.3f,"
                  "\"encode_ms\":%.3f,\"forward_ms\":%.3f,\"aggregate_ms\":%.3f,\"overhead_vs_forward\":%.4f,"
                  "\"predicted_us\":%.3f}\n",
                  trace_path.c_str(), ops, windows, rounds, load_model_ms, i, e, f, a, overhead, predicted);
    } else {
      std::printf("%s: %zu ops, %zu windows, medians of %d rounds (model loaded once in %.1f ms)\n", trace_path.c_str(),
                  ops, windows, rounds, load_model_ms);
      std::printf("  import %.3f ms, encode %.3f ms, BiLSTM forward %.3f ms, aggregate %.3f ms\n", i, e, f, a);
      std::printf("  import + encode + aggregate = %.1f%% of the forward\n", 100 * overhead);
    }
  } catch (const ets::Error& err) {
    std::fprintf(stderr, "predict_overhead: %s\n", err.what());
    return 1;
  }
  return 0;
}
