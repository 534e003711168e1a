// cluster_sim: a discrete-event GPU-cluster simulator on the real Philly job list, comparing FIFO / SJF / SRTF / EDF
// schedules driven by oracle, ETS and baseline iteration-time predictions. See docs/scheduling.md for the method.
//
//   cluster_sim predictions --data DIR (--model M.etsm | --train-seconds S) [--split test] --out PRED.csv
//       ETS (ets::Predictor) and the opsum / perop_mlp baselines (ets::Baseline, fitted on DIR's train split, tuned on
//       val) predict one representative iteration of each trace file of the split: job_config,oracle_us,ets_us,...
//   cluster_sim run --jobs philly.csv --predictions PRED.csv [--sample N] [--offset K] [--load L] [--gpus G]
//                   [--seed S] [--seeds K] [--out RESULTS.csv]   (metrics averaged over seeds S..S+K-1)
//   cluster_sim synth-data DIR   (in-tree builds only) a small labelled dataset of synthetic families, for a pilot
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <ets/baseline.hpp>
#include <ets/dataset_split.hpp>
#include <ets/error.hpp>
#include <ets/evaluator.hpp>
#include <ets/feature_spec.hpp>
#include <ets/model_file.hpp>
#include <ets/model_trainer.hpp>
#include <ets/predictor.hpp>
#include <ets/tracer.hpp>

#include "simulate.hpp"

#ifdef ETS_SIM_HAVE_FIXTURES
#include <ets/trace_file.hpp>

#include "train_fixtures.hpp"
#endif

namespace fs = std::filesystem;

namespace {

// ---------------------------------------------------------------- output files
// A result file is found writable before the work that fills it (and nothing is left behind by the check), then
// written whole at the end through a temporary renamed into place: a failed run never leaves half a CSV where a
// later `run --predictions` would read it, nor destroys the previous one. A symlink is followed, so the file it
// names is replaced and the link kept; a pipe or device (`--out >(gzip > r.csv.gz)`, /dev/stdout) is written in place,
// since a temporary cannot be renamed over it.

bool is_stream(const std::string& path) {  // exists and is neither a regular file nor a folder (links followed)
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  return !ec && fs::exists(st) && !fs::is_regular_file(st) && !fs::is_directory(st);
}

// The end of a chain of symlinks (a dangling last link included: the file is created where it points).
std::string link_target(const std::string& path) {
  fs::path p = path;
  std::error_code ec;
  for (int hops = 0; hops < 40 && fs::is_symlink(fs::symlink_status(p, ec)); ++hops) {
    const fs::path to = fs::read_symlink(p, ec);
    if (ec) break;
    p = to.is_absolute() ? to : p.parent_path() / to;
  }
  return p.string();
}

void check_writable(const std::string& out) {
  if (is_stream(out)) return;  // opened once, when written: opening a pipe here would hand its reader an early end
  const std::string path = link_target(out);
  std::error_code ec;
  const bool existed = fs::exists(path, ec);
  const bool ok = std::ofstream(path, std::ios::app).good();
  if (!existed) fs::remove(path, ec);
  ETS_CHECK(ok, ets::Errc::io, "ets.sim.1", "cannot write {}", out);
}

void write_whole(const std::string& out, const std::string& text) {
  if (is_stream(out)) {
    std::ofstream f(out, std::ios::binary);
    f << text;
    f.close();
    ETS_CHECK(!f.fail(), ets::Errc::io, "ets.sim.1", "writing {} failed", out);
    return;
  }
  const std::string path = link_target(out);
  // The temporary gets a name of its own, created exclusively ("x": O_EXCL, which also refuses any symlink there),
  // so neither a second run writing the same output nor a link planted at a predictable name is written through.
  std::string tmp;
  std::FILE* f = nullptr;
  std::random_device rd;
  for (int tries = 0; !f && tries < 16; ++tries) {
    tmp = fmt::format("{}.part.{:08x}{:08x}", path, rd(), rd());
    f = std::fopen(tmp.c_str(), "wbx");
  }
  ETS_CHECK(f != nullptr, ets::Errc::io, "ets.sim.1", "cannot create a temporary beside {}", out);
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  ok = std::fclose(f) == 0 && ok;
  std::error_code ec;
  if (ok) fs::rename(tmp, path, ec);
  if (!ok || ec) {
    fs::remove(tmp, ec);
    ETS_THROW(ets::Errc::io, "ets.sim.1", "writing {} failed", out);
  }
}

// A CSV field as RFC 4180 quotes it (split_csv_line reads it back). The file is read line by line, so a line break
// cannot be carried: a trace whose name holds one is refused before anything is written.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + '"';
}

