// The C ABI (include/ets/ets.h) over ets::Predictor: every entry point catches everything and turns it into an
// ets_status plus a thread-local message, because an exception unwinding into C (or Go, or Python) is undefined.
#include "ets/ets.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <cfenv>
#include <limits>
#if defined(__x86_64__)
#include <xmmintrin.h>  // _mm_getcsr / _mm_setcsr
#endif
#include <new>
#include <string>
#include <string_view>
#include <vector>
#ifdef __GLIBCXX__
#include <cxxabi.h>  // abi::__forced_unwind: how glibc unwinds a thread cancelled by pthread_cancel / pthread_exit
#endif

#include "ets/detail/utf8.hpp"
#include "ets/error.hpp"
#include "ets/predictor.hpp"
#include "ets/version.hpp"

static_assert(ETS_OK == static_cast<int>(ets::Errc::ok) && ETS_INVALID_ARGUMENT == static_cast<int>(ets::Errc::invalid_argument) &&
                  ETS_IO == static_cast<int>(ets::Errc::io) && ETS_PARSE == static_cast<int>(ets::Errc::parse) &&
                  ETS_UNSUPPORTED == static_cast<int>(ets::Errc::unsupported) &&
                  ETS_VERSION == static_cast<int>(ets::Errc::version) &&
                  ETS_CHECKSUM == static_cast<int>(ets::Errc::checksum) && ETS_SHAPE == static_cast<int>(ets::Errc::shape) &&
                  ETS_BACKEND == static_cast<int>(ets::Errc::backend) &&
                  ETS_INVALID_TRACE == static_cast<int>(ets::Errc::invalid_trace) &&
                  ETS_INTERNAL == static_cast<int>(ets::Errc::internal),
              "ets_status must mirror ets::Errc");

struct ets_predictor {
  ets::Predictor impl;
};

