// `ets predict TRACE... [--model [ENV=]M[,...]] [--env ENV] [--json] [--format text|json|gavel|matrix]
// [--backend auto|cpu|cuda]`: predicted iteration time per trace (and environment) through ets::Predictor;
// gavel/matrix export what schedulers load.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <new>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cli.hpp"
#include "ets/error.hpp"
#include "ets/model_file.hpp"
#include "ets/predictor.hpp"
#include "ets/tracer.hpp"
#ifdef ETS_CLI_WITH_CUDA
#include "ets/cuda/cudnn_backend.hpp"
#endif

namespace ets::cli {
namespace {

// Gavel keys job types as "(name, scale_factor)" tuples printed by Python; a single-worker job has scale factor 1.
std::string gavel_job_type(const ExecutionTrace& t, const std::string& path) {
  std::string name = t.meta.model.empty() ? std::filesystem::path(path).filename().string() : t.meta.model;
  if (t.meta.batch_size > 0) name += fmt::format(" (batch size {})", t.meta.batch_size);
  return name;
}

// Gavel's job type key, "('<name>', <scale factor>)". Gavel reads it back with a regular expression, not as a Python
// literal (parse_job_type_tuple: \('(.*)', (\d+)\)), whose greedy group takes the name verbatim up to the last "', ":
// so the name goes in unescaped, quotes and backslashes included; only a line break, which '.' does not match, becomes
// a space.
std::string gavel_key(std::string name) {
  for (char& c : name)
    if (c == '\n' || c == '\r') c = ' ';
  return fmt::format("('{}', 1)", name);
}

// --backend: auto (the GPU when this ets was built with CUDA and a device works, else the CPU), cpu or cuda.
Backend backend_arg(const Args& a) {
  const std::string b = a.value("--backend", "auto");
  if (b == "cpu") return Backend::Cpu;
  if (b != "auto" && b != "cuda") throw std::invalid_argument("--backend takes auto, cpu or cuda, not '" + b + "'");
#ifdef ETS_CLI_WITH_CUDA
  cuda::enable();  // installs the cuDNN factory; Auto still falls back to the CPU without a working device
#else
  if (b == "cuda")
    throw std::invalid_argument("--backend cuda: this ets was built without CUDA (configure with -DETS_WITH_CUDA=ON)");
#endif
  return b == "cuda" ? Backend::Cuda : Backend::Auto;
}

struct ModelArg {
  std::string env, path;
};

std::vector<ModelArg> model_args(const Args& a) {
  std::vector<ModelArg> out;
  if (a.has("--env") && a.value("--env").empty()) throw std::invalid_argument("--env needs an environment name");
  std::string spec;  // every --model value, for messages
  if (a.has("--model"))
    for (const std::string& v : a.all.at("--model")) spec += (spec.empty() ? "" : " --model ") + v;
  if (!a.has("--model")) {
    // An installed ets prefers the model installed beside it over the source tree it was built from, which may
    // have moved on since; an ets in its build tree finds neither installed location and uses the tree's.
    std::string path = Predictor::find_default_model();
    if (path.empty()) path = Predictor::find_default_model({std::string(ETS_SOURCE_DIR) + "/models/default.etsm"});
    ETS_CHECK(!path.empty(), Errc::io, "ets.predict.8",
              "no default model: pass --model M.etsm, set ETS_MODEL, or build models/default.etsm (see models/README.md)");
    out.push_back({a.value("--env"), path});
    return out;
  }
  // Every item is M or ENV=M with neither part empty: "=M" would silently fall back to the model's own environment.
  // A value (or ENV=value) that names an existing file is one model, whatever commas or '=' its path holds.
  const auto is_file = [](const std::string& p) {
    std::error_code ec;
    return std::filesystem::exists(p, ec);
  };
  const auto add = [&](const std::string& item) {
    if (item.empty())
      throw std::invalid_argument("--model '" + spec + "' has an empty item: separate [ENV=]M items by single commas");
    ModelArg m;
    const auto eq = item.find('=');
    if (eq == std::string::npos || is_file(item)) {
      m.path = item;
    } else {
      m.env = item.substr(0, eq);
      m.path = item.substr(eq + 1);
      if (m.env.empty())
        throw std::invalid_argument("--model item '" + item + "' has an empty environment name before '='");
      if (m.path.empty()) throw std::invalid_argument("--model item '" + item + "' has no model path after '='");
    }
    out.push_back(std::move(m));
  };
  for (const std::string& value : a.all.at("--model")) {
    if (value.empty()) throw std::invalid_argument("--model needs a path");
    // One model whose path holds ',' or '=' (a run=3,seed=1 folder), alone or after ENV=; an ENV holds no comma,
    // so "A,b=B" is two items even where B is a file
    const auto eq = value.find('=');
    if (is_file(value) || (eq != std::string::npos && value.find(',') > eq && is_file(value.substr(eq + 1)))) {
      add(value);
      continue;
    }
    std::size_t start = 0;
    while (true) {
      const std::size_t comma = value.find(',', start);
      add(value.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  if (a.has("--env")) {
    if (out.size() != 1 || !out[0].env.empty())
      throw std::invalid_argument("--env names the environment of a single --model M; use --model ENV=M,... for several");
    out[0].env = a.value("--env");
  }
  return out;
}

int run_predict(const Args& a) {
  const std::string format = a.value("--format", a.flag("--json") ? "json" : "text");
  if (format != "text" && format != "json" && format != "gavel" && format != "matrix")
    throw std::invalid_argument("--format takes text, json, gavel or matrix, not '" + format + "'");
  if (a.flag("--json") && format != "json")
    throw std::invalid_argument("--json conflicts with --format " + format + "; pass one of them");
  if (a.positional.empty()) throw std::invalid_argument("missing TRACE; usage: ets predict TRACE... [--model M]");

  Predictor::Options options;
  options.backend = backend_arg(a);
  Predictor predictor(options);
  std::vector<std::string> envs;
  std::vector<std::string> hardware;  // each model's own hardware_env (the env id may rename it)
  std::map<std::string, std::string> env_path;
  for (const auto& m : model_args(a)) {
    const ModelFile file = load_model(m.path);  // self-test checked, as add_model(env, path) does
    const std::string env = predictor.add_model(m.env, file);
    if (env_path.count(env))
      throw std::invalid_argument("--model: '" + env_path[env] + "' and '" + m.path + "' are both for environment '" +
                                  env + "'; name them apart with ENV=M,ENV2=M2");
    env_path[env] = m.path;
    envs.push_back(env);
    hardware.push_back(file.hardware_env);
  }

  if (format == "gavel") {  // environments are the outer keys: two that write alike (bytes that are not UTF-8) are one
    std::set<std::string> env_keys;
    for (const auto& env : envs)
      if (!env_keys.insert(json_escape(env)).second)
        throw std::invalid_argument("--format gavel: two environment ids are one JSON key once written ('" +
                                    json_escape(env) + "'); name them apart with ENV=M,ENV2=M2");
  }

  const Tracer::LoadOptions load = load_options(a);
  // --keep-going: a trace that cannot be read or registered (an ets::Error, or memory running out while it is read)
  // is reported (stderr; an error object in --json) and the others are predicted; the exit code is still 1. Without
  // it the first such trace ends the command, printing nothing.
  const bool keep_going = a.flag("--keep-going");
  std::vector<std::string> ids;  // the traces registered, in input order
  std::map<std::string, std::pair<std::string, std::string>> failed;  // path -> (error id, message)
  for (const auto& path : a.positional) {
    try {
      std::vector<ExecutionTrace> its = Tracer::load(path, load);
      ETS_CHECK(!its.empty(), Errc::invalid_trace, "ets.predict.4", "'{}' holds no iterations", path);
      const std::size_t k = Predictor::representative_iteration(its);
      predictor.add_job(path, std::move(its[k]));
      ids.push_back(path);
      failed.erase(path);  // given twice: the later read stands, as add_job's replacement does
    } catch (const ets::Error& e) {
      if (!keep_going) throw;
      const std::string hint = error_hint(e);
      std::fprintf(stderr, "ets predict: %s%s (skipped: --keep-going)\n", e.what(), hint.c_str());
      failed[path] = {e.id(), e.message() + hint};  // the id has a field of its own in --json
    } catch (const std::bad_alloc&) {
      // One trace too large for this process's memory (--max-bytes 0, or a parse that outgrows the file) costs that
      // trace only. Its memory is released by now, so the report can allocate.
      if (!keep_going) throw;
      const std::string message = fmt::format("'{}': out of memory reading it (--max-bytes sets a lower limit)", path);
      std::fprintf(stderr, "ets predict: [ets.cli.3] %s (skipped: --keep-going)\n", message.c_str());
      failed[path] = {"ets.cli.3", message};
    }
  }
  const auto finish = [&] { return failed.empty() ? 0 : 1; };
  // --json prints the breakdown, which predict_detailed computes along with the estimate: one forward per trace,
  // not a batch prediction and then the same forward again.
  const Predictor::Matrix m = format == "json" ? Predictor::Matrix{} : predictor.predict_batch(ids, envs);

  if (format == "gavel") {
    // throughputs[env][job_type]["null"] = steps/s alone on one worker (Gavel's simulation_throughputs.json shape).
    // Two equal keys would parse to one, the last winning: keys are told apart as written, after the key's and
    // JSON's own rewriting (line breaks, bytes that are not UTF-8), so that two names that differ only there, or a
    // name that is already "x #2", stay two jobs. The same key for a job in every environment.
    std::vector<std::string> keys;
    std::set<std::string> used;
    for (const auto& id : ids) {
      const std::string name = gavel_job_type(predictor.job_trace(id), id);
      std::string key = json_escape(gavel_key(name));
      for (int n = 2; !used.insert(key).second; ++n) key = json_escape(gavel_key(fmt::format("{} #{}", name, n)));
      keys.push_back(std::move(key));
    }
    std::string s = "{";
    for (std::size_t e = 0; e < envs.size(); ++e) {
      s += fmt::format("{}\n  \"{}\": {{", e ? "," : "", json_escape(envs[e]));
      for (std::size_t j = 0; j < ids.size(); ++j) {
        const double us = m.at(j, e).iteration_us;
        s += fmt::format("{}\n    \"{}\": {{\"null\": {}}}", j ? "," : "", keys[j],
                         us > 0 && std::isfinite(1e6 / us) ? json_number(1e6 / us, 6) : "null");
      }
      s += "\n  }";
    }
    std::printf("%s\n}\n", s.c_str());
    return finish();
  }
  if (format == "matrix") {
    // AlloX/Hydra-style processing-time matrix: one row per job, one column per resource, µs per iteration
    std::string s = "job";
    for (const auto& e : envs) s += "," + csv_field(e);
    s += "\n";
    for (std::size_t j = 0; j < ids.size(); ++j) {
      s += csv_field(ids[j]);
      for (std::size_t e = 0; e < envs.size(); ++e) s += "," + fixed(m.at(j, e).iteration_us, 3);
      s += "\n";
    }
    std::fputs(s.c_str(), stdout);
    return finish();
  }
  // A measurement the trace names as taken on other hardware is shown, but no error is computed against it.
  auto comparable = [&](const ExecutionTrace& t, std::size_t e) {
    return t.has_measurement() && measured_on_model_hardware(t, hardware[e], envs[e]);
  };
  // A measurement is never shown as 0 (which would read as none): below 1e-3 ms in exact form, and in µs where
  // the ms value would underflow (5e-324 µs).
  auto measured_ms = [](double us) {
    return us / 1e3 == 0 && us != 0 ? fmt::format("{} us", us) : fixed_or_exact(us / 1e3, 3) + " ms";
  };
  // Every row is computed before any is printed: a prediction failing for a later trace prints nothing.
  std::vector<std::string> backend;  // where each env's network runs ("cpu-eigen", "cuda-cudnn")
  for (const auto& e : envs) backend.push_back(predictor.backend_name(e));
  std::string rows;
  std::size_t next_input = 0;  // --json: a skipped trace's error object comes where the trace stood in the input
  // Up to the input `registered` (nullptr: to the end; not "", which is a path a script may pass, e.g. an unset $T).
  const auto failures_before = [&](const std::string* registered) {
    for (; next_input < a.positional.size() && !(registered && a.positional[next_input] == *registered);
         ++next_input) {
      const auto f = failed.find(a.positional[next_input]);
      if (format == "json" && f != failed.end())
        rows += fmt::format("{{\"trace\":\"{}\",\"error\":{{\"id\":\"{}\",\"message\":\"{}\"}}}}\n",
                            json_escape(f->first), json_escape(f->second.first), json_escape(f->second.second));
    }
    if (next_input < a.positional.size()) ++next_input;
  };
  for (std::size_t j = 0; j < ids.size(); ++j) {
    failures_before(&ids[j]);
    const ExecutionTrace t = predictor.job_trace(ids[j]);
    for (std::size_t e = 0; e < envs.size(); ++e) {
      if (format == "json") {
        const Prediction d = predictor.predict_detailed(t, envs[e]);
        const double err = comparable(t, e) ? (d.iteration_us - t.measured_us) / t.measured_us : kUnknown;
        rows += fmt::format("{{\"trace\":\"{}\",\"iteration\":{},\"env\":\"{}\",\"model\":\"{}\",\"ops\":{},"
                                "\"predicted_us\":{},\"measured_us\":{},\"interval_us\":[{},{}],\"rel_error\":{},"
                                "\"time_us\":{},\"gap_us\":{},\"phase_us\":{{\"forward\":{},\"backward\":{},"
                                "\"update\":{}}},\"unknown_ops\":{},\"backend\":\"{}\"}}",
                                json_escape(ids[j]), t.iteration, json_escape(envs[e]), json_escape(env_path[envs[e]]), t.ops.size(),
                                json_number(d.iteration_us), t.has_measurement() ? json_number(t.measured_us) : "null", json_number(d.lo_us), json_number(d.hi_us),
                                json_number(err, 6), json_number(d.time_us),
                                json_number(d.gap_us), json_number(d.forward_us), json_number(d.backward_us), json_number(d.update_us), d.unknown_ops,
                                json_escape(backend[e])) +
                "\n";
      } else {
        const Predictor::Estimate& est = m.at(j, e);
        const double err = comparable(t, e) ? (est.iteration_us - t.measured_us) / t.measured_us : kUnknown;
        rows += fmt::format("{} [{}]: predicted {} ms (interval {} .. {} ms), measured {}, "
                                        "{} ops, iteration {}",
                                        ids[j], envs[e], fixed(est.iteration_us / 1e3, 3), fixed(est.lo_us / 1e3, 3),
                                        fixed(est.hi_us / 1e3, 3),
                                        !t.has_measurement() ? std::string("n/a")
                                        : !comparable(t, e)
                                            ? fmt::format("{} on {} (other hardware: no error)",
                                                          measured_ms(t.measured_us), measured_hardware(t))
                                        : std::isfinite(err)
                                            ? fmt::format("{} ({:+.1f}%)", measured_ms(t.measured_us), 100 * err)
                                            : measured_ms(t.measured_us),
                                        t.ops.size(), t.iteration) +
                "\n";
      }
    }
  }
  failures_before(nullptr);  // the failures after the last registered trace
  std::fputs(rows.c_str(), stdout);
  return finish();
}

const Register predict_cmd{Command{
    "predict", "predict the iteration time of traces",
    Spec{"predict TRACE... [--model [ENV=]M[,[ENV=]M...]] [--env ENV] [--json] [--format text|json|gavel|matrix]"
         " [--backend auto|cpu|cuda] [--batch-size N] [--rank N] [--keep-incomplete] [--max-bytes SIZE] [--keep-going]",
         {"--json", "--keep-incomplete", "--keep-going"},
         {"--model", "--env", "--format", "--backend", "--batch-size", "--rank", "--max-bytes"},
         1,
         {{"--model [ENV=]M[,...]",
           "model file(s) [ENV=]M, comma-separated or repeated (default: $ETS_MODEL, else the shipped model)"},
          {"--env ENV", "name of the environment of the single model (default: the model's own)"},
          {"--json", "same as --format json"},
          {"--format text|json|gavel|matrix",
           "output: text, JSON lines, Gavel throughputs or job x env CSV (default text)"},
          {"--backend auto|cpu|cuda",
           "where the network runs: auto (default) = cuDNN when built with CUDA and a GPU works, else CPU"},
          batch_size_help(),
          rank_help(),
          keep_incomplete_help(),
          max_bytes_help(),
          {"--keep-going", "predict the other traces when one fails (reported on stderr and in --json); exit 1"}},
         {"--model"}},
    run_predict}};

}  // namespace
}  // namespace ets::cli
