// simdjson chooses its kernels once per process, from the CPU or from SIMDJSON_FORCE_IMPLEMENTATION. A forced choice
// the CPU cannot run ends the process with SIGILL at the first parse, and an unknown name fails every parse with a
// message that does not say why: both are turned into one clear ets::Error before anything is parsed.
#pragma once

#include <cstdlib>
#include <string>

#include <simdjson.h>

#include "ets/error.hpp"

namespace ets::import {

inline void require_runnable_json_parser() {
  const simdjson::implementation* impl = simdjson::get_active_implementation();
  if (impl->name() != "unsupported" && impl->supported_by_runtime_system()) return;
  const char* forced = std::getenv("SIMDJSON_FORCE_IMPLEMENTATION");
  ETS_THROW(Errc::unsupported, "ets.import.8",
            "the JSON parser's '{}' kernels cannot run on this CPU{}: unset it to let the parser choose", impl->name(),
            forced ? " (SIMDJSON_FORCE_IMPLEMENTATION=" + std::string(forced) + ")" : std::string());
}

/// The text (padded: simdjson's padding past `size`) checked as JSON by a full parse, except the range of its
/// numbers (1e999 is JSON, and the readers' rules read it): SUCCESS, or simdjson's error for it.
simdjson::error_code check_json(simdjson::dom::parser& strict, const char* data, std::size_t size);

/// Puts simdjson's padding past `s`'s text, as zeros, in its capacity (size unchanged), so that the text is parsed in
/// place exactly as from a padded copy. The parser reads past the text: with a '}' instead of the NUL a std::string
/// keeps there, a fuzzed "{]}" was ets.et.2, not ets.et.1; beyond that NUL, a reused buffer holds the bytes of the
/// text before it. A buffer read_file_bytes filled has room: nothing is reallocated.
inline void pad_with_zeros(std::string& s) {
  const std::size_t size = s.size();
  s.append(simdjson::SIMDJSON_PADDING, '\0');
  s.resize(size);  // the zeros stay in the capacity
}

}  // namespace ets::import
