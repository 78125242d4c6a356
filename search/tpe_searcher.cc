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
  t.n_startup = r.positive_integer("n_startup", t.n_startup, kMaxTrials);
  const auto m = parzen::ModelOptions::read(r, t.model());
  t.gamma = m.gamma;
  t.n_ei_candidates = m.n_ei_candidates;
  t.prior_weight = m.prior_weight;
  t.multivariate = m.multivariate;
  t.constant_liar = r.flag("constant_liar", t.constant_liar);
  t.rank_by_depth = r.text("stopped_trials", "depth", {"depth", "value"}) == "depth";
  r.finish();
  return t;
}

TpeSearcher::TpeSearcher(Space space, SearcherOptions options, TpeOptions tpe)
    : NumSamplesSearcher(std::move(options)), space_(std::move(space)), tpe_(tpe) {}

Suggestion TpeSearcher::suggest(TrialId id) {
  if (next_ >= options_.num_samples) return {Suggestion::Kind::Finished, {}};
  Rng rng = index_rng(options_.seed, static_cast<std::uint64_t>(next_++));
  Point point;
  if (observed_.size() < static_cast<std::size_t>(tpe_.n_startup)) {
    point = parzen::sample_point(space_, rng);
  } else {
    std::vector<parzen::Scored> scored;
    scored.reserve(observed_.size());
    for (const auto& o : observed_) scored.push_back({o.score, &o.point, o.depth});
    std::vector<const Point*> running;
    if (tpe_.constant_liar) {
      running.reserve(pending_.size());
      for (const auto& [pid, p] : pending_) running.push_back(&p);
    }
    point = parzen::propose(space_, scored, tpe_.model(), rng, running, &sorted_);
  }
  Config config = parzen::settle(space_, point);  // inactive parameters: absent, NaN in the model
  pending_[id] = std::move(point);
  return {Suggestion::Kind::Config, std::move(config)};
}

void TpeSearcher::adopt(TrialId id, const Config& config) {
  Config active = config;
  drop_inactive(space_, active);
  pending_[id] = parzen::encode(space_, active);
}

void TpeSearcher::on_trial_result(TrialId id, std::int64_t iteration, const Metrics&) {
  if (pending_.count(id) > 0) reached_[id] = iteration;
}

void TpeSearcher::on_trial_complete(TrialId id, const Metrics& last, bool error) {
  const auto it = pending_.find(id);
  if (it == pending_.end()) return;  // not ours, or already complete
  Point point = std::move(it->second);
  pending_.erase(it);
  std::int64_t depth = 0;
  if (const auto r = reached_.find(id); r != reached_.end()) {
    if (tpe_.rank_by_depth && !legacy_ranking_) depth = r->second;
    reached_.erase(r);
  }
  if (error) return;
  const auto m = last.find(options_.metric);
  if (m == last.end() || !std::isfinite(m->second)) return;
  observed_.push_back({id, sign(options_.mode) * m->second, std::move(point), depth});
  sorted_.add(space_, observed_.back().point);
}

std::string TpeSearcher::save() const {
  // Version 2 adds each trial's depth (pending: the iteration it reached; observed: the depth
  // it ranks at) and whether the run ranks by value alone (it resumed a version 1 state).
  StateWriter w("tpe", 2);
  w.field("next").integer(next_);
  w.field("legacy_ranking").integer(legacy_ranking_ ? 1 : 0);
  w.field("pending").integer(static_cast<std::int64_t>(pending_.size())).line();
  for (const auto& [id, point] : pending_) {
    const auto r = reached_.find(id);
    w.integer(id).integer(r == reached_.end() ? 0 : r->second);
    parzen::write_point(w, point);
    w.line();
  }
  w.field("observed").integer(static_cast<std::int64_t>(observed_.size())).line();
  for (const auto& o : observed_) {
    // The metric as reported, not the signed score, so the text reads like the results.
    w.integer(o.id).number(sign(options_.mode) * o.score).integer(o.depth);
    parzen::write_point(w, o.point);
    w.line();
  }
  return w.str();
}

void TpeSearcher::restore(const std::string& state) {
  StateReader r(state, "tpe", 2, "tpe searcher");
  const bool v2 = r.version() >= 2;
  const std::int64_t next = r.integer_field("next", 0);
  // A version 1 state knows no depths: the run goes on ranking by value alone.
  const bool legacy = v2 ? r.integer_field("legacy_ranking", 0, 1) == 1 : true;
  std::map<TrialId, Point> pending;
  std::map<TrialId, std::int64_t> reached;
  for (std::size_t n = r.count_field("pending"); n > 0; --n) {
    const TrialId id = r.integer("a pending trial id");
    if (v2) {
      const std::int64_t at = r.integer("a pending trial's iteration", 0, kMaxIterations);
      if (at > 0) reached[id] = at;
    }
    pending[id] = parzen::read_point(r, space_);
  }
  std::vector<Observation> observed;
  for (std::size_t n = r.count_field("observed"); n > 0; --n) {
    Observation o{};
    o.id = r.integer("an observation's id");
    o.score = sign(options_.mode) * r.finite("an observation's value");
    if (v2) o.depth = r.integer("an observation's depth", 0, kMaxIterations);
    o.point = parzen::read_point(r, space_);
    observed.push_back(std::move(o));
  }
  r.finish();
  next_ = next;
  legacy_ranking_ = legacy;
  pending_ = std::move(pending);
  reached_ = std::move(reached);
  observed_ = std::move(observed);
  std::vector<const Point*> points;
  points.reserve(observed_.size());
  for (const auto& o : observed_) points.push_back(&o.point);
  sorted_.assign(space_, points);
}

}  // namespace ranktune::search
