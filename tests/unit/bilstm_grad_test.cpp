// ets-test-labels: unit
// Backpropagation through time checked against central finite differences (double precision) for every tensor.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ets/error.hpp"
#include "test_support.hpp"
#include "train/bilstm_grad.hpp"
#include "train/param_layout.hpp"

using ets::train::BiLstmGrad;
using ets::train::ParamLayout;

namespace {

struct Problem {
  ets::LstmConfig cfg;
  ets::WindowBatch batch;
  std::vector<double> params;
};

Problem make_problem(unsigned seed, bool bidirectional = true, ets::RnnCell cell = ets::RnnCell::lstm) {
  Problem p;
  p.cfg.cell = cell;
  p.cfg.input_size = 5;
  p.cfg.hidden = 4;
  p.cfg.layers = 2;
  p.cfg.outputs = 2;
  p.cfg.bidirectional = bidirectional;
  auto& b = p.batch;
  b.windows = 3;
  b.width = 6;
  b.features = 5;
  std::mt19937 gen(seed);
  std::normal_distribution<double> nd(0.0, 1.0);
  b.x.resize(b.positions() * 5);
  b.y.resize(b.positions() * 2);
  b.mask.assign(b.positions(), 1);
  for (auto& v : b.x) v = static_cast<float>(nd(gen));
  for (auto& v : b.y) v = static_cast<float>(nd(gen));
  // the last window ends in three padding positions: zero features (the encoder's convention), junk labels
  for (int t = 3; t < 6; ++t) {
    const std::size_t pos = 2 * 6 + static_cast<std::size_t>(t);
    b.mask[pos] = 0;
    for (int f = 0; f < 5; ++f) b.x[pos * 5 + static_cast<std::size_t>(f)] = 0.0f;
    b.y[pos * 2] = 50.0f;
    b.y[pos * 2 + 1] = -50.0f;
  }
  ParamLayout layout(p.cfg);
  p.params.resize(layout.size);
  for (auto& v : p.params) v = 0.6 * nd(gen);
  return p;
}

double loss_of(BiLstmGrad<double>& eng, const Problem& p, const std::vector<double>& params) {
  eng.forward(params.data(), p.batch, nullptr, p.batch.windows);
  return eng.loss_sum(p.batch, nullptr, p.batch.windows);
}

struct FdCheck {
  double max_err = 0;  ///< largest |central difference − analytic gradient|
  double max_abs = 0;  ///< largest |central difference|: how much these parameters move the loss
};

/// Central finite differences of the loss at parameters begin, begin + step, … (< end) against `grad`.
FdCheck fd_check(BiLstmGrad<double>& eng, const Problem& p, const std::vector<double>& grad, std::size_t begin,
                 std::size_t end, std::size_t step = 1) {
  const double h = 1e-6;
  FdCheck c;
  for (std::size_t i = begin; i < end; i += step) {
    auto plus = p.params, minus = p.params;
    plus[i] += h;
    minus[i] -= h;
    const double fd = (loss_of(eng, p, plus) - loss_of(eng, p, minus)) / (2 * h);
    c.max_err = std::max(c.max_err, std::abs(fd - grad[i]));
    c.max_abs = std::max(c.max_abs, std::abs(fd));
  }
  return c;
}

}  // namespace

TEST_CASE("BiLSTM and BiGRU gradients match finite differences for every tensor", "[train][grad]") {
  for (const auto cell : {ets::RnnCell::lstm, ets::RnnCell::gru}) {
    for (bool bidir : {true, false}) {
      Problem p = make_problem(7, bidir, cell);
      ParamLayout layout(p.cfg);
      BiLstmGrad<double> eng(layout);
      std::vector<double> grad(layout.size, 0.0);
      eng.forward(p.params.data(), p.batch, nullptr, p.batch.windows);
      const double loss = eng.backward(p.params.data(), p.batch, nullptr, p.batch.windows, 1.0, grad.data());
      REQUIRE(loss == Approx(loss_of(eng, p, p.params)));

      for (const auto& t : layout.tensors()) {
        INFO("tensor " << t.name << (bidir ? " (bidirectional" : " (unidirectional")
                       << (cell == ets::RnnCell::gru ? " GRU)" : " LSTM)"));
        const FdCheck c = fd_check(eng, p, grad, t.offset, t.offset + t.count);
        CHECK(c.max_abs > 1e-3);  // the tensor really influences the loss, so the comparison means something
        CHECK(c.max_err < 1e-6 * std::max(1.0, c.max_abs));
      }
    }
  }
}

