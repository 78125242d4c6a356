// The rung bookkeeping shared by the single- and multi-objective ASHA stopping variants
// (search/asha_rungs.h; the rule and its paper in search/asha_scheduler.h).
#include "search/asha_rungs.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "search/asha_scheduler.h"

namespace ranktune::search {

AshaStoppingOptions read_asha_stopping_options(OptionReader& r, std::int64_t default_max_t) {
  const auto [max_t, grace, rf] = read_asha_rung_options(r, default_max_t);
  AshaStoppingOptions o{max_t, grace, rf};
  o.brackets = r.integer("brackets", 1);
  r.require(o.brackets >= 1, "brackets", "must be >= 1 (got " + std::to_string(o.brackets) + ")");
  r.at_most("brackets", o.brackets, kMaxRungs);
  // make_scheduler sends variant = "promotion" to AshaPromotionScheduler.
  r.text("variant", "stopping", {"stopping"});
  o.top_k = r.text("stop_rule", "top_k", {"top_k", "quantile"}) == "top_k";
  return o;
}

std::size_t asha_cutoff_index(std::size_t m, double reduction_factor, bool top_k) {
  if (top_k) {
    // Among the m + 1 trials at the rung with this one, the best k = max(1, floor((m+1)/rf))
    // go on: this one does unless k recorded scores beat it, i.e. unless it is below the
    // k-th largest recorded, x_{m-k}.
    const auto k = std::max<std::size_t>(
        1, static_cast<std::size_t>(std::floor(static_cast<double>(m + 1) / reduction_factor)));
    return m - std::min(k, m);
  }
  // Exact for an integer rf: (m-1)*(rf-1) is an integer and the division rounds correctly.
  const double pos = static_cast<double>(m - 1) * (reduction_factor - 1) / reduction_factor;
  return std::min(m - 1, static_cast<std::size_t>(std::floor(pos)));
}

AshaRungs::AshaRungs(const OptionReader& r, const AshaStoppingOptions& o) {
  for (std::int64_t s = 0; s < o.brackets; ++s) {
    auto milestones = asha_milestones(o.grace, o.reduction_factor, o.max_t, static_cast<int>(s), kMaxRungs);
    require_rung_count(r, milestones.size(), o.grace, o.reduction_factor, o.max_t);
    // Checked here rather than with a formula so that rounding cannot disagree with it.
    r.require(!milestones.empty(), o.brackets > 1 ? "brackets" : "grace_period",
              "leaves bracket " + std::to_string(s) + " without a rung below max_t = " +
                  std::to_string(o.max_t) + " (needs grace_period * reduction_factor^(brackets-1) < max_t); " +
                  "lower it or raise max_t");
    milestones_.push_back(std::move(milestones));
  }
}

void AshaRungs::add(TrialId id) {
  auto [it, added] = records_.try_emplace(id);
  if (added) it->second.bracket = static_cast<int>(added_++ % static_cast<std::int64_t>(milestones_.size()));
}

int AshaRungs::bracket_of(TrialId id) const {
  const auto it = records_.find(id);
  return it == records_.end() ? -1 : it->second.bracket;
}

std::optional<AshaRungs::At> AshaRungs::reach(const Trial& trial) {
  add(trial.id);
  Record& rec = records_.at(trial.id);
  const auto& ms = milestones_[static_cast<std::size_t>(rec.bracket)];
  // The highest rung reached: a trial whose metric was missing at a milestone is judged
  // at the next one it reaches with a score, as Tune does.
  std::size_t k = ms.size();
  while (k > 0 && ms[k - 1] > trial.iterations) --k;
  if (k == 0 || k <= rec.next_rung) return std::nullopt;
  rec.next_rung = k;
  return At{static_cast<std::size_t>(rec.bracket), k - 1};
}

std::int64_t AshaRungs::next_decision(const Trial& trial) const {
  const auto it = records_.find(trial.id);
  if (it == records_.end()) return trial.iterations + 1;  // not added: stay synchronous
  const auto& ms = milestones_[static_cast<std::size_t>(it->second.bracket)];
  if (it->second.next_rung >= ms.size()) return std::numeric_limits<std::int64_t>::max();
  // A trial past an unjudged milestone (its result there lacked the metric) may be judged
  // at its very next scored result.
  return std::max(trial.iterations + 1, ms[it->second.next_rung]);
}

void AshaRungs::write_head(StateWriter& w) const {
  w.field("added").integer(added_).field("brackets").integer(static_cast<std::int64_t>(milestones_.size()));
  w.field("trials").integer(static_cast<std::int64_t>(records_.size())).field("milestones").line();
  for (const auto& ms : milestones_) {
    w.integer(static_cast<std::int64_t>(ms.size()));
    for (const std::int64_t at : ms) w.integer(at);
    w.line();
  }
}

void AshaRungs::write_records(StateWriter& w) const {
  std::vector<TrialId> ids;
  ids.reserve(records_.size());
  for (const auto& [id, rec] : records_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());  // a deterministic text for the same state
  w.field("records").line();
  for (const TrialId id : ids) {
    const Record& rec = records_.at(id);
    w.integer(id).integer(rec.bracket).integer(static_cast<std::int64_t>(rec.next_rung)).line();
  }
}

std::size_t AshaRungs::read_head(StateReader& r) {
  added_ = r.integer_field("added", 0);
  const std::size_t nbrackets = r.count_field("brackets");
  const std::size_t ntrials = r.count_field("trials");
  r.field("milestones");
  r.require(nbrackets == milestones_.size(), "saved with other options (brackets differ)");
  for (const auto& ms : milestones_) {
    r.require(r.count("rungs") == ms.size(), "saved with other options (rungs differ)");
    for (const std::int64_t at : ms)
      r.require(r.integer("a milestone") == at, "saved with other options (rungs differ)");
  }
  return ntrials;
}

void AshaRungs::read_records(StateReader& r, std::size_t trials) {
  std::unordered_map<TrialId, Record> records;
  r.field("records");
  for (std::size_t i = 0; i < trials; ++i) {
    const TrialId id = r.integer("a trial id");
    Record rec;
    rec.bracket = static_cast<int>(r.integer("a trial's bracket", 0, static_cast<std::int64_t>(milestones_.size()) - 1));
    rec.next_rung = static_cast<std::size_t>(r.integer(
        "a trial's next rung", 0, static_cast<std::int64_t>(milestones_[static_cast<std::size_t>(rec.bracket)].size())));
    r.require(records.emplace(id, rec).second, "trial " + std::to_string(id) + " twice");
  }
  records_ = std::move(records);
}

AshaStoppingBase::AshaStoppingBase(const Options& options, std::int64_t default_max_t) {
  OptionReader r(options, "asha");
  options_ = read_asha_stopping_options(r, default_max_t);
  r.finish();
  rungs_ = AshaRungs(r, options_);
}

}  // namespace ranktune::search
