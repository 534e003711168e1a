// Shared rule of every ETS fuzz target: hostile bytes may only end in ets::Error; any other exception, crash,
// leak or UB is a finding. Imported traces must also hold the invariants the encoder relies on, and survive the
// canonical trace file (what `ets convert` writes) unchanged.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "ets/error.hpp"
#include "ets/trace.hpp"
#include "ets/trace_file.hpp"
#include "import/importers.hpp"

namespace ets_fuzz {

// A documented error id is the only acceptable failure; an id outside "ets." means a malformed throw site.
inline void check_error(const ets::Error& e) {
  if (e.id().rfind("ets.", 0) != 0) {
    std::fprintf(stderr, "ets::Error with malformed id '%s': %s\n", e.id().c_str(), e.what());
    std::abort();
  }
}

[[noreturn]] inline void finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "%s: %s\n", what, detail.c_str());
  std::abort();
}

// Timings are what the model consumes: a NaN or infinite time/gap would poison every prediction downstream. Every
// trace must also be one `ets convert` can write and read back as it was: the writer refuses what an importer should
// never produce (a negative time, a non-finite hyper-parameter, a phase out of range: ets.etst.7), and accepts all
// else but strings that are not UTF-8 (ets.etst.8), which hostile bytes may leave in names.
inline void check_traces(const std::vector<ets::ExecutionTrace>& traces) {
  for (const auto& t : traces)
    for (const auto& op : t.ops)
      if (!std::isfinite(op.time_us) || !std::isfinite(op.gap_us))
        finding("an op has a non-finite time or gap",
                op.name + ": " + std::to_string(op.time_us) + " / " + std::to_string(op.gap_us));
  std::string text;
  try {
    text = ets::serialize_traces(traces);
  } catch (const ets::Error& e) {
    if (e.id() == "ets.etst.8") return;
    finding("an imported trace cannot be written as an ets-trace file", e.what());
  }
  ets::import::Options all;
  all.keep_incomplete = true;
  std::vector<ets::ExecutionTrace> back;
  try {
    back = ets::import::read_ets_trace(text, "round-trip", all);
  } catch (const ets::Error& e) {
    finding("the ets-trace file written from an imported trace cannot be read back", e.what());
  }
  if (back.size() != traces.size())
    finding("the ets-trace round trip changed the number of iterations",
            std::to_string(traces.size()) + " -> " + std::to_string(back.size()));
  for (std::size_t i = 0; i < traces.size(); ++i)
    if (!(back[i] == traces[i])) finding("the ets-trace round trip changed iteration", std::to_string(i));
}

// Readers of timed captures (Kineto, Nsight): Σ(time + gap) of an iteration is the distance to the next one's start,
// by construction (docs/trace-format.md), where the next step is its successor: not for a step whose training
// thread ran no op, which comes back without ops (or, where another step has ops, not at all: the iteration before
// it ends at its own step's end, and the numbers of the two returned around it are not consecutive).
inline void check_periods(const std::vector<ets::ExecutionTrace>& traces) {
  for (std::size_t i = 0; i + 1 < traces.size(); ++i) {
    if (traces[i].ops.empty() || traces[i + 1].ops.empty()) continue;
    if (traces[i + 1].iteration != traces[i].iteration + 1) continue;
    const double period = traces[i + 1].start_us - traces[i].start_us, sum = traces[i].sum_us();
    if (!(std::fabs(sum - period) <= 1e-6 * std::max(1.0, std::fabs(period)) + 1e-6))
      finding("an iteration's times and gaps do not add up to its period",
              "iteration " + std::to_string(i) + ": " + std::to_string(sum) + " us, period " + std::to_string(period) +
                  " us");
  }
}

}  // namespace ets_fuzz
