// ets::Predictor implementation: model registry per environment, job registry with a per-model raw-prediction
// cache, batched encode → forward → aggregate, and the shrunk log-space observe() correction.
#include "ets/predictor.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#if defined(__linux__)
#include <dlfcn.h>  // dladdr1: which loaded object (a shared libets, or the program) holds this code
#include <link.h>
#endif

#include "ets/aggregator.hpp"
#include "ets/bilstm_predictor.hpp"
#include "ets/detail/ascii.hpp"
#include "ets/error.hpp"
#include "ets/feature_spec.hpp"
#include "ets/tracer.hpp"
#include "ets/window_encoder.hpp"

namespace ets {

namespace {

// Windows per forward call when several jobs are predicted together: bounds the batch tensor (≈ 6 MB per 1,000
// windows at F = 128) while keeping the GEMMs large enough to run at full speed. A job is never split, so one job
// with more windows is a chunk of its own (≈ 1.2 KB per op encoded; the network's workspace is bounded separately).
constexpr std::int64_t kMaxWindowsPerForward = 8192;

struct Raw {
  double iteration_us = 0, lo_us = 0, hi_us = 0;
};

struct Model {
  std::uint64_t serial = 0;
  std::string env;
  ModelFile file;
  std::string encoder_key;
  std::shared_ptr<const WindowEncoder> encoder;
  std::unique_ptr<BiLstmPredictor> lstm;
  std::unique_ptr<Aggregator> aggregator;
};

// Log ratios measured against one model (by serial): a replacement model has its own bias, so observations of
// the model it replaced no longer apply.
struct Observations {
  std::uint64_t serial = 0;
  double sum_log = 0;
  std::int64_t n = 0;
};

struct Job {
  ExecutionTrace trace;
  mutable std::mutex mu;  // guards cache and obs
  std::unordered_map<std::uint64_t, Raw> cache;
  std::map<std::string, Observations> obs;
};

std::string encoder_key(const ModelFile& m) {
  std::string k(m.encoder_state.begin(), m.encoder_state.end());
  k += "|" + std::to_string(m.window_width) + "|" + std::to_string(m.window_stride);
  return k;
}

// Whether two networks are the same: one config and equal weights (finite values, so the same predictions).
bool same_network(const LstmWeights& a, const LstmWeights& b) {
  if (!(a.config == b.config) || a.cells.size() != b.cells.size() || a.head_w != b.head_w || a.head_b != b.head_b)
    return false;
  for (std::size_t i = 0; i < a.cells.size(); ++i)
    if (a.cells[i].w_ih != b.cells[i].w_ih || a.cells[i].w_hh != b.cells[i].w_hh || a.cells[i].b_ih != b.cells[i].b_ih ||
        a.cells[i].b_hh != b.cells[i].b_hh)
      return false;
  return true;
}

}  // namespace

struct Predictor::Impl {
  Options opt;
  mutable std::shared_mutex mu;  // guards models, order and jobs (the maps, not the Job internals)
  std::vector<std::shared_ptr<const Model>> models;  // insertion order
  std::unordered_map<std::string, std::size_t> model_index;  // env id -> position in models: lookups stay O(1)
  std::unordered_map<std::string, std::shared_ptr<Job>> jobs;
  std::atomic<std::uint64_t> next_serial{1};

  std::shared_ptr<const Model> find_model(const std::string& env) const {
    const auto it = model_index.find(env);
    return it == model_index.end() ? nullptr : models[it->second];
  }

  // What purge() needs, gathered under mu's exclusive lock *before* the registry changes: the serials that stay
  // registered (all but models[dropped], plus `added`, 0 for none) and the jobs. It is the step that
  // allocates, so a caller that runs out of memory here leaves the registry as it was.
  struct Purge {
    std::unordered_set<std::uint64_t> live;
    std::vector<std::shared_ptr<Job>> jobs;
  };
  Purge prepare_purge(std::size_t dropped, std::uint64_t added) const {
    Purge p;
    p.live.reserve(models.size() + 1);
    for (std::size_t i = 0; i < models.size(); ++i)
      if (i != dropped) p.live.insert(models[i]->serial);
    if (added != 0) p.live.insert(added);
    p.jobs.reserve(jobs.size());
    for (const auto& [id, job] : jobs) p.jobs.push_back(job);
    return p;
  }

