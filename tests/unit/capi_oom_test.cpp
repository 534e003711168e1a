// ets-test-labels: unit
// The C ABI when memory runs out: the status, the message and the id still say what happened (ets.capi.3); storing
// the message needs no memory (a fixed per-thread buffer). operator new is replaced to fail on demand (not under ASan / TSan, which own it).
#include <catch2/catch.hpp>

#include <cstring>
#include <string>

#include "alloc_hooks.hpp"
#include "ets/ets.h"

#if ETS_TEST_ALLOC_HOOKS

TEST_CASE("C ABI out of memory: ETS_INTERNAL with the ets.capi.3 message, stored without memory") {
  ets_predictor* p = nullptr;
  ets_test::alloc::fail = ets_test::alloc::Fail::all;  // every allocation fails: the predictor's and the report's
  const ets_status s = ets_predictor_create(&p);
  ets_test::alloc::fail = ets_test::alloc::Fail::none;
  CHECK(s == ETS_INTERNAL);
  CHECK(p == nullptr);
  CHECK(std::string(ets_last_error_id()) == "ets.capi.3");
  CHECK(std::string(ets_last_error()).rfind("[ets.capi.3] out of memory", 0) == 0);
  // A later failure with memory available is reported in full again.
  CHECK(ets_predictor_create(nullptr) == ETS_INVALID_ARGUMENT);
  CHECK(std::string(ets_last_error_id()) == "ets.capi.1");
  CHECK(std::strstr(ets_last_error(), "out is NULL") != nullptr);
}
#endif
