#pragma once
/// The virtual-time simulator: drives a Controller with N virtual workers through a
/// discrete-event queue, with the MPI driver's semantics and no MPI, I/O or real clock.
/// It answers "what would this experiment do on N workers" in seconds of real time, and
/// it is how controller rules are tested at scale.
///
/// Semantics (the same as mpi/driver.cc): virtual workers are numbered 1..N like worker
/// ranks and offered to the controller in that order at time 0. A Start begins step 1 on
/// its worker; each step ends at now + cost and is reported with Controller::on_result; a
/// Continue begins the next step; a Stop frees the worker at once (a step still in flight
/// for it is dropped, as the controller drops stale results). Commands are carried out in
/// the order given, so the Start the controller queues behind a Stop lands on the freed
/// worker. Events at equal times run in the order they were scheduled, so a run is a pure
/// function of its inputs and seed.

#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "controller/controller.h"

namespace ranktune::controller {

/// What a simulated trial carries from step to step, and what its checkpoints hold.
struct ModelState {
  std::int64_t t = 0;          ///< steps taken by this state (the simulator counts them)
  std::vector<double> values;  ///< whatever the model accumulates (empty for synthetic functions)
  /// Identifies the current start of the trial; a new start (resume, retry, exploit) gets a
  /// new one. Not checkpointed: a model may key values derived from the config by it.
  std::uint64_t run = 0;
};

/// The metrics of step `state.t` (1-based) of attempt `attempt` of trial `trial` with
/// `config`; it may update `state.values`. Must be deterministic for the simulation to be.
using StepModel = std::function<Metrics(const Config& config, TrialId trial, int attempt, ModelState& state)>;

struct SimulatorOptions {
  int workers = 1;                ///< virtual workers, >= 1
  double seconds_per_step = 1.0;  ///< virtual cost of one step on a speed-1 worker, >= 0
  /// Multiplicative step-cost noise: each step's cost is scaled by exp(jitter * z -
  /// jitter^2 / 2), z ~ N(0, 1) (a lognormal with mean 1 and log-sd `jitter`). 0: none.
  double jitter = 0;
  /// Per-worker speed factors (index = worker - 1, each > 0); a step on worker w costs
  /// seconds_per_step * jitter / speeds[w-1]. Empty: drawn from `speed_spread`.
  std::vector<double> speeds;
  /// When `speeds` is empty, worker speeds are exp(speed_spread * z), z ~ N(0, 1) (median 1).
  /// 0: every worker has speed 1.
  double speed_spread = 0;
  double overhead_s = 0;  ///< fixed virtual seconds added to every step (messages, bookkeeping)
  std::uint64_t seed = 0;  ///< seeds the jitter and the drawn speeds (separate streams)
  /// time_to_target is the first time a result reached this. Default: the controller's
  /// target (which also ends the experiment); set it to measure without stopping.
  std::optional<double> target;
  /// best_at_budget is the best result at or before this virtual time. 0: the
  /// controller's time_budget_s (no figure when that is 0 too).
  double budget_s = 0;
  /// Called after every `progress_every` results delivered, with the virtual time (the
  /// caller flushes its observer here). May be empty.
  std::function<void(double now)> on_progress;
  std::int64_t progress_every = 65536;
};

/// What a simulation came to. Times are virtual seconds from the start.
struct SimulationSummary {
  double end_time = 0;        ///< when the experiment ended (last step, target or budget)
  std::int64_t results = 0;   ///< results delivered to the controller
  std::int64_t dropped = 0;   ///< steps in flight when their trial was stopped (never reported)
  std::int64_t checkpoints = 0;  ///< checkpoints taken while running (pauses not counted)
  double best = NAN;          ///< best finite value of the metric reported, NaN if none
  TrialId best_trial = 0;     ///< the trial that reported `best`, 0 if none
  std::optional<double> time_to_target;  ///< first time a result reached the target
  double best_at_budget = NAN;  ///< best value reported at or before the budget; NaN if none
  EndReason end_reason = EndReason::None;  ///< None: stalled (the searcher said NotNow with nothing running)
  std::vector<double> speeds;  ///< the speed factor of each worker, index = worker - 1
};

/// Runs `controller` (fresh: no worker offered yet) to its end on virtual workers.
/// Throws std::invalid_argument for bad options; exceptions from `model` propagate.
SimulationSummary simulate(Controller& controller, const StepModel& model, const SimulatorOptions& options);

}  // namespace ranktune::controller
