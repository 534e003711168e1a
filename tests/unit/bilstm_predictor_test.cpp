// ets-test-labels: unit;concurrency
// BiLstmPredictor on the CPU: agreement with a plain double-precision transcription of PyTorch's nn.LSTM / nn.GRU
// equations, batch independence, concurrent predict() on one model, backend selection and error ids.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <random>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#if defined(__SSE__)
#include <xmmintrin.h>
#endif

#include "ets/bilstm_predictor.hpp"
#include "ets/error.hpp"
#include "lstm_reference.hpp"

namespace {

ets::LstmWeights random_weights(const ets::LstmConfig& c, unsigned seed, float scale = 0.3f) {
  return ets_test::random_lstm_weights(c, seed, scale);
}

std::vector<float> random_input(int n, int w, int f, unsigned seed, float scale = 2.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.0f, scale);
  std::vector<float> x(static_cast<std::size_t>(n) * w * f);
  for (auto& v : x) v = g(rng);
  return x;
}

// The textbook equations (PyTorch docs for nn.LSTM / nn.GRU), one window at a time, in double precision
// (tests/lstm_reference.hpp), rounded to float for comparison.
std::vector<float> reference(const ets::LstmWeights& wt, const std::vector<float>& x, int n, int w) {
  const std::vector<double> y = ets_test::reference_forward(wt, x, n, w);
  return {y.begin(), y.end()};
}

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  float m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

ets::WindowBatch batch_of(const std::vector<float>& x, int n, int w, int f) {
  ets::WindowBatch b;
  b.windows = n;
  b.width = w;
  b.features = f;
  b.x = x;
  return b;
}

}  // namespace

TEST_CASE("CPU forward matches the nn.LSTM equations across shapes") {
  struct Shape { int f, h, layers, outputs; bool bidir; int n, w; };
  const Shape shapes[] = {
      {16, 16, 4, 2, true, 4, 12},  // the shipped architecture, small
      {5, 7, 2, 2, true, 3, 12},    // sizes that are no multiple of the SIMD panel
      {3, 9, 1, 3, false, 13, 5},   // unidirectional, a row count that leaves every micro-tile remainder
      {8, 33, 3, 2, true, 1, 12},   // a single window
      {12, 20, 4, 2, true, 7, 1},   // width 1: no recurrence at all
  };
  for (const auto& s : shapes) {
    ets::LstmConfig c{s.f, s.h, s.layers, s.outputs, s.bidir};
    const auto wt = random_weights(c, 11u + s.h);
    const auto x = random_input(s.n, s.w, s.f, 5u + s.f);
    ets::BiLstmPredictor p(wt);
    const auto y = p.predict(batch_of(x, s.n, s.w, s.f));
    INFO("F=" << s.f << " H=" << s.h << " L=" << s.layers << " N=" << s.n << " W=" << s.w);
    CHECK(max_abs_diff(y, reference(wt, x, s.n, s.w)) <= 1e-5f);
    CHECK(p.backend_name() == "cpu-eigen");
    CHECK(p.backend_note().empty());
  }
}

TEST_CASE("CPU forward of a GRU matches the nn.GRU equations across shapes") {
  struct Shape { int f, h, layers; bool bidir; int n, w; };
  const Shape shapes[] = {
      {16, 16, 4, true, 4, 12},  // the shipped geometry with the other cell
      {5, 7, 2, true, 3, 12},    // no multiple of the SIMD width: the scalar tail of the gate pass
      {3, 9, 1, false, 13, 5},   // unidirectional, every micro-tile remainder
      {12, 20, 4, true, 7, 1},   // width 1: only the first step, where the recurrent side is b_hh alone
  };
  for (const auto& s : shapes) {
    ets::LstmConfig c{s.f, s.h, s.layers, 2, s.bidir, ets::RnnCell::gru};
    const auto wt = random_weights(c, 21u + s.h, 0.5f);
    const auto x = random_input(s.n, s.w, s.f, 7u + s.f);
    ets::BiLstmPredictor p(wt);
    const auto y = p.predict(batch_of(x, s.n, s.w, s.f));
    const auto ref = reference(wt, x, s.n, s.w);
    INFO("GRU F=" << s.f << " H=" << s.h << " L=" << s.layers << " N=" << s.n << " W=" << s.w);
    CHECK(max_abs_diff(y, ref) <= 1e-5f);
    CHECK(max_abs_diff(ref, std::vector<float>(ref.size(), 0.0f)) > 0.1f);  // the outputs are not trivially small
  }
  // The same weights read as an LSTM would be a different network: the cell really switches the math.
  ets::LstmConfig c{5, 7, 2, 2, true, ets::RnnCell::gru};
  ets::LstmWeights wt = random_weights(c, 3, 0.5f);
  ets::LstmConfig as_lstm = c;
  as_lstm.cell = ets::RnnCell::lstm;
  wt.config = as_lstm;
  CHECK_THROWS_WITH(ets::BiLstmPredictor(wt), Catch::Contains("ets.predictor.1"));
}

