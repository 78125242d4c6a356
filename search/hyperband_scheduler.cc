// HyperBand's brackets, rungs, promotions and saved state (search/hyperband_scheduler.h: the
// algorithm and its paper, Li et al., JMLR 2018).
#include "search/hyperband_scheduler.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>

#include "search/early_stopping.h"
#include "search/saved_state.h"

namespace ranktune::search {

namespace {

/// HyperBand's own ranking: the score sign(mode) * metric of the result at the rung
/// (latest_score: non-finite the worst), best first, ties to the lower id.
class ScoreRanking final : public RungRanking {
 public:
  explicit ScoreRanking(SchedulerContext ctx) : ctx_(std::move(ctx)) {}
  std::unique_ptr<RungRanking> fresh() const override { return std::make_unique<ScoreRanking>(ctx_); }
  bool record(const Trial& trial) override {
    const auto score = latest_score(trial, ctx_);
    if (score) scores_[trial.id] = *score;
    return score.has_value();
  }
  std::vector<TrialId> best_first(const std::vector<TrialId>& ids) const override {
    std::vector<std::pair<double, TrialId>> ranked;
    ranked.reserve(ids.size());
    for (const TrialId id : ids) ranked.emplace_back(scores_.at(id), id);
    std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& c) {
      return a.first != c.first ? a.first > c.first : a.second < c.second;
    });
    std::vector<TrialId> out;
    out.reserve(ranked.size());
    for (const auto& [score, id] : ranked) out.push_back(id);
    return out;
  }
  void forget(TrialId id) override { scores_.erase(id); }
  // Version 2; version 1 is the same without the field names.
  StateHeader state_header() const override { return {"hyperband", 2, "hyperband", 2}; }
  void write_entry(StateWriter& w, TrialId id) const override {
    const auto it = scores_.find(id);
    w.number(it == scores_.end() ? NAN : it->second);  // NaN: not at the rung yet
  }
  bool read_entry(StateReader& r, TrialId id) override {
    const double score = r.number("a hyperband score");
    if (std::isnan(score)) return false;
    scores_[id] = score;
    return true;
  }

 private:
  SchedulerContext ctx_;
  std::map<TrialId, double> scores_;  ///< of the live trials at their bracket's current rung
};

}  // namespace

HyperBandScheduler::HyperBandScheduler(SchedulerContext ctx, const Options& options)
    : HyperBandScheduler(ctx, options, std::make_unique<ScoreRanking>(ctx)) {}

HyperBandScheduler::HyperBandScheduler(SchedulerContext ctx, const Options& options,
                                       std::unique_ptr<RungRanking> ranking)
    : ctx_(std::move(ctx)), ranking_(std::move(ranking)), order_(/*paused_too=*/false) {
  OptionReader r(options, "hyperband");
  ctx_.max_t = r.integer("max_t", ctx_.max_t);
  eta_ = r.number("reduction_factor", 3);
  r.require(ctx_.max_t >= 1, "max_t", "must be >= 1 (iterations)");
  r.at_most("max_t", ctx_.max_t, kMaxIterations);
  r.require(eta_ > 1 && std::isfinite(eta_), "reduction_factor", "must be > 1");
  r.finish();
  const auto R = static_cast<double>(ctx_.max_t);
  // floor(log_eta(R)) + 1 brackets; an eta just above 1 makes billions (and loops below
  // for as long), so refuse more than kMaxRungs before counting them.
  const double brackets = std::floor(std::log(R) / std::log(eta_)) + 1;
  if (brackets > kMaxRungs) {
    char eta_text[32];
    *std::to_chars(eta_text, eta_text + sizeof eta_text - 1, eta_).ptr = '\0';
    r.require(false, "reduction_factor",
              std::string("= ") + eta_text + " with max_t = " + std::to_string(ctx_.max_t) + " makes " +
                  (brackets < 1e18 ? std::to_string(static_cast<long long>(brackets)) : "over 10^18") +
                  " brackets; at most " + std::to_string(kMaxRungs) +
                  " are allowed. Use a larger reduction_factor (3 is usual)");
  }
  // s_max = floor(log_eta(R)), counted in integers-with-slack so that R = eta^k gives k
  // rather than k - 1 from a logarithm's rounding.
  while (std::pow(eta_, s_max_ + 1) <= R * (1 + 1e-9)) ++s_max_;
}

BracketShape HyperBandScheduler::shape(int s) const {
  BracketShape b;
  const auto R = static_cast<double>(ctx_.max_t);
  b.trials = static_cast<std::int64_t>(std::ceil((s_max_ + 1) * std::pow(eta_, s) / (s + 1) - 1e-9));
  const double r = R * std::pow(eta_, -s);
  for (int i = 0; i <= s; ++i) {
    auto m = std::max<std::int64_t>(1, std::llround(r * std::pow(eta_, i)));
    if (i == s) m = ctx_.max_t;
    // Rounding can make neighbours equal for small R: keep the rungs strictly increasing.
    if (!b.milestones.empty()) m = std::max(m, b.milestones.back() + 1);
    b.milestones.push_back(std::min(m, ctx_.max_t));
  }
  return b;
}

