// ASHA's promotion variant: pausing at rungs and resuming the top 1/rf (search/asha_promotion.h:
// the rule and its paper, Li et al., MLSys 2020, Algorithm 2).
#include "search/asha_promotion.h"

#include <cmath>
#include <stdexcept>

#include "search/asha_scheduler.h"
#include "search/early_stopping.h"
#include "search/saved_state.h"

namespace ranktune::search {

AshaPromotionScheduler::AshaPromotionScheduler(SchedulerContext ctx, const Options& options) : ctx_(std::move(ctx)) {
  OptionReader r(options, "asha");
  const auto [max_t, grace, rf] = read_asha_rung_options(r, ctx_.max_t);
  reduction_factor_ = rf;
  r.require(r.integer("brackets", 1) == 1, "brackets", "must be 1 with variant = \"promotion\"");
  r.text("variant", "promotion", {"stopping", "promotion"});
  milestones_ = asha_milestones(grace, reduction_factor_, max_t, 0, kMaxRungs);
  require_rung_count(r, milestones_.size(), grace, reduction_factor_, max_t);
  r.require(!milestones_.empty(), "grace_period", "leaves no rung below max_t = " + std::to_string(max_t));
  r.finish();
  rungs_.resize(milestones_.size());
}

std::size_t AshaPromotionScheduler::next_rung(TrialId id) const {
  const auto it = reached_.find(id);
  return it == reached_.end() ? 0 : it->second.rungs;
}

void AshaPromotionScheduler::leave_waiting(TrialId id) {
  const auto it = reached_.find(id);
  if (it == reached_.end() || it->second.rungs == 0) return;
  rungs_[it->second.rungs - 1].waiting.erase({it->second.neg_score, id});
}

std::int64_t AshaPromotionScheduler::next_decision(const Trial& trial) const {
  const std::size_t k = next_rung(trial.id);
  return k < milestones_.size() ? std::max(trial.iterations + 1, milestones_[k]) : ctx_.max_t;
}

Decision AshaPromotionScheduler::on_trial_result(const Trial& trial) {
  std::size_t k = next_rung(trial.id);
  // Reporting past rung k - 1 means the trial was promoted from it.
  if (k > 0 && rungs_[k - 1].promoted.insert(trial.id).second) leave_waiting(trial.id);
  if (k >= milestones_.size() || trial.iterations < milestones_[k]) return Decision::Continue;
  // The result itself is recorded, not the trial's last finite value: a NaN is the worst
  // score, and a result without the metric records nothing (the trial runs on).
  const auto score = latest_score(trial, ctx_);
  if (!score) return Decision::Continue;
  // At the highest rung reached, as ASHA's stopping variant: one whose metric was missing at
  // a milestone is recorded at the next one it reaches with a score.
  while (k + 1 < milestones_.size() && milestones_[k + 1] <= trial.iterations) ++k;
  const Entry entry{-*score, trial.id};
  rungs_[k].scores.insert(entry);
  rungs_[k].waiting.insert(entry);
  reached_[trial.id] = {k + 1, -*score};
  return Decision::Pause;
}

std::optional<TrialId> AshaPromotionScheduler::choose_trial_to_run(const std::vector<Trial>& trials) {
  for (std::size_t k = rungs_.size(); k-- > 0;) {
    Rung& rung = rungs_[k];
    const auto top = static_cast<std::size_t>(std::floor(static_cast<double>(rung.scores.size()) / reduction_factor_ + 1e-9));
    // Waiting trials best first: once one ranks outside the top, all the rest do too.
    for (auto it = rung.waiting.begin(); it != rung.waiting.end();) {
      if (rung.scores.order_of_key(*it) >= top) break;
      const Trial& t = trials[static_cast<std::size_t>(it->second - 1)];
      if (t.runnable()) return t.id;
      // A trial that runs again left the rung (on_trial_result would record that at its
      // next result), and a finished one never comes back: dropping them now keeps this scan
      // from stepping over every resumed trial still on its way to a result, which made a
      // choice O(workers). Neither could be chosen, so the answer stays the same.
      if (t.status == TrialStatus::Running || t.finished()) {
        if (t.status == TrialStatus::Running) rung.promoted.insert(t.id);
        it = rung.waiting.erase(it);
        continue;
      }
      ++it;
    }
  }
  return order_.next(trials);
}

// Layout (version 2; version 1 is the same without the field names): the rung count and a
// line per rung with its (id, -score) entries and its promoted ids, then "reached": the
// trials with the number of rungs each reached.
std::string AshaPromotionScheduler::save() const {
  StateWriter w("asha_promotion", 2);
  w.field("rungs").integer(static_cast<std::int64_t>(rungs_.size())).line();
  for (const Rung& rung : rungs_) {
    w.integer(static_cast<std::int64_t>(rung.scores.size()));
    for (const auto& [neg, id] : rung.scores) w.integer(id).number(neg);
    w.integer(static_cast<std::int64_t>(rung.promoted.size()));
    for (TrialId id : rung.promoted) w.integer(id);
    w.line();
  }
  w.field("reached").integer(static_cast<std::int64_t>(reached_.size()));
  for (const auto& [id, r] : reached_) w.integer(id).integer(static_cast<std::int64_t>(r.rungs));
  w.line();
  return w.str();
}

void AshaPromotionScheduler::restore(const std::string& state) {
  StateReader r(state, "asha_promotion", 2, "asha (promotion)", /*named_since=*/2);
  const std::size_t n = r.count_field("rungs");
  r.require(n == milestones_.size(), "saved with " + std::to_string(n) + " rungs, this config has " +
                                         std::to_string(milestones_.size()));
  std::vector<Rung> rungs(n);
  for (Rung& rung : rungs) {
    for (std::size_t m = r.count("a rung's scores"); m > 0; --m) {
      const TrialId id = r.integer("a trial id");
      rung.scores.insert({r.number("an asha score"), id});
    }
    for (std::size_t m = r.count("a rung's promoted trials"); m > 0; --m) rung.promoted.insert(r.integer("a promoted id"));
  }
  std::map<TrialId, Reached> reached;
  for (std::size_t m = r.count_field("reached"); m > 0; --m) {
    const TrialId id = r.integer("a trial id");
    reached[id].rungs = static_cast<std::size_t>(
        r.integer("the rungs a trial reached", 0, static_cast<std::int64_t>(milestones_.size())));
  }
  r.finish();
  // The waiting sets follow: a trial waits at the last rung it reached unless promoted.
  for (std::size_t k = 0; k < rungs.size(); ++k) {
    for (const Entry& e : rungs[k].scores) {
      auto it = reached.find(e.second);
      if (it == reached.end() || it->second.rungs != k + 1) continue;
      it->second.neg_score = e.first;
      if (rungs[k].promoted.count(e.second) == 0) rungs[k].waiting.insert(e);
    }
  }
  rungs_ = std::move(rungs);
  reached_ = std::move(reached);
  order_ = FifoOrder(/*paused_too=*/false);
}

}  // namespace ranktune::search
