// Another plugin on ets::ets_header_only with -fvisibility=hidden, loaded beside plugin_a: it only logs.
#include <ets/log.hpp>

extern "C" __attribute__((visibility("default"))) void plugin_b_log() {
  ets::log(ets::LogLevel::warn, "from plugin B {}", 1);
}
