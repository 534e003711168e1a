// ets-test-labels: unit
// A host's per-thread cleanup (a pthread_key destructor) that calls ETS: glibc runs it after the thread's C++
// thread_locals were destroyed, so the C ABI's error message and the CPU backend's workspace must not live in
// objects with destructors. (A scheduler's worker that forgets its jobs, or predicts one last time, as it ends.)
#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "ets/bilstm_predictor.hpp"
#include "ets/ets.h"
#include "ets/model_file.hpp"
#include "lstm_reference.hpp"
#include "predict_fixtures.hpp"
#include "test_support.hpp"
#include "train_fixtures.hpp"

#if defined(__linux__)
#include <malloc.h>  // mallinfo2
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

namespace {

// A worker whose first ETS calls run in its pthread_key destructor, after the thread_local destructors: it loads a
// job, predicts it (the CPU forward's first use of the thread's workspace) and forgets it, as a scheduler's
// per-thread cleanup might.
struct AtExit {
  ets_predictor* predictor = nullptr;
  std::string trace;
  pthread_key_t key{};
  int failures = 0;
};
AtExit at_exit;

void predict_at_exit(void* arg) {
  const std::string id = "job" + std::to_string(reinterpret_cast<std::uintptr_t>(arg));
  ets_estimate e{};
  if (ets_predictor_load_job(at_exit.predictor, id.c_str(), at_exit.trace.c_str()) != ETS_OK ||
      ets_predict(at_exit.predictor, id.c_str(), "A", &e) != ETS_OK ||
      ets_predictor_remove_job(at_exit.predictor, id.c_str()) != ETS_OK)
    ++at_exit.failures;
}
void* idle_worker(void* arg) {
  pthread_setspecific(at_exit.key, arg);
  return nullptr;
}
// Every arena's allocated bytes and the mmap'ed blocks (allocations past 128 KB) (glibc >= 2.33).
std::size_t heap_in_use() {
  const auto m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

}  // namespace

// Not under the sanitizers: their allocator keeps its own books (mallinfo2 does not see them), and LeakSanitizer
// reports the 32 bytes glibc allocates to register a thread_local destructor so late that it never runs it.
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
TEST_CASE("a thread whose first forward runs in its pthread_key destructor leaves no buffer behind") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("ets-thread-exit-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::vector<ets::ExecutionTrace> traces;
  for (int i = 0; i < 3; ++i) traces.push_back(ets_test::learnable_trace(300 + static_cast<std::uint32_t>(i), 30));
  const std::string model = (dir / "m.etsm").string();
  at_exit.trace = ets_test::fixture("cpu_small_mlp.json.gz");
  ets::save_model(ets_test::small_model(traces, 3), model);
  REQUIRE(ets_predictor_create(&at_exit.predictor) == ETS_OK);
  REQUIRE(ets_predictor_add_model(at_exit.predictor, "A", model.c_str()) == ETS_OK);
  REQUIRE(pthread_key_create(&at_exit.key, predict_at_exit) == 0);
  const auto run_threads = [](std::uintptr_t first, int n) {
    for (int i = 0; i < n; ++i) {
      pthread_t t;
      REQUIRE(pthread_create(&t, nullptr, idle_worker, reinterpret_cast<void*>(first + i)) == 0);
      REQUIRE(pthread_join(t, nullptr) == 0);
    }
  };
  run_threads(1, 4);  // the arenas and the rest of what a first thread sets up
  const std::size_t before = heap_in_use();
  run_threads(5, 40);
  const std::size_t after = heap_in_use();
  pthread_key_delete(at_exit.key);
  ets_predictor_destroy(at_exit.predictor);
  fs::remove_all(dir);
  CHECK(at_exit.failures == 0);
  // A leaked workspace is tens of KB a thread (40 threads: ~2 MB here); the allocator's own bookkeeping stays far
  // below 256 KB.
  INFO("heap in use before " << before << " bytes, after " << after);
  CHECK(after < before + (std::size_t{1} << 18));
}
#endif

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
