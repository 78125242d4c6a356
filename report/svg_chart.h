#pragma once
/// Line charts as standalone SVG text, for `ranktune report --plots`: no plotting library,
/// so a results file can be looked at on a cluster login node and in any browser. Pure.

#include <string>
#include <utility>
#include <vector>

namespace ranktune::report {

struct Series {
  std::string label;
  std::vector<std::pair<double, double>> points;  ///< (x, y); non-finite ones are skipped
  bool steps = false;  ///< a step function (a value that holds until the next point)
};

struct Chart {
  std::string title, x_label, y_label;
  std::vector<Series> series;
};

/// The charts stacked vertically in one SVG document, each with axes, ticks, a line per
/// series and a legend. A chart without finite points says "no data".
std::string render_svg(const std::vector<Chart>& charts);

}  // namespace ranktune::report
