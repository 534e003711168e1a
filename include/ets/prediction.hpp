// Prediction: what ETS answers for one trace — the iteration time, an interval, and the per-op and
// per-phase breakdown behind it. Produced by Aggregator from per-window model outputs.
#pragma once

#include <cstdint>
#include <vector>

#include "ets/trace.hpp"

namespace ets {

struct Prediction {
  /// One op's share, in µs, after merging the windows that cover it.
  struct Op {
    double time_us = 0.0;
    double gap_us = 0.0;
    double lo_us = 0.0;  ///< smallest (time + gap) any single covering window predicted
    double hi_us = 0.0;  ///< largest (time + gap) any single covering window predicted
    Phase phase = Phase::Forward;
    int windows = 0;        ///< covering windows (predictions merged)
    bool unknown = false;   ///< type not in the fitted vocabulary
  };

  double iteration_us = 0.0;  ///< Σ(time + gap) over ops
  double lo_us = 0.0;         ///< interval from the spread of overlapping windows (see docs/concepts.md)
  double hi_us = 0.0;
  double time_us = 0.0;       ///< Σ time (operator execution)
  double gap_us = 0.0;        ///< Σ gap (framework overhead)
  double forward_us = 0.0;    ///< Σ(time + gap) per phase
  double backward_us = 0.0;
  double update_us = 0.0;
  std::int64_t op_count = 0;
  std::int64_t unknown_ops = 0;
  std::vector<Op> ops;        ///< in trace order
};

}  // namespace ets
