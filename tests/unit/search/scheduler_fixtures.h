#pragma once
// Shared by the decision-sequence tests of the schedulers (scheduler_test, mo_asha_test,
// mo_hyperband_test, mo_asha_promotion_test): the trial table a controller would keep, results
// fed to a scheduler one by one, and whole runs of the schedulers that pause and resume.

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <limits>
#include <memory>
#include <random>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "search/objectives.h"
#include "search/scheduler.h"

namespace ranktune::search::fixtures {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr Decision C = Decision::Continue;
constexpr Decision S = Decision::Stop;
constexpr Decision P = Decision::Pause;

struct SchedulerFeed {
  std::unique_ptr<Scheduler> sched;
  std::vector<Trial> trials;

  explicit SchedulerFeed(std::unique_ptr<Scheduler> s) : sched(std::move(s)) {}

  /// `n` more trials, ids from 1 on, added and running.
  void add(int n) {
    for (int i = 0; i < n; ++i) {
      Trial& t = trials.emplace_back();
      t.id = static_cast<TrialId>(trials.size());
      sched->on_trial_add(t);
      t.status = TrialStatus::Running;
    }
  }
  Trial& trial(TrialId id) { return trials.at(static_cast<std::size_t>(id - 1)); }
  /// Trial `id` reports its next iteration with these metrics, as the controller would: a
  /// Stop ends it.
  Decision report_metrics(TrialId id, Metrics m) {
    Trial& t = trial(id);
    ++t.iterations;
    t.last_metrics = std::move(m);
    const Decision d = sched->on_trial_result(t);
    if (d == Decision::Stop) {
      t.status = TrialStatus::Terminated;
      sched->on_trial_complete(t);
    }
    return d;
  }
};

/// The objectives of the multi-objective tests: acc (max) and size (min), feasible when
/// latency <= 2 (`constrained`).
inline Objectives acc_size(bool constrained = true) {
  Objectives o{{"acc", "size"}, {Mode::Max, Mode::Min}, {}};
  if (constrained) o.constraints.push_back({"latency", true, 2.0});
  return o;
}

/// A SchedulerFeed for the schedulers that pause: a Pause pauses the trial, resume() runs the
/// scheduler's choice, and abandoned() ends the trials it abandons as the controller does.
struct PausingFeed : SchedulerFeed {
  using SchedulerFeed::SchedulerFeed;
  Decision report(TrialId id, Metrics m) {
    const Decision d = report_metrics(id, std::move(m));
    if (d == Decision::Pause) trial(id).status = TrialStatus::Paused;
    return d;
  }
  Decision report(TrialId id, double acc, double size, double latency = 1.0) {
    return report(id, {{"acc", acc}, {"size", size}, {"latency", latency}});
  }
  std::optional<TrialId> resume() {
    const auto id = sched->choose_trial_to_run(trials);
    if (id) trial(*id).status = TrialStatus::Running;
    return id;
  }
  std::vector<TrialId> abandoned() {
    const auto ids = sched->take_abandoned();
    for (const TrialId id : ids) {
      trial(id).status = TrialStatus::Terminated;
      sched->on_trial_complete(trial(id));
    }
    return ids;
  }
};

/// Restoring `state` into `s` must throw std::invalid_argument containing `says`, and leave
/// `s` as it was.
inline void expect_refused(Scheduler& s, const std::string& state, const std::string& says) {
  const std::string before = s.save();
  try {
    s.restore(state);
    ADD_FAILURE() << "accepted: " << state;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
  }
  EXPECT_EQ(s.save(), before) << "a refused state changed the scheduler";
}

/// `state` with the first `from` replaced by `to` (which must be there).
inline std::string replaced(std::string state, const std::string& from, const std::string& to) {
  const auto at = state.find(from);
  EXPECT_NE(at, std::string::npos) << from << " not in " << state;
  if (at != std::string::npos) state.replace(at, from.size(), to);
  return state;
}

/// A run as a controller makes it, for the schedulers that pause and resume (HyperBand, ASHA's
/// promotion variant), with every decision logged. Each round, free workers take the
/// scheduler's choice, or a new trial while fewer than `total` exist (then the searcher is
/// finished); every running trial reports its next iteration with `result(id, iteration)`
/// (an empty Metrics: the attempt fails instead); a Stop or max_t ends it, a Pause pauses it
/// with its checkpoint stored at once, and the trials the scheduler abandons end.
struct PausingRun {
  using Result = std::function<Metrics(TrialId, std::int64_t)>;
  std::unique_ptr<Scheduler> sched;
  Result result;
  std::int64_t total = 0;
  std::int64_t max_t = 0;
  int workers = 1;
  std::vector<Trial> trials;
  std::vector<std::string> log;
  bool searcher_finished = false;

  PausingRun(std::unique_ptr<Scheduler> s, Result r, std::int64_t total_trials, std::int64_t max_iterations, int n_workers)
      : sched(std::move(s)), result(std::move(r)), total(total_trials), max_t(max_iterations), workers(n_workers) {}

