// The charts of `ranktune report --plots`: the leaders' learning curves and a PBT trial's
// schedule as SVG (report/plots.h; the drawing is report/svg_chart.cc).
#include "report/plots.h"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <variant>

#include "report/leaderboard.h"
#include "report/schedule.h"
#include "report/svg_chart.h"

namespace ranktune::report {
namespace {

// Index of the experiment metric in each result row's values; throws if the file has none.
std::size_t metric_index(const io::ResultsFile& file) {
  const auto& names = file.schema.metrics;
  const auto it = std::find(names.begin(), names.end(), file.meta.metric);
  if (it == names.end()) throw std::invalid_argument(file.path + ": /results has no column for the metric '" + file.meta.metric + "'");
  return static_cast<std::size_t>(it - names.begin());
}

// The metric of `trial`'s current attempt against the iteration.
Series metric_series(const io::ResultsFile& file, const search::Trial& trial, std::size_t metric) {
  Series s{"trial " + std::to_string(trial.id), {}, false};
  for (const io::ResultRow& r : file.results)
    if (r.trial == trial.id && r.attempt == trial.attempt && metric < r.values.size())
      s.points.emplace_back(static_cast<double>(r.iteration), r.values[metric]);
  std::sort(s.points.begin(), s.points.end());
  return s;
}

}  // namespace

std::string learning_curves_svg(const io::ResultsFile& file, std::size_t top) {
  const std::size_t metric = metric_index(file);
  Chart c{file.meta.experiment + ": " + file.meta.metric + " (" + search::to_string(file.meta.mode) + ") of the best " + std::to_string(top) +
              " trials",
          "iteration", file.meta.metric, {}};
  for (const search::Trial* t : best_first(file)) {
    if (c.series.size() == top) break;
    c.series.push_back(metric_series(file, *t, metric));
  }
  return render_svg({c});
}

std::string schedule_svg(const io::ResultsFile& file, search::TrialId trial) {
  const std::vector<ScheduleSegment> schedule = trial_schedule(file, trial);
  const search::Trial& t = *file.trial(trial);  // trial_schedule found it
  std::set<std::string> numeric;
  for (const ScheduleSegment& s : schedule)
    for (const auto& [name, value] : s.config)
      if (!std::holds_alternative<std::string>(value)) numeric.insert(name);

  std::vector<Chart> charts;
  const std::string exploits = std::to_string(schedule.size() - 1) + " exploit" + (schedule.size() == 2 ? "" : "s");
  for (const std::string& name : numeric) {
    Series s{name, {}, true};
    for (std::size_t i = 0; i < schedule.size(); ++i) {
      const auto it = schedule[i].config.find(name);
      if (it == schedule[i].config.end()) continue;
      const double v = std::holds_alternative<double>(it->second) ? std::get<double>(it->second)
                                                                  : static_cast<double>(std::get<std::int64_t>(it->second));
      s.points.emplace_back(static_cast<double>(schedule[i].from_iteration), v);
    }
    if (!s.points.empty()) s.points.emplace_back(static_cast<double>(std::max<std::int64_t>(t.iterations, s.points.back().first)), s.points.back().second);
    charts.push_back({"trial " + std::to_string(trial) + ": " + name + " (" + exploits + ")", "iteration", name, {std::move(s)}});
  }
  charts.push_back({"trial " + std::to_string(trial) + ": " + file.meta.metric, "iteration", file.meta.metric,
                    {metric_series(file, t, metric_index(file))}});
  return render_svg(charts);
}

}  // namespace ranktune::report
