// ets-test-labels: unit
// The Predictor's registry when memory runs out: add_model and remove_model either change it or, when an allocation
// fails (std::bad_alloc; ETS_INTERNAL / ets.capi.3 through the C ABI), leave it exactly as it was: the same
// environments in the same order, each still predicting, the jobs' observations kept. Every allocation of the call
// is made to fail in turn (operator new is replaced: not under ASan / TSan, which own it).
#include <catch2/catch.hpp>

#include <functional>
#include <new>
#include <string>
#include <vector>

#include "alloc_hooks.hpp"
#include "ets/predictor.hpp"
#include "predict_fixtures.hpp"
#include "train_fixtures.hpp"

#if ETS_TEST_ALLOC_HOOKS

namespace {

// What a caller can see of the registry for job "j": the environments in order, and per environment the raw
// prediction and the number of observations behind its correction.
struct Seen {
  std::vector<std::string> envs;
  std::vector<double> raw_us;
  std::vector<double> observations;
  bool operator==(const Seen& o) const { return envs == o.envs && raw_us == o.raw_us && observations == o.observations; }
};

Seen seen(const ets::Predictor& p) {
  Seen s;
  s.envs = p.environments();
  for (const auto& e : s.envs) {
    s.raw_us.push_back(p.predict("j", e).raw_us);
    s.observations.push_back(p.correction("j", e).observations);
  }
  return s;
}

// Runs `change` with its k-th allocation failing, for k = 0, 1, ... until it succeeds; after every failure the
// registry must be as it was. Returns the number of failures seen (> 0: the call allocates, so it was tested).
int fail_each_allocation(ets::Predictor& p, const std::function<void()>& change) {
  const Seen before = seen(p);
  for (long k = 0;; ++k) {
    bool failed = false;
    ets_test::alloc::fail_after = k;
    try {
      change();
    } catch (const std::bad_alloc&) {
      failed = true;
    }
    ets_test::alloc::fail_after = -1;
    if (!failed) return static_cast<int>(k);
    const Seen now = seen(p);
    INFO("allocation " << k << " of the call failed");
    REQUIRE(now == before);
  }
}

}  // namespace

TEST_CASE("add_model / remove_model running out of memory leave the registry as it was", "[predictor][oom]") {
  std::vector<ets::ExecutionTrace> traces;
  for (int i = 0; i < 3; ++i) traces.push_back(ets_test::learnable_trace(200 + static_cast<std::uint32_t>(i), 4 + 5 * i));
  ets::Predictor::Options o;
  o.backend = ets::Backend::Cpu;
  ets::Predictor p(o);
  for (int i = 1; i <= 3; ++i) p.add_model(std::string(1, static_cast<char>('a' + i - 1)), ets_test::small_model(traces, i));
  p.add_job("j", traces[2]);
  p.observe("j", "b", 2 * p.predict("j", "b").raw_us);
  p.observe("j", "c", 3 * p.predict("j", "c").raw_us);

  SECTION("remove_model of an environment in the middle") {
    bool removed = false;  // (no CHECK inside: Catch's own handler would catch the bad_alloc)
    CHECK(fail_each_allocation(p, [&] { removed = p.remove_model("b"); }) > 0);
    CHECK(removed);
    CHECK(p.environments() == std::vector<std::string>{"a", "c"});
    CHECK(p.correction("j", "c").observations == 1);
    CHECK(p.predict("j", "c").raw_us > 0);
  }
  SECTION("add_model of a new environment") {
    const ets::ModelFile d = ets_test::small_model(traces, 4);
    CHECK(fail_each_allocation(p, [&] { p.add_model("d", d); }) > 0);
    CHECK(p.environments() == std::vector<std::string>{"a", "b", "c", "d"});
    CHECK(p.correction("j", "b").observations == 1);
  }
  SECTION("add_model replacing an environment's model") {
    const ets::ModelFile other = ets_test::small_model(traces, 5);
    CHECK(fail_each_allocation(p, [&] { p.add_model("b", other); }) > 0);
    CHECK(p.environments() == std::vector<std::string>{"a", "b", "c"});
    CHECK(p.correction("j", "b").observations == 0);  // a new model: the old one's observations no longer apply
    CHECK(p.correction("j", "c").observations == 1);
  }
}
#endif
