// Consumer of the installed package: compiles and links against it, uses the trace model and the error macro, and
// prints the headers' version (the CMake script checks the line).
#include <cstdio>

#include <ets/error.hpp>
#include <ets/trace.hpp>
#include <ets/version.hpp>

int main() {
  ets::ExecutionTrace t;
  ets::OpRecord op;
  op.name = "conv2d";
  op.time_us = 10;
  op.gap_us = 2;
  t.ops.push_back(op);
  if (t.sum_us() != 12.0) return 1;
  try {
    ETS_THROW(ets::Errc::invalid_argument, "consumer.test.1", "expected {}", 1);
    return 3;  // ETS_THROW must not return
  } catch (const ets::Error& e) {
    if (e.id() != "consumer.test.1") return 2;
  }
  std::printf("ets %s ok\n", ets::version_string());
  return 0;
}
