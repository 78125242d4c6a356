// BOHB's per-budget observations, model budget and suggestions (search/bohb_searcher.h: the
// algorithm and its paper, Falkner, Klein and Hutter, ICML 2018).
#include "search/bohb_searcher.h"

#include <cmath>
#include <set>
#include <stdexcept>

#include "search/motpe_split.h"
#include "search/saved_state.h"

namespace ranktune::search {

BohbOptions BohbOptions::read(const Options& options, std::size_t dims) {
  OptionReader r(options, "bohb");
  BohbOptions b;
  b.min_points_in_model = r.integer("min_points_in_model", static_cast<std::int64_t>(dims) + 1);
  r.require(b.min_points_in_model >= 1, "min_points_in_model",
            "must be >= 1 (got " + std::to_string(b.min_points_in_model) +
                "); the default is the number of parameters + 1");
  r.at_most("min_points_in_model", b.min_points_in_model, kMaxTrials);
  b.random_fraction = r.number("random_fraction", b.random_fraction);
  r.require(b.random_fraction >= 0 && b.random_fraction <= 1, "random_fraction",
            "must be in [0, 1], the share of random suggestions (got " + to_string(Value(b.random_fraction)) +
                "); 1/3 is the paper's choice");
  b.model = parzen::ModelOptions::read(r, b.model);
  r.finish();
  return b;
}

BohbSearcher::BohbSearcher(Space space, SearcherOptions options, BohbOptions bohb)
    : NumSamplesSearcher(std::move(options)), space_(std::move(space)), bohb_(bohb) {
  if (bohb_.min_points_in_model <= 0) bohb_.min_points_in_model = static_cast<std::int64_t>(space_.params.size()) + 1;
  if (multi()) options_.objectives.check();
}

std::optional<std::int64_t> BohbSearcher::model_budget() const {
  if (budget_ < 0) return std::nullopt;
  return budget_;
}

std::size_t BohbSearcher::observations(std::int64_t budget) const {
  const auto it = by_budget_.find(budget);
  return it == by_budget_.end() ? 0 : it->second.size();
}

Suggestion BohbSearcher::suggest(TrialId id) {
  if (next_ >= options_.num_samples) return {Suggestion::Kind::Finished, {}};
  Rng rng = index_rng(options_.seed, static_cast<std::uint64_t>(next_++));
  // Drawn even when there is no model, so that the rest of the stream does not depend on
  // whether there was one.
  const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
  parzen::Point point;
  if (budget_ < 0 || u < bohb_.random_fraction) {
    ++random_;
    point = parzen::sample_point(space_, rng);
  } else {
    const auto& at_budget = by_budget_.at(budget_);
    if (multi()) {
      // One budget: every observation at the same depth.
      std::vector<motpe::Observation> observations;
      std::vector<const parzen::Point*> points;
      for (const auto& o : at_budget) {
        observations.push_back({o.pareto, 0});
        points.push_back(&runs_.at(o.id).point);
      }
      const auto split = motpe::split(observations, parzen::good_count(observations.size(), bohb_.model));
      point = parzen::propose(space_, points, {split.good, split.weights}, bohb_.model, rng);
    } else {
      std::vector<parzen::Scored> scored;
      scored.reserve(at_budget.size());
      for (const auto& o : at_budget) scored.push_back({o.score, &runs_.at(o.id).point});
      point = parzen::propose(space_, scored, bohb_.model, rng);
    }
  }
  Config config = parzen::settle(space_, point);  // inactive parameters: absent, NaN in the model
  runs_[id] = {std::move(point), 0, false};
  return {Suggestion::Kind::Config, std::move(config)};
}

void BohbSearcher::adopt(TrialId id, const Config& config) {
  Config active = config;
  drop_inactive(space_, active);
  runs_[id] = {parzen::encode(space_, active), 0, false};
}

void BohbSearcher::observe(TrialId id, std::int64_t budget, const Metrics& m) {
  if (budget < budget_) return;  // below the model budget: no suggestion will ever use it
  Observation o{id, 0, {}};
  if (multi()) {
    if (!options_.objectives.any_reported(m)) return;  // a result of other metrics only
    o.pareto = options_.objectives.point(m);
  } else {
    const auto v = m.find(options_.metric);
    if (v == m.end() || !std::isfinite(v->second)) return;
    o.score = sign(options_.mode) * v->second;
  }
  auto& at = by_budget_[budget];
  at.push_back(std::move(o));
  if (budget > budget_ && static_cast<std::int64_t>(at.size()) >= bohb_.min_points_in_model) {
    budget_ = budget;
    forget_below_model_budget();
  }
}

void BohbSearcher::forget_below_model_budget() {
  by_budget_.erase(by_budget_.begin(), by_budget_.lower_bound(budget_));
  std::set<TrialId> kept;
  for (const auto& [budget, at] : by_budget_)
    for (const auto& o : at) kept.insert(o.id);
  std::erase_if(runs_, [&](const auto& r) { return r.second.complete && !kept.contains(r.first); });
}

void BohbSearcher::on_trial_result(TrialId id, std::int64_t iteration, const Metrics& metrics) {
  const auto it = runs_.find(id);
  if (it == runs_.end() || it->second.complete || iteration < 1) return;  // not ours, or already complete
  // The budget is the iteration the result reports: a retry or a resume that restarts from
  // an older checkpoint reports the same budgets again, which counting results would not.
  const std::int64_t budget = it->second.results = iteration;
  observe(id, budget, metrics);
}

void BohbSearcher::on_trial_complete(TrialId id, const Metrics& last, bool error) {
  const auto it = runs_.find(id);
  if (it == runs_.end() || it->second.complete) return;
  Run& run = it->second;
  run.complete = true;
  if (run.results == 0 && !error) {
    // The searcher saw none of its results (a Repeater forwards only the group's mean): the
    // final value is all there is, at an unknown budget.
    observe(id, 0, last);
  }
  // A complete trial is kept only while an observation refers to it; its observations are
  // at budgets up to `results` (0 if none), so none is kept when that is below the model budget.
  if (std::max<std::int64_t>(run.results, 0) < budget_) runs_.erase(it);
}

std::string BohbSearcher::save() const {
  // Version 2 adds the objectives (write_objectives; none for one metric), and with several
  // an observation's Pareto point (violation, then the objectives in minimization form) in
  // place of its value.
  StateWriter w("bohb", 2);
  w.field("next").integer(next_).field("random").integer(random_).field("budget").integer(budget_);
  write_objectives(w, options_.objectives);
  w.field("runs").integer(static_cast<std::int64_t>(runs_.size())).line();
  for (const auto& [id, run] : runs_) {
    w.integer(id).integer(run.results).integer(run.complete ? 1 : 0);
    parzen::write_point(w, run.point);
    w.line();
  }
  w.field("budgets").integer(static_cast<std::int64_t>(by_budget_.size())).line();
  for (const auto& [budget, at] : by_budget_) {
    w.integer(budget).integer(static_cast<std::int64_t>(at.size())).line();
    for (const auto& o : at) {
      w.integer(o.id);
      if (multi()) {
        write_pareto_point(w, o.pareto);
      } else {
        w.number(sign(options_.mode) * o.score);  // the metric as reported, so the text reads like the results
      }
      w.line();
    }
  }
  return w.str();
}

void BohbSearcher::restore(const std::string& state) {
  StateReader r(state, "bohb", 2, "bohb searcher");
  const std::int64_t next = r.integer_field("next", 0);
  const std::int64_t random = r.integer_field("random", 0);
  const std::int64_t budget = r.integer_field("budget", -1);
  // Before version 2 every state was of one metric.
  if (r.version() >= 2) {
    read_objectives(r, options_.objectives);
  } else {
    r.require(!multi(), "saved by a single-objective run (version 1); this experiment has " +
                            options_.objectives.describe() + ". Resume it with the objectives it was saved with");
  }
  r.require(random <= next, "more random suggestions than suggestions");
  std::map<TrialId, Run> runs;
  for (std::size_t n = r.count_field("runs"); n > 0; --n) {
    const TrialId id = r.integer("a trial id");
    Run run;
    run.results = r.integer("a trial's results", 0);
    run.complete = r.flag("whether a trial is complete");
    run.point = parzen::read_point(r, space_);
    r.require(runs.emplace(id, std::move(run)).second, "trial " + std::to_string(id) + " listed twice");
  }
  std::map<std::int64_t, std::vector<Observation>> by_budget;
  for (std::size_t n = r.count_field("budgets"); n > 0; --n) {
    const std::int64_t b = r.integer("a budget", std::max<std::int64_t>(budget, 0));
    r.require(!by_budget.contains(b), "budget " + std::to_string(b) + " listed twice");
    auto& at = by_budget[b];
    for (std::size_t count = r.count("a budget's observations"); count > 0; --count) {
      Observation o{};
      o.id = r.integer("an observation's trial id");
      const auto run = runs.find(o.id);
      r.require(run != runs.end() && run->second.results >= b,
                "observation of trial " + std::to_string(o.id) + " at budget " + std::to_string(b) +
                    " that the trial never reached");
      if (multi()) {
        o.pareto = read_pareto_point(r, options_.objectives.metrics.size());
      } else {
        o.score = sign(options_.mode) * r.finite("an observation's value");
      }
      at.push_back(std::move(o));
    }
  }
  r.require(budget < 0 || (by_budget.contains(budget) && static_cast<std::int64_t>(by_budget.at(budget).size()) >=
                                                             bohb_.min_points_in_model),
            "the model budget has fewer than min_points_in_model observations");
  r.finish();
  next_ = next;
  random_ = random;
  budget_ = budget;
  runs_ = std::move(runs);
  by_budget_ = std::move(by_budget);
}

}  // namespace ranktune::search
