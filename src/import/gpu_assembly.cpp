// Op selection (outermost candidates, phases, bookkeeping filter) and the CPU / GPU per-iteration assembly.
// Both rules make Σ(time + gap) telescope to the distance between consecutive iteration starts.
#include "import/gpu_assembly.hpp"
#include "import/importers.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include "ets/error.hpp"
#include "ets/log.hpp"
#include "import/op_normalize.hpp"
#include "import/skip_links.hpp"

namespace ets::import {
namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.size() >= p.size() && s.compare(0, p.size(), p) == 0; }

// (release(): the assembly drops each per-span structure once nothing after needs it, so the host spans, the forest
// and the output are not all held at once.)

// The assembly reads a span through these, so that it runs on a HostSpan or on the Kineto reader's CompactSpan.
const std::string& raw_name(const HostSpan& s) { return s.rec.raw_name; }
const std::string& raw_name(const CompactSpan& s) { return s.raw_name; }
bool phase_known(const HostSpan& s) { return s.phase_known; }
bool phase_known(const CompactSpan&) { return false; }
const OpRecord& span_record(const HostSpan& s) { return s.rec; }
// What a descendant lends its op without its deferred arguments read: flops, sequence, inputs and hyper-parameters.
double span_flops(const HostSpan& s) { return s.rec.flops; }
double span_flops(const CompactSpan& s) { return s.flops; }
std::int64_t span_sequence(const HostSpan& s) { return s.rec.sequence; }
std::int64_t span_sequence(const CompactSpan& s) { return s.sequence; }
const std::vector<TensorInfo>& span_inputs(const HostSpan& s) { return s.rec.inputs; }
const std::vector<TensorInfo>& span_inputs(const CompactSpan&) {
  static const std::vector<TensorInfo> none;
  return none;
}
const HyperParams& span_hyper(const HostSpan& s) { return s.rec.hyper; }
const HyperParams& span_hyper(const CompactSpan&) {
  static const HyperParams none;
  return none;
}

template <class Span>
bool is_candidate(const Span& s) {
  if (s.kind == SpanKind::Op) return true;
  if (s.kind == SpanKind::Scope) return false;
  const std::string& n = raw_name(s);
  return n.find("::") != std::string::npos && !starts_with(n, "ProfilerStep#");
}

/// Nesting per thread and the outermost candidate each span belongs to.
struct Forest {
  std::vector<std::size_t> order;   ///< span indices sorted by (tid, start, -end)
  std::vector<std::int64_t> parent; ///< per span; -1 at thread top level
  std::vector<std::int64_t> top;    ///< outermost candidate at or above the span; -1 if none
  std::vector<std::uint8_t> flags;  ///< phase flags inherited from enclosing spans
  /// the innermost Optimizer.step# span at or above the span (-1: none), and per span whether it is one during which
  /// a backward pass ran (a closure's): on its thread, or on the autograd engine's (CUDA backward runs on its own)
  std::vector<std::int64_t> opt_step;
  std::vector<char> step_has_backward;

  /// The phase of the op at span i from the spans around it (op_phase's rules).
  Phase phase_of(std::size_t i, bool backward_name, std::int64_t sequence) const {
    const std::int64_t step = opt_step[i];
    const bool closure_step = step >= 0 && step_has_backward[static_cast<std::size_t>(step)];
    return op_phase(flags[i], backward_name, closure_step, sequence);
  }
};

template <class Span>
Forest build_forest(const std::vector<Span>& h) {
  Forest f;
  const std::size_t n = h.size();
  f.order.resize(n);
  std::iota(f.order.begin(), f.order.end(), std::size_t{0});
  std::stable_sort(f.order.begin(), f.order.end(), [&](std::size_t a, std::size_t b) {
    if (h[a].tid != h[b].tid) return h[a].tid < h[b].tid;
    if (h[a].start_us != h[b].start_us) return h[a].start_us < h[b].start_us;
    return h[a].end_us > h[b].end_us;
  });
  f.parent.assign(n, -1);
  f.top.assign(n, -1);
  f.flags.assign(n, 0);
  f.opt_step.assign(n, -1);
  f.step_has_backward.assign(n, 0);
  std::vector<std::size_t> stack;
  std::vector<double> bwd_starts;  // of every backward span, any thread
  std::int64_t tid = std::numeric_limits<std::int64_t>::min();
  for (std::size_t i : f.order) {
    if (h[i].tid != tid) {
      stack.clear();
      tid = h[i].tid;
    }
    // A child may end a rounding step after its parent; containment is decided by the start alone.
    while (!stack.empty() && h[stack.back()].end_us <= h[i].start_us) stack.pop_back();
    const std::int64_t p = stack.empty() ? -1 : static_cast<std::int64_t>(stack.back());
    f.parent[i] = p;
    const std::uint8_t own = scope_phase_flags(raw_name(h[i]));
    f.flags[i] = static_cast<std::uint8_t>((p >= 0 ? f.flags[p] : 0) | own);
    f.opt_step[i] = own == kScopeUpdate ? static_cast<std::int64_t>(i) : p >= 0 ? f.opt_step[p] : -1;
    if (own & kScopeBackward) bwd_starts.push_back(h[i].start_us);
    if (p >= 0 && f.top[p] >= 0) f.top[i] = f.top[p];
    else if (is_candidate(h[i])) f.top[i] = static_cast<std::int64_t>(i);
    stack.push_back(i);
  }
  // A step span held a backward pass if one began while it ran, on any thread (loss.backward() returns only when
  // the engine is done, so outside a closure no backward span starts inside a step span).
  std::sort(bwd_starts.begin(), bwd_starts.end());
  for (std::size_t i = 0; i < n; ++i) {
    if (f.opt_step[i] != static_cast<std::int64_t>(i)) continue;
    const auto it = std::lower_bound(bwd_starts.begin(), bwd_starts.end(), h[i].start_us);
    f.step_has_backward[i] = it != bwd_starts.end() && *it < h[i].end_us;
  }
  return f;
}

