// ASHA's promotion variant: pausing at rungs and resuming the top 1/rf (search/asha_promotion.h:
// the rule and its paper, Li et al., MLSys 2020, Algorithm 2).
#include "search/asha_promotion.h"

#include <cmath>
#include <stdexcept>
#include <unordered_map>

#include "search/asha_scheduler.h"
#include "search/early_stopping.h"
#include "search/ranked_set.h"
#include "search/saved_state.h"

namespace ranktune::search {

namespace {

/// The promotion variant's own ranking: the score sign(mode) * metric of the result at the
/// rung (latest_score: non-finite the worst), best first, ties to the lower id. Scores in a
/// RankedSet: the rank of an entry is O(log n), so choosing does not walk the already
/// promoted top of a rung.
class ScorePromotionRanking final : public PromotionRanking {
 public:
  ScorePromotionRanking(SchedulerContext ctx, std::size_t rungs) : ctx_(std::move(ctx)), rungs_(rungs) {}
  std::unique_ptr<PromotionRanking> fresh(std::size_t rungs) const override {
    return std::make_unique<ScorePromotionRanking>(ctx_, rungs);
  }
  bool record(std::size_t k, const Trial& trial) override {
    const auto score = latest_score(trial, ctx_);
    if (!score) return false;
    const Entry entry{-*score, trial.id};
    rungs_[k].scores.insert(entry);
    rungs_[k].waiting.insert(entry);
    latest_[trial.id] = -*score;
    return true;
  }
  std::size_t recorded(std::size_t k) const override { return rungs_[k].scores.size(); }
  // A trial waits only at the last rung it was recorded at, so its entry there is its latest.
  bool wait(std::size_t k, TrialId id) override {
    const auto it = latest_.find(id);
    if (it == latest_.end() || rungs_[k].scores.find({it->second, id}) == rungs_[k].scores.end()) return false;
    rungs_[k].waiting.insert({it->second, id});
    return true;
  }
  void leave(std::size_t k, TrialId id) override {
    if (const auto it = latest_.find(id); it != latest_.end()) rungs_[k].waiting.erase({it->second, id});
  }
  void visit_top_waiting(std::size_t k, std::size_t top, const std::function<Visit(TrialId)>& visit) override {
    Rung& rung = rungs_[k];
    // Waiting trials best first: once one ranks outside the top, all the rest do too.
    for (auto it = rung.waiting.begin(); it != rung.waiting.end();) {
      if (rung.scores.order_of_key(*it) >= top) return;
      switch (visit(it->second)) {
        case Visit::Take: return;
        case Visit::Leave: it = rung.waiting.erase(it); break;
        case Visit::Skip: ++it; break;
      }
    }
  }
  // Version 2; version 1 is the same without the field names.
  StateHeader state_header() const override { return {"asha_promotion", 2, "asha (promotion)", 2}; }
  // "COUNT (id -score)...".
  void write_rung(StateWriter& w, std::size_t k) const override {
    w.integer(static_cast<std::int64_t>(rungs_[k].scores.size()));
    for (const auto& [neg, id] : rungs_[k].scores) w.integer(id).number(neg);
  }
  void read_rung(StateReader& r, std::size_t k) override {
    for (std::size_t m = r.count("a rung's scores"); m > 0; --m) {
      const TrialId id = r.integer("a trial id");
      const double neg = r.number("an asha score");
      rungs_[k].scores.insert({neg, id});
      latest_[id] = neg;  // rungs are read upwards: the last one read is its latest
    }
  }

