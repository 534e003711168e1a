// CuptiTracer (include/ets/cuda/cupti_tracer.hpp): CUPTI Activity API buffers → plain records → ExecutionTraces.
// Callbacks run on CUPTI's threads and never throw; what goes wrong there is kept and reported by stop().
#include "ets/cuda/cupti_tracer.hpp"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "import/activity_capture.hpp"
#include "status.hpp"

namespace ets::cuda {

namespace {
/// What CUPTI's callbacks (free functions) and the tracer share; CuptiTracer::State is this.
struct TracerState {
  CuptiTracerOptions options;
  bool running = false;
  std::vector<CUpti_ActivityKind> enabled;
  CuptiCaptureStats stats;

  std::mutex mu;  // guards everything below, filled from CUPTI's callbacks
  import::ActivityCapture capture;
  std::string first_error;
  std::atomic<std::uint64_t> errors{0};  // also counted where the lock or the message could not be had

  // Formats inside its try block: a message built by the caller (fmt::format on a failed malloc, in a handler of
  // std::bad_alloc) could throw out of a noexcept CUPTI callback, which ends the process.
  template <typename... Args>
  void fail(fmt::format_string<Args...> format, Args&&... args) noexcept {
    try {
      std::string what = fmt::format(format, std::forward<Args>(args)...);
      std::lock_guard<std::mutex> lock(mu);
      if (errors++ == 0) first_error = std::move(what);
    } catch (...) {
      ++errors;  // the message is lost, the count is not
    }
  }
  // A failed CUPTI call, recorded by a caller that holds `mu` already (so not through fail(), which takes it).
  void fail_locked(const char* call, CUptiResult r) {
    const char* text = nullptr;
    cuptiGetResultString(r, &text);
    if (errors++ == 0) first_error = fmt::format("{}: {}", call, text ? text : "?");
  }
};
}  // namespace

struct CuptiTracer::State : TracerState {};

namespace {

// CUPTI's buffer callbacks carry no user pointer, so the running capture is process-wide.
std::atomic<TracerState*> g_active{nullptr};
std::atomic<int> g_in_callback{0};
std::mutex g_start_stop;

constexpr CUpti_ActivityKind kKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_RUNTIME,           CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_ACTIVITY_KIND_MARKER,
};

// A callback announces itself, then reads g_active; stop() clears g_active, then waits for the count to drain.
// Store-then-load on two different atomics is only ordered under seq_cst (release/acquire lets each side miss the
// other's write), so these four operations use the default seq_cst order.
struct CallbackScope {
  CallbackScope() noexcept { g_in_callback.fetch_add(1); }
  ~CallbackScope() { g_in_callback.fetch_sub(1); }
};

void CUPTIAPI on_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) noexcept {
  CallbackScope scope;
  TracerState* st = g_active.load();
  const std::size_t bytes = st ? st->options.buffer_bytes : (8u << 20);
  *max_records = 0;  // as many as fit
  *buffer = static_cast<uint8_t*>(std::malloc(bytes));  // malloc alignment (16) exceeds CUPTI's 8
  *size = *buffer ? bytes : 0;
  if (!*buffer && st) st->fail("could not allocate a {}-byte CUPTI activity buffer", bytes);
}

void append(TracerState& st, const CUpti_Activity* rec) {
  switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
      st.capture.device.push_back({k->start, k->end, k->deviceId, k->streamId, k->correlationId,
                                   import::DeviceKind::Kernel, k->name ? k->name : ""});
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(rec);
      st.capture.device.push_back(
          {m->start, m->end, m->deviceId, m->streamId, m->correlationId, import::DeviceKind::Memcpy, {}});
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(rec);
      st.capture.device.push_back(
          {m->start, m->end, m->deviceId, m->streamId, m->correlationId, import::DeviceKind::Memset, {}});
      break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(rec);
      st.capture.api.push_back({a->start, a->end, a->threadId, a->correlationId});
      break;
    }
    case CUPTI_ACTIVITY_KIND_MARKER: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMarker2*>(rec);
      import::ActivityMarker out;
      out.ts_ns = m->timestamp;
      out.id = m->id;
      if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_START) out.flag = import::ActivityMarker::Flag::Start;
      else if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_END) out.flag = import::ActivityMarker::Flag::End;
      else out.flag = import::ActivityMarker::Flag::Instant;
      out.thread = m->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ? m->objectId.pt.threadId : 0;
      if (m->name) out.name = m->name;
      st.capture.markers.push_back(std::move(out));
      break;
    }
    default:
      break;  // kinds we did not enable (CUPTI may add bookkeeping records)
  }
}

void CUPTIAPI on_buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t* buffer, size_t /*size*/,
                                  size_t valid) noexcept {
  CallbackScope scope;
  TracerState* st = g_active.load();
  if (st && buffer) {
    try {
      std::lock_guard<std::mutex> lock(st->mu);
      CUpti_Activity* rec = nullptr;
      for (;;) {
        const CUptiResult r = cuptiActivityGetNextRecord(buffer, valid, &rec);
        if (r == CUPTI_ERROR_MAX_LIMIT_REACHED) break;
        if (r != CUPTI_SUCCESS) {
          st->fail_locked("cuptiActivityGetNextRecord", r);
          break;
        }
        append(*st, rec);
      }
      size_t dropped = 0;
      const CUptiResult d = cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped);
      if (d == CUPTI_SUCCESS) {
        st->capture.dropped += dropped;
      } else {  // records may be lost and not counted: the capture cannot be trusted complete
        st->fail_locked("cuptiActivityGetNumDroppedRecords", d);
      }
    } catch (const std::exception& e) {
      st->fail("decoding a CUPTI buffer: {}", e.what());
    } catch (...) {
      st->fail("decoding a CUPTI buffer: unknown exception");
    }
  }
  std::free(buffer);
}

