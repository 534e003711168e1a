// Format sniffing for Tracer::load: decides which reader gets a file from its first bytes (after gunzip).
// Content decides, not the file name; the name only breaks ties the content cannot (never needed so far).
#include <cstring>
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

std::string_view skip_space(std::string_view s) {
  s = skip_bom(s);
  std::size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t')) ++i;
  return s.substr(i);
}

// A top-level key anywhere in the head: `"key"` followed by optional space and ':'. Kineto files put
// "traceEvents" after deviceProperties/distributedInfo, so the head must be generous (callers pass >= 64 KiB).
bool has_key(std::string_view head, std::string_view key) {
  std::string pat;
  pat.reserve(key.size() + 2);
  pat += '"';
  pat += key;
  pat += '"';
  for (std::size_t pos = head.find(pat); pos != std::string_view::npos; pos = head.find(pat, pos + 1)) {
    std::size_t i = pos + pat.size();
    while (i < head.size() && (head[i] == ' ' || head[i] == '\n' || head[i] == '\r' || head[i] == '\t')) ++i;
    if (i < head.size() && head[i] == ':') return true;
  }
  return false;
}

}  // namespace

Format detect_format(std::string_view head, const std::string& path) {
  (void)path;
  static constexpr char kSqlite[] = "SQLite format 3";  // 16 bytes with the terminating NUL
  if (head.size() >= 16 && std::memcmp(head.data(), kSqlite, 16) == 0) return Format::NsightSqlite;
  const std::string_view s = skip_space(head);
  if (s.empty()) return Format::Unknown;
  if (s[0] != '{') return is_ets_csv_header(s) ? Format::EtsCsv : Format::Unknown;
  // ets-trace's header line is {"format":"ets-trace","version":[1,0]}, its members in any order
  {
    const std::string_view first = s.substr(0, s.find('\n'));
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
