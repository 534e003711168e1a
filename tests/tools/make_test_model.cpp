// Writes a small untrained .etsm for tests and examples (no trained default model is needed): a FeatureSpec fitted
// on a trace file's iterations + random BiLSTM weights. Usage: make_test_model OUT.etsm TRACE [ENV] [SEED].
#include <cstdio>
#include <exception>
#include <string>

#include "ets/model_file.hpp"
#include "ets/tracer.hpp"
#include "../unit/predict_fixtures.hpp"

int main(int argc, char** argv) {
  if (argc < 3 || argc > 5) {
    std::fprintf(stderr, "usage: make_test_model OUT.etsm TRACE [ENV] [SEED]\n");
    return 2;
  }
  try {
    const auto traces = ets::Tracer::load(argv[2]);
    const std::string env = argc > 3 ? argv[3] : "test-env";
    const std::uint64_t seed = argc > 4 ? std::stoull(argv[4]) : 1;
    ets::save_model(ets_test::small_model(traces, seed, env), argv[1]);
    std::printf("wrote %s (env %s, fitted on %zu iteration(s) of %s)\n", argv[1], env.c_str(), traces.size(), argv[2]);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_test_model: %s\n", e.what());
    return 1;
  }
}
