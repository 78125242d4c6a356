// Multi-objective HyperBand's ranking of a full rung and its saved entries
// (search/mo_hyperband_ranking.h: the rule and its papers, Li et al. 2018, Schmucker et al. 2021).
#include "search/mo_hyperband_ranking.h"

#include <algorithm>

#include "search/saved_state.h"

namespace ranktune::search {

MoHyperBandRanking::MoHyperBandRanking(Objectives objectives) : objectives_(std::move(objectives)) {
  objectives_.check();
}

std::unique_ptr<RungRanking> MoHyperBandRanking::fresh() const {
  return std::make_unique<MoHyperBandRanking>(objectives_);
}

bool MoHyperBandRanking::record(const Trial& trial) {
  if (!objectives_.any_reported(trial.last_metrics)) return false;
  points_[trial.id] = objectives_.point(trial.last_metrics);
  return true;
}

std::vector<TrialId> MoHyperBandRanking::best_first(const std::vector<TrialId>& ids) const {
  // In ascending id order, so that the selection order's last tie-break (the index) is the id.
  std::vector<TrialId> sorted = ids;
  std::sort(sorted.begin(), sorted.end());
  std::vector<ParetoPoint> points;
  points.reserve(sorted.size());
  for (const TrialId id : sorted) points.push_back(points_.at(id));
  const ParetoSelection s = pareto_selection(points);
  std::vector<TrialId> out;
  out.reserve(sorted.size());
  for (const std::size_t i : s.order) out.push_back(sorted[i]);
  return out;
}

// Version 1: the objectives (write_objectives), then HyperBand's layout.
StateHeader MoHyperBandRanking::state_header() const { return {"mo_hyperband", 1, "mo_hyperband", 1}; }

void MoHyperBandRanking::write_head(StateWriter& w) const { write_objectives(w, objectives_); }

void MoHyperBandRanking::read_head(StateReader& r) const { read_objectives(r, objectives_); }

void MoHyperBandRanking::write_entry(StateWriter& w, TrialId id) const {
  const auto it = points_.find(id);
  w.integer(it == points_.end() ? 0 : 1);
  if (it != points_.end()) write_pareto_point(w, it->second);
}

bool MoHyperBandRanking::read_entry(StateReader& r, TrialId id) {
  if (!r.flag("whether a live trial is at its rung")) return false;
  points_[id] = read_pareto_point(r, objectives_.metrics.size());
  return true;
}

std::unique_ptr<Scheduler> make_mo_hyperband(const SchedulerContext& ctx, const Objectives& objectives,
                                             const Options& options) {
  return std::make_unique<HyperBandScheduler>(ctx, options, std::make_unique<MoHyperBandRanking>(objectives));
}

}  // namespace ranktune::search
