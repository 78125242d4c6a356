#pragma once
/// Multi-objective HyperBand: HyperBand's brackets and rungs (Li, Jamieson, DeSalvo,
/// Rostamizadeh and Talwalkar, "Hyperband: A Novel Bandit-Based Approach to Hyperparameter
/// Optimization", JMLR 18(185), 2018; hyperband_scheduler.h) with a full rung ranked as
/// multi-objective successive halving ranks one (R. Schmucker, M. Donini, V. Perrone, M. Seeger
/// and C. Archambeau, "Multi-objective Asynchronous Successive Halving", arXiv:2106.12639, 2021,
/// whose MO successive halving is HyperBand's inner loop with a Pareto ranking).
///
/// Rule. A trial's entry at its bracket's rung is the Pareto point (objectives.h) of its result
/// there. When the rung is complete, its m points are ranked by pareto.h's selection order:
/// Deb's constrained non-dominated rank, then crowding distance within the front (larger
/// first), then the lower trial id; the first max(1, floor(m / eta)) go on, as HyperBand keeps
/// its best. Crowding distance, not the paper's ε-net, for the reasons mo_asha_scheduler.h
/// gives: one deterministic order shared with MO-ASHA and NSGA-II.
///
/// One objective. Non-dominated sorting of one value is sorting by it; a front is a set of
/// equal values, whose crowding distances are all equal, so ties go to the lower id, and failed
/// points (NaN, ±inf) share the last front: with one objective and no constraint the order, and
/// every decision, is HyperBand's (tested).
///
/// Failed results. A result that reports none of the objectives is not judged (Objectives::
/// any_reported): the trial runs on, and its next result that reports one is its entry at the
/// rung. One that lacks some objective or constrained metric, or reports a non-finite value for
/// one, is a failed point, behind every finite point. So a trainable that reports an objective
/// only at the end (a latency measured once) is a failed point at every earlier rung where it
/// reports the other objectives: such trials are then kept by crowding and id alone, and
/// HyperBand cannot tell them apart before max_t.
///
/// Cost. A full rung of m trials is ranked in O(m log m) for 2 objectives, at most O(M m^2)
/// from 3 on (pareto.cc), against HyperBand's O(m log m). Memory is M + 1
/// doubles per trial at its bracket's current rung.

#include <map>
#include <memory>
#include <vector>

#include "search/hyperband_scheduler.h"
#include "search/objectives.h"
#include "search/pareto.h"

namespace ranktune::search {

class MoHyperBandRanking final : public RungRanking {
 public:
  /// Throws std::invalid_argument for bad objectives (Objectives::check).
  explicit MoHyperBandRanking(Objectives objectives);

  std::unique_ptr<RungRanking> fresh() const override;
  /// Reads the objectives and constrained metrics from `trial.last_metrics`.
  bool record(const Trial& trial) override;
  std::vector<TrialId> best_first(const std::vector<TrialId>& ids) const override;
  void forget(TrialId id) override { points_.erase(id); }
  StateHeader state_header() const override;
  /// The objectives, checked on restore: a state saved with others is refused.
  void write_head(StateWriter& w) const override;
  void read_head(StateReader& r) const override;
  /// "0" (not at the rung yet), or "1" and the point (objectives.h's write_pareto_point).
  void write_entry(StateWriter& w, TrialId id) const override;
  bool read_entry(StateReader& r, TrialId id) override;

  const Objectives& objectives() const { return objectives_; }

 private:
  Objectives objectives_;
  std::map<TrialId, ParetoPoint> points_;  ///< of the live trials at their bracket's current rung
};

/// HyperBand ranking by `objectives` (the scheduler factory's "hyperband" when
/// ctx.objectives.multi()). Throws OptionError for a bad option, std::invalid_argument for bad
/// objectives.
std::unique_ptr<Scheduler> make_mo_hyperband(const SchedulerContext& ctx, const Objectives& objectives,
                                             const Options& options);

}  // namespace ranktune::search
