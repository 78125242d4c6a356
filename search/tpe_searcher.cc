// TPE's options, suggestions, observations and saved state (search/tpe_searcher.h: the
// algorithm and its paper, Bergstra et al., NeurIPS 2011; the model is search/parzen.cc).
#include "search/tpe_searcher.h"

#include <cmath>
#include <stdexcept>

#include "search/saved_state.h"

namespace ranktune::search {

TpeOptions TpeOptions::read(const Options& options) {
  OptionReader r(options, "tpe");
  TpeOptions t;
  t.n_startup = r.integer("n_startup", t.n_startup);
  r.require(t.n_startup >= 1, "n_startup", "must be >= 1 (got " + std::to_string(t.n_startup) + ")");
  r.at_most("n_startup", t.n_startup, kMaxTrials);
  const auto m = parzen::ModelOptions::read(r, t.model());
  t.gamma = m.gamma;
  t.n_ei_candidates = m.n_ei_candidates;
  t.prior_weight = m.prior_weight;
  t.multivariate = m.multivariate;
  t.constant_liar = r.flag("constant_liar", t.constant_liar);
  r.finish();
  return t;
}

TpeSearcher::TpeSearcher(Space space, SearcherOptions options, TpeOptions tpe)
    : space_(std::move(space)), options_(std::move(options)), tpe_(tpe), log_(options_.metric, options_.mode) {}

Suggestion TpeSearcher::suggest(TrialId id) {
  if (next_ >= options_.num_samples) return {Suggestion::Kind::Finished, {}};
  Rng rng = index_rng(options_.seed, static_cast<std::uint64_t>(next_++));
  Point point;
  if (log_.observed().size() < static_cast<std::size_t>(tpe_.n_startup)) {
    point = parzen::sample_point(space_, rng);
  } else {
    std::vector<parzen::Scored> scored;
    scored.reserve(log_.observed().size());
    for (const auto& o : log_.observed()) scored.push_back({o.score, &o.point});
    std::vector<const Point*> running;
    if (tpe_.constant_liar) {
      running.reserve(log_.pending().size());
      for (const auto& [pid, p] : log_.pending()) running.push_back(&p);
    }
    point = parzen::propose(space_, scored, tpe_.model(), rng, running, &sorted_);
  }
  Config config = parzen::decode(space_, point);
  log_.suggest(id, std::move(point));
  return {Suggestion::Kind::Config, std::move(config)};
}

void TpeSearcher::on_trial_complete(TrialId id, const Metrics& last, bool error) {
  if (const auto* o = log_.complete(id, last, error)) sorted_.add(space_, o->point);
}

std::string TpeSearcher::save() const {
  StateWriter w("tpe", 1);
  w.field("next").integer(next_);
  log_.write(w);
  return w.str();
}

void TpeSearcher::restore(const std::string& state) {
  StateReader r(state, "tpe", 1, "tpe searcher");
  const std::int64_t next = r.integer_field("next", 0);
  ObservationLog log(options_.metric, options_.mode);
  log.read(r, space_);
  r.finish();
  next_ = next;
  log_ = std::move(log);
  std::vector<const Point*> points;
  points.reserve(log_.observed().size());
  for (const auto& o : log_.observed()) points.push_back(&o.point);
  sorted_.assign(space_, points);
}

}  // namespace ranktune::search