TEST_CASE("per-position loss weights scale the loss and match finite differences", "[train][grad]") {
  for (const auto cell : {ets::RnnCell::lstm, ets::RnnCell::gru}) {
    Problem p = make_problem(5, true, cell);
    ParamLayout layout(p.cfg);
    BiLstmGrad<double> eng(layout);
    const double plain = loss_of(eng, p, p.params);
    // weights 0.5, 1, 1.5, 2, ... per position; padding gets a junk weight that must not count
    p.batch.weight.resize(p.batch.positions());
    double expect = 0;
    eng.forward(p.params.data(), p.batch, nullptr, p.batch.windows);
    for (std::size_t pos = 0; pos < p.batch.positions(); ++pos)
      p.batch.weight[pos] = p.batch.mask[pos] ? 0.5f * static_cast<float>(1 + pos % 4) : 1e6f;
    // the weighted loss, position by position, from the unweighted engine on one-position masks
    for (std::size_t pos = 0; pos < p.batch.positions(); ++pos) {
      if (!p.batch.mask[pos]) continue;
      Problem one = p;
      one.batch.weight.clear();
      for (std::size_t q = 0; q < one.batch.positions(); ++q) one.batch.mask[q] = q == pos;
      expect += p.batch.weight[pos] * loss_of(eng, one, one.params);
    }
    const double weighted = loss_of(eng, p, p.params);
    CHECK(weighted == Approx(expect).epsilon(1e-12));
    CHECK(weighted != Approx(plain));  // the weights did change something
    std::vector<double> grad(layout.size, 0.0);
    eng.forward(p.params.data(), p.batch, nullptr, p.batch.windows);
    CHECK(eng.backward(p.params.data(), p.batch, nullptr, p.batch.windows, 1.0, grad.data()) == Approx(weighted));
    const FdCheck c = fd_check(eng, p, grad, 0, layout.size, 7);  // a sample of every tensor's entries
    CHECK(c.max_abs > 1e-3);
    CHECK(c.max_err < 1e-6 * std::max(1.0, c.max_abs));
    p.batch.weight.pop_back();
    CHECK_THROWS_WITH(loss_of(eng, p, p.params), Catch::Contains("[ets.train.5]"));
  }
}

TEST_CASE("a backward over other windows than its forward's is refused, and the engine stays usable", "[train][grad]") {
  Problem p = make_problem(5);
  ParamLayout layout(p.cfg);
  BiLstmGrad<double> eng(layout);
  std::vector<double> grad(layout.size, 0.0);
  REQUIRE(p.batch.windows >= 3);
  eng.forward(p.params.data(), p.batch, nullptr, 3);
  CHECK(ets_test::error_id([&] { eng.backward(p.params.data(), p.batch, nullptr, 2, 1.0, grad.data()); }) ==
        "ets.train.4");
  CHECK(std::all_of(grad.begin(), grad.end(), [](double g) { return g == 0.0; }));  // nothing was added
  const double loss = eng.backward(p.params.data(), p.batch, nullptr, 3, 1.0, grad.data());
  BiLstmGrad<double> fresh(layout);  // the same backward on an engine that saw no refused call
  std::vector<double> fresh_grad(layout.size, 0.0);
  fresh.forward(p.params.data(), p.batch, nullptr, 3);
  CHECK(loss == fresh.backward(p.params.data(), p.batch, nullptr, 3, 1.0, fresh_grad.data()));
  CHECK(grad == fresh_grad);
}

