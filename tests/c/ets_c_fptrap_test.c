/* The C ABI in a host that traps floating-point exceptions (feenableexcept): every call completes, returns a
   status, and leaves the host's traps and flags as they were. glibc only. argv: MODEL TRACE. */
#define _GNU_SOURCE
#include <fenv.h>
#include <stdio.h>

#include "c_expect.h"
#include "ets/ets.h"

int main(int argc, char** argv) {
  const int traps = FE_INVALID | FE_DIVBYZERO | FE_OVERFLOW;
  ets_predictor* p = NULL;
  ets_estimate e;
  if (argc != 3) return 2;
  feclearexcept(FE_ALL_EXCEPT);
  feenableexcept(traps);
  EXPECT(ets_predictor_create(&p) == ETS_OK);
  EXPECT(ets_predictor_add_model(p, "A", argv[1]) == ETS_OK);
  EXPECT(ets_predictor_load_job(p, "j", argv[2]) == ETS_OK);
  EXPECT(ets_predict(p, "j", "A", &e) == ETS_OK);
  EXPECT(ets_observe(p, "j", "A", 1e-300) == ETS_OK); /* ratios far out of range: clipped, not trapped */
  EXPECT(ets_observe(p, "j", "A", 1e300) == ETS_OK);
  EXPECT(ets_predict(p, "j", "A", &e) == ETS_OK);
  EXPECT(ets_predict(p, "nojob", "A", &e) == ETS_INVALID_ARGUMENT);
  EXPECT(fegetexcept() == traps);              /* the host's traps are still on */
  EXPECT(fetestexcept(FE_ALL_EXCEPT) == 0);    /* and nothing ETS raised inside leaks into its flags */
  ets_predictor_destroy(p);
  if (failures) fprintf(stderr, "%d expectation(s) failed\n", failures);
  else printf("ets_c_fptrap_test: all expectations passed\n");
  return failures ? 1 : 0;
}
