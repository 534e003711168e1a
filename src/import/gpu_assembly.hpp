// Turns host op spans, runtime launches, device activities and step boundaries into per-iteration ExecutionTraces.
// Shared by the Kineto JSON reader and the CUPTI live tracer (cuda/), so its inputs are plain records, not JSON.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "ets/trace.hpp"

namespace ets::import {

/// Frees a container's storage now (clear() keeps the capacity): the reader and the assembly drop what they are done
/// with before the output is built.
template <class C>
void release(C& c) {
  C().swap(c);
}

/// How a host span takes part in op selection (docs/trace-format.md, "CPU ops").
enum class SpanKind : std::uint8_t {
  Auto,   ///< by name: "ns::op" names (aten::, fbgemm::, autograd::engine::evaluate_function: ...) are op
          ///< candidates, anything else (ProfilerStep#, Optimizer.step#..., user labels) is a scope
  Op,     ///< always an op candidate (live Tracer scopes, NVTX op ranges)
  Scope,  ///< never an op (record_function / NVTX annotations); its name can still set the phase beneath it
};

/// One host-side span at any nesting depth. All times share one clock and origin (µs; the reader subtracts a
/// trace origin so doubles keep ns resolution).
struct HostSpan {
  /// raw_name is required. name may be empty (normalised from raw_name); inputs / flops / bytes / sequence / hyper
  /// as the source knows them (flops of nested spans are summed into the op that encloses them).
  OpRecord rec;
  double start_us = 0;
  double end_us = 0;
  std::int64_t tid = 0;             ///< host thread; nesting is computed per thread
  std::int64_t id = -1;             ///< id launches refer to (Kineto "External id"); -1 if none
  SpanKind kind = SpanKind::Auto;
  bool phase_known = false;         ///< rec.phase is authoritative; else derived from enclosing spans
  /// Arguments not read yet (shapes, dtypes, scalars): [args_offset, args_offset + args_size) of the source text,
  /// read through AssemblyInput::load_args only for the spans that become ops or lend an op its inputs. Most
  /// spans of a CPU trace are nested ops that never do. args_size 0: nothing deferred.
  std::size_t args_offset = 0;
  std::size_t args_size = 0;
};

/// A host span as the Kineto reader keeps it: of the record only what an event carries before its deferred
/// arguments are read (raw_name, sequence, flops; the rest of an OpRecord at its defaults, phase not known). A
/// HostSpan holds a whole OpRecord (328 bytes against 104): in an op-dense trace of nested spans that was most of the
/// import's memory. The assembly treats it as the HostSpan that span_record() returns.
struct CompactSpan {
  std::string raw_name;
  double start_us = 0;
  double end_us = 0;
  std::int64_t tid = 0;
  std::int64_t id = -1;
  std::int64_t sequence = -1;
  double flops = kUnknown;
  std::size_t args_offset = 0;
  std::size_t args_size = 0;
  SpanKind kind = SpanKind::Auto;
};

/// The record a CompactSpan stands for (as HostSpan::rec).
inline OpRecord span_record(const CompactSpan& s) {
  OpRecord r;
  r.raw_name = s.raw_name;
  r.sequence = s.sequence;
  r.flops = s.flops;
  return r;
}

/// One runtime API call that queued device work (cudaLaunchKernel, cudaMemcpyAsync, ...).
struct Launch {
  std::int64_t correlation = -1;  ///< matches DeviceActivity::correlation
  std::int64_t host_id = -1;      ///< HostSpan::id around the call; only used when (tid, ts_us) is in no span
  std::int64_t tid = 0;           ///< the innermost span on tid holding ts_us is the launching op
  double ts_us = 0;
};

enum class DeviceKind : std::uint8_t { Kernel, Memcpy, Memset, Communication };

/// One interval of device work.
struct DeviceActivity {
  double start_us = 0;
  double end_us = 0;
  std::int64_t device = 0;
  std::int64_t stream = 0;
  std::int64_t correlation = -1;  ///< the Launch it came from; -1 / unmatched = "kernel without launch"
  std::int64_t host_id = -1;      ///< shortcut some sources give (Kineto kernels carry "External id"); -1 if none
  DeviceKind kind = DeviceKind::Kernel;
};

/// One iteration boundary on the host clock: ops whose host start lies in [start_us, end_us) belong to it.
struct StepSpan {
  std::int64_t index = 0;           ///< ProfilerStep#N's N, or a running count for marker-derived steps
  double start_us = 0;
  double end_us = 0;
  double measured_us = kUnknown;    ///< the iteration-time label (ProfilerStep duration, marker distance) or NaN
};

template <class Span>
struct BasicAssemblyInput {
  TraceMeta meta;                       ///< copied into every ExecutionTrace
  std::vector<Span> host;               ///< any order
  std::vector<Launch> launches;         ///< any order (GPU only)
  std::vector<DeviceActivity> device;   ///< any order (GPU only)
  std::vector<StepSpan> steps;          ///< sorted by start; empty = the whole capture is one iteration
  /// Reads a span's deferred arguments into rec (name, inputs, hyper-parameters), as the source would have done
  /// eagerly; required when any span has args_size > 0.
  std::function<void(const Span&, OpRecord&)> load_args;
};
using AssemblyInput = BasicAssemblyInput<HostSpan>;
/// The Kineto reader's input: the same assembly, on compact spans.
using CompactAssemblyInput = BasicAssemblyInput<CompactSpan>;

struct AssemblyOptions {
  bool keep_incomplete = false;   ///< keep a last iteration that has neither a successor nor an end
  std::int64_t training_tid = -1; ///< CPU: the thread whose ops count (-1: the thread of most op candidates)
  /// The last N steps were recorded only to close the one before: their first op ends its last gap, as for any
  /// successor, and they are not returned (a profile's last step otherwise ends at its ProfilerStep# span's end,
  /// short of the time between steps). Must be below the number of steps (the caller checks); the first tail step
  /// must have an op (with device work, on the GPU rule) to close it with, else ets.import.7.
  std::size_t tail_steps = 0;
};

/// GPU rule: op = outermost op candidate, or launch scope (a span, not the ProfilerStep# marker, around a launch
/// with no op candidate around it: an op of the work it launched itself), with at least one non-communication
/// device activity; op start = its
/// first activity start, made non-decreasing (an iteration's first op no earlier than the end of the previous
/// iteration's device work); time = the device's busy time in [start, next op start), whichever op launched the
/// work; gap = the rest of that distance. Activities without a launch fall to the op whose [start, next start)
/// window holds their start, inside the iteration's span (else they are dropped); those whose correlation id is
/// below every launch's (queued before the capture) are dropped. The last op of the last iteration, and of one whose
/// next step has no device work, runs to the later of its iteration's last launched activity's end and its step's
/// end (when finite; never past the next op's start); without steps, to the last launched activity's end.
std::vector<ExecutionTrace> assemble_gpu(AssemblyInput in, const AssemblyOptions& opt = {});
std::vector<ExecutionTrace> assemble_gpu(CompactAssemblyInput in, const AssemblyOptions& opt = {});

/// CPU rule: op = outermost op candidate on the training thread; time = its span; gap = to the next op's start;
/// the last op's gap runs to the next iteration's first op (or to the step end for the last iteration).
std::vector<ExecutionTrace> assemble_cpu(AssemblyInput in, const AssemblyOptions& opt = {});
std::vector<ExecutionTrace> assemble_cpu(CompactAssemblyInput in, const AssemblyOptions& opt = {});

/// NCCL / RCCL / gloo-style collective kernels (by name); they never count as op time (docs/trace-format.md).
bool is_communication_kernel(std::string_view name) noexcept;

}  // namespace ets::import
