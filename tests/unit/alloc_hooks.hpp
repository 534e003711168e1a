// Replaces the global operator new / delete of the test executable whose one .cpp includes this, so a test can count
// this thread's allocations or make them fail. Not under ASan / TSan, which own operator new themselves: there
// ETS_TEST_ALLOC_HOOKS is 0 and the tests that need the hooks compile out.
#pragma once

#include <malloc.h>  // malloc_usable_size: the bytes an allocation holds, for the live / peak count

#include <cstddef>
#include <cstdlib>
#include <new>
#include <utility>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define ETS_TEST_ALLOC_HOOKS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define ETS_TEST_ALLOC_HOOKS 0
#endif
#endif
#ifndef ETS_TEST_ALLOC_HOOKS
#define ETS_TEST_ALLOC_HOOKS 1
#endif

namespace ets_test::alloc {
enum class Fail { none, next, all };
inline thread_local bool counting = false;  ///< count this thread's allocations into `count`
inline thread_local long count = 0;
inline thread_local std::size_t largest = 0;  ///< the largest allocation counted (with `counting`)
inline thread_local Fail fail = Fail::none;  ///< next: only the next allocation throws bad_alloc; all: every one
inline thread_local long fail_after = -1;  ///< >= 0: that many more allocations succeed, then one throws (then -1)
/// measure: this thread's heap bytes, allocated minus freed since `live` was last zeroed, and their highest value
/// (memory freed that was allocated before makes `live` go below 0)
inline thread_local bool measure = false;
inline thread_local long long live = 0;
inline thread_local long long peak = 0;

/// The highest heap this thread holds while `f()` runs, counted from 0 at its start (`measure` is off again however f
/// ends, so an exception does not leave the hooks counting).
template <class F>
long long peak_while(F&& f) {
  live = peak = 0;
  measure = true;
  struct Off {
    ~Off() { measure = false; }
  } off;
  std::forward<F>(f)();
  return peak;
}
}  // namespace ets_test::alloc

#if ETS_TEST_ALLOC_HOOKS
// (GCC flags free() in a replaced operator delete as mismatched once both are inlined; they are a matched pair.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void* operator new(std::size_t n) {
  using namespace ets_test::alloc;
  if (fail != Fail::none) {
    if (fail == Fail::next) fail = Fail::none;
    throw std::bad_alloc();
  }
  if (fail_after == 0) {
    fail_after = -1;
    throw std::bad_alloc();
  }
  if (fail_after > 0) --fail_after;
  if (counting) {
    ++count;
    if (n > largest) largest = n;
  }
  if (void* p = std::malloc(n ? n : 1)) {
    if (measure) {
      live += static_cast<long long>(malloc_usable_size(p));
      if (live > peak) peak = live;
    }
    return p;
  }
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  if (p && ets_test::alloc::measure) ets_test::alloc::live -= static_cast<long long>(malloc_usable_size(p));
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept { operator delete(p); }
#endif
