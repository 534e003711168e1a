// Writing ETS's canonical trace file ("ets-trace", .etst / .etst.gz): JSON lines, versioned, exact round trip.
// Reading goes through Tracer::load (or ets::import::read_ets_trace); the format is specified in docs/trace-format.md.
#pragma once

#include <string>
#include <vector>

#include "ets/trace.hpp"

// Both functions live in the compiled library ets::ets (they need zlib); header-only builds cannot call them.
namespace ets {

/// Format version this library writes; readers accept any 1.x file.
inline constexpr int kTraceFileMajor = 1;
inline constexpr int kTraceFileMinor = 0;

/// The whole file content (header, one line per iteration and per op, end line), uncompressed.
/// Throws ets.etst.* when a trace cannot be represented (non-finite or negative time, invalid UTF-8, ...).
std::string serialize_traces(const std::vector<ExecutionTrace>& traces);

/// Writes traces to path, gzip-compressed when path ends in ".gz". Writes a temporary file beside path and
/// renames it, so a failure (bad trace, full disk) never leaves a partial file at path. Throws ets.etst.1 (I/O)
/// and the ids of serialize_traces.
void write_trace_file(const std::string& path, const std::vector<ExecutionTrace>& traces);

}  // namespace ets
