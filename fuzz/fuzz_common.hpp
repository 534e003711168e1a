// Shared rule of every ETS fuzz target: hostile bytes may only end in ets::Error; any other exception, crash,
// leak or UB is a finding. Imported traces must also hold the invariants the encoder relies on.
#pragma once

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "ets/error.hpp"
#include "ets/trace.hpp"

namespace ets_fuzz {

// A documented error id is the only acceptable failure; an id outside "ets." means a malformed throw site.
inline void check_error(const ets::Error& e) {
  if (e.id().rfind("ets.", 0) != 0) {
    std::fprintf(stderr, "ets::Error with malformed id '%s': %s\n", e.id().c_str(), e.what());
    std::abort();
  }
}

// Timings are what the model consumes: a NaN or infinite time/gap would poison every prediction downstream.
inline void check_traces(const std::vector<ets::ExecutionTrace>& traces) {
  for (const auto& t : traces)
    for (const auto& op : t.ops)
      if (!std::isfinite(op.time_us) || !std::isfinite(op.gap_us)) {
        std::fprintf(stderr, "op '%s' has non-finite time %g / gap %g\n", op.name.c_str(), op.time_us, op.gap_us);
        std::abort();
      }
}

}  // namespace ets_fuzz