/// Top op records: name, phase, inputs/hyper (from the first descendant that has them), summed flops, sequence.
/// Launch scopes (GPU rule) follow the outermost candidates: spans without an operator name that launched device
/// work themselves, each an op of that work alone (the candidates nested in it stay ops of their own).
struct TopOp {
  std::size_t span = 0;
  OpRecord rec;
  bool bookkeeping = false;
  // the span's times and thread, kept so that the host spans can be freed before the output is built
  double start_us = 0, end_us = 0;
  std::int64_t tid = 0;
};

/// The top ops, in chunks of a fixed size. The output moves each op's record out; a chunk is freed as soon as every
/// record the output takes from it is out. In one vector every op stayed until the last iteration was built, so the
/// ops and the output were held side by side: a trace of bare op events peaked at twice its records.
class TopOps {
 public:
  static constexpr std::size_t kChunk = 512;

  void reserve(std::size_t n) { chunks_.reserve((n + kChunk - 1) / kChunk); }
  std::size_t size() const noexcept { return size_; }
  TopOp& operator[](std::size_t k) { return chunks_[k / kChunk][k % kChunk]; }
  const TopOp& operator[](std::size_t k) const { return chunks_[k / kChunk][k % kChunk]; }
  void push_back(TopOp t) {
    if (size_ % kChunk == 0) {
      chunks_.emplace_back();
      chunks_.back().reserve(kChunk);
    }
    chunks_.back().push_back(std::move(t));
    ++size_;
  }
  /// From here on only take() reads the ops, once for each slot in `slots`: chunks that hold none are freed now.
  template <class Slots>
  void take_only(const Slots& slots) {
    pending_.assign(chunks_.size(), 0);
    for (const std::size_t k : slots) ++pending_[k / kChunk];
    for (std::size_t c = 0; c < chunks_.size(); ++c)
      if (pending_[c] == 0) release(chunks_[c]);
  }
  /// The record of op k (one of take_only's slots, each taken once); its chunk goes with the last of them.
  OpRecord take(std::size_t k) {
    const std::size_t c = k / kChunk;
    OpRecord r = std::move(chunks_[c][k % kChunk].rec);
    if (--pending_[c] == 0) release(chunks_[c]);
    return r;
  }

 private:
  std::vector<std::vector<TopOp>> chunks_;
  std::vector<std::size_t> pending_;  // per chunk: records not yet taken
  std::size_t size_ = 0;
};

template <class Span>
using ArgsLoader = std::function<void(const Span&, OpRecord&)>;

