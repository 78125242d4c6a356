#pragma once
/// A trial's hyperparameter schedule under PBT, rebuilt from the results file: the config
/// it started with and every exploit that replaced it (the "exploit" events' lineage JSON:
/// donor, donor_iteration, iteration, before, after). Pure: no I/O.

#include <cstdint>
#include <string>
#include <vector>

#include "io/store.h"
#include "search/types.h"

namespace ranktune::report {

/// One stretch of a trial's life under one config.
struct ScheduleSegment {
  std::int64_t from_iteration = 0;  ///< the first iteration run with `config` is this + 1
  search::Config config;
  search::TrialId donor = 0;              ///< 0 for the first segment; else whose checkpoint it took
  std::int64_t donor_iteration = 0;       ///< ... and the iteration of that checkpoint
};

/// The schedule of `trial`, oldest first; one segment when it was never exploited. Throws
/// std::invalid_argument when the trial does not exist or an exploit event of it does not
/// hold lineage JSON (a file not written by ranktune, or damaged).
std::vector<ScheduleSegment> trial_schedule(const io::ResultsFile& file, search::TrialId trial);

/// The schedule as text: one line per segment, "iterations A-B: k=v ... (from trial D at
/// iteration I)", with `last_iteration` closing the last segment.
std::string render_schedule(const std::vector<ScheduleSegment>& schedule, std::int64_t last_iteration);

}  // namespace ranktune::report