OpenedBracket HyperBandScheduler::opened_bracket(int k) const {
  const int s = s_max_ - k % (s_max_ + 1);
  return {s, shape(s)};
}

void HyperBandScheduler::on_trial_add(const Trial& trial) {
  if (brackets_.empty() || brackets_.back().closed) {
    Bracket b;
    // Brackets go from the most exploratory (s_max) to plain random search (0), then again.
    b.s = brackets_.empty() ? s_max_ : (brackets_.back().s == 0 ? s_max_ : brackets_.back().s - 1);
    b.shape = shape(b.s);
    brackets_.push_back(std::move(b));
  }
  Bracket& b = brackets_.back();
  b.members.push_back(trial.id);
  b.live[trial.id] = false;
  bracket_index_[trial.id] = brackets_.size() - 1;
  if (static_cast<std::int64_t>(b.members.size()) >= b.shape.trials) b.closed = true;
}

int HyperBandScheduler::bracket_of(TrialId id) const {
  const auto it = bracket_index_.find(id);
  return it == bracket_index_.end() ? -1 : static_cast<int>(it->second);
}

std::int64_t HyperBandScheduler::next_decision(const Trial& trial) const {
  const auto it = bracket_index_.find(trial.id);
  if (it == bracket_index_.end()) return trial.iterations + 1;
  const Bracket& b = brackets_[it->second];
  return std::max(trial.iterations + 1, b.shape.milestones[b.rung]);
}

Decision HyperBandScheduler::on_trial_result(const Trial& trial) {
  // A trial that reports runs: its promotion, if it had one, is used up. Left in the list,
  // it would resume the trial again the moment it pauses at its next rung.
  if (const auto p = std::find(promoted_.begin(), promoted_.end(), trial.id); p != promoted_.end()) promoted_.erase(p);
  const auto it = bracket_index_.find(trial.id);
  if (it == bracket_index_.end()) return Decision::Continue;
  Bracket& b = brackets_[it->second];
  const std::int64_t milestone = b.shape.milestones[b.rung];
  if (trial.iterations < milestone || b.rung + 1 == b.shape.milestones.size()) return Decision::Continue;
  const auto live = b.live.find(trial.id);
  if (live == b.live.end()) return Decision::Stop;  // abandoned while its result was in flight
  // The result at the rung is judged, not the trial's last finite value. One that reports
  // nothing the ranking ranks by judges nothing: the trial goes on, and its next result that
  // does is its entry at this rung (as ASHA's).
  if (!ranking_->record(trial)) return Decision::Continue;
  live->second = true;
  // The last trial to reach a rung settles it: it goes on (or stops) at once instead of
  // pausing only to be resumed (or dropped) a moment later. Only this settle's lists count:
  // promoted_ may still hold this trial from an earlier rung (it is pruned lazily).
  const auto promoted_before = promoted_.size(), abandoned_before = abandoned_.size();
  settle(b);
  const auto from = [](std::vector<TrialId>& v, std::size_t first, TrialId id) {
    const auto it = std::find(v.begin() + static_cast<std::ptrdiff_t>(first), v.end(), id);
    if (it == v.end()) return false;
    v.erase(it);
    return true;
  };
  if (from(promoted_, promoted_before, trial.id)) return Decision::Continue;
  if (from(abandoned_, abandoned_before, trial.id)) return Decision::Stop;
  return Decision::Pause;
}

void HyperBandScheduler::settle(Bracket& b) {
  if (!b.closed || b.live.empty() || b.rung + 1 >= b.shape.milestones.size()) return;
  std::vector<TrialId> at_rung;
  for (const auto& [id, reached] : b.live) {
    if (!reached) return;  // someone has not reached the rung yet
    at_rung.push_back(id);
  }
  const std::vector<TrialId> ranked = ranking_->best_first(at_rung);
  const auto keep = std::max<std::size_t>(1, static_cast<std::size_t>(std::floor(ranked.size() / eta_ + 1e-9)));
  b.live.clear();
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    ranking_->forget(ranked[i]);  // an entry is of one rung
    if (i < keep) {
      b.live[ranked[i]] = false;
      promoted_.push_back(ranked[i]);
    } else {
      abandoned_.push_back(ranked[i]);
    }
  }
  ++b.rung;
}

void HyperBandScheduler::drop(const Trial& trial) {
  const auto it = bracket_index_.find(trial.id);
  if (it == bracket_index_.end()) return;
  Bracket& b = brackets_[it->second];
  if (b.live.erase(trial.id) == 0) return;
  ranking_->forget(trial.id);
  settle(b);  // the rung may now be complete without it
}

