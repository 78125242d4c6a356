// ranktune: turn an MPI allocation into a hyperparameter-search farm. main() only parses
// arguments and maps errors to the documented exit codes.

#include <cstdio>

#include <CLI/CLI.hpp>

#include "apps/commands.h"
#include "apps/slurm_command.h"
#include "experiment/exit_codes.h"
#include "io/store.h"
#include "mpi/errors.h"
#include "mpi/gpu.h"
#include "ranktune/config.h"

using namespace ranktune;

int main(int argc, char** argv) {
  CLI::App app{"ranktune: hyperparameter search and training over MPI, recorded in one HDF5 file"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("ranktune ") + RANKTUNE_VERSION + " (git " +
                                        RANKTUNE_GIT_SHA + ", CUDA " + (RANKTUNE_WITH_CUDA ? "on" : "off") +
                                        ", NCCL " + (RANKTUNE_WITH_NCCL ? "on" : "off") + ")");

  apps::RunOptions run;
  run.argv.assign(argv, argv + argc);
  auto* run_cmd = app.add_subcommand("run", "Run an experiment (self-launches under mpirun when started plainly)");
  run_cmd->add_option("config", run.config, "Experiment TOML file")->required();
  run_cmd->add_option("--np", run.np, "Workers to start when self-launching (default: one per GPU, else per core, min 2)");
  run_cmd->add_option("--results", run.results, "Results file (overrides [experiment] results)");
  run_cmd->add_option("--set", run.sets, "Override a config key: --set experiment.num_samples=8 (value is TOML)");
  run_cmd->add_flag("--resume", run.resume,
                    "Go on with the results file if it exists (a run given an existing file always resumes; "
                    "this flag documents the intent, e.g. in job scripts)");
  run_cmd->add_flag("--force", run.force, "Resume a results file even though its config differs from this one");

  apps::CheckOptions check;
  auto* check_cmd = app.add_subcommand("check", "Validate a config and print it resolved, with defaults");
  check_cmd->add_option("config", check.config, "Experiment TOML file")->required();
  check_cmd->add_option("--set", check.sets, "Override a config key (value is TOML)");

  apps::ReportOptions report;
  auto* report_cmd = app.add_subcommand("report", "Print the leaderboard of a results file");
  report_cmd->add_option("results", report.results, "Results file (.h5)")->required();
  report_cmd->add_option("--top", report.top, "Rows to show (0 = all)")->capture_default_str();
  report_cmd->add_option("--format", report.format, "table, csv, json or markdown")->capture_default_str();
  report_cmd->add_option("--plots", report.plots,
                         "Write SVG charts into this folder: curves.svg (the best --top trials' learning curves) and, "
                         "for PBT, schedule_trial_T.svg (the best trial's hyperparameter schedule)");
  report_cmd->add_option("--html", report.html,
                         "Write a self-contained HTML report (leaderboard, curves, evaluations, control, stack) to "
                         "this file");
  report_cmd->add_option("--schedule", report.schedule_trial,
                         "Print trial T's hyperparameter schedule (PBT exploits), and plot it with --plots")
      ->check(CLI::PositiveNumber);

  apps::SimulateOptions simulate;
  simulate.argv.assign(argv, argv + argc);
  auto* simulate_cmd = app.add_subcommand("simulate", "Run a synthetic experiment on N virtual workers in virtual time");
  simulate_cmd->add_option("config", simulate.config, "Experiment TOML file ([trainable] kind = \"synthetic\")")->required();
  simulate_cmd->add_option("--workers", simulate.workers, "Virtual workers")->required()->check(CLI::PositiveNumber);
  simulate_cmd->add_option("--seed", simulate.seed, "Seed of the step-time jitter and worker speeds (default: [experiment] seed)");
  simulate_cmd->add_option("--results", simulate.results, "Results file (default: [experiment] results with .h5 -> .sim.h5)");
  simulate_cmd->add_option("--jitter", simulate.jitter, "Log-sd of the lognormal step-time factor (mean 1)")->capture_default_str()->check(CLI::NonNegativeNumber);
  simulate_cmd->add_option("--speed-spread", simulate.speed_spread, "Log-sd of the per-worker speed factors")->capture_default_str()->check(CLI::NonNegativeNumber);
  simulate_cmd->add_option("--overhead-s", simulate.overhead_s, "Virtual seconds added to every step")->capture_default_str()->check(CLI::NonNegativeNumber);
  simulate_cmd->add_option("--set", simulate.sets, "Override a config key (value is TOML)");

  apps::CompactOptions compact;
  auto* compact_cmd = app.add_subcommand(
      "compact", "Rewrite a results file without the bytes of dropped checkpoints (in place, atomically, unless -o)");
  compact_cmd->add_option("results", compact.results, "Results file (.h5); refused while a run writes it")->required();
  compact_cmd->add_option("-o,--output", compact.out, "Write the compacted copy here instead (must not exist)");

  apps::ExportCheckpointOptions export_ckpt;
  auto* export_cmd = app.add_subcommand(
      "export-checkpoint", "Write a trial's checkpoint to a folder (a command's directory, or checkpoint.bin + .json)");
  export_cmd->add_option("results", export_ckpt.results, "Results file (.h5)")->required();
  export_cmd->add_option("--trial", export_ckpt.trial, "Trial id")->required()->check(CLI::PositiveNumber);
  export_cmd->add_option("--iteration", export_ckpt.iteration, "Iteration of the checkpoint (default: the newest stored)");
  export_cmd->add_option("out", export_ckpt.out, "Output folder (new or empty)")->required();

  apps::EvalOptions eval;
  for (int i = 0; i < argc; ++i) eval.command_line += (i ? " " : "") + std::string(argv[i]);
  auto* eval_cmd = app.add_subcommand(
      "eval", "Evaluate the leaders' stored checkpoints on the held-out test set and time their inference; "
              "recorded in the file's /evaluations");
  eval_cmd->add_option("results", eval.results, "Results file (.h5)")->required();
  eval_cmd->add_option("--top", eval.top, "Leaders to evaluate: the best trials that have a stored checkpoint")
      ->capture_default_str()->check(CLI::PositiveNumber);
  eval_cmd->add_option("--trial", eval.trials, "Evaluate these trial ids instead (repeatable)")->check(CLI::PositiveNumber);
  eval_cmd->add_option("--checkpoint", eval.checkpoint,
                       "Which stored checkpoint stands for a trial: best (best score) or latest")
      ->capture_default_str();
  eval_cmd->add_option("--device", eval.device, "auto (cuda:0 if usable, else cpu), cpu or cuda:N")->capture_default_str();
  eval_cmd->add_option("--threads", eval.threads, "Compute threads (default: the experiment's threads_per_worker)")
      ->check(CLI::PositiveNumber);
  eval_cmd->add_option("--batch-sizes", eval.batch_sizes, "Latency batch sizes, comma-separated (none: 0)")
      ->delimiter(',')->capture_default_str();
  eval_cmd->add_option("--latency-s", eval.latency_s, "Timing budget per batch size, seconds")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  eval_cmd->add_option("--warmup", eval.warmup, "Untimed batches before timing each batch size")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  eval_cmd->add_option("--config", eval.config,
                       "Resolve relative paths of the stored config (data_dir) as if it lay at this path");
  eval_cmd->add_option("--format", eval.format, "table or json")->capture_default_str();
  eval_cmd->add_flag("--no-record", eval.no_record, "Print only; do not append to the file's /evaluations");

  apps::CtlOptions ctl;
  auto* ctl_cmd = app.add_subcommand(
      "ctl", "Live control of a running experiment: stop a trial, change its hyperparameters, add a trial");
  ctl_cmd->require_subcommand(1);
  ctl_cmd->add_option("--wait", ctl.wait_s, "Seconds to wait for the run's answer (0: do not wait)")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  auto* ctl_stop = ctl_cmd->add_subcommand("stop", "End a trial now (TERMINATED; checkpointed first with at_end)");
  auto* ctl_set = ctl_cmd->add_subcommand(
      "set", "Change a trial's hyperparameters; a running one checkpoints and goes on from there with them");
  auto* ctl_add = ctl_cmd->add_subcommand("add", "Add a trial with the given config (every parameter of the space)");
  for (auto* sub : {ctl_stop, ctl_set, ctl_add}) {
    sub->add_option("results", ctl.results, "Results file of the running experiment (.h5)")->required();
    if (sub != ctl_add) sub->add_option("trial", ctl.trial, "Trial id")->required()->check(CLI::PositiveNumber);
    if (sub != ctl_stop) {
      auto* values = sub->add_option("values", ctl.assignments, "name=value ... (e.g. lr=0.01 activation=tanh)");
      if (sub == ctl_set) values->required();
      sub->add_flag("--force", ctl.force, "Accept values outside the parameters' domains");
    }
  }
  ctl_add->add_option("--count", ctl.count, "Instead of a config: this many more trials from the search algorithm")
      ->check(CLI::PositiveNumber);

  apps::SlurmCommand slurm(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : experiment::kExitUsage;
  }

  const auto dispatch = [&]() -> int {
    try {
      if (*run_cmd) return apps::run_run(run, argc, argv);
      if (*check_cmd) return apps::run_check(check);
      if (*report_cmd) return apps::run_report(report);
      if (*simulate_cmd) return apps::run_simulate(simulate);
      if (*compact_cmd) return apps::run_compact(compact);
      if (*export_cmd) return apps::run_export_checkpoint(export_ckpt);
      if (*eval_cmd) return apps::run_eval(eval);
      if (*ctl_cmd) {
        ctl.op = *ctl_stop ? "stop" : *ctl_set ? "set" : "add";
        return apps::run_ctl(ctl);
      }
      if (slurm.selected()) return slurm.run();
    } catch (const io::ConfigError& e) {
      std::fprintf(stderr, "ranktune: config error: %s\n", e.what());
      return experiment::kExitUsage;
    } catch (const io::StoreError& e) {
      std::fprintf(stderr, "ranktune: %s\n", e.what());
      return experiment::kExitBadFile;
    } catch (const std::invalid_argument& e) {
      std::fprintf(stderr, "ranktune: %s\n", e.what());
      return experiment::kExitUsage;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ranktune: error: %s\n", e.what());
      return experiment::kExitInternal;
    }
    return experiment::kExitUsage;
  };
  return dispatch();
}
