// `ets inspect TRACE... [--json]`: format, iterations with op counts, measured iteration time and gap share.
// --json prints one object per file per line, for scripts (tools/bench_import.py, the dataset collector).
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli.hpp"
#include "ets/predictor.hpp"
#include "ets/tracer.hpp"

namespace ets::cli {
namespace {

int run_inspect(const Args& args) {
  const Tracer::LoadOptions opt = load_options(args);
  const bool json = args.flag("--json");
  std::string all;  // every file is read before anything is printed: a failing later file prints nothing
  for (const std::string& path : args.positional) {
    // The capture's format where the iterations name one (an .etst file keeps its source's), else the file's own:
    // taken from the load itself, since a pipe cannot be read again to detect it.
    std::string detected;
    const std::vector<ExecutionTrace> its = Tracer::load(path, opt, detected);
    const std::string format =
        its.empty() || its.front().meta.source_format.empty() ? detected : its.front().meta.source_format;
    std::vector<double> measured;
    for (const auto& t : its)
      if (t.has_measurement()) measured.push_back(t.measured_us);
    const double med = median(measured);
    const std::string device = its.empty() ? "" : its.front().meta.device;
    // The iteration `ets predict` stands the file for (the lower median of an even count, so a real iteration).
    const long long predicted = its.empty() ? -1 : static_cast<long long>(Predictor::representative_iteration(its));
    // A trace without timings (an ET file) has no gap share: 0 would read as "no framework overhead".
    auto share = [](const ExecutionTrace& t) { return t.sum_us() > 0 ? t.gap_share() : std::nan(""); };
    if (json) {
      std::string out = fmt::format("{{\"path\":\"{}\",\"format\":\"{}\",\"device\":{},\"iterations\":[", json_escape(path),
                                    json_escape(format),
                                    device.empty() ? std::string("null") : "\"" + json_escape(device) + "\"");
      for (std::size_t i = 0; i < its.size(); ++i) {
        const auto& t = its[i];
        out += fmt::format("{}{{\"iteration\":{},\"ops\":{},\"measured_us\":{},\"sum_us\":{},\"gap_share\":{}}}",
                           i ? "," : "", t.iteration, t.ops.size(),
                           t.has_measurement() ? json_number(t.measured_us) : "null", json_number(t.sum_us()),
                           json_number(share(t), 6));
      }
      out += fmt::format("],\"median_measured_us\":{},\"predicted_index\":{}}}\n", json_number(med),
                         predicted < 0 ? std::string("null") : std::to_string(predicted));
      all += out;
    } else {
      all += fmt::format("{}\n  format {}, device '{}', {} iteration(s), median measured {}{}\n", path, format,
                             device, its.size(), std::isfinite(med) ? fixed_or_exact(med, 1) + " us" : "n/a",
                             predicted < 0 ? std::string()
                                           : fmt::format(", predict uses iteration {}", its[predicted].iteration));
      all += "  iteration      ops  measured_us       sum_us  gap_share\n";
      for (const auto& t : its)
        all += fmt::format("  {:>9} {:>8} {:>12} {:>12} {:>10}\n", t.iteration, t.ops.size(),
                           t.has_measurement() ? fixed_or_exact(t.measured_us, 1) : "n/a", fixed(t.sum_us(), 1),
                           std::isfinite(share(t)) ? fmt::format("{:.4f}", share(t)) : "n/a");
    }
  }
  std::fputs(all.c_str(), stdout);
  return 0;
}

const Register inspect_cmd{Command{
    "inspect", "show iterations, measured time and gap share of traces",
    Spec{"inspect TRACE... [--json] [--rank N] [--keep-incomplete] [--max-bytes SIZE]",
         {"--json", "--keep-incomplete"},
         {"--rank", "--max-bytes"},
         1,
         {{"--json", "print one JSON object per file, one per line"},
          rank_help(),
          keep_incomplete_help(),
          max_bytes_help()}},
    run_inspect}};

}  // namespace
}  // namespace ets::cli
