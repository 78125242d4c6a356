#include <cstdio>

#include <nlohmann/json.hpp>

#include "apps/commands.h"
#include "search/scheduler.h"
#include "search/searcher.h"
#include "search/space.h"
#include "train/trainable.h"

namespace ranktune::apps {

io::ExperimentConfig load_experiment(const std::string& path, std::vector<std::string> sets,
                                     const std::string& results) {
  if (!results.empty()) sets.push_back("experiment.results=" + nlohmann::json(results).dump());
  io::ExperimentConfig cfg = io::load_config(path, sets);
  train::validate(cfg);
  // Build the algorithms once, so their options are checked before any rank starts.
  try {
    search::make_searcher(cfg.algorithm, cfg.space, {cfg.seed, cfg.num_samples, cfg.metric, cfg.mode}, cfg.search_options);
  } catch (const search::OptionError& e) {
    cfg.fail("search." + e.key(), e.what());
  }
  try {
    search::make_scheduler(cfg.scheduler, {cfg.metric, cfg.mode, cfg.max_t}, cfg.scheduler_options);
  } catch (const search::OptionError& e) {
    cfg.fail("scheduler." + e.key(), e.what());
  }
  return cfg;
}

int run_check(const CheckOptions& o) {
  const io::ExperimentConfig cfg = load_experiment(o.config, o.sets);
  std::fputs(io::render_config(cfg).c_str(), stdout);
  const auto grid = cfg.space.grid_size();
  std::fprintf(stderr, "%s: OK: %lld trials (%zu grid point%s x num_samples %lld), %lld iterations each at most\n",
               cfg.path.c_str(), static_cast<long long>(grid * cfg.num_samples), grid, grid == 1 ? "" : "s",
               static_cast<long long>(cfg.num_samples), static_cast<long long>(cfg.max_t));
  return 0;
}

}  // namespace ranktune::apps
