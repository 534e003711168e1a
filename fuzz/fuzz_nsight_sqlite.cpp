// libFuzzer target: the Nsight Systems SQLite importer on arbitrary database bytes (deserialized in memory).
// Only ets::Error may come out; SQLite itself is not instrumented, the ETS code around it is.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "fuzz_common.hpp"
#include "import/importers.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  std::vector<ets::ExecutionTrace> traces;
  try {
    traces = ets::import::read_nsight_sqlite_bytes(bytes, "fuzz.sqlite", ets::import::Options{});
  } catch (const ets::Error& e) {
    ets_fuzz::check_error(e);
    return 0;
  }
  ets_fuzz::check_traces(traces);
  ets_fuzz::check_periods(traces);
  return 0;
}
