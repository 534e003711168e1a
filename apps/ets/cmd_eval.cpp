// `ets eval --model M --data DIR --split test [--baselines] [--json]`: iteration-level MRE / RMSE of ETS (and of the
// baselines, trained on DIR's train split and tuned on its val split), per family, per op count, per phase.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cli.hpp"
#include "ets/aggregator.hpp"
#include "ets/baseline.hpp"
#include "ets/dataset_split.hpp"
#include "ets/error.hpp"
#include "ets/evaluator.hpp"
#include "ets/feature_spec.hpp"
#include "ets/model_file.hpp"
#include "ets/prediction.hpp"
#include "ets/trace.hpp"

namespace ets::cli {
namespace {

std::string num(double v) { return std::isfinite(v) ? fmt::format("{:.6g}", v) : "null"; }

std::string metrics_json(const Evaluator::Metrics& m) {
  return fmt::format("{{\"mre\":{},\"rmse_ms\":{},\"bias\":{},\"n\":{}}}", num(m.mre), num(m.rmse_ms), num(m.bias),
                     m.n);
}

// One row per trace: what tools/plot_eval.py draws (predicted vs measured per method).
void write_predictions(const std::string& path, const std::vector<ExecutionTrace>& traces,
                       const std::vector<Evaluator::Method>& methods) {
  std::string csv = "trace,family,ops,measured_us";
  for (const auto& m : methods) csv += "," + m.name + "_us";
  csv += "\n";
  for (std::size_t i = 0; i < traces.size(); ++i) {
    const auto& t = traces[i];
    // The configuration id names one trace; the model name is shared by a whole family.
    const auto id = t.meta.extra.find("config_id");
    const std::string& name = id != t.meta.extra.end() && !id->second.empty() ? id->second
                              : t.meta.model.empty()                        ? t.meta.source_path
                                                                            : t.meta.model;
    csv += fmt::format("{},{},{},{}", csv_field(name), csv_field(t.meta.family), t.ops.size(),
                       num(Evaluator::truth_us(t)));
    for (const auto& m : methods) csv += "," + num(m.predicted_us[i]);
    csv += "\n";
  }
  // streamed into a pipe or device; else a temporary beside the (symlink-resolved) target, renamed into place
  write_output(path, csv);
}

// One row per family, op type and phase: what the labels and ETS give those ops (Evaluator::by_op_type).
void write_op_types(const std::string& path, const std::vector<Evaluator::OpTypeRow>& rows) {
  std::string csv = "family,type,phase,ops,measured_time_us,measured_gap_us,predicted_time_us,predicted_gap_us,"
                    "family_measured_us\n";
  for (const auto& r : rows)
    csv += fmt::format("{},{},{},{},{},{},{},{},{}\n", csv_field(r.family), csv_field(r.type), phase_name(r.phase),
                       r.ops, num(r.measured_time_us), num(r.measured_gap_us), num(r.predicted_time_us),
                       num(r.predicted_gap_us), num(r.family_truth_us));
  write_output(path, csv);
}

int run_eval(const Args& a) {
  const std::string model_path = a.value("--model"), data = a.value("--data"), split = a.value("--split", "test");
  if (model_path.empty() || data.empty()) throw std::invalid_argument("needs --model M and --data DIR");
  const int threads = static_cast<int>(integer_option(a, "--threads", 0, 0, kMaxThreads));
  const std::uint64_t max_bytes = size_option(a, "--max-bytes", default_max_trace_bytes());  // per dataset file
  const bool json = a.flag("--json");
  const std::string train_split = a.value("--train-split", "train"), val_split = a.value("--val-split", "val");
  // "" would read DIR/traces itself (no trace files): "holds no trace" would hide the typo
  for (const char* o : {"--split", "--train-split", "--val-split"})
    if (a.has(o) && a.value(o).empty()) throw std::invalid_argument(std::string(o) + " needs a split name");
  // Baselines tuned or trained on the evaluated traces would be scored on what they were fitted to. Compared as
  // directories: "test/" or "traces/test" is the split "test".
  if (a.flag("--baselines") && (same_split(data, train_split, split) || same_split(data, val_split, split)))
    throw std::invalid_argument("--split '" + split + "' must differ from --train-split '" + train_split +
                                "' and --val-split '" + val_split + "'");
  // A scale fitted on the evaluated traces would be tuned on test.
  const bool val_scaled = a.flag("--val-scaled");
  if (val_scaled && same_split(data, val_split, split))
    throw std::invalid_argument("--val-scaled: --split '" + split + "' must differ from --val-split '" + val_split +
                                "'");
  Aggregator::Options aggregation;
  const std::string agg = a.value("--aggregate", "mean");
  if (agg == "nearest") aggregation.overlap_average = false;
  else if (agg != "mean") throw std::invalid_argument("--aggregate takes mean or nearest, not '" + agg + "'");
  // The predictions file comes after minutes of baseline fitting: an unwritable one is refused first.
  if (a.has("--predictions") && a.has("--op-types") && same_file(a.value("--predictions"), a.value("--op-types")))
    throw std::invalid_argument("--predictions and --op-types name the same file '" + a.value("--op-types") +
                                "': one would overwrite the other");
  for (const char* out : {"--predictions", "--op-types"}) {
    if (!a.has(out)) continue;
    refuse_dash_output(out, a.value(out));
    // written after the evaluation: a typo naming the model would replace it by a CSV
    if (same_file(a.value(out), model_path))
      throw std::invalid_argument(std::string(out) + " '" + a.value(out) + "' is the --model file: it would be overwritten");
    // nor may it replace part of the dataset being read: a trace of DIR/traces, or a file eval reads beside them
    if (inside_dataset(a.value(out), data, {split, train_split, val_split}))
      throw std::invalid_argument(std::string(out) + " '" + a.value(out) + "' lies in the dataset --data " + data +
                                  " (its traces or its manifest): it would be overwritten");
    const std::string why = detail::unwritable_reason(a.value(out), true);
    ETS_CHECK(why.empty(), Errc::io, "ets.cli.1", "cannot write {} to '{}': {}", out, a.value(out), why);
  }
  const ModelFile model = load_model(model_path);
  // A bare network cannot encode traces; found out here, not as a "truncated feature spec" after loading the split.
  ETS_CHECK(!model.encoder_state.empty(), Errc::shape, "ets.predict.6",
            "model '{}' carries no encoder state (a bare network, e.g. exported without --encoder-from): it cannot "
            "encode traces", model_path);
  const auto test = DatasetSplit::load(data, split, threads, max_bytes);
  std::size_t labelled = 0;
  for (const auto& t : test.traces) labelled += Evaluator::scorable(t);
  ETS_CHECK(labelled > 0, Errc::invalid_argument, "ets.eval.4",
            "split '{}' of '{}' holds no scorable trace (one with ops and a measured or labelled iteration time; {} "
            "traces): nothing to evaluate", split, data, test.traces.size());

  // A model predicts for its own hardware: traces measured elsewhere are scored, but the user should know.
  std::size_t elsewhere = 0;
  std::string example;
  for (const auto& t : test.traces)
    if (!measured_on_model_hardware(t, model.hardware_env)) {
      ++elsewhere;
      example = measured_hardware(t);
    }
  if (elsewhere)
    std::fprintf(stderr,
                 "ets eval: warning: %zu of %zu traces were measured on other hardware than the model's '%s' (e.g. "
                 "on %s): their errors are not the model's\n",
                 elsewhere, test.traces.size(), model.hardware_env.c_str(), example.c_str());

  // Read (and checked: ets.eval.3 / .8) before minutes of prediction and baseline fitting.
  const Evaluator::Retest retest = Evaluator::retest(data + "/retest.json", test.traces, max_bytes);
  std::vector<Evaluator::Method> methods;
  const std::vector<Prediction> ets_pred = Evaluator::predict(model, test.traces, threads, aggregation);
  methods.push_back(Evaluator::method("ets", test.traces, ets_pred));
  DatasetSplit val;
  if (a.flag("--baselines") || val_scaled) val = DatasetSplit::load(data, val_split, threads, max_bytes);
  // Per method, the median val label / prediction ratio (--val-scaled).
  std::vector<double> scales;
  auto val_scale = [&](const std::vector<double>& val_pred) {
    std::vector<double> r;
    for (std::size_t i = 0; i < val.traces.size(); ++i)
      if (Evaluator::scorable(val.traces[i]) && val_pred[i] > 0 && std::isfinite(val_pred[i]))
        r.push_back(Evaluator::truth_us(val.traces[i]) / val_pred[i]);
    ETS_CHECK(!r.empty(), Errc::invalid_argument, "ets.eval.4",
              "split '{}' of '{}' holds no trace with a measured or labelled iteration time and a positive prediction "
              "({} traces): nothing to fit --val-scaled on", val_split, data, val.traces.size());
    return median(std::move(r));
  };
  if (val_scaled) {
    std::vector<double> vp;
    for (const auto& p : Evaluator::predict(model, val.traces, threads, aggregation)) vp.push_back(p.iteration_us);
    scales.push_back(val_scale(vp));
  }
  if (a.flag("--baselines")) {
    const auto train = DatasetSplit::load(data, train_split, threads, max_bytes);
    const FeatureSpec spec = FeatureSpec::deserialize(model.encoder_state);
    for (auto kind : Baseline::all_kinds()) {
      if (!json) std::fprintf(stderr, "ets eval: training baseline %s ...\n", Baseline::kind_name(kind));
      const Baseline b = Baseline::fit(kind, spec, train.traces, val.traces);
      std::vector<double> pred;
      for (const auto& t : test.traces) pred.push_back(b.predict(t));
      methods.push_back(Evaluator::method(b.name(), test.traces, pred));
      if (val_scaled) {
        std::vector<double> vp;
        for (const auto& t : val.traces) vp.push_back(b.predict(t));
        scales.push_back(val_scale(vp));
      }
    }
  }
  // The same predictions times each method's val scale: how far each is from the test labels once its overall
  // bias, which one factor from val could remove, is taken out.
  std::vector<Evaluator::Metrics> scaled;
  if (val_scaled) {
    std::vector<double> truth;
    // only scorable traces, as in every other table (a labelled iteration without ops would count as a 100% error)
    for (const auto& t : test.traces)
      truth.push_back(Evaluator::scorable(t) ? Evaluator::truth_us(t) : std::numeric_limits<double>::quiet_NaN());
    for (std::size_t i = 0; i < methods.size(); ++i) {
      std::vector<double> p = methods[i].predicted_us;
      for (double& x : p) x *= scales[i];
      scaled.push_back(Evaluator::metrics(p, truth));
    }
  }
  std::size_t noise_n = 0;
  const double noise = Evaluator::noise_floor(test.traces, &noise_n);
  if (a.has("--predictions")) write_predictions(a.value("--predictions"), test.traces, methods);
  if (a.has("--op-types")) write_op_types(a.value("--op-types"), Evaluator::by_op_type(test.traces, ets_pred));

  if (json) {
    std::string s = "{\"methods\":{";
    for (std::size_t i = 0; i < methods.size(); ++i)
      s += fmt::format("{}\"{}\":{}", i ? "," : "", methods[i].name, metrics_json(methods[i].all));
    s += fmt::format("}},\"noise_floor_mre\":{},\"noise_floor_n\":{},\"noise_floor_retest_mre\":{},"
                     "\"noise_floor_retest_n\":{},\"noise_floor_retest_bound\":{},\"split\":\"{}\",\"traces\":{},"
                     "\"model\":\"{}\"",
                     noise >= 0 ? num(noise) : "null", noise_n, retest.n ? num(retest.mre) : "null", retest.n,
                     retest.n ? num(retest.predictor_bound) : "null",
                     json_escape(split), test.traces.size(), json_escape(model_path));
    s += ",\"by_family\":{";
    bool first = true;
    for (const auto& [fam, _] : methods[0].by_family) {
      s += fmt::format("{}\"{}\":{{", first ? "" : ",", json_escape(fam));
      for (std::size_t i = 0; i < methods.size(); ++i)
        s += fmt::format("{}\"{}\":{}", i ? "," : "", methods[i].name, metrics_json(methods[i].by_family.at(fam)));
      s += "}";
      first = false;
    }
    // Buckets are the same for every method: they depend on the traces only.
    auto buckets = [&](const char* key, std::vector<std::pair<std::string, Evaluator::Metrics>> Evaluator::Method::*by) {
      s += fmt::format("}},\"{}\":{{", key);
      for (std::size_t b = 0; b < (methods[0].*by).size(); ++b) {
        s += fmt::format("{}\"{}\":{{", b ? "," : "", (methods[0].*by)[b].first);
        for (std::size_t i = 0; i < methods.size(); ++i)
          s += fmt::format("{}\"{}\":{}", i ? "," : "", methods[i].name, metrics_json((methods[i].*by)[b].second));
        s += "}";
      }
    };
    buckets("by_ops", &Evaluator::Method::by_ops);
    buckets("by_disagreement", &Evaluator::Method::by_disagreement);
    const auto& ph = methods[0].by_phase;
    s += fmt::format("}},\"ets_phase_split\":{{\"forward\":{},\"backward\":{},\"update\":{}}}", metrics_json(ph[0]),
                     metrics_json(ph[1]), metrics_json(ph[2]));
    if (val_scaled) {
      s += fmt::format(",\"val_scaled\":{{\"split\":\"{}\"", json_escape(val_split));
      for (std::size_t i = 0; i < methods.size(); ++i) {
        std::string m = metrics_json(scaled[i]);  // {"mre":…}: the scale goes in front of its fields
        s += fmt::format(",\"{}\":{{\"scale\":{},{}", methods[i].name, num(scales[i]), m.substr(1));
      }
      s += "}";
    }
    s += "}";
    std::printf("%s\n", s.c_str());
    return 0;
  }

  std::printf("model %s on split '%s': %zu traces; noise floor %s\n\n", model_path.c_str(), split.c_str(),
              test.traces.size(),
              noise >= 0 ? fmt::format("{:.2f}% (single-pass deviation, {} traces)", 100 * noise, noise_n).c_str()
                         : "unknown (traces carry no label.single_pass_deviation)");
  if (retest.n)
    std::printf("test-retest noise floor %.2f%% (%zu of these traces re-collected in another run);\n"
                "no predictor of the configuration alone can average below %.2f%% against these labels\n\n",
                100 * retest.mre, retest.n, 100 * retest.predictor_bound);
  std::printf("%-12s %9s %10s %9s %6s\n", "method", "MRE", "RMSE(ms)", "bias", "n");
  for (const auto& m : methods)
    std::printf("%-12s %8.2f%% %10.3f %+8.2f%% %6zu\n", m.name.c_str(), 100 * m.all.mre, m.all.rmse_ms, 100 * m.all.bias,
                m.all.n);
  using Rows = std::vector<std::pair<std::string, std::vector<Evaluator::Metrics>>>;
  auto table = [&](const char* title, const Rows& rows, double Evaluator::Metrics::*field, const char* format) {
    std::printf("\n%-16s %5s", title, "n");
    for (const auto& m : methods) std::printf(" %11s", m.name.c_str());
    std::printf("\n");
    for (const auto& [k, ms] : rows) {
      std::printf("%-16s %5zu", k.c_str(), ms[0].n);
      for (const auto& m : ms) std::printf(format, 100 * (m.*field));
      std::printf("\n");
    }
  };
  auto rows = [&](std::vector<std::pair<std::string, Evaluator::Metrics>> Evaluator::Method::*by) {
    Rows out;
    for (std::size_t b = 0; b < (methods[0].*by).size(); ++b) {
      std::vector<Evaluator::Metrics> v;
      for (const auto& m : methods) v.push_back((m.*by)[b].second);
      out.emplace_back((methods[0].*by)[b].first, v);
    }
    return out;
  };
  Rows fam;
  for (const auto& [f, _] : methods[0].by_family) {
    std::vector<Evaluator::Metrics> v;
    for (const auto& m : methods) v.push_back(m.by_family.at(f));
    fam.emplace_back(f, v);
  }
  const char* pct = " %10.2f%%";
  table("family (MRE)", fam, &Evaluator::Metrics::mre, pct);
  table("ops (MRE)", rows(&Evaluator::Method::by_ops), &Evaluator::Metrics::mre, pct);
  if (!methods[0].by_disagreement.empty()) {
    // Whether the error follows the labels' own noise: passes that disagree mean a noisier label.
    const Rows dis = rows(&Evaluator::Method::by_disagreement);
    table("disagree (MRE)", dis, &Evaluator::Metrics::mre, pct);
    table("disagree (bias)", dis, &Evaluator::Metrics::bias, " %+10.2f%%");
  }
  if (val_scaled) {
    std::printf("\nscaled by val (median label / prediction on '%s', one factor per method)\n", val_split.c_str());
    std::printf("%-12s %9s %9s %10s %9s\n", "method", "scale", "MRE", "RMSE(ms)", "bias");
    for (std::size_t i = 0; i < methods.size(); ++i)
      std::printf("%-12s %9.4f %8.2f%% %10.3f %+8.2f%%\n", methods[i].name.c_str(), scales[i], 100 * scaled[i].mre,
                  scaled[i].rmse_ms, 100 * scaled[i].bias);
  }
  const auto& ph = methods[0].by_phase;
  std::printf("\nets phase split (MRE of Σ(time+gap) per phase): forward %.2f%%, backward %.2f%%, update %.2f%%\n",
              100 * ph[0].mre, 100 * ph[1].mre, 100 * ph[2].mre);
  return 0;
}

const Register eval_cmd{Command{
    "eval", "evaluate a model and baselines on a dataset split",
    Spec{"eval --model M --data DIR [--split test] [--baselines] [--val-scaled] [--json] [--train-split S] "
         "[--val-split S] [--threads T] [--aggregate mean|nearest] [--predictions OUT.csv] [--op-types OUT.csv] "
         "[--max-bytes SIZE]",
         {"--baselines", "--val-scaled", "--json"},
         {"--model", "--data", "--split", "--train-split", "--val-split", "--threads", "--aggregate", "--predictions",
          "--op-types", "--max-bytes"},
         0,
         {{"--model M", "model (.etsm) to evaluate (required)"},
          {"--data DIR", "dataset directory (required)"},
          {"--split S", "split of DIR to evaluate on (default test)"},
          {"--baselines", "also score the baselines, trained on --train-split and tuned on --val-split"},
          {"--val-scaled", "also score each method times one factor, its median label / prediction on --val-split"},
          {"--json", "print one JSON object instead of the tables"},
          {"--train-split S", "split the baselines train on; must differ from --split (default train)"},
          {"--val-split S", "split the baselines are tuned on; must differ from --split (default val)"},
          {"--threads T", "threads for loading and predicting (default 0: the CPUs this process may use)"},
          {"--aggregate mean|nearest",
           "per op: average the overlapping windows, or take the nearest-centre one (default mean)"},
          {"--predictions OUT.csv", "also write one row per trace: measured and each method's predicted time"},
          {"--op-types OUT.csv",
           "also write one row per family, op type and phase: measured and ETS-predicted time and gap, summed"},
          max_bytes_help()},
         {},
         0},  // no positional argument: a stray word is a usage error, not dropped
    run_eval}};

}  // namespace
}  // namespace ets::cli
