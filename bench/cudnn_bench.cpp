// cuDNN vs CPU BiLSTM inference timing (and parity against PyTorch outputs written by tools/gpu/bench_cudnn.py).
// One JSON object on stdout; the cuDNN columns are null on machines without a usable GPU.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ets/bilstm_predictor.hpp"
#include "ets/cuda/cudnn_backend.hpp"
#include "ets/cuda/device.hpp"
#include "ets/error.hpp"

namespace {

struct Args {
  int features = 32, hidden = 64, layers = 4, width = 12, reps = 20;
  std::vector<int> windows{1, 64, 256, 1024};
  int cpu_max_windows = 1 << 30;  // skip the (slow) CPU timing above this N
  std::string weights, inputs;
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "cudnn_bench: " << why
            << "\nusage: cudnn_bench [--features F] [--hidden H] [--layers L] [--width W] [--windows 1,64,...]\n"
               "                   [--reps R] [--cpu-max-windows N] [--weights FILE] [--inputs DIR]\n"
               "  --weights: float32 LE, PyTorch order: per layer, per direction w_ih, w_hh, b_ih, b_hh; head W, b\n"
               "  --inputs:  DIR/x_N.bin inputs (N × W × F) and, when present, DIR/y_N.bin PyTorch outputs\n";
  std::exit(2);
}

std::vector<float> read_floats(const std::string& path, std::size_t expected, bool required) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    if (required) usage("cannot open " + path);
    return {};
  }
  std::vector<float> v(expected);
  f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(expected * sizeof(float)));
  if (static_cast<std::size_t>(f.gcount()) != expected * sizeof(float) || f.peek() != EOF)
    usage(fmt::format("{} does not hold exactly {} floats", path, expected));
  return v;
}

ets::LstmWeights make_weights(const Args& a) {
  ets::LstmWeights w;
  w.config.input_size = a.features;
  w.config.hidden = a.hidden;
  w.config.layers = a.layers;
  const std::size_t g = 4 * static_cast<std::size_t>(a.hidden);
  std::size_t total = 0;
  for (int l = 0; l < a.layers; ++l) total += 2 * (g * w.config.layer_input(l) + g * a.hidden + 2 * g);
  total += 2 * 2 * static_cast<std::size_t>(a.hidden) + 2;
  std::vector<float> flat;
  if (!a.weights.empty()) {
    flat = read_floats(a.weights, total, true);
  } else {
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> u(-1.0f / std::sqrt(static_cast<float>(a.hidden)),
                                            1.0f / std::sqrt(static_cast<float>(a.hidden)));
    flat.resize(total);
    for (auto& v : flat) v = u(rng);
  }
  std::size_t at = 0;
  auto take = [&](std::size_t n) {
    std::vector<float> v(flat.begin() + static_cast<std::ptrdiff_t>(at), flat.begin() + static_cast<std::ptrdiff_t>(at + n));
    at += n;
    return v;
  };
  for (int l = 0; l < a.layers; ++l)
    for (int d = 0; d < 2; ++d) {
      ets::LstmCellWeights c;
      c.w_ih = take(g * w.config.layer_input(l));
      c.w_hh = take(g * a.hidden);
      c.b_ih = take(g);
      c.b_hh = take(g);
      w.cells.push_back(std::move(c));
    }
  w.head_w = take(2 * 2 * static_cast<std::size_t>(a.hidden));
  w.head_b = take(2);
  return w;
}

template <class F>
double median_ms(int reps, F&& fn) {
  fn();  // warm-up: workspaces, cuDNN plans, caches
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto s = std::chrono::steady_clock::now();
    fn();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// NaN when either side has a non-finite value: std::max(m, NaN) would keep m, and a NaN output would pass the parity
// gate as an error of 0 (num() prints NaN as null, which the gate fails).
double max_abs(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const double d = std::abs(static_cast<double>(a[i]) - b[i]);
    if (!std::isfinite(d)) return std::nan("");
    m = std::max(m, d);
  }
  return m;
}

std::string num(double v) { return std::isnan(v) ? "null" : fmt::format("{:.6g}", v); }

}  // namespace