TEST_CASE("padding positions never reach the loss or the gradient", "[train][grad]") {
  for (const auto cell : {ets::RnnCell::lstm, ets::RnnCell::gru}) {
    Problem p = make_problem(11, true, cell);
    ParamLayout layout(p.cfg);
    BiLstmGrad<double> eng(layout);
    std::vector<double> g1(layout.size, 0.0), g2(layout.size, 0.0);
    eng.forward(p.params.data(), p.batch, nullptr, 3);
    const double l1 = eng.backward(p.params.data(), p.batch, nullptr, 3, 1.0, g1.data());
    for (std::size_t pos = 0; pos < p.batch.positions(); ++pos)
      if (!p.batch.mask[pos]) p.batch.y[pos * 2] = -1e6f;
    eng.forward(p.params.data(), p.batch, nullptr, 3);
    const double l2 = eng.backward(p.params.data(), p.batch, nullptr, 3, 1.0, g2.data());
    CHECK(l1 == l2);
    CHECK(g1 == g2);
  }
}

TEST_CASE("float engine agrees with the double engine and window subsets are independent", "[train][grad]") {
  for (const auto cell : {ets::RnnCell::lstm, ets::RnnCell::gru}) {
    Problem p = make_problem(3, true, cell);
    ParamLayout layout(p.cfg);
    BiLstmGrad<double> ed(layout);
    BiLstmGrad<float> ef(layout);
    std::vector<float> pf(p.params.begin(), p.params.end());
    std::vector<double> gd(layout.size, 0.0);
    std::vector<float> gf(layout.size, 0.0f);
    ed.forward(p.params.data(), p.batch, nullptr, 3);
    ed.backward(p.params.data(), p.batch, nullptr, 3, 1.0, gd.data());
    // the float engine sees the windows as two shards in a different order; summing the shards gives the batch
    const std::int32_t a[] = {2}, b[] = {1, 0};
    ef.forward(pf.data(), p.batch, a, 1);
    ef.backward(pf.data(), p.batch, a, 1, 1.0f, gf.data());
    ef.forward(pf.data(), p.batch, b, 2);
    ef.backward(pf.data(), p.batch, b, 2, 1.0f, gf.data());
    for (std::size_t i = 0; i < layout.size; ++i) CHECK(gf[i] == Approx(gd[i]).margin(2e-5).epsilon(1e-4));
  }
}

#include "train/grad_engine.hpp"

namespace {
/// The instruction-set builds this binary and CPU have beyond the generic one, narrowest first.
std::vector<std::unique_ptr<ets::train::GradEngine>> wide_engines(const ParamLayout& layout) {
  std::vector<std::unique_ptr<ets::train::GradEngine>> wide;
  if (auto e = ets::train::make_grad_engine_avx2(layout)) wide.push_back(std::move(e));
  if (auto e = ets::train::make_grad_engine_avx512(layout)) wide.push_back(std::move(e));
  return wide;
}
}  // namespace

TEST_CASE("every instruction-set build of the engine agrees with the generic build", "[train][grad]") {
  for (const auto cell : {ets::RnnCell::lstm, ets::RnnCell::gru}) {
    Problem p = make_problem(5, true, cell);
    ParamLayout layout(p.cfg);
    auto generic = ets::train::make_grad_engine(layout, false);
    CHECK(std::string(generic->isa()) == "generic");
    WARN("training kernels on this CPU: " << ets::train::make_grad_engine(layout)->isa());
    auto wide = wide_engines(layout);
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(__AVX2__)
    // On a CPU with the instruction set, its build must be there, or this test compares generic with generic.
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
      REQUIRE(!wide.empty());
      CHECK(std::string(wide.front()->isa()) == "avx2-fma");
    }
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512bw")) {
      REQUIRE(wide.size() == 2);
      CHECK(std::string(wide.back()->isa()) == "avx512");
    }
#endif
    std::vector<float> pf(p.params.begin(), p.params.end()), g2(layout.size, 0.0f);
    std::vector<float> o2(p.batch.positions() * 2);
    generic->forward(pf.data(), p.batch, nullptr, 3);
    generic->predictions(o2.data());
    const double l2 = generic->backward(pf.data(), p.batch, nullptr, 3, 1.0f, g2.data());
    for (auto& fast : wide) {
      INFO("engine " << fast->isa());
      std::vector<float> g1(layout.size, 0.0f), o1(o2.size());
      fast->forward(pf.data(), p.batch, nullptr, 3);
      fast->predictions(o1.data());
      const double l1 = fast->backward(pf.data(), p.batch, nullptr, 3, 1.0f, g1.data());
      CHECK(l1 == Approx(l2).epsilon(1e-5));
      for (std::size_t i = 0; i < o1.size(); ++i) CHECK(o1[i] == Approx(o2[i]).margin(1e-5));
      for (std::size_t i = 0; i < layout.size; ++i) CHECK(g1[i] == Approx(g2[i]).margin(1e-4).epsilon(1e-4));
    }
  }
}

