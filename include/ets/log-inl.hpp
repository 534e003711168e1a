// Definitions for log.hpp.
#pragma once

#include "ets/log.hpp"

namespace ets {
namespace detail {
ETS_INLINE LogState& log_state() noexcept {
  static LogState state;
  return state;
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
  std::lock_guard<std::mutex> lock(s.mutex);
  s.sink = std::move(next);
  s.min_level = min_level;
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
