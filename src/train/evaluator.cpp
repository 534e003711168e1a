// Evaluation metrics and the batched ETS prediction path used by `ets eval` and by the trainer's early stopping.
// Truth is always the label; an error is relative to the truth, so over- and under-prediction weigh the same.
#include "ets/evaluator.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>
#include <simdjson.h>

#include "ets/aggregator.hpp"
#include "ets/bilstm_predictor.hpp"
#include "parse_number.hpp"
#include "ets/error.hpp"
#include "ets/feature_spec.hpp"
#include "import/importers.hpp"
#include "import/json_cpu_check.hpp"
#include "train/parallel.hpp"
#include "train/trace_chunks.hpp"

namespace ets {

double Evaluator::truth_us(const ExecutionTrace& t) noexcept {
  if (t.has_measurement()) return t.measured_us;
  // A label sum past a double's range (finite labels of 1e308) is no truth: NaN, which no check of "> 0" passes;
  // as infinity it made every relative error NaN, and so the whole split's MRE.
  const double sum = t.sum_us();
  return std::isfinite(sum) ? sum : std::numeric_limits<double>::quiet_NaN();
}

bool Evaluator::scorable(const ExecutionTrace& t) noexcept {
  const double truth = truth_us(t);
  return !t.ops.empty() && std::isfinite(truth) && truth > 0;
}

std::string Evaluator::ops_bucket(std::size_t ops) {
  if (ops >= 1200) return "1200+";
  const std::size_t lo = ops / 200 * 200;
  return std::to_string(lo) + "-" + std::to_string(lo + 200);
}

namespace {
// A number the labeler wrote into meta.extra (label.*), or NaN when the key is absent or holds no number.
double extra_number(const ExecutionTrace& t, const char* key) {
  double v = std::numeric_limits<double>::quiet_NaN();
  if (const auto it = t.meta.extra.find(key); it != t.meta.extra.end()) ets::detail::parse_double(it->second, v);
  return v;
}

// The family a trace is grouped under: meta.family, "unknown" when it has none.
std::string family_key(const ExecutionTrace& t) { return t.meta.family.empty() ? "unknown" : t.meta.family; }
}  // namespace

std::string Evaluator::disagreement_bucket(double d) {
  if (!std::isfinite(d) || d < 0) return "";
  // Upper bounds inclusive, as the labeler's flag (disagreement > threshold) and card.py's "more than" counts.
  return d <= 0.10 ? "<=10%" : d <= 0.25 ? "10-25%" : d <= 0.50 ? "25-50%" : "50%+";
}

Evaluator::Metrics Evaluator::metrics(const std::vector<double>& pred, const std::vector<double>& truth) {
  ETS_CHECK(pred.size() == truth.size(), Errc::shape, "ets.eval.2", "{} predictions for {} traces", pred.size(),
            truth.size());
  Metrics m;  // NaN until something labelled is scored: 0 would read as a perfect score
  double rel = 0, signed_rel = 0, se = 0;
  for (std::size_t i = 0; i < pred.size(); ++i) {
    if (!(truth[i] > 0) || !std::isfinite(truth[i])) continue;  // unlabelled (or no usable truth): no error
    rel += std::abs(pred[i] - truth[i]) / truth[i];
    signed_rel += (pred[i] - truth[i]) / truth[i];
    se += (pred[i] - truth[i]) * (pred[i] - truth[i]);
    ++m.n;
  }
  if (m.n == 0) return m;
  m.mre = rel / static_cast<double>(m.n);
  m.bias = signed_rel / static_cast<double>(m.n);
  m.rmse_ms = std::sqrt(se / static_cast<double>(m.n)) / 1000.0;
  return m;
}

std::vector<Prediction> Evaluator::predict(const LstmWeights& weights, const WindowEncoder& encoder,
                                           const std::vector<ExecutionTrace>& traces, int threads,
                                           const Aggregator::Options& aggregation) {
  const BiLstmPredictor predictor(weights, Backend::Cpu);
  const Aggregator aggregator(encoder.spec(), aggregation);
  std::vector<Prediction> out(traces.size());
  const int t = std::max(1, std::min<int>(train::resolve_threads(threads), static_cast<int>(traces.size())));
  train::run_on_threads(t, [&](int s) {
    // contiguous chunks of traces, shared round-robin: one batched forward each, bounded memory
    const std::size_t step = static_cast<std::size_t>(t) * train::kChunkTraces;
    for (std::size_t b = static_cast<std::size_t>(s) * train::kChunkTraces; b < traces.size(); b += step) {
      const std::vector<const ExecutionTrace*> ptrs = train::trace_chunk(traces, b);
      const WindowBatch batch = encoder.encode(ptrs);
      const std::vector<float> y = predictor.predict(batch);
      auto preds = aggregator.aggregate_all(batch, y, static_cast<int>(ptrs.size()));
      for (std::size_t i = 0; i < ptrs.size(); ++i) out[b + i] = std::move(preds[i]);
    }
  });
  return out;
}

std::vector<Prediction> Evaluator::predict(const ModelFile& model, const std::vector<ExecutionTrace>& traces,
                                           int threads, const Aggregator::Options& aggregation) {
  const WindowEncoder encoder(FeatureSpec::deserialize(model.encoder_state), model.window_width, model.window_stride);
  return predict(model.weights, encoder, traces, threads, aggregation);
}

Evaluator::Method Evaluator::method(std::string name, const std::vector<ExecutionTrace>& traces,
                                    const std::vector<double>& pred, const std::vector<Prediction>* breakdown) {
  ETS_CHECK(pred.size() == traces.size() && (!breakdown || breakdown->size() == traces.size()), Errc::shape,
            "ets.eval.2", "{} predictions for {} traces", pred.size(), traces.size());
  Method m;
  m.name = std::move(name);
  m.predicted_us = pred;
  // Only scorable traces count, as in validation and --val-scaled: a labelled iteration without ops is predicted
  // as 0 and would add a 100% error to every figure.
  std::vector<double> truth(traces.size());
  for (std::size_t i = 0; i < traces.size(); ++i)
    truth[i] = scorable(traces[i]) ? truth_us(traces[i]) : std::numeric_limits<double>::quiet_NaN();
  m.all = metrics(pred, truth);

  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> fam, ops, dis;
  for (std::size_t i = 0; i < traces.size(); ++i) {
    if (std::isnan(truth[i])) continue;  // not scorable: in no group (nor listed alone)
    const std::string f = family_key(traces[i]);
    fam[f].first.push_back(pred[i]);
    fam[f].second.push_back(truth[i]);
    auto& o = ops[ops_bucket(traces[i].ops.size())];
    o.first.push_back(pred[i]);
    o.second.push_back(truth[i]);
    const std::string k = disagreement_bucket(extra_number(traces[i], "label.disagreement"));
    if (k.empty()) continue;  // not carried, or not a number
    dis[k].first.push_back(pred[i]);
    dis[k].second.push_back(truth[i]);
  }
  for (auto& [k, v] : fam) m.by_family[k] = metrics(v.first, v.second);
  for (std::size_t lo = 0; lo <= 1200; lo += 200) {
    const std::string k = ops_bucket(lo);
    if (ops.count(k)) m.by_ops.emplace_back(k, metrics(ops[k].first, ops[k].second));
  }
  for (double lo : {0.0, 0.20, 0.30, 0.60}) {  // one value inside each bucket, in order
    const std::string k = disagreement_bucket(lo);
    if (dis.count(k)) m.by_disagreement.emplace_back(k, metrics(dis[k].first, dis[k].second));
  }
  if (breakdown) {
    m.has_phases = true;
    for (int p = 0; p < kPhaseCount; ++p) {
      std::vector<double> pp, tt;
      for (std::size_t i = 0; i < traces.size(); ++i) {
        if (std::isnan(truth[i])) continue;  // not scorable: in no table, the phases' included
        double label = 0;
        for (const auto& op : traces[i].ops)
          if (static_cast<int>(op.phase) == p) label += op.time_us + op.gap_us;
        const auto& b = (*breakdown)[i];
        pp.push_back(p == 0 ? b.forward_us : p == 1 ? b.backward_us : b.update_us);
        tt.push_back(label);
      }
      m.by_phase[static_cast<std::size_t>(p)] = metrics(pp, tt);
    }
  }
  return m;
}

Evaluator::Method Evaluator::method(std::string name, const std::vector<ExecutionTrace>& traces,
                                    const std::vector<Prediction>& predictions) {
  std::vector<double> pred;
  for (const auto& p : predictions) pred.push_back(p.iteration_us);
  return method(std::move(name), traces, pred, &predictions);
}

std::vector<Evaluator::OpTypeRow> Evaluator::by_op_type(const std::vector<ExecutionTrace>& traces,
                                                        const std::vector<Prediction>& predictions) {
  ETS_CHECK(predictions.size() == traces.size(), Errc::shape, "ets.eval.2", "{} predictions for {} traces",
            predictions.size(), traces.size());
  std::map<std::tuple<std::string, std::string, int>, OpTypeRow> rows;
  std::map<std::string, double> family_truth;
  for (std::size_t i = 0; i < traces.size(); ++i) {
    const auto& t = traces[i];
    if (!scorable(t)) continue;
    const auto& p = predictions[i];
    ETS_CHECK(p.ops.size() == t.ops.size(), Errc::shape, "ets.eval.2",
              "trace {} has {} ops but its prediction {}", i, t.ops.size(), p.ops.size());
    const std::string f = family_key(t);
    family_truth[f] += truth_us(t);
    for (std::size_t k = 0; k < t.ops.size(); ++k) {
      const auto& op = t.ops[k];
      auto& r = rows[{f, op.name, static_cast<int>(op.phase)}];
      ++r.ops;
      r.measured_time_us += op.time_us;
      r.measured_gap_us += op.gap_us;
      r.predicted_time_us += p.ops[k].time_us;
      r.predicted_gap_us += p.ops[k].gap_us;
    }
  }
  std::vector<OpTypeRow> out;
  for (auto& [key, r] : rows) {
    r.family = std::get<0>(key);
    r.type = std::get<1>(key);
    r.phase = static_cast<Phase>(std::get<2>(key));
    r.family_truth_us = family_truth[r.family];
    out.push_back(std::move(r));
  }
  return out;
}

double Evaluator::noise_floor(const std::vector<ExecutionTrace>& traces, std::size_t* n) {
  double s = 0;
  std::size_t k = 0;
  for (const auto& t : traces) {
    const double v = extra_number(t, "label.single_pass_deviation");
    if (!std::isfinite(v)) continue;
    s += v;
    ++k;
  }
  if (n) *n = k;
  return k ? s / static_cast<double>(k) : -1.0;
}

Evaluator::Retest Evaluator::retest(const std::string& retest_json, const std::vector<ExecutionTrace>& traces) {
  return retest(retest_json, traces, 0);
}

Evaluator::Retest Evaluator::retest(const std::string& retest_json, const std::vector<ExecutionTrace>& traces,
                                    std::uint64_t max_bytes) {
  Retest out;
  std::error_code ec;
  if (!std::filesystem::exists(retest_json, ec)) return out;
  std::unordered_map<std::string, double> again;  // config id -> re-collected iteration label
  // The whole file is validated (the DOM parser reads every value): a malformed retest file is an error, not a
  // noise figure that quietly disappears or is computed from half a file.
  const auto bad = [&](const std::string& why) {
    ETS_THROW(Errc::parse, "ets.eval.3", "'{}' is not a readable retest file ({})", retest_json, why);
  };
  import::require_runnable_json_parser();
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  std::string why;  // a file that cannot be read is not a retest file; one past max_bytes is ets.io.6, as a trace
  const std::string bytes = import::read_dataset_file(retest_json, max_bytes, why);
  if (!why.empty()) bad(why);
  if (const auto err = parser.parse(bytes).get(doc)) bad(simdjson::error_message(err));
  simdjson::dom::object labels;
  if (doc["labels"].get_object().get(labels)) bad("no \"labels\" object");
  // The --tail-steps of the re-collection (absent: 0, as in files from before the tail step). Labels ended one way
  // and retest labels ended the other differ by the time between steps: that would be counted as noise.
  std::int64_t retest_tail = 0;
  if (simdjson::dom::element tail; !doc["tail_steps"].get(tail)) {
    if (tail.get_int64().get(retest_tail) || retest_tail < 0) bad("tail_steps is not a whole number >= 0");
  }
  const std::string retest_tail_text = std::to_string(retest_tail);  // as a label's extra writes it
  for (const auto [key, value] : labels) {
    // A configuration re-collected without a label (card.py writes null) or an entry without one is skipped.
    if (value.is_null()) continue;
    simdjson::dom::object entry;
    if (value.get_object().get(entry)) bad(fmt::format("labels.{} is neither an object nor null", key));
    simdjson::dom::element m;
    if (entry["measured_us"].get(m) || m.is_null()) continue;
    double us = 0;
    if (m.get_double().get(us)) bad(fmt::format("labels.{}.measured_us is neither a number nor null", key));
    if (std::isfinite(us) && us > 0) again[std::string(key)] = us;
  }
  double rel = 0, bound = 0;
  for (const auto& t : traces) {
    const auto id = t.meta.extra.find("config_id");
    if (id == t.meta.extra.end()) continue;
    const auto hit = again.find(id->second);
    const double truth = truth_us(t);
    if (hit == again.end() || !(truth > 0) || !std::isfinite(truth) || !std::isfinite(hit->second)) continue;
    const auto tail_it = t.meta.extra.find("tail_steps");
    const std::string tail = tail_it == t.meta.extra.end() ? "0" : tail_it->second;
    ETS_CHECK(tail == retest_tail_text, Errc::invalid_argument, "ets.eval.8",
              "'{}' was re-collected with --tail-steps {}, the label of {} with {}: the two would differ by the time "
              "between steps, counted as noise; re-collect the retest with the labels' --tail-steps",
              retest_json, retest_tail, id->second, tail);
    const double diff = std::abs(hit->second - truth);
    rel += diff / truth;
    bound += diff / std::max(hit->second, truth);
    ++out.n;
  }
  if (out.n) {
    out.mre = rel / static_cast<double>(out.n);
    out.predictor_bound = 0.5 * bound / static_cast<double>(out.n);
  }
  return out;
}

double Evaluator::mre(const LstmWeights& weights, const WindowEncoder& encoder, const std::vector<ExecutionTrace>& traces,
                      int threads) {
  const auto preds = predict(weights, encoder, traces, threads);
  std::vector<double> p, t;
  for (std::size_t i = 0; i < traces.size(); ++i) {
    p.push_back(preds[i].iteration_us);
    t.push_back(truth_us(traces[i]));
  }
  return metrics(p, t).mre;
}

}  // namespace ets