  // Drops every job's cache entries of serials no longer registered (also one a call in flight added meanwhile),
  // and with removed_env its observations of the removed model (serial removed_serial) or an older one.
  // Called with mu held exclusively, after the registry changed; releases it before taking job locks (never taken
  // under mu's exclusive lock), and allocates nothing: the change has been made, and must not be reported failed.
  // So a model registered under removed_env meanwhile may already have observations here: they are newer, and kept.
  static void purge(std::unique_lock<std::shared_mutex>& lock, const Purge& p, const std::string* removed_env,
                    std::uint64_t removed_serial = 0) {
    lock.unlock();
    for (const auto& job : p.jobs) {
      std::lock_guard lk(job->mu);
      for (auto it = job->cache.begin(); it != job->cache.end();)
        it = p.live.count(it->first) ? std::next(it) : job->cache.erase(it);
      if (!removed_env) continue;
      const auto it = job->obs.find(*removed_env);
      if (it != job->obs.end() && it->second.serial <= removed_serial) job->obs.erase(it);
    }
  }

  // The caller holds mu. A Job's trace never changes once added, so the pointer may be used after mu is released.
  std::shared_ptr<Job> job_locked(const std::string& id) const {
    auto it = jobs.find(id);
    ETS_CHECK(it != jobs.end(), Errc::invalid_argument, "ets.predict.1", "unknown job '{}'", id);
    return it->second;
  }

  std::shared_ptr<Job> job(const std::string& id) const {
    std::shared_lock lock(mu);
    return job_locked(id);
  }

  std::vector<std::shared_ptr<const Model>> resolve_envs(const std::vector<std::string>& envs) const {
    std::vector<std::shared_ptr<const Model>> out;
    out.reserve(envs.size());
    for (const auto& e : envs) {
      auto m = find_model(e);
      ETS_CHECK(m != nullptr, Errc::invalid_argument, "ets.predict.2", "no model for environment '{}' (have {})", e,
                models.size());
      out.push_back(std::move(m));
    }
    return out;
  }

  // Raw predictions (cached per model serial) of jobs × models, corrected by each job's observations.
  // ids: the jobs' ids (parallel to jobs), which an error names.
  Matrix estimate(const std::vector<std::shared_ptr<Job>>& jobs, const std::vector<std::shared_ptr<const Model>>& models,
                  const std::vector<std::string>& ids) const;

