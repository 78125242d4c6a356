// Multi-objective ASHA's stopping variant: a rung's Pareto ranking and its saved state
// (search/mo_asha_scheduler.h: the rule and its paper, Schmucker et al. 2021).
#include "search/mo_asha_scheduler.h"

#include <cmath>
#include <stdexcept>

#include "search/saved_state.h"

namespace ranktune::search {

MoAshaScheduler::MoAshaScheduler(const SchedulerContext& ctx, Objectives objectives, const Options& options)
    : AshaStoppingBase(options, ctx.max_t), objectives_(std::move(objectives)), points_(per_rung<std::vector<ParetoPoint>>()) {
  objectives_.check();
}

Decision MoAshaScheduler::on_trial_result(const Trial& trial) {
  rungs_.add(trial.id);  // its bracket, in the order trials are first seen
  if (!objectives_.any_reported(trial.last_metrics)) return Decision::Continue;
  const auto at = rungs_.reach(trial);
  if (!at) return Decision::Continue;
  auto& recorded = points_[at->bracket][at->rung];
  ParetoPoint point = objectives_.point(trial.last_metrics);
  Decision d = Decision::Continue;
  if (const std::size_t m = recorded.size(); m > 0) {
    // The trial's point first: the selection order breaks full ties by index, so it wins them,
    // as ASHA lets a tie go on.
    std::vector<ParetoPoint> all;
    all.reserve(m + 1);
    all.push_back(point);
    all.insert(all.end(), recorded.begin(), recorded.end());
    const ParetoSelection s = pareto_selection(all);
    std::size_t ahead = 0;
    for (std::size_t j = 1; j <= m; ++j) ahead += selected_before(s, j, 0) ? 1 : 0;
    if (ahead >= m - asha_cutoff_index(m, options_.reduction_factor, options_.top_k)) d = Decision::Stop;
  }
  recorded.push_back(std::move(point));
  return d;
}

// Layout (version 1): "objectives" with the count and a line per objective (its name and
// mode, 1 for max), "constraints" likewise (metric, 1 for "<=", bound), both checked on
// restore; ASHA's head (asha_rungs.h); under "points", per rung (bracket by bracket), a line
// with its point count and a line per point: its violation and objectives (minimization form,
// as recorded); ASHA's records.
std::string MoAshaScheduler::save() const {
  StateWriter w("mo_asha", 1);
  w.field("objectives").integer(static_cast<std::int64_t>(objectives_.metrics.size())).line();
  for (std::size_t i = 0; i < objectives_.metrics.size(); ++i)
    w.text(objectives_.metrics[i]).integer(objectives_.modes[i] == Mode::Max ? 1 : 0).line();
  w.field("constraints").integer(static_cast<std::int64_t>(objectives_.constraints.size())).line();
  for (const Constraint& c : objectives_.constraints) w.text(c.metric).integer(c.at_most ? 1 : 0).number(c.bound).line();
  rungs_.write_head(w);
  w.field("points").line();
  for (const auto& bracket : points_) {
    for (const auto& rung : bracket) {
      w.integer(static_cast<std::int64_t>(rung.size())).line();
      for (const ParetoPoint& p : rung) {
        w.number(p.violation);
        for (const double v : p.objectives) w.number(v);
        w.line();
      }
    }
  }
  rungs_.write_records(w);
  return w.str();
}

void MoAshaScheduler::restore(const std::string& state) {
  StateReader r(state, "mo_asha", 1, "mo_asha");
  Objectives saved;
  for (std::size_t n = r.count_field("objectives"); n > 0; --n) {
    saved.metrics.push_back(r.text("an objective's metric"));
    saved.modes.push_back(r.flag("an objective's mode") ? Mode::Max : Mode::Min);
  }
  for (std::size_t n = r.count_field("constraints"); n > 0; --n) {
    Constraint c;
    c.metric = r.text("a constraint's metric");
    c.at_most = r.flag("a constraint's direction");
    c.bound = r.number("a constraint's bound");
    saved.constraints.push_back(std::move(c));
  }
  r.require(saved == objectives_, "saved with other objectives (" + saved.describe() + "; this experiment has " +
                                      objectives_.describe() + ")");
  const std::size_t m = objectives_.metrics.size();
  points_ = read_rungs<std::vector<ParetoPoint>>(
      r, "points", "a rung's points", [m](StateReader& r, std::vector<ParetoPoint>& points) {
        ParetoPoint p;
        p.violation = r.number("a point's violation");
        r.require(p.violation >= 0, "a point's violation must be >= 0 (got " + std::to_string(p.violation) + ")");
        for (std::size_t i = 0; i < m; ++i) p.objectives.push_back(r.number("a point's objective"));
        points.push_back(std::move(p));
      });
}

}  // namespace ranktune::search
