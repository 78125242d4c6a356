// The virtual-time simulator's event queue and virtual workers (controller/simulator.h: its
// semantics, the same as mpi/driver.cc's).
#include "controller/simulator.h"

#include <map>
#include <numbers>
#include <queue>
#include <random>
#include <stdexcept>
#include <string>

namespace ranktune::controller {
namespace {

// A standard normal from the engine's raw bits (Box-Muller), not std::normal_distribution,
// whose output differs between standard libraries: the mt19937_64 sequence is fixed by the
// standard, so a seed gives the same simulation everywhere.
double normal(std::mt19937_64& rng) {
  const auto unit = [&] { return (static_cast<double>(rng() >> 11) + 0.5) * 0x1p-53; };
  const double u1 = unit(), u2 = unit();
  return std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
}

// The end of one step on one worker. `generation` tells a live step from one whose trial
// was stopped while it ran.
struct StepEnd {
  double time;
  std::uint64_t seq;
  int worker;
  std::uint64_t generation;
};

struct Later {
  bool operator()(const StepEnd& a, const StepEnd& b) const {
    return a.time != b.time ? a.time > b.time : a.seq > b.seq;
  }
};

struct VirtualWorker {
  TrialId trial = 0;  // 0: free
  int attempt = 0;
  std::int64_t iteration = 0;  // the controller's count: results delivered, plus the start's
  ModelState state;             // state.t: steps begun by the trial's current state
  Config config;
  std::uint64_t generation = 0;
  double speed = 1;
  /// A gang member other than the leader: held by `trial`, it runs no steps of its own
  /// (the gang steps at its leader's speed, and only the leader reports).
  bool member = false;
};

class Simulation {
 public:
  Simulation(Controller& controller, const StepModel& model, const SimulatorOptions& o)
      : c_(controller), model_(model), o_(o), workers_(static_cast<std::size_t>(o.workers)),
        jitter_rng_(o.seed ^ 0x6a09e667f3bcc908ULL) {
    const ControllerOptions& co = c_.options();
    target_ = o.target ? o.target : co.target;
    budget_ = o.budget_s > 0 ? o.budget_s : co.time_budget_s;
    std::mt19937_64 speed_rng(o.seed ^ 0xbb67ae8584caa73bULL);
    for (std::size_t i = 0; i < workers_.size(); ++i) {
      workers_[i].speed = !o.speeds.empty() ? o.speeds[i]
                          : o.speed_spread > 0 ? std::exp(o.speed_spread * normal(speed_rng))
                                               : 1.0;
    }
  }

  SimulationSummary run() {
    std::vector<int> workers;
    for (int w = 1; w <= o_.workers; ++w) workers.push_back(w);
    carry_out(c_.on_workers_free(workers, 0.0));  // all at once, as the driver does
    const double budget = c_.options().time_budget_s;
    bool budget_ticked = false;
    while (busy_ > 0) {
      const StepEnd e = queue_.top();
      // The controller's on_tick acts only at the budget (or when nothing runs, which ends
      // this loop), so one tick at exactly the budget, after every step that ends at it,
      // is what ticking at every event would do, without its per-tick scan of the trials.
      if (budget > 0 && !budget_ticked && e.time > budget) {
        budget_ticked = true;
        now_ = budget;
        carry_out(c_.on_tick(now_));
        continue;
      }
      queue_.pop();
      VirtualWorker& w = worker(e.worker);
      if (w.generation != e.generation) {
        ++s_.dropped;
        continue;
      }
      now_ = e.time;
      deliver(w);
    }
    // Drops what is still in flight (steps of trials stopped by the target or the budget).
    s_.dropped += static_cast<std::int64_t>(queue_.size());
    carry_out(c_.on_tick(now_));  // marks a completed experiment as such
    s_.end_time = now_;
    s_.end_reason = c_.end_reason();
    for (const auto& w : workers_) s_.speeds.push_back(w.speed);
    return std::move(s_);
  }

 private:
  VirtualWorker& worker(int w) { return workers_[static_cast<std::size_t>(w - 1)]; }

  void deliver(VirtualWorker& w) {
    Metrics m = model_(w.config, w.trial, w.attempt, w.state);
    ++w.iteration;
    ++s_.results;
    observe(w.trial, m);
    // The controller may answer with a Stop for this worker, which clears `w`: read
    // nothing from it after this call.
    carry_out(c_.on_result(w.trial, w.attempt, std::move(m), now_));
    if (o_.on_progress && s_.results % o_.progress_every == 0) o_.on_progress(now_);
  }