// Ends a capture's CUPTI side; stop() and a failed start() share it so neither leaves records or callbacks behind.
// Disable, then flush: records made between a flush and the disable would stay in CUPTI's buffers and reach the
// next capture. The flush delivers everything recorded so far to this capture's callbacks; once g_active is
// cleared and the count has drained, no callback still uses `st`.
struct DetachResult {
  CUptiResult disable = CUPTI_SUCCESS;  ///< the first failed cuptiActivityDisable
  CUptiResult flush = CUPTI_SUCCESS;
};
DetachResult detach(TracerState& st) noexcept {
  DetachResult r;
  for (CUpti_ActivityKind k : st.enabled) {
    const CUptiResult d = cuptiActivityDisable(k);
    if (r.disable == CUPTI_SUCCESS) r.disable = d;
  }
  st.enabled.clear();
  r.flush = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  g_active.store(nullptr);
  while (g_in_callback.load() > 0) std::this_thread::yield();
  st.running = false;
  return r;
}

// NVTX only reports to CUPTI when it loads CUPTI as its injection library; point it at the libcupti we use.
void point_nvtx_at_cupti() noexcept {
  if (std::getenv("NVTX_INJECTION64_PATH")) return;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&cuptiActivityEnable), &info) && info.dli_fname)
    setenv("NVTX_INJECTION64_PATH", info.dli_fname, 0);
}

}  // namespace

CuptiTracer::CuptiTracer(CuptiTracerOptions options) : state_(std::make_unique<State>()) {
  ETS_CHECK(options.buffer_bytes >= 4096 && options.buffer_bytes % 8 == 0, Errc::invalid_argument, "ets.cuda.13",
            "CUPTI buffer size {} must be a multiple of 8 and at least 4096", options.buffer_bytes);
  state_->options = std::move(options);
}

CuptiTracer::~CuptiTracer() {
  if (state_ && state_->running) {
    try {
      stop();
    } catch (...) {
      // Discarded capture; see stop() for the errors a caller who cares would have seen.
    }
  }
}

bool CuptiTracer::running() const noexcept { return state_->running; }

const CuptiCaptureStats& CuptiTracer::stats() const noexcept { return state_->stats; }

void CuptiTracer::start() {
  std::lock_guard<std::mutex> lock(g_start_stop);
  ETS_CHECK(!state_->running, Errc::invalid_argument, "ets.cuda.13", "CuptiTracer::start() called twice");
  TracerState* expected = nullptr;
  ETS_CHECK(g_active.compare_exchange_strong(expected, state_.get()), Errc::backend, "ets.cuda.10",
            "another CuptiTracer is capturing (CUPTI's activity callbacks are process-wide)");
  {
    std::lock_guard<std::mutex> g(state_->mu);
    state_->capture = {};
    state_->first_error.clear();
    state_->errors = 0;
  }
  state_->stats = {};
  try {
    point_nvtx_at_cupti();
    ETS_CUPTI_CHECK(cuptiActivityRegisterCallbacks(on_buffer_requested, on_buffer_completed));
    for (CUpti_ActivityKind k : kKinds) {
      ETS_CUPTI_CHECK_NAMED(cuptiActivityEnable(k), fmt::format("cuptiActivityEnable(activity kind {})", static_cast<int>(k)));
      state_->enabled.push_back(k);
    }
  } catch (...) {
    // Kinds enabled before the failure may already have filled buffers: flush them into this (discarded) capture
    // and wait out their callbacks, or they would reach the next capture or run on a dead state.
    (void)detach(*state_);
    {
      std::lock_guard<std::mutex> g(state_->mu);
      state_->capture = {};
    }
    throw;
  }
  state_->running = true;
}

std::vector<ExecutionTrace> CuptiTracer::stop() {
  std::lock_guard<std::mutex> lock(g_start_stop);
  ETS_CHECK(state_->running, Errc::invalid_argument, "ets.cuda.13", "CuptiTracer::stop() without start()");
  // Work still queued would otherwise be missing; a failure here (no context yet) is not the tracer's concern, and
  // the error it leaves is cleared, but only when the caller had none pending (cudaGetLastError alone erased an
  // unchecked launch error of the traced program).
  const cudaError_t pending = cudaPeekAtLastError();
  (void)cudaDeviceSynchronize();
  if (pending == cudaSuccess) (void)cudaGetLastError();
  const auto [disable_all, flush_all] = detach(*state_);

  import::ActivityCapture capture;
  std::string first_error;
  std::uint64_t errors = 0;
  {
    std::lock_guard<std::mutex> g(state_->mu);
    capture = std::move(state_->capture);
    state_->capture = {};
    first_error = state_->first_error;
    errors = state_->errors;
  }
  state_->stats = {capture.device.size(), capture.api.size(), capture.markers.size(), capture.dropped};
  ETS_CUPTI_CHECK_NAMED(flush_all, "cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)");
  ETS_CUPTI_CHECK_NAMED(disable_all, "cuptiActivityDisable");
  ETS_CHECK(errors == 0, Errc::backend, "ets.cuda.11", "{} error(s) in CUPTI activity callbacks; first: {}", errors,
            first_error);
  ETS_CHECK(capture.dropped == 0, Errc::backend, "ets.cuda.12",
            "CUPTI dropped {} activity records (buffers full); raise CuptiTracerOptions::buffer_bytes",
            capture.dropped);

  import::CaptureOptions co;
  co.meta = state_->options.meta;
  co.step_prefix = state_->options.step_prefix;
  co.all_ranges_are_ops = state_->options.all_ranges_are_ops;
  co.keep_incomplete = state_->options.keep_incomplete;
  return import::assemble_capture(capture, co);
}

}  // namespace ets::cuda
