// Definitions for trace.hpp.
#pragma once

#include <algorithm>
#include <cctype>

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
  std::string t;
  t.reserve(s.size());
  for (char c : s) t.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  auto strip = [&](std::string_view prefix) {
    if (t.compare(0, prefix.size(), prefix) == 0) t.erase(0, prefix.size());
  };
  strip("torch.");
  strip("c10::");
  if (t == "float" || t == "float32" || t == "f32") return DType::Float32;
  if (t == "half" || t == "float16" || t == "f16") return DType::Float16;
  if (t == "bfloat16" || t == "bf16") return DType::BFloat16;
  if (t == "double" || t == "float64" || t == "f64") return DType::Float64;
  if (t == "long" || t == "long int" || t == "int64" || t == "long long" || t == "i64") return DType::Int64;
  if (t == "int" || t == "int32" || t == "i32") return DType::Int32;
  if (t == "short" || t == "int16" || t == "short int") return DType::Int16;
  if (t == "signed char" || t == "int8" || t == "char") return DType::Int8;
  if (t == "unsigned char" || t == "uint8" || t == "byte") return DType::UInt8;
  if (t == "bool") return DType::Bool;
  if (t == "complex<float>" || t == "complexfloat" || t == "complex64") return DType::Complex64;
  if (t == "unknown") return DType::Unknown;
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
  return total > 0 ? gaps / total : 0.0;
}

ETS_INLINE bool ExecutionTrace::operator==(const ExecutionTrace& o) const noexcept {
  return meta == o.meta && ops == o.ops && iteration == o.iteration && start_us == o.start_us &&
         detail::same_number(measured_us, o.measured_us);
}

}  // namespace ets
