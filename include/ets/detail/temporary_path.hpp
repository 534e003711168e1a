// The name of a writer's temporary file beside its destination (the library's writers and the ets tool's): the file
// is written there, then renamed over the destination, so a reader never sees half a file. Unique per process and
// call, so two writers of one destination (threads or processes) never share a temporary.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "ets/detail/fnv1a.hpp"
#include "ets/detail/utf8.hpp"

#if defined(_WIN32)
#include <process.h>
#else
#include <unistd.h>
#endif

namespace ets::detail {

/// The longest file name (one path component) the library creates: NAME_MAX of Linux's file systems, and of NTFS in
/// UTF-16 units.
inline constexpr std::size_t kMaxFileName = 255;

/// "<path><tag>-<pid>-<n>", e.g. "model.etsm.tmp-4242-0". When that name would be longer than kMaxFileName (a legal
/// destination name of 240-255 bytes), the destination's name is cut, at a UTF-8 character's start, and followed by
/// "~" and a hash of the whole name: "<cut name>~<16 hex digits><tag>-<pid>-<n>", in the same folder.
inline std::string temporary_path(const std::string& path, const char* tag) {
  static std::atomic<unsigned> counter{0};
#if defined(_WIN32)
  const long pid = static_cast<long>(_getpid());
  const std::size_t slash = path.find_last_of("/\\");
#else
  const long pid = static_cast<long>(getpid());
  const std::size_t slash = path.rfind('/');
#endif
  const std::string suffix = fmt::format("{}-{}-{}", tag, pid, counter++);
  const std::size_t name_at = slash == std::string::npos ? 0 : slash + 1;
  const std::size_t name_size = path.size() - name_at;
  if (name_size + suffix.size() <= kMaxFileName) return path + suffix;
  constexpr std::size_t kHash = 17;  // "~" and 16 hex digits
  std::size_t keep = kMaxFileName > suffix.size() + kHash ? kMaxFileName - suffix.size() - kHash : 0;
  keep = std::min(keep, name_size);
  keep = utf8_cut(std::string_view(path).substr(name_at), keep);  // never half a UTF-8 character
  const std::uint64_t hash = fnv1a(path.data() + name_at, name_size);
  return fmt::format("{}~{:016x}{}", path.substr(0, name_at + keep), hash, suffix);
}

}  // namespace ets::detail
