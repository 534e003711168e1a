// Shared build glue: the generated config and the header-only / compiled-library switch.
// In ets::ets (ETS_COMPILED_LIB) definitions live in one object file; otherwise they are inline.
#pragma once

#include "ets/config.hpp"

#ifdef ETS_COMPILED_LIB
#define ETS_INLINE
#else
#define ETS_INLINE inline
#endif

// On the functions whose static is process-wide state (the log sink, the CUDA backend slot): exported even from a
// library built with -fvisibility=hidden (usual for plugins), so that the loader can merge their statics across
// shared libraries (GCC marks them unique); hidden, each such library kept a state of its own.
#if defined(__GNUC__) && !defined(_WIN32) && !defined(__CYGWIN__)
#define ETS_DETAIL_PROCESS_WIDE __attribute__((visibility("default")))
#else
#define ETS_DETAIL_PROCESS_WIDE
#endif