void HyperBandScheduler::on_searcher_finished() {
  for (Bracket& b : brackets_) {
    if (b.closed) continue;
    b.closed = true;
    settle(b);
  }
}

std::vector<TrialId> HyperBandScheduler::take_abandoned() { return std::exchange(abandoned_, {}); }

std::string HyperBandScheduler::refuse_max_t(std::int64_t max_t) const {
  if (max_t == ctx_.max_t) return "";
  return "HyperBand's brackets were laid out for max_t = " + std::to_string(ctx_.max_t) + " (" +
         std::to_string(s_max_ + 1) + " bracket shapes, each with its trial count and its rungs up to " +
         std::to_string(ctx_.max_t) + "), and trials were already promoted or abandoned at those rungs: a " +
         "max_t of " + std::to_string(max_t) + " fits none of them. Change time_budget_s or num_samples " +
         "instead, or start a new experiment with the new max_t";
}

std::optional<TrialId> HyperBandScheduler::choose_trial_to_run(const std::vector<Trial>& trials) {
  // Promoted trials that ended meanwhile (an error) or already run are dropped from the
  // front; the rest keep their order, so the answer is the same until the next event.
  while (!promoted_.empty()) {
    const Trial& t = trials[static_cast<std::size_t>(promoted_.front() - 1)];
    if (t.status == TrialStatus::Paused) break;
    promoted_.erase(promoted_.begin());
  }
  for (const TrialId id : promoted_) {
    if (trials[static_cast<std::size_t>(id - 1)].runnable()) return id;
  }
  return order_.next(trials);
}

// Layout (the ranking's tag and version): the ranking's head, the bracket count, a line per
// bracket "S RUNG CLOSED MEMBERS ids... LIVE (id entry)..." (the ranking's entry, or that the
// trial is not at the rung yet), then the promoted and abandoned lists.
std::string HyperBandScheduler::save() const {
  const StateHeader header = ranking_->state_header();
  StateWriter w(header.tag, header.version);
  ranking_->write_head(w);
  w.field("brackets").integer(static_cast<std::int64_t>(brackets_.size())).line();
  for (const Bracket& b : brackets_) {
    w.integer(b.s).integer(static_cast<std::int64_t>(b.rung)).integer(b.closed ? 1 : 0);
    w.integer(static_cast<std::int64_t>(b.members.size()));
    for (TrialId id : b.members) w.integer(id);
    w.integer(static_cast<std::int64_t>(b.live.size()));
    for (const auto& [id, reached] : b.live) {
      w.integer(id);
      ranking_->write_entry(w, id);
    }
    w.line();
  }
  for (const auto& [name, ids] : {std::pair{"promoted", &promoted_}, std::pair{"abandoned", &abandoned_}}) {
    w.field(name).integer(static_cast<std::int64_t>(ids->size()));
    for (TrialId id : *ids) w.integer(id);
    w.line();
  }
  return w.str();
}

void HyperBandScheduler::restore(const std::string& state) {
  const StateHeader header = ranking_->state_header();
  StateReader r(state, header.tag, header.version, header.owner, header.named_since);
  ranking_->read_head(r);
  std::unique_ptr<RungRanking> ranking = ranking_->fresh();
  std::vector<Bracket> brackets;
  std::map<TrialId, std::size_t> index;
  for (std::size_t i = 0, nb = r.count_field("brackets"); i < nb; ++i) {
    const std::string which = "bracket " + std::to_string(i);
    Bracket b;
    b.s = static_cast<int>(r.integer(which + "'s s", 0, s_max_));
    b.shape = shape(b.s);
    b.rung = static_cast<std::size_t>(
        r.integer(which + "'s rung", 0, static_cast<std::int64_t>(b.shape.milestones.size()) - 1));
    b.closed = r.flag("whether " + which + " is closed");
    for (std::size_t k = r.count(which + "'s members"); k > 0; --k) {
      const TrialId id = r.integer("a member of " + which, 1);
      r.require(!index.contains(id), "trial " + std::to_string(id) + " is in two brackets");
      b.members.push_back(id);
      index[id] = i;
    }
    for (std::size_t k = r.count(which + "'s live trials"); k > 0; --k) {
      const TrialId id = r.integer("a live trial of " + which);
      b.live[id] = ranking->read_entry(r, id);
    }
    brackets.push_back(std::move(b));
  }
  const auto read_ids = [&](const char* name) {
    std::vector<TrialId> ids(r.count_field(name));
    for (auto& id : ids) id = r.integer(std::string("an id of ") + name);
    return ids;
  };
  auto promoted = read_ids("promoted");
  auto abandoned = read_ids("abandoned");
  r.finish();
  brackets_ = std::move(brackets);
  ranking_ = std::move(ranking);
  bracket_index_ = std::move(index);
  promoted_ = std::move(promoted);
  abandoned_ = std::move(abandoned);
  order_ = FifoOrder(/*paused_too=*/false);
}

}  // namespace ranktune::search
