// cluster_sim's discrete-event scheduler: gang-scheduled jobs on a cluster of identical GPUs under FIFO / SJF / SRTF /
// EDF, each ranking jobs by a predictor's view of their length (docs/scheduling.md, Policies). Header-only so that
// tests/unit/cluster_sim_schedule_test.cpp can check it against the direct re-rank-everything-at-every-event form.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <map>
#include <numeric>
#include <set>
#include <utility>
#include <vector>

#include <ets/error.hpp>

namespace cluster_sim {

// EdfPlain: EDF on finish deadlines, which reads no prediction; the reference for what predictions add to EDF.
enum class Policy { Fifo, Sjf, Srtf, Edf, EdfPlain };

inline const char* policy_name(Policy p) {
  return p == Policy::Fifo ? "FIFO" : p == Policy::Sjf ? "SJF" : p == Policy::Srtf ? "SRTF" : p == Policy::Edf ? "EDF"
                                                                                                              : "EDF-plain";
}

struct Job {
  double submit = 0, duration = 0, deadline = 0;
  int gpus = 1;
  std::size_t config = 0;
};

struct Metrics {
  double avg_jct_h = 0, p99_jct_h = 0, makespan_h = 0, total_tardiness_h = 0, mean_tardiness_h = 0;
  int misses = 0, preemptions = 0;
};

// The metrics of a finished schedule: finish[j] is when job j completed.
inline Metrics summarize(const std::vector<Job>& jobs, const std::vector<double>& finish, int preemptions) {
  const std::size_t n = jobs.size();
  Metrics m;
  m.preemptions = preemptions;
  if (n == 0) return m;
  std::vector<double> jct(n);
  double first = INFINITY, last = 0;
  for (std::size_t j = 0; j < n; ++j) {
    jct[j] = finish[j] - jobs[j].submit;
    first = std::min(first, jobs[j].submit);
    last = std::max(last, finish[j]);
    const double tard = std::max(0.0, finish[j] - jobs[j].deadline);
    m.total_tardiness_h += tard / 3600;
    m.misses += tard > 0;
  }
  m.avg_jct_h = std::accumulate(jct.begin(), jct.end(), 0.0) / static_cast<double>(n) / 3600;
  std::sort(jct.begin(), jct.end());
  // nearest rank: the ⌈0.99 n⌉-th smallest (index 1,979 of 2,000; of 100 jobs the 99th, not the largest)
  const auto rank = static_cast<std::size_t>(std::ceil(0.99 * static_cast<double>(n)));
  m.p99_jct_h = jct[std::min(n - 1, std::max<std::size_t>(rank, 1) - 1)] / 3600;
  m.makespan_h = (last - first) / 3600;
  m.mean_tardiness_h = m.total_tardiness_h / static_cast<double>(n);
  return m;
}

// ratio(j, attained_s): the scheduler's predicted iteration time of job j divided by its true one, after the job has
// run attained_s seconds; it must depend on nothing else. Predicted remaining time = true remaining × ratio (the
// scheduler counts iterations exactly). Every job needs at least one GPU. finish_out, if given, receives each job's
// completion time.
//
// At every arrival and completion the scheduler ranks the candidates by (key, job index) and starts them in that
// order while they fit: the running jobs stay and only the queue is ranked (FIFO, SJF), or everything is re-ranked
// and whatever loses its place is preempted (SRTF, EDF, EDF-plain). Strict FIFO stops at the first job that does not
// fit; the others skip it (backfilling).
//
// Cost: a waiting job's key never changes (its remaining and attained time are frozen), so it is ranked once, when it
// joins the queue, in an ordered set per gang size. Each event then costs O((R + S) · (G + log Q)) for R running
// jobs, S started, G distinct gang sizes and Q queued, instead of ranking all Q queued jobs again: the start order
// is the same, since the next job the scan would start is the first in rank among those that fit the GPUs left (a
// job skipped earlier needed more than were free then, and fewer are free now).
template <typename Ratio>
Metrics simulate(const std::vector<Job>& jobs, int gpus, Policy policy, Ratio&& ratio,
                 std::vector<double>* finish_out = nullptr) {
  const std::size_t n = jobs.size();
  if (finish_out) finish_out->clear();
  if (n == 0) return Metrics{};
  int preemptions = 0;
  std::vector<double> remaining(n), attained(n, 0.0), finish(n, -1.0);
  for (std::size_t i = 0; i < n; ++i) remaining[i] = jobs[i].duration;
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return jobs[a].submit < jobs[b].submit; });
  const bool preemptive = policy == Policy::Srtf || policy == Policy::Edf || policy == Policy::EdfPlain;
  auto pred_remaining = [&](std::size_t j) { return remaining[j] * ratio(j, attained[j]); };
  auto key_of = [&](std::size_t j) -> double {
    switch (policy) {
      case Policy::Fifo: return jobs[j].submit;
      case Policy::Sjf: return jobs[j].duration * ratio(j, 0.0);
      case Policy::Srtf: return pred_remaining(j);
      case Policy::Edf:
        // EDF on start deadlines: the latest time the job can (re)start and still finish by its deadline,
        // deadline − predicted remaining time (least laxity first). Plain EDF on finish deadlines would ignore
        // job lengths, so predictions would play no part in it.
        return jobs[j].deadline - pred_remaining(j);
      case Policy::EdfPlain: return jobs[j].deadline;
    }
    return 0.0;
  };
  using Ranked = std::pair<double, std::size_t>;  // (key, job index): ties go to the lower index
  std::map<int, std::set<Ranked>> queue;          // waiting jobs by gang size, in rank order
  auto enqueue = [&](std::size_t j) { queue[jobs[j].gpus].emplace(key_of(j), j); };
  std::vector<std::size_t> running, next_running;
  std::vector<char> started(n, 0);
  std::size_t next = 0, done = 0;
  double t = jobs[order[0]].submit;
  while (done < n) {
    while (next < n && jobs[order[next]].submit <= t) enqueue(order[next++]);
    // ---- allocation at time t
    long long free = gpus;
    next_running.clear();
    for (std::size_t j : running) {
      if (preemptive) {
        enqueue(j);  // ranked again with what it has run since
      } else {
        free -= jobs[j].gpus;
        next_running.push_back(j);
      }
    }
    for (;;) {
      auto best = queue.end();
      for (auto it = queue.begin(); it != queue.end(); ++it) {
        if (policy != Policy::Fifo && it->first > free) break;  // sizes ascend: none further fits
        if (best == queue.end() || *it->second.begin() < *best->second.begin()) best = it;
      }
      // strict FIFO: the head of the queue blocks everyone behind it
      if (best == queue.end() || best->first > free) break;
      const std::size_t j = best->second.begin()->second;
      best->second.erase(best->second.begin());
      if (best->second.empty()) queue.erase(best);
      free -= jobs[j].gpus;
      started[j] = 1;
      next_running.push_back(j);
    }
    if (preemptive) {
      for (std::size_t j : running) preemptions += started[j] ? 0 : 1;
      for (std::size_t j : next_running) started[j] = 0;
    }
    running.swap(next_running);
    // ---- next event: an arrival or the first completion
    double dt = next < n ? jobs[order[next]].submit - t : INFINITY;
    for (std::size_t j : running) dt = std::min(dt, remaining[j]);
    ETS_CHECK(std::isfinite(dt), ets::Errc::invalid_argument, "ets.sim.4",
              "simulation stalled at t = {} s: a job needs more GPUs than the cluster has", t);
    dt = std::max(dt, 0.0);
    t += dt;
    next_running.clear();
    for (std::size_t j : running) {
      remaining[j] -= dt;
      attained[j] += dt;
      if (remaining[j] <= 1e-9 * std::max(1.0, jobs[j].duration)) {
        finish[j] = t;
        ++done;
      } else {
        next_running.push_back(j);
      }
    }
    running.swap(next_running);
  }
  if (finish_out) *finish_out = finish;
  return summarize(jobs, finish, preemptions);
}

}  // namespace cluster_sim