int main(int argc, char** argv) try {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage("missing value for " + k);
      return argv[++i];
    };
    if (k == "--features") a.features = std::stoi(next());
    else if (k == "--hidden") a.hidden = std::stoi(next());
    else if (k == "--layers") a.layers = std::stoi(next());
    else if (k == "--width") a.width = std::stoi(next());
    else if (k == "--reps") a.reps = std::max(1, std::stoi(next()));
    else if (k == "--cpu-max-windows") a.cpu_max_windows = std::stoi(next());
    else if (k == "--weights") a.weights = next();
    else if (k == "--inputs") a.inputs = next();
    else if (k == "--windows") {
      a.windows.clear();
      std::stringstream ss(next());
      for (std::string t; std::getline(ss, t, ',');) a.windows.push_back(std::stoi(t));
    } else usage("unknown option " + k);
  }
  const ets::LstmWeights w = make_weights(a);
  const ets::BiLstmPredictor cpu(w, ets::Backend::Cpu);
  std::string why;
  std::unique_ptr<ets::cuda::CudnnBackend> gpu;
  if (ets::cuda::device_available(&why)) gpu = std::make_unique<ets::cuda::CudnnBackend>(w);
  const double nan = std::nan("");

  std::string cases;
  for (int n : a.windows) {
    const std::size_t nx = static_cast<std::size_t>(n) * a.width * a.features, ny = static_cast<std::size_t>(n) * a.width * 2;
    std::vector<float> x, ref;
    if (!a.inputs.empty()) {
      x = read_floats(fmt::format("{}/x_{}.bin", a.inputs, n), nx, true);
      ref = read_floats(fmt::format("{}/y_{}.bin", a.inputs, n), ny, false);
    } else {
      std::mt19937 rng(static_cast<unsigned>(n));
      std::normal_distribution<float> g;
      x.resize(nx);
      for (auto& v : x) v = g(rng);
    }
    std::vector<float> yc(ny), yg(ny);
    double cpu_ms = nan, gpu_ms = nan, e_gc = nan, e_ct = nan, e_gt = nan;
    if (n <= a.cpu_max_windows) {
      cpu_ms = median_ms(a.reps, [&] { cpu.predict(x.data(), n, a.width, yc.data()); });
      if (!ref.empty()) e_ct = max_abs(yc, ref);
    }
    if (gpu) {
      gpu_ms = median_ms(a.reps, [&] { gpu->forward(x.data(), n, a.width, yg.data()); });
      if (n <= a.cpu_max_windows) e_gc = max_abs(yg, yc);
      if (!ref.empty()) e_gt = max_abs(yg, ref);
    }
    // Multiply-adds of the LSTM stack + head, ×2 for flops (gate non-linearities ignored).
    double macs = 0;
    for (int l = 0; l < a.layers; ++l)
      macs += 2.0 * 4 * a.hidden * (w.config.layer_input(l) + a.hidden);
    macs = (macs + 2.0 * 2 * a.hidden) * n * a.width;
    if (!cases.empty()) cases += ",";
    cases += fmt::format(
        "{{\"windows\":{},\"cpu_ms\":{},\"cudnn_ms\":{},\"cpu_gflops\":{},\"cudnn_gflops\":{},"
        "\"max_err_cudnn_vs_cpu\":{},\"max_err_cpu_vs_torch\":{},\"max_err_cudnn_vs_torch\":{}}}",
        n, num(cpu_ms), num(gpu_ms), num(2 * macs / (cpu_ms * 1e6)), num(2 * macs / (gpu_ms * 1e6)), num(e_gc),
        num(e_ct), num(e_gt));
  }
  std::cout << fmt::format(
      "{{\"layers\":{},\"hidden\":{},\"features\":{},\"width\":{},\"reps\":{},\"cuda_device\":{},\"cases\":[{}]}}\n",
      a.layers, a.hidden, a.features, a.width, a.reps,
      gpu ? "\"" + gpu->description() + "\"" : "null", cases);
  return 0;
} catch (const std::exception& e) {
  std::cerr << "cudnn_bench: " << e.what() << "\n";
  return 1;
}
