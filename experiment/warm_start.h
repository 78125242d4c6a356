#pragma once
/// Warm start (`[search] warm_start`, `ranktune run --warm-start`): the completed trials of
/// earlier experiments whose space is compatible, as observations the searcher starts from
/// (search::SearcherOptions::warm). Compatible: the same parameter names with the same kinds
/// of domain; the domains' bounds and values may differ, and a trial with a value outside
/// this space's domain is dropped. The trials are not run again and not counted in
/// num_samples; the results file's "warm_start" events and the report say where they came from.

#include "config/config.h"

namespace ranktune::experiment {

/// Reads cfg.warm_start's files into cfg.warm and cfg.warm_sources. Throws ConfigError at
/// search.warm_start for an algorithm that models nothing (random, grid), a file that cannot
/// be read, or a space that differs (the message shows the difference).
void load_warm_start(config::ExperimentConfig& cfg);

}  // namespace ranktune::experiment
