// TPE's options, suggestions, observations and saved state (search/tpe_searcher.h: the
// algorithm and its paper, Bergstra et al., NeurIPS 2011; the model is search/parzen.cc).
#include "search/tpe_searcher.h"

#include <cmath>
#include <stdexcept>

#include "search/motpe_split.h"
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
    : NumSamplesSearcher(std::move(options)), space_(std::move(space)), tpe_(tpe) {
  if (multi()) options_.objectives.check();
}

Suggestion TpeSearcher::suggest(TrialId id) {
  if (next_ >= options_.num_samples) return {Suggestion::Kind::Finished, {}};
  Rng rng = index_rng(options_.seed, static_cast<std::uint64_t>(next_++));
  Point point;
  if (observed_.size() < static_cast<std::size_t>(tpe_.n_startup)) {
    point = parzen::sample_point(space_, rng);
  } else {
    std::vector<const Point*> running;
    if (tpe_.constant_liar) {
      running.reserve(pending_.size());
      for (const auto& [pid, p] : pending_) running.push_back(&p);
    }
    if (multi()) {
      point = propose_multi(rng, running);
    } else {
      std::vector<parzen::Scored> scored;
      scored.reserve(observed_.size());
      for (const auto& o : observed_) scored.push_back({o.score, &o.point, o.depth});
      point = parzen::propose(space_, scored, tpe_.model(), rng, running, &sorted_);
    }
  }
  Config config = parzen::settle(space_, point);  // inactive parameters: absent, NaN in the model
  pending_[id] = std::move(point);
  return {Suggestion::Kind::Config, std::move(config)};
}

parzen::Point TpeSearcher::propose_multi(Rng& rng, const std::vector<const Point*>& running) const {
  std::vector<motpe::Observation> observations;
  std::vector<const Point*> points;
  observations.reserve(observed_.size());
  points.reserve(observed_.size());
  for (const auto& o : observed_) {
    observations.push_back({o.pareto, o.depth});
    points.push_back(&o.point);
  }
  // The good count is TPE's, over every observation (failed ones included, as Optuna
  // counts every finished trial); running trials count only in g(x).
  const motpe::Split split = motpe::split(observations, parzen::good_count(observations.size(), tpe_.model()));
  return parzen::propose(space_, points, {split.good, split.weights}, tpe_.model(), rng, running, &sorted_);
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
  if (multi()) {
    // A result of other metrics only says nothing of the objectives.
    if (!options_.objectives.any_reported(last)) return;
    observed_.push_back({id, 0, std::move(point), depth, options_.objectives.point(last)});
  } else {
    const auto m = last.find(options_.metric);
    if (m == last.end() || !std::isfinite(m->second)) return;
    observed_.push_back({id, sign(options_.mode) * m->second, std::move(point), depth});
  }
  sorted_.add(space_, observed_.back().point);
}

std::string TpeSearcher::save() const {
  // Version 2 adds each trial's depth (pending: the iteration it reached; observed: the depth
  // it ranks at) and whether the run ranks by value alone (it resumed a version 1 state).
  // Version 3 adds the objectives (write_objectives; none for one metric), and with several
  // an observation's row holds its Pareto point (violation, then the objectives in
  // minimization form) in place of the value.
  StateWriter w("tpe", 3);
  w.field("next").integer(next_);
  w.field("legacy_ranking").integer(legacy_ranking_ ? 1 : 0);
  write_objectives(w, options_.objectives);
  w.field("pending").integer(static_cast<std::int64_t>(pending_.size())).line();
  for (const auto& [id, point] : pending_) {
    const auto r = reached_.find(id);
    w.integer(id).integer(r == reached_.end() ? 0 : r->second);
    parzen::write_point(w, point);
    w.line();
  }
  w.field("observed").integer(static_cast<std::int64_t>(observed_.size())).line();
  for (const auto& o : observed_) {
    w.integer(o.id);
    if (multi()) {
      write_pareto_point(w, o.pareto);
    } else {
      // The metric as reported, not the signed score, so the text reads like the results.
      w.number(sign(options_.mode) * o.score);
    }
    w.integer(o.depth);
    parzen::write_point(w, o.point);
    w.line();
  }
  return w.str();
}

void TpeSearcher::restore(const std::string& state) {
  StateReader r(state, "tpe", 3, "tpe searcher");
  const bool v2 = r.version() >= 2;
  const std::int64_t next = r.integer_field("next", 0);
  // A version 1 state knows no depths: the run goes on ranking by value alone.
  const bool legacy = v2 ? r.integer_field("legacy_ranking", 0, 1) == 1 : true;
  // Before version 3 every state was of one metric.
  if (r.version() >= 3) {
    read_objectives(r, options_.objectives);
  } else {
    r.require(!multi(), "saved by a single-objective run (version " + std::to_string(r.version()) +
                            "); this experiment has " + options_.objectives.describe() +
                            ". Resume it with the objectives it was saved with");
  }
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
    if (multi()) {
      o.pareto = read_pareto_point(r, options_.objectives.metrics.size());
    } else {
      o.score = sign(options_.mode) * r.finite("an observation's value");
    }
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
