// Helpers shared by the tests: locating committed fixtures and the third-party data beside the checkout.
// Tests that need ../shared/data are tagged [shared] and skip (with a warning, and exit 77: CTest's Skipped) when it
// is absent; they assert fully when it is present.
#pragma once

#include <catch2/catch.hpp>

#include <atomic>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <string_view>
#include <utility>
#include <vector>

#include <unistd.h>  // getpid

#include "ets/error.hpp"
#include "ets/log.hpp"

namespace ets_test {

/// The ets::Error that f() throws, if it throws one.
template <typename F>
std::optional<ets::Error> thrown_error(F&& f) {
  try {
    std::forward<F>(f)();
  } catch (const ets::Error& e) {
    return e;
  }
  return std::nullopt;
}

/// Id of the ets::Error that f() throws, or "no error".
template <typename F>
std::string error_id(F&& f) {
  const auto e = thrown_error(std::forward<F>(f));
  return e ? e->id() : "no error";
}

/// The whole message of the ets::Error that f() throws; "" when it throws none.
template <typename F>
std::string error_text(F&& f) {
  const auto e = thrown_error(std::forward<F>(f));
  return e ? e->what() : "";
}

/// Path of a committed fixture under tests/data/.
inline std::string fixture(const std::string& rel) { return std::string(ETS_TEST_DATA_DIR) + "/" + rel; }

/// Path of a file under ../shared/data/ (may not exist).
inline std::string shared_data(const std::string& rel) {
  return std::string(ETS_SHARED_DATA_DIR) + "/" + rel;
}

inline bool have_shared(const std::string& rel) { return std::filesystem::exists(shared_data(rel)); }

/// Records that a [shared] case skips because ../shared/data/<rel> is absent (tests/catch_main.cpp): the run then
/// exits 77 unless a check failed, and a case not tagged [shared] fails instead.
void note_shared_skip(const std::string& rel);

/// A new folder of the test's own under the system's temporary directory, removed with everything in it on every
/// way out. Named "<name>_<pid>_<n>": two test runs at once (a CI clone beside a developer's build) and two cases
/// of one run never share a folder, and nothing a failed run left behind is read.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& name = "ets_test") {
    static std::atomic<unsigned> counter{0};
    path = std::filesystem::temp_directory_path() /
           (name + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

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

/// Skips the rest of a [shared] test case (with a visible warning, and exit 77 at the end) when
/// ../shared/data/<rel> is absent.
#define ETS_REQUIRE_SHARED(rel)                \
  do {                                         \
    if (!ets_test::have_shared(rel)) {         \
      ets_test::note_shared_skip(rel);         \
      return;                                  \
    }                                          \
  } while (false)