  // Tracks the summary's figures from the results themselves: the controller's best() scans
  // every trial, and the target and budget figures need the time of each result anyway.
  void observe(TrialId trial, const Metrics& m) {
    const auto it = m.find(c_.options().metric);
    if (it == m.end() || !std::isfinite(it->second)) return;
    const double v = it->second;
    const Mode mode = c_.options().mode;
    if (better(v, s_.best, mode)) {
      s_.best = v;
      s_.best_trial = trial;
    }
    if (budget_ > 0 && now_ <= budget_ && better(v, s_.best_at_budget, mode)) s_.best_at_budget = v;
    if (target_ && !s_.time_to_target && sign(mode) * v >= sign(mode) * *target_) s_.time_to_target = now_;
  }

  void carry_out(std::vector<Instruction> commands) {
    for (auto& cmd : commands) {
      VirtualWorker& w = worker(cmd.worker);
      switch (cmd.kind) {
        case Instruction::Kind::Start:
          if (cmd.gang.size() > 1 && cmd.worker != cmd.gang.front()) {
            w.trial = cmd.trial;
            w.attempt = cmd.attempt;
            w.member = true;
            break;
          }
          w.trial = cmd.trial;
          w.attempt = cmd.attempt;
          w.iteration = cmd.iterations;
          w.state = cmd.restore_trial != 0 ? checkpoints_.at({cmd.restore_trial, cmd.restore_checkpoint}) : ModelState{};
          w.state.run = ++runs_;
          w.config = std::move(cmd.config);
          ++busy_;
          begin_step(cmd.worker, w);
          break;
        case Instruction::Kind::Continue:
          if (cmd.save) save(w);
          begin_step(cmd.worker, w);
          break;
        case Instruction::Kind::Pause:
        case Instruction::Kind::Stop: {
          if (w.member) {
            w.member = false;
            w.trial = 0;
            break;
          }
          ++w.generation;  // its step in flight, if any, is now stale
          const TrialId trial = w.trial;
          w.trial = 0;
          --busy_;
          if (cmd.kind == Instruction::Kind::Pause) {
            // Checkpoints are instant in virtual time; the worker is already free.
            checkpoints_[{trial, w.iteration}] = w.state;
            carry_out(c_.on_checkpoint(trial, w.attempt, w.iteration, now_));
          }
          break;
        }
      }
    }
  }

  void save(VirtualWorker& w) {
    checkpoints_[{w.trial, w.iteration}] = w.state;
    ++s_.checkpoints;
    carry_out(c_.on_checkpoint(w.trial, w.attempt, w.iteration, now_));
  }

  void begin_step(int id, VirtualWorker& w) {
    ++w.state.t;
    double cost = o_.seconds_per_step;
    if (o_.jitter > 0) cost *= std::exp(o_.jitter * normal(jitter_rng_) - o_.jitter * o_.jitter / 2);
    cost = cost / w.speed + o_.overhead_s;
    queue_.push({now_ + cost, seq_++, id, w.generation});
  }

  Controller& c_;
  const StepModel& model_;
  const SimulatorOptions& o_;
  std::vector<VirtualWorker> workers_;
  std::priority_queue<StepEnd, std::vector<StepEnd>, Later> queue_;
  std::mt19937_64 jitter_rng_;
  std::optional<double> target_;
  double budget_ = 0;
  double now_ = 0;
  std::uint64_t seq_ = 0;
  int busy_ = 0;  // workers running a trial; each has exactly one live step in the queue
  std::uint64_t runs_ = 0;
  std::map<std::pair<TrialId, std::int64_t>, ModelState> checkpoints_;  // (trial, iteration)
  SimulationSummary s_;
};

void check(const SimulatorOptions& o) {
  const auto bad = [](const std::string& what) { throw std::invalid_argument("simulator: " + what); };
  if (o.workers < 1) bad("workers must be >= 1, got " + std::to_string(o.workers));
  if (!(o.seconds_per_step >= 0) || !std::isfinite(o.seconds_per_step)) bad("seconds_per_step must be >= 0");
  if (!(o.jitter >= 0) || !std::isfinite(o.jitter)) bad("jitter must be >= 0");
  if (!(o.speed_spread >= 0) || !std::isfinite(o.speed_spread)) bad("speed_spread must be >= 0");
  if (!(o.overhead_s >= 0) || !std::isfinite(o.overhead_s)) bad("overhead_s must be >= 0");
  if (o.progress_every < 1) bad("progress_every must be >= 1");
  if (!o.speeds.empty()) {
    if (o.speeds.size() != static_cast<std::size_t>(o.workers)) {
      bad("speeds lists " + std::to_string(o.speeds.size()) + " factors for " + std::to_string(o.workers) +
          " workers");
    }
    for (double s : o.speeds) {
      if (!(s > 0) || !std::isfinite(s)) bad("every worker speed must be > 0");
    }
  }
}

}  // namespace

SimulationSummary simulate(Controller& controller, const StepModel& model, const SimulatorOptions& options) {
  check(options);
  if (!model) throw std::invalid_argument("simulator: no step model");
  return Simulation(controller, model, options).run();
}

}  // namespace ranktune::controller
