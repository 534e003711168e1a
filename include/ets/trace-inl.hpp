// Definitions for trace.hpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>

#include "ets/detail/ascii.hpp"
#include "ets/trace.hpp"

namespace ets {

ETS_INLINE const char* phase_name(Phase p) noexcept {
  switch (p) {
    case Phase::Forward: return "forward";
    case Phase::Backward: return "backward";
    case Phase::Update: return "update";
  }
  return "forward";
}

ETS_INLINE bool parse_phase(std::string_view s, Phase& out) noexcept {
  if (s == "forward" || s == "fwd" || s == "f") { out = Phase::Forward; return true; }
  if (s == "backward" || s == "bwd" || s == "b") { out = Phase::Backward; return true; }
  if (s == "update" || s == "opt" || s == "optimizer" || s == "u") { out = Phase::Update; return true; }
  return false;
}

ETS_INLINE const char* dtype_name(DType d) noexcept {
  switch (d) {
    case DType::Unknown: return "unknown";
    case DType::Float32: return "float32";
    case DType::Float16: return "float16";
    case DType::BFloat16: return "bfloat16";
    case DType::Float64: return "float64";
    case DType::Int64: return "int64";
    case DType::Int32: return "int32";
    case DType::Int16: return "int16";
    case DType::Int8: return "int8";
    case DType::UInt8: return "uint8";
    case DType::Bool: return "bool";
    case DType::Complex64: return "complex64";
  }
  return "unknown";
}

ETS_INLINE DType parse_dtype(std::string_view s) noexcept {
  // Called for every tensor argument of every event of an import: no allocation, and string_view compares (size
  // first) instead of a chain of C-string compares.
  char buf[24];
  if (s.size() > sizeof(buf)) return DType::Unknown;  // longer than any spelling below, even with a prefix
  for (std::size_t i = 0; i < s.size(); ++i) buf[i] = detail::ascii_tolower(s[i]);
  std::string_view t(buf, s.size());
  for (std::string_view prefix : {std::string_view("torch."), std::string_view("c10::")})
    if (t.substr(0, prefix.size()) == prefix) t.remove_prefix(prefix.size());
  struct Spelling {
    std::string_view name;
    DType type;
  };
  static constexpr Spelling kSpellings[] = {
      {"float", DType::Float32},          {"float32", DType::Float32},      {"f32", DType::Float32},
      {"half", DType::Float16},           {"float16", DType::Float16},      {"f16", DType::Float16},
      {"bfloat16", DType::BFloat16},      {"bf16", DType::BFloat16},        {"double", DType::Float64},
      {"float64", DType::Float64},        {"f64", DType::Float64},          {"long", DType::Int64},
      {"long int", DType::Int64},         {"int64", DType::Int64},          {"long long", DType::Int64},
      {"i64", DType::Int64},              {"int", DType::Int32},            {"int32", DType::Int32},
      {"i32", DType::Int32},              {"short", DType::Int16},          {"int16", DType::Int16},
      {"short int", DType::Int16},        {"signed char", DType::Int8},     {"int8", DType::Int8},
      {"char", DType::Int8},              {"unsigned char", DType::UInt8},  {"uint8", DType::UInt8},
      {"byte", DType::UInt8},             {"bool", DType::Bool},            {"complex<float>", DType::Complex64},
      {"complexfloat", DType::Complex64}, {"complex64", DType::Complex64},
  };
  for (const Spelling& sp : kSpellings)
    if (t == sp.name) return sp.type;
  return DType::Unknown;
}

ETS_INLINE int dtype_size(DType d) noexcept {
  switch (d) {
    case DType::Float32: case DType::Int32: return 4;
    case DType::Float16: case DType::BFloat16: case DType::Int16: return 2;
    case DType::Float64: case DType::Int64: case DType::Complex64: return 8;
    case DType::Int8: case DType::UInt8: case DType::Bool: return 1;
    case DType::Unknown: return 0;
  }
  return 0;
}

ETS_INLINE const char* hyper_name(Hyper h) noexcept {
  static constexpr const char* names[kHyperCount] = {
      "kernel_h", "kernel_w", "stride_h", "stride_w", "pad_h", "pad_w", "dilation_h",
      "dilation_w", "groups", "in_channels", "out_channels", "heads", "hidden", "layers"};
  const int i = static_cast<int>(h);
  return (i >= 0 && i < kHyperCount) ? names[i] : "?";
}

namespace detail {
// NaN-aware equality: "unknown" equals "unknown", so round trips compare equal.
inline bool same_number(double a, double b) noexcept {
  return (std::isnan(a) && std::isnan(b)) || a == b;
}
}  // namespace detail

ETS_INLINE bool OpRecord::operator==(const OpRecord& o) const noexcept {
  return name == o.name && raw_name == o.raw_name && phase == o.phase && inputs == o.inputs &&
         hyper == o.hyper && detail::same_number(flops, o.flops) &&
         detail::same_number(bytes, o.bytes) && start_us == o.start_us && time_us == o.time_us &&
         gap_us == o.gap_us && sequence == o.sequence && kernels == o.kernels;
}

ETS_INLINE bool TraceMeta::operator==(const TraceMeta& o) const noexcept {
  return source_format == o.source_format && source_path == o.source_path &&
         framework == o.framework && framework_version == o.framework_version &&
         device == o.device && environment == o.environment && model == o.model &&
         family == o.family && optimizer == o.optimizer && batch_size == o.batch_size &&
         extra == o.extra;
}

ETS_INLINE double ExecutionTrace::sum_us() const noexcept {
  double s = 0;
  for (const auto& op : ops) s += op.time_us + op.gap_us;
  return s;
}

ETS_INLINE double ExecutionTrace::gap_share() const noexcept {
  double total = 0, gaps = 0;
  for (const auto& op : ops) {
    total += op.time_us + op.gap_us;
    gaps += op.gap_us;
  }
  if (!std::isfinite(total)) return std::numeric_limits<double>::quiet_NaN();
  return total > 0 ? gaps / total : 0.0;
}

ETS_INLINE bool ExecutionTrace::ran_gpu_kernels() const noexcept {
  return std::any_of(ops.begin(), ops.end(), [](const OpRecord& op) { return op.kernels > 0; });
}

ETS_INLINE bool ExecutionTrace::measured_on(std::string_view hardware_env) const noexcept {
  if (hardware_env.empty()) return true;
  if (!meta.environment.empty()) return meta.environment == hardware_env;
  if (hardware_env.substr(0, 4) == "cpu-") return !ran_gpu_kernels();
  if (hardware_env.substr(0, 4) == "gpu-") return ran_gpu_kernels();
  return true;
}

ETS_INLINE bool ExecutionTrace::operator==(const ExecutionTrace& o) const noexcept {
  return meta == o.meta && ops == o.ops && iteration == o.iteration && start_us == o.start_us &&
         detail::same_number(measured_us, o.measured_us);
}

}  // namespace ets
