#pragma once
/// `ranktune report --html`: one self-contained HTML page of a results file (NSML's
/// leaderboard and visualization, without a server). The header (counts, wall time, worker
/// utilization, the algorithm and scheduler with their options, the whole config), a
/// sortable leaderboard, every trial's learning curve, the best value so far, importance,
/// parallel coordinates and each hyperparameter against the metric, the workers' timeline,
/// PBT's lineage and schedule, the held-out evaluations, the live-control answers, errors,
/// the workers and the stack. Charts are inline SVG whose marks show their values on hover
/// (SVG <title>); the only script sorts the leaderboard, and the page reads the same with
/// script off. No external file: it opens from a cluster's file system in any browser and
/// mails well. A chart the file cannot give (a file another tool wrote) is replaced by a
/// line saying why. Pure: results file in, text out.

#include <cstddef>
#include <string>
#include <vector>

#include "io/evaluations.h"
#include "io/store.h"
#include "report/pareto_front.h"
#include "report/run_config.h"
#include "report/scale.h"
#include "analysis/importance.h"

namespace ranktune::report {

struct HtmlOptions {
  std::size_t top = 0;  ///< rows of the leaderboard (0: all)
  LogChoice log_y = LogChoice::Auto;
  analysis::Method importance = analysis::Method::Auto;
  /// > 0: the page of a run still going, which the browser reloads every `refresh_s`.
  double refresh_s = 0;
  /// The run's writer died without closing the file (io::writer_died): the page says the run
  /// is no longer running, and its RUNNING trials were running when the writer died.
  bool writer_died = false;
  /// The run's stored config (report::run_config): the space's scales, the algorithm and
  /// scheduler in the header. nullptr: the space is guessed from the values.
  const RunConfig* config = nullptr;
  /// A multi-objective experiment's Pareto view (report::pareto_view): the page adds the front
  /// (a scatter, or a matrix of them), the hypervolume against wall time and the held-out front
  /// of the evaluations, and its leaderboard goes in Pareto order. nullptr: one objective.
  const ParetoView* pareto = nullptr;
  /// A comparison of evaluations (report::comparison_html_section), shown after the
  /// evaluations; "" for none (`report --html --compare`).
  std::string comparison_section;
};

std::string render_html(const io::ResultsFile& file, const std::vector<io::Evaluation>& evaluations,
                        const HtmlOptions& options);
/// The page with `top` rows of the leaderboard and the other options at their defaults
/// (no config).
std::string render_html(const io::ResultsFile& file, const std::vector<io::Evaluation>& evaluations, std::size_t top);

/// A self-contained page in the report's style: `title` (escaped here) over `body` (HTML,
/// escaped by its maker). `ranktune compare --format html` writes its section in one.
std::string html_page(const std::string& title, const std::string& body);

}  // namespace ranktune::report
