#pragma once
/// `ranktune report --html`: one self-contained HTML page of a results file (NSML's
/// leaderboard and visualization, without a server): the experiment, the leaderboard, the
/// learning curves and a PBT schedule as inline SVG, the held-out evaluations, the live
/// control requests and errors from the event log, the workers and the stack. No script,
/// no external file: it opens from a cluster's file system in any browser, and mails well.
/// A chart the file cannot give (a file another tool wrote) is replaced by a line saying
/// why. Pure: results file in, text out.

#include <cstddef>
#include <string>
#include <vector>

#include "io/evaluations.h"
#include "io/store.h"

namespace ranktune::report {

/// The page; `top` rows of the leaderboard (0: all) and curves of the best min(top, 10).
std::string render_html(const io::ResultsFile& file, const std::vector<io::Evaluation>& evaluations, std::size_t top);

}  // namespace ranktune::report
