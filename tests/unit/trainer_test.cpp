// ets-test-labels: unit;concurrency
// Trainer behaviour: learns a context-dependent target, is reproducible, early-stops, resumes from checkpoints.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "ets/detail/crc32c.hpp"
#include "ets/error.hpp"
#include "ets/trainer.hpp"
#include "test_support.hpp"

namespace {

/// Labels depend on the neighbours on both sides, so only a bidirectional recurrent model can fit them.
ets::WindowBatch synthetic(int windows, unsigned seed) {
  ets::WindowBatch b;
  b.windows = windows;
  b.width = 6;
  b.features = 3;
  std::mt19937 gen(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  b.x.resize(b.positions() * 3);
  for (auto& v : b.x) v = nd(gen);
  b.y.resize(b.positions() * 2);
  b.mask.assign(b.positions(), 1);
  for (int w = 0; w < windows; ++w) {
    const float* x = b.x.data() + static_cast<std::size_t>(w) * 18;
    for (int t = 0; t < 6; ++t) {
      const float prev = t > 0 ? x[(t - 1) * 3 + 1] : 0.0f;
      const float next = t < 5 ? x[(t + 1) * 3 + 2] : 0.0f;
      float* y = b.y.data() + (static_cast<std::size_t>(w) * 6 + static_cast<std::size_t>(t)) * 2;
      y[0] = 0.8f * x[t * 3] + 0.5f * prev;
      y[1] = 0.6f * next - 0.3f * x[t * 3 + 1];
    }
    if (w % 5 == 4) {  // some windows end in padding
      for (int t = 4; t < 6; ++t) {
        const std::size_t p = static_cast<std::size_t>(w) * 6 + static_cast<std::size_t>(t);
        b.mask[p] = 0;
        for (int f = 0; f < 3; ++f) b.x[p * 3 + static_cast<std::size_t>(f)] = 0.0f;
      }
    }
  }
  return b;
}

ets::LstmConfig small_config(ets::RnnCell cell = ets::RnnCell::lstm) {
  ets::LstmConfig c;
  c.cell = cell;
  c.input_size = 3;
  c.hidden = 8;
  c.layers = 2;
  return c;
}

ets::Trainer::Options small_options() {
  ets::Trainer::Options o;
  o.epochs = 30;
  o.batch = 32;
  o.lr = 1e-2;
  o.warmup_steps = 10;
  o.threads = 2;
  o.patience = 0;
  return o;
}

/// Only the time budget can end these runs; no warm-up, so the learning rate starts at its peak.
ets::Trainer::Options budget_options(double seconds) {
  auto o = small_options();
  o.epochs = 100000;
  o.warmup_steps = 0;
  o.max_seconds = seconds;
  return o;
}

// A checkpoint's trailing CRC-32C recomputed after a deliberate edit, so that a test reaches the check behind it.
void fix_checkpoint_crc(std::string& bytes) {
  const std::uint32_t crc =
      ets::detail::crc32c(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size() - 4);
  std::memcpy(&bytes[bytes.size() - 4], &crc, 4);
}

// The time budget (100 s on the fake clock `fake_s`) runs out after step `last`: the progress report of the step
// before moves the clock past it.
void budget_ends_after(ets::Trainer::Options& opt, double& fake_s, std::int64_t last) {
  opt.max_seconds = 100;
  opt.progress_every = 1;
  opt.clock = [&fake_s] { return fake_s; };
  opt.progress = [&fake_s, last](const ets::Trainer::Progress& p) {
    if (!p.evaluated && p.step == last - 1) fake_s = 101;
    return true;
  };
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("trainer fits a target that needs context from both directions", "[train]") {
  const auto cell = GENERATE(ets::RnnCell::lstm, ets::RnnCell::gru);
  const auto train = synthetic(400, 1), val = synthetic(100, 2);
  auto init = ets::Trainer::init(small_config(cell), 5);
  CHECK(init.cells.at(0).w_ih.size() == static_cast<std::size_t>(small_config(cell).gates()) * 8 * 3);
  ets::Trainer trainer(init, small_options());
  const double before = trainer.loss(init, val);
  auto res = trainer.fit(train, &val);
  const double after = trainer.loss(res.weights, val);
  INFO((cell == ets::RnnCell::gru ? "GRU" : "LSTM") << " val masked MAE before " << before << " after " << after);
  CHECK(after < 0.3 * before);
  CHECK(res.best_val_metric == Approx(after));
  CHECK(res.windows_per_s > 0);
  // forward() returns what the loss was computed from
  const auto out = trainer.forward(res.weights, val);
  double sum = 0;
  std::size_t real = 0;
  for (std::size_t p = 0; p < val.positions(); ++p)
    if (val.mask[p]) {
      sum += std::abs(out[p * 2] - val.y[p * 2]) + std::abs(out[p * 2 + 1] - val.y[p * 2 + 1]);
      real += 2;
    }
  CHECK(sum / real == Approx(after).epsilon(1e-4));
}

TEST_CASE("training is reproducible for a seed and thread count", "[train]") {
  const auto train = synthetic(100, 3);
  auto opt = small_options();
  opt.epochs = 3;
  auto init = ets::Trainer::init(small_config(), 9);
  auto a = ets::Trainer(init, opt).fit(train);
  auto b = ets::Trainer(init, opt).fit(train);
  CHECK(a.weights.cells[0].w_ih == b.weights.cells[0].w_ih);
  CHECK(a.weights.head_w == b.weights.head_w);
  opt.seed = 10;  // another shuffle order gives other weights
  auto c = ets::Trainer(init, opt).fit(train);
  CHECK(a.weights.head_w != c.weights.head_w);
}

TEST_CASE("early stopping keeps the best evaluation", "[train]") {
  const auto train = synthetic(64, 4);
  auto opt = small_options();
  opt.epochs = 20;
  opt.patience = 3;
  int calls = 0;
  // metric improves for three evaluations, then worsens: best = third, stop after three more
  opt.validate = [&](const ets::LstmWeights&) {
    ++calls;
    return calls <= 3 ? 1.0 / calls : 1.0 + calls;
  };
  auto res = ets::Trainer(ets::Trainer::init(small_config(), 1), opt).fit(train);
  CHECK(res.early_stopped);
  CHECK(calls == 6);
  CHECK(res.best_epoch == 2);
  CHECK(res.best_val_metric == Approx(1.0 / 3));
  CHECK(res.epochs_run == 6);
}

TEST_CASE("a time budget leaves room for the final validation", "[train]") {
  const auto train = synthetic(64, 6);
  auto opt = budget_options(1.0);
  // A fake clock: training steps take no time, each validation 0.3 s. Validations end at 0.3, 0.6 and 0.9 s; a
  // trainer that only checked the clock before validating would start a fourth one and end at 1.2 s.
  double fake_s = 0;
  opt.clock = [&] { return fake_s; };
  int calls = 0;
  opt.validate = [&](const ets::LstmWeights&) {
    ++calls;
    fake_s += 0.3;
    return 1.0;
  };
  std::vector<ets::Trainer::Progress> reports;
  opt.progress = [&](const ets::Trainer::Progress& p) {
    reports.push_back(p);
    return true;
  };
  auto res = ets::Trainer(ets::Trainer::init(small_config(), 1), opt).fit(train);
  CHECK(res.out_of_time);
  CHECK(calls == 3);  // 0.9 s + the last validation's 0.3 s × 1.1 of reserve would pass the budget
  CHECK(res.seconds == Approx(0.9));
  // the ETA counts down the budget, not the 100000 planned epochs, and is 0 at the report that ends the run
  REQUIRE(reports.size() >= 3);
  for (const auto& p : reports) CHECK(p.eta_s <= opt.max_seconds - p.elapsed_s + 1e-9);
  CHECK(reports.front().eta_s > 0);
  CHECK(reports.front().eta_s == Approx(opt.max_seconds - reports.front().elapsed_s));
  CHECK(reports.back().evaluated);
  CHECK(reports.back().eta_s == 0.0);
  // without anneal_within_budget the cosine spans 100000 epochs: the learning rate is still at its peak
  CHECK(res.history.back().lr > 0.9 * opt.lr);
}

TEST_CASE("anneal_within_budget brings the learning rate to its floor as the budget ends", "[train]") {
  const auto train = synthetic(64, 6);
  auto opt = budget_options(0.5);
  opt.anneal_within_budget = true;
  // A fake clock that advances 1 ms each time it is read: the run's time is a count of clock reads, not of how
  // busy the machine is, and the budget still ends it after many epochs.
  double fake_s = 0;
  opt.clock = [&] { return fake_s += 1e-3; };
  auto res = ets::Trainer(ets::Trainer::init(small_config(), 1), opt).fit(train);
  CHECK(res.out_of_time);
  REQUIRE(res.history.size() >= 3);
  const double floor = opt.lr * opt.min_lr_ratio;
  CHECK(res.history.back().lr < floor + 0.1 * (opt.lr - floor));
  CHECK(res.history.back().lr >= floor * 0.999);
  CHECK(res.history.front().lr > res.history.back().lr);
}

TEST_CASE("weight averaging returns the moving average of the weights the optimizer reached", "[train]") {
  const auto train = synthetic(64, 7);
  auto opt = small_options();
  opt.batch = 64;  // one step per epoch, and without validation each epoch's candidate is kept
  opt.schedule = ets::Trainer::Schedule::Constant;
  opt.warmup_steps = 0;
  const auto init = ets::Trainer::init(small_config(), 3);
  opt.epochs = 1;
  const auto p1 = ets::Trainer(init, opt).fit(train).weights.head_w;
  opt.epochs = 2;
  const auto p2 = ets::Trainer(init, opt).fit(train).weights.head_w;
  opt.ema_decay = 0.5;  // capped by the warm-up form: 2/11 after step 1, 3/12 after step 2
  const auto avg = ets::Trainer(init, opt).fit(train).weights.head_w;
  REQUIRE(avg.size() == p2.size());
  const double d1 = 2.0 / 11, d2 = 3.0 / 12;
  for (std::size_t i = 0; i < avg.size(); ++i) {
    const double a1 = d1 * init.head_w[i] + (1 - d1) * p1[i];
    CHECK(avg[i] == Approx(d2 * a1 + (1 - d2) * p2[i]).margin(1e-6));
  }
  CHECK(avg != p2);
}

TEST_CASE("an interrupted run resumed from its checkpoint ends where an uninterrupted one does", "[train]") {
  const auto train = synthetic(96, 5);
  const ets_test::TempDir scratch("ets_trainer_test");
  const auto path = (scratch.path / "run.ckpt").string();
  auto opt = small_options();
  opt.epochs = 4;
  // with and without the weight average, which the checkpoint must carry; a version 1 checkpoint (written
  // before the average existed: the same layout without its trailing block), a version 3 one (before the run
  // fingerprint) and a version 4 one (before the checksum); and a GRU network, whose checkpoint says so
  const auto variant = GENERATE(table<double, int, ets::RnnCell>({{0.0, 5, ets::RnnCell::lstm},
                                                                  {0.9, 5, ets::RnnCell::lstm},
                                                                  {0.0, 1, ets::RnnCell::lstm},
                                                                  {0.0, 3, ets::RnnCell::lstm},
                                                                  {0.0, 4, ets::RnnCell::lstm},
                                                                  {0.0, 5, ets::RnnCell::gru}}));
  opt.ema_decay = std::get<0>(variant);
  const int version = std::get<1>(variant);
  const ets::RnnCell cell = std::get<2>(variant);
  auto init = ets::Trainer::init(small_config(cell), 2);
  auto full = ets::Trainer(init, opt).fit(train);

  opt.checkpoint_path = path;
  opt.progress = [](const ets::Trainer::Progress& p) { return !(p.evaluated && p.epoch == 1); };
  auto part = ets::Trainer(init, opt).fit(train);
  CHECK(part.cancelled);
  CHECK(part.epochs_run == 2);
  if (version != 5) {
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    in.close();
    REQUIRE(bytes.size() > 24);
    REQUIRE(bytes.compare(0, 8, "ETSCKPT5") == 0);
    bytes[7] = static_cast<char>('0' + version);
    // from the end: the checksum and the cut epoch's three doubles (version 5), the run fingerprint (4), the step
    // within the epoch (3), the empty average's count (2)
    bytes.resize(bytes.size() - (version == 4 ? 28 : version == 3 ? 36 : 52));
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  }
  opt.progress = nullptr;
  opt.resume = true;
  if (version == 5) {
    // a checkpoint belongs to its run: other options or other data are refused, not silently continued
    auto faster = opt;
    faster.lr *= 2;
    CHECK_THROWS_WITH(ets::Trainer(init, faster).fit(train),
                      Catch::Contains("ets.train.9") && Catch::Contains("other training or validation data"));
    CHECK_THROWS_WITH(ets::Trainer(init, opt).fit(synthetic(96, 6)),
                      Catch::Contains("ets.train.9") && Catch::Contains("other training or validation data"));
    auto tagged = opt;
    tagged.run_tag = 7;  // e.g. other validation traces behind a validate callback
    CHECK_THROWS_WITH(ets::Trainer(init, tagged).fit(train), Catch::Contains("ets.train.9"));
    auto longer = opt;  // what may change: more epochs, another thread count
    longer.threads = 1;
    longer.epochs = 5;
    CHECK_NOTHROW(ets::Trainer(init, longer).fit(train, nullptr));
    // (that run went on from the checkpoint and wrote its own; the part run is redone for the comparison below)
    opt.resume = false;
    opt.progress = [](const ets::Trainer::Progress& p) { return !(p.evaluated && p.epoch == 1); };
    std::filesystem::remove(path);
    REQUIRE(ets::Trainer(init, opt).fit(train).cancelled);
    opt.progress = nullptr;
    opt.resume = true;
  }
  {
    // the other cell with the same sizes is another network: its checkpoint is refused, not misread
    const auto other = ets::Trainer::init(
        small_config(cell == ets::RnnCell::gru ? ets::RnnCell::lstm : ets::RnnCell::gru), 2);
    CHECK_THROWS_WITH(ets::Trainer(other, opt).fit(train),
                      Catch::Contains("ets.train.9") && Catch::Contains("different network shape"));
  }
  auto resumed = ets::Trainer(init, opt).fit(train);
  CHECK(resumed.history.size() == 4);
  CHECK(resumed.weights.head_w == full.weights.head_w);
  CHECK(resumed.weights.cells[3].w_hh == full.weights.cells[3].w_hh);
}

TEST_CASE("trainer rejects inconsistent input with ets::Error", "[train]") {
  auto init = ets::Trainer::init(small_config(), 1);
  ets::Trainer trainer(init, small_options());
  using ets_test::error_id;
  auto bad = synthetic(4, 1);
  bad.features = 4;
  CHECK(error_id([&] { trainer.fit(bad); }) == "ets.train.3");
  const auto good = synthetic(4, 1);
  CHECK(error_id([&] { trainer.fit(good, &bad); }) == "ets.train.3");  // the validation windows too
  auto nolabels = synthetic(4, 1);
  nolabels.y.clear();
  CHECK(error_id([&] { trainer.fit(nolabels); }) == "ets.train.5");
  auto short_x = synthetic(4, 1);  // fewer values than windows × width × features
  short_x.x.pop_back();
  CHECK(error_id([&] { trainer.fit(short_x); }) == "ets.train.7");
  auto no_width = synthetic(4, 1);
  no_width.width = 0;
  CHECK(error_id([&] { trainer.fit(no_width); }) == "ets.train.7");
  ets::WindowBatch empty;  // consistent, but nothing to train on
  empty.width = 6;
  empty.features = 3;
  CHECK(error_id([&] { trainer.fit(empty); }) == "ets.train.10");
  auto wrong = init;
  wrong.head_b.push_back(0.0f);
  CHECK_THROWS_AS(ets::Trainer(wrong, small_options()), ets::Error);
  auto o = small_options();
  o.batch = 0;
  CHECK_THROWS_AS(ets::Trainer(init, o), ets::Error);
  o = small_options();
  o.ema_decay = 1.0;  // an average that never moves
  CHECK_THROWS_AS(ets::Trainer(init, o), ets::Error);
  // Refused when the trainer is made, not after the data is loaded at fit(): schedules that would climb above the peak
  // or turn into gradient ascent and a negative improvement margin (ets.train.8), Adam's hyper-parameters (.6).
  using Mutate = void (*)(ets::Trainer::Options&);
  const std::vector<std::pair<Mutate, const char*>> broken_options = {
      {[](ets::Trainer::Options& x) { x.step_gamma = -1; }, "ets.train.8"},
      {[](ets::Trainer::Options& x) { x.min_lr_ratio = 3; }, "ets.train.8"},
      {[](ets::Trainer::Options& x) { x.min_delta = -0.1; }, "ets.train.8"},
      {[](ets::Trainer::Options& x) { x.max_seconds = -1; }, "ets.train.8"},
      // annealing to a budget without one, or without the cosine it stretches, would be silently ignored
      {[](ets::Trainer::Options& x) { x.anneal_within_budget = true, x.max_seconds = 0; }, "ets.train.8"},
      {[](ets::Trainer::Options& x) {
         x.anneal_within_budget = true, x.max_seconds = 60, x.schedule = ets::Trainer::Schedule::Step;
       },
       "ets.train.8"},
      {[](ets::Trainer::Options& x) { x.lr = std::nan(""); }, "ets.train.8"},
      {[](ets::Trainer::Options& x) { x.beta1 = 1; }, "ets.train.6"},
      {[](ets::Trainer::Options& x) { x.beta2 = -0.5; }, "ets.train.6"},
      {[](ets::Trainer::Options& x) { x.eps = -1; }, "ets.train.6"},
      // eps 0 stepped a parameter with a zero gradient by 0/0 = NaN, reported as a divergence ("lower the learning
      // rate"); an infinite eps froze every weight, an infinite decay destroyed them; negative counts were taken as 0
      {[](ets::Trainer::Options& x) { x.eps = 0; }, "ets.train.6"},
      {[](ets::Trainer::Options& x) { x.eps = INFINITY; }, "ets.train.6"},
      {[](ets::Trainer::Options& x) { x.weight_decay = INFINITY; }, "ets.train.6"},
      {[](ets::Trainer::Options& x) { x.threads = -3; }, "ets.train.8"},
      {[](ets::Trainer::Options& x) { x.max_windows_per_epoch = -5; }, "ets.train.8"}};
  for (const auto& [broken, id] : broken_options) {
    o = small_options();
    broken(o);
    try {
      ets::Trainer t(init, o);
      FAIL("options out of range were accepted (expected " << id << ")");
    } catch (const ets::Error& e) {
      CHECK(e.id() == id);
    }
  }
  // loss() of another network with as many parameters: a 1-layer bidirectional LSTM of hidden 5 and GRU of hidden 6
  // on 3 features both have 2·(4·5·8 + 8·5) + 22 = 2·(3·6·9 + 6·6) + 26 = 422 parameters
  auto lstm = small_config();
  lstm.layers = 1;
  lstm.hidden = 5;
  auto gru = small_config(ets::RnnCell::gru);
  gru.layers = 1;
  gru.hidden = 6;
  const ets::Trainer t(ets::Trainer::init(lstm, 1), small_options());
  try {
    (void)t.loss(ets::Trainer::init(gru, 2), synthetic(4, 1));
    FAIL("loss() accepted weights of another network");
  } catch (const ets::Error& e) {
    CHECK(e.id() == "ets.train.1");
  }
  CHECK(t.loss(ets::Trainer::init(lstm, 2), synthetic(4, 1)) > 0);
  // more threads than windows: the same loss, one sum per shard (a sum per thread asked for let 2^30 threads
  // allocate 8 GB for a batch of one window, and std::bad_alloc escape under a memory limit)
  auto many = small_options();
  many.threads = 1 << 30;
  const ets::Trainer wide(ets::Trainer::init(lstm, 1), many);
  CHECK(wide.loss(ets::Trainer::init(lstm, 2), synthetic(1, 1)) == t.loss(ets::Trainer::init(lstm, 2), synthetic(1, 1)));
}

TEST_CASE("validation that yields no number keeps the trained weights, not the starting ones", "[train]") {
  const auto train = synthetic(64, 11);
  const auto init = ets::Trainer::init(small_config(), 3);
  auto opt = small_options();
  opt.epochs = 3;
  opt.patience = 2;
  // a metric that is never a number (every val trace diverged, say): no improvement, but training happened
  opt.validate = [](const ets::LstmWeights&) { return std::numeric_limits<double>::quiet_NaN(); };
  auto res = ets::Trainer(init, opt).fit(train);
  CHECK(res.best_epoch >= 0);
  CHECK(res.weights.head_w != init.head_w);
  CHECK(res.early_stopped);  // two evaluations without improvement
  // validation windows that are all padding: nothing to validate on, not a perfect score of 0
  auto pad = synthetic(8, 12);
  std::fill(pad.mask.begin(), pad.mask.end(), 0);
  opt.validate = nullptr;
  opt.patience = 1;
  auto res2 = ets::Trainer(init, opt).fit(train, &pad);
  CHECK_FALSE(res2.early_stopped);
  CHECK(res2.epochs_run == 3);
  CHECK(res2.best_epoch == 2);  // the latest
}

TEST_CASE("a checkpoint with impossible counters is refused; an early-stopped run stays finished", "[train]") {
  const auto train = synthetic(64, 13);
  const auto init = ets::Trainer::init(small_config(), 4);
  const ets_test::TempDir scratch("ets_trainer_counters");
  const auto path = (scratch.path / "run.ckpt").string();
  auto opt = small_options();
  opt.epochs = 30;
  opt.patience = 1;
  opt.checkpoint_path = path;
  int calls = 0;
  opt.validate = [&](const ets::LstmWeights&) { return 1.0 + calls++; };  // worse every time: stops after 2
  auto first = ets::Trainer(init, opt).fit(train);
  REQUIRE(first.early_stopped);
  REQUIRE(first.epochs_run == 2);
  opt.resume = true;
  auto again = ets::Trainer(init, opt).fit(train);
  CHECK(again.early_stopped);
  CHECK(again.epochs_run == 2);  // no further epoch
  CHECK(again.steps == first.steps);
  CHECK(again.weights.head_w == first.weights.head_w);

  // start epoch (the int32 after the 8-byte magic and five int32 shape words) set to INT32_MIN
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  REQUIRE(bytes.size() > 32);
  const std::int32_t bad = std::numeric_limits<std::int32_t>::min();
  std::memcpy(&bytes[28], &bad, 4);
  fix_checkpoint_crc(bytes);  // the counters' own check, not the checksum, must catch it
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  CHECK_THROWS_WITH(ets::Trainer(init, opt).fit(train),
                    Catch::Contains("ets.train.9") && Catch::Contains("inconsistent counters"));
}

TEST_CASE("a damaged checkpoint is refused before its weights are used; loss weights are part of the run", "[train]") {
  auto train = synthetic(64, 13);
  const auto init = ets::Trainer::init(small_config(), 4);
  const ets_test::TempDir scratch("ets_trainer_damaged");
  const auto path = (scratch.path / "run.ckpt").string();
  auto opt = small_options();
  opt.epochs = 1;
  opt.threads = 1;
  opt.checkpoint_path = path;
  ets::Trainer(init, opt).fit(train);
  const std::string good = read_file(path);
  REQUIRE(good.size() > 200);
  opt.epochs = 2;
  opt.resume = true;
  const auto resume_from = [&](const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
    return ets::Trainer(init, opt).fit(train);
  };
  // one byte of the weights off: found by the checksum (it used to train on, or fail later as a divergence)
  std::string flipped = good;
  flipped[flipped.size() / 2] = static_cast<char>(flipped[flipped.size() / 2] ^ 0x40);
  CHECK_THROWS_WITH(resume_from(flipped), Catch::Contains("ets.train.9") && Catch::Contains("damaged"));
  // a non-finite weight behind a valid checksum (a writer's fault, or a format without one) is damage too
  std::string nan_weight = good;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(&nan_weight[nan_weight.size() / 2], &nan, 4);
  fix_checkpoint_crc(nan_weight);
  CHECK_THROWS_WITH(resume_from(nan_weight), Catch::Contains("ets.train.9"));
  // the same data with other loss weights is another run
  auto weighted = train;
  weighted.weight.assign(weighted.positions(), 2.0f);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << good;
  CHECK_THROWS_WITH(ets::Trainer(init, opt).fit(weighted), Catch::Contains("ets.train.9"));
}

TEST_CASE("a network beyond what a model file holds is refused before anything is allocated", "[train]") {
  auto c = small_config();
  c.hidden = 2000000000;  // 4 × hidden would overflow int
  CHECK_THROWS_WITH(ets::Trainer::init(c, 1), Catch::Contains("ets.train.2"));
  c.hidden = 65536;  // within the file's limit, but ~2^35 parameters
  c.input_size = 65536;
  CHECK_THROWS_WITH(ets::Trainer::init(c, 1), Catch::Contains("ets.train.2"));
  // ~570 M parameters: sizes a model file takes, but 2.1 GiB of weights, more than the 2 GiB load_model reads
  c.input_size = c.hidden = 2048;
  c.layers = 6;
  CHECK_THROWS_WITH(ets::Trainer::init(c, 1), Catch::Contains("ets.train.2") && Catch::Contains("2^29"));
}

TEST_CASE("a run cut inside an epoch resumes inside it, with the same batches as an unbroken run", "[train]") {
  const auto train = synthetic(96, 7);  // 3 steps of 32 per epoch
  const ets_test::TempDir scratch("ets_trainer_midepoch");
  const auto path = (scratch.path / "run.ckpt").string();
  auto opt = small_options();
  opt.epochs = 3;
  opt.threads = 1;
  const auto init = ets::Trainer::init(small_config(), 5);
  const auto full = ets::Trainer(init, opt).fit(train);
  REQUIRE(full.steps == 9);

  opt.checkpoint_path = path;
  opt.progress_every = 1;
  opt.progress = [](const ets::Trainer::Progress& p) { return p.evaluated || p.step != 5; };  // stop in epoch 1
  const auto part = ets::Trainer(init, opt).fit(train);
  REQUIRE(part.cancelled);
  REQUIRE(part.steps == 5);
  opt.progress = nullptr;
  opt.resume = true;
  const auto resumed = ets::Trainer(init, opt).fit(train);
  CHECK(resumed.steps == 9);  // 4 more: the cut epoch's last step and epoch 2's three
  CHECK(resumed.history.size() == 3);  // one record per epoch, the cut one replaced by the whole
  CHECK(resumed.weights.head_w == full.weights.head_w);
  CHECK(resumed.weights.cells[3].w_hh == full.weights.cells[3].w_hh);
  // the cut epoch's record stands for the whole epoch: its loss sums the steps before the cut too
  REQUIRE(full.history.size() == 3);
  for (std::size_t e = 0; e < 3; ++e) CHECK(resumed.history[e].train_loss == full.history[e].train_loss);
  CHECK(resumed.final_train_loss == full.final_train_loss);
}

TEST_CASE("a cut epoch's validation of half-trained weights does not count in the resumed run", "[train]") {
  const auto train = synthetic(96, 7);  // 3 steps of 32 per epoch
  const ets_test::TempDir scratch("ets_trainer_cutvalidation");
  const auto path = (scratch.path / "run.ckpt").string();
  auto opt = small_options();
  opt.epochs = 3;
  opt.threads = 1;
  opt.patience = 1;
  opt.checkpoint_path = path;
  // A fake clock: the time budget runs out after step 5, in epoch 1. Epoch 0 scores 0.5; the half-trained epoch 1
  // scores worse (0.9), which with patience 1 would stop a run.
  double fake_s = 0;
  budget_ends_after(opt, fake_s, 5);
  std::vector<double> scores = {0.5, 0.9};
  std::size_t calls = 0;
  opt.validate = [&](const ets::LstmWeights&) { return scores.at(calls++); };
  const auto init = ets::Trainer::init(small_config(), 5);
  const auto part = ets::Trainer(init, opt).fit(train);
  REQUIRE(part.out_of_time);
  REQUIRE(part.steps == 5);
  REQUIRE(calls == 2);  // the budget keeps room for the final validation: this run's result is validated
  // resumed: the whole epoch 1 scores 0.4 and epoch 2 0.3, as in an unbroken run that never stops early
  scores = {0.4, 0.3};
  calls = 0;
  opt.progress = nullptr;
  opt.max_seconds = 0;
  opt.resume = true;
  const auto resumed = ets::Trainer(init, opt).fit(train);
  CHECK_FALSE(resumed.early_stopped);
  CHECK(resumed.steps == 9);
  CHECK(resumed.best_epoch == 2);
  CHECK(resumed.best_val_metric == Approx(0.3));
}

TEST_CASE("a validation off the eval_every_epochs cadence, made as a budget ends, does not count in the resumed run",
          "[train]") {
  const auto train = synthetic(96, 7);  // 3 steps of 32 per epoch
  const ets_test::TempDir scratch("ets_trainer_offcadence");
  const auto path = (scratch.path / "run.ckpt").string();
  auto opt = small_options();
  opt.epochs = 4;
  opt.threads = 1;
  opt.patience = 1;
  opt.eval_every_epochs = 2;  // an unbroken run validates after epochs 1 and 3
  opt.checkpoint_path = path;
  double fake_s = 0;
  budget_ends_after(opt, fake_s, 3);  // the end of epoch 0
  std::vector<double> scores = {0.5};  // epoch 0, whole, validated only because the budget ends with it
  std::size_t calls = 0;
  opt.validate = [&](const ets::LstmWeights&) { return scores.at(calls++); };
  const auto init = ets::Trainer::init(small_config(), 5);
  const auto part = ets::Trainer(init, opt).fit(train);
  REQUIRE(part.out_of_time);
  REQUIRE(part.steps == 3);
  REQUIRE(calls == 1);
  REQUIRE(part.best_epoch == 0);
  // resumed: epoch 1 scores 0.9 and epoch 3 0.3. Counted, the off-cadence 0.5 made epoch 1 a bad evaluation and
  // ended the resumed run there (patience 1), which an unbroken run never does.
  scores = {0.9, 0.3};
  calls = 0;
  opt.progress = nullptr;
  opt.max_seconds = 0;
  opt.resume = true;
  const auto resumed = ets::Trainer(init, opt).fit(train);
  CHECK(calls == 2);
  CHECK_FALSE(resumed.early_stopped);
  CHECK(resumed.steps == 12);
  CHECK(resumed.best_epoch == 3);
  CHECK(resumed.best_val_metric == Approx(0.3));
}

TEST_CASE("a stop signal leaves without validating; the resumed run validates where an unbroken one does", "[train]") {
  const auto train = synthetic(96, 7);  // 3 steps of 32 per epoch
  const ets_test::TempDir scratch("ets_trainer_cancel");
  const auto path = (scratch.path / "run.ckpt").string();
  auto opt = small_options();
  opt.epochs = 3;
  opt.threads = 1;
  opt.progress_every = 1;
  std::size_t calls = 0;
  opt.validate = [&](const ets::LstmWeights& w) {
    ++calls;
    return static_cast<double>(std::abs(w.head_b[0]));  // any deterministic score of the weights
  };
  const auto init = ets::Trainer::init(small_config(), 5);
  const auto full = ets::Trainer(init, opt).fit(train);
  REQUIRE(calls == 3);
  // stopped inside epoch 1 (step 5) and at its last step (step 6, the epoch whole but not validated yet)
  for (const int at : {5, 6}) {
    CAPTURE(at);
    std::filesystem::remove(path);
    opt.checkpoint_path = path;
    opt.resume = false;
    opt.progress = [at](const ets::Trainer::Progress& p) { return p.evaluated || p.step != at; };
    calls = 0;
    const auto part = ets::Trainer(init, opt).fit(train);
    REQUIRE(part.cancelled);
    CHECK(part.steps == at);
    CHECK(calls == 1);  // epoch 0 only: the weights so far are not validated on the way out
    CHECK(part.best_epoch == 0);
    CHECK(part.best_val_metric == full.history[0].val_metric);
    opt.progress = nullptr;
    opt.resume = true;
    calls = 0;
    const auto resumed = ets::Trainer(init, opt).fit(train);
    CHECK(calls == 2);  // epochs 1 and 2, as the unbroken run
    CHECK(resumed.steps == 9);
    REQUIRE(resumed.history.size() == 3);
    for (std::size_t e = 0; e < 3; ++e) {
      CHECK(resumed.history[e].val_metric == full.history[e].val_metric);
      CHECK(resumed.history[e].train_loss == full.history[e].train_loss);
      CHECK(resumed.history[e].lr == full.history[e].lr);  // also of an epoch resumed with no step left (was 0)
    }
    CHECK(resumed.best_epoch == full.best_epoch);
    CHECK(resumed.weights.head_w == full.weights.head_w);
  }
  // nothing validated yet when the signal comes: the latest weights, not the starting ones
  std::filesystem::remove(path);
  opt.resume = false;
  opt.progress = [](const ets::Trainer::Progress& p) { return p.step != 2; };
  calls = 0;
  const auto early = ets::Trainer(init, opt).fit(train);
  CHECK(calls == 0);
  CHECK(early.best_epoch == 0);
  CHECK(early.weights.head_w != init.head_w);
}

TEST_CASE("an epoch that could not be validated does not displace validated weights", "[train]") {
  const auto train = synthetic(64, 3);
  auto opt = small_options();
  opt.epochs = 3;
  const std::vector<double> scores = {0.5, -1, -1};  // validated once, then "not validated" (negative)
  std::size_t calls = 0;
  opt.validate = [&](const ets::LstmWeights&) { return scores.at(calls++); };
  const auto init = ets::Trainer::init(small_config(), 4);
  const auto r = ets::Trainer(init, opt).fit(train);
  CHECK(r.best_epoch == 0);
  CHECK(r.best_val_metric == Approx(0.5));
  opt.epochs = 1;  // the weights after epoch 0, trained alone (both runs stay in the 10-step warm-up: same rates)
  opt.validate = nullptr;
  CHECK(r.weights.head_w == ets::Trainer(init, opt).fit(train).weights.head_w);
}

TEST_CASE("a checkpoint path that cannot be written fails before any training", "[train]") {
  const auto train = synthetic(32, 14);
  auto opt = small_options();
  opt.epochs = 2;
  opt.checkpoint_path = "/nonexistent-dir/ets.ckpt";
  opt.progress_every = 1;
  int steps = 0;
  opt.progress = [&](const ets::Trainer::Progress&) { return ++steps > 0; };
  CHECK_THROWS_WITH(ets::Trainer(ets::Trainer::init(small_config(), 6), opt).fit(train),
                    Catch::Contains("ets.train.11"));
  CHECK(steps == 0);
}

TEST_CASE("a cell cast from a bad integer is refused before anything is trained", "[train]") {
  auto c = small_config();
  c.cell = static_cast<ets::RnnCell>(5);
  CHECK_THROWS_WITH(ets::Trainer::init(c, 1), Catch::Contains("ets.train.2") && Catch::Contains("cell 5"));
  auto w = ets::Trainer::init(small_config(), 1);
  w.config.cell = static_cast<ets::RnnCell>(5);
  CHECK_THROWS_WITH(ets::Trainer(w, small_options()), Catch::Contains("ets.train.2") && Catch::Contains("cell 5"));
}
