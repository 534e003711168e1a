// CUDA device discovery for ets::ets_cuda, with no CUDA header in sight of the caller.
// Lets Backend::Auto and the tests decide cheaply whether a usable GPU is present.
#pragma once

#include <string>

namespace ets::cuda {

/// Whether a CUDA device is present and usable; when not, `why` (if given) says why.
bool device_available(std::string* why = nullptr) noexcept;

/// "NVIDIA H200 (sm_90, 139.8 GiB)" for device 0; throws ets::Error (ets.cuda.1) if none.
std::string device_description();

}  // namespace ets::cuda