 private:
  using Entry = std::pair<double, TrialId>;  // (-score, id): best first, ties to lower id
  struct Rung {
    RankedSet scores;         // every trial recorded at the rung
    std::set<Entry> waiting;  // those paused there, not promoted yet
  };
  SchedulerContext ctx_;
  std::vector<Rung> rungs_;
  std::unordered_map<TrialId, double> latest_;  ///< each trial's entry at its last rung
};

}  // namespace

AshaPromotionScheduler::AshaPromotionScheduler(SchedulerContext ctx, const Options& options)
    : AshaPromotionScheduler(ctx, options, ScorePromotionRanking(ctx, 0)) {}

AshaPromotionScheduler::AshaPromotionScheduler(SchedulerContext ctx, const Options& options,
                                               const PromotionRanking& ranking)
    : ctx_(std::move(ctx)) {
  OptionReader r(options, "asha");
  const auto [max_t, grace, rf] = read_asha_rung_options(r, ctx_.max_t);
  reduction_factor_ = rf;
  r.require(r.integer("brackets", 1) == 1, "brackets", "must be 1 with variant = \"promotion\"");
  r.text("variant", "promotion", {"stopping", "promotion"});
  milestones_ = asha_milestones(grace, reduction_factor_, max_t, 0, kMaxRungs);
  require_rung_count(r, milestones_.size(), grace, reduction_factor_, max_t);
  r.require(!milestones_.empty(), "grace_period", "leaves no rung below max_t = " + std::to_string(max_t));
  r.finish();
  ranking_ = ranking.fresh(milestones_.size());
  promoted_.resize(milestones_.size());
}

std::size_t AshaPromotionScheduler::next_rung(TrialId id) const {
  const auto it = reached_.find(id);
  return it == reached_.end() ? 0 : it->second;
}

void AshaPromotionScheduler::leave_waiting(TrialId id) {
  if (const std::size_t k = next_rung(id); k > 0) ranking_->leave(k - 1, id);
}

std::int64_t AshaPromotionScheduler::next_decision(const Trial& trial) const {
  const std::size_t k = next_rung(trial.id);
  return k < milestones_.size() ? std::max(trial.iterations + 1, milestones_[k]) : ctx_.max_t;
}

Decision AshaPromotionScheduler::on_trial_result(const Trial& trial) {
  std::size_t k = next_rung(trial.id);
  // Reporting past rung k - 1 means the trial was promoted from it.
  if (k > 0 && promoted_[k - 1].insert(trial.id).second) ranking_->leave(k - 1, trial.id);
  if (k >= milestones_.size() || trial.iterations < milestones_[k]) return Decision::Continue;
  // At the highest rung reached, as ASHA's stopping variant: one whose metric was missing at
  // a milestone is recorded at the next one it reaches with a score.
  while (k + 1 < milestones_.size() && milestones_[k + 1] <= trial.iterations) ++k;
  // The result itself is recorded, not the trial's last finite value: a NaN is the worst
  // score, and a result without the metric records nothing (the trial runs on).
  if (!ranking_->record(k, trial)) return Decision::Continue;
  reached_[trial.id] = k + 1;
  return Decision::Pause;
}

std::optional<TrialId> AshaPromotionScheduler::choose_trial_to_run(const std::vector<Trial>& trials) {
  for (std::size_t k = milestones_.size(); k-- > 0;) {
    const auto top = static_cast<std::size_t>(std::floor(static_cast<double>(ranking_->recorded(k)) / reduction_factor_ + 1e-9));
    std::optional<TrialId> chosen;
    ranking_->visit_top_waiting(k, top, [&](TrialId id) {
      const Trial& t = trials[static_cast<std::size_t>(id - 1)];
      if (t.runnable()) {
        chosen = id;
        return PromotionRanking::Visit::Take;
      }
      // A trial that runs again left the rung (on_trial_result would record that at its
      // next result), and a finished one never comes back: dropping them now keeps this scan
      // from stepping over every resumed trial still on its way to a result, which made a
      // choice O(workers). Neither could be chosen, so the answer stays the same.
      if (t.status == TrialStatus::Running || t.finished()) {
        if (t.status == TrialStatus::Running) promoted_[k].insert(t.id);
        return PromotionRanking::Visit::Leave;
      }
      return PromotionRanking::Visit::Skip;
    });
    if (chosen) return chosen;
  }
  return order_.next(trials);
}

// Layout (the ranking's tag and version): the ranking's head, the rung count and a line per
// rung with the ranking's entries and the promoted ids, then "reached": the trials with the
// number of rungs each reached.
std::string AshaPromotionScheduler::save() const {
  const StateHeader header = ranking_->state_header();
  StateWriter w(header.tag, header.version);
  ranking_->write_head(w);
  w.field("rungs").integer(static_cast<std::int64_t>(milestones_.size())).line();
  for (std::size_t k = 0; k < milestones_.size(); ++k) {
    ranking_->write_rung(w, k);
    w.integer(static_cast<std::int64_t>(promoted_[k].size()));
    for (TrialId id : promoted_[k]) w.integer(id);
    w.line();
  }
  w.field("reached").integer(static_cast<std::int64_t>(reached_.size()));
  for (const auto& [id, rungs] : reached_) w.integer(id).integer(static_cast<std::int64_t>(rungs));
  w.line();
  return w.str();
}

void AshaPromotionScheduler::restore(const std::string& state) {
  const StateHeader header = ranking_->state_header();
  StateReader r(state, header.tag, header.version, header.owner, header.named_since);
  ranking_->read_head(r);
  const std::size_t n = r.count_field("rungs");
  r.require(n == milestones_.size(), "saved with " + std::to_string(n) + " rungs, this config has " +
                                         std::to_string(milestones_.size()));
  std::unique_ptr<PromotionRanking> ranking = ranking_->fresh(n);
  std::vector<std::set<TrialId>> promoted(n);
  for (std::size_t k = 0; k < n; ++k) {
    ranking->read_rung(r, k);
    for (std::size_t m = r.count("a rung's promoted trials"); m > 0; --m) promoted[k].insert(r.integer("a promoted id"));
  }
  std::map<TrialId, std::size_t> reached;
  for (std::size_t m = r.count_field("reached"); m > 0; --m) {
    const TrialId id = r.integer("a trial id");
    reached[id] = static_cast<std::size_t>(r.integer("the rungs a trial reached", 0, static_cast<std::int64_t>(n)));
  }
  r.finish();
  // The waiting sets follow: a trial waits at the last rung it reached unless promoted.
  for (const auto& [id, rungs] : reached) {
    if (rungs == 0 || promoted[rungs - 1].contains(id)) continue;
    r.require(ranking->wait(rungs - 1, id), "trial " + std::to_string(id) + " reached rung " + std::to_string(rungs - 1) +
                                                " but has no entry there");
  }
  ranking_ = std::move(ranking);
  promoted_ = std::move(promoted);
  reached_ = std::move(reached);
  order_ = FifoOrder(/*paused_too=*/false);
}

}  // namespace ranktune::search
