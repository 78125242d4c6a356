// ranktune: turn an MPI allocation into a hyperparameter-search farm. main() only builds
// the command line (each subcommand registers itself: apps/commands.h) and returns the
// exit code of the subcommand that ran, or of a command line it could not parse.

#include <CLI/CLI.hpp>

#include "apps/commands.h"
#include "experiment/exit_codes.h"
#include "ranktune/config.h"

using namespace ranktune;

int main(int argc, char** argv) {
  CLI::App app{"ranktune: hyperparameter search and training over MPI, recorded in one HDF5 file"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("ranktune ") + RANKTUNE_VERSION + " (git " +
                                        RANKTUNE_GIT_SHA + ", CUDA " + (RANKTUNE_WITH_CUDA ? "on" : "off") +
                                        ", NCCL " + (RANKTUNE_WITH_NCCL ? "on" : "off") + ")");
  apps::setup_run(app, argc, argv);
  apps::setup_check(app);
  apps::setup_report(app);
  apps::setup_leaderboard(app);
  apps::setup_simulate(app, argc, argv);
  apps::setup_compact(app);
  apps::setup_export_checkpoint(app);
  apps::setup_eval(app, argc, argv);
  apps::setup_compare(app);
  apps::setup_ctl(app);
  apps::setup_slurm(app);

  try {
    app.parse(argc, argv);  // runs the chosen subcommand's callback
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : experiment::kExitUsage;
  }
  return apps::exit_code();
}
