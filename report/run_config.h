#pragma once
/// What the report needs of a run's stored config: the search space (for each
/// hyperparameter's scale: log, listed), the algorithm and scheduler with their options, and
/// the objectives of a multi-objective experiment.
/// Kept apart from the config parser (run_config.cc is the only report file that links
/// it), so the rest of report/ reads a results file alone, as the fuzz target needs.

#include <string>

#include "config/config.h"
#include "io/store.h"
#include "search/objectives.h"
#include "search/options.h"
#include "search/space.h"

namespace ranktune::report {

struct RunConfig {
  bool parsed = false;
  std::string error;  ///< why the stored config did not parse, when it did not
  search::Space space;
  std::string algorithm, scheduler;
  search::Options search_options, scheduler_options;
  std::int64_t max_t = 0;  ///< [stop] max_t: the schedulers' default budget
  /// [experiment]'s objectives and constraints (config::ExperimentConfig::objectives): empty
  /// for one metric without constraints, and for a config that did not parse.
  search::Objectives objectives;
};

/// What the report needs of a parsed config (a run's own, as rank 0's live page has it).
RunConfig run_config(const config::ExperimentConfig& cfg);
/// The stored config of `file`, parsed as config::stored_config does; never throws (an error is
/// kept in RunConfig::error, and the report guesses the space from the values).
RunConfig run_config(const io::ResultsFile& file);

}  // namespace ranktune::report
