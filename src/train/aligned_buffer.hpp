// A float vector whose data is 64-byte aligned (one cache line, one AVX-512 register), for the buffers the trainer
// hands to its gradient engines: aligned there, the engines need no aligned copy of them (see grad_engine.hpp).
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace ets::train {

template <typename T>
struct CacheLineAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlign{64};
  CacheLineAllocator() noexcept = default;
  template <typename U>
  CacheLineAllocator(const CacheLineAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlign)); }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, kAlign); }
  template <typename U>
  bool operator==(const CacheLineAllocator<U>&) const noexcept { return true; }
  template <typename U>
  bool operator!=(const CacheLineAllocator<U>&) const noexcept { return false; }
};

using AlignedFloats = std::vector<float, CacheLineAllocator<float>>;

}  // namespace ets::train
