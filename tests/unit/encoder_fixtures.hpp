// Synthetic execution traces for the encoder/aggregator tests and the encode benchmark: a deterministic
// CNN-like op mix (Zipf-ranked types, forward → backward → update, realistic shapes and timings).
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "ets/feature_spec.hpp"
#include "ets/trace.hpp"

namespace ets_test {

/// One op with the fields the encoder reads; everything else stays default.
inline ets::OpRecord make_op(const std::string& name, ets::Phase phase = ets::Phase::Forward,
                             double time_us = 10.0, double gap_us = 1.0) {
  ets::OpRecord op;
  op.name = name;
  op.raw_name = "aten::" + name;
  op.phase = phase;
  op.time_us = time_us;
  op.gap_us = gap_us;
  return op;
}

/// A trace of `n` ops drawn from `types` op types with Zipf(1.1) frequencies.
inline ets::ExecutionTrace synthetic_trace(std::size_t n, std::uint32_t seed, int types = 40) {
  std::mt19937_64 rng(seed);
  std::vector<double> w(static_cast<std::size_t>(types));
  for (int i = 0; i < types; ++i) w[static_cast<std::size_t>(i)] = 1.0 / std::pow(i + 1.0, 1.1);
  std::discrete_distribution<int> pick(w.begin(), w.end());
  std::uniform_int_distribution<int> ch(1, 9), hw(2, 8);
  std::lognormal_distribution<double> dur(3.0, 1.5), gap(1.0, 1.0);
  std::bernoulli_distribution coin(0.2);

  ets::ExecutionTrace t;
  t.meta.optimizer = (seed % 3 == 0) ? "SGD" : (seed % 3 == 1) ? "adam" : "";
  t.meta.batch_size = (seed % 4 == 3) ? 0 : 16 << (seed % 4);
  t.ops.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const int ty = pick(rng);
    ets::OpRecord op = make_op("op" + std::to_string(ty),
                               i < n * 4 / 10 ? ets::Phase::Forward
                               : i < n * 9 / 10 ? ets::Phase::Backward
                                                : ets::Phase::Update,
                               dur(rng), gap(rng));
    const std::int64_t c = 1 << ch(rng), s = 1 << hw(rng);
    const int n_in = 1 + ty % 3;
    for (int k = 0; k < n_in; ++k)
      op.inputs.push_back({k == 0 ? std::vector<std::int64_t>{32, c, s, s} : std::vector<std::int64_t>{c, c},
                           ty % 5 == 0 ? ets::DType::Float16 : ets::DType::Float32});
    if (ty % 4 == 0) {
      op.hyper.set(ets::Hyper::KernelH, 1 + 2 * (ty % 3));
      op.hyper.set(ets::Hyper::KernelW, 1 + 2 * (ty % 3));
      op.hyper.set(ets::Hyper::InChannels, static_cast<double>(c));
      op.hyper.set(ets::Hyper::OutChannels, static_cast<double>(2 * c));
    }
    if (!coin(rng)) op.flops = 2.0 * static_cast<double>(c * c * s * s);
    op.bytes = 4.0 * static_cast<double>(c * s * s);
    t.ops.push_back(std::move(op));
  }
  return t;
}

/// A FeatureSpec fitted once on three 300-op synthetic traces (seeds 0-2), shared by a test file's cases.
inline const ets::FeatureSpec& fitted_spec() {
  static const ets::FeatureSpec s = [] {
    std::vector<ets::ExecutionTrace> train;
    for (std::uint32_t i = 0; i < 3; ++i) train.push_back(synthetic_trace(300, i));
    return ets::FeatureSpec::fit(train);
  }();
  return s;
}

}  // namespace ets_test