template <class Span>
TopOps make_top_ops(const std::vector<Span>& h, const Forest& f, std::vector<std::int64_t>& top_slot,
                    const ArgsLoader<Span>& load_args, const std::vector<std::size_t>& launch_scopes = {}) {
  TopOps ops;
  top_slot.assign(h.size(), -1);
  {
    std::size_t n = launch_scopes.size();  // the exact count: the chunk list never regrows
    for (std::size_t i = 0; i < h.size(); ++i) n += f.top[i] == static_cast<std::int64_t>(i);
    ops.reserve(n);
  }
  // The op of span i, its own record with its deferred arguments read, in the next slot.
  const auto op_of_span = [&](std::size_t i) {
    top_slot[i] = static_cast<std::int64_t>(ops.size());
    TopOp t;
    t.span = i;
    t.start_us = h[i].start_us, t.end_us = h[i].end_us, t.tid = h[i].tid;
    t.rec = span_record(h[i]);
    if (h[i].args_size) load_args(h[i], t.rec);
    return t;
  };
  for (std::size_t i : f.order) {
    if (f.top[i] != static_cast<std::int64_t>(i)) continue;
    TopOp t = op_of_span(i);
    const std::int64_t p = f.parent[i];
    t.bookkeeping = is_record_function_bookkeeping(raw_name(h[i])) && h[i].kind == SpanKind::Auto &&
                    (p < 0 || !is_candidate(h[static_cast<std::size_t>(p)]));
    ops.push_back(std::move(t));
  }
  // Descendants in (tid, start) order: the first one with inputs / a sequence number wins; flops add up.
  std::vector<double> flops(ops.size(), 0.0);
  std::vector<char> has_flops(ops.size(), 0);
  std::vector<char> has_inputs(ops.size(), 0);
  OpRecord loaded;  // a descendant's deferred args, read into one reused record
  for (std::size_t i : f.order) {
    if (f.top[i] < 0) continue;
    const auto slot = static_cast<std::size_t>(top_slot[static_cast<std::size_t>(f.top[i])]);
    TopOp& t = ops[slot];
    // The op itself was loaded above; a descendant's deferred args are read only while the op still lacks inputs.
    const OpRecord* rp = i == t.span ? &t.rec : nullptr;
    if (i != t.span && !has_inputs[slot] && h[i].args_size) {
      loaded = span_record(h[i]);
      load_args(h[i], loaded);
      rp = &loaded;
    }
    // the record's fields, or the span's own where nothing was loaded
    const double r_flops = rp ? rp->flops : span_flops(h[i]);
    const std::int64_t r_sequence = rp ? rp->sequence : span_sequence(h[i]);
    const std::vector<TensorInfo>& r_inputs = rp ? rp->inputs : span_inputs(h[i]);
    if (!std::isnan(r_flops)) {
      flops[slot] += r_flops;
      has_flops[slot] = 1;
    }
    if (!has_inputs[slot] && !r_inputs.empty()) {
      has_inputs[slot] = 1;
      if (i != t.span) {
        t.rec.inputs = r_inputs;
        if (t.rec.hyper.present == 0) t.rec.hyper = rp ? rp->hyper : span_hyper(h[i]);
      }
    }
    if (t.rec.sequence < 0 && r_sequence >= 0) t.rec.sequence = r_sequence;
  }
  for (std::size_t k = 0; k < ops.size(); ++k) {
    TopOp& t = ops[k];
    const Span& s = h[t.span];
    bool bwd_name = false;
    const auto& inp = t.rec.inputs;
    // Backward convolutions list (grad_out, input, weight): the weight's rank decides 1d/2d/3d.
    std::string norm = normalize_op_name_by_args(raw_name(s), &bwd_name,
                                                 inp.size() >= 2 ? int(inp[1].dims.size()) : -1,
                                                 inp.size() >= 3 ? int(inp[2].dims.size()) : -1);
    if (t.rec.name.empty()) t.rec.name = std::move(norm);
    if (!phase_known(s)) t.rec.phase = f.phase_of(t.span, bwd_name, t.rec.sequence);
    if (has_flops[k]) t.rec.flops = flops[k];
    fill_analytic(t.rec);
  }
  // A launch scope is named by its own name and takes its own arguments and phase: nothing folds into it.
  for (const std::size_t i : launch_scopes) {
    TopOp t = op_of_span(i);
    bool bwd_name = false;
    t.rec.name = launch_scope_op_name(raw_name(h[i]), &bwd_name);
    if (!phase_known(h[i])) t.rec.phase = f.phase_of(i, bwd_name, t.rec.sequence);
    fill_analytic(t.rec);
    ops.push_back(std::move(t));
  }
  return ops;
}

// Which step holds host time t: steps are sorted by start; -1 when none.
std::int64_t step_of(const std::vector<StepSpan>& steps, double t) {
  auto it = std::upper_bound(steps.begin(), steps.end(), t,
                             [](double v, const StepSpan& s) { return v < s.start_us; });
  if (it == steps.begin()) return -1;
  --it;
  return t < it->end_us ? static_cast<std::int64_t>(it - steps.begin()) : -1;
}

// How many steps (groups of ops, by step) are returned: all but the declared tail steps, which only close the step
// before them with their first op; that first tail step must have one (`op_kind`: which ops count), else
// ets.import.7. Without steps (whole) the one group is returned.
template <typename Groups>
std::size_t returned_steps(const Groups& groups, bool whole, const AssemblyOptions& opt, const std::string& source,
                           const char* op_kind) {
  if (whole || opt.tail_steps == 0) return groups.size();
  const std::size_t n = groups.size() - std::min(opt.tail_steps, groups.size());
  ETS_CHECK(n < groups.size() && !groups[n].empty(), Errc::invalid_trace, "ets.import.7",
            "{}: the first of {} declared tail step(s) has no operator {}, so it cannot close the last labelled "
            "iteration (which would end at its step's span, as without a tail)",
            source, opt.tail_steps, op_kind);
  return n;
}

// Steps with a span but no op (`op_kind`) are not returned where other steps have ops (the caller checks that).
template <typename Groups>
void warn_steps_without_ops(const Groups& groups, std::size_t emitted, const std::vector<StepSpan>& steps,
                            const std::string& source, const char* op_kind) {
  std::vector<std::int64_t> unreturned;
  for (std::size_t g = 0; g < emitted && g < steps.size(); ++g)
    if (groups[g].empty() && std::isfinite(steps[g].start_us) && std::isfinite(steps[g].end_us))
      unreturned.push_back(steps[g].index);
  warn_unreturned_steps(unreturned, source, op_kind);
}

void sort_steps(std::vector<StepSpan>& steps) {
  std::stable_sort(steps.begin(), steps.end(), [](const StepSpan& a, const StepSpan& b) { return a.start_us < b.start_us; });
}

