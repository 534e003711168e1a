// One program, two ways of using ETS: a library built on ets::ets_header_only (header_only_part.cpp) and this
// file on the compiled ets::ets. Process-wide state (the log sink, the CUDA backend slot) must be one object for
// both: a sink installed by either sees the messages of the other and of the compiled importers.
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <ets/bilstm_predictor.hpp>
#include <ets/log.hpp>

#include "lstm_reference.hpp"

namespace mixed {
void install_sink(std::vector<std::string>* seen);
void log_from_header_only(const char* what);
void clear_sink();
bool cuda_factory_set();
#ifdef ETS_TEST_AVX2_PART
double forward_sum_avx2(const ets::LstmWeights& w, const std::vector<float>& x, int windows, int width);
#endif
#ifdef ETS_TEST_AVX512_PART
double forward_sum_avx512(const ets::LstmWeights& w, const std::vector<float>& x, int windows, int width);
#endif
}  // namespace mixed

namespace {
std::unique_ptr<ets::InferenceBackend> no_backend(const ets::LstmWeights&) { return nullptr; }
}  // namespace

TEST_CASE("a header-only library and the compiled library in one program share the log sink", "[log][mixed]") {
  std::vector<std::string> seen;
  mixed::install_sink(&seen);  // installed through the header-only code
  ets::log(ets::LogLevel::warn, "compiled {}", 1);
  mixed::log_from_header_only("x");
  mixed::clear_sink();
  CHECK(seen == std::vector<std::string>{"compiled 1", "header-only x"});

  std::vector<std::string> seen2;
  ets::set_log_sink([&](ets::LogLevel, std::string_view m) { seen2.emplace_back(m); });  // installed here
  mixed::log_from_header_only("y");
  ets::set_log_sink(nullptr);
  CHECK(seen2 == std::vector<std::string>{"header-only y"});
}

TEST_CASE("a header-only library and the compiled library in one program share the CUDA backend slot",
          "[mixed]") {
  const auto before = ets::detail::cuda_backend_factory();
  ets::detail::set_cuda_backend_factory(&no_backend);
  CHECK(mixed::cuda_factory_set());
  ets::detail::set_cuda_backend_factory(before);
}

TEST_CASE("header-only code built for wider instruction sets leaves the compiled library's kernels alone",
          "[mixed]") {
  // Objects built with -mavx2 -mfma and with AVX-512 come ahead of libets in this program's link. Their kernels
  // have other panel widths; merged with the library's (one symbol per name) they summed to -1.3e29, or crashed
  // on panels not aligned for AVX-512, even though their own code never ran.
  const ets::LstmConfig c{20, 24, 2, 2, true};
  const auto w = ets_test::random_lstm_weights(c, 11);
  const int windows = 7, width = 12;
  std::vector<float> x(static_cast<std::size_t>(windows * width * c.input_size));
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& v : x) v = u(rng);
  const auto ref = ets_test::reference_forward(w, x, windows, width);
  double ref_sum = 0;
  for (double v : ref) ref_sum += v;
  const ets::BiLstmPredictor p(w, ets::Backend::Cpu);  // the compiled library's
  std::vector<float> y(ref.size());
  p.predict(x.data(), windows, width, y.data());
  REQUIRE(y.size() == ref.size());
  for (std::size_t i = 0; i < y.size(); ++i) CHECK(y[i] == Approx(ref[i]).margin(1e-4));
#if defined(ETS_TEST_AVX2_PART) && (defined(__GNUC__) || defined(__clang__))
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    CHECK(mixed::forward_sum_avx2(w, x, windows, width) == Approx(ref_sum).margin(1e-3));
#endif
#if defined(ETS_TEST_AVX512_PART) && (defined(__GNUC__) || defined(__clang__))
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512bw"))
    CHECK(mixed::forward_sum_avx512(w, x, windows, width) == Approx(ref_sum).margin(1e-3));
#endif
  (void)ref_sum;
}