TEST_CASE("each window is independent of the others in its batch") {
  ets::LstmConfig c{10, 24, 4, 2, true};
  ets::BiLstmPredictor p(random_weights(c, 3));
  const int n = 37, w = 12;
  const auto x = random_input(n, w, c.input_size, 9);
  const auto all = p.predict(batch_of(x, n, w, c.input_size));
  const std::size_t in_stride = static_cast<std::size_t>(w) * c.input_size, out_stride = static_cast<std::size_t>(w) * 2;
  for (int i : {0, 5, 17, 36}) {
    std::vector<float> one(x.begin() + i * in_stride, x.begin() + (i + 1) * in_stride);
    const auto y1 = p.predict(batch_of(one, 1, w, c.input_size));
    const std::vector<float> part(all.begin() + i * out_stride, all.begin() + (i + 1) * out_stride);
    CHECK(max_abs_diff(y1, part) <= 1e-6f);
  }
}

TEST_CASE("a batch larger than one scratch slice gives what its parts give") {
  // the CPU backend runs more than 64 Ki rows (windows × width) in slices to bound its per-thread scratch memory
  ets::LstmConfig c{3, 4, 1, 2, true};
  ets::BiLstmPredictor p(random_weights(c, 7));
  const int w = 4, n = (1 << 16) / w * 2 + 5;  // two full slices and a short third
  const auto x = random_input(n, w, c.input_size, 13);
  const auto all = p.predict(batch_of(x, n, w, c.input_size));
  const std::size_t in_stride = static_cast<std::size_t>(w) * c.input_size, out_stride = static_cast<std::size_t>(w) * 2;
  for (int i : {0, (1 << 14) - 1, 1 << 14, n - 1}) {  // first, last of the first slice, first of the second, last
    std::vector<float> one(x.begin() + i * in_stride, x.begin() + (i + 1) * in_stride);
    const auto y1 = p.predict(batch_of(one, 1, w, c.input_size));
    const std::vector<float> part(all.begin() + i * out_stride, all.begin() + (i + 1) * out_stride);
    CHECK(max_abs_diff(y1, part) <= 1e-6f);
  }
}

TEST_CASE("8 threads predicting on one shared model give bitwise the single-threaded results") {
  ets::LstmConfig c{16, 32, 4, 2, true};
  const ets::BiLstmPredictor p(random_weights(c, 21));
  // Different batch sizes per thread so workspaces are grown and reused concurrently.
  std::vector<std::vector<float>> inputs, expected;
  for (int i = 0; i < 8; ++i) {
    const int n = 1 + 9 * i;
    inputs.push_back(random_input(n, 12, c.input_size, 100u + i));
    expected.push_back(p.predict(batch_of(inputs.back(), n, 12, c.input_size)));
  }
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&, i] {
      for (int rep = 0; rep < 20; ++rep) {
        const int j = (i + rep) % 8;
        const int n = 1 + 9 * j;
        std::vector<float> y(static_cast<std::size_t>(n) * 12 * 2);
        p.predict(inputs[j].data(), n, 12, y.data());
        if (y != expected[j]) ++mismatches;
      }
    });
  for (auto& t : threads) t.join();
  CHECK(mismatches.load() == 0);
}

TEST_CASE("extreme inputs give finite outputs and the caller's float environment is restored") {
  ets::LstmConfig c{4, 8, 2, 2, true};
  ets::BiLstmPredictor p(random_weights(c, 4, 2.0f));
  std::vector<float> x(static_cast<std::size_t>(2) * 12 * 4, 1e30f);
  for (std::size_t i = 0; i < x.size(); i += 3) x[i] = -1e30f;
  x[1] = 1e-40f;  // a denormal
#if defined(__SSE__)
  const unsigned before = _mm_getcsr();
#endif
  const auto y = p.predict(batch_of(x, 2, 12, 4));
#if defined(__SSE__)
  CHECK(_mm_getcsr() == before);
#endif
  for (float v : y) CHECK(std::isfinite(v));
}

