// Format sniffing for Tracer::load: decides which reader gets a file from its content (after gunzip): its first
// bytes, else a JSON key anywhere. Content decides, not the file name; the name only breaks ties the content cannot
// (never needed so far).
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>

#include "import/importers.hpp"

namespace ets::import {

const char* format_name(Format f) noexcept {
  switch (f) {
    case Format::KinetoJson: return "kineto";
    case Format::PytorchEt: return "pytorch-et";
    case Format::NsightSqlite: return "nsight";
    case Format::EtsCsv: return "ets-csv";
    case Format::EtsTrace: return "ets-trace";
    case Format::Unknown: break;
  }
  return "unknown";
}

std::string_view skip_bom(std::string_view s) {
  return s.size() >= 3 && s.compare(0, 3, "\xEF\xBB\xBF") == 0 ? s.substr(3) : s;
}

namespace {

std::string_view skip_space(std::string_view s) { return ets::detail::skip_blanks(skip_bom(s)); }

// The ets-trace header is the file's first line (~40 bytes as written); like the ETS CSV header it is looked for in
// the first 4 KiB only. Sought along the whole first line, a one-line 7 MB Kineto file cost 5.6 ms (a sixth of its
// import): std::string_view::find stops at every '"' of the JSON text.
constexpr std::size_t kHeaderLineBound = 4096;

// Where `pat` next occurs in `text` at or after `from` (npos: nowhere). The C library's memmem where there is one:
// glibc's takes 34 ms over a 192 MB ET, which holds no "traceEvents" to find, against 72 ms for a Boyer-Moore-Horspool
// searcher (which skips ahead by up to the key's length) and more for find()'s stop at every quote.
std::size_t find_text(std::string_view text, std::string_view pat, std::size_t from) {
  if (from > text.size() || pat.size() > text.size() - from) return std::string_view::npos;  // (and no null text)
#if defined(__GLIBC__) || defined(__APPLE__) || defined(__FreeBSD__) || defined(__OpenBSD__) || defined(__NetBSD__)
  const void* at = memmem(text.data() + from, text.size() - from, pat.data(), pat.size());
  return at ? static_cast<std::size_t>(static_cast<const char*>(at) - text.data()) : std::string_view::npos;
#else
  const std::boyer_moore_horspool_searcher search(pat.begin(), pat.end());
  const auto it = std::search(text.begin() + static_cast<std::ptrdiff_t>(from), text.end(), search);
  return it == text.end() ? std::string_view::npos : static_cast<std::size_t>(it - text.begin());
#endif
}

// A top-level key anywhere in the text: `"key"` followed by optional space and ':'. Kineto files put
// "traceEvents" after deviceProperties/distributedInfo, and a re-sorted ET puts "schema" after its "nodes", so the
// whole text is searched.
bool has_key(std::string_view text, std::string_view key) {
  std::string pat;
  pat.reserve(key.size() + 2);
  pat += '"';
  pat += key;
  pat += '"';
  for (std::size_t at = find_text(text, pat, 0); at != std::string_view::npos; at = find_text(text, pat, at + 1)) {
    std::size_t i = at + pat.size();
    while (i < text.size() && (text[i] == ' ' || text[i] == '\n' || text[i] == '\r' || text[i] == '\t')) ++i;
    if (i < text.size() && text[i] == ':') return true;
  }
  return false;
}

}  // namespace

bool could_be_trace(std::string_view prefix) {
  if (prefix.substr(0, kSqliteMagic.size()) == kSqliteMagic.substr(0, prefix.size())) return true;
  const std::string_view s = skip_space(prefix);
  // Blanks so far, JSON, or fewer than the 4 KiB the CSV header is looked for in: the rest decides.
  if (s.empty() || s[0] == '{' || s.size() < kHeaderLineBound) return true;
  return is_ets_csv_header(s);  // reads only s's first 4 KiB, as detect_format does on the whole
}

Format detect_format(std::string_view bytes, const std::string& path) {
  (void)path;
  if (bytes.substr(0, kSqliteMagic.size()) == kSqliteMagic) return Format::NsightSqlite;
  const std::string_view s = skip_space(bytes);
  if (s.empty()) return Format::Unknown;
  if (s[0] != '{') return is_ets_csv_header(s) ? Format::EtsCsv : Format::Unknown;
  // ets-trace's header line is {"format":"ets-trace","version":[1,0]}, its members in any order
  {
    const std::string_view start = s.substr(0, kHeaderLineBound);
    const std::string_view first = start.substr(0, start.find('\n'));
    for (std::size_t pos = first.find("\"format\""); pos != std::string_view::npos;
         pos = first.find("\"format\"", pos + 1)) {
      const std::string_view t = skip_space(first.substr(pos + 8));
      if (!t.empty() && t[0] == ':' && skip_space(t.substr(1)).rfind("\"ets-trace\"", 0) == 0) return Format::EtsTrace;
    }
  }
  if (has_key(s, "traceEvents")) return Format::KinetoJson;
  if (has_key(s, "nodes") && has_key(s, "schema")) return Format::PytorchEt;
  return Format::Unknown;
}

}  // namespace ets::import
