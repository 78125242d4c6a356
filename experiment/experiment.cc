// Loading and checking an experiment, and building its searcher, scheduler, controller
// options and controller, for `check`, `simulate` and the MPI driver alike
// (experiment/experiment.h).
#include "experiment/experiment.h"
#include "experiment/warm_start.h"

#include <map>

#include <nlohmann/json.hpp>

#include "search/space.h"
#include "train/registry.h"
#include "train/trainable.h"

namespace ranktune::experiment {

namespace {

// A node index per worker rank (distinct host names numbered in rank order), for gang
// placement; index 0 is the driver's slot.
std::vector<int> worker_nodes(const std::vector<io::WorkerInfo>& workers) {
  std::vector<int> nodes(workers.size() + 1, 0);
  std::map<std::string, int> index;
  for (const auto& w : workers) {
    const auto [it, added] = index.emplace(w.host, static_cast<int>(index.size()));
    if (w.rank >= 0 && static_cast<std::size_t>(w.rank) < nodes.size()) nodes[static_cast<std::size_t>(w.rank)] = it->second;
  }
  return nodes;
}

}  // namespace

config::ExperimentConfig load_experiment(const std::string& path, std::vector<std::string> sets,
                                     const std::string& results) {
  // --results is an override the user did not type as one: its errors (a path too long, a
  // file of another experiment) name the flag.
  std::map<std::string, std::string> shown;
  if (!results.empty()) {
    sets.push_back("experiment.results=" + nlohmann::json(results).dump());
    shown[sets.back()] = "--results " + results;
  }
  config::ExperimentConfig cfg = config::load_config(path, sets, shown);
  train::validate(cfg);
  load_warm_start(cfg);
  // Build the algorithms once, so their options are checked before any rank starts.
  make_searcher(cfg);
  make_scheduler(cfg);
  return cfg;
}

void refuse_existing_results(const config::ExperimentConfig& cfg) {
  if (io::results_file_exists(cfg.results)) {  // a link there is refused too
    cfg.fail("experiment.results",
             "results file " + cfg.results +
                 " already exists. Move it away, or write elsewhere with --results PATH");
  }
}

std::unique_ptr<search::Searcher> make_searcher(const config::ExperimentConfig& cfg) {
  try {
    search::SearcherOptions options{cfg.seed, cfg.num_samples, cfg.metric, cfg.mode, cfg.max_t};
    options.points_to_evaluate = cfg.points_to_evaluate;
    options.warm = cfg.warm;
    options.objectives = cfg.objectives;
    return search::make_searcher(cfg.algorithm, cfg.space, options, cfg.search_options);
  } catch (const search::OptionError& e) {
    cfg.fail("search." + e.key(), e.what());
  } catch (const std::invalid_argument& e) {
    // An algorithm that cannot take this experiment's objectives: said at the algorithm.
    cfg.fail("search.algorithm", e.what());
  }
}

std::unique_ptr<search::Scheduler> make_scheduler(const config::ExperimentConfig& cfg) {
  try {
    return search::make_scheduler(cfg.scheduler, config::scheduler_context(cfg), cfg.scheduler_options);
  } catch (const search::OptionError& e) {
    cfg.fail("scheduler." + e.key(), e.what());
  } catch (const std::invalid_argument& e) {
    cfg.fail("scheduler.kind", e.what());
  }
}

io::StoreSchema store_schema(const config::ExperimentConfig& cfg) {
  io::StoreSchema schema = io::StoreSchema::from(cfg.space, cfg.trainable.metrics);
  if (cfg.objectives.multi()) schema.objectives = cfg.objectives.metrics;
  return schema;
}

controller::ControllerOptions controller_options(const config::ExperimentConfig& cfg, Transport transport,
                                             const std::vector<io::WorkerInfo>& workers) {
  controller::ControllerOptions o;
  o.continue_every_result = transport == Transport::Simulator;
  o.metric = cfg.metric;
  o.mode = cfg.mode;
  o.objectives = cfg.objectives;
  o.max_t = cfg.max_t;
  o.time_budget_s = cfg.time_budget_s;
  o.max_total_steps = cfg.max_total_steps;
  o.target = cfg.target;
  o.max_failures = cfg.max_failures;
  o.non_finite = cfg.non_finite == "worst" ? controller::NonFinitePolicy::Worst : controller::NonFinitePolicy::Error;
  // A graceful stop checkpoints the running trials, so a resume goes on where they were;
  // command trainables that do not checkpoint ([trainable] checkpoint = false) are stopped
  // and start over.
  o.checkpoint_on_stop = train::traits(cfg.trainable).can_checkpoint;
  o.checkpoint_every = cfg.checkpoint_every;
  o.checkpoint_at_end = cfg.checkpoint_at_end;
  o.ranks_per_trial = cfg.ranks_per_trial;
  o.worker_nodes = worker_nodes(workers);
  o.worker_hosts.assign(workers.size() + 1, std::string());
  for (const auto& w : workers)
    if (w.rank >= 0 && static_cast<std::size_t>(w.rank) < o.worker_hosts.size()) o.worker_hosts[static_cast<std::size_t>(w.rank)] = w.host;
  return o;
}

controller::Controller make_controller(const config::ExperimentConfig& cfg, controller::ControllerOptions options,
                                   controller::ControllerObserver* observer) {
  return controller::Controller(std::move(options), make_searcher(cfg), make_scheduler(cfg), observer);
}

}  // namespace ranktune::experiment
