// libFuzzer target: the .etsm model-file parser (ets::parse_model) on arbitrary bytes, with and without the
// self-test forward pass. Only ets::Error may come out; nothing may be read outside the buffer.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "ets/model_file.hpp"
#include "fuzz_common.hpp"

namespace {

std::uint32_t crc32c(const std::uint8_t* p, std::size_t n) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < n; ++i) {
    crc ^= p[i];
    for (int k = 0; k < 8; ++k) crc = (crc & 1u) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
  }
  return crc ^ 0xFFFFFFFFu;
}

void put_le(std::uint8_t* p, std::uint64_t v, int n) {
  for (int i = 0; i < n; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // An exact-size heap copy, so ASan flags any read past the end and the repair below can write.
  std::vector<std::uint8_t> copy(data, data + size);
  ets::ModelLoadOptions opt;
  opt.verify_self_test = size >= 2 && (data[size - 2] & 1);
  // Random mutations almost never keep the size field, trailer and CRC-32C right, so for half the inputs (chosen
  // by a trailer byte, which the repair overwrites anyway) they are repaired: the fuzzer then reaches the
  // metadata / tensor-directory / weight parsing behind the checksum.
  if (size >= 80 && (data[size - 1] & 1)) {
    std::uint8_t* p = copy.data();
    const std::size_t body = size - 16;
    put_le(p + 16, size, 8);
    std::memcpy(p + body, "ETSM_END", 8);
    put_le(p + body + 12, 0, 4);
    put_le(p + body + 8, crc32c(p, body + 8), 4);
  }
  try {
    (void)ets::parse_model(copy.data(), copy.size(), opt);
  } catch (const ets::Error& e) {
    ets_fuzz::check_error(e);
  }
  return 0;
}
