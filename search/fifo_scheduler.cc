// FifoOrder: the next runnable trial in creation order, behind a cursor that moves back only
// on a requeue (search/fifo_scheduler.h).
#include "search/fifo_scheduler.h"

#include <algorithm>

namespace ranktune::search {

std::optional<TrialId> FifoOrder::next(const std::vector<Trial>& trials) {
  // Skipping trials that cannot run does not change the answer, so this stays idempotent.
  while (first_ < trials.size()) {
    const Trial& t = trials[first_];
    if (paused_too_ ? t.runnable() : t.status == TrialStatus::Pending && t.runnable()) return t.id;
    ++first_;
  }
  return std::nullopt;
}

void FifoOrder::requeued(const Trial& trial) {
  // An order of Pending trials never picks a paused one, so a pause need not move the
  // cursor back: with every scheduler pause requeued, that rescanned the trials after it,
  // O(trials) per pause.
  if (!paused_too_ && trial.status != TrialStatus::Pending) return;
  first_ = std::min(first_, static_cast<std::size_t>(trial.id - 1));
}

}  // namespace ranktune::search
