// Optional diagnostics sink. ETS prints nothing by itself: messages go to the installed sink or nowhere.
// Schedulers route them into their own logging; the CLI installs a stderr sink.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "ets/common.hpp"

namespace ets {

enum class LogLevel : int { debug = 0, info = 1, warn = 2, error = 3 };

using LogSink = std::function<void(LogLevel, std::string_view)>;

/// Installs (or, with an empty function, removes) the process-wide sink. Thread-safe.
ETS_INLINE void set_log_sink(LogSink sink, LogLevel min_level = LogLevel::info);

/// Sends one message to the sink if one is installed and the level passes. Thread-safe; never throws.
ETS_INLINE void log_message(LogLevel level, std::string_view message) noexcept;

/// Formats and logs; formatting is skipped when no sink would take the message.
template <typename... Args>
void log(LogLevel level, fmt::format_string<Args...> format, Args&&... args) noexcept;

namespace detail {
struct LogState {
  std::mutex mutex;
  std::shared_ptr<const LogSink> sink;
  LogLevel min_level = LogLevel::info;
};
// Always inline, in the compiled library too: its static is then one object per process (vague linkage, merged by
// the linker and the loader) even where a library built on ets::ets_header_only shares a program with ets::ets.
ETS_DETAIL_PROCESS_WIDE inline LogState& log_state() noexcept;
ETS_INLINE bool log_enabled(LogLevel level) noexcept;
}  // namespace detail

template <typename... Args>
void log(LogLevel level, fmt::format_string<Args...> format, Args&&... args) noexcept {
  if (!detail::log_enabled(level)) return;
  try {
    log_message(level, fmt::format(format, std::forward<Args>(args)...));
  } catch (...) {  // a diagnostic must never take the caller down
  }
}

}  // namespace ets

#ifndef ETS_COMPILED_LIB
#include "ets/log-inl.hpp"
#endif
