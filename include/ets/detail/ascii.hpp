// ASCII character classes and case: <cctype> follows the host's LC_CTYPE (in a Turkish locale tolower('I') is not
// 'i'), and names in traces are ASCII identifiers that must compare the same in every process.
#pragma once

#include <string>

namespace ets::detail {

constexpr bool ascii_upper(char c) noexcept { return c >= 'A' && c <= 'Z'; }
constexpr bool ascii_lower(char c) noexcept { return c >= 'a' && c <= 'z'; }
constexpr bool ascii_space(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
/// C0 controls and DEL: refused in names (environment ids) that a C caller must spell and a log line must hold.
constexpr bool ascii_control(char c) noexcept { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }
/// s with each control character shown as '?', for a message that names a refused id.
inline std::string controls_shown(std::string s) {
  for (char& c : s)
    if (ascii_control(c)) c = '?';
  return s;
}
/// 'A'..'Z' to 'a'..'z'; every other byte (UTF-8 ones included) unchanged.
constexpr char ascii_tolower(char c) noexcept { return ascii_upper(c) ? static_cast<char>(c - 'A' + 'a') : c; }

}  // namespace ets::detail