// The device's busy time: the union of every counted activity, as disjoint sorted intervals with prefix sums, so
// the busy measure inside any window is two binary searches.
class BusyTime {
 public:
  explicit BusyTime(std::vector<std::pair<double, double>> iv) {
    std::sort(iv.begin(), iv.end());
    for (const auto& [a, b] : iv) {
      if (!(b > a)) continue;
      if (!merged_.empty() && a <= merged_.back().second)
        merged_.back().second = std::max(merged_.back().second, b);
      else
        merged_.emplace_back(a, b);
    }
    prefix_.assign(merged_.size() + 1, 0.0);
    for (std::size_t i = 0; i < merged_.size(); ++i) prefix_[i + 1] = prefix_[i] + (merged_[i].second - merged_[i].first);
  }
  // Measure of the busy intervals inside [lo, hi).
  double within(double lo, double hi) const {
    if (!(hi > lo)) return 0;
    return before(hi) - before(lo);
  }

 private:
  // Busy measure before t.
  double before(double t) const {
    // first interval starting at or after t; the one before it may straddle t
    const auto it = std::lower_bound(merged_.begin(), merged_.end(), t,
                                     [](const std::pair<double, double>& iv, double x) { return iv.first < x; });
    const std::size_t k = static_cast<std::size_t>(it - merged_.begin());
    if (k == 0) return 0;
    const auto& last = merged_[k - 1];
    return prefix_[k - 1] + (std::min(last.second, t) - last.first);
  }
  std::vector<std::pair<double, double>> merged_;
  std::vector<double> prefix_;
};

}  // namespace

bool is_communication_kernel(std::string_view name) noexcept {
  // "nccl" / "rccl" in any case (ncclKernel_AllReduce..., ncclDevKernel_..., rccl...). Called once per kernel,
  // so it looks for the rare "cl" pair first instead of lower-casing every character.
  auto lower = [](char c) { return static_cast<char>(c | 0x20); };
  for (std::size_t i = 2; i + 1 < name.size(); ++i) {
    if (lower(name[i]) != 'c' || lower(name[i + 1]) != 'l') continue;
    if (lower(name[i - 1]) == 'c' && (lower(name[i - 2]) == 'n' || lower(name[i - 2]) == 'r')) return true;
  }
  return false;
}

