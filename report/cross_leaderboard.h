#pragma once
/// `ranktune leaderboard A.h5 B.h5 ...`: NSML's leaderboard across experiments. The trials of
/// several results files that share a metric and a mode, ranked together; each row names
/// its experiment and file. Pure: results files in, text out.

#include <cstddef>
#include <string>
#include <vector>

#include "io/store.h"
#include "report/leaderboard.h"

namespace ranktune::report {

/// `metric` "": the experiments' own metric, which must be the same in every file; else
/// that column of /results, each trial's best over its results (the files' mode says which
/// way is better). Throws std::invalid_argument, naming the files, when the metrics or the
/// modes differ or a file has no such column. `top` 0: every trial. Rows: rank, experiment,
/// file, trial_id, status, best, best_iteration, iterations, config (k=v, ...); trials
/// without a finite value last. JSON: {metric, mode, files, trials: [...]}.
std::string render_cross_leaderboard(const std::vector<io::ResultsFile>& files, const std::string& metric,
                                     std::size_t top, Format format);

}  // namespace ranktune::report