  Correction correction_of(const Job& job, const Model& model) const {
    Correction c;
    auto it = job.obs.find(model.env);
    if (it == job.obs.end() || it->second.n == 0 || it->second.serial != model.serial) return c;
    c.observations = it->second.n;
    c.mean_log_ratio = it->second.sum_log / static_cast<double>(it->second.n);
    c.factor = std::exp(it->second.sum_log / (static_cast<double>(it->second.n) + opt.prior_weight));
    return c;
  }
};

namespace {

// Aggregates a chunk's predictions. A prediction that is no usable number (ets.aggregate.3: it denormalises to
// infinity, or its sums overflow) fails the chunk: the error then names the trace (names[first + i]) and the
// environment, found by aggregating each trace of the chunk alone (the error path only), so that a scheduler can
// tell which job to drop.
std::vector<Prediction> aggregate_chunk(const Model& model, const WindowEncoder& enc, const WindowBatch& batch,
                                        const std::vector<float>& y,
                                        const std::vector<const ExecutionTrace*>& chunk,
                                        const std::vector<std::string>& names, std::size_t first) {
  try {
    return model.aggregator->aggregate_all(batch, y, static_cast<int>(chunk.size()));
  } catch (const Error& e) {
    for (std::size_t i = 0; i < chunk.size(); ++i) {
      const WindowBatch one = enc.encode(*chunk[i]);
      try {
        (void)model.aggregator->aggregate(one, model.lstm->predict(one));
      } catch (const Error& alone) {
        throw Error(alone.code(), alone.id(),
                    fmt::format("{} on environment '{}': {}", names.at(first + i), model.env, alone.message()));
      }
    }
    throw;
  }
}

// Raw predictions of traces × models (row-major traces × models). Each distinct encoder encodes each trace
// once; each model runs one forward per chunk of ≤ kMaxWindowsPerForward windows. names: what an error calls each
// trace ("job 'x'").
std::vector<Raw> compute_raw(const std::vector<const ExecutionTrace*>& traces,
                             const std::vector<const Model*>& models, const std::vector<std::string>& names) {
  const std::size_t nt = traces.size(), nm = models.size();
  std::vector<Raw> out(nt * nm);
  std::vector<bool> done(nm, false);
  for (std::size_t g = 0; g < nm; ++g) {
    if (done[g]) continue;
    const WindowEncoder& enc = *models[g]->encoder;
    std::vector<std::size_t> group;
    for (std::size_t m = g; m < nm; ++m)
      if (!done[m] && models[m]->encoder == models[g]->encoder) {
        group.push_back(m);
        done[m] = true;
      }
    WindowBatch batch;
    std::size_t begin = 0;
    while (begin < nt) {
      std::size_t end = begin;
      std::int64_t windows = 0;
      do {
        windows += enc.window_count(static_cast<std::int64_t>(traces[end]->ops.size()));
        ++end;
      } while (end < nt && windows + enc.window_count(static_cast<std::int64_t>(traces[end]->ops.size())) <=
                               kMaxWindowsPerForward);
      const std::vector<const ExecutionTrace*> chunk(traces.begin() + static_cast<std::ptrdiff_t>(begin),
                                                     traces.begin() + static_cast<std::ptrdiff_t>(end));
      enc.encode_into(chunk, batch);
      for (std::size_t m : group) {
        const std::vector<float> y = models[m]->lstm->predict(batch);
        const std::vector<Prediction> preds = aggregate_chunk(*models[m], enc, batch, y, chunk, names, begin);
        for (std::size_t i = 0; i < chunk.size(); ++i) {
          Raw& r = out[(begin + i) * nm + m];
          r.iteration_us = preds[i].iteration_us;
          r.lo_us = preds[i].lo_us;
          r.hi_us = preds[i].hi_us;
        }
      }
      begin = end;
    }
  }
  return out;
}

void check_trace(const ExecutionTrace& t, const std::string& what) {
  ETS_CHECK(!t.ops.empty(), Errc::invalid_trace, "ets.predict.5", "{} has no ops to predict from", what);
}

}  // namespace

Predictor::Predictor() : Predictor(Options{}) {}

Predictor::Predictor(Options options) : impl_(std::make_unique<Impl>()) {
  ETS_CHECK(std::isfinite(options.prior_weight) && options.prior_weight >= 0 && std::isfinite(options.max_ratio) &&
                options.max_ratio > 1 && options.max_observations >= 0,
            Errc::invalid_argument, "ets.predict.7",
            "Predictor options: prior_weight {} must be ≥ 0, max_ratio {} > 1 and max_observations {} ≥ 0",
            options.prior_weight, options.max_ratio, options.max_observations);
  impl_->opt = options;
}

Predictor::~Predictor() = default;

const Predictor::Options& Predictor::options() const noexcept { return impl_->opt; }

std::string Predictor::add_model(const std::string& env, const std::string& path) {
  ModelLoadOptions lo;
  lo.verify_self_test = impl_->opt.verify_self_test;
  return add_model(env, load_model(path, lo));
}

std::string Predictor::add_model(const std::string& env_in, const ModelFile& file) {
  auto m = std::make_shared<Model>();
  m->env = !env_in.empty() ? env_in : !file.hardware_env.empty() ? file.hardware_env : "default";
  // Environment ids are names: one a C caller cannot spell (NUL) or a log line cannot hold (newline) is refused.
  ETS_CHECK(std::none_of(m->env.begin(), m->env.end(), detail::ascii_control), Errc::invalid_argument, "ets.predict.9",
            "environment id '{}' holds a control character (shown as '?'): name it with printable characters",
            detail::controls_shown(m->env));
  m->file = file;
  // The network keeps its own copy of the weights (and the backend a packed one): a third copy here cost a model's
  // size again per environment. model() puts them back from the network.
  m->file.weights = LstmWeights{};
  m->encoder_key = encoder_key(file);
  ETS_CHECK(!file.encoder_state.empty(), Errc::shape, "ets.predict.6",
            "model for '{}' carries no encoder state (a bare network, e.g. exported without --encoder-from): it cannot "
            "encode traces", m->env);
  auto encoder =
      std::make_shared<const WindowEncoder>(FeatureSpec::deserialize(file.encoder_state), file.window_width,
                                            file.window_stride);
  ETS_CHECK(encoder->features() == file.weights.config.input_size, Errc::shape, "ets.predict.6",
            "model for '{}': the encoder writes {} features but the LSTM takes {}", m->env, encoder->features(),
            file.weights.config.input_size);
  ETS_CHECK(file.weights.config.outputs == 2, Errc::shape, "ets.predict.6",
            "model for '{}' predicts {} values per op; ETS needs 2 (time, gap)", m->env, file.weights.config.outputs);
  m->lstm = std::make_unique<BiLstmPredictor>(file.weights, impl_->opt.backend);
  m->aggregator = std::make_unique<Aggregator>(encoder->spec());

  std::unique_lock lock(impl_->mu);
  // Taken under the lock, so serials grow in the order models are registered: observe() keeps the observations of the
  // newest serial, and one taken before a concurrent registration could otherwise be registered last yet look older.
  m->serial = impl_->next_serial++;
  m->encoder = encoder;
  for (const auto& other : impl_->models)  // share the encoder so a batch encodes once for both models
    if (other->env != m->env && other->encoder_key == m->encoder_key) {
      m->encoder = other->encoder;
      break;
    }
  // The same model again under its environment (a scheduler reloading its configuration) predicts as the old one:
  // the same encoder and window geometry (encoder_key), label normalisation and network (provenance, hardware_env
  // and the self-test change no prediction). It keeps the old serial, so the jobs' caches and observe()
  // corrections stay valid.
  bool reused_serial = false;
  if (const auto it = impl_->model_index.find(m->env); it != impl_->model_index.end()) {
    const auto& old = impl_->models[it->second];
    if (old->encoder_key == m->encoder_key && old->file.labels == file.labels &&
        same_network(old->lstm->weights(), file.weights)) {
      m->serial = old->serial;
      reused_serial = true;
    }
  }
  // From here what allocates comes before the registry changes, so running out of memory leaves it as it was.
  const std::string env = m->env;
  std::shared_ptr<const Model> cm = std::move(m);
  if (const auto it = impl_->model_index.find(env); it != impl_->model_index.end()) {
    // A replaced model's cached predictions can never be asked for again (caches are keyed by serial); its
    // observations no longer apply, which correction_of() and observe() tell by the serial.
    Impl::Purge stale;
    if (!reused_serial) stale = impl_->prepare_purge(it->second, cm->serial);
    impl_->models[it->second] = std::move(cm);
    if (!reused_serial) Impl::purge(lock, stale, nullptr);
    return env;
  }
  impl_->models.reserve(impl_->models.size() + 1);  // so that push_back below cannot throw
  impl_->model_index.emplace(env, impl_->models.size());
  impl_->models.push_back(std::move(cm));
  return env;
}

bool Predictor::remove_model(const std::string& env) {
  std::unique_lock lock(impl_->mu);
  const auto it = impl_->model_index.find(env);
  if (it == impl_->model_index.end()) return false;
  const std::size_t at = it->second;
  const std::uint64_t serial = impl_->models[at]->serial;
  // The new index and the purge's lists are built first: out of memory there leaves the registry as it was (the
  // index used to be cleared, then rebuilt, so a failure midway lost environments that were still listed).
  std::unordered_map<std::string, std::size_t> index;
  index.reserve(impl_->models.size());
  for (std::size_t i = 0; i < impl_->models.size(); ++i)
    if (i != at) index.emplace(impl_->models[i]->env, i < at ? i : i - 1);
  const Impl::Purge stale = impl_->prepare_purge(at, 0);
  impl_->models.erase(impl_->models.begin() + static_cast<std::ptrdiff_t>(at));
  impl_->model_index.swap(index);
  Impl::purge(lock, stale, &env, serial);
  return true;
}

std::vector<std::string> Predictor::environments() const {
  std::shared_lock lock(impl_->mu);
  std::vector<std::string> v;
  for (const auto& m : impl_->models) v.push_back(m->env);
  return v;
}

bool Predictor::has_environment(const std::string& env) const {
  std::shared_lock lock(impl_->mu);
  return impl_->find_model(env) != nullptr;
}

ModelFile Predictor::model(const std::string& env) const {
  std::shared_lock lock(impl_->mu);
  const auto m = impl_->resolve_envs({env}).front();
  ModelFile f = m->file;
  f.weights = m->lstm->weights();
  return f;
}

std::string Predictor::backend_name(const std::string& env) const {
  std::shared_lock lock(impl_->mu);
  return impl_->resolve_envs({env}).front()->lstm->backend_name();
}

std::string Predictor::backend_note(const std::string& env) const {
  std::shared_lock lock(impl_->mu);
  return impl_->resolve_envs({env}).front()->lstm->backend_note();
}

std::string Predictor::find_default_model(const std::vector<std::string>& candidates) {
  namespace fs = std::filesystem;
  if (const char* e = std::getenv("ETS_MODEL"); e && *e) return e;
  std::error_code ec;
  for (const auto& c : candidates)
    if (!c.empty() && fs::is_regular_file(c, ec)) return c;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (const char* rel : {"../share/ets/models/default.etsm", "models/default.etsm"}) {
      const fs::path p = exe.parent_path() / rel;
      if (fs::is_regular_file(p, ec)) return p.lexically_normal().string();
    }
  }
#if defined(__GLIBC__)
  // A shared libets lives in <prefix>/lib (or lib/<multiarch>) while its host does not: python3 (ctypes), a Go or
  // JVM binary. `cmake --install` puts the model in <prefix>/share beside that lib, so look there too. A static
  // libets is part of the program (link map name ""), whose directory was searched above.
  Dl_info info{};
  link_map* map = nullptr;
  if (dladdr1(reinterpret_cast<const void*>(&Predictor::find_default_model), &info, reinterpret_cast<void**>(&map),
              RTLD_DL_LINKMAP) != 0 &&
      map != nullptr && map->l_name != nullptr && *map->l_name != '\0') {
    const fs::path lib = fs::absolute(map->l_name, ec);
    if (!ec) {
      for (const char* rel : {"../share/ets/models/default.etsm", "../../share/ets/models/default.etsm"}) {
        const fs::path p = lib.parent_path() / rel;
        if (fs::is_regular_file(p, ec)) return p.lexically_normal().string();
      }
    }
  }
#endif
  return "";
}

