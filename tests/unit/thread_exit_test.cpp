// ets-test-labels: unit
// A host's per-thread cleanup (a pthread_key destructor) that calls ETS: glibc runs it after the thread's C++
// thread_locals were destroyed, so the C ABI's error message and the CPU backend's workspace must not live in
// objects with destructors. (A scheduler's worker that forgets its jobs, or predicts one last time, as it ends.)
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "ets/bilstm_predictor.hpp"
#include "ets/ets.h"
#include "lstm_reference.hpp"

#if defined(__linux__)
#include <pthread.h>

namespace {

struct Shared {
  ets_predictor* predictor = nullptr;
  const ets::BiLstmPredictor* model = nullptr;
  ets::WindowBatch batch;
  pthread_key_t key{};
  // Filled in by the cleanup:
  int status = ETS_OK;
  std::string message, id;
  std::vector<float> y;
};
Shared shared;

void cleanup(void*) {
  shared.status = ets_predictor_remove_job(shared.predictor, "a-job-this-worker-registered-and-is-now-forgetting");
  shared.message = ets_last_error();
  shared.id = ets_last_error_id();
  shared.y = shared.model->predict(shared.batch);
}

void* worker(void*) {
  pthread_setspecific(shared.key, &shared);
  // Both thread-local objects exist before the thread ends: a failure's message and the forward's workspace.
  (void)ets_predictor_remove_job(shared.predictor, "an-unknown-job-with-a-name-long-enough-to-allocate");
  (void)shared.model->predict(shared.batch);
  return nullptr;
}

}  // namespace

TEST_CASE("the C ABI and the CPU forward work in a pthread_key destructor, after the thread's thread_locals") {
  const ets::LstmConfig c{6, 8, 2, 2, true};
  const ets::BiLstmPredictor model(ets_test::random_lstm_weights(c, 5, 0.4f));
  shared.model = &model;
  shared.batch.windows = 9;
  shared.batch.width = 12;
  shared.batch.features = c.input_size;
  shared.batch.x.resize(static_cast<std::size_t>(9 * 12 * c.input_size));
  for (std::size_t i = 0; i < shared.batch.x.size(); ++i) shared.batch.x[i] = static_cast<float>(i % 7) * 0.25f - 0.7f;
  REQUIRE(ets_predictor_create(&shared.predictor) == ETS_OK);
  REQUIRE(pthread_key_create(&shared.key, cleanup) == 0);
  pthread_t t;
  REQUIRE(pthread_create(&t, nullptr, worker, nullptr) == 0);
  REQUIRE(pthread_join(t, nullptr) == 0);
  pthread_key_delete(shared.key);
  ets_predictor_destroy(shared.predictor);

  CHECK(shared.status != ETS_OK);
  CHECK(shared.id == "ets.predict.1");
  CHECK(shared.message.rfind("[ets.predict.1] ", 0) == 0);
  CHECK(shared.message.find("a-job-this-worker-registered-and-is-now-forgetting") != std::string::npos);
  CHECK(shared.y == model.predict(shared.batch));  // the same numbers as on a live thread
}

TEST_CASE("a C ABI message longer than its buffer is cut, ending in '...'") {
  ets_predictor* p = nullptr;
  REQUIRE(ets_predictor_create(&p) == ETS_OK);
  const std::string job(10000, 'j');
  CHECK(ets_predictor_remove_job(p, job.c_str()) != ETS_OK);
  const std::string message = ets_last_error();
  CHECK(message.rfind("[ets.predict.1] ", 0) == 0);
  CHECK(message.size() == 4095);
  CHECK(message.substr(message.size() - 3) == "...");
  CHECK(std::string(ets_last_error_id()) == "ets.predict.1");
  ets_predictor_destroy(p);
}
#endif
