// Builds against ets::ets_header_only alone: every public CPU header must be usable without the compiled library.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include "ets/error.hpp"
#include "ets/log.hpp"
#include "ets/trace.hpp"
#include "ets/version.hpp"
#include "ets_all_headers.hpp"  // every public header, as in second_unit.cpp

TEST_CASE("header-only core types work without ets::ets") {
  ets::ExecutionTrace t;
  ets::OpRecord a;
  a.time_us = 3;
  a.gap_us = 1;
  t.ops = {a, a};
  CHECK(t.sum_us() == 8.0);
  CHECK(t.gap_share() == Approx(0.25));
  CHECK_THROWS_AS(ETS_THROW(ets::Errc::parse, "consumer.test.2", "x"), ets::Error);
}
