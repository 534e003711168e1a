// One program, two ways of using ETS: a library built on ets::ets_header_only (header_only_part.cpp) and this
// file on the compiled ets::ets. Process-wide state (the log sink, the CUDA backend slot) must be one object for
// both: a sink installed by either sees the messages of the other and of the compiled importers.
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <ets/bilstm_predictor.hpp>
#include <ets/log.hpp>

namespace mixed {
void install_sink(std::vector<std::string>* seen);
void log_from_header_only(const char* what);
void clear_sink();
bool cuda_factory_set();
}  // namespace mixed

namespace {
std::unique_ptr<ets::InferenceBackend> no_backend(const ets::LstmWeights&) { return nullptr; }
}  // namespace

TEST_CASE("a header-only library and the compiled library in one program share the log sink", "[log][mixed]") {
  std::vector<std::string> seen;
  mixed::install_sink(&seen);  // installed through the header-only code
  ets::log(ets::LogLevel::warn, "compiled {}", 1);
  mixed::log_from_header_only("x");
  mixed::clear_sink();
  CHECK(seen == std::vector<std::string>{"compiled 1", "header-only x"});

  std::vector<std::string> seen2;
  ets::set_log_sink([&](ets::LogLevel, std::string_view m) { seen2.emplace_back(m); });  // installed here
  mixed::log_from_header_only("y");
  ets::set_log_sink(nullptr);
  CHECK(seen2 == std::vector<std::string>{"header-only y"});
}

TEST_CASE("a header-only library and the compiled library in one program share the CUDA backend slot",
          "[mixed]") {
  const auto before = ets::detail::cuda_backend_factory();
  ets::detail::set_cuda_backend_factory(&no_backend);
  CHECK(mixed::cuda_factory_set());
  ets::detail::set_cuda_backend_factory(before);
}
