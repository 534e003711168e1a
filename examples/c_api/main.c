/* Example: ETS from C — create a predictor, add a model (named by the environment it was trained for), register jobs
   from trace files, query a jobs x environments batch, and feed back a measured iteration time.
   Usage: c_api MODEL.etsm TRACE... */
#include <stdio.h>
#include <stdlib.h>

#include <ets/ets.h>

/* On failure: report, then release everything through the one cleanup path (no leak on any error). */
#define CHECK(call)                                                              \
  do {                                                                           \
    ets_status s_ = (call);                                                      \
    if (s_ != ETS_OK) {                                                          \
      fprintf(stderr, "%s failed (%d): %s\n", #call, (int)s_, ets_last_error()); \
      goto cleanup;                                                              \
    }                                                                            \
  } while (0)

int main(int argc, char** argv) {
  ets_predictor* p = NULL;
  const char* envs[1];
  const char** jobs = NULL;
  ets_estimate* out = NULL;
  ets_estimate after;
  char* env = NULL;
  size_t env_size = 0;
  int n, i, rc = 1;

  if (argc < 3) {
    fprintf(stderr, "usage: c_api MODEL.etsm TRACE...\n");
    return 2;
  }
  if (ets_abi_version() != ETS_ABI_VERSION) {
    fprintf(stderr, "ets.h is ABI %d but the library is %d\n", ETS_ABI_VERSION, ets_abi_version());
    return 1;
  }
  n = argc - 2;
  jobs = (const char**)malloc(sizeof(char*) * (size_t)n);
  out = (ets_estimate*)malloc(sizeof(ets_estimate) * (size_t)n);
  if (!jobs || !out) {
    fprintf(stderr, "out of memory\n");
    goto cleanup;
  }

  CHECK(ets_predictor_create(&p));
  /* NULL: the environment the model was trained for; read its name back, sized by the library */
  CHECK(ets_predictor_add_model(p, NULL, argv[1]));
  CHECK(ets_predictor_env_name_size(p, 0, &env_size));
  env = (char*)malloc(env_size);
  if (!env) {
    fprintf(stderr, "out of memory\n");
    goto cleanup;
  }
  CHECK(ets_predictor_env_name(p, 0, env, env_size));
  envs[0] = env;
  for (i = 0; i < n; ++i) {
    jobs[i] = argv[i + 2]; /* the trace path doubles as the job id */
    CHECK(ets_predictor_load_job(p, jobs[i], jobs[i]));
  }
  CHECK(ets_predict_batch(p, jobs, (size_t)n, envs, 1, out));
  for (i = 0; i < n; ++i)
    printf("%s on %s: %.3f ms [%.3f, %.3f] (%ld ops)\n", jobs[i], envs[0], out[i].iteration_us / 1e3,
           out[i].lo_us / 1e3, out[i].hi_us / 1e3, out[i].ops);

  /* the job ran 10% slower than predicted: later predictions for it on this environment move toward that */
  CHECK(ets_observe(p, jobs[0], envs[0], 1.1 * out[0].raw_us));
  CHECK(ets_predict(p, jobs[0], envs[0], &after));
  printf("after one observation: %.3f ms (correction x%.4f)\n", after.iteration_us / 1e3, after.correction);

  /* errors come back as codes plus a thread-local message with a stable id */
  if (ets_predict(p, "no-such-job", envs[0], &after) != ETS_OK) printf("expected error: %s\n", ets_last_error());
  printf("ets %s\n", ets_version());
  rc = 0;

cleanup:
  ets_predictor_destroy(p); /* NULL is accepted */
  free(env);
  free(jobs);
  free(out);
  return rc;
}
