// Definitions for log.hpp.
#pragma once

#include "ets/log.hpp"

namespace ets {
namespace detail {
ETS_DETAIL_PROCESS_WIDE inline LogState& log_state() noexcept {  // inline in both modes: see log.hpp
  // Never destroyed: a thread still logging while the process exits would lock a destroyed mutex. The sink alone
  // is dropped at exit (by `release`, destroyed before the state would have been), so a sink that owns a file still
  // closes it, and later messages go nowhere.
  alignas(LogState) static unsigned char storage[sizeof(LogState)];
  static LogState* const state = new (storage) LogState;
  static const struct SinkRelease {
    ~SinkRelease() {
      std::shared_ptr<const LogSink> old;
      {
        std::lock_guard<std::mutex> lock(state->mutex);
        old.swap(state->sink);
      }
    }  // `old` ends here, outside the lock: its destructor may log
  } release;
  (void)release;
  return *state;
}
ETS_INLINE bool log_enabled(LogLevel level) noexcept {
  auto& s = log_state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.sink != nullptr && static_cast<int>(level) >= static_cast<int>(s.min_level);
}
}  // namespace detail

ETS_INLINE void set_log_sink(LogSink sink, LogLevel min_level) {
  auto& s = detail::log_state();
  std::shared_ptr<const LogSink> next;
  if (sink) next = std::make_shared<const LogSink>(std::move(sink));
  std::shared_ptr<const LogSink> old;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    old = std::move(s.sink);
    s.sink = std::move(next);
    s.min_level = min_level;
  }
  // The replaced sink is destroyed here, outside the lock: whatever it owns may log (or install a sink) as it goes.
}

ETS_INLINE void log_message(LogLevel level, std::string_view message) noexcept {
  std::shared_ptr<const LogSink> sink;
  {
    auto& s = detail::log_state();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.sink || static_cast<int>(level) < static_cast<int>(s.min_level)) return;
    sink = s.sink;
  }
  try {
    (*sink)(level, message);
  } catch (...) {  // sinks belong to the host program; their failures stay there
  }
}
}  // namespace ets
