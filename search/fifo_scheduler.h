#pragma once
/// FIFO: every trial runs to its stopping condition, in creation order. The baseline that
/// the early-stopping schedulers are measured against.

#include <limits>

#include "search/scheduler.h"

namespace ranktune::search {

class FifoScheduler final : public Scheduler {
 public:
  Decision on_trial_result(const Trial&) override { return Decision::Continue; }
  /// FIFO never decides anything: only the controller's own rules (max_t, target, budget)
  /// end a trial.
  std::int64_t next_decision(const Trial&) const override {
    return std::numeric_limits<std::int64_t>::max();
  }
  std::optional<TrialId> choose_trial_to_run(const std::vector<Trial>& trials) override;
  std::string save() const override { return {}; }
  void restore(const std::string&) override {}
};

}  // namespace ranktune::search
