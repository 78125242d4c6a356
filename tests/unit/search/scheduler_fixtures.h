#pragma once
// Shared by the decision-sequence tests of the schedulers (scheduler_test, mo_asha_test): the
// trial table a controller would keep, and results fed to a scheduler one by one.

#include <cstddef>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "search/scheduler.h"

namespace ranktune::search::fixtures {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr Decision C = Decision::Continue;
constexpr Decision S = Decision::Stop;

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

}  // namespace ranktune::search::fixtures
