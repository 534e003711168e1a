// libFuzzer target: the Kineto / Chrome-trace JSON importer (simdjson ondemand) on arbitrary bytes.
// Only ets::Error may come out; see fuzz_common.hpp for the invariants checked on what is read, and below for the
// Kineto reader's own.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_common.hpp"
#include "import/importers.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  ets::import::Options opt;
  opt.keep_incomplete = size > 0 && (data[size - 1] & 1);  // both modes, chosen by the input itself
  std::vector<ets::ExecutionTrace> traces;
  try {
    traces = ets::import::read_kineto_json(bytes, "fuzz.in", opt);
  } catch (const ets::Error& e) {
    ets_fuzz::check_error(e);
    return 0;
  }
  ets_fuzz::check_traces(traces);
  // Times and gaps are device or host time between events: never negative (an Nsight export's gaps may be).
  for (const auto& t : traces)
    for (const auto& op : t.ops)
      if (!(op.time_us >= 0) || !(op.gap_us >= 0))
        ets_fuzz::finding("an op has a negative time or gap",
                          op.name + ": " + std::to_string(op.time_us) + " / " + std::to_string(op.gap_us));
  ets_fuzz::check_periods(traces);
  return 0;
}