void Predictor::add_job(const std::string& job_id, ExecutionTrace trace) {
  ETS_CHECK(!job_id.empty(), Errc::invalid_argument, "ets.predict.1", "a job id must not be empty");
  check_trace(trace, "job '" + job_id + "'");
  auto job = std::make_shared<Job>();
  job->trace = std::move(trace);
  std::unique_lock lock(impl_->mu);
  impl_->jobs[job_id] = std::move(job);
}

std::size_t Predictor::load_job(const std::string& job_id, const std::string& path) {
  return load_job(job_id, path, Tracer::LoadOptions{});
}

std::size_t Predictor::load_job(const std::string& job_id, const std::string& path,
                                const Tracer::LoadOptions& options) {
  std::vector<ExecutionTrace> its = Tracer::load(path, options);
  ETS_CHECK(!its.empty(), Errc::invalid_trace, "ets.predict.4", "'{}' holds no iterations", path);
  const std::size_t i = representative_iteration(its);
  const std::size_t ops = its[i].ops.size();
  add_job(job_id, std::move(its[i]));
  return ops;
}

bool Predictor::remove_job(const std::string& job_id) {
  std::unique_lock lock(impl_->mu);
  return impl_->jobs.erase(job_id) != 0;
}

bool Predictor::has_job(const std::string& job_id) const {
  std::shared_lock lock(impl_->mu);
  return impl_->jobs.count(job_id) != 0;
}

