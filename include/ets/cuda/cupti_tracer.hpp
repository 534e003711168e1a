// Live GPU trace capture through CUPTI's Activity API (kernels, memcpy/memset, runtime/driver calls, NVTX ranges).
// CUDA-free declaration; the records are assembled into ExecutionTraces by the same code as Kineto imports.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ets/trace.hpp"

namespace ets::cuda {

/// What a capture treats as iterations and ops.
struct CuptiTracerOptions {
  TraceMeta meta;                            ///< copied into every trace (source_format "cupti" when empty)
  std::string step_prefix = "ProfilerStep#"; ///< NVTX ranges whose name starts so are iterations (N = suffix)
  bool all_ranges_are_ops = false;           ///< every other NVTX range is an op candidate; else only "ns::op"
                                             ///< names (PyTorch's emit_nvtx) are, other names are scopes
  bool keep_incomplete = false;              ///< keep a last iteration with neither successor nor end
  std::size_t buffer_bytes = 8u << 20;       ///< size of each activity buffer handed to CUPTI
};

/// Counts of the last capture's records (after stop()).
struct CuptiCaptureStats {
  std::uint64_t device = 0;   ///< kernels + copies + sets
  std::uint64_t api = 0;      ///< runtime + driver calls
  std::uint64_t markers = 0;  ///< NVTX marker records
  std::uint64_t dropped = 0;  ///< records CUPTI lost
};

/// Records GPU activity between start() and stop().
///
///     ets::cuda::CuptiTracer tracer;
///     tracer.start();                 // before the first NVTX call of the process (see below)
///     for (...) { nvtxRangePushA("ProfilerStep#3"); nvtxRangePushA("aten::conv2d"); ...; nvtxRangePop(); ... }
///     std::vector<ets::ExecutionTrace> its = tracer.stop();
///
/// NVTX ranges reach CUPTI only when NVTX loads CUPTI as its injection library: start() sets
/// NVTX_INJECTION64_PATH to the libcupti in use unless already set, which works when NVTX had not been used yet.
/// CUPTI delivers activity through process-wide callbacks, so one CuptiTracer may run at a time (ets.cuda.10).
/// The callbacks never throw: failures there (buffer allocation, record decoding) are kept and reported by
/// stop() as ets.cuda.11; lost records as ets.cuda.12, since a trace with holes would mislead.
/// stop() synchronises the current device so that all queued work is recorded.
class CuptiTracer {
 public:
  /// Throws ets.cuda.13 for a buffer_bytes below 4096 or not a multiple of 8.
  explicit CuptiTracer(CuptiTracerOptions options = {});
  /// Stops a running capture and discards it (errors are swallowed: destructors do not throw).
  ~CuptiTracer();
  CuptiTracer(const CuptiTracer&) = delete;
  CuptiTracer& operator=(const CuptiTracer&) = delete;

  /// Enables the activity kinds; throws ets.cuda.10 if another CuptiTracer is capturing, ets.cuda.13 if this one
  /// already is, ets.cuda.4 on CUPTI failure.
  void start();
  /// Flushes, disables and assembles; throws ets.cuda.13 when not started.
  std::vector<ExecutionTrace> stop();
  bool running() const noexcept;
  const CuptiCaptureStats& stats() const noexcept;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace ets::cuda
