#pragma once
// Shared set-up for the tests that drive a controller::Controller (controller and simulator).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "controller/controller.h"
#include "controller/simulator.h"
#include "train/synthetic.h"

namespace ranktune::search::fixtures {
using namespace ranktune::controller;

/// Records the controller's events as "kind:trial:message" lines.
struct Events : ControllerObserver {
  std::vector<std::string> lines;
  void on_event(double, TrialId t, int, EventKind kind, const std::string& msg) override {
    lines.push_back(std::string(to_string(kind)) + ":" + std::to_string(t) + ":" + msg);
  }
  /// The newest line that starts with `prefix` ("kind:trial:"), or "".
  std::string last(const std::string& prefix) const {
    for (auto it = lines.rbegin(); it != lines.rend(); ++it)
      if (it->rfind(prefix, 0) == 0) return *it;
    return "";
  }
};

/// One parameter, x uniform in [0, 1].
inline Space one_param() {
  Space s;
  Domain d;
  d.kind = DomainKind::Uniform;
  d.low = 0;
  d.high = 1;
  s.params = {{"x", d}};
  return s;
}

/// Minimize "loss" for `max_t` iterations per trial.
inline ControllerOptions opts(std::int64_t max_t) {
  ControllerOptions o;
  o.metric = "loss";
  o.mode = Mode::Min;
  o.max_t = max_t;
  return o;
}

/// A controller running `trials` random-search trials of one_param() under `s`.
inline Controller with(std::unique_ptr<Scheduler> s, std::int64_t trials, std::int64_t max_t) {
  return Controller(opts(max_t), make_searcher("random", one_param(), {1, trials}), std::move(s));
}

/// Carries out `pending` and the instructions that follow from it (each result's loss is
/// the trial's id; Stops are skipped) until the scheduler pauses a trial (HyperBand at the
/// end of a rung), whose checkpoint is then stored. Returns that trial, or 0 when none is
/// paused within 200 instructions. The live-control tests use it to get a paused trial.
inline TrialId run_until_paused(Controller& c, std::vector<Instruction> pending) {
  for (int step = 0; step < 200 && !pending.empty(); ++step) {
    const Instruction cmd = pending.front();
    pending.erase(pending.begin());
    if (cmd.kind == Instruction::Kind::Pause) {
      c.on_checkpoint(cmd.trial, cmd.attempt, c.find(cmd.trial)->iterations, step);
      return cmd.trial;
    }
    if (cmd.kind == Instruction::Kind::Stop) continue;
    auto more = c.on_result(cmd.trial, cmd.attempt, {{"loss", double(cmd.trial)}}, step);
    pending.insert(pending.end(), more.begin(), more.end());
  }
  return 0;
}

/// Hartmann-6's space: x1..x6 uniform in [0, 1].
inline Space hartmann6_space() {
  Space s;
  for (int i = 1; i <= 6; ++i) s.params.push_back({"x" + std::to_string(i), Domain{DomainKind::Uniform, 0, 1, 0, {}}});
  return s;
}

/// The synthetic trainable's step of `function` (train::synthetic_step), for the simulator.
inline StepModel synthetic_model(const std::string& function, double noise, std::uint64_t seed) {
  const auto* f = train::find_synthetic_function(function);
  return [f, noise, seed](const Config& config, TrialId trial, int attempt, ModelState& s) {
    return train::synthetic_step(train::evaluate_synthetic(*f, config), noise, seed, trial, attempt, s.t);
  };
}

/// Simulates `c` with `so` against Hartmann-6 (step noise `noise`, seeded by `seed`) and
/// returns the virtual time at which the noise-free objective of a result first comes
/// within `within` of the optimum (-3.32237; 0.01 is 1%), or +inf if it never does.
inline double time_to_hartmann6(Controller& c, double within, double noise, std::uint64_t seed, SimulatorOptions so) {
  const StepModel inner = synthetic_model("hartmann6", noise, seed);
  double now = 0, reached = INFINITY;
  so.on_progress = [&](double t) { now = t; };
  so.progress_every = 1;
  const StepModel model = [&](const Config& config, TrialId trial, int attempt, ModelState& s) {
    Metrics m = inner(config, trial, attempt, s);
    if (m.at("objective") <= -3.32237 * (1 - within) && !std::isfinite(reached)) reached = now;
    return m;
  };
  simulate(c, model, so);
  return reached;
}

/// A model whose best learning rate falls over time: each step adds exp(-(log10(lr) -
/// opt(t))^2) to the state's score, with opt moving from -1 to -3 over 40 steps. Any fixed
/// lr gains less than a schedule that follows opt (PBT's and PB2's problem).
inline Metrics drifting_optimum(const Config& config, TrialId, int, ModelState& s) {
  if (s.values.empty()) s.values.push_back(0.0);
  const double opt = -1.0 - 2.0 * std::min(1.0, static_cast<double>(s.t) / 40.0);
  const double d = std::log10(std::get<double>(config.at("lr"))) - opt;
  s.values[0] += std::exp(-d * d);
  return {{"score", s.values[0]}};
}

/// The best score of `population` random trials of lr in loguniform [1e-4, 1] under
/// `scheduler` (60 steps; PBT and PB2 perturb every 4) on drifting_optimum, simulated on
/// as many workers.
inline double drifting_best(const std::string& scheduler, std::uint64_t seed, std::int64_t population) {
  Space space;
  space.params.push_back({"lr", {DomainKind::LogUniform, 1e-4, 1.0, 0, {}}});
  ControllerOptions o;
  o.metric = "score";
  o.mode = Mode::Max;
  o.max_t = 60;
  Controller c(o, make_searcher("random", space, {seed, population}),
               make_scheduler(scheduler, {"score", Mode::Max, 60, &space, seed},
                              scheduler == "fifo" ? Options{} : Options{{"perturbation_interval", std::int64_t{4}}}));
  SimulatorOptions so;
  so.workers = static_cast<int>(population);
  return simulate(c, drifting_optimum, so).best;
}

}  // namespace ranktune::search::fixtures
