// CUPTI activity records reduced to plain structs, and their conversion into gpu_assembly's input.
// CUDA-free so the record → trace path is unit-tested on machines without a GPU; cuda/cupti_tracer.cpp fills it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "import/gpu_assembly.hpp"

namespace ets::import {

/// A kernel / memcpy / memset record (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, MEMCPY, MEMSET). Times: CUPTI ns.
struct ActivityDevice {
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  std::uint32_t device = 0;
  std::uint32_t stream = 0;
  std::uint32_t correlation = 0;
  DeviceKind kind = DeviceKind::Kernel;  ///< Kernel is turned into Communication by name during conversion
  std::string name;                      ///< kernel name; empty for copies and sets
};

/// A runtime or driver API call (CUPTI_ACTIVITY_KIND_RUNTIME / DRIVER).
struct ActivityApi {
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  std::uint32_t thread = 0;
  std::uint32_t correlation = 0;
};

/// An NVTX marker (CUPTI_ACTIVITY_KIND_MARKER): a range is a Start and an End record sharing an id.
struct ActivityMarker {
  enum class Flag : std::uint8_t { Start, End, Instant };
  std::uint64_t ts_ns = 0;
  std::uint32_t id = 0;
  Flag flag = Flag::Start;
  std::uint64_t thread = 0;
  std::string name;  ///< set on Start / Instant, empty on End
};

/// Everything one capture produced.
struct ActivityCapture {
  std::vector<ActivityDevice> device;
  std::vector<ActivityApi> api;
  std::vector<ActivityMarker> markers;
  std::uint64_t dropped = 0;  ///< records CUPTI reported lost (full buffers)
};

struct CaptureOptions {
  TraceMeta meta;                            ///< copied into every trace; source_format defaults to "cupti"
  std::string step_prefix = "ProfilerStep#"; ///< NVTX ranges named so are iterations; the suffix is N when numeric
  bool all_ranges_are_ops = false;           ///< every other range is an op (C++ programs naming ops freely);
                                             ///< else only "ns::op" names are, as in PyTorch's emit_nvtx()
  bool keep_incomplete = false;
};

/// An NVTX range name as PyTorch's emit_nvtx() writes it, e.g. "aten::addmm, seq = 12, sizes = [[4, 8], [8]]".
struct NvtxOpName {
  std::string op;                                ///< text before the first ", "
  std::int64_t sequence = -1;                    ///< "seq = N"
  std::vector<std::vector<std::int64_t>> sizes;  ///< "sizes = [[...], ...]" (empty list = scalar / unknown)
};
NvtxOpName parse_nvtx_op_name(std::string_view name);

/// Pairs markers into ranges (steps and host spans), turns API calls into launches and device records into
/// activities, on one µs clock whose origin is the earliest record. Unpaired markers are ignored. Records CUPTI could
/// not time (start = end = 0, a marker at 0) are dropped and their count logged once (warning ets.import.5).
AssemblyInput capture_to_assembly_input(const ActivityCapture& capture, const CaptureOptions& options);

/// capture_to_assembly_input + assemble_gpu.
std::vector<ExecutionTrace> assemble_capture(const ActivityCapture& capture, const CaptureOptions& options);

}  // namespace ets::import
