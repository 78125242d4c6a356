#pragma once
/// The Scheduler interface (Tune's narrow waist): it decides, result by result, whether a
/// trial goes on, and which pending trial runs next. It never proposes configs.

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "search/objectives.h"
#include "search/options.h"
#include "search/space.h"
#include "search/trial.h"

namespace ranktune::search {

/// What a scheduler says after a result.
enum class Decision {
  Continue,
  Pause,    ///< checkpoint and free the worker; choose_trial_to_run resumes it later
  Stop,
  Exploit,  ///< restart from another trial's checkpoint with a new config: see exploit()
};

/// PBT's exploit-and-explore: the trial continues from `donor`'s latest checkpoint with
/// `config` (the donor's config, perturbed).
struct Exploit {
  TrialId donor = 0;
  Config config;
};

const char* to_string(Decision d);

/// What a scheduler needs to know about the experiment.
struct SchedulerContext {
  std::string metric;
  Mode mode = Mode::Max;
  std::int64_t max_t = 0;  ///< iterations per trial (the controller stops trials at it)
  const Space* space = nullptr;  ///< the search space (PBT explores it); outlives the scheduler
  std::uint64_t seed = 0;        ///< the experiment seed, for schedulers that draw
  /// Several objectives or constraints (`metric = [...]`, `constraints`): multi() is true, and
  /// only a kind with SchedulerTraits::multi_objective takes them (make_scheduler refuses the
  /// others). Empty for a single-objective experiment, whose `metric` and `mode` are the above;
  /// in a multi-objective one those are the first objective's (the report's primary metric).
  Objectives objectives;
};

class Scheduler {
 public:
  virtual ~Scheduler() = default;
  virtual void on_trial_add(const Trial& trial) {}
  /// `trial` already includes this result (iterations, last, best, last_metrics).
  virtual Decision on_trial_result(const Trial& trial) = 0;
  virtual void on_trial_complete(const Trial& trial) {}
  virtual void on_trial_error(const Trial& trial) {}
  /// The trial can run again: it went back to Pending (a retry, an interruption) or was
  /// paused. A scheduler that remembers which trials are runnable must look at it again.
  virtual void on_trial_requeued(const Trial& trial) {}
  /// The first iteration after `trial.iterations` at which this scheduler may answer
  /// anything but Continue. Up to it the worker runs on without waiting for each decision
  /// (a lease), which removes a round trip per step; a Stop may still come earlier, but
  /// the trial then runs a few steps more before it sees it. The default, the next
  /// iteration, keeps every decision synchronous.
  virtual std::int64_t next_decision(const Trial& trial) const { return trial.iterations + 1; }
  /// Called right after on_trial_result returned Exploit for `trial`. The donor must have
  /// a stored checkpoint (Trial::checkpoint_iteration > 0).
  virtual Exploit exploit(const Trial& trial) { throw std::logic_error("this scheduler never exploits"); }
  /// Whether `trial` should store a checkpoint of the state after this result (PBT at a
  /// perturbation point, so others can exploit it). Asked after on_trial_result.
  virtual bool wants_checkpoint(const Trial& trial) const { return false; }
  /// The searcher will create no more trials: brackets or rungs waiting to fill never will.
  virtual void on_searcher_finished() {}
  /// Paused trials this scheduler will never resume (HyperBand's losers at a full rung);
  /// the controller terminates them. Asked after each event; the list is handed over once.
  virtual std::vector<TrialId> take_abandoned() { return {}; }
  /// Why this scheduler cannot go on with `max_t` as the controller's new `[stop] max_t`
  /// (`ranktune ctl budget --max-t`), or "" when it can. Asked before the change; the
  /// scheduler itself keeps the context it was made with. The default takes any: its
  /// decisions do not depend on where trials end.
  virtual std::string refuse_max_t(std::int64_t max_t) const { return ""; }
  /// Picks the next runnable trial (Trial::runnable) to run, or nullopt. Must be idempotent: asking
  /// twice without an intervening event gives the same answer.
  virtual std::optional<TrialId> choose_trial_to_run(const std::vector<Trial>& trials) = 0;
  virtual std::string save() const = 0;
  virtual void restore(const std::string& state) = 0;
};

/// What the report may ask of a scheduler kind instead of naming it: a new scheduler sets
/// these in its line of schedulers(), and the report draws for it what it draws for ASHA
/// and HyperBand.
struct SchedulerTraits {
  /// It stops or pauses trials only at rungs (ASHA, HyperBand), so the iterations at which it
  /// did are its rungs: the learning-curve chart marks them.
  bool rungs = false;
  /// It fills brackets with trials in creation order (HyperBand) and implements
  /// BracketLayout, from which the report rebuilds them.
  bool brackets = false;
  /// It changes a running trial's hyperparameters (PBT's explore): only those of
  /// `[scheduler] mutable`, and never one the trainable calls shape-changing.
  bool mutates = false;
  /// It ranks results by several objectives under constraints (SchedulerContext::objectives).
  bool multi_objective = false;
};

/// The size and rungs of a bracket.
struct BracketShape {
  std::int64_t trials = 0;               ///< how many trials it takes
  std::vector<std::int64_t> milestones;  ///< iterations at its rungs; the last is max_t
};

/// The bracket that a bracket scheduler opens k-th: `s` names its shape (HyperBand's s).
struct OpenedBracket {
  int s = 0;
  BracketShape shape;
};

/// A scheduler with SchedulerTraits::brackets: the brackets it opens, in order, as the options
/// it was made with shape them. Pure; report/brackets.h rebuilds a run's brackets from it.
class BracketLayout {
 public:
  virtual ~BracketLayout() = default;
  /// The k-th bracket it opens (k = 0, 1, ...), the first trials fill first.
  virtual OpenedBracket opened_bracket(int k) const = 0;
};

/// One registered scheduler: its `[scheduler] kind`, one line of help, its factory (which
/// reads and checks its own options), and its traits.
struct SchedulerKind {
  const char* name;
  const char* help;
  std::unique_ptr<Scheduler> (*make)(const SchedulerContext& ctx, const Options& options);
  SchedulerTraits traits;
};

/// Every scheduler, in the order messages list them. Adding a scheduler is one line of this
/// table (scheduler.cc); the tests that run over every scheduler read it.
const std::vector<SchedulerKind>& schedulers();

/// The names of schedulers(), accepted by make_scheduler.
std::vector<std::string> scheduler_names();

/// The names of the schedulers with SchedulerTraits::multi_objective, in schedulers() order.
std::vector<std::string> multi_objective_scheduler_names();

/// The traits of the scheduler named `name`; none (all false) for a name that is no
/// scheduler's (a results file of a later version).
SchedulerTraits scheduler_traits(const std::string& name);

/// Builds a scheduler by name with its `[scheduler]` options. Throws std::invalid_argument
/// listing the valid names, or, for multi-objective `ctx.objectives` and a kind that cannot
/// take them, naming the kinds that can; OptionError for a bad option.
std::unique_ptr<Scheduler> make_scheduler(const std::string& name, const SchedulerContext& ctx,
                                          const Options& options = {});

/// The options make_scheduler(name, ctx, options) runs with: each key its scheduler reads,
/// as given or its default, in the order read (`ranktune check` prints them). Throws as
/// make_scheduler does.
std::vector<ResolvedOption> resolved_scheduler_options(const std::string& name, const SchedulerContext& ctx,
                                                       const Options& options = {});

}  // namespace ranktune::search
