#pragma once
/// Asynchronous Successive Halving, promotion variant: Li et al., "A System for Massively
/// Parallel Hyperparameter Tuning", MLSys 2020, Algorithm 2 (one bracket).
///
/// Rungs lie at the milestones of asha_milestones(grace_period, reduction_factor, max_t, 0),
/// and max_t ends a trial. A trial *pauses* at each rung it reaches, its score s = sign(mode)
/// * metric of the result there (non-finite: -inf) recorded there. A result without the
/// metric records nothing: the trial runs on, and its next result with the metric is recorded
/// at the highest rung it has reached (as the stopping variant). Whenever a worker is free,
/// the scheduler looks from the highest rung down for a paused trial among the top floor(n_k /
/// reduction_factor) of the n_k trials recorded at rung k (ties: lower id first) that has
/// not been promoted from k yet, and resumes it from its checkpoint towards rung k + 1; if
/// there is none, a new trial starts. Paused trials that are never promoted end when the
/// experiment runs out of work (the controller terminates them).
///
/// Options (`[scheduler]` keys, with `variant = "promotion"`): `max_t`, `grace_period`,
/// `reduction_factor` as for the stopping variant (see asha_scheduler.h); `brackets` must
/// be 1.
///
/// Needs a trainable that can checkpoint. Cost: a result is O(log n); choosing a trial is
/// O(log n) per rung (the best waiting trial's rank decides), plus one step per waiting
/// trial whose checkpoint is still on its way. Trials that were resumed (or ended) are
/// dropped from the waiting set the first time a choice meets them, so the ones already
/// running again are not stepped over at every choice.
///
/// What "top" means at a rung is a PromotionRanking: the one score above by default, or
/// several objectives under constraints (mo_asha_promotion.h), over the same rungs and pauses.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "search/fifo_scheduler.h"
#include "search/saved_state.h"
#include "search/scheduler.h"

namespace ranktune::search {

/// How ASHA's promotion variant ranks the trials recorded at a rung, and its record of them:
/// each one's entry (a score, a Pareto point), and which of them wait there to be promoted.
class PromotionRanking {
 public:
  virtual ~PromotionRanking() = default;
  /// The same ranking with `rungs` empty rungs (restore reads into one, kept only if all reads).
  virtual std::unique_ptr<PromotionRanking> fresh(std::size_t rungs) const = 0;
  /// Records `trial`'s latest result as its entry at rung k, where it then waits. false when
  /// the result judges nothing (it reports no metric ranked here): nothing is recorded.
  virtual bool record(std::size_t k, const Trial& trial) = 0;
  /// The number of entries recorded at rung k.
  virtual std::size_t recorded(std::size_t k) const = 0;
  /// Trial `id` waits at rung k (restore: it paused there and was not promoted). false when it
  /// has no entry there.
  virtual bool wait(std::size_t k, TrialId id) = 0;
  /// Trial `id` no longer waits at rung k (promoted, ended); nothing if it did not.
  virtual void leave(std::size_t k, TrialId id) = 0;
  enum class Visit {
    Take,   ///< the one to promote: stop visiting
    Skip,   ///< not now: go on to the next
    Leave,  ///< it waits no more (as leave()): go on to the next
  };
  /// Calls `visit` on the trials waiting at rung k that rank among the best `top` of its
  /// entries (ties to the lower id), best first, until one is taken.
  virtual void visit_top_waiting(std::size_t k, std::size_t top, const std::function<Visit(TrialId)>& visit) = 0;

  /// The saved state's header, and what comes before the rungs.
  virtual StateHeader state_header() const = 0;
  virtual void write_head(StateWriter& w) const {}
  /// Reads what write_head wrote; throws std::invalid_argument when it does not fit.
  virtual void read_head(StateReader& r) const {}
  /// Rung k's entries; read_rung reads them into this ranking, none of them waiting.
  virtual void write_rung(StateWriter& w, std::size_t k) const = 0;
  virtual void read_rung(StateReader& r, std::size_t k) = 0;
};

class AshaPromotionScheduler final : public Scheduler {
 public:
  /// Reads the options above; throws OptionError for a bad or unknown key. Ranks by
  /// ctx.metric in the direction of ctx.mode.
  AshaPromotionScheduler(SchedulerContext ctx, const Options& options);
  /// The same rungs, ranked by `ranking` (made with no rungs: the scheduler gives it its own).
  AshaPromotionScheduler(SchedulerContext ctx, const Options& options, const PromotionRanking& ranking);

  Decision on_trial_result(const Trial& trial) override;
  std::int64_t next_decision(const Trial& trial) const override;
  void on_trial_requeued(const Trial& trial) override { order_.requeued(trial); }
  void on_trial_complete(const Trial& trial) override { leave_waiting(trial.id); }
  void on_trial_error(const Trial& trial) override { leave_waiting(trial.id); }
  std::optional<TrialId> choose_trial_to_run(const std::vector<Trial>& trials) override;
  std::string save() const override;
  void restore(const std::string& state) override;

  const std::vector<std::int64_t>& milestones() const { return milestones_; }

 private:
  std::size_t next_rung(TrialId id) const;
  void leave_waiting(TrialId id);

  SchedulerContext ctx_;
  double reduction_factor_ = 4;
  std::vector<std::int64_t> milestones_;
  std::unique_ptr<PromotionRanking> ranking_;
  std::vector<std::set<TrialId>> promoted_;  ///< per rung: the trials promoted from it
  std::map<TrialId, std::size_t> reached_;   ///< trial -> the rungs below its next one (its last entry's + 1)
  FifoOrder order_{/*paused_too=*/false};
};

}  // namespace ranktune::search
