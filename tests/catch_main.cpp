// Catch2 main, compiled once and shared by every test executable.
// A case that reads ../shared/data is tagged [shared] and skips through ETS_REQUIRE_SHARED when its data is absent.
// CTest runs such a file twice (tests/CMakeLists.txt): its other cases, and its [shared] cases on their own. A run
// in which a case skipped, and none failed, exits 77, which CTest reports as Skipped: a case that checked nothing
// is never counted as passed.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <string>

namespace {

bool g_case_is_shared = false;  // the running case is tagged [shared]
bool g_case_skipped = false;    // ... and has skipped (counted once per case)
int g_skipped_cases = 0;

struct SharedTagListener : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  void testCaseStarting(Catch::TestCaseInfo const& info) override {
    g_case_is_shared = std::find(info.lcaseTags.begin(), info.lcaseTags.end(), "shared") != info.lcaseTags.end();
    g_case_skipped = false;
  }
};

}  // namespace

CATCH_REGISTER_LISTENER(SharedTagListener)

namespace ets_test {

void note_shared_skip(const std::string& rel) {
  // A skip from an untagged case would make its mixed run exit 77 and hide the file's other cases: refuse it.
  if (!g_case_is_shared) FAIL_CHECK("a case that reads ../shared/data must be tagged [shared]: " << rel);
  WARN("skipped: ../shared/data/" << rel << " is absent");
  if (!g_case_skipped) ++g_skipped_cases;
  g_case_skipped = true;
}

}  // namespace ets_test

int main(int argc, char* argv[]) {
  const int failed = Catch::Session().run(argc, argv);
  if (failed == 0 && g_skipped_cases > 0) {
    std::fprintf(stderr, "%d [shared] case(s) skipped, all or part: ../shared/data is absent (exit 77, CTest: Skipped)\n",
                 g_skipped_cases);
    return 77;
  }
  return failed;
}
