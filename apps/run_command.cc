#include <cstdio>
#include <filesystem>
#include <optional>

#include <boost/mpi/communicator.hpp>
#include <boost/mpi/environment.hpp>

#include "apps/commands.h"
#include "mpi/driver.h"
#include "mpi/launch.h"
#include "mpi/resume.h"
#include "mpi/worker.h"
#include "train/command.h"

namespace ranktune::apps {

void refuse_existing_results(const io::ExperimentConfig& cfg) {
  if (std::filesystem::exists(cfg.results)) {
    cfg.fail("experiment.results",
             "results file " + cfg.results +
                 " already exists. Move it away, or write elsewhere with --results PATH");
  }
}

namespace {

// An existing results file is resumed. Checked here too, before mpirun starts, so that a
// file of another experiment costs no launch; a file that does not read (its writer died)
// is left to rank 0, which mends it.
void check_resumable(const io::ExperimentConfig& cfg, bool force) {
  if (!std::filesystem::exists(cfg.results)) return;
  std::optional<io::ResultsFile> previous;
  try {
    previous = io::ResultsFile::read(cfg.results);
  } catch (const io::StoreError&) {
    return;
  }
  mpi::check_same_experiment(cfg, previous->meta, force);
}

std::string joined(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

}  // namespace

int run_run(const RunOptions& o, int argc, char** argv) {
  if (!mpi::under_mpi_launcher()) {
    // Validate before launching anything, so a bad config costs no mpirun start-up.
    const io::ExperimentConfig cfg = load_experiment(o.config, o.sets, o.results);
    check_resumable(cfg, o.force);
    if (o.np < 0) throw std::invalid_argument("--np must be >= 1");
    // By default, at least one gang's worth of workers.
    const int workers = o.np > 0 ? o.np : std::max(cfg.ranks_per_trial, mpi::default_worker_count());
    if (workers < cfg.ranks_per_trial) {
      cfg.fail("resources.ranks_per_trial", "a gang of " + std::to_string(cfg.ranks_per_trial) +
                                                " ranks needs --np " + std::to_string(cfg.ranks_per_trial) +
                                                " or more (got --np " + std::to_string(workers) + ")");
    }
    std::string error;
    const int code =
        mpi::run_under_mpirun(workers, std::vector<std::string>(o.argv.begin() + 1, o.argv.end()),
                              train::run_folder_key(cfg.results), error);
    if (code >= 0) return code;
    std::fprintf(stderr, "ranktune: %s\n", error.c_str());
    return mpi::kExitInternal;
  }

  mpi::exit_with_parent();  // before MPI_Init, which would wait for a dead mpirun too
  boost::mpi::environment env(argc, argv, /*abort_on_exception=*/false);
  boost::mpi::communicator world;
  if (world.size() < 2) {
    if (world.rank() == 0) {
      std::fprintf(stderr, "ranktune: run needs at least 2 MPI ranks (a driver and a worker); got %d. "
                           "Use mpirun -np 3 or more, or run without mpirun to self-launch.\n", world.size());
    }
    return mpi::kExitUsage;
  }
  if (world.rank() != 0) return mpi::run_worker(world);

  // Rank 0 leaves its exit code for a self-launcher before MPI_Finalize: after a signal,
  // mpirun may end the job while the ranks finalize.
  io::ExperimentConfig cfg;
  try {
    cfg = load_experiment(o.config, o.sets, o.results);
  } catch (...) {
    mpi::report_exit_code(mpi::kExitUsage);
    mpi::abort_setup(world);
    throw;
  }
  try {
    const int code = mpi::run_driver(world, cfg, {joined(o.argv), o.force});
    mpi::report_exit_code(code);
    return code;
  } catch (const io::ConfigError&) {  // a results file of another experiment
    mpi::report_exit_code(mpi::kExitUsage);
    throw;
  } catch (const io::StoreError&) {  // a results file that cannot be resumed
    mpi::report_exit_code(mpi::kExitBadFile);
    throw;
  } catch (...) {
    mpi::report_exit_code(mpi::kExitInternal);
    throw;
  }
}

}  // namespace ranktune::apps
