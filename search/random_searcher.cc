// Random search's suggestions over the crossed grid axes, and its saved state
// (search/random_searcher.h: the algorithm and its paper, Bergstra & Bengio, JMLR 2012).
#include "search/random_searcher.h"

#include <stdexcept>

#include "search/saved_state.h"

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
  drop_inactive(space_, config);
  return {Suggestion::Kind::Config, std::move(config)};
}

// The whole state is the index of the next suggestion, without a header (its only layout).
std::string RandomSearcher::save() const { return std::to_string(next_); }

void RandomSearcher::restore(const std::string& state) {
  StateReader r = StateReader::untagged(state, "random searcher");
  const std::int64_t next = r.integer("the next suggestion's index", 0);
  r.finish();
  next_ = next;
}

}  // namespace ranktune::search
