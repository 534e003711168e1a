// `ets label PASS... -o OUT`: imports every timing pass of one configuration and writes its labelled iteration.
// The dataset collector (tools/collect/collect.py) calls this once per configuration after its last pass.
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli.hpp"
#include "ets/error.hpp"
#include "ets/labeler.hpp"
#include "ets/trace_file.hpp"
#include "ets/tracer.hpp"

namespace ets::cli {
namespace {

int run_label(const Args& a) {
  const std::string out = a.has("-o") ? a.value("-o") : a.value("--out");
  if (out.empty()) throw std::invalid_argument("missing -o OUT (the labelled .etst.gz to write)");
  refuse_dash_output("-o", out);
  require_etst_output("-o", out);
  Labeler::Options opt;
  opt.disagreement_threshold = number_option(a, "--threshold", opt.disagreement_threshold);
  opt.sum_tolerance = number_option(a, "--tolerance", opt.sum_tolerance);
  if (!(opt.disagreement_threshold >= 0))
    throw std::invalid_argument("--threshold must be >= 0, not '" + a.value("--threshold") + "'");
  if (!(opt.sum_tolerance > 0 && opt.sum_tolerance < 1))
    throw std::invalid_argument("--tolerance must lie in (0, 1), not '" + a.value("--tolerance") + "'");
  // One file twice would pass for two passes that agree perfectly.
  for (std::size_t i = 0; i < a.positional.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (same_file(a.positional[i], a.positional[j]))
        throw std::invalid_argument(a.positional[i] == a.positional[j]
                                        ? "pass '" + a.positional[i] + "' is given twice"
                                        : "passes '" + a.positional[j] + "' and '" + a.positional[i] + "' are one file");
  // The label is written after the passes are read: -o naming one of them would replace a raw measurement.
  for (const auto& pass : a.positional)
    if (same_file(out, pass))
      throw std::invalid_argument("-o '" + out + "' is the pass '" + pass + "': the label would overwrite it");
  // The environment id names the model trained on this label: refused here, before the passes are read, rather
  // than after a training run (ets.train.20).
  require_printable_environment("--environment", a.value("--environment"));
  const std::string per_op = a.value("--per-op", "bracket");
  if (per_op == "pass-median")
    opt.op_statistic = Labeler::OpStatistic::PassMedian;
  else if (per_op == "pooled")
    opt.op_statistic = Labeler::OpStatistic::Pooled;
  else if (per_op != "bracket")
    throw std::invalid_argument("--per-op takes 'bracket', 'pooled' or 'pass-median', got '" + per_op + "'");
  const Labeler labeler(opt);
  const std::string why = detail::unwritable_reason(out, true);  // before the passes are read and labelled
  ETS_CHECK(why.empty(), Errc::io, "ets.etst.1", "cannot write '{}': {}", out, why);

  std::vector<std::vector<ExecutionTrace>> passes;
  passes.reserve(a.positional.size());
  const Tracer::LoadOptions load = load_options(a);  // --max-bytes only: a pass is one rank, complete by design
  for (const auto& path : a.positional) passes.push_back(Tracer::load(path, load));
  Labeler::Result r = labeler.label(passes);

  // Collector-supplied facts override what the source trace said (the raw JSON may come from another exporter).
  TraceMeta& m = r.trace.meta;
  auto set = [&](const char* opt_name, std::string& field) {
    if (a.has(opt_name)) field = a.value(opt_name);
  };
  set("--family", m.family);
  set("--model", m.model);
  set("--optimizer", m.optimizer);
  set("--environment", m.environment);
  set("--device", m.device);
  if (a.has("--batch-size"))
    m.batch_size = integer_option(a, "--batch-size", 0, 0, std::numeric_limits<std::int64_t>::max());
  if (a.has("--id")) m.extra["config_id"] = a.value("--id");
  if (a.has("--split")) m.extra["split"] = a.value("--split");
  write_trace_file(out, {r.trace});

  if (a.flag("--json")) {
    std::string pm;
    for (std::size_t i = 0; i < r.pass_median_us.size(); ++i)
      pm += fmt::format("{}{}", i ? "," : "", json_number(r.pass_median_us[i]));
    std::printf("{\"out\":\"%s\",\"ops\":%zu,\"measured_us\":%s,\"sum_us\":%s,\"pass_median_us\":[%s],"
                "\"disagreement\":%s,\"disagrees\":%s,\"sum_discrepancy\":%s,\"gap_share\":%s}\n",
                json_escape(out).c_str(), r.trace.ops.size(), json_number(r.trace.measured_us).c_str(),
                json_number(r.trace.sum_us()).c_str(), pm.c_str(), json_number(r.disagreement, 5).c_str(),
                r.disagrees ? "true" : "false", json_number(r.sum_discrepancy, 5).c_str(),
                json_number(r.trace.gap_share(), 5).c_str());
  } else {
    std::printf("%s: %zu ops, label %.1f us (sum of op labels %+.2f%%), %zu passes, disagreement %.1f%%%s\n",
                out.c_str(), r.trace.ops.size(), r.trace.measured_us, 100 * r.sum_discrepancy,
                r.pass_median_us.size(), 100 * r.disagreement, r.disagrees ? " (flagged)" : "");
  }
  return 0;
}

const Register label_cmd{Command{
    "label", "label one configuration from its timing passes (dataset collection)",
    Spec{"label PASS... -o OUT [--threshold 0.10] [--tolerance 0.03] [--per-op bracket|pooled|pass-median] [--id ID] [--split S] [--family F] "
         "[--model M] [--batch-size N] [--optimizer O] [--environment E] [--device D] [--max-bytes SIZE] [--json]",
         {"--json"},
         {"-o", "--out", "--threshold", "--tolerance", "--per-op", "--id", "--split", "--family", "--model", "--batch-size",
          "--optimizer", "--environment", "--device", "--max-bytes"},
         1,
         {{"-o, --out OUT", "labelled trace to write: OUT.etst, or OUT.etst.gz gzip-compressed (required)"},
          {"--threshold X",
           "flag passes as disagreeing when their median periods differ by more (max/min - 1) (default 0.10)"},
          {"--tolerance X", "max |sum of op labels - label| / label, else error ets.label.4; in (0, 1) (default 0.03)"},
          {"--per-op STAT",
           "op labels: bracket (means adding up to the label), pooled or pass-median (medians) (default bracket)"},
          {"--id ID", "configuration id, stored as the trace's config_id"},
          {"--split S", "dataset split the configuration belongs to, stored in the trace"},
          {"--family F", "model family (default: the first pass's)"},
          {"--model M", "model name (default: the first pass's)"},
          {"--batch-size N", "batch size (default: the first pass's)"},
          {"--optimizer O", "optimizer (default: the first pass's)"},
          {"--environment E", "hardware environment (default: the first pass's)"},
          {"--device D", "device (default: the first pass's)"},
          max_bytes_help(),
          {"--json", "print the result as one JSON object"}}},
    run_label}};

}  // namespace
}  // namespace ets::cli
