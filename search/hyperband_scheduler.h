#pragma once
/// HyperBand, synchronous: Li, Jamieson, DeSalvo, Rostamizadeh and Talwalkar, "Hyperband:
/// A Novel Bandit-Based Approach to Hyperparameter Optimization", JMLR 18(185), 2018.
/// Behaves as Tune's HyperBandScheduler: trials pause at rung boundaries and the best of a
/// full rung resume from their checkpoints, on whichever worker is free.
///
/// Brackets. With R = `max_t` and eta = `reduction_factor`, s_max = floor(log_eta(R)) (exact
/// for integer powers) and B = (s_max + 1) R. Bracket s (s = s_max, s_max - 1, ..., 0, then
/// again from s_max) holds n_s = ceil(B / R * eta^s / (s + 1)) trials, which start with
/// r_s = R eta^-s iterations. At its rung i (0 <= i <= s) the bracket's survivors have run
/// round(r_s eta^i) iterations (at least 1; rung s is R). Example, R = 81, eta = 3: the
/// brackets (n, r) are (81, 1), (34, 3), (15, 9), (8, 27), (5, 81).
///
/// Trials fill brackets in the order they are added: a bracket takes n_s trials, then the
/// next bracket opens. A trial pauses when it reaches its bracket's current rung. When
/// every live trial of the bracket has reached the rung (or failed), and the bracket is
/// full (or no more trials will come), the best floor(m / eta) of the m trials at the rung
/// (at least 1; scores sign(mode) * metric of the result at the rung, a non-finite one the
/// worst, ties to the lower id) are promoted to the next rung and resume; the others are
/// abandoned (the controller terminates them). At rung s the controller stops the trials at
/// max_t. A result at or past the rung that lacks the metric judges nothing: the trial runs on
/// and is judged at this rung by its next result with the metric (as ASHA).
///
/// Options (`[scheduler]` keys):
///   - `max_t` (integer >= 1, default: `[stop] max_t`, iterations): R.
///   - `reduction_factor` (number > 1, default 3): eta.
///
/// Pausing needs a trainable that can checkpoint (synthetic, mlp, or a command that uses
/// RANKTUNE_CHECKPOINT_DIR). Choosing: promoted paused trials first, then new trials in
/// creation order.
///
/// What "best" means at a full rung is a RungRanking: the one metric above by default, or
/// several objectives under constraints (mo_hyperband_ranking.h), over the same brackets.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "search/fifo_scheduler.h"
#include "search/saved_state.h"
#include "search/scheduler.h"

namespace ranktune::search {

/// How HyperBand orders the trials of a full rung, and what it keeps of each trial that has
/// reached its bracket's current rung (its entry: a score, a Pareto point).
class RungRanking {
 public:
  virtual ~RungRanking() = default;
  /// The same ranking without entries (restore reads into one, and keeps it only if all reads).
  virtual std::unique_ptr<RungRanking> fresh() const = 0;
  /// Records `trial`'s latest result as its entry at the rung it has reached. false when the
  /// result judges nothing (it reports no metric ranked here): then the trial has not reached
  /// the rung yet, and its next result that does is its entry.
  virtual bool record(const Trial& trial) = 0;
  /// `ids` (ascending, each recorded), best first; full ties to the lower id.
  virtual std::vector<TrialId> best_first(const std::vector<TrialId>& ids) const = 0;
  /// The trial left the rung (promoted, abandoned, ended): its entry goes.
  virtual void forget(TrialId id) = 0;

  /// The saved state's header, and what comes before the brackets.
  virtual StateHeader state_header() const = 0;
  virtual void write_head(StateWriter& w) const {}
  /// Reads what write_head wrote; throws std::invalid_argument when it does not fit.
  virtual void read_head(StateReader& r) const {}
  /// The entry of live trial `id`, or that it has none (it has not reached the rung).
  virtual void write_entry(StateWriter& w, TrialId id) const = 0;
  /// Reads what write_entry wrote into this ranking; true when the trial had an entry.
  virtual bool read_entry(StateReader& r, TrialId id) = 0;
};

class HyperBandScheduler final : public Scheduler, public BracketLayout {
 public:
  /// Reads the options above; throws OptionError for a bad or unknown key. Ranks by
  /// ctx.metric in the direction of ctx.mode.
  HyperBandScheduler(SchedulerContext ctx, const Options& options);
  /// The same brackets, ranked by `ranking`.
  HyperBandScheduler(SchedulerContext ctx, const Options& options, std::unique_ptr<RungRanking> ranking);

  /// The size (n_s) and rungs (0..s) of bracket s (0 <= s <= s_max()).
  BracketShape shape(int s) const;
  int s_max() const { return s_max_; }
  /// Bracket k is bracket s = s_max - k mod (s_max + 1): s_max, s_max - 1, ..., 0, then again.
  OpenedBracket opened_bracket(int k) const override;

  void on_trial_add(const Trial& trial) override;
  Decision on_trial_result(const Trial& trial) override;
  void on_trial_complete(const Trial& trial) override { drop(trial); }
  void on_trial_error(const Trial& trial) override { drop(trial); }
  void on_trial_requeued(const Trial& trial) override { order_.requeued(trial); }
  void on_searcher_finished() override;
  /// The trial's bracket's current rung: no decision is needed before it.
  std::int64_t next_decision(const Trial& trial) const override;
  std::vector<TrialId> take_abandoned() override;
  /// Always refused: every bracket's size and rungs derive from R = max_t (above), and its
  /// last rung is R itself, so trials already promoted or abandoned by them would not fit
  /// another R.
  std::string refuse_max_t(std::int64_t max_t) const override;
  std::optional<TrialId> choose_trial_to_run(const std::vector<Trial>& trials) override;
  std::string save() const override;
  void restore(const std::string& state) override;

  /// The bracket of trial `id` (index in creation order), or -1.
  int bracket_of(TrialId id) const;

 private:
  struct Bracket {
    int s = 0;
    BracketShape shape;
    std::size_t rung = 0;  ///< current rung
    std::vector<TrialId> members;
    /// Trials still in the race -> whether they reached the current rung (their entry there
    /// is the ranking's).
    std::map<TrialId, bool> live;
    bool closed = false;  ///< full, or no more trials will come
  };
  /// Promotes and abandons when the bracket's current rung is complete.
  void settle(Bracket& b);
  void drop(const Trial& trial);

  SchedulerContext ctx_;
  std::unique_ptr<RungRanking> ranking_;
  double eta_ = 3;
  int s_max_ = 0;
  std::vector<Bracket> brackets_;
  std::map<TrialId, std::size_t> bracket_index_;
  std::vector<TrialId> promoted_;   // paused trials that resume, in promotion order
  std::vector<TrialId> abandoned_;  // to hand to the controller
  FifoOrder order_;
};

}  // namespace ranktune::search
