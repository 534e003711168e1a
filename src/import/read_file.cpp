// read_file_bytes: whole-file read with transparent gzip (one or more members), for every text-based importer.
// Inflates straight from a small input buffer into the output string, so only the uncompressed copy is held.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include <zlib.h>

#if !defined(_WIN32)
#include <unistd.h>
#endif

#include "ets/detail/cloexec_file.hpp"
#include "ets/error.hpp"
#include "import/importers.hpp"

namespace ets::import {
namespace {

struct FileCloser {
  void operator()(std::FILE* f) const noexcept { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

constexpr std::size_t kChunk = std::size_t{1} << 18;
// Deflate expands at most ~1032:1, so a gzip trailer claiming more than that is forged or corrupt.
constexpr std::uint64_t kMaxDeflateRatio = 1032;
// Each inflate call writes into at most this much fresh (zero-filled) space: a wrong size hint is never filled
// whole, and a call that runs out of input wastes at most this much filling.
constexpr std::size_t kOutWindow = std::size_t{1} << 20;
using GoOn = bool (*)(std::string_view prefix);
// From here on max_bytes means no limit (2^62 bytes: beyond any memory).
constexpr std::uint64_t kNoLimitFrom = std::uint64_t{1} << 62;

std::uint64_t file_size(std::FILE* f) {
  if (std::fseek(f, 0, SEEK_END) != 0) return 0;
  const long n = std::ftell(f);
  std::fseek(f, 0, SEEK_SET);
  return n > 0 ? static_cast<std::uint64_t>(n) : 0;
}

bool is_gzip(const unsigned char* p, std::size_t n) {
  return ets::detail::is_gzip(std::string_view(reinterpret_cast<const char*>(p), n));
}

// The gzip trailer's ISIZE (size mod 2^32) is a good first reservation when it is plausible; the string still grows
// if it lies. `trailer`: the file's last 4 bytes, or null when there is no usable trailer.
std::uint64_t gzip_size_hint(const unsigned char* trailer, std::uint64_t compressed) {
  if (!trailer) return compressed * 4;
  const std::uint64_t isize = trailer[0] | (trailer[1] << 8) | (trailer[2] << 16) | (std::uint64_t(trailer[3]) << 24);
  return isize >= compressed / 2 && isize <= compressed * kMaxDeflateRatio ? isize : compressed * 4;
}

[[noreturn]] void too_large(const std::string& path, std::uint64_t max_bytes) {
  ETS_THROW(Errc::unsupported, "ets.io.6", "'{}' holds more than {} bytes (decompressed), the limit set by "
            "LoadOptions::max_bytes", path, max_bytes);
}

// Inflates whatever `read(buf, n)` delivers (one or more gzip members) into one string, of at most max_bytes (0:
// no limit).
template <class Read>
std::string inflate_stream(Read&& read, const std::string& path, std::uint64_t size_hint, std::uint64_t max_bytes,
                           GoOn go_on) {
  std::string out;
  if (max_bytes) size_hint = std::min(size_hint, max_bytes);
  out.reserve(size_hint + 64);
  z_stream zs{};
  // 15 + 32: zlib or gzip header, auto-detected.
  if (inflateInit2(&zs, 15 + 32) != Z_OK)
    ETS_THROW(Errc::internal, "ets.io.3", "zlib could not initialise to read '{}'", path);
  struct End {
    z_stream* z;
    ~End() { inflateEnd(z); }
  } end{&zs};
  std::unique_ptr<unsigned char[]> in(new unsigned char[kChunk]);
  bool stream_done = false;
  for (;;) {
    if (zs.avail_in == 0) {
      const std::size_t n = read(in.get(), kChunk);
      if (n == 0) break;
      zs.next_in = in.get();
      zs.avail_in = static_cast<uInt>(n);
    }
    if (stream_done) {  // concatenated gzip members (gzip a b > c.gz) are one file to gunzip
      if (inflateReset(&zs) != Z_OK) ETS_THROW(Errc::parse, "ets.io.4", "'{}': corrupt gzip data", path);
      stream_done = false;
    }
    while (zs.avail_in > 0 && !stream_done) {
      if (out.capacity() - out.size() < (1u << 16)) {
        std::uint64_t grown = out.capacity() + out.capacity() / 2 + (1u << 20);
        if (max_bytes) grown = std::min<std::uint64_t>(grown, max_bytes + 64);  // never hold more than the limit
        if (grown > out.capacity()) out.reserve(static_cast<std::size_t>(grown));  // else: room left, or too large
      }
      const std::size_t old = out.size();
      std::size_t room = std::min(out.capacity() - old, kOutWindow);
      if (max_bytes) {  // one byte past the limit tells "more" from "exactly max_bytes"
        if (old > max_bytes) too_large(path, max_bytes);
        room = static_cast<std::size_t>(std::min<std::uint64_t>(room, max_bytes + 1 - old));
      }
      out.resize(old + room);
      zs.next_out = reinterpret_cast<Bytef*>(&out[old]);
      zs.avail_out = static_cast<uInt>(room);
      const uInt before = zs.avail_out;
      const int rc = inflate(&zs, Z_NO_FLUSH);
      out.resize(old + (before - zs.avail_out));
      if (go_on && out.size() >= kPrefixBytes && rc == Z_OK) {
        if (!go_on(out)) return out;
        go_on = nullptr;
      }
      if (rc == Z_STREAM_END) {
        stream_done = true;
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        ETS_THROW(Errc::parse, "ets.io.4", "'{}': corrupt gzip data ({})", path, zs.msg ? zs.msg : "inflate failed");
      } else if (rc == Z_BUF_ERROR && zs.avail_in > 0 && before == zs.avail_out) {
        ETS_THROW(Errc::parse, "ets.io.4", "'{}': corrupt gzip data (no progress)", path);
      }
    }
  }
  if (max_bytes && out.size() > max_bytes) too_large(path, max_bytes);
  if (!stream_done) ETS_THROW(Errc::parse, "ets.io.5", "'{}': gzip data is truncated", path);
  return out;
}

// Up to n bytes of what the stream has, waiting only while it has none; 0 at its end. fread waits for all it asks,
// so a pipe read in chunks kept the reader waiting for bytes a writer that paused would not send (a gzip pipe:
// 256 KiB of compressed input before the first bytes could be checked).
std::size_t read_some(std::FILE* f, void* buf, std::size_t n, const std::string& path) {
#if defined(_WIN32)
  const std::size_t k = std::fread(buf, 1, n, f);
  if (k == 0 && std::ferror(f)) ETS_THROW(Errc::io, "ets.io.2", "read error on '{}'", path);
  return k;
#else
  for (;;) {  // on the descriptor: the stream's buffer is never used (read_stream reads through here alone)
    const ssize_t k = ::read(::fileno(f), buf, n);
    if (k >= 0) return static_cast<std::size_t>(k);
    if (errno != EINTR) ETS_THROW(Errc::io, "ets.io.2", "read error on '{}': {}", path, std::strerror(errno));
  }
#endif
}

// A pipe or character device (/dev/stdin, <(zcat …)): no size to ask for and no seeking. Its first two bytes say
// whether it is gzip; gzip is inflated as it arrives (no compressed copy is held), anything else is read as is, and
// either stops one byte past max_bytes. Each read takes what has arrived, so the first bytes are checked (go_on) as
// soon as they are in, whoever writes the rest and whenever.
std::string read_stream(std::FILE* f, const std::string& path, std::uint64_t max_bytes, GoOn go_on) {
  unsigned char magic[2] = {0, 0};
  std::size_t got = 0;
  for (std::size_t n; got < 2 && (n = read_some(f, magic + got, 2 - got, path)) > 0;) got += n;
  if (is_gzip(magic, got)) {
    std::size_t served = 0;  // of the magic bytes, already taken from the stream
    auto read = [&](unsigned char* buf, std::size_t n) {
      std::size_t k = 0;
      for (; served < got && k < n; ++served) buf[k++] = magic[served];
      return k > 0 ? k : read_some(f, buf, n, path);
    };
    return inflate_stream(read, path, kChunk * 4, max_bytes, go_on);
  }
  std::string raw(reinterpret_cast<const char*>(magic), got);
  if (got < 2) return raw;  // the end came first
  for (;;) {
    if (max_bytes && raw.size() > max_bytes) too_large(path, max_bytes);
    std::size_t want =
        max_bytes ? static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, max_bytes + 1 - raw.size())) : kChunk;
    if (go_on && raw.size() < kPrefixBytes) want = std::min(want, kPrefixBytes - raw.size());
    const std::size_t old = raw.size();
    raw.resize(old + want);
    const std::size_t n = read_some(f, &raw[old], want, path);
    raw.resize(old + n);
    if (n == 0) break;
    if (go_on && raw.size() >= kPrefixBytes) {  // more may follow: a pipe's end is known only once it is read
      if (!go_on(raw)) return raw;
      go_on = nullptr;
    }
  }
  return raw;
}

}  // namespace

std::string read_dataset_file(const std::string& path, std::uint64_t max_bytes, std::string& why) {
  try {
    return read_file_bytes(path, max_bytes);
  } catch (const Error& e) {
    if (e.id() == "ets.io.6") throw;
    why = e.what();
    return {};
  }
}

std::string read_file_bytes(const std::string& path, std::uint64_t max_bytes, GoOn go_on) {
  // A limit no memory can reach is no limit, and keeps `max_bytes + 64` and `+ 1` below from wrapping (a C caller's
  // (size_t)-1 for "unlimited").
  if (max_bytes >= kNoLimitFrom) max_bytes = 0;
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (!ec && std::filesystem::is_directory(st))
    ETS_THROW(Errc::io, "ets.io.1", "cannot open '{}': it is a directory, not a trace file", path);
  File f(ets::detail::fopen_cloexec(path.c_str(), "rb"));  // close-on-exec: a child the host starts meanwhile gets none
  if (!f) ETS_THROW(Errc::io, "ets.io.1", "cannot open '{}': {}", path, std::strerror(errno));
  if (!ec && !std::filesystem::is_regular_file(st)) return read_stream(f.get(), path, max_bytes, go_on);
  const std::uint64_t size = file_size(f.get());
  unsigned char magic[2] = {0, 0};
  const std::size_t got = std::fread(magic, 1, 2, f.get());
  std::fseek(f.get(), 0, SEEK_SET);
  if (is_gzip(magic, got)) {
    unsigned char trailer[4] = {0, 0, 0, 0};
    const bool have_trailer =
        size >= 18 && std::fseek(f.get(), -4, SEEK_END) == 0 && std::fread(trailer, 1, 4, f.get()) == 4;
    std::fseek(f.get(), 0, SEEK_SET);
    auto read = [&](unsigned char* buf, std::size_t n) {
      const std::size_t k = std::fread(buf, 1, n, f.get());
      if (k == 0 && std::ferror(f.get())) ETS_THROW(Errc::io, "ets.io.2", "read error on '{}'", path);
      return k;
    };
    return inflate_stream(read, path, gzip_size_hint(have_trailer ? trailer : nullptr, size), max_bytes, go_on);
  }
  if (max_bytes && size > max_bytes) too_large(path, max_bytes);
  std::string out;
  std::size_t total = 0;
  const auto read_up_to = [&](std::size_t end) {  // into out, until `end` bytes are in or the file ends
    out.resize(end);
    while (total < end) {
      const std::size_t n = std::fread(&out[total], 1, end - total, f.get());
      if (n == 0) break;
      total += n;
    }
    out.resize(total);
  };
  if (go_on && size > kPrefixBytes) {  // its first bytes first: a file of no use is not read (nor held) whole
    read_up_to(kPrefixBytes);
    if (total == kPrefixBytes && !go_on(out)) return out;
  }
  out.reserve(size + 64);  // slack lets parsers pad in place
  read_up_to(size);
  // The size is where reading starts, not where it stops: a file that grew meanwhile, or a "regular" file that
  // reports 0 bytes (procfs, sysfs), is read to its end. (Usually the first small read finds the end at once.)
  if (total == size) {
    char more[1 << 16];
    for (std::size_t n; (n = std::fread(more, 1, sizeof more, f.get())) > 0;) {
      out.append(more, max_bytes ? static_cast<std::size_t>(std::min<std::uint64_t>(n, max_bytes + 1 - out.size())) : n);
      if (max_bytes && out.size() > max_bytes) too_large(path, max_bytes);
    }
  }
  if (std::ferror(f.get())) ETS_THROW(Errc::io, "ets.io.2", "read error on '{}'", path);
  return out;
}

}  // namespace ets::import
