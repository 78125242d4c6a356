// The recommendation rule: see recommend.h for what it is and why.
#include "search/recommend.h"

#include <algorithm>
#include <cmath>

namespace ranktune::search {

namespace {

bool counts(const Trial& t) { return t.status != TrialStatus::Error && std::isfinite(t.best); }

}  // namespace

std::int64_t deepest_iterations(const std::vector<const Trial*>& trials) {
  std::int64_t deepest = 0;
  for (const Trial* t : trials)
    if (counts(*t)) deepest = std::max(deepest, t->iterations);
  return deepest;
}

std::vector<const Trial*> recommendation_order(std::vector<const Trial*> trials, Mode mode) {
  const std::int64_t deepest = deepest_iterations(trials);
  const double s = sign(mode);
  // 0: deepest with a value, 1: others with a value, 2: no value, 3: ERROR.
  const auto tier = [&](const Trial& t) {
    if (t.status == TrialStatus::Error) return 3;
    if (!std::isfinite(t.best)) return 2;
    return t.iterations >= deepest ? 0 : 1;
  };
  std::stable_sort(trials.begin(), trials.end(), [&](const Trial* a, const Trial* b) {
    const int ta = tier(*a), tb = tier(*b);
    if (ta != tb) return ta < tb;
    // ERROR trials keep the order their values would give them (tier 3 mixes both kinds).
    const bool fa = std::isfinite(a->best), fb = std::isfinite(b->best);
    if (fa != fb) return fa;
    if (fa && a->best != b->best) return s * a->best > s * b->best;
    return a->id < b->id;
  });
  return trials;
}

const Trial* recommended(const std::vector<const Trial*>& trials, Mode mode) {
  const Trial* best = nullptr;
  const std::int64_t deepest = deepest_iterations(trials);
  for (const Trial* t : trials) {
    if (!counts(*t) || t->iterations < deepest) continue;
    if (best == nullptr || better(t->best, best->best, mode) || (t->best == best->best && t->id < best->id)) best = t;
  }
  return best;
}

}  // namespace ranktune::search
