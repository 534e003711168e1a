// examples/cluster_sim's scheduler (simulate.hpp) keeps its queue ranked per gang size instead of re-ranking every
// waiting job at every event. These tests hold it to the direct form below, which ranks every arrived job at every
// event and scans them all: the same schedules (every job's finish time equal to the last bit, hence every metric,
// and the same preemptions) on random clusters built to hit the hard cases (gangs that do not fit, ties in submit
// time and in key, keys that move as a job runs).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include <ets/error.hpp>

#include "../../examples/cluster_sim/simulate.hpp"

namespace {

using cluster_sim::Job;
using cluster_sim::Metrics;
using cluster_sim::Policy;

// The direct form: at every event, rank all arrived jobs (FIFO, SJF: only those not running) by (key, index) and
// start them in that order while they fit; strict FIFO stops at the first that does not.
template <typename Ratio>
Metrics simulate_direct(const std::vector<Job>& jobs, int gpus, Policy policy, Ratio&& ratio,
                        std::vector<double>* finish_out) {
  const std::size_t n = jobs.size();
  std::vector<double> remaining(n), attained(n, 0.0), finish(n, -1.0);
  std::vector<char> running(n, 0), now_running(n, 0);
  for (std::size_t i = 0; i < n; ++i) remaining[i] = jobs[i].duration;
  std::vector<std::size_t> order(n), active, cand, still;
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return jobs[a].submit < jobs[b].submit; });
  std::vector<double> key(n, 0.0);
  const bool preemptive = policy != Policy::Fifo && policy != Policy::Sjf;
  std::size_t next = 0, done = 0;
  double t = jobs[order[0]].submit;
  int preemptions = 0;
  while (done < n) {
    while (next < n && jobs[order[next]].submit <= t) active.push_back(order[next++]);
    cand.clear();
    int used = 0;
    for (std::size_t j : active) {
      if (!preemptive && running[j]) {
        used += jobs[j].gpus;
        continue;
      }
      cand.push_back(j);
      const double left = remaining[j] * ratio(j, attained[j]);
      key[j] = policy == Policy::Fifo   ? jobs[j].submit
               : policy == Policy::Sjf  ? jobs[j].duration * ratio(j, 0.0)
               : policy == Policy::Srtf ? left
               : policy == Policy::Edf  ? jobs[j].deadline - left
                                        : jobs[j].deadline;
    }
    std::sort(cand.begin(), cand.end(), [&](std::size_t a, std::size_t b) {
      return key[a] != key[b] ? key[a] < key[b] : a < b;
    });
    for (std::size_t j : active) now_running[j] = preemptive ? 0 : running[j];
    for (std::size_t j : cand) {
      if (used + jobs[j].gpus <= gpus) {
        now_running[j] = 1;
        used += jobs[j].gpus;
      } else if (policy == Policy::Fifo) {
        break;
      }
    }
    for (std::size_t j : active) {
      preemptions += running[j] && !now_running[j];
      running[j] = now_running[j];
    }
    double dt = next < n ? jobs[order[next]].submit - t : INFINITY;
    for (std::size_t j : active)
      if (running[j]) dt = std::min(dt, remaining[j]);
    ETS_CHECK(std::isfinite(dt), ets::Errc::invalid_argument, "ets.sim.4", "stalled at t = {} s", t);
    t += std::max(dt, 0.0);
    still.clear();
    for (std::size_t j : active) {
      if (running[j]) {
        remaining[j] -= std::max(dt, 0.0);
        attained[j] += std::max(dt, 0.0);
        if (remaining[j] <= 1e-9 * std::max(1.0, jobs[j].duration)) {
          finish[j] = t;
          running[j] = 0;
          ++done;
          continue;
        }
      }
      still.push_back(j);
    }
    active.swap(still);
  }
  *finish_out = finish;
  return cluster_sim::summarize(jobs, finish, preemptions);
}

// A random cluster: whole-second submit times bunched so that many share one, a few repeated durations (ties in SJF
// and SRTF keys), gangs of 1..gpus GPUs mostly small, deadlines 1.2–3× the duration.
std::vector<Job> random_jobs(std::mt19937_64& rng, std::size_t n, int gpus) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const double durations[] = {60, 300, 300, 1800, 7200};
  std::vector<Job> jobs(n);
  double t = 0;
  for (auto& j : jobs) {
    if (u(rng) < 0.6) t += std::floor(u(rng) * 400);
    j.submit = t;
    j.duration = u(rng) < 0.4 ? durations[rng() % 5] : 30 + std::floor(u(rng) * 10000);
    j.gpus = u(rng) < 0.5 ? 1 : 1 + static_cast<int>(rng() % static_cast<unsigned>(gpus));
    j.deadline = j.submit + (1.2 + 1.8 * u(rng)) * j.duration;
    j.config = rng() % 7;
  }
  return jobs;
}

