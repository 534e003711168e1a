/* ets.h — the stable C ABI of ETS for schedulers written in C, Go (cgo), Python (ctypes), Rust, ...
   Opaque handles, status codes equal to ets::Errc, thread-local error messages; no C++ exception crosses it. */
#ifndef ETS_ETS_H
#define ETS_ETS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped only when an existing declaration below changes meaning or layout; additions keep it. */
#define ETS_ABI_VERSION 1

/* Status of every call. The numeric values equal ets::Errc (include/ets/error.hpp) and never change. */
typedef enum ets_status {
  ETS_OK = 0,
  ETS_INVALID_ARGUMENT = 1, /* a NULL / out-of-range argument, an unknown job or environment */
  ETS_IO = 2,               /* a file could not be opened / read */
  ETS_PARSE = 3,            /* a file is not well-formed for its format */
  ETS_UNSUPPORTED = 4,
  ETS_VERSION = 5,
  ETS_CHECKSUM = 6,
  ETS_SHAPE = 7,
  ETS_BACKEND = 8,
  ETS_INVALID_TRACE = 9,
  ETS_INTERNAL = 10 /* a bug in ETS, or out of memory */
} ets_status;

/* One prediction of one job on one environment, in microseconds. Layout fixed for ETS_ABI_VERSION 1. */
typedef struct ets_estimate {
  double iteration_us; /* corrected prediction of one training iteration */
  double lo_us;        /* interval (corrected alike) */
  double hi_us;
  double raw_us;       /* the model's own prediction before ets_observe() corrections */
  double correction;   /* factor applied: iteration_us = raw_us * correction */
  long observations;   /* ets_observe() calls behind the correction (saturates at LONG_MAX) */
  long ops;            /* operators in the job's trace (< 2^31: the encoder's limit) */
} ets_estimate;

/* A predictor: models per hardware environment plus registered jobs. Thread-safe: one handle may be used by many
   threads at once, except ets_predictor_destroy, which must be the last call on it. A thread cancelled
   (pthread_cancel) inside a call is unwound like any cancelled thread; the handle stays usable by the others. */
typedef struct ets_predictor ets_predictor;

/* "0.1.0" — version of the linked library (static storage). */
const char* ets_version(void);
/* ETS_ABI_VERSION of the linked library: compare with the header's to catch a mismatched build. */
int ets_abi_version(void);

/* Message of the last failed call on this thread ("" when none); valid until the next failing call on this thread.
   It starts with the stable id in brackets, e.g. "[ets.predict.1] unknown job 'x'" (docs/errors.md). */
const char* ets_last_error(void);
/* Just the stable id of the last failure on this thread ("ets.predict.1"; "" when none). */
const char* ets_last_error_id(void);

/* Creates a predictor with default options (observe() prior weight 2, CPU backend unless CUDA was enabled). */
ets_status ets_predictor_create(ets_predictor** out);
/* Destroys a predictor; NULL is accepted and ignored. As with free(), the handle is invalid afterwards: destroying
   it again (or any other call on it) is undefined behaviour, which ETS cannot detect. */
void ets_predictor_destroy(ets_predictor* predictor);

/* Loads an .etsm model for an environment id. env NULL or "" = the model's own hardware environment. */
ets_status ets_predictor_add_model(ets_predictor* predictor, const char* env, const char* model_path);
/* Loads the shipped default model: $ETS_MODEL, else <exe dir>/../share/ets/models/default.etsm, else
   <exe dir>/models/default.etsm, else (a shared libets loaded by python3, a Go or JVM binary...)
   <libets dir>/../share/ets/models/default.etsm; ETS_IO (ets.predict.8) when none exists. */
ets_status ets_predictor_add_default_model(ets_predictor* predictor, const char* env);
/* Forgets an environment's model, its cached predictions and every job's observations on it (ETS_INVALID_ARGUMENT,
   ets.predict.2, when none is registered): a long-running scheduler that retires environments frees them so. */
ets_status ets_predictor_remove_model(ets_predictor* predictor, const char* env);
/* Number of environments, and the id of the i-th (copied into buf of cap bytes, NUL-terminated; ETS_INVALID_ARGUMENT
   when it does not fit, buf untouched). env_name_size gives the bytes the i-th id needs, NUL included. */
ets_status ets_predictor_env_count(const ets_predictor* predictor, size_t* out);
ets_status ets_predictor_env_name_size(const ets_predictor* predictor, size_t index, size_t* out);
ets_status ets_predictor_env_name(const ets_predictor* predictor, size_t index, char* buf, size_t cap);

/* Registers a job from a trace file (Kineto JSON, PyTorch Execution Trace, Nsight SQLite, ETS CSV / trace; plain or
   .gz), replacing any job with that id together with its observations. */
ets_status ets_predictor_load_job(ets_predictor* predictor, const char* job_id, const char* trace_path);
/* The same, refusing a file that holds more than max_bytes once decompressed (ETS_UNSUPPORTED, ets.io.6; 0, or
   (size_t)-1, = no limit), its read stopped one byte past the limit: for a scheduler that reads traces its users
   submit (gzip expands up to ~1,000:1). The job already registered under job_id stays as it was. */
ets_status ets_predictor_load_job_limited(ets_predictor* predictor, const char* job_id, const char* trace_path,
                                          size_t max_bytes);
/* As ets_predictor_load_job_limited, giving a trace that records no batch size (a PyTorch Execution Trace, an Nsight
   export) this one; a trace's own wins, and 0 leaves an unrecorded one unknown. The batch size is a feature: a model
   trained on traces that had one predicts an unknown one out of its range. */
ets_status ets_predictor_load_job_with_batch_size(ets_predictor* predictor, const char* job_id,
                                                  const char* trace_path, size_t max_bytes, size_t batch_size);
/* Forgets a job (ETS_INVALID_ARGUMENT when it is not registered). */
ets_status ets_predictor_remove_job(ets_predictor* predictor, const char* job_id);

/* One registered job on one environment. */
ets_status ets_predict(const ets_predictor* predictor, const char* job_id, const char* env, ets_estimate* out);
/* n_jobs × n_envs predictions into out[j * n_envs + e] (row-major). Each job is encoded once per distinct encoder
   and all of its windows go through one forward pass per model. On failure out is left unspecified. */
ets_status ets_predict_batch(const ets_predictor* predictor, const char* const* job_ids, size_t n_jobs,
                             const char* const* envs, size_t n_envs, ets_estimate* out);

/* Reports a measured iteration time of a running job; later predictions of that job on that environment are
   corrected (shrunk log-space multiplicative factor, see include/ets/predictor.hpp). */
ets_status ets_observe(ets_predictor* predictor, const char* job_id, const char* env, double measured_us);
/* Drops a job's observations on every environment: later predictions are uncorrected until it is observed again
   (a job that changed, e.g. after a restart with other settings). ETS_INVALID_ARGUMENT (ets.predict.1) for an
   unknown job. */
ets_status ets_predictor_reset_observations(ets_predictor* predictor, const char* job_id);

#ifdef __cplusplus
}
#endif

#endif /* ETS_ETS_H */
