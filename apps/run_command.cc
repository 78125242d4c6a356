// `ranktune run`: runs an experiment; started plainly it checks the config and launches
// itself under mpirun, under MPI rank 0 drives (mpi/driver.h) and the others work.

#include <chrono>
#include <cstdio>
#include <exception>
#include <thread>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <boost/mpi/communicator.hpp>
#include <boost/mpi/environment.hpp>

#include "apps/commands.h"
#include "experiment/exit_codes.h"
#include "experiment/experiment.h"
#include "experiment/resume.h"
#include "io/control_file.h"
#include "io/store.h"
#include "mpi/driver.h"
#include "mpi/launch.h"
#include "mpi/worker.h"
#include "report/html.h"
#include "report/run_config.h"
#include "sys/safe_fs.h"
#include "train/command.h"

namespace ranktune::apps {

namespace {

std::string joined(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

// The live page ([report] html) of a run whose rank 0 died: rank 0 left it reloading
// itself, its trials RUNNING. Rewritten from the results file as final, saying the run is no
// longer running, once rank 0 is gone (it ends within a moment of mpirun: it watches its
// parent). False when there is nothing to rewrite: rank 0 closed the file, or still holds it.
bool finish_dead_run_page(const config::ExperimentConfig& cfg) {
  bool died = false;
  for (int look = 0; look < 20 && io::marked_open_for_writing(cfg.results); ++look) {
    if ((died = io::writer_died(cfg.results))) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!died) return false;
  try {
    const io::ResultsFile file = io::ResultsFile::read(cfg.results);
    const report::RunConfig config = report::run_config(file);
    report::HtmlOptions o;
    o.top = 100;  // as the live page has it
    o.config = &config;
    const auto pareto = report::pareto_view(file, config.objectives);
    o.pareto = pareto ? &*pareto : nullptr;
    o.writer_died = true;
    sys::replace_file(cfg.report_html, report::render_html(file, {}, o));
    return true;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ranktune: the live page %s still says the run is going: it could not be rewritten: %s\n",
                 cfg.report_html.c_str(), e.what());
    return false;
  }
}

}  // namespace

// The --set overrides, with --warm-start as the one that sets [search] warm_start.
std::vector<std::string> overrides(const RunOptions& o) {
  std::vector<std::string> sets = o.sets;
  if (!o.warm_start.empty()) sets.push_back("search.warm_start=" + nlohmann::json(o.warm_start).dump());
  return sets;
}

int run_run(const RunOptions& o, int argc, char** argv) {
  if (!mpi::under_mpi_launcher()) {
    // Validate before launching anything, so a bad config costs no mpirun start-up.
    const config::ExperimentConfig cfg = experiment::load_experiment(o.config, overrides(o), o.results);
    // An existing results file is resumed. Checked here too, before mpirun starts, so that a
    // damaged file (exit 5) or a file of another experiment (exit 2) costs no launch. Rank 0
    // checks again before it writes; it alone can mend a file whose writer died before it
    // started SWMR writing, which no reader can open (read_for_resume gives nullopt).
    io::refuse_unsafe_results(cfg.results);  // a link, another user's file: exit 2
    experiment::check_resumable(cfg, o.force);
    io::check_control_file(cfg.results);  // rank 0 checks it again when it makes or opens it
    if (o.np < 0) throw std::invalid_argument("--np must be >= 1");
    // By default, at least one gang's worth of workers.
    const int workers = o.np > 0 ? o.np : std::max(cfg.ranks_per_trial, mpi::default_worker_count());
    if (workers < cfg.ranks_per_trial) {
      cfg.fail("resources.ranks_per_trial", "a gang of " + std::to_string(cfg.ranks_per_trial) +
                                                " ranks needs --np " + std::to_string(cfg.ranks_per_trial) +
                                                " or more (got --np " + std::to_string(workers) + ")");
    }
    std::string error;
    mpi::LaunchEnd end;
    const int code =
        mpi::run_under_mpirun(workers, std::vector<std::string>(o.argv.begin() + 1, o.argv.end()),
                              sys::run_folder_key(cfg.results), error, &end);
    if (code >= 0 && !end.rank0_code) {
      // Killed before rank 0 could end the run (it leaves its code then, even on Ctrl-C).
      const bool page = !cfg.report_html.empty() && finish_dead_run_page(cfg);
      std::fprintf(stderr,
                   "ranktune: the run was killed: %s. %s keeps what rank 0 committed: run the same command again "
                   "to resume it.%s Exit code %d.\n",
                   end.what.c_str(), cfg.results.c_str(),
                   page ? (" The live page " + cfg.report_html + " says so.").c_str() : "", code);
    }
    if (code >= 0) return code;
    std::fprintf(stderr, "ranktune: %s\n", error.c_str());
    return experiment::kExitInternal;
  }

  mpi::exit_with_parent();  // before MPI_Init, which would wait for a dead mpirun too
  boost::mpi::environment env(argc, argv, /*abort_on_exception=*/false);
  boost::mpi::communicator world;
  if (world.size() < 2) {
    if (world.rank() == 0) {
      std::fprintf(stderr, "ranktune: run needs at least 2 MPI ranks (a driver and a worker); got %d. "
                           "Use mpirun -np 3 or more, or run without mpirun to self-launch.\n", world.size());
    }
    return experiment::kExitUsage;
  }
  if (world.rank() != 0) return mpi::run_worker(world);

  // Rank 0 leaves its exit code for a self-launcher before MPI_Finalize: after a signal,
  // mpirun may end the job while the ranks finalize.
  config::ExperimentConfig cfg;
  try {
    cfg = experiment::load_experiment(o.config, overrides(o), o.results);
  } catch (...) {
    mpi::report_exit_code(experiment::kExitUsage);
    mpi::abort_setup(world);
    throw;
  }
  // run_driver throws only before the workers have the Setup (they exit quietly then); any
  // later error it prints itself and ends the job with (mpi::abort_job).
  try {
    const int code = mpi::run_driver(world, cfg, {joined(o.argv), o.force});
    mpi::report_exit_code(code);
    return code;
  } catch (const config::ConfigError&) {  // too few workers for a gang
    mpi::report_exit_code(experiment::kExitUsage);
    throw;
  } catch (const io::UnsafeFileError&) {  // a results file that ranktune will not write
    mpi::report_exit_code(experiment::kExitUsage);
    throw;
  } catch (...) {
    mpi::report_exit_code(experiment::kExitInternal);
    throw;
  }
}

void setup_run(CLI::App& app, int argc, char** argv) {
  const auto run = std::make_shared<RunOptions>();
  run->argv.assign(argv, argv + argc);
  auto* run_cmd = app.add_subcommand("run", "Run an experiment (self-launches under mpirun when started plainly)");
  run_cmd->add_option("config", run->config, "Experiment TOML file")->required();
  run_cmd->add_option("--np", run->np, "Workers to start when self-launching (default: one per GPU, else per core, min 2)");
  run_cmd->add_option("--results", run->results, "Results file (overrides [experiment] results)");
  run_cmd->add_option("--set", run->sets, "Override a config key: --set experiment.num_samples=8 (value is TOML)");
  run_cmd->add_option("--warm-start", run->warm_start,
                      "Earlier results files whose trials the searcher starts from (replaces [search] warm_start)");
  run_cmd->add_flag("--resume", run->resume,
                    "Go on with the results file if it exists (a run given an existing file always resumes; "
                    "this flag documents the intent, e.g. in job scripts)");
  run_cmd->add_flag("--force", run->force, "Resume a results file even though its config differs from this one");
  on_run(run_cmd, [run, argc, argv] { return run_run(*run, argc, argv); });
}

}  // namespace ranktune::apps
