// Definitions of the header-only part of ets::Tracer (live scope capture); Tracer::load lives in src/import/.
// Built once into ets::ets via src/ets.cpp, inline everywhere else.
#pragma once

#include <algorithm>
#include <cmath>
#include <iterator>

#include "ets/tracer.hpp"

namespace ets {

ETS_INLINE Tracer::Tracer(TraceMeta meta) : meta_(std::move(meta)), origin_(Clock::now()) {
  meta_.source_format = "live";
}

ETS_INLINE double Tracer::now_us() const noexcept {
  return std::chrono::duration<double, std::micro>(Clock::now() - origin_).count();
}

ETS_INLINE Tracer::Scope Tracer::op(std::string name, Phase phase, std::vector<TensorInfo> inputs, HyperParams hyper,
                                    double flops, double bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::int64_t gen = static_cast<std::int64_t>(generation_) << 32;
  OpRecord rec;
  rec.raw_name = name;
  rec.name = std::move(name);
  rec.phase = phase;
  rec.inputs = std::move(inputs);
  rec.hyper = std::move(hyper);
  rec.flops = flops;
  rec.bytes = bytes;
  rec.start_us = now_us();
  if (op_open_) {  // inside the open op: kept aside in case it outlives it (`s = tracer.op(...)` does)
    const std::uint32_t id = next_nested_id_++ & 0x7fffffffu;
    nested_.push_back({id, std::move(rec)});
    return Scope(this, gen | kNested | static_cast<std::int64_t>(id));
  }
  // The one allocation that can fail (bad_alloc), made before any state changes; geometric, as push_back's own.
  if (open_.size() == open_.capacity()) open_.reserve(std::max<std::size_t>(16, 2 * open_.capacity()));
  // The first op after a step(): the iteration that step() closed ends here (its last gap runs to this op), unless
  // an empty step() came between (told by the step count, not by time: a coarse clock gives two steps one time) or
  // it was taken already.
  if (open_.empty() && !done_.empty() && done_.back().generation == generation_ &&
      std::isnan(done_.back().next_first_us))
    done_.back().next_first_us = rec.start_us;
  Live l;
  l.rec = std::move(rec);
  open_.push_back(std::move(l));
  op_open_ = true;  // open_nested_id_ is already -1: no op was open
  return Scope(this, gen | static_cast<std::int64_t>(open_.size() - 1));
}

// Ends the open op at t. The oldest scope opened inside it that is still open outlived it: it becomes the next op,
// starting at t, and the scopes opened after it stay nested in it.
ETS_INLINE void Tracer::end_op(double t) noexcept {
  open_.back().end_us = t;
  op_open_ = false;
  open_nested_id_ = -1;
  if (nested_.empty()) return;
  try {
    Live l;
    l.rec = std::move(nested_.front().rec);
    l.rec.start_us = t;
    const std::uint32_t id = nested_.front().id;
    nested_.erase(nested_.begin());
    open_.push_back(std::move(l));
    op_open_ = true;
    open_nested_id_ = id;
  } catch (...) {  // out of memory promoting the next scope: it and those inside it stay folded into this op
    nested_.clear();
  }
}

ETS_INLINE void Tracer::close(std::int64_t index) noexcept {
  const double t = now_us();
  std::lock_guard<std::mutex> lock(mutex_);
  const auto gen = static_cast<std::uint32_t>(static_cast<std::uint64_t>(index) >> 32);
  if (gen != generation_) return;  // cut at a step() already
  const auto low = static_cast<std::uint32_t>(index & 0xffffffffLL);
  if (low & static_cast<std::uint32_t>(kNested)) {
    const std::uint32_t id = low & 0x7fffffffu;
    if (op_open_ && open_nested_id_ == static_cast<std::int64_t>(id)) return end_op(t);
    for (auto it = nested_.rbegin(); it != nested_.rend(); ++it)  // usually the newest
      if (it->id == id) {
        nested_.erase(std::next(it).base());
        return;
      }
    return;
  }
  if (op_open_ && open_nested_id_ < 0 && low + 1 == open_.size()) end_op(t);
}

ETS_INLINE void Tracer::step() {
  const double t = now_us();
  std::lock_guard<std::mutex> lock(mutex_);
  if (!open_.empty()) {
    done_.emplace_back();  // the one step that can throw (bad_alloc), before anything is moved out of open_
    Done& d = done_.back();
    d.ops = std::move(open_);
    d.boundary_us = t;
    d.prev_boundary_us = last_boundary_us_;
    d.iteration = next_iteration_++;
    d.generation = generation_ + 1;  // what ++generation_ below makes it
  }
  open_.clear();
  nested_.clear();
  op_open_ = false;
  open_nested_id_ = -1;
  ++generation_;
  last_boundary_us_ = t;
}

ETS_INLINE std::size_t Tracer::pending_ops() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return open_.size();
}

ETS_INLINE std::vector<ExecutionTrace> Tracer::take() {
  std::vector<Done> done;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done.swap(done_);
  }
  // Everything that can throw (bad_alloc) is allocated before any op is moved: on failure the iterations go back
  // to the Tracer, so a caller that catches it loses nothing.
  std::vector<ExecutionTrace> out;
  try {
    out.resize(done.size());
    for (std::size_t k = 0; k < done.size(); ++k) {
      out[k].meta = meta_;
      out[k].ops.reserve(done[k].ops.size());
    }
  } catch (...) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (done_.empty()) {
      done_.swap(done);  // the usual case (nothing completed meanwhile): cannot throw
    } else {
      try {
        done_.insert(done_.begin(), std::make_move_iterator(done.begin()), std::make_move_iterator(done.end()));
      } catch (...) {  // no memory even for that: the iterations completed meanwhile stay, these are lost
      }
    }
    throw;
  }
  for (std::size_t k = 0; k < done.size(); ++k) {
    Done& d = done[k];
    ExecutionTrace& tr = out[k];
    tr.iteration = d.iteration;
    tr.start_us = d.ops.front().rec.start_us;
    const double from = std::isnan(d.prev_boundary_us) ? tr.start_us : d.prev_boundary_us;
    tr.measured_us = d.boundary_us - from;
    const double end_of_iteration = std::isnan(d.next_first_us) ? d.boundary_us : d.next_first_us;
    for (std::size_t i = 0; i < d.ops.size(); ++i) {
      OpRecord r = std::move(d.ops[i].rec);
      const double next = i + 1 < d.ops.size() ? d.ops[i + 1].rec.start_us : end_of_iteration;
      // A scope still open at step() is cut at the boundary.
      const double end = d.ops[i].end_us < 0 ? d.boundary_us : d.ops[i].end_us;
      r.time_us = std::max(0.0, std::min(end, next) - r.start_us);
      r.gap_us = std::max(0.0, next - r.start_us - r.time_us);
      tr.ops.push_back(std::move(r));  // within the reserved capacity: cannot throw
    }
  }
  return out;
}

}  // namespace ets
