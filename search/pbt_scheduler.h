#pragma once
/// Population Based Training: Jaderberg et al., "Population Based Training of Neural
/// Networks", arXiv:1711.09846, 2017. Behaves as Tune's PopulationBasedTraining with
/// truncation selection, with the choices marked below.
///
/// Every `perturbation_interval` iterations a trial reaches a perturbation point. There
/// its score s = sign(mode) * metric (non-finite: -inf) is recorded, and the trials with a
/// recorded score are ranked (ties by id). With n ranked trials and k = floor(n *
/// quantile_fraction):
///   - a trial in the bottom k *exploits*: it restarts from the latest checkpoint of a
///     trial drawn uniformly from the top k, with that trial's config *explored*;
///   - every other trial continues and stores a checkpoint there, so that others can
///     exploit it. (k = 0: everyone continues.)
/// Explore, per parameter: with probability `resample_probability` a fresh draw from its
/// domain; else numbers are multiplied by 0.8 or 1.2 (equally likely; integers rounded,
/// quantized domains re-quantized) and listed values (choice, grid) move one place left or
/// right. Results are clamped to the parameter's bounds: its domain's, or the custom ones.
/// The lineage (donor, its checkpoint's iteration, the config before and after) goes to the
/// results file's event log as an "exploit" event.
///
/// Options (`[scheduler]` keys):
///   - `perturbation_interval` (integer >= 1, default max(1, max_t / 10), iterations).
///   - `quantile_fraction` (number in (0, 0.5], default 0.25).
///   - `resample_probability` (number in [0, 1], default 0.25).
///   - `bounds.NAME = [low, high]` (or a `[scheduler.bounds]` table): custom explore bounds
///     for numeric parameter NAME, inside which perturbed values are clamped.
///
/// Draws come from index_rng(seed, exploit count): deterministic for a sequence of results.
/// Cost: O(log n) per perturbation point (the scores are kept in an order-statistics tree,
/// so a trial's rank and the k-th best are found without sorting the population); other
/// results are O(1).
///
/// PB2 (search/pb2_scheduler.h) is this scheduler with another explore step: it derives
/// from PbtScheduler, which keeps the population's bookkeeping (scores, ranks, configs, the
/// exploits decided and not yet taken, their draws) and the exploit step in one place, and
/// overrides the hooks below (at_perturbation_point, explore_for, forget).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "search/fifo_scheduler.h"
#include "search/ranked_set.h"
#include "search/scheduler.h"

namespace ranktune::search {

class PbtScheduler : public Scheduler {
 public:
  /// Reads the options above; throws OptionError for a bad or unknown key, and
  /// std::invalid_argument when ctx.space is missing. `owner` names the scheduler in those
  /// messages (pb2 derives from PbtScheduler).
  PbtScheduler(SchedulerContext ctx, const Options& options, const std::string& owner = "pbt");

  void on_trial_add(const Trial& trial) override { configs_[trial.id] = trial.config; }
  Decision on_trial_result(const Trial& trial) override;
  Exploit exploit(const Trial& trial) override;
  bool wants_checkpoint(const Trial& trial) const override;
  void on_trial_complete(const Trial& trial) override { forget(trial.id); }
  void on_trial_error(const Trial& trial) override { forget(trial.id); }
  void on_trial_requeued(const Trial& trial) override { order_.requeued(trial); }
  /// The next perturbation point.
  std::int64_t next_decision(const Trial& trial) const override;
  std::optional<TrialId> choose_trial_to_run(const std::vector<Trial>& trials) override {
    return order_.next(trials);
  }
  std::string save() const override;
  void restore(const std::string& state) override;

  /// `config` explored with the generator of draw `index` (deterministic).
  Config explore(const Config& config, std::uint64_t index) const;
  std::int64_t perturbation_interval() const { return interval_; }
  /// The explore bounds of numeric parameter `p`: `bounds.NAME` when given, else its
  /// domain's [low, high] (for randint: [low, high - 1], both included, as for bounds.NAME).
  std::pair<double, double> explore_bounds(const Param& p) const;

 protected:
  /// Called at each perturbation point of `trial`, after its score (`score`, sign(mode) *
  /// metric, -inf when not finite) is recorded and before the exploit decision.
  virtual void at_perturbation_point(const Trial& trial, double score) {}
  /// The explore step: the config that `trial`, which exploits `donor`, goes on with, from
  /// the donor's config at its checkpoint and draw `index`. PBT's is explore().
  virtual Config explore_for(const Trial& trial, TrialId donor, const Config& donor_config, std::uint64_t index) {
    return explore(donor_config, index);
  }
  /// Trial `id` ended (complete or failed): it leaves the population.
  virtual void forget(TrialId id) { erase_score(id); }
  /// The score recorded at `id`'s latest perturbation point, if it has one.
  std::optional<double> score_of(TrialId id) const;
  /// The recorded scores by trial id.
  const std::map<TrialId, double>& scores() const { return scores_; }

  SchedulerContext ctx_;

 private:
  std::string owner_;
  std::int64_t interval_ = 1;
  double quantile_ = 0.25;
  double resample_ = 0.25;
  std::map<std::string, std::pair<double, double>> bounds_;  // custom explore bounds
  std::map<TrialId, Config> configs_;  // each trial's current config
  std::map<TrialId, double> scores_;   // score at the trial's latest perturbation point
  // The same scores as (score, id), worst first and ties by id, with ranks in O(log n)
  // (a RankedSet), so a perturbation point does not sort the population.
  RankedSet ranked_;
  void set_score(TrialId id, double score);
  void erase_score(TrialId id);
  std::map<TrialId, Exploit> pending_;  // decided in on_trial_result, taken by exploit()
  std::uint64_t draws_ = 0;
  FifoOrder order_;
};

}  // namespace ranktune::search
