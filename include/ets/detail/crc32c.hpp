// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum iSCSI and ext4 use: small and well known, so the
// Python model exporter reproduces it bit for bit. Guards the model file and the trainer's checkpoints.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace ets::detail {

inline std::uint32_t crc32c(const std::uint8_t* data, std::size_t n) {
  static const std::array<std::uint32_t, 256> table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  std::uint32_t crc = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < n; ++i) crc = table[(crc ^ data[i]) & 0xFFu] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

}  // namespace ets::detail
