// Small untrained models for the Predictor, C ABI and `ets predict` tests until a trained default model exists:
// a FeatureSpec fitted on given traces + PyTorch-default random BiLSTM weights + a self-test, as a ModelFile.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "ets/bilstm_predictor.hpp"
#include "ets/feature_spec.hpp"
#include "ets/model_file.hpp"
#include "ets/trace.hpp"
#include "ets/trainer.hpp"
#include "ets/window_encoder.hpp"

namespace ets_test {

/// A valid .etsm-ready model whose encoder is fitted on `fit_on`; outputs are random but deterministic per seed.
inline ets::ModelFile small_model(const std::vector<ets::ExecutionTrace>& fit_on, std::uint64_t seed = 1,
                                  const std::string& env = "test-env", int hidden = 8, int layers = 2) {
  const ets::FeatureSpec spec = ets::FeatureSpec::fit(fit_on);
  ets::LstmConfig cfg;
  cfg.input_size = spec.feature_count();
  cfg.hidden = hidden;
  cfg.layers = layers;
  cfg.outputs = 2;
  cfg.bidirectional = true;
  ets::ModelFile m;
  m.weights = ets::Trainer::init(cfg, seed);
  m.window_width = ets::WindowEncoder::kDefaultWidth;
  m.window_stride = ets::WindowEncoder::kDefaultStride;
  m.encoder_state = spec.serialize();
  // closed form of the spec's label transform, as the trainer stores it (z = (log1p(us) − mean) / scale)
  for (int ch = 0; ch < 2; ++ch) {
    const double z0 = spec.normalize_label(ch, 0.0), z1 = spec.normalize_label(ch, 1.718281828459045);
    const double scale = 1.0 / (z1 - z0), mean = -z0 * scale;
    (ch == 0 ? m.labels.time_mean : m.labels.gap_mean) = mean;
    (ch == 0 ? m.labels.time_scale : m.labels.gap_scale) = scale;
  }
  m.hardware_env = env;
  m.provenance["trainer"] = "none (random weights, tests/unit/predict_fixtures.hpp)";
  m.provenance["seed"] = std::to_string(seed);
  const ets::WindowEncoder enc(spec, m.window_width, m.window_stride);
  const ets::WindowBatch b = enc.encode(fit_on.front());
  const int st = std::min(b.windows, 2);
  m.self_test.windows = st;
  m.self_test.width = b.width;
  m.self_test.input.assign(b.x.begin(), b.x.begin() + static_cast<std::ptrdiff_t>(st) * b.width * b.features);
  m.self_test.expected.resize(static_cast<std::size_t>(st) * b.width * 2);
  ets::BiLstmPredictor(m.weights, ets::Backend::Cpu)
      .predict(m.self_test.input.data(), st, b.width, m.self_test.expected.data());
  return m;
}

}  // namespace ets_test
