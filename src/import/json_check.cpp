// The strict JSON check the readers make where a lazy parse would pass damage by (Kineto's whole parse, every run
// and the rest of an Execution Trace).
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>

#include <simdjson.h>

#include "import/json_cpu_check.hpp"

namespace ets::import {
namespace {

// Whether t is a number by JSON's grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
bool json_number_grammar(std::string_view t) {
  std::size_t i = 0;
  const auto digits = [&] {
    const std::size_t from = i;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') ++i;
    return i > from;
  };
  if (i < t.size() && t[i] == '-') ++i;
  if (i < t.size() && t[i] == '0') ++i;
  else if (!digits()) return false;
  if (i < t.size() && t[i] == '.' && (++i, !digits())) return false;
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
    if (!digits()) return false;
  }
  return i == t.size();
}

}  // namespace

// The JSON text checked for everything but the range of its numbers: simdjson's full parse refuses a number it
// cannot hold (1e999, 10^23 written as digits) as it refuses a broken one, and stops there. Such numbers are JSON,
// and the rules read them on purpose (a "dur" of 1e999 is clamped, ets.kineto.5; an absurd "ts" dropped,
// ets.kineto.11). So where the full parse fails on a number, every token that starts like a number must follow
// the grammar, and the text is parsed again with each one written as 0. Only text that fails that way pays this.
simdjson::error_code check_json(simdjson::dom::parser& strict, const char* data, std::size_t size) {
  // JSON may nest deeper than simdjson's default limit (1,024 levels), and the readers read it without recursion
  // (an ET argument list 100,000 levels deep): the check allows up to 2^20 levels, 9 bytes each (touched as used).
  constexpr std::size_t kMaxDepth = std::size_t{1} << 20;
  const std::size_t depth = std::min(kMaxDepth, std::max<std::size_t>(simdjson::DEFAULT_MAX_DEPTH, size / 2 + 1));
  if (strict.max_depth() < depth || strict.capacity() < size) {
    const auto err = strict.allocate(std::max(size, strict.capacity()), std::max(depth, strict.max_depth()));
    if (err) return err;
  }
  simdjson::error_code err = strict.parse(data, size, false).error();
  if (err != simdjson::NUMBER_ERROR) return err;
  std::string text(data, size);
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (in_string) {
      if (ch == '\\') ++i;
      else if (ch == '"') in_string = false;
    } else if (ch == '"') {
      in_string = true;
    } else if (ch == '-' || (ch >= '0' && ch <= '9')) {
      std::size_t e = i;
      while (e < text.size() && !std::strchr(",:[]{}\" \t\r\n", text[e])) ++e;
      if (!json_number_grammar(std::string_view(text).substr(i, e - i))) return simdjson::NUMBER_ERROR;
      text[i] = '0';
      std::fill(text.begin() + static_cast<std::ptrdiff_t>(i) + 1, text.begin() + static_cast<std::ptrdiff_t>(e), ' ');
      i = e - 1;
    }
  }
  return strict.parse(text).error();
}

}  // namespace ets::import