std::vector<std::string> Predictor::jobs() const {
  std::shared_lock lock(impl_->mu);
  std::vector<std::string> v;
  for (const auto& [id, _] : impl_->jobs) v.push_back(id);
  std::sort(v.begin(), v.end());
  return v;
}

ExecutionTrace Predictor::job_trace(const std::string& job_id) const {
  return impl_->job(job_id)->trace;
}

std::size_t Predictor::representative_iteration(const std::vector<ExecutionTrace>& its) {
  ETS_CHECK(!its.empty(), Errc::invalid_trace, "ets.predict.4", "the trace holds no iterations");
  std::vector<std::size_t> measured;
  for (std::size_t i = 0; i < its.size(); ++i)
    if (its[i].has_measurement() && !its[i].ops.empty()) measured.push_back(i);
  if (measured.empty()) {  // the last iteration with ops (a capture's last step is often cut short)
    for (std::size_t i = its.size(); i-- > 0;)
      if (!its[i].ops.empty()) return i;
    return its.size() - 1;
  }
  std::sort(measured.begin(), measured.end(), [&](std::size_t a, std::size_t b) {
    return its[a].measured_us < its[b].measured_us || (its[a].measured_us == its[b].measured_us && a < b);
  });
  return measured[(measured.size() - 1) / 2];
}

