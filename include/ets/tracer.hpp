// ets::Tracer — where execution traces come from: the importer front door (Tracer::load, compiled library) and a
// header-only RAII scope API that records the operators of a host C++ training loop as it runs.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "ets/common.hpp"
#include "ets/trace.hpp"

namespace ets {

/// Records or imports execution traces (docs/trace-format.md has the definitions of time and gap).
///
/// Live capture (header-only):
/// \code
///   ets::Tracer tracer;
///   for (...) {
///     { auto s = tracer.op("conv2d", ets::Phase::Forward, {{{32, 3, 224, 224}, ets::DType::Float32}}); conv(); }
///     ...
///     tracer.step();                    // iteration boundary
///   }
///   std::vector<ets::ExecutionTrace> its = tracer.take();
/// \endcode
/// Only the outermost open scope is an op; scopes opened inside it (helpers that trace themselves) are folded
/// into it. An op's time is its scope's span (steady_clock), its gap the time to the next op's start. As in every
/// importer, an iteration ends where the next one starts: the last op's gap runs to the next iteration's first op
/// (time outside any scope after step(), e.g. data loading, is overhead of the iteration before), or to the step()
/// that ended it when take() hands it out before the next op starts. measured_us is the distance between step()
/// calls (for the first iteration: from its first op), an independent label like a ProfilerStep's duration. Threading: every member locks one mutex, so take() may run on another
/// thread, but scopes must be opened and closed by one training thread (nesting is tracked per Tracer, not per
/// thread).
class Tracer {
 public:
  class Scope;

  /// Options for load().
  struct LoadOptions {
    /// Kineto files: the rank the file must hold (ets.kineto.2 when it records another; -1: any). A file holds one
    /// rank; other formats ignore it. Below -1: ets.import.4.
    int rank = -1;
    /// Kineto files: keep a trailing iteration with no successor and no end marker (other formats ignore it).
    bool keep_incomplete = false;
    /// The most bytes a trace file may hold once decompressed (an Nsight database: its file size); 0 = no limit,
    /// and so is any value from 2^62 on. A service reading traces it did not make sets it: gzip expands up to
    /// ~1000:1, so a small file can otherwise ask for far more memory than the host has. Beyond it: ets.io.6; the
    /// read stops one byte past the limit and holds less than about twice the limit meanwhile (a buffer's growth).
    std::uint64_t max_bytes = 0;
    /// The batch size of iterations whose trace records none (a PyTorch Execution Trace, an Nsight export; their
    /// meta.batch_size is 0): the batch size is a feature, and a model trained on traces that had one predicts an
    /// unknown one out of its range. A trace's own batch size wins. 0 = leave it unknown; below 0: ets.import.4.
    std::int64_t batch_size = 0;
  };

#if defined(ETS_COMPILED_LIB)
  /// Reads a trace file (Kineto / PyTorch-profiler JSON, PyTorch Execution Trace, Nsight SQLite, ETS CSV, ETS trace;
  /// plain or .gz),
  /// detecting its format from its content. Needs the compiled library ets::ets. Throws ets::Error
  /// (ets.io.* / ets.import.* / the format's own ids, see docs/errors.md). Content whose first 64 KiB can start no
  /// trace (a checkpoint, an archive, /dev/zero) is refused there (ets.import.1), not read on.
  static std::vector<ExecutionTrace> load(const std::string& path, const LoadOptions& options);
  static std::vector<ExecutionTrace> load(const std::string& path);
  /// As load(path, options), and sets `format` to the detected format's name (detect()'s names) once the file is
  /// recognised, also when it holds no iterations: a pipe cannot be read a second time to ask detect().
  static std::vector<ExecutionTrace> load(const std::string& path, const LoadOptions& options, std::string& format);
  /// Name of the detected format of a file ("kineto", "pytorch-et", "nsight", "ets-csv", "ets-trace", "unknown").
  /// Reads the whole file (a pipe is consumed; JSON's telling key may come last), but for content whose first 64 KiB
  /// can start no trace ("unknown" at once); throws ets.io.* when it cannot be
  /// read. The overload with options honours max_bytes (ets.io.6 beyond it; an Nsight database is told by its first
  /// bytes and never refused); it ignores the other options.
  static std::string detect(const std::string& path);
  static std::string detect(const std::string& path, const LoadOptions& options);
#endif

