// The execution-trace data model: one ExecutionTrace per training iteration, one OpRecord per operator.
// Everything downstream (encoder, predictor, aggregator) sees traces only through these types.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ets/common.hpp"

namespace ets {

/// Training phase an operator belongs to.
enum class Phase : std::uint8_t { Forward = 0, Backward = 1, Update = 2 };
inline constexpr int kPhaseCount = 3;

/// "forward" / "backward" / "update".
ETS_INLINE const char* phase_name(Phase p) noexcept;
/// Parses phase_name() output (also "fwd", "bwd", "opt"); returns false if unknown.
ETS_INLINE bool parse_phase(std::string_view s, Phase& out) noexcept;

/// Element type of a tensor argument.
enum class DType : std::uint8_t {
  Unknown = 0, Float32, Float16, BFloat16, Float64, Int64, Int32, Int16, Int8, UInt8, Bool, Complex64,
};
inline constexpr int kDTypeCount = 12;

ETS_INLINE const char* dtype_name(DType d) noexcept;
/// Accepts PyTorch spellings ("float", "c10::Half", "torch.float16", "long int", ...); Unknown otherwise.
ETS_INLINE DType parse_dtype(std::string_view s) noexcept;
/// Bytes per element (0 for Unknown).
ETS_INLINE int dtype_size(DType d) noexcept;

/// Operator hyper-parameters with a fixed slot each, so the encoder can z-score them per op type.
enum class Hyper : std::uint8_t {
  KernelH = 0, KernelW, StrideH, StrideW, PadH, PadW, DilationH, DilationW, Groups,
  InChannels,   ///< conv in-channels / linear in-features / rnn input size
  OutChannels,  ///< conv out-channels / linear out-features
  Heads,        ///< attention heads
  Hidden,       ///< rnn hidden size / embedding dim
  Layers,       ///< rnn layers
  Count
};
inline constexpr int kHyperCount = static_cast<int>(Hyper::Count);
ETS_INLINE const char* hyper_name(Hyper h) noexcept;

/// Fixed-slot hyper-parameter set; absent slots are distinguishable from zero.
struct HyperParams {
  std::array<double, kHyperCount> value{};
  std::uint32_t present = 0;  ///< bit i set <=> slot i is meaningful for this op

  /// A slot outside [0, kHyperCount) (a cast integer) is ignored by set() and absent for has() / get().
  void set(Hyper h, double v) noexcept {
    if (!in_range(h)) return;
    value[static_cast<std::size_t>(h)] = v;
    present |= 1u << static_cast<int>(h);
  }
  bool has(Hyper h) const noexcept { return in_range(h) && ((present >> static_cast<int>(h)) & 1u); }
  double get(Hyper h, double fallback = 0.0) const noexcept {
    return has(h) ? value[static_cast<std::size_t>(h)] : fallback;
  }
  bool operator==(const HyperParams& o) const noexcept { return present == o.present && value == o.value; }
  bool operator!=(const HyperParams& o) const noexcept { return !(*this == o); }

 private:
  static constexpr bool in_range(Hyper h) noexcept { return static_cast<int>(h) < kHyperCount; }
};

/// One tensor argument of an operator.
struct TensorInfo {
  std::vector<std::int64_t> dims;  ///< empty for scalars
  DType dtype = DType::Unknown;

