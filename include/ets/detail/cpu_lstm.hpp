// The Eigen CPU backend of BiLstmPredictor: PyTorch nn.LSTM / nn.GRU semantics, batched over all windows of a call.
// Weights are packed once into GEMM panels so a forward pass is a few large GEMMs plus vectorised gate math.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "ets/common.hpp"
#include "ets/inference_backend.hpp"
#include "ets/lstm_weights.hpp"

// The kernels' panel width and instructions follow the flags of the translation unit that compiles them (8 floats
// for SSE, 16 for AVX, 32 for AVX-512). An inline namespace per instruction set gives each set its own symbols: a
// program that mixes translation units built with different -march flags (a header-only plugin beside ets::ets)
// would otherwise let the linker merge one set's packing with another's micro-kernel (wrong sums, or a crash on
// misaligned panels), or run a wider set's forward pass on a CPU without it.
#if defined(__AVX512F__)
#define ETS_DETAIL_CPU_ISA isa_avx512
#elif defined(__AVX2__) && defined(__FMA__)
#define ETS_DETAIL_CPU_ISA isa_avx2_fma
#elif defined(__AVX2__)
#define ETS_DETAIL_CPU_ISA isa_avx2
#elif defined(__AVX__) && defined(__FMA__)
#define ETS_DETAIL_CPU_ISA isa_avx_fma
#elif defined(__AVX__)
#define ETS_DETAIL_CPU_ISA isa_avx
#elif defined(__SSE4_1__)
#define ETS_DETAIL_CPU_ISA isa_sse4
#elif defined(__SSE2__) || defined(_M_X64) || (defined(_M_IX86_FP) && _M_IX86_FP >= 2)
#define ETS_DETAIL_CPU_ISA isa_sse2
#elif defined(__ARM_NEON) || defined(__ARM_NEON__)
#define ETS_DETAIL_CPU_ISA isa_neon
#else
#define ETS_DETAIL_CPU_ISA isa_scalar
#endif

namespace ets::detail {
inline namespace ETS_DETAIL_CPU_ISA {

/// Storage of the packed panels and workspaces: 64-byte aligned whatever the instruction set. Eigen's aligned_malloc
/// aligns to what its translation unit's flags need (16, 32 or 64 bytes) under one symbol for all of them, so the
/// linker could hand an AVX-512 kernel a buffer aligned for SSE.
inline constexpr std::size_t kBufferAlignment = 64;
template <class T>
struct BufferAllocator {
  using value_type = T;
  BufferAllocator() noexcept = default;
  template <class U>
  BufferAllocator(const BufferAllocator<U>&) noexcept {}  // NOLINT(google-explicit-constructor): allocator rebind
  T* allocate(std::size_t n) {
    if (n > static_cast<std::size_t>(-1) / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{kBufferAlignment}));
  }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, std::align_val_t{kBufferAlignment}); }
  template <class U>
  bool operator==(const BufferAllocator<U>&) const noexcept { return true; }
  template <class U>
  bool operator!=(const BufferAllocator<U>&) const noexcept { return false; }
};
using AlignedFloats = std::vector<float, BufferAllocator<float>>;

/// Right-hand side B (k × n) of C = A·B, stored in column panels of gemm_panel_width() floats so the
/// micro-kernel streams it with aligned loads; the last panel is zero-padded. bias (padded to whole panels)
/// is optional and seeds C when a GEMM starts from the bias.
struct PackedMatrix {
  int k = 0;
  int n = 0;
  int panels = 0;
  AlignedFloats data;  ///< panels × k × panel width
  AlignedFloats bias;  ///< panels × panel width, or empty
};

/// How a GEMM seeds its output before accumulating A·B.
enum class GemmInit { zero, bias, accumulate };

/// Floats per packed panel column block (two SIMD packets of the compiled instruction set).
ETS_INLINE int gemm_panel_width() noexcept;

/// Packs B = wᵀ where w is a PyTorch weight (n × k, row-major); bias = bias_a + bias_b (either may be null).
ETS_INLINE PackedMatrix pack_transposed(const float* w, int n, int k, const float* bias_a = nullptr,
                                        const float* bias_b = nullptr);

/// C (m × b.n, leading dimension ldc) = init + A (m × b.k, leading dimension lda) · B.
ETS_INLINE void gemm_packed(int m, const float* a, std::ptrdiff_t lda, const PackedMatrix& b, float* c,
                            std::ptrdiff_t ldc, GemmInit init) noexcept;

/// Throws ets::Error (ets.predictor.1/2) unless every weight vector matches the config.
ETS_INLINE void validate_weights(const LstmWeights& w);

/// FLOPs of one forward pass (2 per multiply-add), for callers that report GFLOP/s.
ETS_INLINE double lstm_forward_flops(const LstmConfig& c, int windows, int width) noexcept;

/// Rows (windows × width) one forward pass computes at once: a larger batch runs in slices of whole windows of
/// at most this many rows (at least one window).
inline constexpr std::int64_t kForwardMaxRows = std::int64_t{1} << 16;

/// The per-thread workspace of one forward slice of `windows` windows of `width`: the buffers, in floats, each
/// rounded up to 16 (64 bytes), in the order forward() lays them out.
struct ForwardWorkspace {
  std::size_t gates = 0;  ///< rows × directions · gates · H
  std::size_t out = 0;    ///< rows × directions · H, twice (a layer's input and output)
  std::size_t cell = 0;   ///< LSTM: the cell state (N × H); GRU: the recurrent projection of one step (N × 3H)
  std::size_t input = 0;  ///< rows × F, the time-major copy of the input
  std::size_t total() const noexcept { return gates + 2 * out + cell + input; }
};
ETS_INLINE ForwardWorkspace forward_workspace(const LstmConfig& c, std::size_t windows, std::size_t width) noexcept;

/// Floats of workspace a forward() call of `windows` windows keeps on its thread: that of its largest slice.
ETS_INLINE std::size_t forward_workspace_floats(const LstmConfig& c, std::int64_t windows, int width) noexcept;

/// The CPU backend. Immutable after construction; forward() keeps a per-thread workspace that grows to the
/// largest batch seen on that thread (batches over 64 Ki rows run in slices of whole windows of that size, so it
/// stays under ~350 MB at F = H = 102 for windows of at most 64 Ki positions; a wider window runs unsliced) and is
/// reused afterwards, so steady-state calls allocate nothing.
class CpuLstmBackend final : public InferenceBackend {
 public:
  explicit CpuLstmBackend(const LstmWeights& weights);

  void forward(const float* x, int windows, int width, float* y) const override;
  std::string name() const override { return "cpu-eigen"; }
  const LstmConfig& config() const noexcept override { return config_; }

 private:
  LstmConfig config_;
  std::vector<PackedMatrix> input_;      ///< per layer: all directions side by side; LSTM: b_ih + b_hh, GRU: b_ih
  std::vector<PackedMatrix> recurrent_;  ///< per layer × direction: W_hhᵀ (GRU: with b_hh as its bias)
  PackedMatrix head_;
};

}  // namespace ETS_DETAIL_CPU_ISA
}  // namespace ets::detail

#ifndef ETS_COMPILED_LIB
#include "ets/detail/cpu_lstm-inl.hpp"
#endif
