#pragma once
/// The bridge between an experiment config and its results file: what a run writes of its
/// config into the file (experiment_meta), and the config read back from a file
/// (stored_config). Here, above both io/ and the parser, so that neither knows the other.

#include <string>

#include "config/config.h"
#include "io/store.h"

namespace ranktune::config {

/// The experiment-level metadata of `cfg` (name, metric, mode, config text, overrides)
/// and the command line; the caller adds the stack.
io::StoreMeta experiment_meta(const ExperimentConfig& cfg, const std::string& command_line);

/// The experiment config stored in `file` (its text and --set overrides), parsed as if it
/// lay at `config_path` (relative paths in it resolve there). "": at the config file the run
/// started from (StoreMeta::config_path) while that file exists, else next to the results
/// file. Throws ConfigError.
ExperimentConfig stored_config(const io::ResultsFile& file, const std::string& config_path = "");

/// A config that names no `[search] algorithm` runs the default chosen for its space
/// (search/default_searcher.h), which a later ranktune may choose differently: when `cfg`
/// names none and the file recorded the one its experiment runs (StoreMeta::algorithm),
/// `cfg` takes that one, so that an experiment keeps its searcher across a resume, and a
/// report or eval of the file sees the searcher that ran. Returns true when it changed
/// `cfg`'s algorithm.
bool adopt_stored_algorithm(ExperimentConfig& cfg, const io::StoreMeta& stored);

}  // namespace ranktune::config
