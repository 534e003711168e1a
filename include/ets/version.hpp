// Library version as compiled in: the headers' (macros from config.hpp). The version of the copy actually linked is
// the C ABI's ets_version(); comparing the two catches a consumer built against one ETS and linked to another.
#pragma once

#include "ets/common.hpp"

namespace ets {

struct Version {
  int major, minor, patch;
};

/// Version of the ETS headers this translation unit was compiled with.
constexpr Version header_version() noexcept {
  return {ETS_VERSION_MAJOR, ETS_VERSION_MINOR, ETS_VERSION_PATCH};
}

/// "0.1.0" — the version string of the build.
constexpr const char* version_string() noexcept { return ETS_VERSION_STRING; }

/// Whether this build contains the CUDA backends (ets::ets_cuda).
constexpr bool built_with_cuda() noexcept { return ETS_BUILT_WITH_CUDA != 0; }

}  // namespace ets