namespace {

// Fixed, trivially destructible buffers: reporting never allocates (out of memory is still reported in full), and
// glibc destroys a thread's C++ thread_locals before its pthread_key destructors run, so a host's per-thread cleanup
// that calls the C ABI must not meet destroyed strings. A longer message is cut (between characters), ending in "...".
constexpr std::size_t kErrorCapacity = 4096;
constexpr std::size_t kErrorIdCapacity = 64;
thread_local char t_error[kErrorCapacity];
thread_local char t_error_id[kErrorIdCapacity];

// Appends s at `at`, as much as fits before the terminating NUL; false once something was cut.
bool put(char* buf, std::size_t cap, std::size_t& at, std::string_view s) noexcept {
  const std::size_t n = std::min(s.size(), cap - 1 - at);
  if (n) std::memcpy(buf + at, s.data(), n);  // (a default string_view's data() is null)
  at += n;
  return n == s.size();
}

// `prefix` goes before the message pieces ("[id] " unless the message carries it already, as an ets::Error's what()
// does).
ets_status report(ets_status s, const char* id, bool prefix, std::string_view a, std::string_view b = {},
                  std::string_view c = {}) noexcept {
  std::size_t at = 0;
  put(t_error_id, kErrorIdCapacity, at, id);
  t_error_id[at] = '\0';
  at = 0;
  bool whole = true;
  if (prefix) whole = put(t_error, kErrorCapacity, at, "[") && put(t_error, kErrorCapacity, at, id) &&
                      put(t_error, kErrorCapacity, at, "] ");
  whole = whole && put(t_error, kErrorCapacity, at, a) && put(t_error, kErrorCapacity, at, b) &&
          put(t_error, kErrorCapacity, at, c);
  if (!whole) {  // at == capacity - 1 here
    // Cut before "..." on a character boundary: a message of valid UTF-8 (a non-ASCII job id or path) stays valid,
    // which bindings that decode it (Python's bytes.decode) need.
    const std::size_t cut = ets::detail::utf8_cut(std::string_view(t_error, at), at - 3);
    std::memcpy(t_error + cut, "...", 3);
    at = cut + 3;
  }
  t_error[at] = '\0';
  return s;
}

ets_status fail(ets_status s, const char* id, std::string_view a, std::string_view b = {},
                std::string_view c = {}) noexcept {
  return report(s, id, true, a, b, c);
}

// Runs f, mapping every exception to a status; the message of the last failure stays readable on this thread.
// Not noexcept, and abi::__forced_unwind is rethrown: a scheduler thread cancelled (pthread_cancel) while it waits
// inside ETS (a trace on a hung NFS mount or a FIFO) is unwound by glibc with that "exception", which must reach the
// thread's start routine. Swallowing it (catch (...)) or meeting a noexcept frame aborts the whole process.
//
// The host's floating-point environment is saved, run non-stop inside, and restored on the way out: ETS computes
// with NaN sentinels and may overflow to inf, which is harmless unless the host enabled FP traps (feenableexcept,
// common in numerical and Fortran-based codes), where it would be a SIGFPE that kills the host. The host's exception
// flags come back as they were, so fetestexcept() after a call does not see what ETS raised internally.
// (The forced unwind carries no exception object: UBSan's null check flags the handler's reference binding, which
// is never read, hence no_sanitize("null") on this one function, and noinline, since GCC otherwise inlines it into
// the instrumented C entry points, check included.)
#if defined(__GNUC__) || defined(__clang__)
#define ETS_CAPI_GUARD_ATTRIBUTES __attribute__((no_sanitize("null"), noinline))
#else
#define ETS_CAPI_GUARD_ATTRIBUTES
#endif
template <typename F>
ETS_CAPI_GUARD_ATTRIBUTES ets_status guarded(F&& f) {
#if defined(__x86_64__)
  struct FpEnv {  // double math runs on SSE: MXCSR alone, a few cycles (the x87 state of fenv_t costs ~100 ns)
    unsigned saved = _mm_getcsr();
    FpEnv() noexcept { _mm_setcsr((saved | 0x1F80u) & ~0x3Fu); }  // all exceptions masked, flags cleared
    ~FpEnv() { _mm_setcsr(saved); }
  } fp_env;
#else
  struct FpEnv {
    std::fenv_t saved;
    bool held = std::feholdexcept(&saved) == 0;
    ~FpEnv() {
      if (held) std::fesetenv(&saved);
    }
  } fp_env;
#endif
  try {
    f();
    return ETS_OK;
#ifdef __GLIBCXX__
  } catch (abi::__forced_unwind&) {
    throw;
#endif
  } catch (const ets::Error& e) {
    return report(static_cast<ets_status>(e.code()), e.id().c_str(), false, e.what());  // what() is "[id] message"
  } catch (const std::bad_alloc&) {
    return fail(ETS_INTERNAL, "ets.capi.3", "out of memory");
  } catch (const std::exception& e) {
    return fail(ETS_INTERNAL, "ets.capi.3", "unexpected error: ", e.what());
  } catch (...) {
    return fail(ETS_INTERNAL, "ets.capi.3", "unexpected non-standard exception");
  }
}

// NULL-argument guard: the id is ets.capi.1, the message names the parameter.
#define ETS_C_REQUIRE(ptr, fn, name)                                                        \
  do {                                                                                      \
    if ((ptr) == nullptr) return fail(ETS_INVALID_ARGUMENT, "ets.capi.1", fn ": " name " is NULL"); \
  } while (false)

void copy(const ets::Predictor::Estimate& e, ets_estimate* o) {
  o->iteration_us = e.iteration_us;
  o->lo_us = e.lo_us;
  o->hi_us = e.hi_us;
  o->raw_us = e.raw_us;
  o->correction = e.correction;
  // long is 32 bits on LLP64 (Windows); C89 has no wider portable type. ops stay below 2^31 (the encoder refuses
  // more), and 2^31 observe() calls saturate rather than wrap.
  constexpr std::int64_t kLongMax = std::numeric_limits<long>::max();
  o->observations = static_cast<long>(std::min(e.observations, kLongMax));
  o->ops = static_cast<long>(std::min(e.ops, kLongMax));
}

}  // namespace

