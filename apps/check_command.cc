#include <cstdio>

#include "apps/commands.h"
#include "experiment/experiment.h"

namespace ranktune::apps {

int run_check(const CheckOptions& o) {
  const io::ExperimentConfig cfg = experiment::load_experiment(o.config, o.sets);
  std::fputs(io::render_config(cfg).c_str(), stdout);
  // Ask the searcher: grids, repeats and model-based searchers each count differently.
  const std::int64_t trials = experiment::make_searcher(cfg)->total();
  std::fprintf(stderr, "%s: OK: %s trials, %lld iterations each at most\n", cfg.path.c_str(),
               trials >= 0 ? std::to_string(trials).c_str() : "an open number of",
               static_cast<long long>(cfg.max_t));
  return 0;
}

}  // namespace ranktune::apps