TEST_CASE("bad weights and batches are rejected with stable ids") {
  ets::LstmConfig c{6, 8, 2, 2, true};
  auto good = random_weights(c, 1);
  auto expect_id = [](auto&& fn, const char* id) {
    try {
      fn();
      FAIL("no exception; expected " << id);
    } catch (const ets::Error& e) {
      CHECK(e.id() == id);
    }
  };
  {
    auto w = good;
    w.cells[3].w_hh.pop_back();
    expect_id([&] { ets::BiLstmPredictor p(w); }, "ets.predictor.1");
  }
  {
    auto w = good;
    w.cells.pop_back();
    expect_id([&] { ets::BiLstmPredictor p(w); }, "ets.predictor.1");
  }
  {
    auto w = good;
    w.config.cell = static_cast<ets::RnnCell>(7);  // e.g. a config read from foreign memory
    expect_id([&] { ets::BiLstmPredictor p(w); }, "ets.predictor.2");
  }
  {
    auto w = good;
    w.head_b.push_back(0);
    expect_id([&] { ets::BiLstmPredictor p(w); }, "ets.predictor.1");
  }
  {
    auto w = good;
    w.config.hidden = 0;
    expect_id([&] { ets::BiLstmPredictor p(w); }, "ets.predictor.2");
  }
  ets::BiLstmPredictor p(good);
  expect_id([&] { p.predict(batch_of(std::vector<float>(2 * 12 * 5), 2, 12, 5)); }, "ets.predictor.4");
  expect_id([&] { p.predict(batch_of(std::vector<float>(7), 2, 12, 6)); }, "ets.predictor.4");
  expect_id([&] { p.predict(nullptr, 2, 12, nullptr); }, "ets.predictor.5");
  expect_id([&] { p.predict(nullptr, 1, 0, nullptr); }, "ets.predictor.5");
  // a batch of a bad shape is .5, as the raw form, before its size is compared (which wrapped for N < 0)
  expect_id([&] { p.predict(batch_of({}, -1, 12, 6)); }, "ets.predictor.5");
  expect_id([&] { p.predict(batch_of({}, 1, 0, 6)); }, "ets.predictor.5");
  expect_id([&] { p.predict(batch_of({}, 1 << 20, 1 << 12, 6)); }, "ets.predictor.5");
  CHECK(p.predict(batch_of({}, 0, 12, 6)).empty());
}

namespace {
struct FakeBackend : ets::InferenceBackend {
  ets::LstmConfig cfg;
  explicit FakeBackend(ets::LstmConfig c) : cfg(c) {}
  void forward(const float*, int windows, int width, float* y) const override {
    std::fill(y, y + static_cast<std::size_t>(windows) * width * cfg.outputs, 42.0f);
  }
  std::string name() const override { return "fake-cuda"; }
  const ets::LstmConfig& config() const noexcept override { return cfg; }
};
std::unique_ptr<ets::InferenceBackend> fake_factory(const ets::LstmWeights& w) {
  return std::make_unique<FakeBackend>(w.config);
}
std::unique_ptr<ets::InferenceBackend> mismatched_factory(const ets::LstmWeights& w) {
  auto c = w.config;
  c.hidden += 1;  // a backend for another network
  return std::make_unique<FakeBackend>(c);
}
std::unique_ptr<ets::InferenceBackend> failing_factory(const ets::LstmWeights&) {
  ETS_THROW(ets::Errc::backend, "ets.cuda.1", "no CUDA device present");
}
std::unique_ptr<ets::InferenceBackend> foreign_failing_factory(const ets::LstmWeights&) {
  throw std::runtime_error("driver library missing");
}
struct DriverFault {};  // a vendor wrapper's error type, not derived from std::exception
std::unique_ptr<ets::InferenceBackend> non_standard_failing_factory(const ets::LstmWeights&) { throw DriverFault{}; }
}  // namespace

