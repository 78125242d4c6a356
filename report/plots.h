#pragma once
/// The charts of `ranktune report --plots`: learning curves of the leading trials, and a
/// PBT trial's hyperparameter schedule next to its metric. Pure: results file in, SVG text
/// out.

#include <cstddef>
#include <string>

#include "io/store.h"

namespace ranktune::report {

/// The experiment metric against the iteration for the `top` best trials (leaderboard
/// order), each trial's current attempt.
std::string learning_curves_svg(const io::ResultsFile& file, std::size_t top);

/// `trial`'s numeric hyperparameters against the iteration (a step at every exploit), one
/// chart each, above its metric. Throws std::invalid_argument as trial_schedule does.
std::string schedule_svg(const io::ResultsFile& file, search::TrialId trial);

}  // namespace ranktune::report
