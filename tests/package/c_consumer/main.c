/* C consumer of an installed ETS, linked by the C compiler with `pkg-config --libs ets` alone: the static libets.a
   is C++, so the .pc file must bring the C++ runtime. Prints "ets <version> abi <n> ok" after one failing call. */
#include <stdio.h>
#include <string.h>

#include "ets/ets.h"

int main(void) {
  ets_predictor* p = NULL;
  ets_status s;
  if (ets_predictor_create(&p) != ETS_OK) return 1;
  /* a missing model file: an ets::Error thrown inside the C++ library, reported through the C ABI */
  s = ets_predictor_add_model(p, "x", "/nonexistent/model.etsm");
  if (s == ETS_OK || strncmp(ets_last_error_id(), "ets.", 4) != 0) return 2;
  ets_predictor_destroy(p);
  printf("ets %s abi %d ok\n", ets_version(), ets_abi_version());
  return 0;
}
