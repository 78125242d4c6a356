#pragma once
/// Asynchronous Successive Halving, promotion variant: Li et al., "A System for Massively
/// Parallel Hyperparameter Tuning", MLSys 2020, Algorithm 2 (one bracket).
///
/// Rungs lie at the milestones of asha_milestones(grace_period, reduction_factor, max_t, 0),
/// and max_t ends a trial. A trial *pauses* at each rung it reaches, its score s = sign(mode)
/// * metric (non-finite: -inf) recorded there. Whenever a worker is free, the scheduler
/// looks from the highest rung down for a paused trial among the top floor(n_k /
/// reduction_factor) of the n_k trials recorded at rung k (ties: lower id first) that has
/// not been promoted from k yet, and resumes it from its checkpoint towards rung k + 1; if
/// there is none, a new trial starts. Paused trials that are never promoted end when the
/// experiment runs out of work (the controller terminates them).
///
/// Options (`[scheduler]` keys, with `variant = "promotion"`): `max_t`, `grace_period`,
/// `reduction_factor` as for the stopping variant (see asha_scheduler.h); `brackets` must
/// be 1.
///
/// Needs a trainable that can checkpoint. Cost: a result is O(log n); choosing a trial
/// walks the top 1/rf of each rung, O(n) in the worst case (fine for the thousands of
/// trials a real farm runs; the stopping variant is the one for 10^5 virtual trials).

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "search/fifo_scheduler.h"
#include "search/scheduler.h"

namespace ranktune::search {

class AshaPromotionScheduler final : public Scheduler {
 public:
  AshaPromotionScheduler(SchedulerContext ctx, const Options& options);

  Decision on_trial_result(const Trial& trial) override;
  std::int64_t next_decision(const Trial& trial) const override;
  void on_trial_requeued(const Trial& trial) override { order_.requeued(trial); }
  std::optional<TrialId> choose_trial_to_run(const std::vector<Trial>& trials) override;
  std::string save() const override;
  void restore(const std::string& state) override;

  const std::vector<std::int64_t>& milestones() const { return milestones_; }

 private:
  struct Rung {
    std::set<std::pair<double, TrialId>> scores;  // (-score, id): best first, ties to lower id
    std::set<TrialId> promoted;
  };
  std::size_t next_rung(TrialId id) const;

  SchedulerContext ctx_;
  double reduction_factor_ = 4;
  std::vector<std::int64_t> milestones_;
  std::vector<Rung> rungs_;
  std::map<TrialId, std::size_t> reached_;  // rungs a trial has been recorded at
  FifoOrder order_{/*paused_too=*/false};
};

}  // namespace ranktune::search
