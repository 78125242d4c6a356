#pragma once
/// The Scheduler interface (Tune's narrow waist): it decides, result by result, whether a
/// trial goes on, and which pending trial runs next. It never proposes configs.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "search/options.h"
#include "search/trial.h"

namespace ranktune::search {

/// What a scheduler says after a result.
enum class Decision { Continue, Pause, Stop };

const char* to_string(Decision d);

/// What a scheduler needs to know about the experiment.
struct SchedulerContext {
  std::string metric;
  Mode mode = Mode::Max;
  std::int64_t max_t = 0;  ///< iterations per trial (the controller stops trials at it)
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
  /// Picks the next Pending or Paused trial to run, or nullopt. Must be idempotent: asking
  /// twice without an intervening event gives the same answer.
  virtual std::optional<TrialId> choose_trial_to_run(const std::vector<Trial>& trials) = 0;
  virtual std::string save() const = 0;
  virtual void restore(const std::string& state) = 0;
};

/// Names accepted by make_scheduler.
std::vector<std::string> scheduler_names();

/// Builds a scheduler by name with its `[scheduler]` options. Throws std::invalid_argument
/// listing the valid names, or OptionError for a bad option.
std::unique_ptr<Scheduler> make_scheduler(const std::string& name, const SchedulerContext& ctx,
                                          const Options& options = {});

}  // namespace ranktune::search
