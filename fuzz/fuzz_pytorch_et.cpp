// libFuzzer target: the PyTorch Execution Trace importer (simdjson ondemand; parent chains, nested argument lists)
// on arbitrary bytes. Only ets::Error may come out; see fuzz_common.hpp for the invariants checked on what is read.
// Each input is read four ways that must give the same iterations, or the same error: parsed whole from a padded copy
// (no buffer size given) and in place, from a buffer whose padding holds a NUL and then bytes that would close or
// continue JSON (a std::string's terminator and whatever its capacity held: the Kineto reader's reused buffers); and
// with its "nodes" cut into runs, as read_pytorch_et does (one run at fuzzing sizes) and in runs of a few bytes. Cut
// into runs, an error has the same id, but its reason may be another: a whole parse checks the whole text before
// it reads a node, so a later run's invalid UTF-8 is found before an earlier run's missing comma.
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
  std::string error, id;
};
Outcome read(std::string_view bytes, std::size_t readable, std::size_t run_bytes) {
  try {
    return {ets::import::detail::read_pytorch_et_runs(bytes, "fuzz.in", readable, run_bytes), "", ""};
  } catch (const ets::Error& e) {
    ets_fuzz::check_error(e);
    return {{}, e.what(), e.id()};
  }
}
std::string shown(const Outcome& o) {
  return o.error.empty() ? std::to_string(o.iterations.size()) + " iterations" : o.error;
}
bool same(const Outcome& a, const Outcome& b) { return a.error == b.error && a.iterations == b.iterations; }
bool same_id(const Outcome& a, const Outcome& b) { return a.id == b.id && a.iterations == b.iterations; }
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  using ets::import::detail::kWholeDocument;
  const Outcome copied = read(bytes, 0, kWholeDocument);
  if (copied.error.empty()) ets_fuzz::check_traces(copied.iterations);
  std::vector<char> buffer(size + simdjson::SIMDJSON_PADDING, '\0');
  for (std::size_t i = size + 1; i < buffer.size(); ++i) buffer[i] = "}]\"9e,\\"[i % 7];
  if (size) std::memcpy(buffer.data(), data, size);
  const Outcome in_place = read(std::string_view(buffer.data(), size), buffer.size(), kWholeDocument);
  if (!same(in_place, copied))
    ets_fuzz::finding("parsed in place, the ET reads otherwise than from a padded copy",
                      "copy: " + shown(copied) + "; in place: " + shown(in_place));
  for (const std::size_t run_bytes : {std::size_t{512} << 10, std::size_t{16}}) {
    const Outcome runs = read(bytes, 0, run_bytes);
    if (!same_id(runs, copied))
      ets_fuzz::finding("cut into runs, the ET reads otherwise than parsed whole",
                        "whole: " + shown(copied) + "; runs of " + std::to_string(run_bytes) +
                            " bytes: " + shown(runs));
  }
  return 0;
}
