// read_file_bytes: whole-file read with transparent gzip (one or more members), for every text-based importer.
// Inflates straight from a small input buffer into the output string, so only the uncompressed copy is held.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include <zlib.h>

#include "ets/error.hpp"
#include "import/importers.hpp"

namespace ets::import {
namespace {

struct FileCloser {
  void operator()(std::FILE* f) const noexcept { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

std::uint64_t file_size(std::FILE* f) {
  if (std::fseek(f, 0, SEEK_END) != 0) return 0;
  const long n = std::ftell(f);
  std::fseek(f, 0, SEEK_SET);
  return n > 0 ? static_cast<std::uint64_t>(n) : 0;
}

// The gzip trailer's ISIZE (size mod 2^32) is a good first reservation; the string still grows if it lies.
std::uint64_t gzip_size_hint(std::FILE* f, std::uint64_t compressed) {
  unsigned char t[4] = {0, 0, 0, 0};
  if (compressed < 18 || std::fseek(f, -4, SEEK_END) != 0 || std::fread(t, 1, 4, f) != 4) {
    std::fseek(f, 0, SEEK_SET);
    return compressed * 4;
  }
  std::fseek(f, 0, SEEK_SET);
  const std::uint64_t isize = t[0] | (t[1] << 8) | (t[2] << 16) | (std::uint64_t(t[3]) << 24);
  return isize >= compressed / 2 ? isize : compressed * 4;
}

std::string inflate_file(std::FILE* f, const std::string& path, std::uint64_t compressed) {
  std::string out;
  out.reserve(gzip_size_hint(f, compressed) + 64);
  z_stream zs{};
  // 15 + 32: zlib or gzip header, auto-detected.
  if (inflateInit2(&zs, 15 + 32) != Z_OK)
    ETS_THROW(Errc::internal, "ets.io.3", "zlib could not initialise to read '{}'", path);
  struct End {
    z_stream* z;
    ~End() { inflateEnd(z); }
  } end{&zs};
  std::unique_ptr<unsigned char[]> in(new unsigned char[1 << 18]);
  bool stream_done = false;
  for (;;) {
    if (zs.avail_in == 0) {
      const std::size_t n = std::fread(in.get(), 1, 1 << 18, f);
      if (n == 0) {
        if (std::ferror(f)) ETS_THROW(Errc::io, "ets.io.2", "read error on '{}'", path);
        break;
      }
      zs.next_in = in.get();
      zs.avail_in = static_cast<uInt>(n);
    }
    if (stream_done) {  // concatenated gzip members (gzip a b > c.gz) are one file to gunzip
      if (inflateReset(&zs) != Z_OK) ETS_THROW(Errc::parse, "ets.io.4", "'{}': corrupt gzip data", path);
      stream_done = false;
    }
    while (zs.avail_in > 0 && !stream_done) {
      if (out.capacity() - out.size() < (1u << 16)) out.reserve(out.capacity() + out.capacity() / 2 + (1u << 20));
      const std::size_t old = out.size();
      const std::size_t room = out.capacity() - old;
      out.resize(out.capacity());
      zs.next_out = reinterpret_cast<Bytef*>(&out[old]);
      zs.avail_out = static_cast<uInt>(room > (1u << 30) ? (1u << 30) : room);
      const uInt before = zs.avail_out;
      const int rc = inflate(&zs, Z_NO_FLUSH);
      out.resize(old + (before - zs.avail_out));
      if (rc == Z_STREAM_END) {
        stream_done = true;
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        ETS_THROW(Errc::parse, "ets.io.4", "'{}': corrupt gzip data ({})", path, zs.msg ? zs.msg : "inflate failed");
      } else if (rc == Z_BUF_ERROR && zs.avail_in > 0 && before == zs.avail_out) {
        ETS_THROW(Errc::parse, "ets.io.4", "'{}': corrupt gzip data (no progress)", path);
      }
    }
  }
  if (!stream_done) ETS_THROW(Errc::parse, "ets.io.5", "'{}': gzip data is truncated", path);
  return out;
}

}  // namespace

std::string read_file_bytes(const std::string& path) {
  File f(std::fopen(path.c_str(), "rb"));
  if (!f) ETS_THROW(Errc::io, "ets.io.1", "cannot open '{}'", path);
  const std::uint64_t size = file_size(f.get());
  unsigned char magic[2] = {0, 0};
  const std::size_t got = std::fread(magic, 1, 2, f.get());
  std::fseek(f.get(), 0, SEEK_SET);
  if (got == 2 && magic[0] == 0x1f && magic[1] == 0x8b) return inflate_file(f.get(), path, size);
  std::string out;
  out.reserve(size + 64);  // slack lets parsers pad in place
  out.resize(size);
  std::size_t total = 0;
  while (total < size) {
    const std::size_t n = std::fread(&out[total], 1, size - total, f.get());
    if (n == 0) break;
    total += n;
  }
  if (std::ferror(f.get())) ETS_THROW(Errc::io, "ets.io.2", "read error on '{}'", path);
  out.resize(total);
  return out;
}

}  // namespace ets::import
