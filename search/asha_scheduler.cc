// ASHA's stopping variant: rungs, cutoffs and saved state (search/asha_scheduler.h: the rule
// and its paper, Li et al., MLSys 2020), and the rung options the promotion variant shares.
#include "search/asha_scheduler.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "search/saved_state.h"

namespace ranktune::search {

std::vector<std::int64_t> asha_milestones(std::int64_t grace, double rf, std::int64_t max_t, int s,
                                          std::size_t limit) {
  // Each step finds the next distinct milestone directly rather than trying every power of
  // rf: a small rf rounds many powers to the same iteration (one rung judges it), and with
  // rf = 1 + 1e-16 there are ~1e16 of them per iteration.
  std::vector<std::int64_t> out;
  const double g = static_cast<double>(grace);
  const double log_rf = std::log(rf);
  while (out.size() <= limit) {
    double at = 0;
    if (out.empty()) {
      at = std::ceil(g * std::pow(rf, s));
    } else if (const auto p = static_cast<double>(out.back()); (rf - 1) * p <= 1) {
      // Powers of rf closer than one iteration here: the first one above p is at most
      // p * rf <= p + 1, so the next milestone is p + 1.
      at = p + 1;
    } else {
      // rf > 1 + 1 / p, so j stays well below 2^53 and ++j is exact.
      double j = std::max(static_cast<double>(s), std::floor(std::log(p / g) / log_rf) - 1);
      while (std::ceil(g * std::pow(rf, j)) <= p) ++j;
      at = std::ceil(g * std::pow(rf, j));
    }
    if (at >= static_cast<double>(max_t)) break;
    out.push_back(static_cast<std::int64_t>(at));
  }
  return out;
}

void require_rung_count(const OptionReader& r, std::size_t rungs, std::int64_t grace, double rf,
                        std::int64_t max_t) {
  if (rungs <= static_cast<std::size_t>(kMaxRungs)) return;
  // More than the limit: say about how many (the powers of rf below max_t / grace; fewer
  // where they round to the same iteration).
  const double powers = std::ceil(std::log(static_cast<double>(max_t) / grace) / std::log(rf));
  const auto about = static_cast<long long>(std::min(powers, static_cast<double>(max_t - grace)));
  char rf_text[32];
  *std::to_chars(rf_text, rf_text + sizeof rf_text - 1, rf).ptr = '\0';
  r.require(false, "reduction_factor",
            std::string("= ") + rf_text + " with grace_period = " + std::to_string(grace) +
                " and max_t = " + std::to_string(max_t) + " makes about " + std::to_string(about) +
                " rungs; at most " + std::to_string(kMaxRungs) +
                " are allowed. Use a larger reduction_factor (2 to 4 are usual)");
}

AshaRungOptions read_asha_rung_options(OptionReader& r, std::int64_t default_max_t) {
  AshaRungOptions o;
  o.max_t = r.integer("max_t", default_max_t);
  r.require(o.max_t >= 1, "max_t", "must be >= 1 iteration (got " + std::to_string(o.max_t) + ")");
  r.at_most("max_t", o.max_t, kMaxIterations);
  o.grace = r.integer("grace_period", 1);
  r.require(o.grace >= 1, "grace_period", "must be >= 1 iteration (got " + std::to_string(o.grace) + ")");
  r.at_most("grace_period", o.grace, kMaxIterations);
  o.reduction_factor = r.number("reduction_factor", 4);
  r.require(std::isfinite(o.reduction_factor) && o.reduction_factor > 1, "reduction_factor",
            "must be > 1 (got " + to_string(Value{o.reduction_factor}) + "); 2 to 4 are usual");
  return o;
}

AshaScheduler::AshaScheduler(SchedulerContext ctx, const Options& options)
    : ctx_(std::move(ctx)) {
  OptionReader r(options, "asha");
  const auto [max_t, grace, rf] = read_asha_rung_options(r, ctx_.max_t);
  reduction_factor_ = rf;
  const std::int64_t brackets = r.integer("brackets", 1);
  r.require(brackets >= 1, "brackets", "must be >= 1 (got " + std::to_string(brackets) + ")");
  r.at_most("brackets", brackets, kMaxRungs);
  // make_scheduler sends variant = "promotion" to AshaPromotionScheduler.
  r.text("variant", "stopping", {"stopping"});
  top_k_ = r.text("stop_rule", "top_k", {"top_k", "quantile"}) == "top_k";
  r.finish();

  for (std::int64_t s = 0; s < brackets; ++s) {
    std::vector<Rung> rungs;
    const auto milestones = asha_milestones(grace, reduction_factor_, max_t, static_cast<int>(s), kMaxRungs);
    require_rung_count(r, milestones.size(), grace, reduction_factor_, max_t);
    for (const std::int64_t at : milestones) rungs.push_back({at, {}});
    // Checked here rather than with a formula so that rounding cannot disagree with it.
    r.require(!rungs.empty(), brackets > 1 ? "brackets" : "grace_period",
              "leaves bracket " + std::to_string(s) + " without a rung below max_t = " +
                  std::to_string(max_t) + " (needs grace_period * reduction_factor^(brackets-1) < max_t); " +
                  "lower it or raise max_t");
    brackets_.push_back(std::move(rungs));
  }
}

AshaScheduler::TrialRecord& AshaScheduler::record_for(TrialId id) {
  auto [it, added] = records_.try_emplace(id);
  if (added) it->second.bracket = static_cast<int>(added_++ % static_cast<std::int64_t>(brackets_.size()));
  return it->second;
}

void AshaScheduler::on_trial_add(const Trial& trial) { record_for(trial.id); }

int AshaScheduler::bracket_of(TrialId id) const {
  const auto it = records_.find(id);
  return it == records_.end() ? -1 : it->second.bracket;
}

std::vector<std::int64_t> AshaScheduler::milestones(std::size_t bracket) const {
  std::vector<std::int64_t> out;
  for (const auto& rung : brackets_.at(bracket)) out.push_back(rung.milestone);
  return out;
}

Decision AshaScheduler::on_trial_result(const Trial& trial) {
  TrialRecord& rec = record_for(trial.id);
  const auto score = latest_score(trial, ctx_);
  if (!score) return Decision::Continue;  // nothing to judge; the rung waits for a score
  auto& rungs = brackets_[static_cast<std::size_t>(rec.bracket)];
  // The highest rung reached: a trial whose metric was missing at a milestone is judged
  // at the next one it reaches with a score, as Tune does.
  std::size_t k = rungs.size();
  while (k > 0 && rungs[k - 1].milestone > trial.iterations) --k;
  if (k == 0 || k <= rec.next_rung) return Decision::Continue;
  Rung& rung = rungs[k - 1];
  rec.next_rung = k;

  Decision d = Decision::Continue;
  const std::size_t m = rung.scores.size();
  if (m > 0) {
    std::size_t i = 0;
    if (top_k_) {
      // Among the m + 1 trials at the rung with this one, the best k = max(1, floor((m+1)/rf))
      // go on: this one does unless k recorded scores beat it, i.e. unless it is below the
      // k-th largest recorded, x_{m-k}.
      const auto k = std::max<std::size_t>(
          1, static_cast<std::size_t>(std::floor(static_cast<double>(m + 1) / reduction_factor_)));
      i = m - std::min(k, m);
    } else {
      // Exact for an integer rf: (m-1)*(rf-1) is an integer and the division rounds correctly.
      const double pos = static_cast<double>(m - 1) * (reduction_factor_ - 1) / reduction_factor_;
      i = std::min(m - 1, static_cast<std::size_t>(std::floor(pos)));
    }
    rung.scores.split_at(i + 1);  // moves by at most one since the previous insertion
    if (*score < rung.scores.max_lower()) d = Decision::Stop;
  }
  rung.scores.insert(*score);
  return d;
}

std::int64_t AshaScheduler::next_decision(const Trial& trial) const {
  const auto it = records_.find(trial.id);
  if (it == records_.end()) return trial.iterations + 1;  // not added: stay synchronous
  const auto& rungs = brackets_[static_cast<std::size_t>(it->second.bracket)];
  if (it->second.next_rung >= rungs.size()) return std::numeric_limits<std::int64_t>::max();
  // A trial past an unjudged milestone (its result there lacked the metric) may be judged
  // at its very next scored result.
  return std::max(trial.iterations + 1, rungs[it->second.next_rung].milestone);
}

// Layout (version 2; version 1 is the same without the field names): the trials added,
// the bracket and trial counts, then under "milestones" a line per bracket with its rung
// count and milestones (checked on restore), under "scores" a line per rung (bracket by
// bracket) with its score count and scores, and under "records" a line per trial (by id):
// "ID BRACKET NEXT_RUNG".
std::string AshaScheduler::save() const {
  StateWriter w("asha", 2);
  w.field("added").integer(added_).field("brackets").integer(static_cast<std::int64_t>(brackets_.size()));
  w.field("trials").integer(static_cast<std::int64_t>(records_.size())).field("milestones").line();
  for (const auto& rungs : brackets_) {
    w.integer(static_cast<std::int64_t>(rungs.size()));
    for (const auto& rung : rungs) w.integer(rung.milestone);
    w.line();
  }
  w.field("scores").line();
  for (const auto& rungs : brackets_) {
    for (const auto& rung : rungs) {
      const auto values = rung.scores.values();
      w.integer(static_cast<std::int64_t>(values.size()));
      for (double v : values) w.number(v);
      w.line();
    }
  }
  std::vector<TrialId> ids;
  ids.reserve(records_.size());
  for (const auto& [id, rec] : records_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());  // a deterministic text for the same state
  w.field("records").line();
  for (TrialId id : ids) {
    const auto& rec = records_.at(id);
    w.integer(id).integer(rec.bracket).integer(static_cast<std::int64_t>(rec.next_rung)).line();
  }
  return w.str();
}

void AshaScheduler::restore(const std::string& state) {
  StateReader r(state, "asha", 2, "asha", /*named_since=*/2);
  const std::int64_t added = r.integer_field("added", 0);
  const std::size_t nbrackets = r.count_field("brackets");
  const std::size_t ntrials = r.count_field("trials");
  r.field("milestones");
  r.require(nbrackets == brackets_.size(), "saved with other options (brackets differ)");
  auto brackets = brackets_;
  for (auto& rungs : brackets) {
    r.require(r.count("rungs") == rungs.size(), "saved with other options (rungs differ)");
    for (auto& rung : rungs) {
      r.require(r.integer("a milestone") == rung.milestone, "saved with other options (rungs differ)");
      rung.scores = RankSplit{};
    }
  }
  r.field("scores");
  for (auto& rungs : brackets) {
    for (auto& rung : rungs) {
      for (std::size_t n = r.count("a rung's scores"); n > 0; --n) {
        const double v = r.number("a rung score");
        r.require(!std::isnan(v), "NaN rung score");
        rung.scores.insert(v);
      }
    }
  }
  std::unordered_map<TrialId, TrialRecord> records;
  r.field("records");
  for (std::size_t i = 0; i < ntrials; ++i) {
    const TrialId id = r.integer("a trial id");
    TrialRecord rec;
    rec.bracket = static_cast<int>(r.integer("a trial's bracket", 0, static_cast<std::int64_t>(brackets.size()) - 1));
    rec.next_rung = static_cast<std::size_t>(r.integer(
        "a trial's next rung", 0, static_cast<std::int64_t>(brackets[static_cast<std::size_t>(rec.bracket)].size())));
    r.require(records.emplace(id, rec).second, "trial " + std::to_string(id) + " twice");
  }
  r.finish();
  brackets_ = std::move(brackets);
  records_ = std::move(records);
  added_ = added;
}

}  // namespace ranktune::search
