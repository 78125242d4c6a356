#pragma once
/// The charts of the HTML report (`ranktune report --html`), each an inline <svg> element
/// drawn with report/svg_canvas.h: learning curves of every trial, the best value so far,
/// parallel coordinates and scatter plots of the hyperparameters, importance bars, the
/// workers' timeline and PBT's lineage. Each keeps its size bounded at any experiment size
/// (curves downsampled keeping their extremes, points and lines capped with the rest
/// counted in a caption), so a page of 10^4 trials and 10^6 results stays a few MB.
/// Pure: results file in, SVG text out.

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "io/store.h"
#include "report/importance.h"
#include "report/scale.h"
#include "search/space.h"

namespace ranktune::report {

/// What every chart needs of a file, computed once: the search space (of the stored
/// config, else guessed from the values), the scheduler's name, each trial's current
/// attempt's metric curve, and the trials in leaderboard order.
struct ChartData {
  const io::ResultsFile* file = nullptr;
  search::Space space;
  std::string scheduler;  ///< "" without a config
  LogChoice log_y = LogChoice::Auto;
  std::vector<const search::Trial*> ranked;  ///< best_first(file)
  std::map<search::TrialId, std::vector<std::pair<double, double>>> curves;  ///< (iteration, metric)
};

/// `config`: the run's (space and scheduler), or nullptr to guess the space from the
/// values. Throws std::invalid_argument when /results has no column for the metric.
ChartData chart_data(const io::ResultsFile& file, LogChoice log_y, const RunConfig* config);

/// The metric against the iteration for every trial: the best 10 in colour (the best
/// thick), the others grey; trials stopped by the scheduler dashed, paused ones dotted,
/// failed ones red; the rungs of ASHA and HyperBand as vertical lines. A log y axis when
/// the values span more than two decades (or as `log_y` says).
std::string curves_chart(const ChartData& d);
/// The best value so far against wall time, and against the number of trials finished.
std::string best_so_far_chart(const ChartData& d);
/// One vertical axis per hyperparameter (log for log domains, a band per value for listed
/// ones) and one for the best value; a line per trial coloured by its rank.
std::string parallel_coordinates_chart(const ChartData& d);
/// Each hyperparameter against the best value, a small chart each.
std::string scatter_chart(const ChartData& d);
/// A bar per hyperparameter: its share of importance.
std::string importance_chart(const ImportanceReport& r);

/// The busy time of each worker rank and of all of them, from the trials' starts and
/// their last results or ends.
struct Utilization {
  double span = 0;                      ///< from the first start to the last end, seconds
  double busy = 0;                      ///< summed over the workers
  std::size_t workers = 0;              ///< ranks that ran trials, or /workers' count if more
  std::map<int, double> busy_by_rank;
  double share() const { return span > 0 && workers > 0 ? busy / (span * static_cast<double>(workers)) : 0; }
};
Utilization utilization(const ChartData& d);
/// One row per worker rank (at most 48 drawn), a bar per trial attempt coloured by how it
/// ended, its utilization at the row's end.
std::string timeline_chart(const ChartData& d, const Utilization& u);
/// PBT: a row per trial over the iterations, an arrow from donor to receiver at each
/// exploit. "" when the run never exploited.
std::string lineage_chart(const ChartData& d);

}  // namespace ranktune::report
