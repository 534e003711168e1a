// ets::Error, ETS_THROW and the log sink: ids, codes, messages and silence by default.
#include <catch2/catch.hpp>

#include <chrono>
#include <future>
#include <memory>
#include <set>
#include <thread>
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

TEST_CASE("log: a replaced sink is destroyed outside ETS's lock, so what it owns may log") {
  // A sink owning an object that logs as it goes (a flusher reporting its last lines): replacing or removing the
  // sink destroys it. Under the log lock that was a self-deadlock.
  struct LogsWhenDestroyed {
    ~LogsWhenDestroyed() { ets::log(ets::LogLevel::error, "flushed {}", 1); }
  };
  std::vector<std::string> got;
  auto owned = std::make_shared<LogsWhenDestroyed>();
  ets::set_log_sink([owned](ets::LogLevel, std::string_view) {});
  owned.reset();
  auto done = std::make_shared<std::promise<void>>();
  auto finished = done->get_future();
  std::thread([done, &got] {
    ets::set_log_sink([&got](ets::LogLevel, std::string_view m) { got.emplace_back(m); });  // drops the old sink
    done->set_value();
  }).detach();
  REQUIRE(finished.wait_for(std::chrono::seconds(20)) == std::future_status::ready);  // no deadlock
  ets::set_log_sink({});
  // The old sink went after the new one was in place: what its destructor logged reached the new sink.
  CHECK(got == std::vector<std::string>{"flushed 1"});
}
