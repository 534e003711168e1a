// Where a top-level array of a JSON object lies (Kineto's "traceEvents", an Execution Trace's "nodes"), cut into
// runs of whole elements that the readers parse one at a time as small documents of their own.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "import/importers.hpp"
#include "import/json_cpu_check.hpp"

namespace ets::import {
namespace {

using detail::ArrayRuns;

// Byte-by-byte reference scan. With stop_at_open it returns as soon as the array's '[' is found (the block
// scan below takes over from there).
bool find_scalar(std::string_view s, std::string_view key, std::size_t chunk, ArrayRuns& out, bool stop_at_open) {
  const std::size_t n = s.size();
  int depth = 0;
  std::size_t key_begin = 0, key_end = 0;  // last string closed at depth 1
  bool key_matches = false, after_colon = false;
  std::size_t run_start = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const char ch = s[i];
    switch (ch) {
      case '"': {
        const std::size_t b = ++i;
        while (i < n && s[i] != '"') i += s[i] == '\\' ? 2 : 1;
        if (i >= n) return false;
        if (depth == 1) key_begin = b, key_end = i, after_colon = false;
        break;
      }
      case ':':
        if (depth == 1) {
          const std::string_view k = s.substr(key_begin, key_end - key_begin);
          // An escaped key may spell `key` too, and the parse of the rest (after the runs) would then read its
          // array after this one although it came first: such a file is parsed whole, in its own order.
          if (k.find('\\') != std::string_view::npos) return false;
          key_matches = k == key;
          after_colon = true;
        }
        break;
      case '{':
      case '[':
        if (depth == 0 && ch != '{') return false;
        if (depth == 1 && ch == '[' && after_colon && key_matches && out.open == std::string_view::npos) {
          out.open = i, run_start = i + 1;
          if (stop_at_open) return true;
        }
        after_colon = false;
        ++depth;
        break;
      case '}':
      case ']':
        --depth;
        if (depth == 1 && ch == ']' && out.open != std::string_view::npos && out.close == std::string_view::npos) {
          out.close = i;
          return true;
        }
        if (depth <= 0) return false;
        break;
      case ',':
        if (depth == 2 && out.open != std::string_view::npos && i - run_start >= chunk)
          out.cuts.push_back(i), run_start = i + 1;
        after_colon = false;
        break;
      default:
        break;
    }
  }
  return false;
}

// Inside the array only three things matter: string state, bracket depth, and depth-2 commas once a run is
// long enough. 64-byte blocks get quote and bracket masks (SSE2: every x86-64), strings come from a prefix XOR of
// the quote mask, and depth moves by popcounts; a block is walked bit by bit only where a cut or the closing ']'
// may lie, and byte by byte only if it holds a backslash. The byte-by-byte scan cost as much as simdjson's parse.
struct BodyScan {
  std::string_view s;
  std::size_t chunk;
  ArrayRuns& out;
  int depth = 2;  // inside the root object and the array
  bool in_str = false, esc = false;
  std::size_t run_start = 0;

  enum Result { More, Closed, Bad };

  Result structural(std::size_t i, char ch) {
    switch (ch) {
      case '{':
      case '[':
        ++depth;
        break;
      case '}':
      case ']':
        --depth;
        if (depth == 1 && ch == ']') {
          out.close = i;
          return Closed;
        }
        if (depth <= 0) return Bad;
        break;
      case ',':
        if (depth == 2 && i - run_start >= chunk) out.cuts.push_back(i), run_start = i + 1;
        break;
      default:
        break;
    }
    return More;
  }

  Result bytes(std::size_t a, std::size_t b) {
    for (std::size_t i = a; i < b; ++i) {
      const char ch = s[i];
      if (in_str) {
        if (esc) esc = false;
        else if (ch == '\\') esc = true;
        else if (ch == '"') in_str = false;
        continue;
      }
      if (ch == '"') in_str = true;
      else if (const Result r = structural(i, ch); r != More) return r;
    }
    return More;
  }