extern "C" {

const char* ets_version(void) { return ets::version_string(); }

int ets_abi_version(void) { return ETS_ABI_VERSION; }

const char* ets_last_error(void) { return t_error; }

const char* ets_last_error_id(void) { return t_error_id; }

ets_status ets_predictor_create(ets_predictor** out) {
  ETS_C_REQUIRE(out, "ets_predictor_create", "out");
  *out = nullptr;
  return guarded([&] { *out = new ets_predictor(); });
}

void ets_predictor_destroy(ets_predictor* p) { delete p; }

ets_status ets_predictor_add_model(ets_predictor* p, const char* env, const char* path) {
  ETS_C_REQUIRE(p, "ets_predictor_add_model", "predictor");
  ETS_C_REQUIRE(path, "ets_predictor_add_model", "model_path");
  return guarded([&] { p->impl.add_model(env ? env : "", path); });
}

ets_status ets_predictor_add_default_model(ets_predictor* p, const char* env) {
  ETS_C_REQUIRE(p, "ets_predictor_add_default_model", "predictor");
  return guarded([&] {
    const std::string path = ets::Predictor::find_default_model();
    ETS_CHECK(!path.empty(), ets::Errc::io, "ets.predict.8",
              "no default model: set ETS_MODEL or install share/ets/models/default.etsm");
    p->impl.add_model(env ? env : "", path);
  });
}

ets_status ets_predictor_env_count(const ets_predictor* p, size_t* out) {
  ETS_C_REQUIRE(p, "ets_predictor_env_count", "predictor");
  ETS_C_REQUIRE(out, "ets_predictor_env_count", "out");
  return guarded([&] { *out = p->impl.environments().size(); });
}

namespace {
// The id of the environment at `index` (insertion order); ets.capi.2 past the end.
std::string env_at(const ets_predictor* p, size_t index) {
  const auto envs = p->impl.environments();
  ETS_CHECK(index < envs.size(), ets::Errc::invalid_argument, "ets.capi.2", "environment index {} of {}", index,
            envs.size());
  return envs[index];
}
}  // namespace

ets_status ets_predictor_env_name_size(const ets_predictor* p, size_t index, size_t* out) {
  ETS_C_REQUIRE(p, "ets_predictor_env_name_size", "predictor");
  ETS_C_REQUIRE(out, "ets_predictor_env_name_size", "out");
  return guarded([&] { *out = env_at(p, index).size() + 1; });
}

ets_status ets_predictor_env_name(const ets_predictor* p, size_t index, char* buf, size_t cap) {
  ETS_C_REQUIRE(p, "ets_predictor_env_name", "predictor");
  ETS_C_REQUIRE(buf, "ets_predictor_env_name", "buf");
  return guarded([&] {
    const std::string env = env_at(p, index);
    ETS_CHECK(env.size() < cap, ets::Errc::invalid_argument, "ets.capi.2",
              "environment id '{}' needs {} bytes, the buffer has {}", env, env.size() + 1, cap);
    std::memcpy(buf, env.c_str(), env.size() + 1);
  });
}

ets_status ets_predictor_load_job(ets_predictor* p, const char* job_id, const char* trace_path) {
  ETS_C_REQUIRE(p, "ets_predictor_load_job", "predictor");
  ETS_C_REQUIRE(job_id, "ets_predictor_load_job", "job_id");
  ETS_C_REQUIRE(trace_path, "ets_predictor_load_job", "trace_path");
  return guarded([&] { p->impl.load_job(job_id, trace_path); });
}

ets_status ets_predictor_load_job_limited(ets_predictor* p, const char* job_id, const char* trace_path,
                                          size_t max_bytes) {
  ETS_C_REQUIRE(p, "ets_predictor_load_job_limited", "predictor");
  ETS_C_REQUIRE(job_id, "ets_predictor_load_job_limited", "job_id");
  ETS_C_REQUIRE(trace_path, "ets_predictor_load_job_limited", "trace_path");
  ets::Tracer::LoadOptions options;
  options.max_bytes = max_bytes;
  return guarded([&] { p->impl.load_job(job_id, trace_path, options); });
}

ets_status ets_predictor_load_job_with_batch_size(ets_predictor* p, const char* job_id, const char* trace_path,
                                                  size_t max_bytes, size_t batch_size) {
  ETS_C_REQUIRE(p, "ets_predictor_load_job_with_batch_size", "predictor");
  ETS_C_REQUIRE(job_id, "ets_predictor_load_job_with_batch_size", "job_id");
  ETS_C_REQUIRE(trace_path, "ets_predictor_load_job_with_batch_size", "trace_path");
  return guarded([&] {
    ETS_CHECK(static_cast<std::uint64_t>(batch_size) <=
                  static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()),
              ets::Errc::invalid_argument, "ets.import.4", "batch size {} is beyond the 64-bit signed range",
              batch_size);
    ets::Tracer::LoadOptions options;
    options.max_bytes = max_bytes;
    options.batch_size = static_cast<std::int64_t>(batch_size);
    p->impl.load_job(job_id, trace_path, options);
  });
}

