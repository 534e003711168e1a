// Learnable synthetic traces for the trainer, baseline and evaluation tests: op times follow the op's size,
// gaps depend on the op type and on the next op (context only a sequence model sees), iteration = Σ(time+gap).
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "ets/trace.hpp"

namespace ets_test {

inline ets::ExecutionTrace learnable_trace(std::uint32_t seed, int layers, const std::string& family = "synthetic") {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> lg_c(3, 7), lg_s(2, 5), pick(0, 3);
  const char* kinds[] = {"conv2d", "relu", "linear", "add"};
  const double per_flop[] = {2e-4, 0.0, 1.5e-4, 0.0};
  const double per_elem[] = {0.0, 4e-3, 0.0, 6e-3};
  const std::int64_t batch = 8 << (seed % 3);
  ets::ExecutionTrace t;
  t.meta.family = family;
  t.meta.model = family + "-" + std::to_string(seed);
  t.meta.optimizer = "sgd";
  t.meta.batch_size = batch;
  auto add = [&](int k, ets::Phase ph, std::int64_t c, std::int64_t s) {
    ets::OpRecord op;
    op.name = kinds[k];
    op.raw_name = std::string("aten::") + kinds[k];
    op.phase = ph;
    op.inputs.push_back({{batch, c, s, s}, ets::DType::Float32});
    const double elems = static_cast<double>(batch * c * s * s);
    op.flops = k == 0 ? elems * c * 9 * 2 : k == 2 ? elems * c * 2 : elems;
    op.bytes = 8 * elems;
    if (k == 0) {
      op.hyper.set(ets::Hyper::KernelH, 3);
      op.hyper.set(ets::Hyper::InChannels, static_cast<double>(c));
    }
    const double scale = ph == ets::Phase::Backward ? 2.0 : 1.0;
    op.time_us = scale * (3.0 + per_flop[k] * op.flops / 1e3 + per_elem[k] * elems / 10);
    t.ops.push_back(std::move(op));
  };
  std::vector<std::pair<int, std::pair<std::int64_t, std::int64_t>>> net;
  for (int l = 0; l < layers; ++l) net.push_back({pick(rng), {1 << lg_c(rng), 1 << lg_s(rng)}});
  for (const auto& [k, cs] : net) add(k, ets::Phase::Forward, cs.first, cs.second);
  for (auto it = net.rbegin(); it != net.rend(); ++it) add(it->first, ets::Phase::Backward, it->second.first, it->second.second);
  for (const auto& [k, cs] : net)
    if (k == 0 || k == 2) add(3, ets::Phase::Update, cs.first, 1);
  for (std::size_t i = 0; i < t.ops.size(); ++i) {
    const bool switch_next = i + 1 < t.ops.size() && t.ops[i + 1].name != t.ops[i].name;
    t.ops[i].gap_us = 4.0 + (t.ops[i].phase == ets::Phase::Backward ? 6.0 : 0.0) + (switch_next ? 8.0 : 0.0);
  }
  std::normal_distribution<double> noise(0.0, 0.005);
  t.measured_us = t.sum_us() * (1.0 + noise(rng));
  t.meta.extra["label.single_pass_deviation"] = "0.01000";
  return t;
}

inline std::vector<ets::ExecutionTrace> learnable_set(std::uint32_t seed, int count, const std::string& family = "synthetic") {
  std::vector<ets::ExecutionTrace> v;
  for (int i = 0; i < count; ++i) v.push_back(learnable_trace(seed * 1000 + static_cast<std::uint32_t>(i), 8 + i % 13, family));
  return v;
}

}  // namespace ets_test
