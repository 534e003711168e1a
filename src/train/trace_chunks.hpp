// Traces predicted together: one encoded WindowBatch and one batched forward per chunk of traces, so memory stays
// bounded however many traces there are. Evaluator::predict and the trainer's validation cut the same chunks.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "ets/trace.hpp"

namespace ets::train {

inline constexpr std::size_t kChunkTraces = 64;

/// The traces of the chunk starting at `first`: up to kChunkTraces of them, in order.
inline std::vector<const ExecutionTrace*> trace_chunk(const std::vector<ExecutionTrace>& traces, std::size_t first) {
  std::vector<const ExecutionTrace*> ptrs;
  for (std::size_t i = first; i < std::min(traces.size(), first + kChunkTraces); ++i) ptrs.push_back(&traces[i]);
  return ptrs;
}

}  // namespace ets::train
