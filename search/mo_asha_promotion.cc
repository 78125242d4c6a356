// Multi-objective ASHA's promotion variant: a rung's Pareto top and its saved entries
// (search/mo_asha_promotion.h: the rule and its papers, Schmucker et al. 2021, Li et al. 2020).
#include "search/mo_asha_promotion.h"

#include <stdexcept>

#include "search/saved_state.h"

namespace ranktune::search {

MoPromotionRanking::MoPromotionRanking(Objectives objectives, std::size_t rungs)
    : objectives_(std::move(objectives)), rungs_(rungs) {
  objectives_.check();
}

std::unique_ptr<PromotionRanking> MoPromotionRanking::fresh(std::size_t rungs) const {
  return std::make_unique<MoPromotionRanking>(objectives_, rungs);
}

bool MoPromotionRanking::record(std::size_t k, const Trial& trial) {
  if (!objectives_.any_reported(trial.last_metrics)) return false;
  Rung& rung = rungs_[k];
  rung.points[trial.id] = objectives_.point(trial.last_metrics);
  rung.waiting.insert(trial.id);
  rung.stale = true;
  return true;
}

bool MoPromotionRanking::wait(std::size_t k, TrialId id) {
  Rung& rung = rungs_[k];
  if (!rung.points.contains(id)) return false;
  rung.waiting.insert(id);
  rung.stale = true;
  return true;
}

void MoPromotionRanking::visit_top_waiting(std::size_t k, std::size_t top, const std::function<Visit(TrialId)>& visit) {
  Rung& rung = rungs_[k];
  if (rung.stale || rung.top != top) {
    // The points in id order, so that the selection order's last tie-break (the index) is
    // the lower id.
    std::vector<TrialId> ids;
    std::vector<ParetoPoint> points;
    ids.reserve(rung.points.size());
    points.reserve(rung.points.size());
    for (const auto& [id, p] : rung.points) {
      ids.push_back(id);
      points.push_back(p);
    }
    const ParetoSelection s = pareto_selection(points);
    rung.top_waiting.clear();
    for (std::size_t i = 0; i < top && i < s.order.size(); ++i)
      if (rung.waiting.contains(ids[s.order[i]])) rung.top_waiting.push_back(ids[s.order[i]]);
    rung.top = top;
    rung.stale = false;
  }
  // A trial never waits at a rung again once it left it (a rung records a trial once), so the
  // ones that left drop out of the list for good; the walk keeps the rest in order.
  std::size_t kept = 0;
  bool taken = false;
  for (std::size_t i = 0; i < rung.top_waiting.size(); ++i) {
    const TrialId id = rung.top_waiting[i];
    if (!taken && rung.waiting.contains(id)) {
      const Visit v = visit(id);
      if (v == Visit::Leave) {
        rung.waiting.erase(id);
        continue;
      }
      taken = v == Visit::Take;
    } else if (!rung.waiting.contains(id)) {
      continue;
    }
    rung.top_waiting[kept++] = id;
  }
  rung.top_waiting.resize(kept);
}

// Version 1: the objectives (write_objectives), then the promotion variant's layout.
StateHeader MoPromotionRanking::state_header() const { return {"mo_asha_promotion", 1, "mo_asha (promotion)", 1}; }

void MoPromotionRanking::write_head(StateWriter& w) const { write_objectives(w, objectives_); }

void MoPromotionRanking::read_head(StateReader& r) const { read_objectives(r, objectives_); }

void MoPromotionRanking::write_rung(StateWriter& w, std::size_t k) const {
  w.integer(static_cast<std::int64_t>(rungs_[k].points.size()));
  for (const auto& [id, p] : rungs_[k].points) {
    w.integer(id);
    write_pareto_point(w, p);
  }
}

void MoPromotionRanking::read_rung(StateReader& r, std::size_t k) {
  Rung& rung = rungs_[k];
  for (std::size_t n = r.count("a rung's points"); n > 0; --n) {
    const TrialId id = r.integer("a trial id");
    r.require(!rung.points.contains(id), "trial " + std::to_string(id) + " twice at rung " + std::to_string(k));
    rung.points[id] = read_pareto_point(r, objectives_.metrics.size());
  }
  rung.stale = true;
}

std::unique_ptr<Scheduler> make_mo_asha_promotion(const SchedulerContext& ctx, const Objectives& objectives,
                                                  const Options& options) {
  return std::make_unique<AshaPromotionScheduler>(ctx, options, MoPromotionRanking(objectives, 0));
}

}  // namespace ranktune::search
