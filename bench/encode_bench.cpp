// Encode benchmark: time to turn 100,000 ops into the N × 12 × F window tensor (target ≤ 50 ms on one core),
// split into feature rows vs window copies, plus the 100 × 1,000-op batched case and aggregation.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <vector>

#include "../tests/unit/encoder_fixtures.hpp"
#include "ets/aggregator.hpp"
#include "ets/window_encoder.hpp"

namespace {

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

// Best thread-CPU time (what "on one core" means on a shared machine: waiting for a core is not counted);
// the median wall-clock time goes to *wall.
template <typename F>
double best_ms(int reps, F&& f, double* wall = nullptr) {
  std::vector<double> cpu, ms;
  for (int r = 0; r < reps; ++r) {
    const double c0 = thread_cpu_ms();
    const auto t0 = std::chrono::steady_clock::now();
    f();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    cpu.push_back(thread_cpu_ms() - c0);
  }
  std::sort(ms.begin(), ms.end());
  if (wall) *wall = ms[ms.size() / 2];
  return *std::min_element(cpu.begin(), cpu.end());
}

}  // namespace

int main() {
  std::vector<ets::ExecutionTrace> train;
  for (std::uint32_t i = 0; i < 20; ++i) train.push_back(ets_test::synthetic_trace(2000, i));
  const auto spec = ets::FeatureSpec::fit(train);
  const ets::WindowEncoder enc(spec);
  const auto big = ets_test::synthetic_trace(100000, 4242, 44);  // a few types unseen in training
  std::vector<ets::ExecutionTrace> many;
  for (std::uint32_t i = 0; i < 100; ++i) many.push_back(ets_test::synthetic_trace(1000, 500 + i));

  std::printf("features F = %d (one-hot K = %d of %d types), width %d, stride %d\n", spec.feature_count(),
              spec.one_hot_count(), spec.vocab_size(), enc.width(), enc.stride());
  const int reps = 7;
  double med = 0;
  std::vector<float> rows(big.ops.size() * static_cast<std::size_t>(spec.feature_count()));
  double best = best_ms(reps, [&] { spec.encode_ops(big, rows.data()); }, &med);
  std::printf("feature rows, 100000 ops:            cpu %7.2f ms  wall(median) %7.2f ms\n", best, med);
  ets::WindowBatch b;
  best = best_ms(reps, [&] { b = enc.encode(big); }, &med);
  std::printf("encode 100000 ops, fresh batch:      cpu %7.2f ms  wall(median) %7.2f ms  (%d windows, %.0f MB)\n", best,
              med, b.windows, static_cast<double>(b.x.size() * sizeof(float)) / 1e6);
  ets::WindowBatch reused;
  enc.encode_into(big, reused);
  best = best_ms(reps, [&] { enc.encode_into(big, reused); }, &med);
  std::printf("encode_into 100000 ops, reused batch: cpu %7.2f ms  wall(median) %7.2f ms\n", best, med);
  ets::WindowBatch mb;
  best = best_ms(reps, [&] { mb = enc.encode(many); }, &med);
  std::printf("encode 100 traces x 1000 ops:        cpu %7.2f ms  wall(median) %7.2f ms  (%d windows)\n", best, med,
              mb.windows);
  const ets::Aggregator agg(spec);
  ets::Prediction p;
  best = best_ms(reps, [&] { p = agg.aggregate(b, b.y); }, &med);
  std::printf("aggregate 100000 ops:                cpu %7.2f ms  wall(median) %7.2f ms  (iteration %.0f us vs %.0f)\n",
              best, med, p.iteration_us, big.sum_us());
  return 0;
}