  Trial& trial(TrialId id) { return trials.at(static_cast<std::size_t>(id - 1)); }
  int running() const {
    int n = 0;
    for (const Trial& t : trials) n += t.status == TrialStatus::Running ? 1 : 0;
    return n;
  }
  void end_abandoned() {
    for (const TrialId id : sched->take_abandoned()) {
      log.push_back("abandon " + std::to_string(id));
      Trial& t = trial(id);
      if (t.status != TrialStatus::Paused) continue;
      t.status = TrialStatus::Terminated;
      sched->on_trial_complete(t);
    }
  }
  std::optional<TrialId> choose() {
    auto id = sched->choose_trial_to_run(trials);
    if (id || searcher_finished) return id;
    if (static_cast<std::int64_t>(trials.size()) == total) {
      searcher_finished = true;
      sched->on_searcher_finished();
      end_abandoned();
    } else {
      Trial& t = trials.emplace_back();
      t.id = static_cast<TrialId>(trials.size());
      sched->on_trial_add(t);
    }
    return sched->choose_trial_to_run(trials);
  }
  void round() {
    while (running() < workers) {
      const auto id = choose();
      log.push_back("choose " + (id ? std::to_string(*id) : std::string("none")));
      if (!id) break;
      trial(*id).status = TrialStatus::Running;
    }
    for (Trial& t : trials) {
      if (t.status != TrialStatus::Running) continue;
      ++t.iterations;
      t.last_metrics = result(t.id, t.iterations);
      std::string line = std::to_string(t.id) + "@" + std::to_string(t.iterations) + " ";
      if (t.last_metrics.empty()) {
        t.status = TrialStatus::Error;
        sched->on_trial_error(t);
        log.push_back(line + "error");
      } else {
        for (const auto& [name, v] : t.last_metrics)
          if (std::isfinite(v) && name == "loss") t.last = v;  // as the controller keeps it
        const Decision d = t.iterations >= max_t ? Decision::Stop : sched->on_trial_result(t);
        log.push_back(line + to_string(d) + " next " + std::to_string(sched->next_decision(t)));
        if (d == Decision::Stop) {
          t.status = TrialStatus::Terminated;
          sched->on_trial_complete(t);
        } else if (d == Decision::Pause) {
          t.status = TrialStatus::Paused;
          sched->on_trial_requeued(t);
        }
      }
      end_abandoned();
    }
  }
  /// Rounds until nothing runs (or `rounds` have passed).
  void run(int rounds = 100000) {
    for (int i = 0; i < rounds; ++i) {
      round();
      if (running() == 0) break;
    }
  }
};

/// Results of trial `id` at `iteration` that depend on nothing else, so that runs of two
/// schedulers see the same ones: "loss" from a small set (ties), now and then NaN, ±inf, a
/// result without it ("other") or a failed attempt (no metrics); with `two`, also "size" and
/// "latency".
inline PausingRun::Result random_results(std::uint64_t seed, bool two) {
  return [seed, two](TrialId id, std::int64_t iteration) {
    std::mt19937_64 g(seed * 1000003u + static_cast<std::uint64_t>(id) * 7919u + static_cast<std::uint64_t>(iteration));
    std::uniform_int_distribution<int> value(0, 5), rare(0, 39);
    const int r = rare(g);
    if (r == 0) return Metrics{};
    if (r == 1) return Metrics{{"other", 1.0}};
    const double v = r == 2 ? kNaN : r == 3 ? kInf : r == 4 ? -kInf : value(g);
    Metrics m{{"loss", v}};
    if (two) {
      m["size"] = value(g);
      m["latency"] = value(g);
    }
    return m;
  };
}

/// Runs a scheduler from `make` for `rounds` rounds of a PausingRun (`results`, `total`
/// trials, `max_t`, `workers`), saves it (the state must start with `header`), restores that
/// into another from `make`, which must then save the same, and runs both to the end from the
/// same trial table: their logs and final states must be the same. Returns the first run's log
/// after the save.
inline std::vector<std::string> same_future_after_restore(const std::function<std::unique_ptr<Scheduler>()>& make,
                                                          const PausingRun::Result& results, std::int64_t total,
                                                          std::int64_t max_t, int workers, int rounds,
                                                          const std::string& header) {
  PausingRun a(make(), results, total, max_t, workers);
  for (int i = 0; i < rounds; ++i) a.round();
  const std::string state = a.sched->save();
  EXPECT_EQ(state.rfind(header, 0), 0u) << state;
  PausingRun b(make(), results, total, max_t, workers);
  b.sched->restore(state);
  EXPECT_EQ(b.sched->save(), state);
  b.trials = a.trials;
  b.searcher_finished = a.searcher_finished;
  a.log.clear();
  a.run();
  b.run();
  EXPECT_EQ(a.log, b.log);
  EXPECT_EQ(a.sched->save(), b.sched->save());
  return a.log;
}

/// The lines of `log` that contain `part`.
inline std::size_t count_of(const std::vector<std::string>& log, const std::string& part) {
  std::size_t n = 0;
  for (const std::string& line : log) n += line.find(part) != std::string::npos ? 1 : 0;
  return n;
}

}  // namespace ranktune::search::fixtures
