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
    search::make_scheduler(cfg.scheduler, io::scheduler_context(cfg), cfg.scheduler_options);
  } catch (const search::OptionError& e) {
    cfg.fail("scheduler." + e.key(), e.what());
  }
  return cfg;
}

int run_check(const CheckOptions& o) {
  const io::ExperimentConfig cfg = load_experiment(o.config, o.sets);
  std::fputs(io::render_config(cfg).c_str(), stdout);
  // Ask the searcher: grids, repeats and model-based searchers each count differently.
  const std::int64_t trials =
      search::make_searcher(cfg.algorithm, cfg.space, {cfg.seed, cfg.num_samples, cfg.metric, cfg.mode},
                            cfg.search_options)
          ->total();
  std::fprintf(stderr, "%s: OK: %s trials, %lld iterations each at most\n", cfg.path.c_str(),
               trials >= 0 ? std::to_string(trials).c_str() : "an open number of",
               static_cast<long long>(cfg.max_t));
  return 0;
}

}  // namespace ranktune::apps
