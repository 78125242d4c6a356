#pragma once
/// `ranktune ctl status`: a running (or finished) experiment at a glance, from its results
/// file alone (read as a SWMR reader reads a live file): its trials by state, the best so
/// far, the running trials with their latest iteration and metrics, how busy the workers
/// are, and how much of each stopping rule is used. NSML's `nsml ps` for one experiment.

#include <optional>
#include <string>

#include "config/config.h"
#include "controller/control.h"
#include "io/store.h"
#include "report/leaderboard.h"

namespace ranktune::report {

/// The stopping rules `file` goes by: the configured ones (`cfg`), as the last applied `ctl
/// budget` left them (its answer in /events ends with controller::budget_text).
controller::BudgetRules effective_rules(const io::ResultsFile& file, const config::ExperimentConfig& cfg);

/// The status of `file` in `format` (table, markdown or json; csv throws
/// std::invalid_argument: a status is several tables). `live`: a run is writing it now.
/// Times are the file's (seconds since the experiment was created): "used" is the latest
/// time recorded in it.
std::string render_status(const io::ResultsFile& file, const config::ExperimentConfig& cfg, Format format, bool live);

}  // namespace ranktune::report