  bool run(std::size_t from) {
    run_start = from;
    std::size_t i = from;
    const std::size_t n = s.size();
#if defined(__SSE2__) && (defined(__GNUC__) || defined(__clang__))
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'), open = _mm_set1_epi8('{'),
                  close = _mm_set1_epi8('}'), comma = _mm_set1_epi8(','), lower = _mm_set1_epi8(0x20);
    for (; i + 64 <= n; i += 64) {
      std::uint64_t q = 0, bs = 0, op = 0, cl = 0, cm = 0;
      for (int k = 0; k < 4; ++k) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s.data() + i + 16 * k));
        const __m128i folded = _mm_or_si128(v, lower);  // '[' -> '{', ']' -> '}'; nothing else maps there
        const auto mask = [&](__m128i eq) {
          return static_cast<std::uint64_t>(static_cast<std::uint32_t>(_mm_movemask_epi8(eq))) << (16 * k);
        };
        q |= mask(_mm_cmpeq_epi8(v, quote));
        bs |= mask(_mm_cmpeq_epi8(v, bslash));
        op |= mask(_mm_cmpeq_epi8(folded, open));
        cl |= mask(_mm_cmpeq_epi8(folded, close));
        cm |= mask(_mm_cmpeq_epi8(v, comma));
      }
      if (bs != 0 || esc) {
        if (const Result r = bytes(i, i + 64); r != More) return r == Closed;
        continue;
      }
      std::uint64_t inside = q;  // prefix XOR: bit j = inside a string after byte j
      inside ^= inside << 1, inside ^= inside << 2, inside ^= inside << 4;
      inside ^= inside << 8, inside ^= inside << 16, inside ^= inside << 32;
      if (in_str) inside = ~inside;
      in_str = (inside >> 63) != 0;
      op &= ~inside, cl &= ~inside, cm &= ~inside;
      const int closes = __builtin_popcountll(cl);
      const bool may_cut = cm != 0 && i + 63 - run_start >= chunk;
      if (depth - closes >= 2 && !may_cut) {
        depth += __builtin_popcountll(op) - closes;
        continue;
      }
      for (std::uint64_t m = op | cl | cm; m != 0; m &= m - 1) {
        const std::size_t j = i + static_cast<std::size_t>(__builtin_ctzll(m));
        if (const Result r = structural(j, s[j]); r != More) return r == Closed;
      }
    }
#endif
    return bytes(i, n) == Closed;
  }
};

bool find_runs(std::string_view s, std::string_view key, std::size_t chunk, ArrayRuns& out, bool fast) {
  if (!fast) return find_scalar(s, key, chunk, out, false);
  if (!find_scalar(s, key, chunk, out, true) || out.open == std::string_view::npos) return false;
  BodyScan scan{s, chunk, out};
  return scan.run(out.open + 1);
}

}  // namespace

namespace detail {
bool find_array_runs(std::string_view bytes, std::string_view key, std::size_t chunk, bool fast, ArrayRuns& out) {
  out = ArrayRuns{};
  if (!find_runs(bytes, key, chunk, out, fast)) return false;
  // A cut next to a missing element (",,", "[," or ",]") would leave a run of blanks, which parses as an empty
  // array: the error a whole parse reports would pass unseen. Such a text is parsed whole.
  const auto blank = [&](std::size_t begin, std::size_t end) {
    return ets::detail::skip_blanks(bytes.substr(begin, end - begin)).empty();
  };
  std::size_t begin = out.open + 1;
  for (std::size_t r = 0; r < out.cuts.size(); begin = out.cuts[r++] + 1) {
    if (blank(begin, out.cuts[r])) return false;
  }
  return out.cuts.empty() || !blank(begin, out.close);
}

void array_run_text(std::string_view bytes, std::size_t begin, std::size_t end, std::string& out) {
  out.assign(1, '[');
  out.append(bytes.data() + begin, end - begin).push_back(']');
  pad_with_zeros(out);
}

std::string text_without_array(std::string_view bytes, const ArrayRuns& runs) {
  std::string text;
  text.reserve(bytes.size() - (runs.close - runs.open) + 1 + simdjson::SIMDJSON_PADDING);
  text.append(bytes.data(), runs.open + 1).append(bytes.substr(runs.close));
  pad_with_zeros(text);
  return text;
}
}  // namespace detail

}  // namespace ets::import