Predictor::Matrix Predictor::predict_batch(const std::vector<std::string>& job_ids,
                                           const std::vector<std::string>& envs) const {
  std::vector<std::shared_ptr<const Model>> models;
  std::vector<std::shared_ptr<Job>> jobs;
  {
    std::shared_lock lock(impl_->mu);
    models = impl_->resolve_envs(envs);
    jobs.reserve(job_ids.size());
    for (const auto& id : job_ids) jobs.push_back(impl_->job_locked(id));
  }
  return impl_->estimate(jobs, models, job_ids);
}

Predictor::Matrix Predictor::Impl::estimate(const std::vector<std::shared_ptr<Job>>& jobs,
                                            const std::vector<std::shared_ptr<const Model>>& models,
                                            const std::vector<std::string>& ids) const {
  const std::size_t nj = jobs.size(), ne = models.size();
  Matrix out;
  out.jobs = nj;
  out.envs = ne;
  out.values.resize(nj * ne);
  std::vector<Raw> raw(nj * ne);
  std::vector<bool> have(nj * ne, false);

  // cache lookups; the rest are computed below, with one encode per distinct job and encoder
  std::vector<std::size_t> miss_jobs;
  std::vector<std::size_t> miss_models;
  std::vector<bool> model_missing(ne, false);
  for (std::size_t j = 0; j < nj; ++j) {
    bool any = false;
    if (opt.cache) {
      std::lock_guard lk(jobs[j]->mu);
      for (std::size_t e = 0; e < ne; ++e) {
        auto it = jobs[j]->cache.find(models[e]->serial);
        if (it != jobs[j]->cache.end()) {
          raw[j * ne + e] = it->second;
          have[j * ne + e] = true;
        } else {
          any = true;
          model_missing[e] = true;
        }
      }
    } else {
      any = true;
      std::fill(model_missing.begin(), model_missing.end(), true);
    }
    if (any) miss_jobs.push_back(j);
  }
  if (!miss_jobs.empty()) {
    // the same job listed twice is computed once
    std::unordered_map<const Job*, std::size_t> seen;
    std::vector<const ExecutionTrace*> traces;
    std::vector<std::string> names;
    for (std::size_t j : miss_jobs)
      if (seen.emplace(jobs[j].get(), traces.size()).second) {
        traces.push_back(&jobs[j]->trace);
        names.push_back(fmt::format("job '{}'", ids.at(j)));
      }
    std::vector<const Model*> mm;
    for (std::size_t e = 0; e < ne; ++e)
      if (model_missing[e]) {
        bool dup = false;
        for (const Model* p : mm) dup = dup || p == models[e].get();
        if (!dup) mm.push_back(models[e].get());
      }
    const std::vector<Raw> computed = compute_raw(traces, mm, names);
    for (std::size_t j : miss_jobs) {
      const std::size_t t = seen.at(jobs[j].get());
      std::unique_lock<std::mutex> lk(jobs[j]->mu, std::defer_lock);
      if (opt.cache) lk.lock();
      for (std::size_t e = 0; e < ne; ++e) {
        if (have[j * ne + e]) continue;
        const std::size_t m = static_cast<std::size_t>(
            std::find(mm.begin(), mm.end(), models[e].get()) - mm.begin());
        raw[j * ne + e] = computed[t * mm.size() + m];
        if (opt.cache) jobs[j]->cache[models[e]->serial] = raw[j * ne + e];
      }
    }
  }
  for (std::size_t j = 0; j < nj; ++j) {
    std::lock_guard lk(jobs[j]->mu);
    for (std::size_t e = 0; e < ne; ++e) {
      const Raw& r = raw[j * ne + e];
      const Correction c = correction_of(*jobs[j], *models[e]);
      // The factor is finite (each log ratio is clipped to ±ln(max_ratio)), but max_ratio may be as large as DBL_MAX,
      // so factor × interval can still overflow: cap the applied factor where the corrected hi_us would leave
      // double's range, so that an estimate is never infinite (the margin keeps the rounded product finite).
      double factor = c.factor;
      if (r.hi_us > 0 && factor > std::numeric_limits<double>::max() / r.hi_us)
        factor = std::numeric_limits<double>::max() / r.hi_us * (1 - 1e-15);
      Estimate& est = out.values[j * ne + e];
      est.raw_us = r.iteration_us;
      est.correction = factor;
      est.observations = c.observations;
      est.iteration_us = r.iteration_us * factor;
      est.lo_us = r.lo_us * factor;
      est.hi_us = r.hi_us * factor;
      est.ops = static_cast<std::int64_t>(jobs[j]->trace.ops.size());
    }
  }
  return out;
}

