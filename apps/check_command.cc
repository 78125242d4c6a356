// `ranktune check`: validates a config and prints it resolved, with defaults, and the
// number of trials it runs.

#include <cstdio>

#include <CLI/CLI.hpp>

#include "apps/commands.h"
#include "experiment/experiment.h"

namespace ranktune::apps {

int run_check(const CheckOptions& o) {
  const config::ExperimentConfig cfg = experiment::load_experiment(o.config, o.sets);
  std::fputs(config::render_config(cfg).c_str(), stdout);
  if (!cfg.algorithm_reason.empty())
    std::fprintf(stderr, "%s: [search] algorithm not given: %s\n", cfg.path.c_str(), cfg.algorithm_reason.c_str());
  if (!cfg.scheduler_given && cfg.max_t > 1)
    std::fprintf(stderr,
                 "%s: [scheduler] kind not given: fifo, every trial runs to max_t = %lld; kind = \"asha\" stops "
                 "poor trials early (gp or tpe with asha is the best measured pair, docs/guide/algorithms.md)\n",
                 cfg.path.c_str(), static_cast<long long>(cfg.max_t));
  // Ask the searcher: grids, repeats and model-based searchers each count differently.
  const std::int64_t trials = experiment::make_searcher(cfg)->total();
  std::fprintf(stderr, "%s: OK: %s trials, %lld iterations each at most\n", cfg.path.c_str(),
               trials >= 0 ? std::to_string(trials).c_str() : "an open number of",
               static_cast<long long>(cfg.max_t));
  return 0;
}

void setup_check(CLI::App& app) {
  const auto check = std::make_shared<CheckOptions>();
  auto* check_cmd = app.add_subcommand("check", "Validate a config and print it resolved, with defaults");
  check_cmd->add_option("config", check->config, "Experiment TOML file")->required();
  check_cmd->add_option("--set", check->sets, "Override a config key (value is TOML)");
  on_run(check_cmd, [check] { return run_check(*check); });
}

}  // namespace ranktune::apps
