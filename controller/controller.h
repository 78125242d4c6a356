#pragma once
/// The transport-free experiment controller. It owns the trial table and the lifecycle
/// rules. It consumes events (a worker is free, a result, a trial ended or failed, a clock
/// tick, a stop request) and returns commands for the transport to carry out. The MPI
/// driver and the virtual-time simulator drive the same code, so every rule is testable
/// without MPI.
///
/// Collaborators that it owns and calls hold what is not the per-result lifecycle:
/// LiveControl (controller/live_control.h) carries out `ranktune ctl` requests and keeps
/// their waiting changes; FailedAttempts (controller/failed_attempts.h) decides what a
/// failure becomes (a retry, an error, a revert) and words it; Resume (controller/resume.h)
/// saves the searcher's and scheduler's state and rebuilds an experiment from its file. The
/// split follows what the code is about and how often it runs: a result that goes on
/// passes through this class only; a request, a failure or a resume is rarer and has rules
/// of its own.

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "controller/control.h"
#include "controller/failed_attempts.h"
#include "controller/live_control.h"
#include "controller/resume.h"
#include "controller/step_budget.h"
#include "search/event_kind.h"
#include "search/scheduler.h"
#include "search/searcher.h"
#include "search/trial.h"

namespace ranktune::controller {

/// What to do when the metric is NaN or infinite.
enum class NonFinitePolicy {
  Error,  ///< the attempt fails (and may be retried); the default
  Worst,  ///< the value is recorded but never counts as best, and the trial goes on
};

struct ControllerOptions {
  std::string metric;
  Mode mode = Mode::Max;
  /// Several objectives or constraints (Objectives::multi()): rank_pareto() ranks the
  /// finished trials by them. Empty for one objective.
  search::Objectives objectives;
  std::int64_t max_t = 1;          ///< iterations per trial; the trial is stopped at it
  double time_budget_s = 0;        ///< 0: no budget. Past it, running trials are stopped.
  /// 0: no budget. The experiment ends once its trials have run this many iterations in all
  /// (results recorded, every attempt counted). Exact with any number of workers: a worker
  /// only runs the iterations its lease grants, and leases never grant more than are left.
  std::int64_t max_total_steps = 0;
  std::optional<double> target;    ///< stop the experiment once any trial reaches it
  int max_failures = 0;            ///< retries allowed per trial after failed attempts
  NonFinitePolicy non_finite = NonFinitePolicy::Error;
  /// The most iterations a worker may run ahead of the decisions (flow control: at most
  /// this many results per worker are in flight).
  std::int64_t max_lease = 64;
  /// Answer every result with a Continue (true), or only the results a worker waits for an
  /// answer to: the last of its lease, or one that needs a checkpoint (false). Inside its
  /// lease a worker does not wait, so the driver sets false and sends every Continue it
  /// gets; the simulator, which steps a trial on each Continue, keeps true.
  bool continue_every_result = true;
  /// Store a checkpoint every this many iterations of a trial (0: only when a scheduler
  /// asks, and on pause).
  std::int64_t checkpoint_every = 0;
  /// Store a checkpoint of every trial that ends by a Stop (max_t, an early stop): the
  /// worker saves, then stops. The experiment finishes once they are stored.
  bool checkpoint_at_end = false;
  /// Graceful stop (request_stop) pauses running trials, so they checkpoint, instead of
  /// stopping them. Needs a trainable that can checkpoint.
  bool checkpoint_on_stop = false;
  /// Workers per trial: a gang of this many trains each trial data-parallel (see
  /// gang_placement.h for which workers it gets).
  int ranks_per_trial = 1;
  /// The node of each worker, indexed by worker id, for gang placement; empty: one node.
  std::vector<int> worker_nodes;
  /// The host of each worker rank (index 0: the driver's slot), recorded with each trial's
  /// ranks; empty when unknown (a simulation).
  std::vector<std::string> worker_hosts;
};

/// An instruction for the transport.
struct Instruction {
  enum class Kind {
    Start,     ///< start `trial` (`config`, `attempt`) on `worker`
    Continue,  ///< the trial on `worker` runs its next iteration
    Stop,      ///< the trial on `worker` stops now; the worker is free afterwards
    Pause,     ///< the trial on `worker` saves a checkpoint, then stops; the worker is free
  };
  Kind kind;
  TrialId trial = 0;
  int worker = -1;
  int attempt = 0;
  Config config;
  /// Start and Continue: the worker may run iterations up to `until` (inclusive) without
  /// waiting for a decision; it waits after reporting iteration `until`.
  std::int64_t until = 0;
  /// Start: the trial has run `iterations` already; the first result is iteration + 1.
  std::int64_t iterations = 0;
  /// Start: restore the checkpoint that trial `restore_trial` stored at its iteration
  /// `restore_checkpoint` before the first step (0: a fresh start).
  TrialId restore_trial = 0;
  std::int64_t restore_checkpoint = 0;
  /// Continue: store a checkpoint of the state after the last reported iteration first.
  bool save = false;
  /// Stop: the attempt failed on the result it answers (a non-finite metric): the worker
  /// sends the output's tail back (on_log_tail), which the failure's record lacks.
  bool failed = false;
  /// Start: the trial's workers, leader first (a Start goes to each). The leader reports
  /// the results and gets the Continues; a Stop or Pause goes to every member.
  std::vector<int> gang;
  /// Start: why this run of the attempt starts, for the trial's log: "start" (a fresh
  /// attempt), "retry", "resume", "exploit of trial D at iteration N", "ctl set: ...",
  /// "ranktune run --resume". Any cause but "start" appends to the attempt's log.
  std::string cause;
};

/// Receives every change worth recording. The driver writes them to the results file.
class ControllerObserver {
 public:
  virtual ~ControllerObserver() = default;
  virtual void on_trial_changed(const Trial& trial) {}
  /// `iteration` is the trial's own count: 1 for the first result of a fresh attempt, the
  /// checkpoint's iteration + 1 for one restored from a checkpoint (an exploit keeps the
  /// trial's count), so (trial, attempt, iteration) is unique.
  virtual void on_result(const Trial& trial, std::int64_t iteration, double time,
                         const Metrics& metrics) {}
  /// PBT's exploit: `trial` (its config already replaced) restarts from `donor`'s
  /// checkpoint of iteration `donor_iteration`; `before` is its config until now.
  virtual void on_exploit(double time, const Trial& trial, TrialId donor,
                          std::int64_t donor_iteration, const Config& before) {}
  /// A lifecycle event (search/event_kind.h: start, error, retry, ...).
  virtual void on_event(double time, TrialId trial, int worker, EventKind kind, const std::string& message) {}
};

/// Why the experiment ended.
enum class EndReason { None, Completed, TargetReached, TimeBudget, StepBudget, Interrupted };
const char* to_string(EndReason r);

class Controller {
 public:
  Controller(ControllerOptions options, std::unique_ptr<Searcher> searcher,
             std::unique_ptr<Scheduler> scheduler, ControllerObserver* observer = nullptr);

