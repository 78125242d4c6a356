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
  if (cfg.algorithm_chosen)
    std::fprintf(stderr, "%s: [search] algorithm not given: %s\n", cfg.path.c_str(),
                 cfg.algorithm == "tpe" ? "tpe, the best measured searcher for a space without grid axes"
                                        : "random, since the space has grid axes to cross (TPE does not cross them)");
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