// ---------------------------------------------------------------- arguments
struct Args {
  std::map<std::string, std::string> v;
  std::string get(const std::string& k, const std::string& d = "") const {
    auto it = v.find(k);
    return it == v.end() ? d : it->second;
  }
  bool has(const std::string& k) const { return v.count(k) != 0; }
};

// A misspelt option must not be silently ignored (the run would use the default), so each command names its own.
Args parse(int argc, char** argv, int from, const std::vector<std::string>& known) {
  Args a;
  for (int i = from; i < argc; ++i) {
    std::string k = argv[i];
    if (k.rfind("--", 0) != 0 || i + 1 >= argc) throw std::invalid_argument("expected --option VALUE at '" + k + "'");
    if (std::find(known.begin(), known.end(), k) == known.end()) throw std::invalid_argument("unknown option " + k);
    a.v[k] = argv[++i];
  }
  return a;
}

// Strict numbers: the whole text must be the number ("12abc" and "90x" are refused, not read as 12 and 90).
bool parse_double(const std::string& s, double& out) {
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0]))) return false;
  char* end = nullptr;
  errno = 0;
  out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && errno != ERANGE;
}

// An option's value: finite and within [lo, hi], a whole number when `whole`; otherwise a usage error naming it.
double option_number(const Args& a, const std::string& name, double fallback, double lo, double hi, bool whole) {
  if (!a.has(name)) return fallback;
  double v = 0;
  const std::string s = a.get(name);
  if (!parse_double(s, v) || !std::isfinite(v) || (whole && v != std::floor(v)) || v < lo || v > hi) {
    char range[64];
    std::snprintf(range, sizeof range, "[%.15g, %.15g]", lo, hi);
    throw std::invalid_argument(name + " takes " + (whole ? "a whole number" : "a number") + " in " + range +
                                ", not '" + s + "'");
  }
  return v;
}

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') cur += '"', ++i;
      else if (c == '"') quoted = false;
      else cur += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else if (c != '\r') {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

// ---------------------------------------------------------------- predictions CSV
struct Config {
  std::string name;
  double oracle_us = 0;
  std::vector<double> pred_us;  // per predictor column
};

struct PredTable {
  std::vector<std::string> predictors;  // column names without _us, e.g. "ets", "opsum"
  std::vector<Config> configs;
};

PredTable read_predictions(const std::string& path) {
  std::ifstream in(path);
  ETS_CHECK(in.good(), ets::Errc::io, "ets.sim.1", "cannot read predictions {}", path);
  std::string line;
  std::getline(in, line);
  const auto head = split_csv_line(line);
  ETS_CHECK(head.size() >= 3 && head[0] == "job_config" && head[1] == "oracle_us", ets::Errc::parse, "ets.sim.2",
            "{}: the header must be job_config,oracle_us,<predictor>_us,...", path);
  PredTable t;
  for (std::size_t c = 2; c < head.size(); ++c) {
    std::string n = head[c];
    if (n.size() > 3 && n.compare(n.size() - 3, 3, "_us") == 0) n.resize(n.size() - 3);
    t.predictors.push_back(n);
  }
  for (std::size_t row = 2; std::getline(in, line); ++row) {
    if (line.empty()) continue;
    const auto f = split_csv_line(line);
    ETS_CHECK(f.size() == head.size(), ets::Errc::parse, "ets.sim.2", "{}:{}: {} fields, the header has {}", path, row,
              f.size(), head.size());
    Config c;
    c.name = f[0];
    std::vector<double> v(f.size() - 1);
    for (std::size_t k = 1; k < f.size(); ++k)
      ETS_CHECK(parse_double(f[k], v[k - 1]) && std::isfinite(v[k - 1]) && v[k - 1] > 0, ets::Errc::parse,
                "ets.sim.2", "{}:{}: {} of '{}' is '{}'; it must be a finite number > 0", path, row, head[k], c.name,
                f[k]);
    c.oracle_us = v[0];
    c.pred_us.assign(v.begin() + 1, v.end());
    t.configs.push_back(std::move(c));
  }
  ETS_CHECK(!t.configs.empty(), ets::Errc::parse, "ets.sim.2", "{}: no configurations", path);
  return t;
}

// ---------------------------------------------------------------- Philly jobs
struct PhillyJob {
  double submit_s = 0, duration_s = 0;
  int gpus = 1;
};

double parse_time(const std::string& s) {  // "2017-10-09 07:01:55" (UTC) → seconds since the epoch
  std::tm tm{};
  if (std::sscanf(s.c_str(), "%d-%d-%d %d:%d:%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
                  &tm.tm_sec) != 6)
    ETS_THROW(ets::Errc::parse, "ets.sim.3", "bad job-list timestamp '{}'", s);
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<double>(timegm(&tm));
}

std::vector<PhillyJob> read_philly(const std::string& path) {
  std::ifstream in(path);
  ETS_CHECK(in.good(), ets::Errc::io, "ets.sim.1", "cannot read job list {}", path);
  std::string line;
  std::getline(in, line);
  const auto head = split_csv_line(line);
  auto col = [&](const char* n) {
    auto it = std::find(head.begin(), head.end(), n);
    ETS_CHECK(it != head.end(), ets::Errc::parse, "ets.sim.3", "{}: no column '{}'", path, n);
    return static_cast<std::size_t>(it - head.begin());
  };
  const std::size_t ct = col("timestamp"), cd = col("duration"), cg = col("num_gpus");
  std::vector<PhillyJob> jobs;
  const std::size_t need = std::max({ct, cd, cg}) + 1;
  for (std::size_t row = 2; std::getline(in, line); ++row) {
    if (line.empty()) continue;
    const auto f = split_csv_line(line);
    ETS_CHECK(f.size() >= need, ets::Errc::parse, "ets.sim.3", "{}:{}: {} fields, the columns need {}", path, row,
              f.size(), need);
    PhillyJob j;
    j.submit_s = parse_time(f[ct]);
    double gpus = 0;
    ETS_CHECK(parse_double(f[cd], j.duration_s) && std::isfinite(j.duration_s) && parse_double(f[cg], gpus) &&
                  gpus == std::floor(gpus) && gpus >= 0 && gpus <= 1e6,
              ets::Errc::parse, "ets.sim.3", "{}:{}: duration '{}' / num_gpus '{}' is not a finite number / whole count",
              path, row, f[cd], f[cg]);
    j.gpus = static_cast<int>(gpus);
    if (j.duration_s > 0 && j.gpus > 0) jobs.push_back(j);  // the trace's failed-to-start jobs: nothing to schedule
  }
  ETS_CHECK(!jobs.empty(), ets::Errc::parse, "ets.sim.3", "{}: no job with a duration > 0 and GPUs > 0", path);
  std::stable_sort(jobs.begin(), jobs.end(), [](const PhillyJob& a, const PhillyJob& b) { return a.submit_s < b.submit_s; });
  return jobs;
}

// ---------------------------------------------------------------- simulation (simulate.hpp)
using cluster_sim::Job;
using cluster_sim::Metrics;
using cluster_sim::Policy;
using cluster_sim::policy_name;
using cluster_sim::simulate;

std::string fmt_load_error(double gpus, double gpu_s, double span_s, double load) {
  char text[320];
  std::snprintf(text, sizeof text,
                "--load %g asks for %.6g GPUs (%.6g GPU-seconds of jobs submitted within %.6g s), more than the 1e6 "
                "cluster_sim simulates; set the cluster size with --gpus G",
                load, gpus, gpu_s, span_s);
  return text;
}

int run_sim(const Args& a) {
  if (!a.has("--jobs") || !a.has("--predictions")) throw std::invalid_argument("run needs --jobs FILE and --predictions FILE");
  // Options first: a bad one is a usage error before any file is read.
  const auto sample = static_cast<std::size_t>(option_number(a, "--sample", 2000, 1, 1e9, true));
  const double offset_arg = option_number(a, "--offset", -1, 0, 1e12, true);
  const auto seed = static_cast<std::uint64_t>(option_number(a, "--seed", 1, 0, 9007199254740991.0, true));
  const double load = option_number(a, "--load", 1.2, 1e-6, 1e6, false);
  const int gpus_arg = static_cast<int>(option_number(a, "--gpus", 0, 1, 1e6, true));
  const int seeds = static_cast<int>(option_number(a, "--seeds", 5, 1, 1000, true));
  const PredTable table = read_predictions(a.get("--predictions"));
  const auto philly = read_philly(a.get("--jobs"));
  // default window: the jobs submitted from the middle of the trace on (steady state, not the first weeks' ramp-up)
  const std::size_t offset = offset_arg >= 0 ? static_cast<std::size_t>(offset_arg) : philly.size() / 2;
  if (offset >= philly.size())
    throw std::invalid_argument("--offset " + std::to_string(offset) + " is beyond the job list's " +
                                std::to_string(philly.size()) + " usable jobs");
  std::vector<PhillyJob> window(philly.begin() + static_cast<std::ptrdiff_t>(offset),
                                philly.begin() + static_cast<std::ptrdiff_t>(std::min(philly.size(), offset + sample)));
  // cluster size: --gpus, or enough for an offered load of --load (GPU-seconds demanded / GPU-seconds available
  // during the submission window), never fewer than the largest job needs
  double gpu_s = 0;
  int max_gpus = 1;
  for (const auto& j : window) {
    gpu_s += j.duration_s * j.gpus;
    max_gpus = std::max(max_gpus, j.gpus);
  }
  const double span = window.back().submit_s - window.front().submit_s;
  // The count --load asks for, as a double: a window of long jobs submitted within seconds can ask for more GPUs than
  // an int holds, which --gpus (up to 1e6) must then set.
  const double for_load = std::ceil(gpu_s / (std::max(span, 1.0) * load));
  if (!a.has("--gpus") && !(for_load <= 1e6))
    throw std::invalid_argument(fmt_load_error(for_load, gpu_s, span, load));
  int gpus = a.has("--gpus") ? gpus_arg : static_cast<int>(for_load);
  if (a.has("--gpus") && gpus < max_gpus)
    throw std::invalid_argument("--gpus " + std::to_string(gpus) + " is fewer than the window's largest job needs (" +
                                std::to_string(max_gpus) + ")");
  gpus = std::max(gpus, max_gpus);
  // every seed re-draws the configuration of each job and its deadline; metrics are averaged over seeds
  auto draw = [&](std::uint64_t sd) {
    std::mt19937_64 rng(sd);
    std::uniform_int_distribution<std::size_t> pick(0, table.configs.size() - 1);
    std::uniform_real_distribution<double> slack(1.2, 3.0);
    std::vector<Job> jobs;
    for (const auto& p : window) {
      Job j;
      j.submit = p.submit_s;
      j.duration = p.duration_s;  // = iterations × true iteration time, iterations = duration / oracle_us
      j.gpus = p.gpus;
      j.config = pick(rng);
      j.deadline = p.submit_s + slack(rng) * p.duration_s;
      jobs.push_back(j);
    }
    return jobs;
  };

  // The output file is checked before anything is printed, so a bad --out fails the run at once.
  const std::string out_path = a.get("--out");
  std::ostringstream out;
  if (!out_path.empty()) {
    check_writable(out_path);
    out << "policy,predictor,avg_jct_h,p99_jct_h,makespan_h,total_tardiness_h,mean_tardiness_h,deadline_misses,preemptions\n";
  }
  std::printf("%zu Philly jobs (rows %zu..%zu, submitted %.1f h), %d GPUs (offered load %.2f), %zu configurations, "
              "seeds %llu..%llu\n",
              window.size(), offset, offset + window.size() - 1, span / 3600, gpus, gpu_s / (std::max(span, 1.0) * gpus),
              table.configs.size(), static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(seed + static_cast<std::uint64_t>(seeds) - 1));
  // predictors: oracle, each CSV column, and ETS with observe() feedback (the Predictor's shrunk estimator: after
  // n measured iterations the factor is (true / predicted)^(n / (n + 2)); one measurement per minute of running)
  struct Pred {
    std::string name;
    int column;  // -1: oracle, -2: ets+observe
  };
  std::vector<Pred> preds{{"oracle", -1}};
  int ets_col = -1;
  for (std::size_t c = 0; c < table.predictors.size(); ++c) {
    preds.push_back({table.predictors[c], static_cast<int>(c)});
    if (table.predictors[c] == "ets") ets_col = static_cast<int>(c);
  }
  if (ets_col >= 0) preds.push_back({"ets+observe", -2});

  std::printf("\n| policy | predictor | avg JCT (h) | p99 JCT (h) | makespan (h) | total tardiness (h) | mean tardiness (h) | deadline misses |\n");
  std::printf("|---|---|---:|---:|---:|---:|---:|---:|\n");
  std::vector<std::vector<Job>> drawn;
  for (int k = 0; k < seeds; ++k) drawn.push_back(draw(seed + static_cast<std::uint64_t>(k)));
  for (Policy pol : {Policy::Fifo, Policy::Sjf, Policy::Srtf, Policy::Edf, Policy::EdfPlain}) {
    for (const auto& pr : preds) {
      Metrics m;
      double misses = 0, preempt = 0;
      for (const auto& jobs : drawn) {
        auto ratio = [&](std::size_t j, double attained) -> double {
          const Config& c = table.configs[jobs[j].config];
          if (pr.column == -1) return 1.0;
          if (pr.column >= 0) return c.pred_us[static_cast<std::size_t>(pr.column)] / c.oracle_us;
          const double r0 = c.pred_us[static_cast<std::size_t>(ets_col)] / c.oracle_us;
          const double nobs = std::min(std::floor(attained / 60.0), 1e6);
          return std::pow(r0, 1.0 - nobs / (nobs + 2.0));  // corrected / true = r0 · (1/r0)^(n/(n+2))
        };
        const Metrics s = simulate(jobs, gpus, pol, ratio);
        m.avg_jct_h += s.avg_jct_h / seeds;
        m.p99_jct_h += s.p99_jct_h / seeds;
        m.makespan_h += s.makespan_h / seeds;
        m.total_tardiness_h += s.total_tardiness_h / seeds;
        m.mean_tardiness_h += s.mean_tardiness_h / seeds;
        misses += static_cast<double>(s.misses) / seeds;
        preempt += static_cast<double>(s.preemptions) / seeds;
      }
      std::printf("| %s | %s | %.4f | %.3f | %.2f | %.2f | %.4f | %.1f |\n", policy_name(pol), pr.name.c_str(),
                  m.avg_jct_h, m.p99_jct_h, m.makespan_h, m.total_tardiness_h, m.mean_tardiness_h, misses);
      std::fflush(stdout);
      if (!out_path.empty())
        out << policy_name(pol) << ',' << pr.name << ',' << m.avg_jct_h << ',' << m.p99_jct_h << ',' << m.makespan_h << ','
            << m.total_tardiness_h << ',' << m.mean_tardiness_h << ',' << misses << ',' << preempt << '\n';
    }
  }
  // prediction error of each predictor over the configurations, for the table's context
  std::printf("\nper-configuration iteration-time MRE:");
  for (std::size_t c = 0; c < table.predictors.size(); ++c) {
    double s = 0;
    for (const auto& cf : table.configs) s += std::abs(cf.pred_us[c] - cf.oracle_us) / cf.oracle_us;
    std::printf(" %s %.2f%%", table.predictors[c].c_str(), 100 * s / static_cast<double>(table.configs.size()));
  }
  // SJF and SRTF compare predicted times only, so a predictor's common scale drops out of their order: what they
  // see is the spread of its errors, the standard deviation of ln(predicted / true)
  std::printf("\nspread of ln(predicted / true):");
  for (std::size_t c = 0; c < table.predictors.size(); ++c) {
    double s = 0, s2 = 0;
    for (const auto& cf : table.configs) {
      const double l = std::log(cf.pred_us[c] / cf.oracle_us);
      s += l;
      s2 += l * l;
    }
    const double k = static_cast<double>(table.configs.size()), mean = s / k;
    std::printf(" %s %.4f", table.predictors[c].c_str(), std::sqrt(std::max(0.0, s2 / k - mean * mean)));
  }
  std::printf("\n");
  if (!out_path.empty()) write_whole(out_path, out.str());
  return 0;
}

// ---------------------------------------------------------------- predictions from a dataset
std::string stem(const std::string& path) {
  std::string s = fs::path(path).filename().string();
  for (const char* ext : {".gz", ".etst", ".json", ".csv"})
    if (s.size() > std::strlen(ext) && s.compare(s.size() - std::strlen(ext), std::strlen(ext), ext) == 0)
      s.resize(s.size() - std::strlen(ext));
  return s;
}

int run_predictions(const Args& a) {
  const std::string data = a.get("--data"), out_path = a.get("--out");
  if (data.empty() || out_path.empty()) throw std::invalid_argument("predictions needs --data DIR and --out FILE");
  check_writable(out_path);  // the file comes after minutes of training
  if (a.has("--model") && (a.has("--train-seconds") || a.has("--save-model")))
    throw std::invalid_argument("--model loads a model; --train-seconds and --save-model train one: pass one or the other");
  const double train_seconds = option_number(a, "--train-seconds", 300, 1, 1e7, false);
  const auto train = ets::DatasetSplit::load(data, "train");
  const auto val = ets::DatasetSplit::load(data, "val");
  const auto files = ets::DatasetSplit::list(data, a.get("--split", "test"));
  ets::ModelFile model;
  if (a.has("--model")) {
    model = ets::load_model(a.get("--model"));
  } else {
    ets::ModelTrainer::Options o;
    o.train.max_seconds = train_seconds;
    o.provenance["dataset"] = data;
    std::fprintf(stderr, "cluster_sim: training ETS on %zu traces (budget %.0f s) ...\n", train.traces.size(),
                 o.train.max_seconds);
    const auto r = ets::ModelTrainer::train(train.traces, val.traces, o);
    model = r.model;
    std::fprintf(stderr, "cluster_sim: trained %d epochs, val MRE %.4f\n", r.training.epochs_run, r.val_mre);
    if (a.has("--save-model")) ets::save_model(model, a.get("--save-model"));
  }
  ets::Predictor::Options po;
  po.backend = ets::Backend::Cpu;
  ets::Predictor predictor(po);
  const std::string env = predictor.add_model("", model);
  const ets::FeatureSpec spec = ets::FeatureSpec::deserialize(model.encoder_state);
  std::vector<ets::Baseline> baselines;
  for (auto kind : {ets::Baseline::Kind::OpSum, ets::Baseline::Kind::PerOpMlp}) {
    std::fprintf(stderr, "cluster_sim: fitting baseline %s ...\n", ets::Baseline::kind_name(kind));
    baselines.push_back(ets::Baseline::fit(kind, spec, train.traces, val.traces));
  }
  std::ostringstream out;
  out << "job_config,oracle_us,ets_us";
  for (const auto& b : baselines) out << ',' << b.name() << "_us";
  out << '\n';
  out.precision(10);
  for (const auto& f : files) {
    const std::string id = stem(f);
    ETS_CHECK(id.find_first_of("\r\n") == std::string::npos, ets::Errc::invalid_argument, "ets.sim.5",
              "trace file name '{}' holds a line break, which a predictions CSV row cannot carry; rename it", f);
    predictor.load_job(id, f);
    const ets::ExecutionTrace t = predictor.job_trace(id);
    out << csv_field(id) << ',' << ets::Evaluator::truth_us(t) << ',' << predictor.predict(id, env).iteration_us;
    for (const auto& b : baselines) out << ',' << b.predict(t);
    out << '\n';
  }
  write_whole(out_path, out.str());
  std::fprintf(stderr, "cluster_sim: wrote %zu configurations to %s\n", files.size(), out_path.c_str());
  return 0;
}

#ifdef ETS_SIM_HAVE_FIXTURES
// Synthetic labelled families (tests/unit/train_fixtures.hpp: op times follow op sizes, gaps depend on the next op):
// disjoint family names per split, so the test families are unseen in training.
int run_synth(const std::string& dir) {
  auto put = [&](const std::string& split, int n, std::uint32_t seed, const std::string& fam, int families) {
    fs::create_directories(fs::path(dir) / "traces" / split);
    for (int i = 0; i < n; ++i) {
      const std::string family = fam + std::to_string(i % families);
      auto t = ets_test::learnable_trace(seed * 100000 + static_cast<std::uint32_t>(i), 6 + (i * 7) % 40, family);
      ets::write_trace_file((fs::path(dir) / "traces" / split / (family + "-" + std::to_string(i) + ".etst.gz")).string(), {t});
    }
  };
  put("train", 160, 1, "train", 8);
  put("val", 32, 2, "val", 4);
  put("test", 40, 3, "test", 4);
  std::printf("wrote 160 train, 32 val, 40 test traces under %s/traces\n", dir.c_str());
  return 0;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  const std::string usage =
      "usage: cluster_sim run --jobs philly.csv --predictions PRED.csv [--sample N] [--offset K] [--load L] [--gpus G] "
      "[--seed S] [--seeds K] [--out RESULTS.csv]\n"
      "       cluster_sim predictions --data DIR (--model M.etsm | --train-seconds S [--save-model M]) [--split test] "
      "--out PRED.csv\n"
#ifdef ETS_SIM_HAVE_FIXTURES
      "       cluster_sim synth-data DIR\n"
#endif
      ;
  if (argc < 2) {
    std::fputs(usage.c_str(), stderr);
    return 2;
  }
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::fputs(usage.c_str(), stdout);
      return 0;
    }
  try {
    const std::string cmd = argv[1];
    if (cmd == "run")
      return run_sim(parse(argc, argv, 2, {"--jobs", "--predictions", "--sample", "--offset", "--load", "--gpus",
                                          "--seed", "--seeds", "--out"}));
    if (cmd == "predictions")
      return run_predictions(
          parse(argc, argv, 2, {"--data", "--model", "--train-seconds", "--save-model", "--split", "--out"}));
#ifdef ETS_SIM_HAVE_FIXTURES
    if (cmd == "synth-data" && argc == 3) return run_synth(argv[2]);
#endif
    std::fputs(usage.c_str(), stderr);
    return 2;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "cluster_sim: %s\n%s", e.what(), usage.c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cluster_sim: %s\n", e.what());
    return 1;
  }
}
