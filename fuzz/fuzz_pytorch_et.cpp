// libFuzzer target: the PyTorch Execution Trace importer (simdjson ondemand; parent chains, nested argument lists)
// on arbitrary bytes. Only ets::Error may come out; see fuzz_common.hpp for the invariants checked on what is read.
// Each input is read twice: from a padded copy (no buffer size given) and in place, from a buffer whose padding holds
// a NUL and then bytes that would close or continue JSON (a std::string's terminator and whatever its capacity held:
// the Kineto reader's reused buffers): both must give the same iterations, or the same error.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <simdjson.h>

#include "fuzz_common.hpp"
#include "import/importers.hpp"

namespace {
// What a read gives: its iterations, or its error.
struct Outcome {
  std::vector<ets::ExecutionTrace> iterations;
  std::string error;
};
Outcome read(std::string_view bytes, std::size_t readable) {
  try {
    return {ets::import::read_pytorch_et(bytes, "fuzz.in", ets::import::Options{}, readable), ""};
  } catch (const ets::Error& e) {
    ets_fuzz::check_error(e);
    return {{}, e.what()};
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const Outcome copied = read(bytes, 0);
  if (copied.error.empty()) ets_fuzz::check_traces(copied.iterations);
  std::vector<char> buffer(size + simdjson::SIMDJSON_PADDING, '\0');
  for (std::size_t i = size + 1; i < buffer.size(); ++i) buffer[i] = "}]\"9e,\\"[i % 7];
  if (size) std::memcpy(buffer.data(), data, size);
  const Outcome in_place = read(std::string_view(buffer.data(), size), buffer.size());
  if (in_place.error != copied.error || in_place.iterations != copied.iterations)
    ets_fuzz::finding("parsed in place, the ET reads otherwise than from a padded copy",
                      "copy: " + (copied.error.empty() ? std::to_string(copied.iterations.size()) + " iterations"
                                                       : copied.error) +
                          "; in place: " +
                          (in_place.error.empty() ? std::to_string(in_place.iterations.size()) + " iterations"
                                                  : in_place.error));
  return 0;
}
