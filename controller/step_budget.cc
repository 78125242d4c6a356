// The step budget's leases (controller/step_budget.h says why leases are granted from it).
#include "controller/step_budget.h"

#include <algorithm>
#include <limits>

namespace ranktune::controller {

std::int64_t StepBudget::left() const {
  if (total_ <= 0) return std::numeric_limits<std::int64_t>::max();
  return std::max<std::int64_t>(0, total_ - done_ - leased_);
}

std::int64_t StepBudget::grant(search::Trial& t, std::int64_t until) {
  give_back(t);
  const std::int64_t extra = std::clamp<std::int64_t>(until - t.iterations, 0, left());
  t.lease_until = t.iterations + extra;
  leased_ += extra;
  return t.lease_until;
}

void StepBudget::give_back(search::Trial& t) {
  if (t.lease_until > t.iterations) leased_ -= t.lease_until - t.iterations;
  t.lease_until = t.iterations;
}

void StepBudget::record(const search::Trial& t) {
  ++done_;
  if (t.iterations <= t.lease_until) --leased_;  // a granted iteration, now recorded
}

}  // namespace ranktune::controller
