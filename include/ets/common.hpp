// Shared build glue: the generated config and the header-only / compiled-library switch.
// In ets::ets (ETS_COMPILED_LIB) definitions live in one object file; otherwise they are inline.
#pragma once

#include "ets/config.hpp"

#ifdef ETS_COMPILED_LIB
#define ETS_INLINE
#else
#define ETS_INLINE inline
#endif
