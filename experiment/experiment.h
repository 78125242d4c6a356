#pragma once
/// An experiment from its config: loading and checking it, and building what it runs (the
/// searcher, the scheduler and the controller). The one place that builds them, so that
/// `check`, `simulate` and the MPI driver run the same rules.

#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "io/store.h"
#include "controller/controller.h"
#include "search/scheduler.h"
#include "search/searcher.h"

namespace ranktune::experiment {

/// Loads and fully validates an experiment (config layer, then trainable layer, then the
/// searcher's and scheduler's options), with `results` (if not empty) overriding
/// [experiment] results.
config::ExperimentConfig load_experiment(const std::string& path, std::vector<std::string> sets,
                                     const std::string& results = "");

/// Throws ConfigError (at experiment.results) when cfg.results exists: a results file is
/// never overwritten.
void refuse_existing_results(const config::ExperimentConfig& cfg);

/// The config's searcher ([search]). An option it refuses is a ConfigError at search.KEY.
std::unique_ptr<search::Searcher> make_searcher(const config::ExperimentConfig& cfg);
/// The config's scheduler ([scheduler]). An option it refuses is a ConfigError at scheduler.KEY.
std::unique_ptr<search::Scheduler> make_scheduler(const config::ExperimentConfig& cfg);

/// Who carries out the controller's commands. The two dispatch alike; they differ in one
/// thing only: an MPI worker runs its lease without waiting, so the driver answers only the
/// results that end a lease, while the simulator steps a trial on each Continue.
enum class Transport { Mpi, Simulator };

/// The controller's options from an experiment config, the one place `run` and `simulate`
/// take them from. `workers` (the hosts of the worker ranks) lets gang placement keep a
/// gang on one node; without it all count as one node.
controller::ControllerOptions controller_options(const config::ExperimentConfig& cfg, Transport transport,
                                             const std::vector<io::WorkerInfo>& workers = {});

/// The results file's tables for an experiment: its hyperparameters, recorded metrics and,
/// for several objectives or constraints, the objectives (/trials' Pareto columns).
io::StoreSchema store_schema(const config::ExperimentConfig& cfg);

/// The experiment's controller: `options` (controller_options) with the config's searcher
/// and scheduler, reporting to `observer`.
controller::Controller make_controller(const config::ExperimentConfig& cfg, controller::ControllerOptions options,
                                   controller::ControllerObserver* observer);

}  // namespace ranktune::experiment
