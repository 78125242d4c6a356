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

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "search/fifo_scheduler.h"
#include "search/ranked_set.h"
#include "search/scheduler.h"

namespace ranktune::search {

class AshaPromotionScheduler final : public Scheduler {
 public:
  AshaPromotionScheduler(SchedulerContext ctx, const Options& options);

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
  using Entry = std::pair<double, TrialId>;  // (-score, id): best first, ties to lower id
  // Scores in a RankedSet: the rank of an entry is O(log n), so choosing does not walk the
  // already promoted top of a rung.
  struct Rung {
    RankedSet scores;            // every trial recorded at the rung
    std::set<Entry> waiting;     // those paused there, not promoted yet
    std::set<TrialId> promoted;
  };
  struct Reached {
    std::size_t rungs = 0;  // rungs the trial has been recorded at
    double neg_score = 0;   // its entry at the last of them
  };
  std::size_t next_rung(TrialId id) const;
  void leave_waiting(TrialId id);

  SchedulerContext ctx_;
  double reduction_factor_ = 4;
  std::vector<std::int64_t> milestones_;
  std::vector<Rung> rungs_;
  std::map<TrialId, Reached> reached_;
  FifoOrder order_{/*paused_too=*/false};
};

}  // namespace ranktune::search