  /// Worker `worker` is idle. Returns a Start if there is work for it.
  std::vector<Instruction> on_worker_free(int worker, double now);
  /// Every worker in `workers` is idle (the start of a run): they join the idle list
  /// together before any trial starts, so the first gangs are placed knowing every worker's
  /// node. Freed one at a time, the first two workers would form a gang even when ranks are
  /// spread round-robin over the nodes (mpirun --map-by node, srun --distribution=cyclic).
  std::vector<Instruction> on_workers_free(const std::vector<int>& workers, double now);
  /// Attempt `attempt` of `trial` reported a result. Returns Continue or Stop for it, and
  /// when a Stop frees the worker, possibly a Start for its next trial. A worker is free
  /// as soon as a Stop is sent to it: it carries out its messages in order.
  ///
  /// Messages about an attempt that is no longer running (a result that crossed a Stop on
  /// the wire) are stale: these three methods ignore them and return nothing.
  std::vector<Instruction> on_result(TrialId trial, int attempt, const Metrics& metrics, double now);
  /// The same, appending the commands to `out`: the driver's hot path reuses one buffer
  /// instead of allocating a vector per result.
  void on_result(TrialId trial, int attempt, const Metrics& metrics, double now, std::vector<Instruction>& out);
  /// The trainable ended by itself (a command that exited 0). Its worker is free.
  /// `log_tail`: the last lines of its output, kept when that end is a failure (it never
  /// reported the metric).
  std::vector<Instruction> on_trial_done(TrialId trial, int attempt, double now, const std::string& log_tail = {});
  /// The output's tail of an attempt that on_result failed (Instruction::failed) arrived: it
  /// goes into the trial's log_tail unless a later failure has its own.
  void on_log_tail(TrialId trial, int attempt, const std::string& log_tail);
  /// The attempt failed. It is retried while attempts remain. Its worker is free.
  std::vector<Instruction> on_trial_failed(TrialId trial, int attempt, const std::string& reason,
                                       const std::string& log_tail, double now);
  /// A checkpoint that attempt `attempt` of `trial` took after iteration `iteration` is
  /// stored. A trial paused for it can now resume; a retry restarts from it.
  std::vector<Instruction> on_checkpoint(TrialId trial, int attempt, std::int64_t iteration, double now);
  /// The stored checkpoint that `trial` took at `iteration` is gone (it failed its checksum):
  /// every trial that would restore it restores the same trial's `fallback` iteration
  /// instead (0: starts over), and it is no longer `trial`'s newest checkpoint.
  void on_checkpoint_lost(TrialId trial, std::int64_t iteration, std::int64_t fallback);
  /// A live control request (`ranktune ctl`) whose config passed check_control_config.
  /// Stop ends a pending, paused or running trial (TERMINATED). Set changes a trial's
  /// hyperparameters: one that never ran starts with them; any other keeps them in
  /// Trial::pending (outcome `pending`) until its next start, from its checkpoint, where a
  /// "control" event records that they took effect (a "warning" if it ends first). A
  /// running one is paused for that (it checkpoints), as for a PBT exploit of itself, which
  /// needs a trainable that can checkpoint (ControllerOptions::checkpoint_on_stop). Add appends a trial with the request's config, which the searcher
  /// did not suggest (searchers ignore trials that are not theirs); or, with a count, asks
  /// the searcher for that many trials more (Searcher::extend; kept in save_state, so a
  /// resume keeps them), refused once the searcher has finished. Refused, with why: an
  /// unknown or ended trial, and any change once the experiment is ending. Pause holds a
  /// trial (Trial::held) until Resume: a running one checkpoints (needs checkpoint_on_stop)
  /// and its workers go to other work; no scheduler picks a held trial, and a run whose only
  /// trials left are held waits for them. Budget changes time_budget_s, max_t (unless the
  /// scheduler refuses it, Scheduler::refuse_max_t) and the searcher's num_samples, checked
  /// whole first; Pause's holds and Budget's changes are kept in save_state. StopExperiment
  /// is request_stop. The commands it
  /// needs are appended to `out`; the caller records the outcome (the driver as a
  /// "control" event that answers the request).
  ControlOutcome on_control(const ControlRequest& request, double now, std::vector<Instruction>& out);
  /// Clock tick: enforces the time budget.
  std::vector<Instruction> on_tick(double now);
  /// Graceful stop (signal): running trials are stopped (paused, with checkpoint_on_stop),
  /// nothing new starts. The experiment is finished once every checkpoint is stored.
  std::vector<Instruction> request_stop(double now);

