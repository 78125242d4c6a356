// ConcurrencyLimiter: holds back suggestions while the inner searcher has as many live
// trials as allowed (search/concurrency_limiter.h).
#include "search/concurrency_limiter.h"

#include "search/saved_state.h"

#include <stdexcept>

namespace ranktune::search {

ConcurrencyLimiter::ConcurrencyLimiter(std::unique_ptr<Searcher> inner,
                                       std::int64_t max_concurrent)
    : inner_(std::move(inner)), max_concurrent_(max_concurrent) {
  if (!inner_) throw std::invalid_argument("concurrency limiter: no inner searcher");
  if (max_concurrent_ < 1) {
    throw std::invalid_argument("concurrency limiter: max_concurrent must be >= 1");
  }
}

Suggestion ConcurrencyLimiter::suggest(TrialId id) {
  // The inner searcher is not asked at the limit: asking would advance its state (a random
  // searcher's index, a TPE draw) for a suggestion that is then thrown away.
  if (static_cast<std::int64_t>(live_.size()) >= max_concurrent_) {
    return {Suggestion::Kind::NotNow, {}};
  }
  Suggestion s = inner_->suggest(id);
  if (s.kind == Suggestion::Kind::Config) live_.insert(id);
  return s;
}

void ConcurrencyLimiter::on_trial_result(TrialId id, std::int64_t iteration, const Metrics& metrics) {
  inner_->on_trial_result(id, iteration, metrics);
}

void ConcurrencyLimiter::on_trial_complete(TrialId id, const Metrics& last, bool error) {
  live_.erase(id);
  inner_->on_trial_complete(id, last, error);
}

std::string ConcurrencyLimiter::save() const {
  StateWriter w("concurrency_limiter", 1);
  w.field("live").integer(static_cast<std::int64_t>(live_.size()));
  for (TrialId id : live_) w.integer(id);
  w.inner(inner_->save());
  return w.str();
}

void ConcurrencyLimiter::restore(const std::string& state) {
  StateReader r(state, "concurrency_limiter", 1, "concurrency limiter");
  std::set<TrialId> live;
  for (std::size_t n = r.count_field("live"); n > 0; --n) live.insert(r.integer("a live trial id", 1));
  inner_->restore(r.inner());  // first: if it throws, this decorator is unchanged too
  live_ = std::move(live);
}

}  // namespace ranktune::search
