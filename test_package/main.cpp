// Conan test_package program: exercises the public API through the packaged headers and library.
// Exits non-zero when the package's headers, library or version disagree.
#include <cstdio>
#include <string>
#include <string_view>

#include <ets/error.hpp>
#include <ets/log.hpp>
#include <ets/trace.hpp>
#include <ets/version.hpp>
#if defined(ETS_TEST_CUDA)
#include <ets/cuda/device.hpp>
#endif

int main() {
  ets::ExecutionTrace trace;
  for (double t : {10.0, 20.0, 30.0}) {
    ets::OpRecord op;
    op.name = "linear";
    op.time_us = t;
    op.gap_us = 5.0;
    trace.ops.push_back(op);
  }
  if (trace.sum_us() != 75.0) return 1;

  std::string logged;
  ets::set_log_sink([&](ets::LogLevel, std::string_view m) { logged = std::string(m); });
  ets::log(ets::LogLevel::warn, "{} ops", trace.ops.size());
  ets::set_log_sink({});
  if (logged != "3 ops") return 2;

  try {
    ETS_THROW(ets::Errc::invalid_argument, "consumer.test.1", "bad {}", 42);
  } catch (const ets::Error& e) {
    if (e.code() != ets::Errc::invalid_argument || e.id() != "consumer.test.1") return 3;
  }
#if defined(ETS_TEST_CUDA)
  std::string why;
  std::printf("cuda device: %d (%s)\n", ets::cuda::device_available(&why) ? 1 : 0, why.c_str());
#endif
  std::printf("ets %s test_package ok (cuda: %d)\n", ets::version_string(), ets::built_with_cuda() ? 1 : 0);
  return 0;
}