namespace {

template <class Span>
std::vector<ExecutionTrace> assemble_cpu_impl(BasicAssemblyInput<Span> in, const AssemblyOptions& opt) {
  sort_steps(in.steps);
  TopOps ops;
  {
    const Forest f = build_forest(in.host);
    std::vector<std::int64_t> top_slot;
    ops = make_top_ops(in.host, f, top_slot, in.load_args);
  }
  // The ops carry all that is read from here on: the host spans (the largest input) go before the output is built.
  release(in.host);
  std::int64_t tid = opt.training_tid;
  if (tid < 0) {
    std::unordered_map<std::int64_t, std::size_t> count;
    for (std::size_t k = 0; k < ops.size(); ++k) ++count[ops[k].tid];
    std::size_t best = 0;
    for (const auto& [k, c] : count)
      if (c > best || (c == best && k < tid)) best = c, tid = k;
  }
  std::vector<std::size_t> sel;  // slots
  for (std::size_t k = 0; k < ops.size(); ++k)
    if (!ops[k].bookkeeping && ops[k].tid == tid) sel.push_back(k);
  std::stable_sort(sel.begin(), sel.end(),
                   [&](std::size_t a, std::size_t b) { return ops[a].start_us < ops[b].start_us; });
  const bool whole = in.steps.empty();
  // Group ops by step.
  std::vector<std::vector<std::size_t>> groups(whole ? 1 : in.steps.size());
  for (const std::size_t k : sel) {
    const std::int64_t s = whole ? 0 : step_of(in.steps, ops[k].start_us);
    if (s >= 0) groups[static_cast<std::size_t>(s)].push_back(k);
  }
  release(sel);
  std::vector<ExecutionTrace> out;
  const std::size_t emitted = returned_steps(groups, whole, opt, in.meta.source_path, "on the training thread");
  // Where each returned step's successor starts: the next step in the list, when it is adjacent and has ops (NaN
  // when none). Read before the records move: a tail step's ops are not taken, so their chunks go first.
  std::vector<double> next_first(emitted, kUnknown);
  for (std::size_t g = 0; g < emitted; ++g)
    if (g + 1 < groups.size() && !groups[g + 1].empty()) next_first[g] = ops[groups[g + 1].front()].start_us;
  {
    std::vector<std::size_t> taken;  // the returned steps' ops: their records move into the output
    for (std::size_t g = 0; g < emitted; ++g) taken.insert(taken.end(), groups[g].begin(), groups[g].end());
    ops.take_only(taken);
  }
  for (std::size_t g = 0; g < emitted; ++g) {
    if (groups[g].empty()) continue;
    double end;
    if (!std::isnan(next_first[g])) {
      end = next_first[g];
    } else if (!whole && std::isfinite(in.steps[g].end_us)) {
      end = in.steps[g].end_us;
    } else if (!whole && !opt.keep_incomplete) {
      continue;  // marker-derived last iteration with no end
    } else {
      end = ops[groups[g].back()].end_us;
    }
    ExecutionTrace tr;
    tr.meta = in.meta;
    tr.iteration = whole ? 0 : in.steps[g].index;
    tr.measured_us = whole ? kUnknown : in.steps[g].measured_us;
    const auto& v = groups[g];
    tr.ops.reserve(v.size());
    for (std::size_t k = 0; k < v.size(); ++k) {
      const double start = ops[v[k]].start_us, span_end = ops[v[k]].end_us;
      const double next = k + 1 < v.size() ? ops[v[k + 1]].start_us : std::max(end, start);
      // each op is in one group only: its record moves (names and inputs are not copied), its chunk freed with the
      // last record taken from it
      OpRecord r = ops.take(v[k]);
      r.start_us = start;
      r.time_us = std::max(0.0, std::min(span_end, next) - start);
      r.gap_us = next - start - r.time_us;
      r.kernels = 0;
      tr.ops.push_back(std::move(r));
    }
    tr.start_us = tr.ops.front().start_us;
    out.push_back(std::move(tr));
  }
  if (!whole && !out.empty()) warn_steps_without_ops(groups, emitted, in.steps, in.meta.source_path, "on the training thread");
  return out;
}

template <class Span>
std::vector<ExecutionTrace> assemble_gpu_impl(BasicAssemblyInput<Span> in, const AssemblyOptions& opt) {
  sort_steps(in.steps);
  const std::vector<Span>& h = in.host;
  Forest f = build_forest(h);

  std::unordered_map<std::int64_t, std::size_t> by_id;
  by_id.reserve(h.size());
  for (std::size_t i = 0; i < h.size(); ++i)
    if (h[i].id >= 0) by_id.emplace(h[i].id, i);
  // Per-thread sorted spans for launches that carry no host id.
  std::unordered_map<std::int64_t, std::vector<std::size_t>> per_tid;
  for (std::size_t i : f.order) per_tid[h[i].tid].push_back(i);
  // The span enclosing each launch: the last span on its thread that started at or before it, or the nearest of
  // that span's ancestors that has not ended by then. Launches are taken in time order per thread, so a span
  // found ended stays ended for every later launch and is passed over from then on (a forwarding link to its
  // parent, with path compression): walking every launch up the chain was quadratic in the nesting depth (a deep
  // chain of spans with launches after it: 6 s for 8 MB, 36 s for 16 MB).
  std::vector<std::int64_t> launch_span(in.launches.size(), -1);
  {
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < in.launches.size(); ++i)  // a launch at a non-finite time lies in no span
      if (std::isfinite(in.launches[i].ts_us) && per_tid.count(in.launches[i].tid)) order.push_back(i);
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      const Launch &x = in.launches[a], &y = in.launches[b];
      return x.tid != y.tid ? x.tid < y.tid : x.ts_us < y.ts_us;
    });
    SkipLinks ended(h.size());  // a span found ended links to its parent
    for (std::size_t i : order) {
      const Launch& l = in.launches[i];
      const auto& v = per_tid.find(l.tid)->second;
      auto pos = std::upper_bound(v.begin(), v.end(), l.ts_us, [&](double t, std::size_t k) { return t < h[k].start_us; });
      if (pos == v.begin()) continue;
      std::int64_t s = ended.find(static_cast<std::int64_t>(*(pos - 1)));
      while (s >= 0 && !(l.ts_us < h[static_cast<std::size_t>(s)].end_us)) {
        ended.close(s, f.parent[static_cast<std::size_t>(s)]);
        s = ended.find(f.parent[static_cast<std::size_t>(s)]);
      }
      launch_span[i] = s;
    }
  }
  release(per_tid);
  // The enclosing span on the launching thread is ground truth; some Kineto versions write the correlation id into a
  // launch's "External id" (param/resnet_kineto.json), so the id is only a fallback.
  for (std::size_t li = 0; li < in.launches.size(); ++li) {
    if (launch_span[li] >= 0 || in.launches[li].host_id < 0) continue;
    auto it = by_id.find(in.launches[li].host_id);
    if (it != by_id.end()) launch_span[li] = static_cast<std::int64_t>(it->second);
  }
  // Launch scopes: a launch with no op candidate around it (torch.compile's CompiledFunction replaying a CUDA graph,
  // apex FusedAdam launching from its Optimizer.step# span) belongs to the innermost span around it, which becomes
  // an op of its own, unless that span is the ProfilerStep# marker or lies outside every step (then the work falls
  // to the op window holding it, as work without a launch does).
  std::vector<std::size_t> launch_scopes;
  {
    std::vector<char> is_scope(h.size(), 0);
    for (const std::int64_t s : launch_span) {
      if (s < 0 || f.top[static_cast<std::size_t>(s)] >= 0 || is_scope[static_cast<std::size_t>(s)]) continue;
      const Span& span = h[static_cast<std::size_t>(s)];
      if (starts_with(raw_name(span), "ProfilerStep#")) continue;
      if (!in.steps.empty() && step_of(in.steps, span.start_us) < 0) continue;
      is_scope[static_cast<std::size_t>(s)] = 1;
    }
    for (const std::size_t i : f.order)
      if (is_scope[i]) launch_scopes.push_back(i);
  }
  std::vector<std::int64_t> top_slot;
  TopOps ops = make_top_ops(h, f, top_slot, in.load_args, launch_scopes);
  // The op a span's launches belong to: its outermost candidate, or the span itself where it is a launch scope.
  auto top_of_span = [&](std::int64_t s) -> std::int64_t {
    if (s < 0) return -1;
    const std::int64_t t = f.top[static_cast<std::size_t>(s)];
    return top_slot[static_cast<std::size_t>(t < 0 ? s : t)];
  };
  // The launches of each correlation id, by time: (time, top op slot). An id is normally carried by one launch; where
  // several carry it (ids reused across captures, or a writer's bug), an activity goes to the latest launch not
  // after its start, on any thread (the earliest where all came after it): a launch queues work that starts later.
  struct CorrLaunch {
    std::int64_t correlation;
    double ts;
    std::int64_t slot;
  };
  std::vector<CorrLaunch> corr_launches;
  corr_launches.reserve(in.launches.size());
  for (std::size_t li = 0; li < in.launches.size(); ++li) {
    const Launch& l = in.launches[li];
    if (l.correlation < 0) continue;
    const std::int64_t s = launch_span[li];
    // (a launch at no readable time sorts first: it is picked only where no other came before the activity)
    const double ts = std::isnan(l.ts_us) ? -std::numeric_limits<double>::infinity() : l.ts_us;
    corr_launches.push_back({l.correlation, ts, top_of_span(s)});
  }
  std::stable_sort(corr_launches.begin(), corr_launches.end(), [](const CorrLaunch& a, const CorrLaunch& b) {
    return a.correlation != b.correlation ? a.correlation < b.correlation : a.ts < b.ts;
  });
  // per id: [first, first + count) of corr_launches
  std::unordered_map<std::int64_t, std::pair<std::size_t, std::size_t>> corr_to_launches;
  corr_to_launches.reserve(corr_launches.size());
  std::size_t shared_ids = 0;  // ids carried by more than one launch, reported once
  for (std::size_t k = 0; k < corr_launches.size();) {
    std::size_t e = k + 1;
    while (e < corr_launches.size() && corr_launches[e].correlation == corr_launches[k].correlation) ++e;
    corr_to_launches.emplace(corr_launches[k].correlation, std::make_pair(k, e - k));
    shared_ids += e - k > 1;
    k = e;
  }
  // Activities whose id is below every launch's were queued before the capture began (CUPTI numbers launches in
  // order): their launches, and the ops, are not in the trace.
  const std::int64_t first_correlation = corr_launches.empty() ? -1 : corr_launches.front().correlation;
  if (shared_ids > 0)
    log(LogLevel::warn, "[ets.import.10] {}: {} correlation ids are carried by more than one launch; each device "
        "activity of such an id goes to the latest of its launches not after the activity's start", in.meta.source_path,
        shared_ids);

  // Attribute device activities.
  std::vector<std::vector<std::pair<double, double>>> iv(ops.size());
  std::vector<std::uint32_t> nk(ops.size(), 0);
  std::vector<std::pair<const DeviceActivity*, bool>> loose;  // (activity, its correlation id has no launch)
  std::size_t unmatched = 0;  // a correlation id no launch carries: attributed by time below, reported once
  std::size_t before_capture = 0;  // an id below every launch's: attributed by time below, reported once
  std::unordered_set<std::int64_t> devices;  // a set: a vector searched per activity was devices × activities
  for (const DeviceActivity& a : in.device) {
    if (a.kind == DeviceKind::Communication || !(a.end_us >= a.start_us)) continue;
    std::int64_t slot = -1;
    bool linked = false;
    if (a.correlation >= 0) {
      auto it = corr_to_launches.find(a.correlation);
      if (it != corr_to_launches.end()) {
        const auto b = corr_launches.begin() + static_cast<std::ptrdiff_t>(it->second.first);
        const auto e = b + static_cast<std::ptrdiff_t>(it->second.second);
        // the latest launch not after the activity's start, else the earliest
        auto pick = std::upper_bound(b, e, a.start_us, [](double t, const CorrLaunch& l) { return t < l.ts; });
        linked = true, slot = (pick == b ? b : pick - 1)->slot;
      }
    }
    if (slot < 0 && a.host_id >= 0) {
      auto it = by_id.find(a.host_id);
      if (it != by_id.end()) linked = true, slot = top_of_span(static_cast<std::int64_t>(it->second));
    }
    // Queued before the capture began: no op of the trace launched it, but the device is busy with it where it
    // runs, and an op's time is the device's busy time in its window, whoever launched the work (else that busy
    // time would read as idle gap). Attributed by time below, as work without a launch, under its own warning.
    if (!linked && a.correlation >= 0 && a.correlation < first_correlation) {
      ++before_capture;
      loose.emplace_back(&a, false);
      continue;
    }
    if (slot >= 0 && !ops[static_cast<std::size_t>(slot)].bookkeeping) {
      iv[static_cast<std::size_t>(slot)].emplace_back(a.start_us, a.end_us);
      ++nk[static_cast<std::size_t>(slot)];
      devices.insert(a.device);
    } else if (!linked || slot < 0) {
      const bool no_launch = !linked && a.correlation >= 0;
      loose.emplace_back(&a, no_launch);
      unmatched += no_launch;
    }
  }
  if (before_capture > 0)
    log(LogLevel::warn, "[ets.import.9] {}: {} device activities carry a correlation id below the first launch's "
        "(queued before the capture began, by ops the trace does not hold); they count as device busy time in the "
        "window of the operator running when they start, inside the iterations' spans", in.meta.source_path,
        before_capture);
  // The ops carry all that is read from here on (their spans' times, their activities in iv): the per-span and
  // per-launch structures go before the output is built.
  f = Forest();
  release(top_slot);
  release(by_id);
  release(launch_span);
  release(corr_launches);
  release(corr_to_launches);
  release(in.launches);
  release(in.host);

  // Ops with device work, grouped by the step their host start falls in, each group in GPU order.
  const bool whole = in.steps.empty();
  struct Item {
    std::size_t slot;
    double start;
  };
  std::vector<std::vector<Item>> groups(whole ? 1 : in.steps.size());
  for (std::size_t k = 0; k < ops.size(); ++k) {
    if (iv[k].empty()) continue;
    const std::int64_t s = whole ? 0 : step_of(in.steps, ops[k].start_us);
    if (s < 0) continue;
    double first = iv[k].front().first;
    for (const auto& p : iv[k]) first = std::min(first, p.first);
    groups[static_cast<std::size_t>(s)].push_back({k, first});
  }
  const std::size_t emitted = returned_steps(groups, whole, opt, in.meta.source_path, "with device work");
  std::vector<std::size_t> kept_groups;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].empty()) continue;
    std::stable_sort(groups[g].begin(), groups[g].end(), [](const Item& a, const Item& b) { return a.start < b.start; });
    kept_groups.push_back(g);
  }
  // One global sequence with non-decreasing starts. An iteration starts no earlier than the end of the previous
  // one's device work: where streams overlap the boundary (the next batch's copies running during this step's
  // compute), the earlier iteration keeps its ops' windows, so its last op is not cut to nothing.
  struct Seq {
    std::size_t slot;
    double start;
    std::size_t group;
  };
  std::vector<Seq> seq;
  std::size_t early_groups = 0;  // iterations whose device work began before the previous one's last op
  double earliest_by = 0;
  double prev_end = -std::numeric_limits<double>::infinity();  // end of the previous iteration's device work
  for (std::size_t g : kept_groups) {
    if (!seq.empty() && groups[g].front().start < seq.back().start) {
      ++early_groups;
      earliest_by = std::max(earliest_by, seq.back().start - groups[g].front().start);
    }
    for (const Item& it : groups[g]) {
      const double st = seq.empty() ? it.start : std::max({it.start, seq.back().start, prev_end});
      seq.push_back({it.slot, st, g});
    }
    for (const Item& it : groups[g])
      for (const auto& p : iv[it.slot]) prev_end = std::max(prev_end, p.second);
  }
  // Unmatched activities are attributed below; those that fall outside every iteration's span are dropped.
  const auto warn_unmatched = [&](std::size_t outside) {
    if (unmatched > 0)
      log(LogLevel::warn, "[ets.import.2] {}: {} device activities carry a correlation id that no launch has; each is "
          "attributed to the operator whose device window holds its start, inside its iteration ({} outside every "
          "iteration's span are dropped)", in.meta.source_path, unmatched, outside);
  };
  if (seq.empty()) {
    warn_unmatched(unmatched);
    return {};
  }
  if (early_groups > 0)
    log(LogLevel::warn, "[ets.import.3] {}: the device work of {} iterations began before the previous iteration's "
        "last operator (pipelined streams, up to {:.0f} µs early); they are placed at the end of the previous "
        "iteration's device work, and their work before it counts in the previous iteration", in.meta.source_path, early_groups, earliest_by);
  // An iteration's last op runs to the first kernel of the next step when that step has device work. The last
  // iteration, and one whose next step has none (a step of host work only, or the profiler's last), has no such
  // kernel: it lasts until the next step could start device work, its step's end when that comes after its last
  // activity (host work after the last kernel, such as loading the next batch, is framework overhead, which gaps
  // record). Not to the first kernel of a later step: the steps between would be counted in its last gap.
  // Activities without a launch do not count in its last activity: the capture ends with the work its ops launched.
  std::unordered_map<std::size_t, double> closes;  // group without an adjacent successor -> where it ends
  for (std::size_t i = 0; i < seq.size(); ++i) {
    const std::size_t g = seq[i].group;
    const bool last_of_group = i + 1 == seq.size() || seq[i + 1].group != g;
    if (!last_of_group || (i + 1 < seq.size() && seq[i + 1].group == g + 1)) continue;
    double end = seq[i].start;
    for (std::size_t j = i + 1; j-- > 0 && seq[j].group == g;)
      for (const auto& p : iv[seq[j].slot]) end = std::max(end, p.second);
    if (!whole && std::isfinite(in.steps[g].end_us)) end = std::max(end, in.steps[g].end_us);
    if (i + 1 < seq.size()) end = std::min(end, seq[i + 1].start);  // windows never overlap
    closes[g] = end;
  }
  // The end of op i's window [start, end): the next op's start, or its iteration's close.
  const auto window_end = [&](std::size_t i) {
    const auto c = (i + 1 == seq.size() || seq[i + 1].group != seq[i].group) ? closes.find(seq[i].group) : closes.end();
    return c != closes.end() ? std::max(c->second, seq[i].start) : seq[i + 1].start;
  };

  // Activities without a launch (or whose launch lies outside every op) fall to the op window holding their start:
  // inside one iteration's span, which for the last one ends at its close. Past it, or before the first op, they
  // are dropped (a stray kernel long after the capture's work would stretch the last op's gap to it).
  std::size_t outside = 0;  // of the unmatched
  for (const auto& [a, no_launch] : loose) {
    if (!devices.empty() && devices.count(a->device) == 0) {  // a device none of the ops used
      outside += no_launch;
      continue;
    }
    auto it = std::upper_bound(seq.begin(), seq.end(), a->start_us, [](double t, const Seq& s) { return t < s.start; });
    if (it == seq.begin() || !(a->start_us < window_end(static_cast<std::size_t>(it - seq.begin()) - 1))) {
      outside += no_launch;
      continue;
    }
    --it;
    iv[it->slot].emplace_back(a->start_us, a->end_us);
    ++nk[it->slot];
  }
  warn_unmatched(outside);
  release(loose);
  release(in.device);

  // Op time is the device's busy time in the op's window [start, next start), whoever launched the work: a kernel
  // still running when the next op starts (another stream, or a long copy) counts for the later op, so gap is the
  // device's real idle time and Σ(time + gap) stays the span.
  std::vector<std::pair<double, double>> all;
  for (const Seq& s : seq) all.insert(all.end(), iv[s.slot].begin(), iv[s.slot].end());
  release(iv);
  const BusyTime busy(std::move(all));

  {
    std::vector<std::size_t> taken;  // the returned steps' ops: their records move into the output
    for (const Seq& q : seq)
      if (q.group < emitted) taken.push_back(q.slot);
    ops.take_only(taken);
  }
  std::vector<ExecutionTrace> out;
  std::size_t i = 0;
  while (i < seq.size()) {
    const std::size_t g = seq[i].group;
    if (g >= emitted) break;  // tail steps: they only closed the one before (seq is in step order)
    ExecutionTrace tr;
    tr.meta = in.meta;
    tr.iteration = whole ? 0 : in.steps[g].index;
    tr.measured_us = whole ? kUnknown : in.steps[g].measured_us;
    tr.start_us = seq[i].start;
    tr.ops.reserve(groups[g].size());  // the group's ops, each once in seq
    for (; i < seq.size() && seq[i].group == g; ++i) {
      const double next = window_end(i);
      // each op is in seq once: its record moves (names and inputs are not copied)
      OpRecord r = ops.take(seq[i].slot);
      r.start_us = seq[i].start;
      r.time_us = busy.within(seq[i].start, next);
      r.gap_us = (next - seq[i].start) - r.time_us;
      if (r.gap_us < 0) r.gap_us = 0;
      r.kernels = nk[seq[i].slot];
      tr.ops.push_back(std::move(r));
    }
    out.push_back(std::move(tr));
  }
  if (!whole && !out.empty()) warn_steps_without_ops(groups, emitted, in.steps, in.meta.source_path, "with device work");
  (void)opt;
  return out;
}

}  // namespace

