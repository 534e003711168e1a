/* The C tests' one assertion: EXPECT(cond) counts a failure in `failures` and prints it with ETS's last error. */
#ifndef ETS_TESTS_C_EXPECT_H
#define ETS_TESTS_C_EXPECT_H

#include <stdio.h>

#include "ets/ets.h"

static int failures = 0;

#define EXPECT(cond)                                                                                               \
  do {                                                                                                             \
    if (!(cond)) {                                                                                                 \
      fprintf(stderr, "%s:%d: EXPECT(%s) failed; last error: %s\n", __FILE__, __LINE__, #cond, ets_last_error()); \
      ++failures;                                                                                                  \
    }                                                                                                              \
  } while (0)

#endif
