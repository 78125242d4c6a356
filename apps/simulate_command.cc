// `ranktune simulate`: the experiment on virtual workers in virtual time (synthetic
// trainables only), recorded like a real run.

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include <CLI/CLI.hpp>

#include "config/stored.h"
#include "apps/commands.h"
#include "experiment/exit_codes.h"
#include "experiment/experiment.h"
#include "experiment/recorder.h"
#include "experiment/stack.h"
#include "io/store.h"
#include "controller/simulator.h"
#include "train/synthetic.h"

namespace ranktune::apps {
namespace {

// "q.h5" -> "q.sim.h5", so a simulation never lands on (or is refused by) the real run's file.
std::string simulated_results_path(const std::string& results) {
  const std::string ext = ".h5";
  if (results.size() > ext.size() && results.ends_with(ext)) {
    return results.substr(0, results.size() - ext.size()) + ".sim.h5";
  }
  return results + ".sim.h5";
}

// Peak resident set size of this process (VmHWM), in MiB; -1 where /proc is not there.
double peak_rss_mib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  }
  return -1;
}

std::string joined(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

}  // namespace

int run_simulate(const SimulateOptions& o) {
  config::ExperimentConfig cfg = experiment::load_experiment(o.config, o.sets, o.results);
  const train::SyntheticOptions* synthetic = train::find_options<train::SyntheticOptions>(cfg.trainable);
  if (synthetic == nullptr) {
    cfg.fail("trainable.kind", "ranktune simulate needs [trainable] kind = \"synthetic\" (got \"" +
                                   cfg.trainable.kind + "\"): only a synthetic step can be computed without running it");
  }
  if (o.results.empty()) cfg.results = simulated_results_path(cfg.results);
  experiment::refuse_existing_results(cfg);
  if (o.workers < 1) throw std::invalid_argument("--workers must be >= 1");
  if (o.workers < cfg.ranks_per_trial) {
    cfg.fail("resources.ranks_per_trial", "a gang of " + std::to_string(cfg.ranks_per_trial) + " ranks needs --workers " +
                                              std::to_string(cfg.ranks_per_trial) + " or more (got " +
                                              std::to_string(o.workers) + ")");
  }

  controller::SimulatorOptions sim;
  sim.workers = o.workers;
  sim.seed = o.seed.value_or(cfg.seed);
  sim.jitter = o.jitter;
  sim.speed_spread = o.speed_spread;
  sim.overhead_s = o.overhead_s;
  sim.seconds_per_step = synthetic->seconds_per_step;
  if (sim.seconds_per_step <= 0) {
    // A step of zero virtual cost would put the whole experiment at time 0.
    sim.seconds_per_step = 1.0;
    std::printf("ranktune: [trainable] seconds_per_step is 0: simulating 1.0 s steps\n");
  }

  std::vector<io::WorkerInfo> workers;
  workers.reserve(static_cast<std::size_t>(o.workers));
  for (int w = 1; w <= o.workers; ++w) workers.push_back({w, "simulated", w - 1, "sim", "virtual worker"});
  io::StoreMeta meta = config::experiment_meta(cfg, joined(o.argv));
  // The stack of the machine that simulated, marked as such, plus what shaped the virtual run.
  meta.stack = experiment::collect_stack(workers, o.workers + 1);
  meta.stack["hosts"] = "simulated (on " + meta.stack["driver_host"] + ")";
  meta.stack["device_mode"] = "simulated";
  meta.stack["gpus"] = "none (simulated)";
  meta.stack["sim_seed"] = std::to_string(sim.seed);
  meta.stack["sim_jitter"] = std::to_string(sim.jitter);
  meta.stack["sim_speed_spread"] = std::to_string(sim.speed_spread);
  meta.stack["sim_overhead_s"] = std::to_string(sim.overhead_s);
  meta.stack["sim_seconds_per_step"] = std::to_string(sim.seconds_per_step);

  // Compressed tables: a flush every 65,536 results fills whole chunks, where deflate pays
  // (io::WriterOptions; a 10^6-trial simulation's file is about 20x smaller).
  io::WriterOptions options;
  options.compress = true;
  io::ResultsWriter writer(cfg.results, meta, experiment::store_schema(cfg), workers,
                           options);
  experiment::Recorder recorder(writer, cfg.trainable.metrics);
  controller::Controller controller = experiment::make_controller(cfg, experiment::controller_options(cfg, experiment::Transport::Simulator), &recorder);

  // The step model is the synthetic trainable's own step, with f(x) evaluated once per
  // start of a trial (an exploit changes the config) rather than once per step.
  const train::SyntheticFunction* function = train::find_synthetic_function(synthetic->function);
  struct Cached {
    std::uint64_t run = 0;
    train::SyntheticPoint point;
  };
  std::vector<Cached> points;
  const controller::StepModel model = [&](const search::Config& config, search::TrialId trial, int attempt,
                                      controller::ModelState& state) {
    const auto i = static_cast<std::size_t>(trial);
    if (i >= points.size()) points.resize(i + 1);
    if (points[i].run != state.run) points[i] = {state.run, train::evaluate_synthetic(*function, config)};
    return train::synthetic_step(points[i].point, synthetic->noise, cfg.seed, trial, attempt, state.t);
  };
  // Flushing by result count, not by lifecycle as the driver does: a flush per trial start
  // would dominate a simulation of 10^5 trials, and nothing reads the file while it runs.
  sim.on_progress = [&](double) {
    controller.rank_pareto();
    recorder.flush(controller.trials());
  };
  sim.progress_every = 1 << 20;

  std::printf("ranktune: simulating '%s' on %d virtual workers (%g s steps, jitter %g, speed spread %g, "
              "overhead %g s, seed %llu); results: %s\n",
              cfg.name.c_str(), o.workers, sim.seconds_per_step, sim.jitter, sim.speed_spread, sim.overhead_s,
              static_cast<unsigned long long>(sim.seed), cfg.results.c_str());
  std::fflush(stdout);
  const auto t0 = std::chrono::steady_clock::now();
  const controller::SimulationSummary s = controller::simulate(controller, model, sim);
  controller.rank_pareto();
  recorder.flush(controller.trials());
  const double real = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  const auto counts = controller.counts();
  const auto n = [&](search::TrialStatus st) { return static_cast<long long>(counts[static_cast<std::size_t>(st)]); };
  std::printf("ranktune: %s after %.6g virtual s: %lld trials (%lld terminated, %lld error), %lld results\n",
              controller::to_string(s.end_reason), s.end_time, static_cast<long long>(controller.trials().size()),
              n(search::TrialStatus::Terminated), n(search::TrialStatus::Error), static_cast<long long>(s.results));
  std::printf("ranktune: simulated %.3g results/s (%.3f s real)\n", real > 0 ? s.results / real : 0.0, real);
  if (s.best_trial != 0) {
    std::printf("ranktune: best %s = %.6g (trial %lld)\n", cfg.metric.c_str(), s.best,
                static_cast<long long>(s.best_trial));
  }
  if (cfg.target) {
    if (s.time_to_target) {
      std::printf("ranktune: target %s = %g reached at %.6g virtual s\n", cfg.metric.c_str(), *cfg.target,
                  *s.time_to_target);
    } else {
      std::printf("ranktune: target %s = %g not reached\n", cfg.metric.c_str(), *cfg.target);
    }
  }
  if (cfg.max_total_steps > 0)
    std::printf("ranktune: %lld of max_total_steps %lld iterations run\n", static_cast<long long>(s.results),
                static_cast<long long>(cfg.max_total_steps));
  if (cfg.time_budget_s > 0) {
    std::printf("ranktune: best %s at the time budget (%g virtual s) = %.6g\n", cfg.metric.c_str(),
                cfg.time_budget_s, s.best_at_budget);
  }
  std::printf("ranktune: peak RSS %.1f MiB\n", peak_rss_mib());
  std::printf("ranktune: results: %s\n", cfg.results.c_str());

  if (s.end_reason == controller::EndReason::None) {
    std::fprintf(stderr, "ranktune: the simulation stalled: the searcher had nothing to start and no trial ran\n");
    return experiment::kExitInternal;
  }
  return n(search::TrialStatus::Terminated) == 0 ? experiment::kExitFailed : experiment::kExitOk;
}

