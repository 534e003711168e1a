// The name of a writer's temporary file beside its destination (the library's writers and the ets tool's): the file
// is written there, then renamed over the destination, so a reader never sees half a file. Unique per process and
// call, so two writers of one destination (threads or processes) never share a temporary.
#pragma once

#include <atomic>
#include <string>

#include <fmt/format.h>

#if defined(_WIN32)
#include <process.h>
#else
#include <unistd.h>
#endif

namespace ets::detail {

/// "<path><tag>-<pid>-<n>", e.g. "model.etsm.tmp-4242-0".
inline std::string temporary_path(const std::string& path, const char* tag) {
  static std::atomic<unsigned> counter{0};
#if defined(_WIN32)
  const long pid = static_cast<long>(_getpid());
#else
  const long pid = static_cast<long>(getpid());
#endif
  return fmt::format("{}{}-{}-{}", path, tag, pid, counter++);
}

}  // namespace ets::detail