Predictor::Estimate Predictor::predict(const std::string& job_id, const std::string& env) const {
  return predict_batch({job_id}, {env}).values.front();
}

Predictor::Matrix Predictor::predict_traces(const std::vector<const ExecutionTrace*>& traces,
                                            const std::vector<std::string>& envs) const {
  std::vector<std::shared_ptr<const Model>> models;
  {
    std::shared_lock lock(impl_->mu);
    models = impl_->resolve_envs(envs);
  }
  for (std::size_t i = 0; i < traces.size(); ++i) {
    ETS_CHECK(traces[i] != nullptr, Errc::invalid_trace, "ets.predict.5", "trace {} is null", i);
    check_trace(*traces[i], fmt::format("trace {}", i));
  }
  std::vector<const Model*> mm;
  for (const auto& m : models) mm.push_back(m.get());
  std::vector<std::string> names;
  for (std::size_t i = 0; i < traces.size(); ++i) names.push_back(fmt::format("trace {}", i));
  const std::vector<Raw> raw = compute_raw(traces, mm, names);
  Matrix out;
  out.jobs = traces.size();
  out.envs = models.size();
  out.values.resize(raw.size());
  for (std::size_t i = 0; i < raw.size(); ++i) {
    Estimate& e = out.values[i];
    e.iteration_us = e.raw_us = raw[i].iteration_us;
    e.lo_us = raw[i].lo_us;
    e.hi_us = raw[i].hi_us;
    e.ops = static_cast<std::int64_t>(traces[i / std::max<std::size_t>(1, out.envs)]->ops.size());
  }
  return out;
}

