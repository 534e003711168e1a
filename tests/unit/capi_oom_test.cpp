// ets-test-labels: unit
// The C ABI when memory runs out: the status, the message and the id still say what happened (ets.capi.3), even when
// storing the message itself fails. operator new is replaced to fail on demand (not under ASan / TSan, which own it).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "ets/ets.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define ETS_TEST_FAIL_ALLOCATIONS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define ETS_TEST_FAIL_ALLOCATIONS 0
#endif
#endif
#ifndef ETS_TEST_FAIL_ALLOCATIONS
#define ETS_TEST_FAIL_ALLOCATIONS 1
#endif

namespace {
thread_local bool fail_allocations = false;
}  // namespace

#if ETS_TEST_FAIL_ALLOCATIONS
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void* operator new(std::size_t n) {
  if (fail_allocations) throw std::bad_alloc();
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

TEST_CASE("C ABI out of memory: ETS_INTERNAL with the ets.capi.3 message, even when the message cannot be stored") {
  ets_predictor* p = nullptr;
  fail_allocations = true;  // every allocation fails: the predictor's and the error report's
  const ets_status s = ets_predictor_create(&p);
  fail_allocations = false;
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
