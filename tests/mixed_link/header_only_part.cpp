// Built against ets::ets_header_only: a third-party library on ETS's header-only core, linked into a program that
// also uses the compiled library (mixed_link_test.cpp).
#include <string>
#include <vector>

#include <ets/bilstm_predictor.hpp>
#include <ets/log.hpp>

namespace mixed {
void install_sink(std::vector<std::string>* seen) {
  ets::set_log_sink([seen](ets::LogLevel, std::string_view m) { seen->emplace_back(m); }, ets::LogLevel::debug);
}
void log_from_header_only(const char* what) { ets::log(ets::LogLevel::warn, "header-only {}", what); }
void clear_sink() { ets::set_log_sink(nullptr); }
bool cuda_factory_set() { return ets::detail::cuda_backend_factory() != nullptr; }
}  // namespace mixed
