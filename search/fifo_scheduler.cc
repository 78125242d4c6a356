#include "search/fifo_scheduler.h"

#include <algorithm>

namespace ranktune::search {

std::optional<TrialId> FifoOrder::next(const std::vector<Trial>& trials) {
  // Skipping trials that cannot run does not change the answer, so this stays idempotent.
  while (first_ < trials.size()) {
    const Trial& t = trials[first_];
    if (paused_too_ ? t.runnable() : t.status == TrialStatus::Pending) return t.id;
    ++first_;
  }
  return std::nullopt;
}

void FifoOrder::requeued(const Trial& trial) {
  first_ = std::min(first_, static_cast<std::size_t>(trial.id - 1));
}

}  // namespace ranktune::search
