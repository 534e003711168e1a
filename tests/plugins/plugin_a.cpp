// A plugin built on ets::ets_header_only with -fvisibility=hidden: it installs the process-wide log sink.
#include <string>
#include <vector>

#include <ets/log.hpp>

extern "C" __attribute__((visibility("default"))) void plugin_a_install(std::vector<std::string>* seen) {
  ets::set_log_sink([seen](ets::LogLevel, std::string_view m) { seen->emplace_back(m); });
}
extern "C" __attribute__((visibility("default"))) void plugin_a_clear() { ets::set_log_sink(nullptr); }
