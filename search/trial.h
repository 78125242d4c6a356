#pragma once
/// The trial record the controller keeps, and the lifecycle states a trial moves through.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "search/types.h"

namespace ranktune::search {

/// Lifecycle: Pending -> Running -> {Terminated | Error | Pending (retry) | Paused}.
/// Paused -> Running resumes a trial from its checkpoint, on any free worker.
enum class TrialStatus { Pending, Running, Paused, Terminated, Error };

const char* to_string(TrialStatus s);
/// Parses the names that to_string gives; nullopt for anything else.
std::optional<TrialStatus> parse_trial_status(const std::string& s);

/// Why a trial ended (TERMINATED or ERROR): recorded in /trials.end_reason and shown by every
/// report, so that a trial cut short does not pass for one that ran its course.
enum class TrialEnd {
  None,     ///< "": it has not ended
  MaxT,     ///< "max_t": it ran [stop] max_t iterations
  Stopped,  ///< "stopped": its scheduler ended it before max_t (a rung, a bracket, a pause it
            ///< was never resumed from)
  Done,     ///< "done": its program ended by itself before max_t
  Budget,   ///< "budget": cut when the experiment's time_budget_s ran out
  Target,   ///< "target": it or another trial reached [stop] target, which ends the experiment
  User,     ///< "user": `ranktune ctl stop`
  Error,    ///< "error": it failed, retries included
  Unknown,  ///< "unknown": it ended in a file from before the reason was recorded
};
const char* to_string(TrialEnd e);
/// Parses the names that to_string gives; nullopt for anything else.
std::optional<TrialEnd> parse_trial_end(const std::string& s);
/// What a reason means, in a few words, for people ("cut when the time budget ran out").
const char* describe(TrialEnd e);

/// Everything the controller knows about one trial. Times are seconds since the
/// experiment was created (over all its runs, see docs/guide/results-file.md), as given by the caller's clock.
struct Trial {
  TrialId id = 0;
  Config config;
  TrialStatus status = TrialStatus::Pending;
  int attempt = 0;            ///< 0 for the first run, +1 for each restart that lost work
  int failures = 0;           ///< failed attempts (max_failures bounds them)
  std::int64_t iterations = 0;  ///< iterations reported in the current attempt
  double last = NAN;          ///< last finite value of the experiment metric
  double best = NAN;          ///< best value of the metric over all attempts
  std::int64_t best_iteration = 0;  ///< iteration at which `best` was reported
  Metrics last_metrics;       ///< every metric of the last result
  /// Multi-objective experiments: the trial's non-domination rank among the finished trials
  /// by their last results (0: on the Pareto front), -1 while it has none (running, failed,
  /// no objective reported, or a single-objective experiment). Controller::rank_pareto.
  int pareto_rank = -1;
  std::vector<int> workers;   ///< ranks running it (empty unless Running)
  /// Ranks that ran its latest attempt, leader first: kept after it ends (/trials.workers).
  std::vector<int> ran_on;
  /// The hosts of `ran_on`, in the same order (/trials.hosts; empty when unknown: a file
  /// from before the column, or a simulation).
  std::vector<std::string> hosts;
  double start_time = NAN;    ///< first start
  double end_time = NAN;      ///< when it reached Terminated or Error
  TrialEnd end_reason = TrialEnd::None;  ///< why it did (None until then)
  std::string error;          ///< reason of the last failure, empty if none
  std::string log_tail;       ///< last lines of the trainable's output, when known
  bool reported = false;      ///< the metric appeared in a result of the current attempt
  /// The metric names the current attempt reported while `reported` is false, in the order
  /// first seen (a few): the error of an attempt that never reports the metric names
  /// them, so that a misspelt metric (`acc` for `accuracy`) shows. Not recorded.
  std::vector<std::string> other_metrics;

  // Checkpoints. A trial's iterations form one series across pauses: a resumed trial goes
  // on from the iteration it paused at. An exploit (PBT) restores another trial's
  // checkpoint but keeps the trial's own count, so (trial, attempt, iteration) stays unique.
  std::int64_t checkpoint_iteration = 0;  ///< latest stored checkpoint of this trial, 0: none
  TrialId restore_trial = 0;          ///< the next start restores this trial's checkpoint (0: none)
  std::int64_t restore_checkpoint = 0;  ///< ... the one taken at this iteration of restore_trial
  std::int64_t restore_iterations = 0;  ///< ... and goes on counting from here
  bool saving = false;  ///< paused, its checkpoint not stored yet: it cannot resume before
  /// `ranktune ctl set` values it has not trained with yet: they replace those of `config`
  /// at its next start (from its checkpoint). `config` is always what it trains with.
  Config pending;
  std::string pending_ids;  ///< the requests behind `pending`, as "#id" (space-separated)
  /// How the trial was before its current start replaced its hyperparameters on top of a
  /// checkpoint (an exploit, a `ctl set`). Kept until that attempt's first result: a failure
  /// before it (the checkpoint does not load with the new values) goes back to this, once.
  struct Revert {
    std::string change;  ///< what changed, for the event and the error ("ctl set: channels 8 -> 4")
    Config config;
    TrialId restore_trial = 0;
    std::int64_t restore_checkpoint = 0;
    std::int64_t restore_iterations = 0;
    std::int64_t checkpoint_iteration = 0;
  };
  std::optional<Revert> revert;
  /// The running attempt's lease: the iteration up to which its worker goes on without
  /// waiting for a decision (Command::until of its last Start or Continue). Not recorded.
  std::int64_t lease_until = 0;
  /// Why the trial's next Start happens when start_trial cannot tell by itself (an exploit,
  /// a `ctl set`, a resumed run): Command::cause. Cleared by the Start. Not recorded.
  std::string start_cause;

  /// Paused by `ranktune ctl pause` (status Paused): no scheduler may pick it until `ctl
  /// resume`, which gives it back as it was: Requeue (it was running or pending: it becomes
  /// Pending, from its checkpoint) or Scheduler (its scheduler had paused it at a rung: it
  /// stays Paused, the scheduler's to resume).
  enum class Hold { None, Requeue, Scheduler };
  Hold held = Hold::None;

  bool finished() const { return status == TrialStatus::Terminated || status == TrialStatus::Error; }
  /// Whether a scheduler may pick it to run: Pending, or Paused with its checkpoint stored,
  /// and not held by `ctl pause`.
  bool runnable() const {
    return held == Hold::None && (status == TrialStatus::Pending || (status == TrialStatus::Paused && !saving));
  }
};

}  // namespace ranktune::search
