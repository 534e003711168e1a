// libFuzzer target: the Kineto / Chrome-trace JSON importer (simdjson ondemand) on arbitrary bytes.
// Only ets::Error may come out; see fuzz_common.hpp for the invariants checked on what is read, and below for the
// Kineto reader's own. An input that is valid JSON is also read with its events cut into runs of a few bytes (the
// reader's runs are 512 KiB, more than most inputs hold) and parsed whole: all three must give the same iterations,
// or errors of the same id. (Damaged JSON may differ: a whole parse checks the whole text first, runs do not.)
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <simdjson.h>

#include "fuzz_common.hpp"
#include "import/importers.hpp"

namespace {
// What a read gives: its iterations, or its error's id.
struct Outcome {
  std::vector<ets::ExecutionTrace> iterations;
  std::string id;
  bool operator==(const Outcome& o) const { return id == o.id && iterations == o.iterations; }
};
Outcome read(std::string_view bytes, const ets::import::Options& opt, std::size_t run_bytes) {
  try {
    return {ets::import::detail::read_kineto_json_runs(bytes, "fuzz.in", opt, run_bytes), ""};
  } catch (const ets::Error& e) {
    ets_fuzz::check_error(e);
    return {{}, e.id()};
  }
}
std::string shown(const Outcome& o) {
  return o.id.empty() ? std::to_string(o.iterations.size()) + " iterations" : o.id;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  ets::import::Options opt;
  opt.keep_incomplete = size > 0 && (data[size - 1] & 1);  // both modes, chosen by the input itself
  const Outcome read_as_shipped = read(bytes, opt, std::size_t{512} << 10);
  simdjson::dom::parser json;
  if (!json.parse(bytes.data(), bytes.size(), true).error()) {
    const Outcome whole = read(bytes, opt, ets::import::detail::kWholeDocument), runs = read(bytes, opt, 16);
    if (!(whole == read_as_shipped) || !(runs == whole))
      ets_fuzz::finding("valid JSON read otherwise cut into runs than parsed whole",
                        "whole: " + shown(whole) + "; runs of 512 KiB: " + shown(read_as_shipped) +
                            "; runs of 16 bytes: " + shown(runs));
  }
  if (!read_as_shipped.id.empty()) return 0;
  const std::vector<ets::ExecutionTrace>& traces = read_as_shipped.iterations;
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
