// Decimal text → double, whatever the process locale: strtod / stod / istream follow LC_NUMERIC or the global
// C++ locale, so a host that calls setlocale(LC_ALL, "") on a comma-decimal system read "0.3" as 0.
// Internal to the compiled library, not a public header: std::from_chars for double needs libstdc++ 11 or MSVC
// (libc++ 14 has none), and the public headers build with libc++ too (tools/check_libcxx.sh).
#pragma once

#include <charconv>
#include <string_view>
#include <system_error>

namespace ets::detail {

/// The whole of `s` (surrounding blanks and one leading '+' allowed) as a number in the C locale's syntax; false,
/// and `out` unchanged, on anything else (empty, trailing characters, out of range).
inline bool parse_double(std::string_view s, double& out) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r'))
    s.remove_suffix(1);
  if (!s.empty() && s.front() == '+') {
    s.remove_prefix(1);
    if (!s.empty() && s.front() == '-') return false;  // "+-1"
  }
  if (s.empty()) return false;
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return false;
  out = v;
  return true;
}

}  // namespace ets::detail
