#include "search/random_searcher.h"

#include <stdexcept>

namespace ranktune::search {

RandomSearcher::RandomSearcher(Space space, SearcherOptions options)
    : space_(std::move(space)),
      options_(options),
      total_(options.num_samples * static_cast<std::int64_t>(space_.grid_size())) {}

Suggestion RandomSearcher::suggest(TrialId id) {
  if (next_ >= total_) return {Suggestion::Kind::Finished, {}};
  const auto k = static_cast<std::size_t>(next_++);
  // A config depends only on (seed, index): resume need only remember the index.
  Rng rng = index_rng(options_.seed, k);
  Config config = grid_point(space_, k % space_.grid_size());
  for (const auto& p : space_.params) {
    if (p.domain.kind != DomainKind::Grid) config[p.name] = sample(p.domain, rng);
  }
  return {Suggestion::Kind::Config, std::move(config)};
}

std::string RandomSearcher::save() const { return std::to_string(next_); }

void RandomSearcher::restore(const std::string& state) {
  try {
    std::size_t used = 0;
    const long long n = std::stoll(state, &used);
    if (used != state.size() || n < 0) throw std::invalid_argument(state);
    next_ = n;
  } catch (const std::exception&) {
    throw std::invalid_argument("random searcher: bad saved state '" + state + "'");
  }
}

}  // namespace ranktune::search
