// Points to evaluate first: the given configs, then the wrapped algorithm's, within its
// total (search/enqueued.h).
#include "search/enqueued.h"

#include <stdexcept>

#include "search/saved_state.h"

namespace ranktune::search {

Enqueued::Enqueued(std::unique_ptr<Searcher> inner, std::vector<Config> points)
    : inner_(std::move(inner)), points_(std::move(points)) {
  if (!inner_) throw std::invalid_argument("enqueued points: no inner searcher");
}

Suggestion Enqueued::suggest(TrialId id) {
  if (given_ < static_cast<std::int64_t>(points_.size())) {
    // Within the planned trials: a total smaller than the points cuts them.
    const std::int64_t total = inner_->total();
    if (total >= 0 && given_ >= total) return {Suggestion::Kind::Finished, {}};
    const Config& config = points_[static_cast<std::size_t>(given_++)];
    inner_->adopt(id, config);
    return {Suggestion::Kind::Config, config};
  }
  // The algorithm's own proposals fill what the points left of its total: it counts them
  // as its own suggestions, so it stops `points` early. Its count is in its state, so this
  // holds across a resume.
  const std::int64_t total = inner_->total();
  if (total >= 0 && given_ + inner_suggested_ >= total) return {Suggestion::Kind::Finished, {}};
  Suggestion s = inner_->suggest(id);
  if (s.kind == Suggestion::Kind::Config) ++inner_suggested_;
  return s;
}

std::string Enqueued::save() const {
  StateWriter w("enqueued", 1);
  w.field("given").integer(given_).field("proposed").integer(inner_suggested_);
  w.inner(inner_->save());
  return w.str();
}

void Enqueued::restore(const std::string& state) {
  StateReader r(state, "enqueued", 1, "points_to_evaluate");
  const std::int64_t given = r.integer_field("given", 0);
  r.require(given <= static_cast<std::int64_t>(points_.size()),
            "saved after " + std::to_string(given) + " points to evaluate, but the config now has " +
                std::to_string(points_.size()));
  const std::int64_t proposed = r.integer_field("proposed", 0);
  inner_->restore(r.inner());
  given_ = given;
  inner_suggested_ = proposed;
}

}  // namespace ranktune::search
