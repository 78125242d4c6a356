#pragma once
/// FIFO: every trial runs to its stopping condition, in creation order. The baseline that
/// the early-stopping schedulers are measured against.

#include <limits>

#include "search/scheduler.h"

namespace ranktune::search {

/// Creation order over the runnable (Pending or Paused) trials, amortized O(1) per pick:
/// a cursor skips trials that are running or done, and moves back when one is requeued.
/// The schedulers that run trials in FIFO order share it.
class FifoOrder {
 public:
  /// `paused_too` = false: only Pending trials, for schedulers that resume paused trials
  /// by their own rule (HyperBand, ASHA's promotion variant).
  explicit FifoOrder(bool paused_too = true) : paused_too_(paused_too) {}
  /// The first runnable trial, or nullopt. Idempotent.
  std::optional<TrialId> next(const std::vector<Trial>& trials);
  /// `trial` is runnable again (see Scheduler::on_trial_requeued).
  void requeued(const Trial& trial);

 private:
  std::size_t first_ = 0;  ///< trials before it are running or done
  bool paused_too_ = true;
};

class FifoScheduler final : public Scheduler {
 public:
  Decision on_trial_result(const Trial&) override { return Decision::Continue; }
  /// FIFO never decides anything: only the controller's own rules (max_t, target, budget)
  /// end a trial.
  std::int64_t next_decision(const Trial&) const override {
    return std::numeric_limits<std::int64_t>::max();
  }
  std::optional<TrialId> choose_trial_to_run(const std::vector<Trial>& trials) override {
    return order_.next(trials);
  }
  void on_trial_requeued(const Trial& trial) override { order_.requeued(trial); }
  std::string save() const override { return {}; }
  void restore(const std::string&) override {}

 private:
  FifoOrder order_;
};

}  // namespace ranktune::search
