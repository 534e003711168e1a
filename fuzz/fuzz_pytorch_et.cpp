// libFuzzer target: the PyTorch Execution Trace importer (simdjson ondemand; parent chains, nested argument lists)
// on arbitrary bytes. Only ets::Error may come out; see fuzz_common.hpp for the invariants checked on what is read.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_common.hpp"
#include "import/importers.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    ets_fuzz::check_traces(ets::import::read_pytorch_et(bytes, "fuzz.in", ets::import::Options{}));
  } catch (const ets::Error& e) {
    ets_fuzz::check_error(e);
  }
  return 0;
}
