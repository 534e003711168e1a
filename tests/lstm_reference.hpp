// A deliberately naive double-precision BiLSTM / BiGRU + head with PyTorch nn.LSTM / nn.GRU semantics, for backend
// parity tests. Written straight from the cells' equations, sharing no code with any backend, so agreement means
// something.
#pragma once

#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

#include "ets/lstm_weights.hpp"

namespace ets_test {

/// Random weights, uniform ±scale; scale ≤ 0 means PyTorch's default init (±1/√H).
inline ets::LstmWeights random_lstm_weights(const ets::LstmConfig& c, unsigned seed, float scale = 0.0f) {
  std::mt19937 rng(seed);
  const float k = scale > 0.0f ? scale : 1.0f / std::sqrt(static_cast<float>(c.hidden));
  std::uniform_real_distribution<float> u(-k, k);
  auto fill = [&](std::size_t n) {
    std::vector<float> v(n);
    for (auto& x : v) x = u(rng);
    return v;
  };
  ets::LstmWeights w;
  w.config = c;
  const std::size_t g = c.gate_rows();
  for (int l = 0; l < c.layers; ++l)
    for (int d = 0; d < c.directions(); ++d)
      w.cells.push_back({fill(g * c.layer_input(l)), fill(g * c.hidden), fill(g), fill(g)});
  w.head_w = fill(static_cast<std::size_t>(c.outputs) * c.hidden * c.directions());
  w.head_b = fill(c.outputs);
  return w;
}

/// y (N × W × outputs) for x (N × W × F); each window runs from zero states.
inline std::vector<double> reference_forward(const ets::LstmWeights& w, const std::vector<float>& x, int windows,
                                             int width) {
  const ets::LstmConfig& c = w.config;
  const int H = c.hidden, D = c.directions();
  std::vector<double> y(static_cast<std::size_t>(windows) * width * c.outputs);
  auto sig = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  for (int n = 0; n < windows; ++n) {
    // seq[t] = input vector of the current layer at position t.
    std::vector<std::vector<double>> seq(width);
    for (int t = 0; t < width; ++t)
      for (int f = 0; f < c.input_size; ++f)
        seq[t].push_back(x[(static_cast<std::size_t>(n) * width + t) * c.input_size + f]);
    for (int l = 0; l < c.layers; ++l) {
      const int in = c.layer_input(l);
      std::vector<std::vector<double>> next(width, std::vector<double>(static_cast<std::size_t>(H) * D));
      for (int d = 0; d < D; ++d) {
        const ets::LstmCellWeights& cw = w.cell(l, d);
        std::vector<double> h(H, 0.0), cs(H, 0.0);
        for (int s = 0; s < width; ++s) {
          const int t = d == 0 ? s : width - 1 - s;  // the reverse direction reads the window backwards
          if (c.cell == ets::RnnCell::gru) {
            // nn.GRU: r, z from both sides; n = tanh(W_in x + b_in + r * (W_hn h + b_hn)); h = (1 - z) n + z h
            const int G = 3 * H;
            std::vector<double> xi(static_cast<std::size_t>(G)), hh(static_cast<std::size_t>(G));
            for (int r = 0; r < G; ++r) {
              double a = cw.b_ih[r], b = cw.b_hh[r];
              for (int i = 0; i < in; ++i) a += cw.w_ih[static_cast<std::size_t>(r) * in + i] * seq[t][i];
              for (int i = 0; i < H; ++i) b += cw.w_hh[static_cast<std::size_t>(r) * H + i] * h[i];
              xi[r] = a;
              hh[r] = b;
            }
            std::vector<double> hn(H);
            for (int j = 0; j < H; ++j) {
              const double rg = sig(xi[j] + hh[j]), zg = sig(xi[H + j] + hh[H + j]);
              const double ng = std::tanh(xi[2 * H + j] + rg * hh[2 * H + j]);
              hn[j] = (1 - zg) * ng + zg * h[j];
              next[t][static_cast<std::size_t>(d) * H + j] = hn[j];
            }
            h = hn;
            continue;
          }
          std::vector<double> gates(4 * static_cast<std::size_t>(H));
          for (int r = 0; r < 4 * H; ++r) {
            double a = cw.b_ih[r] + cw.b_hh[r];
            for (int i = 0; i < in; ++i) a += cw.w_ih[static_cast<std::size_t>(r) * in + i] * seq[t][i];
            for (int i = 0; i < H; ++i) a += cw.w_hh[static_cast<std::size_t>(r) * H + i] * h[i];
            gates[r] = a;
          }
          for (int j = 0; j < H; ++j) {
            const double ig = sig(gates[j]), fg = sig(gates[H + j]), gg = std::tanh(gates[2 * H + j]),
                         og = sig(gates[3 * H + j]);
            cs[j] = fg * cs[j] + ig * gg;
            h[j] = og * std::tanh(cs[j]);
            next[t][static_cast<std::size_t>(d) * H + j] = h[j];
          }
        }
      }
      seq = std::move(next);
    }
    for (int t = 0; t < width; ++t)
      for (int o = 0; o < c.outputs; ++o) {
        double a = w.head_b[o];
        for (int i = 0; i < H * D; ++i) a += w.head_w[static_cast<std::size_t>(o) * H * D + i] * seq[t][i];
        y[(static_cast<std::size_t>(n) * width + t) * c.outputs + o] = a;
      }
  }
  return y;
}

}  // namespace ets_test
