#pragma once
/// Multi-objective ASHA, stopping variant: R. Schmucker, M. Donini, V. Perrone, M. Seeger and
/// C. Archambeau, "Multi-objective Asynchronous Successive Halving", arXiv:2106.12639, 2021.
///
/// ASHA's rungs, brackets, options and stop rules (asha_scheduler.h, shared through
/// asha_rungs.h), with one change: a trial's result at a rung is a Pareto point of several
/// objectives under constraints (objectives.h), not one score, and "better" is the
/// multi-objective ranking of pareto.h: Deb's constrained non-dominated sorting, ties within a
/// front broken by crowding distance (larger first).
///
/// Rule. When a trial's iterations first reach a rung's milestone (the highest reached, as in
/// ASHA), with m > 0 points recorded at that rung before it: rank the m + 1 points (pareto.h's
/// selection order) with the trial's own point winning every full tie (same front, same
/// crowding), and count the recorded points ranked ahead of it. The trial stops iff that count
/// is at least m - i, with ASHA's cutoff index i (asha_cutoff_index): for stop_rule = "top_k",
/// it goes on iff it is among the best max(1, floor((m + 1) / rf)) of the m + 1; for
/// "quantile", iff it would not fall below ASHA's (1 - 1/rf) "lower" quantile of the m. The
/// first trial at a rung always goes on; each rung judges a trial once; its point is then
/// recorded there either way.
///
/// One objective. Non-dominated sorting of one value is sorting by it, and its fronts are
/// equal values, whose crowding distances are all equal (pareto.h), so the count above is the
/// count of recorded values strictly better: with one objective and no constraint, every
/// decision is AshaScheduler's (tested).
///
/// Failed results. A result that reports none of the objectives is not judged (as ASHA with
/// a result without its metric: the trial is judged at the next rung it reaches with one). A
/// result that lacks some objective or a constrained metric, or reports a non-finite value for
/// one, is a failed point (objectives.h, pareto.h): behind every finite point, tied with the
/// other failed ones (so, as ASHA's -inf scores, a failed trial goes on only where the rule
/// keeps the whole rung's last front).
///
/// Why crowding distance, not the paper's ε-net. Within a front, the paper proposes a greedy
/// ε-net (farthest-first coverage, after Salinas et al.) as the tie-break, and uses it by
/// default; it compares it with NSGA-II's crowding distance and reports the two close, the
/// ε-net no worse and somewhat more robust. We use crowding distance: it is deterministic
/// without a generator or a choice of first point (the ε-net starts from a random point or a
/// preferred objective), it is the order NSGA-II's selection uses, so one ranking serves both,
/// and it is pareto.h's, tested against hand-computed fronts. It is a documented departure.
///
/// Options (`[scheduler]` keys): those of ASHA's stopping variant (`max_t`, `grace_period`,
/// `reduction_factor`, `brackets`, `stop_rule`). With `variant = "promotion"`, make_scheduler
/// makes the promotion variant's multi-objective form instead (mo_asha_promotion.h).
/// The context's `metric` and `mode` are not used: the objectives replace them.
///
/// Cost. A decision ranks the rung's points anew (pareto.cc): O(n log n) for n points of 2
/// objectives, at most O(M n^2) from 3 on, against ASHA's O(log n); 5 ms at n = 10^4 points of
/// 2 objectives, 26 ms of 3 (benchmarks/bench_pareto.cc).
/// Memory is M + 1 doubles per (trial, rung reached).

#include <string>
#include <vector>

#include "search/asha_rungs.h"
#include "search/objectives.h"
#include "search/pareto.h"

namespace ranktune::search {

class MoAshaScheduler final : public AshaStoppingBase {
 public:
  /// Throws OptionError for a bad or unknown option, and std::invalid_argument for bad
  /// objectives (Objectives::check).
  MoAshaScheduler(const SchedulerContext& ctx, Objectives objectives, const Options& options);

  /// Reads the objectives and constrained metrics from `trial.last_metrics`.
  Decision on_trial_result(const Trial& trial) override;
  /// Line-based text (see the .cc): the objectives, ASHA's rung bookkeeping and each rung's
  /// points.
  std::string save() const override;
  /// Restores what save() gave, exactly. Throws std::invalid_argument on a bad state or one
  /// saved with other objectives or rungs, and then keeps the current state.
  void restore(const std::string& state) override;

  const Objectives& objectives() const { return objectives_; }

 private:
  Objectives objectives_;
  /// points_[s][k]: the points recorded at rung k of bracket s, in the order recorded.
  std::vector<std::vector<std::vector<ParetoPoint>>> points_;
};

}  // namespace ranktune::search
