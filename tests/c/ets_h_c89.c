/* Compile-only check: ets.h is valid strict C89 (the C ABI promises C89/C99 consumers). */
#include "ets/ets.h"

int ets_h_c89_uses(void) {
  ets_estimate e;
  ets_status s = ETS_OK;
  e.iteration_us = 0.0;
  return (int)s + (int)e.iteration_us + ETS_ABI_VERSION;
}
