// FNV-1a, 64-bit: the checksum of the FeatureSpec blob and the trainer's checkpoint run fingerprint. Not a
// cryptographic hash: it tells contents apart.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ets::detail {

inline constexpr std::uint64_t kFnv1aBasis = 14695981039346656037ull;

/// FNV-1a of n bytes; pass the previous result as `h` to hash a sequence of pieces as one.
inline std::uint64_t fnv1a(const void* data, std::size_t n, std::uint64_t h = kFnv1aBasis) noexcept {
  const auto* p = static_cast<const std::uint8_t*>(data);
  for (std::size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace ets::detail