  /// Rebuilds the experiment from its results file (resume). `trials` are as recorded (ids
  /// 1..n in order); `latest_checkpoint` holds each trial's newest stored checkpoint;
  /// `state` is what save_state() gave at the last flush ("" when none was stored: the
  /// searcher and scheduler are walked over the trials). Trials the state did not know yet
  /// (rows committed after it, as when the disk filled while it was written) are walked the
  /// same way, and those it knew running that have finished since are reported complete to
  /// the searcher. Finished trials stay finished. A paused trial stays
  /// paused; an unfinished one goes back to Pending and restarts from its newest checkpoint
  /// (from scratch without one), with a new attempt when work past that checkpoint was lost,
  /// which does not count as a failure. Logs a "resume" event saying `cause`. Call before
  /// any worker is offered. Throws std::invalid_argument for a state that does not parse.
  void resume(std::vector<Trial> trials, const std::map<TrialId, std::int64_t>& latest_checkpoint,
              const std::string& state, const std::string& cause, double now);
  /// The searcher's and scheduler's state, for resume.
  std::string save_state() const;
  /// Iterations the trials ran before (a resume: the results the file holds), counted
  /// against max_total_steps. Call before any worker is offered.
  void count_steps_done(std::int64_t steps) { budget_.set_done(steps); }
  /// Iterations recorded so far (results of every attempt), this run and those before.
  std::int64_t steps_done() const { return budget_.done(); }

  /// True when no trial runs and none will start.
  bool finished() const;
  EndReason end_reason() const { return end_reason_; }
  const std::vector<Trial>& trials() const { return trials_; }
  const Trial* find(TrialId id) const;
  /// Best trial so far (Terminated or not), nullptr if none has a finite best.
  const Trial* best() const;
  /// Multi-objective experiments (ControllerOptions::objectives): ranks the finished trials
  /// by their last results (Trial::pareto_rank, Deb's constrained non-dominated sort) and
  /// reports each trial whose rank changed to the observer. O(M n^2) for n finished trials,
  /// so the driver calls it before each flush rather than at each end; it returns at once
  /// when no trial ended since the last call, and for one objective.
  void rank_pareto();
  /// Trial counts indexed by TrialStatus.
  std::array<std::int64_t, 5> counts() const;
  /// Total trials the searcher will create, or -1 when unknown.
  std::int64_t expected_trials() const {
    std::int64_t total = searcher_->total();
    if (const std::optional<std::int64_t> cap = live_.sample_cap(); cap && (total < 0 || *cap < total)) total = *cap;
    return total < 0 ? total : total + live_.added();
  }
  /// Trials that control requests added so far (with a config, or asked of the searcher):
  /// what controller::check_added_trials bounds.
  std::int64_t added_by_control() const { return live_.added() + live_.extended(); }
  const ControllerOptions& options() const { return options_; }

