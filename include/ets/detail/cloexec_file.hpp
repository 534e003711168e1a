// How the library opens the files it reads and writes: close-on-exec, so that a process a host program starts from
// another thread meanwhile (fork + exec: a job step, a plug-in) does not inherit the descriptor, which would keep a
// file, a pipe's end or a lock open in the child and beyond ETS's own close.
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <memory>
#include <string>

#if !defined(_WIN32)
#include <fcntl.h>
#include <unistd.h>
#endif

namespace ets::detail {

/// std::fopen for the modes "rb" (read) and "wb" (create or truncate, 0666 less the umask), with the descriptor
/// close-on-exec (O_CLOEXEC; on Windows, not inherited). nullptr with errno set on a failure, as std::fopen.
inline std::FILE* fopen_cloexec(const char* path, const char* mode) {
#if defined(_WIN32)
  const std::string m = std::string(mode) + "N";
  return std::fopen(path, m.c_str());
#else
  const bool write = mode[0] == 'w';
  const int fd = ::open(path, (write ? O_WRONLY | O_CREAT | O_TRUNC : O_RDONLY) | O_CLOEXEC, 0666);
  if (fd < 0) return nullptr;
  std::FILE* f = ::fdopen(fd, mode);
  if (!f) {
    const int err = errno;
    ::close(fd);
    errno = err;
  }
  return f;
#endif
}

struct FileCloser {
  void operator()(std::FILE* f) const noexcept { std::fclose(f); }
};
/// A FILE* closed on every way out.
using UniqueFile = std::unique_ptr<std::FILE, FileCloser>;

/// Appends the rest of `f` to `out` (a std::string or a std::vector of bytes), at most `limit` bytes more plus one
/// (so that a caller can tell a file over the limit). Returns false on a read error (std::ferror).
/// Reads into the capacity `out` has first: a caller that reserved the file's size gets no reallocation (growing
/// past the capacity to look for more doubled the buffer on every read of a file of known size).
template <typename Bytes>
bool read_rest(std::FILE* f, Bytes& out, std::size_t limit = static_cast<std::size_t>(-1) - 1) {
  constexpr std::size_t kChunk = std::size_t{1} << 16;
  std::size_t taken = 0;
  for (;;) {
    std::size_t want = taken > limit ? 0 : (limit - taken + 1 < kChunk ? limit - taken + 1 : kChunk);
    if (want == 0) break;
    const std::size_t old = out.size();
    if (out.capacity() > old) {
      want = std::min(want, static_cast<std::size_t>(out.capacity() - old));
    } else {  // full: one byte tells whether there is more before the buffer grows
      char c;
      if (std::fread(&c, 1, 1, f) == 0) break;
      out.push_back(static_cast<typename Bytes::value_type>(c));
      ++taken;
      continue;
    }
    out.resize(old + want);
    const std::size_t n = std::fread(reinterpret_cast<char*>(out.data()) + old, 1, want, f);
    out.resize(old + n);
    taken += n;
    if (n == 0) break;
  }
  return !std::ferror(f);
}

}  // namespace ets::detail
