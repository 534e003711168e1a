// How a file starts: the first bytes that tell a trace's container (SQLite, gzip, JSON) or an ETS model from anything
// else.
// Internal to the compiled library and shared by its layers: the importers sniff formats with it, and the model
// reader names a trace (or a checkpoint) passed where a model goes, without depending on the importers.
#pragma once

#include <string_view>

namespace ets::detail {

/// The first 16 bytes of every SQLite database, its NUL included: an Nsight export (or a gzipped one).
constexpr std::string_view kSqliteMagic{"SQLite format 3", 16};

/// The first 8 bytes of an ETS model file (docs/model-format.md).
constexpr std::string_view kEtsModelMagic{"ETSMODEL", 8};

/// Whether `head` starts with gzip's two magic bytes.
constexpr bool is_gzip(std::string_view head) noexcept {
  return head.size() >= 2 && static_cast<unsigned char>(head[0]) == 0x1f && static_cast<unsigned char>(head[1]) == 0x8b;
}

/// `s` after its leading blanks (space, tab, CR, LF), as JSON and the CSV / ets-trace headers allow them.
constexpr std::string_view skip_blanks(std::string_view s) noexcept {
  std::size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t')) ++i;
  return s.substr(i);
}

}  // namespace ets::detail
