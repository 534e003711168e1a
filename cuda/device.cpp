// Device discovery for the CUDA backends (see include/ets/cuda/device.hpp).
#include "ets/cuda/device.hpp"

#include <fmt/format.h>

#include "status.hpp"

namespace ets::cuda {

bool device_available(std::string* why) noexcept {
  int count = 0;
  cudaError_t st = cudaGetDeviceCount(&count);
  // The reason is best effort: building it may throw (std::bad_alloc), which must not leave this noexcept function.
  if (st != cudaSuccess) {
    if (why) try {
        *why = fmt::format("no usable CUDA device: {}", cudaGetErrorString(st));
      } catch (...) {
      }
    return false;
  }
  if (count == 0) {
    if (why) try {
        *why = "no CUDA device present";
      } catch (...) {
      }
    return false;
  }
  return true;
}

std::string device_description() {
  std::string why;
  if (!device_available(&why)) ETS_THROW(Errc::backend, "ets.cuda.1", "{}", why);
  cudaDeviceProp prop{};
  ETS_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  return fmt::format("{} (sm_{}{}, {:.1f} GiB)", prop.name, prop.major, prop.minor,
                     static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0));
}

}  // namespace ets::cuda
