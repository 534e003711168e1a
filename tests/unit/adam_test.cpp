// ets-test-labels: unit
// One (and two) optimizer steps on a fixture batch match PyTorch: gradients, clipping, Adam with L2, AdamW.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "test_support.hpp"
#include "train/adam.hpp"
#include "train/bilstm_grad.hpp"
#include "train/param_layout.hpp"

namespace {

/// tests/data/adam_step.bin: "ETSFX1\0\0" then records (u32 name length, name, u32 count, count × float32 LE).
std::map<std::string, std::vector<float>> read_fixture(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  char magic[8];
  in.read(magic, 8);
  REQUIRE(std::memcmp(magic, "ETSFX1\0\0", 8) == 0);
  std::map<std::string, std::vector<float>> out;
  std::uint32_t len = 0;
  while (in.read(reinterpret_cast<char*>(&len), 4)) {
    std::string name(len, '\0');
    in.read(name.data(), len);
    std::uint32_t n = 0;
    in.read(reinterpret_cast<char*>(&n), 4);
    std::vector<float> v(n);
    in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(n * 4));
    REQUIRE(in);
    out[name] = std::move(v);
  }
  return out;
}

void require_close(const std::vector<float>& got, const std::vector<float>& want, double tol) {
  REQUIRE(got.size() == want.size());
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, static_cast<double>(std::abs(got[i] - want[i])));
  INFO("max abs difference " << worst);
  CHECK(worst <= tol);
}

}  // namespace

TEST_CASE("gradients and Adam/AdamW steps match PyTorch on the fixture batch", "[train][adam]") {
  auto fx = read_fixture(ets_test::fixture("adam_step.bin"));
  const auto& c = fx.at("config");
  const auto& hp = fx.at("hyper");
  ets::LstmConfig cfg;
  cfg.input_size = static_cast<int>(c[0]);
  cfg.hidden = static_cast<int>(c[1]);
  cfg.layers = static_cast<int>(c[2]);
  cfg.outputs = 2;
  ets::WindowBatch b;
  b.width = static_cast<int>(c[3]);
  b.windows = static_cast<int>(c[4]);
  b.features = cfg.input_size;
  b.x = fx.at("x");
  b.y = fx.at("y");
  for (float m : fx.at("mask")) b.mask.push_back(m != 0.0f);
  REQUIRE(std::count(b.mask.begin(), b.mask.end(), 0) > 0);  // the fixture exercises padding

  ets::train::ParamLayout layout(cfg);
  REQUIRE(fx.at("params_before").size() == layout.size);
  std::size_t real = 0;
  for (auto m : b.mask) real += m;
  const float scale = 1.0f / static_cast<float>(real * 2);

  ets::train::BiLstmGrad<float> eng(layout);
  auto grad_at = [&](const std::vector<float>& p, double* loss) {
    std::vector<float> g(layout.size, 0.0f);
    eng.forward(p.data(), b, nullptr, b.windows);
    const double l = eng.backward(p.data(), b, nullptr, b.windows, scale, g.data());
    if (loss) *loss = l * scale;
    return g;
  };

  std::vector<float> p = fx.at("params_before");
  double loss = 0;
  auto g = grad_at(p, &loss);
  CHECK(loss == Approx(fx.at("loss")[0]).epsilon(1e-6));
  require_close(g, fx.at("grad"), 1e-5);

  SECTION("Adam with L2 weight decay and global-norm clipping, two steps") {
    ets::train::AdamOptions o;
    o.weight_decay = hp[1];
    o.decoupled = false;
    ets::train::Adam adam(layout.size, o);
    const double norm = ets::train::clip_global_norm(g.data(), g.size(), hp[2]);
    REQUIRE(norm > hp[2]);  // clipping is active in the fixture
    adam.step(p.data(), g.data(), hp[0]);
    require_close(p, fx.at("after_adam1"), 1e-5);
    auto g2 = grad_at(p, nullptr);
    ets::train::clip_global_norm(g2.data(), g2.size(), hp[2]);
    adam.step(p.data(), g2.data(), hp[0]);
    require_close(p, fx.at("after_adam2"), 1e-5);
  }
  SECTION("AdamW (decoupled weight decay), one step") {
    ets::train::AdamOptions o;
    o.weight_decay = hp[4];
    o.decoupled = true;
    ets::train::Adam adam(layout.size, o);
    adam.step(p.data(), g.data(), hp[3]);
    require_close(p, fx.at("after_adamw1"), 1e-5);
  }
}
