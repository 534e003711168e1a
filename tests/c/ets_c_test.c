/* C-language test of the ETS C ABI (include/ets/ets.h), compiled as C99 with -Werror-level warnings: status codes,
   NULL checks, thread-local messages, batch == single predictions, observe() corrections. argv: MODEL TRACE. */
#define _POSIX_C_SOURCE 200809L /* pthreads under C99 without extensions */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "c_expect.h"
#include "ets/ets.h"

/* GCC's AddressSanitizer reports a false stack-buffer-overflow (in its sigaltstack interceptor) when a cancelled
   thread unwinds, with plain C code and no ETS at all (google/sanitizers#1399). The ASan runtime defines
   __asan_init: there the cancellation check is skipped, and the plain build (README test command) runs it. */
extern void __asan_init(void) __attribute__((weak));

static int close_rel(double a, double b, double tol) { return fabs(a - b) <= tol * fabs(b); }

/* Fails a call on another thread and reports what that thread's own last error says. */
static void* fail_on_thread(void* out) {
  (void)ets_predictor_create(NULL);
  strncpy((char*)out, ets_last_error_id(), 63);
  return NULL;
}

/* 1 when s is well-formed UTF-8 (lead byte, then as many 10xxxxxx bytes as it announces). */
static int valid_utf8(const char* str) {
  const unsigned char* s = (const unsigned char*)str;
  while (*s) {
    int n = *s < 0x80 ? 0 : (*s & 0xE0) == 0xC0 ? 1 : (*s & 0xF0) == 0xE0 ? 2 : (*s & 0xF8) == 0xF0 ? 3 : -1;
    if (n < 0) return 0;
    for (++s; n > 0; --n, ++s)
      if ((*s & 0xC0) != 0x80) return 0;
  }
  return 1;
}

/* Blocks in ets_predictor_load_job on a FIFO nobody writes (a hung file system, for a scheduler) until cancelled. */
static void* load_blocking(void* args) {
  void** a = (void**)args;
  (void)ets_predictor_load_job((ets_predictor*)a[0], "blocked", (const char*)a[1]);
  return NULL;
}