// The ranked-queue and the direct form on one cluster: every job's finish time (hence every metric), and the
// preemptions, equal to the last bit. Returns the ranked-queue form's metrics.
template <typename Ratio>
Metrics check_same_schedule(const std::vector<Job>& jobs, int gpus, Policy p, Ratio&& ratio) {
  std::vector<double> fast_finish, direct_finish;
  const Metrics fast = cluster_sim::simulate(jobs, gpus, p, ratio, &fast_finish);
  const Metrics direct = simulate_direct(jobs, gpus, p, ratio, &direct_finish);
  CHECK(fast_finish == direct_finish);
  CHECK(fast.preemptions == direct.preemptions);
  return fast;
}

const Policy kPolicies[] = {Policy::Fifo, Policy::Sjf, Policy::Srtf, Policy::Edf, Policy::EdfPlain};

}  // namespace

TEST_CASE("cluster_sim: the ranked queue schedules exactly as re-ranking every job at every event") {
  std::mt19937_64 rng(20261205);
  int preempting_runs = 0, contended_runs = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const int gpus = 1 + static_cast<int>(rng() % 16);
    const auto jobs = random_jobs(rng, 1 + rng() % 250, gpus);
    std::vector<double> bias(7);
    for (double& b : bias) b = std::exp(std::normal_distribution<double>(0.0, 0.4)(rng));
    // three predictors: the oracle, a fixed error per configuration, and one corrected as the job runs (the
    // observe() form of cluster_sim's ets+observe), so that a running job's key moves between events
    auto oracle = [](std::size_t, double) { return 1.0; };
    auto fixed = [&](std::size_t j, double) { return bias[jobs[j].config]; };
    auto observed = [&](std::size_t j, double attained) {
      const double k = std::min(std::floor(attained / 60.0), 1e6);
      return std::pow(bias[jobs[j].config], 1.0 - k / (k + 2.0));
    };
    for (Policy p : kPolicies) {
      CAPTURE(trial, gpus, jobs.size(), cluster_sim::policy_name(p));
      const Metrics a = check_same_schedule(jobs, gpus, p, oracle);
      check_same_schedule(jobs, gpus, p, fixed);
      const Metrics o = check_same_schedule(jobs, gpus, p, observed);
      preempting_runs += o.preemptions > 0;
      contended_runs += a.avg_jct_h * 3600 > 1.5 * std::accumulate(jobs.begin(), jobs.end(), 0.0, [](double s, const Job& j) {
        return s + j.duration;
      }) / static_cast<double>(jobs.size());
    }
  }
  // the random clusters did reach the cases that matter: queues that wait and preemptions
  CHECK(preempting_runs > 20);
  CHECK(contended_runs > 50);
}

TEST_CASE("cluster_sim: gang sizes that only fit after others leave are started in rank order") {
  // 4 GPUs, all three jobs submitted at t = 0: whichever of job 0 (3 GPUs) and job 1 (2 GPUs) ranks first leaves
  // the other waiting; job 2 (1 GPU) backfills, except under strict FIFO, where a waiting job 1 blocks it.
  std::vector<Job> jobs(3);
  jobs[0] = {0, 100, 1000, 3, 0};
  jobs[1] = {0, 10, 1000, 2, 0};
  jobs[2] = {0, 50, 1000, 1, 0};
  auto oracle = [](std::size_t, double) { return 1.0; };
  for (Policy p : kPolicies) {
    CAPTURE(cluster_sim::policy_name(p));
    check_same_schedule(jobs, 4, p, oracle);
  }
  // SJF: job 1 (10 s) and job 2 (50 s) start at once (3 GPUs); job 0 fits when job 1 leaves → JCTs 10, 50, 110
  const Metrics sjf = cluster_sim::simulate(jobs, 4, Policy::Sjf, oracle);
  CHECK(sjf.avg_jct_h * 3600 == Approx((10.0 + 50.0 + 110.0) / 3));
  // FIFO: job 0 first (3 GPUs); job 1 does not fit and blocks job 2 → JCTs 100, 110, 150
  const Metrics fifo = cluster_sim::simulate(jobs, 4, Policy::Fifo, oracle);
  CHECK(fifo.avg_jct_h * 3600 == Approx((100.0 + 110.0 + 150.0) / 3));
}

TEST_CASE("cluster_sim: a job larger than the cluster stalls the simulation with ets.sim.4") {
  std::vector<Job> jobs(2);
  jobs[0] = {0, 100, 1000, 2, 0};
  jobs[1] = {5, 100, 1000, 9, 0};
  auto oracle = [](std::size_t, double) { return 1.0; };
  for (Policy p : kPolicies) {
    CAPTURE(cluster_sim::policy_name(p));
    REQUIRE_THROWS_WITH(cluster_sim::simulate(jobs, 8, p, oracle), Catch::Contains("[ets.sim.4]"));
  }
  CHECK(cluster_sim::simulate(std::vector<Job>{}, 8, Policy::Sjf, oracle).preemptions == 0);
}