  /// A live tracer; meta is copied into every iteration it hands out (source_format becomes "live").
  ETS_INLINE explicit Tracer(TraceMeta meta = {});
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  /// Opens a scope; the op ends when the returned Scope is destroyed (or end() is called on it). Only the outermost
  /// open scope is an op; a nested scope still open when its op ends becomes the next op from then on (so
  /// `s = tracer.op(...)`, which opens before it ends the old op, records both).
  /// The op carries what is passed: unlike the importers, which derive hyper-parameters, FLOPs and bytes from an
  /// op's arguments, a live op has only these, so pass them for features comparable to an imported trace's.
  [[nodiscard]] ETS_INLINE Scope op(std::string name, Phase phase, std::vector<TensorInfo> inputs = {},
                                    HyperParams hyper = {}, double flops = kUnknown, double bytes = kUnknown);
  /// Marks the end of the current iteration (and the start of the next).
  ETS_INLINE void step();
  /// Returns the iterations completed by step() so far and forgets them; the open iteration stays.
  ETS_INLINE std::vector<ExecutionTrace> take();
  /// Ops recorded since the last step() (the open iteration).
  ETS_INLINE std::size_t pending_ops() const;

  /// RAII handle of one traced scope. Movable, not copyable; destroying it ends the scope.
  class Scope {
   public:
    Scope() = default;
    Scope(Scope&& o) noexcept : tracer_(std::exchange(o.tracer_, nullptr)), index_(o.index_) {}
    Scope& operator=(Scope&& o) noexcept {
      if (this != &o) {
        end();
        tracer_ = std::exchange(o.tracer_, nullptr);
        index_ = o.index_;
      }
      return *this;
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    ~Scope() { end(); }
    /// Ends the scope now (idempotent).
    void end() noexcept {
      if (tracer_) std::exchange(tracer_, nullptr)->close(index_);
    }

   private:
    friend class Tracer;
    Scope(Tracer* t, std::int64_t index) : tracer_(t), index_(index) {}
    Tracer* tracer_ = nullptr;
    std::int64_t index_ = -1;  ///< generation << 32 | slot in the open iteration, or | kNested | id of a nested scope
  };

 private:
  using Clock = std::chrono::steady_clock;
  struct Live {
    OpRecord rec;
    double end_us = -1;  ///< < 0 while open
  };
  struct Done {
    std::vector<Live> ops;
    double boundary_us;  ///< the step() that closed it
    double prev_boundary_us;  ///< the step() before (NaN for the first)
    double next_first_us = kUnknown;  ///< start of the next iteration's first op, once it has one
    std::int64_t iteration;
    std::uint32_t generation;  ///< generation_ right after the step() that closed it
  };

  /// A scope opened while an op was open: folded into it, unless it outlives it (then it becomes the next op).
  struct Nested {
    std::uint32_t id;
    OpRecord rec;
  };
  static constexpr std::int64_t kNested = std::int64_t{1} << 31;

  ETS_INLINE double now_us() const noexcept;
  ETS_INLINE void close(std::int64_t index) noexcept;
  ETS_INLINE void end_op(double t) noexcept;

  mutable std::mutex mutex_;
  TraceMeta meta_;
  Clock::time_point origin_;
  std::uint32_t generation_ = 0;  ///< bumped by step(); a scope still open at step() was cut at the boundary
  std::vector<Live> open_;        ///< ops of the open iteration; only the last one can still be open
  bool op_open_ = false;          ///< open_.back() has not ended
  std::int64_t open_nested_id_ = -1;  ///< when the open op was a nested scope promoted to an op: its id
  std::vector<Nested> nested_;    ///< scopes open inside the open op, oldest first
  std::uint32_t next_nested_id_ = 0;
  std::vector<Done> done_;
  double last_boundary_us_ = kUnknown;
  std::int64_t next_iteration_ = 0;
};

}  // namespace ets

#ifndef ETS_COMPILED_LIB
#include "ets/tracer-inl.hpp"
#endif
