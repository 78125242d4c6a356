#pragma once
/// `ranktune leaderboard A.h5 B.h5 ...`: NSML's leaderboard across experiments. The trials of
/// several results files that share a metric and a mode, ranked together; each row names
/// its experiment and file. Pure: results files in, text out.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "io/store.h"
#include "report/leaderboard.h"

namespace ranktune::report {

/// `metric` "": the experiments' own metric, which must be the same in every file; else
/// that column of /results, each trial's best over its results. `mode` says which way is
/// better; without it, the files' own mode ranks their own metric (it must be the same in
/// every file), and a metric that is not theirs takes the mode of the files whose
/// experiment metric it is (which must agree): when no file says, the call is refused, as
/// the experiments' mode ranked `val_loss` of an accuracy experiment with the worst losses
/// on top. Throws std::invalid_argument, naming the files and what to give, when the
/// metrics or the modes differ, a mode is unknown, or a file has no such column. `top` 0:
/// every trial. Rows: rank, experiment, file, trial_id, status, end_reason, best,
/// best_iteration, iterations, config (k=v, ...); trials without a finite value after the others, and those
/// that ended in ERROR last. JSON: {metric, mode, files, trials: [...]}.
std::string render_cross_leaderboard(const std::vector<io::ResultsFile>& files, const std::string& metric,
                                     std::optional<search::Mode> mode, std::size_t top, Format format);

}  // namespace ranktune::report
