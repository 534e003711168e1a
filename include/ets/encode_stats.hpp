// Diagnostics from encoding traces: how many ops, windows and — most importantly — ops of types the
// fitted vocabulary never saw (they are encoded as "other" with frequency 0, which degrades predictions).
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace ets {

struct EncodeStats {
  std::int64_t traces = 0;
  std::int64_t ops = 0;
  std::int64_t unknown_ops = 0;       ///< ops whose type is not in the fitted vocabulary
  std::int64_t windows = 0;
  std::int64_t padded_positions = 0;  ///< window positions holding no op
  std::int64_t unlabelled_traces = 0; ///< traces without usable per-op timings (the batch then has no y)
  std::map<std::string, std::int64_t> unknown_types;  ///< unknown type name → occurrences

  void merge(const EncodeStats& o) {
    traces += o.traces;
    ops += o.ops;
    unknown_ops += o.unknown_ops;
    windows += o.windows;
    padded_positions += o.padded_positions;
    unlabelled_traces += o.unlabelled_traces;
    for (const auto& [k, v] : o.unknown_types) unknown_types[k] += v;
  }
};

}  // namespace ets
