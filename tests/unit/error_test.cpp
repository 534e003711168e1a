// ets::Error, ETS_THROW and the log sink: ids, codes, messages and silence by default.
#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "ets/error.hpp"
#include "ets/log.hpp"

TEST_CASE("ETS_THROW carries code, stable id and formatted message") {
  try {
    ETS_THROW(ets::Errc::parse, "ets.trace.3", "bad token '{}' at byte {}", "x", 17);
    FAIL("no throw");
  } catch (const ets::Error& e) {
    CHECK(e.code() == ets::Errc::parse);
    CHECK(e.id() == "ets.trace.3");
    CHECK(std::string(e.what()) == "[ets.trace.3] bad token 'x' at byte 17");
    CHECK(e.message() == "bad token 'x' at byte 17");
  }
}

TEST_CASE("ets::Error is a std::runtime_error") {
  CHECK_THROWS_AS(ETS_THROW(ets::Errc::io, "ets.io.1", "cannot open"), std::runtime_error);
}

TEST_CASE("backend errors carry file:line") {
  try {
    ETS_THROW(ets::Errc::backend, "ets.cuda.1", "cudnn status 3");
    FAIL("no throw");
  } catch (const ets::Error& e) {
    CHECK(std::string(e.what()).find("error_test.cpp:") != std::string::npos);
  }
}

TEST_CASE("ETS_CHECK throws only when the condition fails") {
  auto check = [](int n) { ETS_CHECK(n == 2, ets::Errc::invalid_argument, "ets.test.1", "n={}", n); };
  CHECK_NOTHROW(check(2));
  CHECK_THROWS_WITH(check(3), "[ets.test.1] n=3");
}

TEST_CASE("errc names are distinct") {
  std::set<std::string> names;
  for (int c = 0; c <= static_cast<int>(ets::Errc::internal); ++c) {
    const std::string name = ets::errc_name(static_cast<ets::Errc>(c));
    INFO("code " << c << " is named '" << name << "'");
    CHECK(name != "unknown");
    CHECK(names.insert(name).second);
  }
  CHECK(names.size() == 11);
  CHECK(std::string(ets::errc_name(ets::Errc::checksum)) == "checksum");
}

TEST_CASE("log: nothing is delivered without a sink; sink receives messages at or above its level") {
  std::vector<std::string> got;
  ets::log(ets::LogLevel::error, "dropped {}", 1);  // no sink: must not crash or print
  ets::set_log_sink([&](ets::LogLevel, std::string_view m) { got.emplace_back(m); }, ets::LogLevel::warn);
  ets::log(ets::LogLevel::info, "too quiet {}", 2);
  ets::log(ets::LogLevel::warn, "heard {}", 3);
  ets::set_log_sink({});
  ets::log(ets::LogLevel::error, "after removal");
  REQUIRE(got.size() == 1);
  CHECK(got[0] == "heard 3");
}

TEST_CASE("log: a throwing sink never propagates") {
  ets::set_log_sink([](ets::LogLevel, std::string_view) { throw std::runtime_error("sink broke"); });
  CHECK_NOTHROW(ets::log(ets::LogLevel::error, "x"));
  ets::set_log_sink({});
}

TEST_CASE("copying an ets::Error cannot throw, and a copy carries the same id and message") {
  // as for the standard exceptions: a copy made while an exception propagates (catch by value, exception_ptr)
  // must not throw, or the program terminates
  static_assert(std::is_nothrow_copy_constructible_v<ets::Error>);
  static_assert(std::is_nothrow_copy_assignable_v<ets::Error>);
  const std::string long_id = "ets.an.identifier.longer.than.the.small.string.buffer.1";
  const ets::Error e(ets::Errc::io, long_id, "the message");
  ets::Error copy = e;
  CHECK(copy.id() == long_id);
  CHECK(copy.message() == "the message");
  CHECK(std::string(copy.what()) == "[" + long_id + "] the message");
  copy = ets::Error(ets::Errc::parse, "ets.x.1", "other");
  CHECK(e.id() == long_id);  // copies are independent values
  CHECK(copy.id() == "ets.x.1");
  CHECK(copy.code() == ets::Errc::parse);
}