TEST_CASE("every engine gives the same bits wherever the caller's weights lie in memory", "[train][grad]") {
  // Wide packets make Eigen's reductions peel to the data's alignment; a run must not depend on the heap's layout
  // (the trainer promises bit-identical runs for a seed and thread count, and its resume test relies on it).
  struct Shape {
    int features, hidden, windows;
  };
  for (const Shape shape : {Shape{3, 8, 16}, Shape{37, 24, 5}, Shape{37, 24, 1}})
  for (const auto cell : {ets::RnnCell::lstm, ets::RnnCell::gru}) {
    ets::LstmConfig cfg;
    cfg.cell = cell;
    cfg.input_size = shape.features;
    cfg.hidden = shape.hidden;
    cfg.layers = 2;
    cfg.outputs = 2;
    ets::WindowBatch b;
    b.windows = shape.windows;
    b.width = 6;
    b.features = shape.features;
    std::mt19937 gen(11);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    b.x.resize(b.positions() * static_cast<std::size_t>(shape.features));
    b.y.resize(b.positions() * 2);
    b.mask.assign(b.positions(), 1);
    for (auto& v : b.x) v = nd(gen);
    for (auto& v : b.y) v = nd(gen);
    ParamLayout layout(cfg);
    std::vector<float> weights(layout.size);
    for (auto& v : weights) v = 0.3f * nd(gen);
    auto engines = wide_engines(layout);
    engines.push_back(ets::train::make_grad_engine(layout, false));
    for (auto& eng : engines) {
      INFO("engine " << eng->isa() << ", " << shape.features << " features, hidden " << shape.hidden << ", "
                     << shape.windows << " windows");
      std::vector<float> buffer(layout.size + 64);
      std::vector<float> first_grad;
      double first_loss = 0;
      for (std::size_t offset : {0, 1, 4, 8, 13}) {
        INFO("weights at offset " << offset << " floats");
        float* at = buffer.data() + offset;
        std::copy(weights.begin(), weights.end(), at);
        std::vector<float> grad_buffer(layout.size + 64, 0.0f);
        float* grad_at = grad_buffer.data() + (offset * 3) % 16;
        eng->forward(at, b, nullptr, b.windows);
        const double loss = eng->backward(at, b, nullptr, b.windows, 1.0f, grad_at);
        std::vector<float> grad(grad_at, grad_at + layout.size);
        if (first_grad.empty()) {
          first_grad = grad;
          first_loss = loss;
        } else {
          CHECK(loss == first_loss);
          CHECK(grad == first_grad);
        }
      }
    }
  }
}

TEST_CASE("ETS_TRAIN_ISA caps the engine and rejects unknown values", "[train][grad]") {
  Problem p = make_problem(5, true, ets::RnnCell::lstm);
  ParamLayout layout(p.cfg);
  const char* before = std::getenv("ETS_TRAIN_ISA");
  const std::string saved = before ? before : "";
  ::setenv("ETS_TRAIN_ISA", "generic", 1);
  CHECK(std::string(ets::train::make_grad_engine(layout)->isa()) == "generic");
  ::setenv("ETS_TRAIN_ISA", "avx2", 1);
  CHECK(std::string(ets::train::make_grad_engine(layout)->isa()) != "avx512");
  ::setenv("ETS_TRAIN_ISA", "sse9", 1);
  try {
    (void)ets::train::make_grad_engine(layout);
    FAIL("an unknown ETS_TRAIN_ISA was accepted");
  } catch (const ets::Error& e) {
    CHECK(std::string(e.what()).find("[ets.train.19]") != std::string::npos);
  }
  if (before)
    ::setenv("ETS_TRAIN_ISA", saved.c_str(), 1);
  else
    ::unsetenv("ETS_TRAIN_ISA");
}