TEST_CASE("backend selection: Cuda needs a factory, Auto falls back to the CPU and says why") {
  ets::LstmConfig c{6, 8, 2, 2, true};
  const auto w = random_weights(c, 2);
  ets::detail::set_cuda_backend_factory(nullptr);
  try {
    ets::BiLstmPredictor p(w, ets::Backend::Cuda);
    FAIL("Backend::Cuda without a factory must throw");
  } catch (const ets::Error& e) {
    CHECK(e.id() == "ets.predictor.3");
    CHECK(e.code() == ets::Errc::backend);
  }
  {
    ets::BiLstmPredictor p(w, ets::Backend::Auto);
    CHECK(p.backend_name() == "cpu-eigen");
    CHECK(p.backend_note().find("no CUDA backend registered") != std::string::npos);
  }
  ets::detail::set_cuda_backend_factory(&failing_factory);
  {
    ets::BiLstmPredictor p(w, ets::Backend::Auto);
    CHECK(p.backend_name() == "cpu-eigen");
    CHECK(p.backend_note().find("no CUDA device present") != std::string::npos);
    CHECK_THROWS_AS(ets::BiLstmPredictor(w, ets::Backend::Cuda), ets::Error);
  }
  // Auto falls back whatever the factory throws; Cuda passes the failure on.
  ets::detail::set_cuda_backend_factory(&foreign_failing_factory);
  {
    ets::BiLstmPredictor p(w, ets::Backend::Auto);
    CHECK(p.backend_name() == "cpu-eigen");
    CHECK(p.backend_note().find("driver library missing") != std::string::npos);
    CHECK_THROWS_AS(ets::BiLstmPredictor(w, ets::Backend::Cuda), std::runtime_error);
  }
  // ... also an exception type of the factory's own, not derived from std::exception (it escaped Auto)
  ets::detail::set_cuda_backend_factory(&non_standard_failing_factory);
  {
    ets::BiLstmPredictor p(w, ets::Backend::Auto);
    CHECK(p.backend_name() == "cpu-eigen");
    CHECK(p.backend_note().find("non-standard exception") != std::string::npos);
    CHECK_THROWS_AS(ets::BiLstmPredictor(w, ets::Backend::Cuda), DriverFault);
  }
  ets::detail::set_cuda_backend_factory(&fake_factory);
  {
    ets::BiLstmPredictor p(w, ets::Backend::Auto);
    CHECK(p.backend_name() == "fake-cuda");
    CHECK(p.backend_note().empty());
    CHECK(p.predict(batch_of(std::vector<float>(12 * 6), 1, 12, 6)).front() == 42.0f);
  }
  // a factory's backend must run the network it was given, as a caller-made one must (below)
  ets::detail::set_cuda_backend_factory(&mismatched_factory);
  for (auto b : {ets::Backend::Cuda, ets::Backend::Auto}) {
    try {
      ets::BiLstmPredictor p(w, b);
      FAIL("a backend of another network was accepted");
    } catch (const ets::Error& e) {
      CHECK(e.id() == "ets.predictor.1");
    }
  }
  ets::detail::set_cuda_backend_factory(nullptr);
  // A caller-made backend must agree with the weights' shape.
  auto other = c;
  other.hidden = 9;
  CHECK_THROWS_AS(ets::BiLstmPredictor(w, std::make_unique<FakeBackend>(other)), ets::Error);
  CHECK(ets::BiLstmPredictor(w, std::make_unique<FakeBackend>(c)).backend_name() == "fake-cuda");
}

TEST_CASE("a moved-from predictor still predicts; a copy predicts the same") {
  ets::LstmConfig c{6, 8, 2, 2, true};
  ets::BiLstmPredictor p(random_weights(c, 5));
  const auto x = random_input(3, 12, c.input_size, 4);
  const auto batch = batch_of(x, 3, 12, c.input_size);
  const auto want = p.predict(batch);
  ets::BiLstmPredictor copy = p;
  ets::BiLstmPredictor moved(std::move(p));
  CHECK(moved.predict(batch) == want);
  CHECK(copy.predict(batch) == want);
  // shared immutable weights: the moved-from object keeps them (it used to hold null pointers, and its noexcept
  // config() dereferenced one)
  CHECK(p.config().input_size == c.input_size);
  CHECK(p.predict(batch) == want);
  ets::BiLstmPredictor assigned(random_weights(c, 6));
  assigned = std::move(moved);
  CHECK(assigned.predict(batch) == want);
}

TEST_CASE("LstmWeights::cell checks the layer and the direction each on its own") {
  ets::LstmConfig c{4, 3, 4, 2, true};
  const ets::LstmWeights w = random_weights(c, 2);
  CHECK(&w.cell(1, 0) == &w.cells[2]);
  CHECK(&w.cell(3, 1) == &w.cells[7]);
  // each of these named an existing cell of another layer before
  for (auto [layer, dir] : std::vector<std::pair<int, int>>{{0, 2}, {1, -1}, {-1, 3}, {0, 7}, {4, 0}}) {
    INFO("cell(" << layer << ", " << dir << ")");
    CHECK_THROWS_AS(w.cell(layer, dir), std::out_of_range);
  }
  ets::LstmConfig uni{4, 3, 2, 2, false};
  const ets::LstmWeights u = random_weights(uni, 2);
  CHECK(&u.cell(1, 0) == &u.cells[1]);
  CHECK_THROWS_AS(u.cell(0, 1), std::out_of_range);
}
