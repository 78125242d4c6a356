#include "search/concurrency_limiter.h"

#include "search/saved_state.h"

#include <sstream>
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
  std::ostringstream out;
  out << "concurrency_limiter 1\nlive " << live_.size();
  for (TrialId id : live_) out << ' ' << id;
  write_inner(out, inner_->save());
  return out.str();
}

void ConcurrencyLimiter::restore(const std::string& state) {
  const auto bad = [](const std::string& why) {
    return std::invalid_argument("concurrency limiter: bad saved state: " + why);
  };
  std::istringstream in(state);
  std::string word;
  int version = 0;
  if (!(in >> word >> version) || word != "concurrency_limiter" || version != 1) {
    throw bad("expected 'concurrency_limiter 1'");
  }
  long long n = -1;
  if (!(in >> word >> n) || word != "live" || n < 0) throw bad("expected 'live N'");
  std::set<TrialId> live;
  for (; n > 0; --n) {
    TrialId id = 0;
    if (!(in >> id) || id < 1) throw bad("expected a live trial id");
    live.insert(id);
  }
  inner_->restore(read_inner(in));  // first: if it throws, this decorator is unchanged too
  live_ = std::move(live);
}

}  // namespace ranktune::search
