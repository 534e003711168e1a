// DatasetSplit: the labelled traces of one split (train / val / test) of a dataset directory written by
// tools/collect (DIR/traces/<split>/<config>.etst.gz, manifest in DIR/manifest.json; see docs/dataset.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ets/trace.hpp"

namespace ets {

/// Compiled library only (ets::ets).
struct DatasetSplit {
  std::string name;
  std::vector<std::string> files;     ///< sorted, so loading order (and so training) is deterministic
  std::vector<ExecutionTrace> traces; ///< every iteration of every file, in file order

  /// Trace files of a split: DIR/traces/<split>/ when it exists, else DIR/<split>/ (*.etst, *.etst.gz).
  /// ets.eval.1 when neither directory exists; ets.eval.5 when it holds both x.etst and x.etst.gz (one
  /// configuration twice).
  static std::vector<std::string> list(const std::string& dir, const std::string& split);
  /// Loads list(dir, split) with Tracer::load on `threads` threads (0 = the CPUs this process may use). A file that
  /// fails to load throws its own ets::Error naming the file; two files carrying one extra "config_id" are one
  /// configuration twice (ets.eval.5). With DIR/manifest.json (tools/collect), a trace whose
  /// extra "config_id" the manifest assigns to another split is refused (ets.eval.7; an unreadable manifest:
  /// ets.eval.6); splits the manifest does not name are not checked.
  static DatasetSplit load(const std::string& dir, const std::string& split, int threads = 0);
  /// As above, and refuses a trace file (and the manifest) holding more than max_bytes once decompressed
  /// (ets.io.6, naming the file; 0 = no limit, as Tracer::LoadOptions::max_bytes). Training and evaluation read
  /// every file of a split, so a service scoring datasets it did not make sets it (the `ets` tool: --max-bytes).
  static DatasetSplit load(const std::string& dir, const std::string& split, int threads, std::uint64_t max_bytes);
};

}  // namespace ets
