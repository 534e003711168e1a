// ets_bench_import: Kineto JSON import throughput (MB/s of uncompressed JSON, one thread) on one trace file.
// The file is read and gunzipped once; only read_kineto_json (parse + assembly) is timed. tools/bench_import.py drives it.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "ets/error.hpp"
#include "import/importers.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: ets_bench_import TRACE.json[.gz] [REPEATS]\n");
    return 2;
  }
  const std::string path = argv[1];
  int repeats = 5;
  if (argc > 2) {  // a whole number of repeats, nothing else
    char* end = nullptr;
    const long v = std::strtol(argv[2], &end, 10);
    if (end == argv[2] || *end != '\0' || v < 1 || v > 100000) {
      std::fprintf(stderr, "ets_bench_import: REPEATS must be a whole number in 1..100000, not '%s'\n", argv[2]);
      return 2;
    }
    repeats = static_cast<int>(v);
  }
  try {
    const std::string bytes = ets::import::read_file_bytes(path);
    std::vector<double> secs;
    std::size_t iterations = 0, ops = 0;
    for (int r = 0; r < repeats; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      const auto its = ets::import::read_kineto_json(bytes, path, {});
      const auto t1 = std::chrono::steady_clock::now();
      secs.push_back(std::chrono::duration<double>(t1 - t0).count());
      iterations = its.size();
      ops = 0;
      for (const auto& t : its) ops += t.ops.size();
    }
    std::sort(secs.begin(), secs.end());
    const double mb = static_cast<double>(bytes.size()) / 1e6;
    std::printf("{\"path\":\"%s\",\"bytes\":%zu,\"repeats\":%d,\"best_s\":%.6f,\"median_s\":%.6f,"
                "\"best_mb_per_s\":%.1f,\"median_mb_per_s\":%.1f,\"iterations\":%zu,\"ops\":%zu}\n",
                path.c_str(), bytes.size(), repeats, secs.front(), secs[secs.size() / 2], mb / secs.front(),
                mb / secs[secs.size() / 2], iterations, ops);
  } catch (const ets::Error& e) {
    std::fprintf(stderr, "ets_bench_import: %s\n", e.what());
    return 1;
  }
  return 0;
}
