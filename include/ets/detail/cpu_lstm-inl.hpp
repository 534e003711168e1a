// Definitions for detail/cpu_lstm.hpp: the packed GEMM micro-kernel, the gate math and the forward pass.
// Included by the header in header-only mode, compiled once in ets::ets.
#pragma once

#include "ets/detail/cpu_lstm.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>

#include "ets/error.hpp"

#if defined(__SSE__) || defined(_M_X64) || (defined(_M_IX86_FP) && _M_IX86_FP >= 1)
#include <xmmintrin.h>
#define ETS_DETAIL_HAVE_MXCSR 1
#endif

namespace ets::detail {
inline namespace ETS_DETAIL_CPU_ISA {  // one set of symbols per instruction set (detail/cpu_lstm.hpp)

namespace cpu_kernel {

// Eigen's packet primitives give one kernel that compiles to SSE, AVX, AVX-512 or NEON as the flags allow.
using Packet = Eigen::internal::packet_traits<float>::type;
// inline: one entity across header-only translation units (std::min binds them by reference in inline functions).
inline constexpr int kPacket = static_cast<int>(sizeof(Packet) / sizeof(float));
inline constexpr int kNR = 2 * kPacket;  // panel width: two packets per output row
inline constexpr int kMR = 6;            // rows per micro-tile: 12 accumulators hide FMA latency on two FMA pipes
inline constexpr int kMC = 48;           // rows per block: with K ≤ 128 the block (≤ 24 KiB) stays in L1 beside one B panel

template <int MR>
inline void micro_tile(int k, const float* a, std::ptrdiff_t lda, const float* bp, const float* bias,
                       float* c, std::ptrdiff_t ldc, int cols, GemmInit init) noexcept {
  using namespace Eigen::internal;
  constexpr std::size_t kRows = static_cast<std::size_t>(MR);
  Packet acc0[kRows], acc1[kRows];
  alignas(64) float tile[kRows * static_cast<std::size_t>(kNR)];
  const bool full = cols == kNR;
  if (init == GemmInit::accumulate) {
    if (full) {
      for (int r = 0; r < MR; ++r) {
        acc0[r] = ploadu<Packet>(c + r * ldc);
        acc1[r] = ploadu<Packet>(c + r * ldc + kPacket);
      }
    } else {
      for (int r = 0; r < MR; ++r) {
        for (int j = 0; j < kNR; ++j) tile[r * kNR + j] = j < cols ? c[r * ldc + j] : 0.0f;
        acc0[r] = pload<Packet>(tile + r * kNR);
        acc1[r] = pload<Packet>(tile + r * kNR + kPacket);
      }
    }
  } else if (init == GemmInit::bias && bias != nullptr) {
    const Packet b0 = pload<Packet>(bias), b1 = pload<Packet>(bias + kPacket);
    for (int r = 0; r < MR; ++r) {
      acc0[r] = b0;
      acc1[r] = b1;
    }
  } else {
    for (int r = 0; r < MR; ++r) acc0[r] = acc1[r] = pset1<Packet>(0.0f);
  }
  const float* ar[kRows];
  for (int r = 0; r < MR; ++r) ar[r] = a + r * lda;
  for (int p = 0; p < k; ++p) {
    const Packet b0 = pload<Packet>(bp), b1 = pload<Packet>(bp + kPacket);
    bp += kNR;
    for (int r = 0; r < MR; ++r) {
      const Packet av = pset1<Packet>(ar[r][p]);
      acc0[r] = pmadd(av, b0, acc0[r]);
      acc1[r] = pmadd(av, b1, acc1[r]);
    }
  }
  if (full) {
    for (int r = 0; r < MR; ++r) {
      pstoreu(c + r * ldc, acc0[r]);
      pstoreu(c + r * ldc + kPacket, acc1[r]);
    }
  } else {
    for (int r = 0; r < MR; ++r) {
      pstore(tile + r * kNR, acc0[r]);
      pstore(tile + r * kNR + kPacket, acc1[r]);
      for (int j = 0; j < cols; ++j) c[r * ldc + j] = tile[r * kNR + j];
    }
  }
}

// FTZ/DAZ for the duration of a forward pass: denormal gate values cost ~100× per op on x86 and carry no
// information at float32 precision. The caller's MXCSR is restored on exit.
struct DenormalGuard {
#ifdef ETS_DETAIL_HAVE_MXCSR
  unsigned saved = _mm_getcsr();
  DenormalGuard() noexcept { _mm_setcsr(saved | 0x8040u); }
  ~DenormalGuard() { _mm_setcsr(saved); }
#endif
  DenormalGuard(const DenormalGuard&) = delete;
  DenormalGuard& operator=(const DenormalGuard&) = delete;
#ifndef ETS_DETAIL_HAVE_MXCSR
  DenormalGuard() noexcept = default;
#endif
};

// One buffer per thread, grown to the largest batch that thread has run; steady state allocates nothing
// and concurrent forward() calls on a shared model never touch each other's scratch memory.
// The pointer and size are trivially destructible thread_locals, and a separate guard frees the buffer at thread
// exit and resets them: glibc destroys C++ thread_locals before the thread's pthread_key destructors run, and a
// host's per-thread cleanup that predicts then gets a buffer of its own for that one call, not a destroyed one.
// A thread's first call registers the guard but gets a buffer of its own: where that call runs in the thread's own
// pthread_key destructor, glibc has run the thread_local destructors already and never runs the guard, so a kept
// buffer would leak with the thread. (A thread whose first two predictions both run there still leaks it: nothing
// tells a thread where it is in its exit.)
struct ThreadWorkspace {
  float* data = nullptr;
  std::size_t size = 0;
  bool called = false;    // the thread has run a forward: the guard is registered, and the next call keeps a buffer
  bool released = false;  // the guard has run: a call from here on must not register it again
};
ETS_INLINE ThreadWorkspace& thread_workspace_state() noexcept {
  thread_local ThreadWorkspace w;
  return w;
}
struct ThreadWorkspaceRelease {
  ~ThreadWorkspaceRelease() {
    ThreadWorkspace& w = thread_workspace_state();
    BufferAllocator<float>().deallocate(w.data, w.size);
    w = ThreadWorkspace{};
    w.released = true;
  }
};
// What thread_workspace() hands out: the thread's buffer, or (once the thread is ending) one that `owned` frees when
// the call is done.
struct Workspace {
  struct Free {
    void operator()(float* p) const noexcept { BufferAllocator<float>().deallocate(p, 0); }
  };
  float* data = nullptr;
  std::unique_ptr<float, Free> owned;
};
ETS_INLINE float* zeroed_floats(std::size_t floats) {
  float* p = BufferAllocator<float>().allocate(floats);  // throws bad_alloc
  std::memset(p, 0, floats * sizeof(float));  // as the vector it replaced: what is read is written first anyway
  return p;
}
ETS_INLINE Workspace thread_workspace(std::size_t floats) {
  ThreadWorkspace& w = thread_workspace_state();
  Workspace out;
  if (!w.released) {
    thread_local ThreadWorkspaceRelease release;  // constructed on this thread's first call
    (void)release;
  }
  if (w.released || !w.called) {  // an ending thread's pthread_key destructor, or the thread's first call: its own
    w.called = true;
    out.data = zeroed_floats(floats);
    out.owned.reset(out.data);
    return out;
  }
  if (w.size < floats) {
    float* grown = zeroed_floats(floats);
    BufferAllocator<float>().deallocate(w.data, w.size);
    w.data = grown;
    w.size = floats;
  }
  out.data = w.data;
  return out;
}

// PyTorch's cell on a whole time step of the batch: g holds i|f|g|o pre-activations (N × 4H, stride ldg),
// c the cell state (N × H, contiguous), h receives the hidden state (stride ldh). One fused pass in registers;
// sigmoid(x) = 0.5·tanh(x/2) + 0.5 so every non-linearity is Eigen's vectorised tanh (accurate to a few ulp).
inline Packet psigmoid(const Packet& x) noexcept {
  using namespace Eigen::internal;
  const Packet half = pset1<Packet>(0.5f);
  return pmadd(ptanh(pmul(x, half)), half, half);
}

inline float ssigmoid(float x) noexcept { return 0.5f * std::tanh(0.5f * x) + 0.5f; }

ETS_INLINE void lstm_cell_step(int n, int hidden, float* g, std::ptrdiff_t ldg, float* c, float* h,
                               std::ptrdiff_t ldh, bool first) noexcept {
  using namespace Eigen::internal;
  const int vec_end = hidden - hidden % kPacket;
  for (int r = 0; r < n; ++r) {
    const float* gi = g + r * ldg;
    const float* gf = gi + hidden;
    const float* gg = gi + 2 * hidden;
    const float* go = gi + 3 * hidden;
    float* cr = c + static_cast<std::ptrdiff_t>(r) * hidden;
    float* hr = h + r * ldh;
    for (int j = 0; j < vec_end; j += kPacket) {
      Packet cn = pmul(psigmoid(ploadu<Packet>(gi + j)), ptanh(ploadu<Packet>(gg + j)));
      if (!first) cn = pmadd(psigmoid(ploadu<Packet>(gf + j)), ploadu<Packet>(cr + j), cn);
      pstoreu(cr + j, cn);
      pstoreu(hr + j, pmul(psigmoid(ploadu<Packet>(go + j)), ptanh(cn)));
    }
    for (int j = vec_end; j < hidden; ++j) {
      float cn = ssigmoid(gi[j]) * std::tanh(gg[j]);
      if (!first) cn += ssigmoid(gf[j]) * cr[j];
      cr[j] = cn;
      hr[j] = ssigmoid(go[j]) * std::tanh(cn);
    }
  }
}

// PyTorch's GRU cell on a time step: g holds the input side r|z|n pre-activations (W_ih x + b_ih, stride ldg),
// rg the recurrent side W_hh h + b_hh (stride ldrg; b_hh itself with ldrg = 0 on the first step, where h = 0),
// hp the previous hidden state (ignored when first), h receives the new one. n's recurrent part is gated by r
// before it is added, which is why it cannot be folded into the input GEMM as the LSTM's is.
ETS_INLINE void gru_cell_step(int n, int hidden, const float* g, std::ptrdiff_t ldg, const float* rg,
                              std::ptrdiff_t ldrg, const float* hp, float* h, std::ptrdiff_t ldh, bool first) noexcept {
  using namespace Eigen::internal;
  const int vec_end = hidden - hidden % kPacket;
  for (int row = 0; row < n; ++row) {
    const float* gr = g + row * ldg;
    const float* gz = gr + hidden;
    const float* gn = gr + 2 * hidden;
    const float* rr = rg + row * ldrg;
    const float* rz = rr + hidden;
    const float* rn = rr + 2 * hidden;
    const float* hpr = first ? nullptr : hp + row * ldh;
    float* hr = h + row * ldh;
    for (int j = 0; j < vec_end; j += kPacket) {
      const Packet r = psigmoid(padd(ploadu<Packet>(gr + j), ploadu<Packet>(rr + j)));
      const Packet z = psigmoid(padd(ploadu<Packet>(gz + j), ploadu<Packet>(rz + j)));
      const Packet nn = ptanh(pmadd(r, ploadu<Packet>(rn + j), ploadu<Packet>(gn + j)));
      const Packet prev = first ? pset1<Packet>(0.0f) : ploadu<Packet>(hpr + j);
      pstoreu(hr + j, pmadd(z, psub(prev, nn), nn));  // (1 − z)·n + z·h = n + z·(h − n)
    }
    for (int j = vec_end; j < hidden; ++j) {
      const float r = ssigmoid(gr[j] + rr[j]), z = ssigmoid(gz[j] + rz[j]);
      const float nn = std::tanh(gn[j] + r * rn[j]);
      const float prev = first ? 0.0f : hpr[j];
      hr[j] = nn + z * (prev - nn);
    }
  }
}

}  // namespace cpu_kernel

ETS_INLINE int gemm_panel_width() noexcept { return cpu_kernel::kNR; }

ETS_INLINE PackedMatrix pack_transposed(const float* w, int n, int k, const float* bias_a, const float* bias_b) {
  using cpu_kernel::kNR;
  PackedMatrix p;
  p.k = k;
  p.n = n;
  p.panels = (n + kNR - 1) / kNR;
  const std::size_t uk = static_cast<std::size_t>(k);
  p.data.assign(static_cast<std::size_t>(p.panels) * uk * kNR, 0.0f);
  for (int panel = 0; panel < p.panels; ++panel) {
    float* dst = p.data.data() + static_cast<std::size_t>(panel) * uk * kNR;
    for (int kk = 0; kk < k; ++kk)
      for (int jj = 0; jj < kNR; ++jj) {
        const int j = panel * kNR + jj;
        if (j < n)
          dst[static_cast<std::size_t>(kk) * kNR + static_cast<std::size_t>(jj)] =
              w[static_cast<std::size_t>(j) * uk + static_cast<std::size_t>(kk)];
      }
  }
  if (bias_a != nullptr || bias_b != nullptr) {
    p.bias.assign(static_cast<std::size_t>(p.panels) * kNR, 0.0f);
    for (int j = 0; j < n; ++j)
      p.bias[static_cast<std::size_t>(j)] = (bias_a ? bias_a[j] : 0.0f) + (bias_b ? bias_b[j] : 0.0f);
  }
  return p;
}

ETS_INLINE void gemm_packed(int m, const float* a, std::ptrdiff_t lda, const PackedMatrix& b, float* c,
                            std::ptrdiff_t ldc, GemmInit init) noexcept {
  using namespace cpu_kernel;
  for (int i0 = 0; i0 < m; i0 += kMC) {
    const int mb = std::min(kMC, m - i0);
    for (int j = 0; j < b.panels; ++j) {
      const float* bp = b.data.data() + static_cast<std::size_t>(j) * static_cast<std::size_t>(b.k) * kNR;
      const float* bias = b.bias.empty() ? nullptr : b.bias.data() + static_cast<std::size_t>(j) * kNR;
      const int cols = std::min(kNR, b.n - j * kNR);
      int i = i0;
      const int end = i0 + mb;
      for (; i + kMR <= end; i += kMR) micro_tile<kMR>(b.k, a + i * lda, lda, bp, bias, c + i * ldc + j * kNR, ldc, cols, init);
      switch (end - i) {
        case 5: micro_tile<5>(b.k, a + i * lda, lda, bp, bias, c + i * ldc + j * kNR, ldc, cols, init); break;
        case 4: micro_tile<4>(b.k, a + i * lda, lda, bp, bias, c + i * ldc + j * kNR, ldc, cols, init); break;
        case 3: micro_tile<3>(b.k, a + i * lda, lda, bp, bias, c + i * ldc + j * kNR, ldc, cols, init); break;
        case 2: micro_tile<2>(b.k, a + i * lda, lda, bp, bias, c + i * ldc + j * kNR, ldc, cols, init); break;
        case 1: micro_tile<1>(b.k, a + i * lda, lda, bp, bias, c + i * ldc + j * kNR, ldc, cols, init); break;
        default: break;
      }
    }
  }
}

ETS_INLINE void validate_weights(const LstmWeights& w) {
  const LstmConfig& c = w.config;
  constexpr int kMaxDim = 1 << 16;  // keeps every size product inside 64-bit and every index inside int
  ETS_CHECK(c.input_size > 0 && c.input_size <= kMaxDim && c.hidden > 0 && c.hidden <= kMaxDim &&
                c.layers > 0 && c.layers <= 64 && c.outputs > 0 && c.outputs <= kMaxDim &&
                (c.cell == RnnCell::lstm || c.cell == RnnCell::gru),
            Errc::invalid_argument, "ets.predictor.2",
            "invalid LSTM config: input_size={} hidden={} layers={} outputs={} cell={} (each must be in 1..{}, layers "
            "in 1..64, cell lstm (0) or gru (1))",
            c.input_size, c.hidden, c.layers, c.outputs, static_cast<int>(c.cell), kMaxDim);
  const auto need = [](const std::vector<float>& v, std::size_t n, const char* what, int layer, int dir) {
    ETS_CHECK(v.size() == n, Errc::shape, "ets.predictor.1",
              "weight {} of layer {}{} has {} values, the config needs {}", what, layer,
              dir ? " (reverse)" : "", v.size(), n);
  };
  const std::size_t gate_rows = c.gate_rows();
  ETS_CHECK(w.cells.size() == static_cast<std::size_t>(c.layers * c.directions()), Errc::shape,
            "ets.predictor.1", "weights hold {} LSTM cells, the config needs {} (layers × directions)",
            w.cells.size(), c.layers * c.directions());
  for (int l = 0; l < c.layers; ++l)
    for (int d = 0; d < c.directions(); ++d) {
      const LstmCellWeights& cell = w.cell(l, d);
      need(cell.w_ih, gate_rows * static_cast<std::size_t>(c.layer_input(l)), "weight_ih", l, d);
      need(cell.w_hh, gate_rows * static_cast<std::size_t>(c.hidden), "weight_hh", l, d);
      need(cell.b_ih, gate_rows, "bias_ih", l, d);
      need(cell.b_hh, gate_rows, "bias_hh", l, d);
    }
  const std::size_t feat = static_cast<std::size_t>(c.hidden) * static_cast<std::size_t>(c.directions());
  ETS_CHECK(w.head_w.size() == static_cast<std::size_t>(c.outputs) * feat, Errc::shape, "ets.predictor.1",
            "head weight has {} values, the config needs {} (outputs × hidden × directions)", w.head_w.size(),
            static_cast<std::size_t>(c.outputs) * feat);
  ETS_CHECK(w.head_b.size() == static_cast<std::size_t>(c.outputs), Errc::shape, "ets.predictor.1",
            "head bias has {} values, the config needs {}", w.head_b.size(), c.outputs);
}

ETS_INLINE ForwardWorkspace forward_workspace(const LstmConfig& c, std::size_t windows, std::size_t width) noexcept {
  constexpr std::size_t pad = 16;  // keeps each buffer 64-byte aligned
  const auto round = [](std::size_t v) { return (v + pad - 1) / pad * pad; };
  const std::size_t rows = windows * width, dirs = static_cast<std::size_t>(c.directions());
  const std::size_t cell_gates = static_cast<std::size_t>(c.gates()) * static_cast<std::size_t>(c.hidden);
  ForwardWorkspace ws;
  ws.gates = round(rows * dirs * cell_gates);
  ws.out = round(rows * dirs * static_cast<std::size_t>(c.hidden));
  ws.cell = round(windows * (c.cell == RnnCell::gru ? cell_gates : static_cast<std::size_t>(c.hidden)));
  ws.input = round(rows * static_cast<std::size_t>(c.input_size));
  return ws;
}

ETS_INLINE std::size_t forward_workspace_floats(const LstmConfig& c, std::int64_t windows, int width) noexcept {
  if (windows <= 0 || width <= 0) return 0;
  const std::int64_t slice = std::min(windows, std::max<std::int64_t>(1, kForwardMaxRows / width));
  return forward_workspace(c, static_cast<std::size_t>(slice), static_cast<std::size_t>(width)).total();
}

ETS_INLINE double lstm_forward_flops(const LstmConfig& c, int windows, int width) noexcept {
  const double positions = static_cast<double>(windows) * width;
  double per_position = 0;
  for (int l = 0; l < c.layers; ++l)
    per_position += 2.0 * c.directions() * c.gates() * c.hidden * (c.layer_input(l) + c.hidden);
  per_position += 2.0 * c.outputs * c.hidden * c.directions();
  return per_position * positions;
}

ETS_INLINE CpuLstmBackend::CpuLstmBackend(const LstmWeights& weights) : config_(weights.config) {
  validate_weights(weights);
  const int dirs = config_.directions();
  const int gate_rows = config_.gates() * config_.hidden;
  const bool gru = config_.cell == RnnCell::gru;
  for (int l = 0; l < config_.layers; ++l) {
    const int in = config_.layer_input(l);
    // Stacking the directions' W_ih row-wise lets one GEMM project the layer input for both directions.
    std::vector<float> w, b_ih, b_hh;
    for (int d = 0; d < dirs; ++d) {
      const LstmCellWeights& cell = weights.cell(l, d);
      w.insert(w.end(), cell.w_ih.begin(), cell.w_ih.end());
      b_ih.insert(b_ih.end(), cell.b_ih.begin(), cell.b_ih.end());
      b_hh.insert(b_hh.end(), cell.b_hh.begin(), cell.b_hh.end());
    }
    // LSTM: b_hh folds into the input GEMM. GRU: it stays with W_hh, since r gates n's recurrent part with its bias.
    input_.push_back(
        pack_transposed(w.data(), dirs * gate_rows, in, b_ih.data(), gru ? nullptr : b_hh.data()));
    for (int d = 0; d < dirs; ++d) {
      const LstmCellWeights& cell = weights.cell(l, d);
      recurrent_.push_back(
          pack_transposed(cell.w_hh.data(), gate_rows, config_.hidden, gru ? cell.b_hh.data() : nullptr));
    }
  }
  head_ = pack_transposed(weights.head_w.data(), config_.outputs, config_.hidden * dirs, weights.head_b.data());
}

ETS_INLINE void CpuLstmBackend::forward(const float* x, int windows, int width, float* y) const {
  ETS_CHECK(windows >= 0 && width > 0 &&
                static_cast<std::int64_t>(windows) * width <= std::numeric_limits<std::int32_t>::max(),
            Errc::invalid_argument, "ets.predictor.5", "invalid batch shape: {} windows of width {}", windows, width);
  if (windows == 0) return;
  ETS_CHECK(x != nullptr && y != nullptr, Errc::invalid_argument, "ets.predictor.5",
            "null input or output buffer for {} windows", windows);
  // Scratch grows with rows = windows × width (~5 KB per row at F = H = 102, and a thread keeps its largest), so
  // big batches run in slices: windows are independent, and 64 Ki rows keep the GEMMs long enough to stay efficient.
  const int max_windows = static_cast<int>(std::max<std::int64_t>(1, kForwardMaxRows / width));
  if (windows > max_windows) {
    for (int b = 0; b < windows; b += max_windows) {
      const std::size_t first_row = static_cast<std::size_t>(b) * static_cast<std::size_t>(width);
      forward(x + first_row * static_cast<std::size_t>(config_.input_size), std::min(max_windows, windows - b), width,
              y + first_row * static_cast<std::size_t>(config_.outputs));
    }
    return;
  }
  cpu_kernel::DenormalGuard denormals;
  const int n = windows, w = width, hidden = config_.hidden, dirs = config_.directions();
  const bool gru = config_.cell == RnnCell::gru;
  const std::ptrdiff_t cell_gates = static_cast<std::ptrdiff_t>(config_.gates()) * hidden;
  const std::ptrdiff_t gate_cols = static_cast<std::ptrdiff_t>(dirs) * cell_gates;
  const std::ptrdiff_t out_cols = static_cast<std::ptrdiff_t>(dirs) * hidden;
  const std::size_t un = static_cast<std::size_t>(n), uw = static_cast<std::size_t>(w);
  const std::size_t rows = un * uw;
  // Internally rows are time-major (row = t·N + window): one time step of every window is then a contiguous
  // block, so the per-step GEMM and gate pass touch a few dense pages instead of N rows W·row-width apart
  // (which thrashed the TLB at N = 256). The input is transposed once; the head writes back window-major.
  const std::size_t features = static_cast<std::size_t>(config_.input_size);
  const ForwardWorkspace ws = forward_workspace(config_, un, uw);
  const cpu_kernel::Workspace workspace = cpu_kernel::thread_workspace(ws.total());
  float* gates = workspace.data;
  float* outs[2] = {gates + ws.gates, gates + ws.gates + ws.out};
  float* cell = outs[1] + ws.out;
  float* xt = cell + ws.cell;
  for (int t = 0; t < w; ++t)
    for (int b = 0; b < n; ++b)
      std::copy_n(x + (static_cast<std::size_t>(b) * uw + static_cast<std::size_t>(t)) * features, features,
                  xt + (static_cast<std::size_t>(t) * un + static_cast<std::size_t>(b)) * features);

  const float* in = xt;
  std::ptrdiff_t ld_in = config_.input_size;
  const std::ptrdiff_t step_gates = static_cast<std::ptrdiff_t>(n) * gate_cols;
  const std::ptrdiff_t step_out = static_cast<std::ptrdiff_t>(n) * out_cols;
  for (int l = 0; l < config_.layers; ++l) {
    float* out = outs[l % 2];
    gemm_packed(static_cast<int>(rows), in, ld_in, input_[static_cast<std::size_t>(l)], gates, gate_cols,
                GemmInit::bias);
    for (int d = 0; d < dirs; ++d) {
      const PackedMatrix& rec = recurrent_[static_cast<std::size_t>(l * dirs + d)];
      int prev = -1;
      for (int s = 0; s < w; ++s) {
        const int t = d == 0 ? s : w - 1 - s;  // the reverse direction reads each window backwards
        float* g = gates + t * step_gates + static_cast<std::ptrdiff_t>(d) * cell_gates;
        float* h = out + t * step_out + static_cast<std::ptrdiff_t>(d) * hidden;
        const float* hp = prev >= 0 ? out + prev * step_out + static_cast<std::ptrdiff_t>(d) * hidden : nullptr;
        if (gru) {
          // h = 0 on the first step, so W_hh h + b_hh is b_hh: read it with a row stride of 0.
          if (hp != nullptr) gemm_packed(n, hp, out_cols, rec, cell, cell_gates, GemmInit::bias);
          cpu_kernel::gru_cell_step(n, hidden, g, gate_cols, hp ? cell : rec.bias.data(), hp ? cell_gates : 0, hp, h,
                                    out_cols, hp == nullptr);
        } else {
          if (hp != nullptr) gemm_packed(n, hp, out_cols, rec, g, gate_cols, GemmInit::accumulate);
          cpu_kernel::lstm_cell_step(n, hidden, g, gate_cols, cell, h, out_cols, hp == nullptr);
        }
        prev = t;
      }
    }
    in = out;
    ld_in = out_cols;
  }
  // Time step t of every window lands at y rows window·W + t: a stride of W output rows.
  for (int t = 0; t < w; ++t)
    gemm_packed(n, in + t * step_out, ld_in, head_, y + static_cast<std::ptrdiff_t>(t) * config_.outputs,
                static_cast<std::ptrdiff_t>(w) * config_.outputs, GemmInit::bias);
}

}  // namespace ETS_DETAIL_CPU_ISA
}  // namespace ets::detail
