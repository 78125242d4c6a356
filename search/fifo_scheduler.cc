#include "search/fifo_scheduler.h"

namespace ranktune::search {

std::optional<TrialId> FifoScheduler::choose_trial_to_run(const std::vector<Trial>& trials) {
  for (const auto& t : trials) {
    if (t.status == TrialStatus::Pending || t.status == TrialStatus::Paused) return t.id;
  }
  return std::nullopt;
}

}  // namespace ranktune::search