Prediction Predictor::predict_detailed(const ExecutionTrace& trace, const std::string& env) const {
  std::shared_ptr<const Model> m;
  {
    std::shared_lock lock(impl_->mu);
    m = impl_->resolve_envs({env}).front();
  }
  check_trace(trace, "the trace");
  const WindowBatch batch = m->encoder->encode(trace);
  const std::vector<float> y = m->lstm->predict(batch);
  try {
    return m->aggregator->aggregate(batch, y);
  } catch (const Error& e) {
    throw Error(e.code(), e.id(), fmt::format("the trace on environment '{}': {}", env, e.message()));
  }
}

void Predictor::observe(const std::string& job_id, const std::string& env, double measured_us) {
  ETS_CHECK(std::isfinite(measured_us) && measured_us > 0, Errc::invalid_argument, "ets.predict.3",
            "observed iteration time {} µs of job '{}' must be finite and > 0", measured_us, job_id);
  std::shared_ptr<Job> job;
  std::shared_ptr<const Model> model;
  {
    std::shared_lock lock(impl_->mu);
    job = impl_->job_locked(job_id);
    model = impl_->resolve_envs({env}).front();
  }
  const double raw = impl_->estimate({job}, {model}, {job_id}).values.front().raw_us;
  ETS_CHECK(std::isfinite(raw) && raw > 0, Errc::invalid_argument, "ets.predict.3",
            "job '{}' on '{}' has a non-positive prediction ({} µs); nothing to correct", job_id, env, raw);
  const double lim = std::log(impl_->opt.max_ratio);
  const double r = std::clamp(std::log(measured_us / raw), -lim, lim);
  std::lock_guard lk(job->mu);
  auto& o = job->obs[env];
  // Serials only grow. Observations of a newer model stay: this one raced a replacement and measured the old model.
  if (o.serial > model->serial) return;
  if (o.serial != model->serial) o = Observations{model->serial, 0, 0};  // the first against this model
  const std::int64_t window = impl_->opt.max_observations;
  if (window > 0 && o.n >= window) {  // exponentially weighted: the oldest weigh less with every new one
    o.sum_log *= static_cast<double>(window - 1) / static_cast<double>(window);
    o.sum_log += r;
    o.n = window;
    return;
  }
  o.sum_log += r;
  ++o.n;
}

Predictor::Correction Predictor::correction(const std::string& job_id, const std::string& env) const {
  std::shared_ptr<Job> job;
  std::shared_ptr<const Model> model;
  {
    std::shared_lock lock(impl_->mu);
    job = impl_->job_locked(job_id);
    model = impl_->find_model(env);
  }
  if (!model) return {};  // no model, so nothing observed against one
  std::lock_guard lk(job->mu);
  return impl_->correction_of(*job, *model);
}

void Predictor::reset_observations(const std::string& job_id) {
  const std::shared_ptr<Job> job = impl_->job(job_id);
  std::lock_guard lk(job->mu);
  job->obs.clear();
}

}  // namespace ets
