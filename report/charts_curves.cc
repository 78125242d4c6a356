// The curve charts of the HTML report: every trial's learning curve and the best value so
// far (report/charts.h).
#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

#include "report/charts.h"
#include "report/grid.h"
#include "report/leaderboard.h"
#include "report/svg_canvas.h"
#include "search/scheduler.h"

namespace ranktune::report {
namespace {

/// Points a page can afford per curve: 250,000 in all, at least 16 and at most 400 each.
std::size_t points_per_curve(std::size_t curves) {
  return std::clamp<std::size_t>(curves ? 250000 / curves : 400, 16, 400);
}

}  // namespace

ChartData chart_data(const io::ResultsFile& file, LogChoice log_y, const RunConfig* config) {
  ChartData d;
  d.file = &file;
  d.log_y = log_y;
  d.space = space_of(file, config, nullptr);
  if (config && config->parsed) d.scheduler = config->scheduler;
  d.ranked = best_first(file);
  const auto& names = file.schema.metrics;
  const auto it = std::find(names.begin(), names.end(), file.meta.metric);
  if (it == names.end())
    throw std::invalid_argument(file.path + ": /results has no column for the metric '" + file.meta.metric + "'");
  const auto metric = static_cast<std::size_t>(it - names.begin());
  std::map<search::TrialId, int> attempt;
  for (const search::Trial& t : file.trials) attempt[t.id] = t.attempt;
  for (const io::ResultRow& r : file.results) {
    const auto a = attempt.find(r.trial);
    if (a == attempt.end() || a->second != r.attempt || metric >= r.values.size()) continue;
    d.curves[r.trial].emplace_back(static_cast<double>(r.iteration), r.values[metric]);
  }
  for (auto& [id, points] : d.curves) std::sort(points.begin(), points.end());
  return d;
}

std::string curves_chart(const ChartData& d) {
  const io::ResultsFile& file = *d.file;
  std::set<search::TrialId> stopped;
  for (const io::EventRow& e : file.events)
    if (e.kind == search::EventKind::EarlyStop) stopped.insert(e.trial);
  std::vector<double> ys;
  double max_x = 1;
  for (const auto& [id, points] : d.curves)
    for (const auto& [x, y] : points) {
      ys.push_back(y);
      max_x = std::max(max_x, x);
    }
  const double W = 900, H = 420;
  Panel p{70, 30, W - 70 - 200, H - 30 - 50, linear_scale(0, max_x), fit_scale(ys, d.log_y)};
  p.xs.lo = 0;
  SvgCanvas svg(W, H);
  const bool log = p.ys.kind == Scale::Kind::Log;
  svg.axes(p, "iteration", file.meta.metric + (log ? " (log scale)" : ""),
           file.meta.metric + " (" + search::to_string(file.meta.mode) + ") of every trial");

  // Rungs: a rung scheduler (ASHA, HyperBand) stops or pauses trials only there, so the
  // iterations at which it stopped trials are the rungs (when they are few: median stopping,
  // which has no rungs, stops anywhere).
  if (search::scheduler_traits(d.scheduler).rungs) {
    std::set<std::int64_t> rungs;
    for (const search::Trial& t : file.trials)
      if (stopped.count(t.id) || t.status == search::TrialStatus::Paused) rungs.insert(t.iterations);
    if (!rungs.empty() && rungs.size() <= 12)
      for (const std::int64_t r : rungs) {
        svg.line(p.px(static_cast<double>(r)), p.y, p.px(static_cast<double>(r)), p.y + p.h, {"#b0b0b0", "none", 1, 1, "2 3"},
                 "rung at iteration " + std::to_string(r));
        svg.text(p.px(static_cast<double>(r)) + 2, p.y + 10, "rung " + std::to_string(r), 9);
      }
  }

  const std::size_t budget = points_per_curve(d.curves.size());
  auto draw = [&](const search::Trial& t, std::size_t rank) {
    const auto c = d.curves.find(t.id);
    if (c == d.curves.end()) return;
    Style s{"#9a9a9a", "none", 0.8, 0.45};
    if (rank < 10) s = {palette(rank), "none", rank == 0 ? 2.6 : 1.4, 1};
    if (t.status == search::TrialStatus::Error) s.stroke = "#d62728";
    if (stopped.count(t.id)) s.dash = "5 3";
    if (t.status == search::TrialStatus::Paused) s.dash = "1 2";
    const std::string title = "trial " + std::to_string(t.id) + " (" + search::to_string(t.status) +
                              (stopped.count(t.id) ? ", stopped by the scheduler" : "") + "): best " + value_text(t.best) +
                              " at iteration " + std::to_string(t.best_iteration) + ", " + std::to_string(t.iterations) +
                              " iterations";
    svg.polyline(p, downsample(c->second, budget), s, title);
  };
  // The grey ones first, then the leaders from the tenth to the best, so the best is on top.
  for (std::size_t i = std::min<std::size_t>(10, d.ranked.size()); i < d.ranked.size(); ++i) draw(*d.ranked[i], i);
  for (std::size_t i = std::min<std::size_t>(10, d.ranked.size()); i-- > 0;) draw(*d.ranked[i], i);

  // The legend: the leaders, then what the line styles mean.
  double ly = p.y + 8;
  const double lx = p.x + p.w + 14;
  for (std::size_t i = 0; i < std::min<std::size_t>(10, d.ranked.size()); ++i, ly += 15) {
    svg.line(lx, ly, lx + 20, ly, {palette(i), "none", i == 0 ? 2.6 : 1.4});
    svg.text(lx + 25, ly + 4, (i == 0 ? "best: trial " : "trial ") + std::to_string(d.ranked[i]->id), 11);
  }
  ly += 6;
  const std::pair<const char*, Style> keys[] = {{"other trials", {"#9a9a9a", "none", 0.8}},
                                                {"stopped by the scheduler", {"#555", "none", 1, 1, "5 3"}},
                                                {"paused", {"#555", "none", 1, 1, "1 2"}},
                                                {"failed", {"#d62728", "none", 1}}};
  for (const auto& [label, style] : keys) {
    svg.line(lx, ly, lx + 20, ly, style);
    svg.text(lx + 25, ly + 4, label, 11);
    ly += 15;
  }
  if (d.curves.empty()) svg.text(p.x + p.w / 2, p.y + p.h / 2, "no results yet", 12, "middle");
  return svg.str("learning curves of every trial");
}

std::string best_so_far_chart(const ChartData& d) {
  const io::ResultsFile& file = *d.file;
  const search::Mode mode = file.meta.mode;
  // Against wall time: every result of every attempt, in time order.
  std::vector<std::pair<double, double>> results;
  const auto& names = file.schema.metrics;
  const auto metric = static_cast<std::size_t>(std::find(names.begin(), names.end(), file.meta.metric) - names.begin());
  for (const io::ResultRow& r : file.results)
    if (metric < r.values.size() && std::isfinite(r.values[metric])) results.emplace_back(r.time, r.values[metric]);
  std::sort(results.begin(), results.end());
  std::vector<std::pair<double, double>> by_time;
  for (const auto& [t, v] : results)
    if (by_time.empty() || search::better(v, by_time.back().second, mode)) by_time.emplace_back(t, v);
  if (!by_time.empty() && !results.empty()) by_time.emplace_back(results.back().first, by_time.back().second);
  // Against trials finished, in the order they ended.
  std::vector<const search::Trial*> ended;
  for (const search::Trial& t : file.trials)
    if (std::isfinite(t.end_time)) ended.push_back(&t);
  std::stable_sort(ended.begin(), ended.end(), [](auto* a, auto* b) { return a->end_time < b->end_time; });
  std::vector<std::pair<double, double>> by_count;
  double best = NAN;
  for (std::size_t i = 0; i < ended.size(); ++i) {
    if (search::better(ended[i]->best, best, mode)) {
      best = ended[i]->best;
      by_count.emplace_back(static_cast<double>(i + 1), best);
    }
  }
  if (!by_count.empty()) by_count.emplace_back(static_cast<double>(ended.size()), best);

  const double W = 900, H = 300;
  SvgCanvas svg(W, H);
  std::vector<double> ys;
  for (const auto& [x, y] : by_time) ys.push_back(y);
  for (const auto& [x, y] : by_count) ys.push_back(y);
  const Scale ys_scale = fit_scale(ys, d.log_y);
  const double max_t = by_time.empty() ? 1 : std::max(by_time.back().first, 1e-9);
  const double max_n = std::max<double>(1, static_cast<double>(ended.size()));
  Panel a{70, 30, 360, 220, linear_scale(0, max_t), ys_scale};
  Panel b{520, 30, 360, 220, linear_scale(0, max_n), ys_scale};
  a.xs.lo = 0;
  b.xs.lo = 0;
  svg.axes(a, "wall time (s)", "best " + file.meta.metric, "best " + file.meta.metric + " so far, against wall time");
  svg.axes(b, "trials finished", "", "... against trials finished");
  svg.polyline(a, by_time, {palette(0), "none", 2}, "", true);
  svg.polyline(b, by_count, {palette(2), "none", 2}, "", true);
  for (const auto& [t, v] : by_time)
    svg.circle(a.px(t), a.py(v), 2.5, {"", palette(0)}, "at " + value_text(t) + " s: " + value_text(v));
  for (const auto& [n, v] : by_count)
    svg.circle(b.px(n), b.py(v), 2.5, {"", palette(2)}, "after " + value_text(n) + " trials: " + value_text(v));
  if (by_time.empty()) svg.text(a.x + a.w / 2, a.y + a.h / 2, "no results yet", 12, "middle");
  if (by_count.empty()) svg.text(b.x + b.w / 2, b.y + b.h / 2, "no trial finished yet", 12, "middle");
  return svg.str("best value so far");
}

}  // namespace ranktune::report