int main(int argc, char** argv) {
  ets_predictor* p = NULL;
  ets_estimate single[4];
  ets_estimate batch[4];
  ets_estimate before, after;
  const char* jobs[2];
  const char* envs[2];
  char name[64];
  size_t count = 0;
  int i;

  if (argc != 3 && argc != 4) {
    fprintf(stderr, "usage: ets_c_test MODEL.etsm TRACE [TRACE_WITHOUT_BATCH_SIZE]\n");
    return 2;
  }
  EXPECT(strlen(ets_version()) > 0);
  EXPECT(ets_abi_version() == ETS_ABI_VERSION);
  EXPECT(strcmp(ets_last_error(), "") == 0);

  /* NULL arguments are errors with a message, never crashes */
  EXPECT(ets_predictor_create(NULL) == ETS_INVALID_ARGUMENT);
  EXPECT(strstr(ets_last_error(), "out is NULL") != NULL);
  EXPECT(strcmp(ets_last_error_id(), "ets.capi.1") == 0);
  EXPECT(ets_predictor_add_model(NULL, "x", argv[1]) == ETS_INVALID_ARGUMENT);
  EXPECT(ets_predict(NULL, "a", "b", &before) == ETS_INVALID_ARGUMENT);
  ets_predictor_destroy(NULL);

  EXPECT(ets_predictor_create(&p) == ETS_OK);
  if (!p) return 1;
  EXPECT(ets_predictor_add_model(p, "envA", NULL) == ETS_INVALID_ARGUMENT);
  EXPECT(ets_predictor_add_model(p, "envA", "/nonexistent/model.etsm") == ETS_IO);
  EXPECT(strncmp(ets_last_error(), "[ets.model.", 11) == 0);
  EXPECT(ets_predictor_add_model(p, "envA", argv[1]) == ETS_OK);
  EXPECT(ets_predictor_add_model(p, "envB", argv[1]) == ETS_OK);
  EXPECT(ets_predictor_env_count(p, &count) == ETS_OK);
  EXPECT(count == 2);
  EXPECT(ets_predictor_env_name(p, 1, name, sizeof name) == ETS_OK);
  EXPECT(strcmp(name, "envB") == 0);
  memset(name, 'x', sizeof name);
  EXPECT(ets_predictor_env_name(p, 1, name, 4) == ETS_INVALID_ARGUMENT); /* "envB" needs 5 bytes */
  EXPECT(strcmp(ets_last_error_id(), "ets.capi.2") == 0);
  EXPECT(name[0] == 'x' && name[3] == 'x'); /* buf untouched */
  EXPECT(ets_predictor_env_name_size(p, 1, &count) == ETS_OK);
  EXPECT(count == 5); /* "envB" and its NUL */
  EXPECT(ets_predictor_env_name(p, 1, name, count) == ETS_OK);
  EXPECT(ets_predictor_env_name_size(p, 2, &count) == ETS_INVALID_ARGUMENT);
  EXPECT(strcmp(ets_last_error_id(), "ets.capi.2") == 0);
  EXPECT(ets_predictor_env_name_size(p, 0, NULL) == ETS_INVALID_ARGUMENT);
  EXPECT(strcmp(ets_last_error_id(), "ets.capi.1") == 0);
  EXPECT(ets_predictor_env_name(p, 5, name, sizeof name) == ETS_INVALID_ARGUMENT);
  EXPECT(strcmp(ets_last_error_id(), "ets.capi.2") == 0);

  EXPECT(ets_predictor_load_job(p, "job1", argv[2]) == ETS_OK);
  EXPECT(ets_predictor_load_job(p, "job2", argv[2]) == ETS_OK);
  EXPECT(ets_predictor_load_job(p, "bad", "/nonexistent/trace.json") != ETS_OK);
  {
    /* a cap on what a submitted trace may hold: refused beyond it, and job1 stays registered as it was */
    ets_estimate kept, again;
    EXPECT(ets_predict(p, "job1", "envA", &kept) == ETS_OK);
    EXPECT(ets_predictor_load_job_limited(p, "job1", argv[2], 1024) == ETS_UNSUPPORTED);
    EXPECT(strcmp(ets_last_error_id(), "ets.io.6") == 0);
    EXPECT(ets_predict(p, "job1", "envA", &again) == ETS_OK);
    EXPECT(again.iteration_us == kept.iteration_us && again.ops == kept.ops);
    EXPECT(ets_predictor_load_job_limited(p, "job3", argv[2], 0) == ETS_OK); /* 0: no limit */
    EXPECT(ets_predictor_load_job_limited(p, "job4", argv[2], (size_t)1 << 30) == ETS_OK);
    EXPECT(ets_predictor_load_job_limited(p, NULL, argv[2], 0) == ETS_INVALID_ARGUMENT);
    EXPECT(ets_predictor_load_job_limited(NULL, "x", argv[2], 0) == ETS_INVALID_ARGUMENT);
    EXPECT(ets_predictor_remove_job(p, "job3") == ETS_OK && ets_predictor_remove_job(p, "job4") == ETS_OK);
  }
  if (argc > 3) {
    /* a trace without a batch size (argv[3], a PyTorch ET): the one given is a feature; a trace's own wins */
    ets_estimate unknown, two, sixty_four, own, own_given;
    EXPECT(ets_predictor_load_job(p, "et", argv[3]) == ETS_OK);
    EXPECT(ets_predict(p, "et", "envA", &unknown) == ETS_OK);
    EXPECT(ets_predictor_load_job_with_batch_size(p, "et", argv[3], 0, 2) == ETS_OK);
    EXPECT(ets_predict(p, "et", "envA", &two) == ETS_OK);
    EXPECT(ets_predictor_load_job_with_batch_size(p, "et", argv[3], 0, 64) == ETS_OK);
    EXPECT(ets_predict(p, "et", "envA", &sixty_four) == ETS_OK);
    EXPECT(unknown.iteration_us != two.iteration_us && two.iteration_us != sixty_four.iteration_us);
    EXPECT(ets_predictor_load_job_with_batch_size(p, "et", argv[3], 0, 0) == ETS_OK); /* 0: left unknown */
    EXPECT(ets_predict(p, "et", "envA", &two) == ETS_OK && two.iteration_us == unknown.iteration_us);
    EXPECT(ets_predict(p, "job1", "envA", &own) == ETS_OK);
    EXPECT(ets_predictor_load_job_with_batch_size(p, "own", argv[2], 0, 64) == ETS_OK);
    EXPECT(ets_predict(p, "own", "envA", &own_given) == ETS_OK && own_given.iteration_us == own.iteration_us);
    EXPECT(ets_predictor_load_job_with_batch_size(p, "own", argv[2], 1024, 64) == ETS_UNSUPPORTED); /* max_bytes */
    EXPECT(ets_predictor_load_job_with_batch_size(p, NULL, argv[3], 0, 2) == ETS_INVALID_ARGUMENT);
    EXPECT(ets_predictor_load_job_with_batch_size(p, "x", argv[3], 0, (size_t)-1) == ETS_INVALID_ARGUMENT);
    EXPECT(strcmp(ets_last_error_id(), "ets.import.4") == 0);
    EXPECT(ets_predictor_remove_job(p, "et") == ETS_OK && ets_predictor_remove_job(p, "own") == ETS_OK);
  }
  EXPECT(ets_predict(p, "nojob", "envA", &before) == ETS_INVALID_ARGUMENT);
  EXPECT(strcmp(ets_last_error_id(), "ets.predict.1") == 0);
  {
    /* a message past the 4 KiB buffer is cut, ending in "...", between characters: a job id of 2-, 3- and 4-byte
       characters behind 0-3 ASCII bytes puts the cut at every position inside a character */
    static const char* const chars[] = {"\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80"}; /* é € 😀 */
    static char id[6000];
    size_t c, shift, at, len;
    for (c = 0; c < 3; ++c)
      for (shift = 0; shift < 4; ++shift) {
        const size_t w = strlen(chars[c]);
        memset(id, 'x', shift);
        for (at = shift; at + w < sizeof id; at += w) memcpy(id + at, chars[c], w);
        id[at] = '\0';
        EXPECT(ets_predict(p, id, "envA", &before) == ETS_INVALID_ARGUMENT);
        len = strlen(ets_last_error());
        EXPECT(len >= 4095 - 3 && len <= 4095 && strcmp(ets_last_error() + len - 3, "...") == 0);
        EXPECT(strncmp(ets_last_error(), "[ets.predict.1] ", 16) == 0 && valid_utf8(ets_last_error()));
      }
  }
  EXPECT(ets_predict(p, "job1", "noenv", &before) == ETS_INVALID_ARGUMENT);
  EXPECT(strcmp(ets_last_error_id(), "ets.predict.2") == 0);
  {
    /* the last error is per thread: another thread's failure leaves this thread's message as it was */
    pthread_t t;
    char other[64] = {0};
    EXPECT(pthread_create(&t, NULL, fail_on_thread, other) == 0);
    EXPECT(pthread_join(t, NULL) == 0);
    EXPECT(strcmp(other, "ets.capi.1") == 0);
    EXPECT(strcmp(ets_last_error_id(), "ets.predict.2") == 0);
    EXPECT(strstr(ets_last_error(), "noenv") != NULL);
  }

  /* batch == single, row-major jobs x envs */
  jobs[0] = "job1";
  jobs[1] = "job2";
  envs[0] = "envA";
  envs[1] = "envB";
  EXPECT(ets_predict_batch(p, jobs, 2, envs, 2, batch) == ETS_OK);
  for (i = 0; i < 4; ++i) {
    EXPECT(ets_predict(p, jobs[i / 2], envs[i % 2], &single[i]) == ETS_OK);
    EXPECT(close_rel(batch[i].iteration_us, single[i].iteration_us, 1e-9));
    EXPECT(batch[i].iteration_us > 0);
    EXPECT(batch[i].lo_us <= batch[i].iteration_us && batch[i].iteration_us <= batch[i].hi_us);
    EXPECT(batch[i].correction == 1.0);
    EXPECT(batch[i].observations == 0);
    EXPECT(batch[i].ops > 0);
  }
  envs[1] = NULL;
  EXPECT(ets_predict_batch(p, jobs, 2, envs, 2, batch) == ETS_INVALID_ARGUMENT);
  EXPECT(strstr(ets_last_error(), "envs[1]") != NULL);
  EXPECT(ets_predict_batch(p, jobs, 0, envs, 2, NULL) == ETS_OK); /* empty batch: nothing to write */

  /* observe: a job measured 25% slower moves toward the measurement, the other job does not move */
  EXPECT(ets_predict(p, "job1", "envA", &before) == ETS_OK);
  for (i = 0; i < 20; ++i) EXPECT(ets_observe(p, "job1", "envA", 1.25 * before.raw_us) == ETS_OK);
  EXPECT(ets_predict(p, "job1", "envA", &after) == ETS_OK);
  EXPECT(after.observations == 20);
  EXPECT(after.iteration_us > before.iteration_us);
  EXPECT(fabs(after.iteration_us - 1.25 * before.raw_us) < 0.05 * before.raw_us);
  EXPECT(ets_predict(p, "job2", "envA", &after) == ETS_OK);
  EXPECT(after.iteration_us == single[2].iteration_us);
  EXPECT(ets_observe(p, "job1", "envA", -3.0) == ETS_INVALID_ARGUMENT);
  EXPECT(strcmp(ets_last_error_id(), "ets.predict.3") == 0);

  if (__asan_init != NULL) {
    printf("ets_c_test: pthread_cancel check skipped under AddressSanitizer (google/sanitizers#1399)\n");
  } else {
    /* pthread_cancel of a thread waiting inside the library cancels that thread only (glibc unwinds it through the
       C ABI); the process and the handle carry on */
    char dir[] = "/tmp/ets_c_test_XXXXXX";
    char fifo[64];
    void* args[2];
    void* res = NULL;
    pthread_t t;
    EXPECT(mkdtemp(dir) != NULL);
    snprintf(fifo, sizeof fifo, "%s/trace.json", dir);
    EXPECT(mkfifo(fifo, 0600) == 0);
    args[0] = p;
    args[1] = fifo;
    EXPECT(pthread_create(&t, NULL, load_blocking, args) == 0);
    EXPECT(pthread_cancel(t) == 0);
    EXPECT(pthread_join(t, &res) == 0);
    EXPECT(res == PTHREAD_CANCELED);
    EXPECT(ets_predict(p, "job1", "envA", &after) == ETS_OK);
    EXPECT(ets_predict(p, "blocked", "envA", &after) == ETS_INVALID_ARGUMENT);
    unlink(fifo);
    rmdir(dir);
  }

  /* a job's observations dropped on every environment; an environment forgotten with its observations */
  EXPECT(ets_observe(p, "job1", "envB", 2.0 * single[1].raw_us) == ETS_OK);
  EXPECT(ets_predictor_reset_observations(p, "job1") == ETS_OK);
  EXPECT(ets_predict(p, "job1", "envA", &after) == ETS_OK);
  EXPECT(after.observations == 0 && after.correction == 1.0);
  EXPECT(ets_predictor_reset_observations(p, "nojob") == ETS_INVALID_ARGUMENT);
  EXPECT(strcmp(ets_last_error_id(), "ets.predict.1") == 0);
  EXPECT(ets_predictor_reset_observations(p, NULL) == ETS_INVALID_ARGUMENT);
  EXPECT(ets_observe(p, "job1", "envB", 2.0 * single[1].raw_us) == ETS_OK);
  EXPECT(ets_predictor_remove_model(p, "envB") == ETS_OK);
  EXPECT(ets_predictor_env_count(p, &count) == ETS_OK);
  EXPECT(count == 1);
  EXPECT(ets_predict(p, "job1", "envB", &after) == ETS_INVALID_ARGUMENT);
  EXPECT(ets_predictor_remove_model(p, "envB") == ETS_INVALID_ARGUMENT);
  EXPECT(strcmp(ets_last_error_id(), "ets.predict.2") == 0);
  EXPECT(ets_predictor_remove_model(p, NULL) == ETS_INVALID_ARGUMENT);
  EXPECT(ets_predictor_add_model(p, "envB", argv[1]) == ETS_OK);
  EXPECT(ets_predict(p, "job1", "envB", &after) == ETS_OK);
  EXPECT(after.observations == 0);

  EXPECT(ets_predictor_remove_job(p, "job2") == ETS_OK);
  EXPECT(ets_predictor_remove_job(p, "job2") == ETS_INVALID_ARGUMENT);
  ets_predictor_destroy(p);

  if (failures) fprintf(stderr, "%d expectation(s) failed\n", failures);
  else printf("ets_c_test: all expectations passed (ets %s)\n", ets_version());
  return failures ? 1 : 0;
}