std::vector<ExecutionTrace> assemble_cpu(AssemblyInput in, const AssemblyOptions& opt) {
  return assemble_cpu_impl(std::move(in), opt);
}
std::vector<ExecutionTrace> assemble_cpu(CompactAssemblyInput in, const AssemblyOptions& opt) {
  return assemble_cpu_impl(std::move(in), opt);
}
std::vector<ExecutionTrace> assemble_gpu(AssemblyInput in, const AssemblyOptions& opt) {
  return assemble_gpu_impl(std::move(in), opt);
}
std::vector<ExecutionTrace> assemble_gpu(CompactAssemblyInput in, const AssemblyOptions& opt) {
  return assemble_gpu_impl(std::move(in), opt);
}

void warn_unreturned_steps(const std::vector<std::int64_t>& steps, const std::string& source, const char* op_kind) {
  if (steps.empty()) return;
  std::string named;
  for (std::size_t k = 0; k < steps.size() && k < 5; ++k) named += fmt::format("{}{}", k > 0 ? ", " : "", steps[k]);
  const bool many = steps.size() > 1;
  log(LogLevel::warn, "[ets.import.11] {}: {} {} no operator {} and {} not returned (a step the profiler stopped in, "
      "or whose work ran elsewhere): step{} {}{}", source, steps.size(), many ? "steps hold" : "step holds", op_kind,
      many ? "are" : "is", many ? "s" : "", named, steps.size() > 5 ? ", …" : "");
}

}  // namespace ets::import
