#pragma once
/// FIFO: every trial runs to its stopping condition, in creation order. The baseline that
/// the early-stopping schedulers are measured against.

#include "search/scheduler.h"

namespace ranktune::search {

class FifoScheduler final : public Scheduler {
 public:
  Decision on_trial_result(const Trial&) override { return Decision::Continue; }
  std::optional<TrialId> choose_trial_to_run(const std::vector<Trial>& trials) override;
  std::string save() const override { return {}; }
  void restore(const std::string&) override {}
};

}  // namespace ranktune::search
