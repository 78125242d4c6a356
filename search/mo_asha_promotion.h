#pragma once
/// Multi-objective ASHA, promotion variant: R. Schmucker, M. Donini, V. Perrone, M. Seeger and
/// C. Archambeau, "Multi-objective Asynchronous Successive Halving", arXiv:2106.12639, 2021, on
/// the promotion variant of ASHA (Li et al., "A System for Massively Parallel Hyperparameter
/// Tuning", MLSys 2020, Algorithm 2; asha_promotion.h).
///
/// ASHA's promotion variant (its rungs, options, pauses and choice order) with one change: a
/// trial's entry at a rung is the Pareto point (objectives.h) of its result there, and the top
/// floor(n_k / reduction_factor) of the n_k entries at rung k are the first of pareto.h's
/// selection order: Deb's constrained non-dominated rank, then crowding distance within the
/// front (larger first), then the lower trial id. A paused trial there that was not promoted
/// from it yet is promoted, from the highest rung down, before any new trial starts. Crowding
/// distance rather than the paper's ε-net, for the reasons mo_asha_scheduler.h gives.
///
/// One objective. Non-dominated sorting of one value is sorting by it; a front is a set of
/// equal values, whose crowding distances are all equal, so ties go to the lower id, and failed
/// points (NaN, ±inf) share the last front: with one objective and no constraint the top of
/// every rung, and every decision, is AshaPromotionScheduler's (tested).
///
/// Failed results. A result that reports none of the objectives records nothing
/// (Objectives::any_reported): the trial runs on, and its next result that reports one is
/// recorded at the highest rung it has reached. One that lacks some objective or constrained
/// metric, or reports a non-finite value for one, is a failed point, behind every finite point;
/// so a trainable that reports an objective only at the end is a failed point at every rung.
///
/// Cost. The selection order of a rung is computed again (pareto_selection: O(n log n) for n
/// entries of 2 objectives, at most O(M n^2) from 3 on) at the first choice after an entry is
/// recorded there, as MO-ASHA's
/// stopping variant ranks a rung at each decision; the choices in between walk the rung's top
/// waiting trials from a cached list. Memory is M + 1 doubles per (trial, rung recorded).

#include <map>
#include <memory>
#include <set>
#include <vector>

#include "search/asha_promotion.h"
#include "search/objectives.h"
#include "search/pareto.h"

namespace ranktune::search {

class MoPromotionRanking final : public PromotionRanking {
 public:
  /// `rungs` empty rungs. Throws std::invalid_argument for bad objectives (Objectives::check).
  MoPromotionRanking(Objectives objectives, std::size_t rungs);

  std::unique_ptr<PromotionRanking> fresh(std::size_t rungs) const override;
  /// Reads the objectives and constrained metrics from `trial.last_metrics`.
  bool record(std::size_t k, const Trial& trial) override;
  std::size_t recorded(std::size_t k) const override { return rungs_[k].points.size(); }
  bool wait(std::size_t k, TrialId id) override;
  void leave(std::size_t k, TrialId id) override { rungs_[k].waiting.erase(id); }
  void visit_top_waiting(std::size_t k, std::size_t top, const std::function<Visit(TrialId)>& visit) override;
  StateHeader state_header() const override;
  /// The objectives, checked on restore: a state saved with others is refused.
  void write_head(StateWriter& w) const override;
  void read_head(StateReader& r) const override;
  /// "COUNT (id point)..." in id order (objectives.h's write_pareto_point).
  void write_rung(StateWriter& w, std::size_t k) const override;
  void read_rung(StateReader& r, std::size_t k) override;

 private:
  struct Rung {
    std::map<TrialId, ParetoPoint> points;  ///< every trial recorded at the rung, by id
    std::set<TrialId> waiting;              ///< those paused there, not promoted yet
    /// The waiting trials among the top, best first, as the last ranking found them (some
    /// may have left since); recomputed when `stale`.
    std::vector<TrialId> top_waiting;
    std::size_t top = 0;  ///< the top size it was computed for
    bool stale = true;
  };
  Objectives objectives_;
  std::vector<Rung> rungs_;
};

/// ASHA's promotion variant ranking by `objectives` (the scheduler factory's "asha" with
/// variant = "promotion" when ctx.objectives.multi()). Throws OptionError for a bad option,
/// std::invalid_argument for bad objectives.
std::unique_ptr<Scheduler> make_mo_asha_promotion(const SchedulerContext& ctx, const Objectives& objectives,
                                                  const Options& options);

}  // namespace ranktune::search