ets_status ets_predictor_remove_model(ets_predictor* p, const char* env) {
  ETS_C_REQUIRE(p, "ets_predictor_remove_model", "predictor");
  ETS_C_REQUIRE(env, "ets_predictor_remove_model", "env");
  return guarded([&] {
    ETS_CHECK(p->impl.remove_model(env), ets::Errc::invalid_argument, "ets.predict.2", "no model for environment '{}'",
              env);
  });
}

ets_status ets_predictor_reset_observations(ets_predictor* p, const char* job_id) {
  ETS_C_REQUIRE(p, "ets_predictor_reset_observations", "predictor");
  ETS_C_REQUIRE(job_id, "ets_predictor_reset_observations", "job_id");
  return guarded([&] { p->impl.reset_observations(job_id); });
}

ets_status ets_predictor_remove_job(ets_predictor* p, const char* job_id) {
  ETS_C_REQUIRE(p, "ets_predictor_remove_job", "predictor");
  ETS_C_REQUIRE(job_id, "ets_predictor_remove_job", "job_id");
  return guarded([&] {
    ETS_CHECK(p->impl.remove_job(job_id), ets::Errc::invalid_argument, "ets.predict.1", "unknown job '{}'", job_id);
  });
}

ets_status ets_predict(const ets_predictor* p, const char* job_id, const char* env, ets_estimate* out) {
  ETS_C_REQUIRE(p, "ets_predict", "predictor");
  ETS_C_REQUIRE(job_id, "ets_predict", "job_id");
  ETS_C_REQUIRE(env, "ets_predict", "env");
  ETS_C_REQUIRE(out, "ets_predict", "out");
  return guarded([&] { copy(p->impl.predict(job_id, env), out); });
}

ets_status ets_predict_batch(const ets_predictor* p, const char* const* job_ids, size_t n_jobs,
                             const char* const* envs, size_t n_envs, ets_estimate* out) {
  ETS_C_REQUIRE(p, "ets_predict_batch", "predictor");
  if (n_jobs == 0 || n_envs == 0) return ETS_OK;
  ETS_C_REQUIRE(job_ids, "ets_predict_batch", "job_ids");
  ETS_C_REQUIRE(envs, "ets_predict_batch", "envs");
  ETS_C_REQUIRE(out, "ets_predict_batch", "out");
  char index[24];
  for (size_t i = 0; i < n_jobs; ++i)
    if (!job_ids[i]) {
      std::snprintf(index, sizeof index, "%zu", i);
      return fail(ETS_INVALID_ARGUMENT, "ets.capi.1", "ets_predict_batch: job_ids[", index, "] is NULL");
    }
  for (size_t i = 0; i < n_envs; ++i)
    if (!envs[i]) {
      std::snprintf(index, sizeof index, "%zu", i);
      return fail(ETS_INVALID_ARGUMENT, "ets.capi.1", "ets_predict_batch: envs[", index, "] is NULL");
    }
  return guarded([&] {
    const std::vector<std::string> j(job_ids, job_ids + n_jobs), e(envs, envs + n_envs);
    const auto m = p->impl.predict_batch(j, e);
    for (size_t i = 0; i < m.values.size(); ++i) copy(m.values[i], out + i);
  });
}

ets_status ets_observe(ets_predictor* p, const char* job_id, const char* env, double measured_us) {
  ETS_C_REQUIRE(p, "ets_observe", "predictor");
  ETS_C_REQUIRE(job_id, "ets_observe", "job_id");
  ETS_C_REQUIRE(env, "ets_observe", "env");
  return guarded([&] { p->impl.observe(job_id, env, measured_us); });
}

}  // extern "C"
