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
    : space_(std::move(space)), options_(std::move(options)), tpe_(tpe) {}

Suggestion TpeSearcher::suggest(TrialId id) {
  if (next_ >= options_.num_samples) return {Suggestion::Kind::Finished, {}};
  Rng rng = index_rng(options_.seed, static_cast<std::uint64_t>(next_++));
  Point point;
  if (observed_.size() < static_cast<std::size_t>(tpe_.n_startup)) {
    point = parzen::sample_point(space_, rng);
  } else {
    std::vector<parzen::Scored> scored;
    scored.reserve(observed_.size());
    for (const auto& o : observed_) scored.push_back({o.score, &o.point});
    std::vector<const Point*> running;
    if (tpe_.constant_liar) {
      running.reserve(pending_.size());
      for (const auto& [pid, p] : pending_) running.push_back(&p);
    }
    point = parzen::propose(space_, scored, tpe_.model(), rng, running, &sorted_);
  }
  Config config = parzen::decode(space_, point);
  pending_[id] = std::move(point);
  return {Suggestion::Kind::Config, std::move(config)};
}

void TpeSearcher::on_trial_complete(TrialId id, const Metrics& last, bool error) {
  const auto it = pending_.find(id);
  if (it == pending_.end()) return;  // not ours, or already complete
  Point point = std::move(it->second);
  pending_.erase(it);
  if (error) return;
  const auto m = last.find(options_.metric);
  if (m == last.end() || !std::isfinite(m->second)) return;
  observed_.push_back({id, sign(options_.mode) * m->second, std::move(point)});
  sorted_.add(space_, observed_.back().point);
}

std::string TpeSearcher::save() const {
  StateWriter w("tpe", 1);
  w.field("next").integer(next_);
  w.field("pending").integer(static_cast<std::int64_t>(pending_.size())).line();
  for (const auto& [id, point] : pending_) {
    w.integer(id);
    parzen::write_point(w, point);
    w.line();
  }
  w.field("observed").integer(static_cast<std::int64_t>(observed_.size())).line();
  for (const auto& o : observed_) {
    // The metric as reported, not the signed score, so the text reads like the results.
    w.integer(o.id).number(sign(options_.mode) * o.score);
    parzen::write_point(w, o.point);
    w.line();
  }
  return w.str();
}

void TpeSearcher::restore(const std::string& state) {
  StateReader r(state, "tpe", 1, "tpe searcher");
  const std::int64_t next = r.integer_field("next", 0);
  std::map<TrialId, Point> pending;
  for (std::size_t n = r.count_field("pending"); n > 0; --n) {
    const TrialId id = r.integer("a pending trial id");
    pending[id] = parzen::read_point(r, space_);
  }
  std::vector<Observation> observed;
  for (std::size_t n = r.count_field("observed"); n > 0; --n) {
    Observation o{};
    o.id = r.integer("an observation's id");
    o.score = sign(options_.mode) * r.finite("an observation's value");
    o.point = parzen::read_point(r, space_);
    observed.push_back(std::move(o));
  }
  r.finish();
  next_ = next;
  pending_ = std::move(pending);
  observed_ = std::move(observed);
  std::vector<const Point*> points;
  points.reserve(observed_.size());
  for (const auto& o : observed_) points.push_back(&o.point);
  sorted_.assign(space_, points);
}

}  // namespace ranktune::search
