#pragma once
/// `[stop] max_total_steps`: a budget in iterations over all trials, exact with any number of
/// workers. Workers run ahead of decisions on leases (a Start or Continue says up to which
/// iteration), so counting results after the fact would overshoot by up to a lease per
/// worker. Instead every lease is granted from the budget: a lease never holds more
/// iterations than are left, and what a trial did not run of its lease comes back when it
/// stops or pauses. Then the results recorded never exceed the budget, and the experiment
/// ends when they reach it.

#include <cstdint>

#include "search/trial.h"

namespace ranktune::controller {

class StepBudget {
 public:
  /// `total` iterations in all; 0: no budget (leases are still tracked, never cut).
  explicit StepBudget(std::int64_t total = 0) : total_(total) {}

  /// Iterations a new lease may still grant (INT64_MAX without a budget).
  std::int64_t left() const;
  /// Sets t's lease to end at `until`, or as near it as left() allows; returns the end
  /// (t.iterations when nothing is left: the trial must stop).
  std::int64_t grant(search::Trial& t, std::int64_t until);
  /// Hands back what t did not run of its lease (it stopped, paused, or starts a new run).
  void give_back(search::Trial& t);
  /// t recorded a result (t.iterations already counts it): one iteration of its lease used.
  void record(const search::Trial& t);
  /// Iterations recorded: this run's, and those an earlier run left (set_done).
  std::int64_t done() const { return done_; }
  void set_done(std::int64_t steps) { done_ = steps; }
  /// A budget was set and every iteration of it is recorded.
  bool spent() const { return total_ > 0 && done_ >= total_; }
  std::int64_t total() const { return total_; }

 private:
  std::int64_t total_ = 0;
  std::int64_t done_ = 0;
  std::int64_t leased_ = 0;  // granted by leases, not yet recorded
};

}  // namespace ranktune::controller
