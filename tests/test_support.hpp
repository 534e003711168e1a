// Helpers shared by the tests: locating committed fixtures and the third-party data beside the checkout.
// Tests that need ../shared/data skip (with a warning) when it is absent, and assert fully when present.
#pragma once

#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "ets/log.hpp"

namespace ets_test {

/// Path of a committed fixture under tests/data/.
inline std::string fixture(const std::string& rel) { return std::string(ETS_TEST_DATA_DIR) + "/" + rel; }

/// Path of a file under ../shared/data/ (may not exist).
inline std::string shared_data(const std::string& rel) {
  return std::string(ETS_SHARED_DATA_DIR) + "/" + rel;
}

inline bool have_shared(const std::string& rel) { return std::filesystem::exists(shared_data(rel)); }

/// Collects the library's warnings while it lives (the process-wide log sink), and removes the sink on the way
/// out, also when a REQUIRE or an exception ends the test early.
class CapturedWarnings {
 public:
  CapturedWarnings() {
    ets::set_log_sink([this](ets::LogLevel, std::string_view m) { lines.emplace_back(m); }, ets::LogLevel::warn);
  }
  ~CapturedWarnings() { ets::set_log_sink({}); }
  CapturedWarnings(const CapturedWarnings&) = delete;
  CapturedWarnings& operator=(const CapturedWarnings&) = delete;

  std::vector<std::string> lines;
};

}  // namespace ets_test

/// Skips the rest of the test case (with a visible warning) when ../shared/data/<rel> is absent.
#define ETS_REQUIRE_SHARED(rel)                                                   \
  do {                                                                            \
    if (!ets_test::have_shared(rel)) {                                            \
      WARN("skipped: ../shared/data/" << (rel) << " is absent");                  \
      return;                                                                     \
    }                                                                             \
  } while (false)