  /// Number of elements (1 for a scalar; negative dims count as 0); saturates at INT64_MAX instead of overflowing.
  std::int64_t numel() const noexcept {
    std::int64_t n = 1;
    for (auto d : dims) {
      if (d <= 0) return 0;
      if (n > std::numeric_limits<std::int64_t>::max() / d) n = std::numeric_limits<std::int64_t>::max();
      else n *= d;
    }
    return n;
  }
  bool operator==(const TensorInfo& o) const noexcept { return dims == o.dims && dtype == o.dtype; }
  bool operator!=(const TensorInfo& o) const noexcept { return !(*this == o); }
};

inline constexpr double kUnknown = std::numeric_limits<double>::quiet_NaN();

/// One operator execution within one iteration.
struct OpRecord {
  std::string name;      ///< normalised type, e.g. "conv2d" (see docs/trace-format.md)
  std::string raw_name;  ///< as the source trace spelled it, e.g. "aten::cudnn_convolution"
  Phase phase = Phase::Forward;
  std::vector<TensorInfo> inputs;
  HyperParams hyper;
  double flops = kUnknown;  ///< floating-point operations (NaN when neither recorded nor derivable as a finite count)
  double bytes = kUnknown;  ///< bytes read + written by the op's tensors (NaN when unknown)
  double start_us = 0;      ///< start relative to the trace's time origin (CPU: op start; GPU: first kernel)
  /// execution time (GPU: the device's busy time in [start, next op's start), the union of its activity there; Nsight
  /// exports: the sum of the op's kernel durations; CPU: the op's span on the training thread)
  double time_us = 0;
  double gap_us = 0;        ///< idle / framework time until the next op starts (or the iteration ends)
  std::int64_t sequence = -1;  ///< autograd sequence number linking forward and backward, -1 if none
  std::uint32_t kernels = 0;   ///< GPU kernels attributed to this op (0 on CPU)

  bool operator==(const OpRecord& o) const noexcept;
  bool operator!=(const OpRecord& o) const noexcept { return !(*this == o); }
};

/// Where a trace came from and what it ran on.
struct TraceMeta {
  std::string source_format;      ///< "kineto", "nsight", "ets-csv", "ets-trace", "live", ...
  std::string source_path;
  std::string framework;          ///< "pytorch"
  std::string framework_version;
  std::string device;             ///< GPU name or CPU model; "gpu" / "cpu" where the source tells only the kind
  std::string environment;        ///< hardware-environment id the timings belong to (e.g. "cpu-xeon-1t")
  std::string model;              ///< model / configuration name when known
  std::string family;             ///< architecture family (dataset split key)
  std::string optimizer;          ///< "sgd", "adam", "adamw", ... ("" when unknown)
  std::int64_t batch_size = 0;    ///< 0 when unknown
  std::map<std::string, std::string> extra;  ///< anything else worth keeping (sorted: deterministic output)

  bool operator==(const TraceMeta& o) const noexcept;
  bool operator!=(const TraceMeta& o) const noexcept { return !(*this == o); }
};

/// One training iteration: ops in execution order. Σ(time + gap) is the iteration period by construction.
struct ExecutionTrace {
  TraceMeta meta;
  std::vector<OpRecord> ops;
  std::int64_t iteration = 0;    ///< index of the iteration in its source (ProfilerStep#N when known)
  double start_us = 0;           ///< iteration start relative to the source's time origin
  double measured_us = kUnknown; ///< measured iteration time (label); NaN when the trace carries none

  /// Σ(time_us + gap_us) over all ops.
  double sum_us() const noexcept;
  /// Σ gap_us / Σ(time_us + gap_us); 0 for an empty trace or a zero sum, NaN when the sum is not finite (a sum past
  /// a double's range has no share to tell, and 0 would read as "no framework overhead").
  double gap_share() const noexcept;
  /// Whether measured_us is a measurement: finite and > 0 (an iteration timed at 0 µs was not timed).
  bool has_measurement() const noexcept { return std::isfinite(measured_us) && measured_us > 0; }
  /// Whether any op ran GPU kernels (OpRecord::kernels > 0): the iteration ran on a GPU.
  bool ran_gpu_kernels() const noexcept;
  /// Whether this trace's measurement bears on a model for hardware environment `hardware_env` (the model file's
  /// id). A model predicts for its own hardware, so a measurement taken elsewhere is no error of it: a trace that
  /// names an environment (meta.environment) must name this one. A trace that names none is told by its device kind
  /// where the id names one, as the collector writes ids ("cpu-..." / "gpu-..."): an iteration that ran GPU kernels
  /// is not measured on a CPU environment, nor one that ran none on a GPU environment. Otherwise, or for an empty
  /// `hardware_env`, true: the measurement is compared, as a sanity check. Says nothing of has_measurement().
  bool measured_on(std::string_view hardware_env) const noexcept;

  bool operator==(const ExecutionTrace& o) const noexcept;
  bool operator!=(const ExecutionTrace& o) const noexcept { return !(*this == o); }
};

}  // namespace ets

#ifndef ETS_COMPILED_LIB
#include "ets/trace-inl.hpp"
#endif