 private:
  // The collaborators carry out their decisions with the lifecycle steps below (stop_trial,
  // pause_trial, release, finish, dispatch, ...), not with copies of them.
  friend class LiveControl;
  friend class FailedAttempts;

  Trial* running(TrialId id, int attempt);
  /// Every status change goes through here, so counts_ stays exact.
  void set_status(Trial& t, TrialStatus s);
  /// The iteration up to which `t` may run without waiting (see Instruction::until).
  std::int64_t lease(const Trial& t) const;
  /// Ends the experiment once max_total_steps iterations are recorded.
  void end_if_steps_spent(double now, std::vector<Instruction>& out);
  /// Gives work to idle workers while there is some; appends the Starts to `out`.
  void dispatch(double now, std::vector<Instruction>& out);
  /// The trial to start next (the scheduler's pick, else a new one from the searcher), or
  /// nullopt when there is none now.
  std::optional<TrialId> next_choice();
  /// Returns the trial's workers to the idle queue.
  void release(Trial& t);
  /// Stops a running trial: a Stop to each of its workers, then `final_status`.
  /// `why`: the reason it ends with (ignored when `final_status` is Pending).
  void stop_trial(Trial& t, TrialStatus final_status, TrialEnd why, double now, std::vector<Instruction>& out);
  /// Ends every running trial with `final_status` and stops accepting work.
  std::vector<Instruction> end_experiment(EndReason why, TrialStatus final_status, double now);
  /// Ends `t` as `s` (Terminated or Error) for the reason `why`.
  void finish(Trial& t, TrialStatus s, TrialEnd why, double now);
  /// Pauses a running trial: a Pause to its worker; it resumes once the checkpoint is stored.
  /// `hold`: its workers stay its own (LiveControl::hold) instead of going back to the idle queue, and
  /// it goes on on them as soon as the checkpoint is stored (a `ctl set`).
  void pause_trial(Trial& t, double now, std::vector<Instruction>& out, bool hold = false);
  /// The workers held for `t` (LiveControl::hold), if any, go back to the idle queue: it will not go on
  /// on them (it ended, its scheduler paused it, its checkpoint failed, the run is ending).
  /// True when there were some.
  bool unhold(const Trial& t);
  /// Restarts a running trial on its worker from the donor's checkpoint with a new config.
  /// False (and nothing done) when the donor has no stored checkpoint.
  bool exploit_trial(Trial& t, Exploit e, double now, std::vector<Instruction>& out);
  /// Terminates the paused trials that the scheduler abandoned, and, once nothing runs and
  /// nothing new can start, every paused trial left (no scheduler will resume it).
  void end_abandoned(double now);
  /// Marks `t` Running on `workers` (leader first) and appends a Start for each of them.
  void start_trial(Trial& t, std::vector<int> workers, double now, std::vector<Instruction>& out);
  /// What start_trial records: `t` is Running on `workers` from `now`, with its events.
  /// Returns why it starts (Instruction::cause).
  std::string begin_run(Trial& t, std::vector<int> workers, double now);
  /// Why `t`'s next start happens (Instruction::cause), without consuming Trial::start_cause.
  std::string cause_of(const Trial& t) const;

  /// A new PENDING trial with the next id, told to the scheduler and the observer.
  Trial& append_trial(Config config);
  void changed(const Trial& t);
  bool pareto_stale_ = true;  ///< a trial ended (or the run resumed) since rank_pareto()
  bool partial_objectives_warned_ = false;
  void warn_partial_objectives(const Trial& t, const Metrics& metrics, double now);
  void event(double now, const Trial* t, EventKind kind, const std::string& msg);
  bool accepting() const { return end_reason_ == EndReason::None; }

  ControllerOptions options_;
  std::unique_ptr<Searcher> searcher_;
  std::unique_ptr<Scheduler> scheduler_;
  ControllerObserver* observer_;
  LiveControl live_;          // `ranktune ctl`: its waiting changes, held workers, added trials
  FailedAttempts failures_;  // retries, errors, reverts
  Resume resume_;            // on the searcher and scheduler above
  std::vector<Trial> trials_;           // index = id - 1
  std::array<std::int64_t, 5> counts_{};  // trials by TrialStatus
  std::deque<int> idle_workers_;         // free workers with nothing to do, oldest first
  std::int64_t saving_ = 0;              // paused trials whose checkpoint is on its way
  StepBudget budget_;  // [stop] max_total_steps: the leases granted from it
  // Paused by the controller, not by the scheduler (a graceful stop, or `ctl set` changing a
  // running trial), checkpoint on its way: PENDING once it lands, so that it runs again.
  std::set<TrialId> requeue_on_checkpoint_;
  bool searcher_finished_ = false;
  EndReason end_reason_ = EndReason::None;
};

}  // namespace ranktune::controller
