// Well-formed UTF-8 (RFC 3629: no overlong forms, surrogates or code points past U+10FFFF), checked in one place for
// the trace writer (which refuses anything else, so every written file is valid JSON), Tracer::load (which stores a
// file name in another encoding with U+FFFD) and the ets tool's JSON output; and where a cut keeps characters whole.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace ets::detail {

/// Length (1-4) of the well-formed UTF-8 sequence starting at s[i], or 0 when the bytes there are not one.
inline std::size_t utf8_sequence(std::string_view s, std::size_t i) noexcept {
  const auto b = [&](std::size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u; };
  const auto cont = [&](std::size_t k) { return (b(k) & 0xC0u) == 0x80u; };
  const unsigned c = b(0);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    const unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;  // no overlongs, no surrogates
    return b(1) >= lo && b(1) <= hi && cont(2) ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    const unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;  // U+10000 .. U+10FFFF
    return b(1) >= lo && b(1) <= hi && cont(2) && cont(3) ? 4 : 0;
  }
  return 0;
}

/// Where a cut of `s` at `at` (0..size) falls without splitting a character: `at`, stepped back over the
/// continuation bytes (10xxxxxx) that stand there, so the character they belong to is cut off whole.
inline std::size_t utf8_cut(std::string_view s, std::size_t at) noexcept {
  while (at > 0 && at < s.size() && (static_cast<unsigned char>(s[at]) & 0xC0u) == 0x80u) --at;
  return at;
}

/// Whether all of `s` is well-formed UTF-8.
inline bool valid_utf8(std::string_view s) noexcept {
  for (std::size_t i = 0, n = 0; i < s.size(); i += n)
    if ((n = utf8_sequence(s, i)) == 0) return false;
  return true;
}

/// `s` with every byte that does not start a well-formed sequence replaced by U+FFFD.
inline std::string utf8_or_replaced(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_sequence(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(s, i, n);
      i += n;
    }
  }
  return out;
}

}  // namespace ets::detail
