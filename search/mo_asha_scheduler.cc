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
  write_objectives(w, objectives_);
  rungs_.write_head(w);
  w.field("points").line();
  for (const auto& bracket : points_) {
    for (const auto& rung : bracket) {
      w.integer(static_cast<std::int64_t>(rung.size())).line();
      for (const ParetoPoint& p : rung) {
        write_point(w, p);
        w.line();
      }
    }
  }
  rungs_.write_records(w);
  return w.str();
}

void MoAshaScheduler::restore(const std::string& state) {
  StateReader r(state, "mo_asha", 1, "mo_asha");
  read_objectives(r, objectives_);
  const std::size_t m = objectives_.metrics.size();
  points_ = read_rungs<std::vector<ParetoPoint>>(
      r, "points", "a rung's points",
      [m](StateReader& r, std::vector<ParetoPoint>& points) { points.push_back(read_point(r, m)); });
}

}  // namespace ranktune::search
