// Subcommands whose implementations arrive in later releases; registered now so help and scripts see them.
// Each entry is removed from here when its real implementation lands in its own cmd_<name>.cpp.
#include "cli.hpp"

namespace ets::cli {
namespace {
[[maybe_unused]] Command placeholder(const char* name, const char* summary, const char* usage) {
  return Command{name, summary, Spec{usage, {"--json"}, {}, 0},
                 [n = std::string(name)](const Args&) { return not_available(n); }};
}
}  // namespace
}  // namespace ets::cli
