// The median stopping rule's per-iteration records, decisions and saved state
// (search/median_stopping.h: the rule and its paper, Golovin et al., KDD 2017).
#include "search/median_stopping.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "search/saved_state.h"

namespace ranktune::search {

MedianStoppingScheduler::MedianStoppingScheduler(SchedulerContext ctx, const Options& options)
    : ctx_(std::move(ctx)) {
  OptionReader r(options, "median_stopping");
  grace_period_ = r.integer("grace_period", 1);
  r.require(grace_period_ >= 1, "grace_period", "must be >= 1 iteration (got " +
                                                    std::to_string(grace_period_) + ")");
  r.at_most("grace_period", grace_period_, kMaxIterations);
  min_samples_required_ = r.integer("min_samples_required", 3);
  r.require(min_samples_required_ >= 1, "min_samples_required",
            "must be >= 1 (got " + std::to_string(min_samples_required_) + ")");
  r.at_most("min_samples_required", min_samples_required_, kMaxTrials);
  statistic_ = r.text("statistic", "best", {"best", "average"}) == "best" ? Statistic::Best
                                                                           : Statistic::Average;
  r.finish();
}

MedianStoppingScheduler::TrialRecord& MedianStoppingScheduler::record_for(const Trial& trial) {
  auto [it, added] = records_.try_emplace(trial.id);
  TrialRecord& r = it->second;
  if (added) {
    r.attempt = trial.attempt;
  } else if (r.attempt != trial.attempt) {
    // A retry restarts at iteration 1; the failed attempt's averages would count the trial
    // twice at the iterations both attempts reached.
    forget(r);
    r = TrialRecord{};
    r.attempt = trial.attempt;
  }
  return r;
}

void MedianStoppingScheduler::add_result(TrialRecord& r, const Trial& trial) {
  const std::int64_t t = trial.iterations;
  // Stop and max_t both reach on_trial_complete with a result already seen.
  if (t <= r.seen) return;
  r.seen = t;
  if (const auto s = latest_score(trial, ctx_)) {
    r.best = r.n == 0 ? *s : std::max(r.best, *s);
    r.sum += *s;
    ++r.n;
  }
  if (r.n == 0) return;  // nothing to average yet
  if (static_cast<std::int64_t>(at_t_.size()) < t) at_t_.resize(static_cast<std::size_t>(t));
  const double mean = r.sum / static_cast<double>(r.n);
  at_t_[static_cast<std::size_t>(t - 1)].insert(mean);
  r.means.resize(static_cast<std::size_t>(t), std::numeric_limits<double>::quiet_NaN());
  r.means[static_cast<std::size_t>(t - 1)] = mean;
}

void MedianStoppingScheduler::forget(const TrialRecord& r) {
  for (std::size_t i = 0; i < r.means.size(); ++i) {
    if (!std::isnan(r.means[i])) at_t_[i].erase(r.means[i]);
  }
}

double MedianStoppingScheduler::median_at(std::int64_t t) {
  RankSplit& s = at_t_[static_cast<std::size_t>(t - 1)];
  const std::size_t m = s.size();
  // The split point moves by at most one between consecutive queries at the same t (one
  // value is added in between), so this is O(log m).
  if (m % 2 == 1) {
    s.split_at(m / 2 + 1);
    return s.max_lower();
  }
  s.split_at(m / 2);
  return (s.max_lower() + s.min_upper()) / 2;
}

Decision MedianStoppingScheduler::on_trial_result(const Trial& trial) {
  TrialRecord& r = record_for(trial);
  const std::int64_t t = trial.iterations;
  // The other trials' averages at t are read before this trial's own is added.
  std::optional<double> median;
  if (t >= grace_period_ && t <= static_cast<std::int64_t>(at_t_.size()) && t > r.seen) {
    const std::size_t others = at_t_[static_cast<std::size_t>(t - 1)].size();
    if (others > 0 && static_cast<std::int64_t>(others) >= min_samples_required_) {
      median = median_at(t);
    }
  }
  const std::int64_t n_before = r.n;
  add_result(r, trial);
  if (!median || r.n == n_before) return Decision::Continue;  // no decision, or no score now
  const double stat = statistic_ == Statistic::Best ? r.best : r.sum / static_cast<double>(r.n);
  return stat < *median ? Decision::Stop : Decision::Continue;
}

void MedianStoppingScheduler::on_trial_complete(const Trial& trial) {
  add_result(record_for(trial), trial);
}

void MedianStoppingScheduler::on_trial_error(const Trial& trial) {
  // A failed trial's curve says more about the failure than about its hyperparameters.
  if (const auto it = records_.find(trial.id); it != records_.end()) {
    forget(it->second);
    records_.erase(it);
  }
}

// Layout (version 2; version 1 is the same without the field name): "trials COUNT", then a
// line per trial
//   ID ATTEMPT SEEN N SUM BEST LEN MEANS[0] ... MEANS[LEN-1]
// The per-iteration splits are rebuilt from the means, which are the exact doubles inserted.
std::string MedianStoppingScheduler::save() const {
  StateWriter w("median_stopping", 2);
  w.field("trials").integer(static_cast<std::int64_t>(records_.size())).line();
  for (const auto& [id, r] : records_) {
    w.integer(id).integer(r.attempt).integer(r.seen).integer(r.n).number(r.sum).number(r.best);
    w.integer(static_cast<std::int64_t>(r.means.size()));
    for (double m : r.means) w.number(m);
    w.line();
  }
  return w.str();
}

void MedianStoppingScheduler::restore(const std::string& state) {
  StateReader in(state, "median_stopping", 2, "median_stopping", /*named_since=*/2);
  std::map<TrialId, TrialRecord> records;
  std::vector<RankSplit> at_t;
  for (std::size_t count = in.count_field("trials"); count > 0; --count) {
    const TrialId id = in.integer("a trial id");
    const std::string of = " of trial " + std::to_string(id);
    TrialRecord r;
    r.attempt = static_cast<int>(in.integer("the attempt" + of, 0, std::numeric_limits<int>::max()));
    r.seen = in.integer("the last iteration" + of);
    r.n = in.integer("the score count" + of);
    r.sum = in.number("the sum" + of);
    r.best = in.number("the best score" + of);
    const std::size_t len = in.count("the running averages" + of);
    in.require(len <= static_cast<std::size_t>(std::max<std::int64_t>(r.seen, 0)),
               "more running averages than iterations" + of);
    r.means.resize(len);
    if (at_t.size() < len) at_t.resize(len);
    for (std::size_t k = 0; k < len; ++k) {
      r.means[k] = in.number("a running average" + of);
      if (!std::isnan(r.means[k])) at_t[k].insert(r.means[k]);
    }
    in.require(records.emplace(id, std::move(r)).second, "trial " + std::to_string(id) + " twice");
  }
  in.finish();
  records_ = std::move(records);
  at_t_ = std::move(at_t);
}

}  // namespace ranktune::search