void setup_simulate(CLI::App& app, int argc, char** argv) {
  const auto simulate = std::make_shared<SimulateOptions>();
  simulate->argv.assign(argv, argv + argc);
  auto* simulate_cmd = app.add_subcommand("simulate", "Run a synthetic experiment on N virtual workers in virtual time");
  simulate_cmd->add_option("config", simulate->config, "Experiment TOML file ([trainable] kind = \"synthetic\")")->required();
  simulate_cmd->add_option("--workers", simulate->workers, "Virtual workers")->required()->check(CLI::PositiveNumber);
  simulate_cmd->add_option("--seed", simulate->seed, "Seed of the step-time jitter and worker speeds (default: [experiment] seed)");
  simulate_cmd->add_option("--results", simulate->results, "Results file (default: [experiment] results with .h5 -> .sim.h5)");
  simulate_cmd->add_option("--jitter", simulate->jitter, "Log-sd of the lognormal step-time factor (mean 1)")->capture_default_str()->check(CLI::NonNegativeNumber);
  simulate_cmd->add_option("--speed-spread", simulate->speed_spread, "Log-sd of the per-worker speed factors")->capture_default_str()->check(CLI::NonNegativeNumber);
  simulate_cmd->add_option("--overhead-s", simulate->overhead_s, "Virtual seconds added to every step")->capture_default_str()->check(CLI::NonNegativeNumber);
  simulate_cmd->add_option("--set", simulate->sets, "Override a config key (value is TOML)");
  on_run(simulate_cmd, [simulate] { return run_simulate(*simulate); });
}

}  // namespace ranktune::apps
