// Definitions for window_encoder.hpp. Each op's feature row is computed once and then copied into every
// window covering it, so the cost is one row computation per op plus ⌈W/S⌉ memcpy's.
#pragma once

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "ets/error.hpp"
#include "ets/log.hpp"
#include "ets/window_encoder.hpp"

namespace ets {

ETS_INLINE WindowEncoder::WindowEncoder(FeatureSpec spec, int width, int stride)
    : spec_(std::move(spec)), width_(width), stride_(stride) {
  ETS_CHECK(width >= 1 && width <= kMaxWidth && stride >= 1 && stride <= width, Errc::invalid_argument,
            "ets.encoder.8", "window width {} / stride {} invalid: need 1 <= width <= {} and 1 <= stride <= width",
            width, stride, kMaxWidth);
  ETS_CHECK(spec_.fitted(), Errc::invalid_argument, "ets.encoder.9", "FeatureSpec is not fitted");
}

ETS_INLINE std::int64_t WindowEncoder::window_count(std::int64_t ops) const noexcept {
  if (ops <= 0) return 0;
  if (ops <= width_) return 1;
  return (ops - width_ + stride_ - 1) / stride_ + 1;
}

ETS_INLINE WindowBatch WindowEncoder::encode(const ExecutionTrace& trace, EncodeStats* stats) const {
  return encode(std::vector<const ExecutionTrace*>{&trace}, stats);
}

ETS_INLINE WindowBatch WindowEncoder::encode(const std::vector<ExecutionTrace>& traces, EncodeStats* stats) const {
  std::vector<const ExecutionTrace*> ptrs;
  ptrs.reserve(traces.size());
  for (const auto& t : traces) ptrs.push_back(&t);
  return encode(ptrs, stats);
}

ETS_INLINE WindowBatch WindowEncoder::encode(const std::vector<const ExecutionTrace*>& traces,
                                             EncodeStats* stats) const {
  WindowBatch b;
  encode_into(traces, b, stats);
  return b;
}

ETS_INLINE void WindowEncoder::encode_into(const ExecutionTrace& trace, WindowBatch& out, EncodeStats* stats) const {
  const ExecutionTrace* one = &trace;
  encode_span(&one, 1, out, stats);
}

ETS_INLINE void WindowEncoder::encode_into(const std::vector<const ExecutionTrace*>& traces, WindowBatch& out,
                                           EncodeStats* stats) const {
  encode_span(traces.data(), traces.size(), out, stats);
}

ETS_INLINE void WindowEncoder::encode_span(const ExecutionTrace* const* traces, std::size_t count, WindowBatch& b,
                                           EncodeStats* stats) const {
  constexpr std::int64_t kMaxIndex = std::numeric_limits<std::int32_t>::max();
  // the constructor checked it, but a moved-from encoder holds a moved-from (unfitted) spec
  ETS_CHECK(spec_.fitted(), Errc::invalid_argument, "ets.encoder.9",
            "FeatureSpec is not fitted (a moved-from encoder?)");
  ETS_CHECK(static_cast<std::int64_t>(count) <= kMaxIndex, Errc::invalid_argument, "ets.encoder.10",
            "too many traces in one batch ({})", count);
  std::int64_t windows = 0;
  bool labelled = true;
  EncodeStats local;
  for (std::size_t t = 0; t < count; ++t) {
    ETS_CHECK(traces[t] != nullptr, Errc::invalid_argument, "ets.encoder.10", "trace {} is null", t);
    const auto n = static_cast<std::int64_t>(traces[t]->ops.size());
    ETS_CHECK(n <= kMaxIndex, Errc::invalid_argument, "ets.encoder.10", "trace {} has too many ops ({})", t, n);
    windows += window_count(n);
    if (n > 0 && !FeatureSpec::has_labels(*traces[t])) {
      labelled = false;
      ++local.unlabelled_traces;
    }
  }
  const std::size_t w = static_cast<std::size_t>(width_), f = static_cast<std::size_t>(features());
  ETS_CHECK(windows <= kMaxIndex / width_, Errc::invalid_argument, "ets.encoder.10",
            "batch too large: {} windows of width {}", windows, width_);
  labelled = labelled && windows > 0;

  b.windows = static_cast<int>(windows);
  b.width = width_;
  b.features = features();
  const std::size_t positions = b.positions();
  b.x.resize(positions * f);
  b.mask.resize(positions);
  b.op_index.resize(positions);
  b.trace_index.resize(static_cast<std::size_t>(windows));
  if (labelled)
    b.y.resize(positions * 2);
  else
    b.y.clear();
  b.weight.clear();  // the encoder sets no loss weights; a reused batch must not keep the previous batch's

  // Window k > 0 shares its first W − S ops with window k − 1 (always full, since only the last window of a
  // trace can be short): those rows are copied from the previous window, still in cache; only new ops are
  // encoded. Each op is encoded exactly once and the tensor is written once, front to back. Labels likewise.
  const std::size_t overlap = w - static_cast<std::size_t>(stride_);
  std::size_t n = 0;  // next window
  std::vector<std::size_t> all_unknown;  // traces none of whose ops has a type the spec was fitted on
  std::vector<std::int32_t> twins;       // each op's forward twin (FeatureOptions::backward_twin)
  for (std::size_t t = 0; t < count; ++t) {
    const ExecutionTrace& tr = *traces[t];
    const std::size_t len = tr.ops.size();
    if (len == 0) continue;
    const std::int64_t unknown_before = local.unknown_ops;
    const FeatureSpec::MetaCode mc = spec_.encode_meta(tr.meta);
    // Only a trace whose backward ops carry sequence numbers has twins to look up (that lookup allocates; a reused
    // batch of other traces stays allocation-free, its empty list read as no twins by described()).
    twins.clear();
    if (spec_.options().backward_twin && FeatureSpec::has_backward_sequences(tr))
      FeatureSpec::backward_twins(tr, twins);
    const std::int64_t nw = window_count(static_cast<std::int64_t>(len));
    for (std::int64_t k = 0; k < nw; ++k, ++n) {
      const std::size_t start = static_cast<std::size_t>(k) * static_cast<std::size_t>(stride_);
      const std::size_t real = std::min(w, len - start);
      float* win = b.x.data() + n * w * f;
      std::size_t reused = 0;
      if (k > 0 && overlap > 0) {
        reused = std::min(overlap, real);
        std::memcpy(win, win - w * f + static_cast<std::size_t>(stride_) * f, reused * f * sizeof(float));
      }
      for (std::size_t p = reused; p < real; ++p)
        spec_.encode_row(tr.ops[start + p], spec_.described(tr, twins, start + p), mc, win + p * f, &local);
      std::fill(win + real * f, win + w * f, 0.f);
      std::uint8_t* mask = b.mask.data() + n * w;
      std::fill(mask, mask + real, std::uint8_t{1});
      std::fill(mask + real, mask + w, std::uint8_t{0});
      std::int32_t* idx = b.op_index.data() + n * w;
      for (std::size_t p = 0; p < real; ++p) idx[p] = static_cast<std::int32_t>(start + p);
      std::fill(idx + real, idx + w, std::int32_t{-1});
      if (labelled) {
        float* y = b.y.data() + n * w * 2;
        if (reused > 0) std::memcpy(y, y - w * 2 + static_cast<std::size_t>(stride_) * 2, reused * 2 * sizeof(float));
        for (std::size_t p = reused; p < real; ++p) {
          y[2 * p] = static_cast<float>(spec_.normalize_label(0, tr.ops[start + p].time_us));
          y[2 * p + 1] = static_cast<float>(spec_.normalize_label(1, tr.ops[start + p].gap_us));
        }
        std::fill(y + real * 2, y + w * 2, 0.f);
      }
      b.trace_index[n] = static_cast<std::int32_t>(t);
      local.padded_positions += static_cast<std::int64_t>(w - real);
    }
    // each op is encoded exactly once (overlapping rows are copied), so the count grew by this trace's unknown ops
    if (local.unknown_ops - unknown_before == static_cast<std::int64_t>(len)) all_unknown.push_back(t);
  }
  local.traces = static_cast<std::int64_t>(count);
  local.windows = windows;
  // Still encodable (the shared "other" column), but the model has learnt nothing about any of these ops. Told per
  // trace: a batch that also holds a known job (a scheduler's predict_batch, eval's chunks) must not hide one. Named
  // by its source path or model: an index would be the position in this call's batch, which callers that encode in
  // chunks (Evaluator, Predictor) do not show.
  constexpr std::size_t kNamed = 3;  // a call with many such traces names a few and counts the rest
  for (std::size_t i = 0; i < std::min(all_unknown.size(), kNamed); ++i) {
    const ExecutionTrace& tr = *traces[all_unknown[i]];
    const std::string& label = !tr.meta.source_path.empty() ? tr.meta.source_path : tr.meta.model;
    log(LogLevel::warn, "[ets.encoder.12] none of the {} ops of {} has a type the FeatureSpec was fitted on (e.g. "
        "'{}'): its prediction is unreliable", tr.ops.size(),
        label.empty() ? fmt::format("trace {} of the encoded batch", all_unknown[i]) : fmt::format("trace '{}'", label),
        tr.ops.front().name);
  }
  if (all_unknown.size() > kNamed)
    log(LogLevel::warn, "[ets.encoder.12] and {} more traces of the encoded batch whose op types are all unseen",
        all_unknown.size() - kNamed);
  if (stats) stats->merge(local);
}

}  // namespace ets
