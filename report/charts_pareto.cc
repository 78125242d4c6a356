// The charts of a multi-objective experiment on the HTML report: the Pareto front, the
// hypervolume against wall time, and the held-out front of an evaluation (report/pareto_charts.h).
#include "report/pareto_charts.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "report/grid.h"
#include "report/scale.h"
#include "report/svg_canvas.h"

namespace ranktune::report {
namespace {

constexpr std::size_t kMaxEach = 1500;
constexpr const char* kFront = "#1f77b4";
constexpr const char* kDominated = "#8a8a8a";
constexpr const char* kInfeasible = "#d62728";
constexpr double kFaded = 0.35;

std::string values_title(const ParetoView& v, const ParetoEntry& e) {
  std::string t = "trial " + std::to_string(e.trial->id) + ", pareto_rank " + std::to_string(e.rank) +
                  (e.rank == 0 ? " (front)" : "") + (e.feasible() ? "" : ", infeasible") + ": ";
  for (std::size_t i = 0; i < e.values.size(); ++i) t += (i ? ", " : "") + v.objectives.metrics[i] + " " + value_text(e.values[i]);
  for (std::size_t k = 0; k < e.constrained.size(); ++k)
    t += ", " + v.objectives.constraints[k].metric + " " + value_text(e.constrained[k]);
  return t;
}

// The ranked trials drawn: the front's first kMaxEach in the view's order (by crowding
// distance), and an even spread of at most kMaxEach of the others.
std::vector<const ParetoEntry*> drawn(const ParetoView& v, std::size_t* not_drawn) {
  std::vector<const ParetoEntry*> out;
  for (std::size_t i = 0; i < std::min(v.front, kMaxEach); ++i) out.push_back(&v.entries[i]);
  const std::size_t rest = v.ranked - v.front, slots = std::min(rest, kMaxEach);
  for (std::size_t k = 0; k < slots; ++k) out.push_back(&v.entries[v.front + k * rest / slots]);
  *not_drawn = v.ranked - out.size();
  return out;
}

// A cross centred on (x, y): one polyline through the centre, so that it has one title.
void cross(SvgCanvas& svg, double x, double y, double r, const Style& s, const std::string& title) {
  svg.polyline_px({{x - r, y - r}, {x + r, y + r}, {x, y}, {x + r, y - r}, {x - r, y + r}}, s, title);
}

// The points (x, y) of `entries` in minimization order of x (then of y), joined as a step
// line: the boundary of the region they dominate, when they do not dominate each other.
std::vector<std::pair<double, double>> staircase(std::vector<std::array<double, 4>> pts) {
  // Each: own x, own y, minimization x, minimization y.
  std::sort(pts.begin(), pts.end(), [](const auto& a, const auto& b) { return a[2] != b[2] ? a[2] < b[2] : a[3] < b[3]; });
  std::vector<std::pair<double, double>> out;
  for (const auto& p : pts) out.emplace_back(p[0], p[1]);
  return out;
}

// One panel of objective i (x) against objective j (y).
void pair_panel(SvgCanvas& svg, const Panel& p, const ParetoView& v, const std::vector<const ParetoEntry*>& points,
                std::size_t i, std::size_t j, bool steps, const std::string& title) {
  svg.axes(p, v.objectives.metrics[i] + " (" + search::to_string(v.objectives.modes[i]) + ")",
           v.objectives.metrics[j] + " (" + search::to_string(v.objectives.modes[j]) + ")", title);
  // The reference point of the hypervolume, a hollow square.
  if (!v.reference.empty())
    svg.rect(p.px(v.reference[i]) - 4, p.py(v.reference[j]) - 4, 8, 8, {"#444", "none", 1.2},
             "reference point of the hypervolume: " + v.objectives.metrics[i] + " " + value_text(v.reference[i]) + ", " +
                 v.objectives.metrics[j] + " " + value_text(v.reference[j]));
  // Dominated first, then the front on top; a cross for an infeasible trial.
  for (const bool front : {false, true}) {
    for (const ParetoEntry* e : points) {
      if ((e->rank == 0) != front) continue;
      const double x = p.px(e->values[i]), y = p.py(e->values[j]);
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      const std::string title = values_title(v, *e);
      if (!e->feasible()) {
        cross(svg, x, y, front ? 4.5 : 3.5, {kInfeasible, "none", front ? 2 : 1.4, front ? 1 : kFaded}, title);
      } else if (front) {
        svg.circle(x, y, 4.5, {"#fff", kFront, 1}, title);
      } else {
        svg.circle(x, y, 3, {"", kDominated, 1, kFaded}, title);
      }
    }
  }
  if (!steps) return;
  std::vector<std::array<double, 4>> pts;
  for (const ParetoEntry* e : points)
    if (e->rank == 0 && e->feasible()) pts.push_back({e->values[i], e->values[j], e->point.objectives[i], e->point.objectives[j]});
  svg.polyline(p, staircase(std::move(pts)), {kFront, "none", 1.5}, "the front's step line: the boundary of what it dominates",
               true);
}

// The legend of the front's marks, from (x, y) down.
void legend(SvgCanvas& svg, double x, double y, bool steps) {
  svg.circle(x + 6, y, 4.5, {"#fff", kFront, 1});
  svg.text(x + 16, y + 4, "on the front (pareto_rank 0)", 11);
  svg.circle(x + 6, y + 18, 3, {"", kDominated, 1, kFaded});
  svg.text(x + 16, y + 22, "dominated (faded)", 11);
  cross(svg, x + 6, y + 36, 4, {kInfeasible, "none", 2}, "");
  svg.text(x + 16, y + 40, "infeasible (a constraint violated)", 11);
  svg.rect(x + 2, y + 50, 8, 8, {"#444", "none", 1.2});
  svg.text(x + 16, y + 58, "reference point of the hypervolume", 11);
  if (steps) {
    svg.line(x, y + 72, x + 12, y + 72, {kFront, "none", 1.5});
    svg.text(x + 16, y + 76, "the front's step line", 11);
  }
}

// The scale of objective i over the drawn points and the reference.
Scale objective_scale(const ParetoView& v, const std::vector<const ParetoEntry*>& points, std::size_t i) {
  std::vector<double> values;
  for (const ParetoEntry* e : points) values.push_back(e->values[i]);
  if (!v.reference.empty()) values.push_back(v.reference[i]);
  return fit_scale(values);
}

}  // namespace

std::string pareto_front_chart(const ParetoView& v) {
  std::size_t not_drawn = 0;
  const std::vector<const ParetoEntry*> points = drawn(v, &not_drawn);
  const std::size_t d = v.objectives.metrics.size();
  std::size_t failed = 0;
  for (const ParetoEntry* e : points)
    if (std::any_of(e->values.begin(), e->values.end(), [](double x) { return !std::isfinite(x); })) ++failed;
  std::string caption = "a point per finished trial (" + std::to_string(v.ranked) + " ranked)";
  if (not_drawn > 0) caption += "; the front's first " + std::to_string(kMaxEach) + " by crowding distance and an even spread of the others: " +
                                std::to_string(v.ranked - not_drawn) + " drawn";
  if (failed > 0) caption += "; " + std::to_string(failed) + " without a finite value of every objective not drawn";
  if (d == 2) {
    SvgCanvas svg(760, 430);
    Panel p{80, 40, 420, 320, objective_scale(v, points, 0), objective_scale(v, points, 1)};
    pair_panel(svg, p, v, points, 0, 1, true, "");
    legend(svg, 530, 60, true);
    svg.text(10, 420, caption, 11);
    return svg.str("Pareto front");
  }
  // A matrix of the pairs, objective i against objective j in row i and column j - 1.
  const double cell_w = 290, cell_h = 250;
  const auto cells = static_cast<double>(d - 1);
  SvgCanvas svg(std::max(cell_w * cells, 560.0), cell_h * cells + 100);
  std::vector<Scale> scales;
  for (std::size_t i = 0; i < d; ++i) scales.push_back(objective_scale(v, points, i));
  for (std::size_t i = 0; i < d; ++i)
    for (std::size_t j = i + 1; j < d; ++j) {
      const double ox = cell_w * static_cast<double>(j - 1), oy = cell_h * static_cast<double>(i);
      pair_panel(svg, {ox + 75, oy + 30, cell_w - 95, cell_h - 85, scales[i], scales[j]}, v, points, i, j, false,
                 v.objectives.metrics[i] + " vs " + v.objectives.metrics[j]);
    }
  // The lower triangle is empty: the legend goes in its first cell.
  legend(svg, 20, cell_h + 40, false);
  svg.text(10, cell_h * cells + 90, caption + "; no step line: a front of 3 or more objectives is no staircase in a pair", 11);
  return svg.str("Pareto front");
}

std::string hypervolume_chart(const ParetoView& v) {
  if (v.reference.empty()) return "";
  const std::vector<std::pair<double, double>> h = v.history();
  double end = 0;
  for (std::size_t i = 0; i < v.ranked; ++i)
    if (std::isfinite(v.entries[i].trial->end_time)) end = std::max(end, v.entries[i].trial->end_time);
  std::vector<std::pair<double, double>> line = h;
  if (!line.empty() && end > line.back().first) line.emplace_back(end, line.back().second);
  double top = 0;
  for (const auto& [t, hv] : h) top = std::max(top, hv);
  SvgCanvas svg(760, 340);
  Panel p{80, 40, 600, 230, linear_scale(0, std::max(end, 1e-9)), linear_scale(0, top > 0 ? top : 1)};
  p.xs.lo = 0;
  p.ys.lo = 0;
  svg.axes(p, "wall time (s since the experiment began; each trial at its end_time)", "hypervolume");
  svg.polyline(p, line, {kFront, "none", 1.8}, "hypervolume of the front of the trials finished by then", true);
  for (const auto& [t, hv] : h) {
    char title[96];
    std::snprintf(title, sizeof title, "%.6g at %.4g s", hv, t);
    svg.circle(p.px(t), p.py(hv), 2.5, {"", kFront}, std::string("hypervolume ") + title);
  }
  if (h.empty()) svg.text(p.x + p.w / 2, p.y + p.h / 2, "no finished trial dominates the reference point", 12, "middle");
  svg.text(10, 318, "against the reference point " + v.reference_point_text() + " (how it was chosen: above)", 11);
  return svg.str("hypervolume against wall time");
}

std::optional<HeldOutMetric> held_out_metric(const search::Objectives& objectives, const io::Evaluation& evaluation) {
  std::vector<std::string> names;
  for (const io::EvalMetricRow& r : evaluation.metrics)
    if (std::find(names.begin(), names.end(), r.metric) == names.end()) names.push_back(r.metric);
  if (names.empty() || objectives.metrics.empty()) return std::nullopt;
  const auto has = [&](const std::string& n) { return std::find(names.begin(), names.end(), n) != names.end(); };
  for (std::size_t k = 0; k < objectives.metrics.size(); ++k) {
    const std::string& m = objectives.metrics[k];
    const std::string test = m.starts_with("val_") ? "test_" + m.substr(4) : m;
    if (has(test)) return HeldOutMetric{test, k, objectives.modes[k]};
    if (has(m)) return HeldOutMetric{m, k, objectives.modes[k]};
  }
  return HeldOutMetric{names.front(), 0, objectives.modes.front()};
}

namespace {

// An evaluated trial at one batch size: its held-out metric and its p50 latency per sample.
struct HeldOut {
  search::TrialId trial = 0;
  std::int64_t iteration = 0;
  double metric = NAN, ms_per_sample = NAN, p50_ms = NAN;
  bool front = false;
};

std::vector<HeldOut> held_out_points(const io::Evaluation& ev, const HeldOutMetric& m, std::int64_t batch_size) {
  std::map<std::pair<search::TrialId, std::int64_t>, double> value;
  for (const io::EvalMetricRow& r : ev.metrics)
    if (r.metric == m.metric) value[{r.trial, r.iteration}] = r.value;
  std::vector<HeldOut> out;
  for (const io::EvalLatencyRow& l : ev.latency) {
    if (l.batch_size != batch_size || l.batch_size < 1) continue;
    const auto it = value.find({l.trial, l.iteration});
    out.push_back({l.trial, l.iteration, it == value.end() ? NAN : it->second, l.p50_ms / static_cast<double>(l.batch_size),
                   l.p50_ms});
  }
  // The held-out front: Deb's sort of (metric in its mode, latency minimized).
  std::vector<search::ParetoPoint> points;
  const search::Mode modes[] = {m.mode, search::Mode::Min};
  for (const HeldOut& h : out) {
    const double values[] = {h.metric, h.ms_per_sample};
    points.push_back(search::make_pareto_point(values, modes));
  }
  if (!points.empty()) {
    const search::ParetoRanking r = search::nondominated_sort(points);
    for (std::size_t i = 0; i < out.size(); ++i) out[i].front = r.rank[i] == 0 && points[i].feasible();
  }
  return out;
}

std::vector<std::int64_t> batch_sizes(const io::Evaluation& ev) {
  std::vector<std::int64_t> sizes;
  for (const io::EvalLatencyRow& l : ev.latency)
    if (l.batch_size >= 1 && std::find(sizes.begin(), sizes.end(), l.batch_size) == sizes.end()) sizes.push_back(l.batch_size);
  return sizes;
}

}  // namespace

std::vector<search::TrialId> held_out_front(const ParetoView& pareto, const io::Evaluation& evaluation,
                                            std::int64_t batch_size) {
  const auto m = held_out_metric(pareto.objectives, evaluation);
  std::vector<search::TrialId> ids;
  if (!m) return ids;
  for (const HeldOut& h : held_out_points(evaluation, *m, batch_size))
    if (h.front) ids.push_back(h.trial);
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::string held_out_front_chart(const ParetoView& v, const io::Evaluation& ev) {
  const auto m = held_out_metric(v.objectives, ev);
  std::vector<std::int64_t> sizes = batch_sizes(ev);
  if (!m || sizes.empty()) return "";
  if (sizes.size() > 3) sizes.resize(3);
  const double cell_w = 330, cell_h = 300;
  SvgCanvas svg(cell_w * static_cast<double>(1 + sizes.size()), cell_h + 110);
  // Validation: the held-out metric's objective (y) against the next objective (x).
  const std::size_t j = m->objective, i = j == 0 ? 1 : 0;
  std::set<search::TrialId> evaluated;
  for (const io::EvalMetricRow& r : ev.metrics) evaluated.insert(r.trial);
  std::size_t not_drawn = 0;
  const std::vector<const ParetoEntry*> points = drawn(v, &not_drawn);
  Panel left{75, 40, cell_w - 100, cell_h - 90, objective_scale(v, points, i), objective_scale(v, points, j)};
  pair_panel(svg, left, v, points, i, j, v.objectives.metrics.size() == 2, "validation front");
  for (const ParetoEntry* e : points) {
    if (!evaluated.contains(e->trial->id)) continue;
    svg.circle(left.px(e->values[i]), left.py(e->values[j]), 7, {"#000", "none", 1.5},
               "trial " + std::to_string(e->trial->id) + ": evaluated (" + values_title(v, *e) + ")");
  }
  // Held out, per batch size: the metric against p50 latency per sample.
  for (std::size_t b = 0; b < sizes.size(); ++b) {
    const std::vector<HeldOut> pts = held_out_points(ev, *m, sizes[b]);
    std::vector<double> xs, ys;
    for (const HeldOut& h : pts) {
      xs.push_back(h.ms_per_sample);
      ys.push_back(h.metric);
    }
    const double ox = cell_w * static_cast<double>(b + 1);
    Panel p{ox + 75, 40, cell_w - 100, cell_h - 90, fit_scale(xs), fit_scale(ys)};
    svg.axes(p, "p50 ms per sample" + std::string(p.xs.kind == Scale::Kind::Log ? " (log)" : ""),
             m->metric + " (" + search::to_string(m->mode) + ")", "held out, batch size " + std::to_string(sizes[b]));
    std::vector<std::array<double, 4>> stair;
    for (const bool front : {false, true})
      for (const HeldOut& h : pts) {
        if (h.front != front) continue;
        const double x = p.px(h.ms_per_sample), y = p.py(h.metric);
        if (!std::isfinite(x) || !std::isfinite(y)) continue;
        char title[200];
        std::snprintf(title, sizeof title, "trial %lld (iteration %lld)%s: %s %.6g, %.4g ms per sample at batch size %lld "
                      "(p50 %.4g ms per batch)", static_cast<long long>(h.trial), static_cast<long long>(h.iteration),
                      front ? ", on the held-out front" : "", m->metric.c_str(), h.metric, h.ms_per_sample,
                      static_cast<long long>(sizes[b]), h.p50_ms);
        if (front) {
          svg.circle(x, y, 4.5, {"#fff", kFront, 1}, title);
          stair.push_back({h.ms_per_sample, h.metric, h.ms_per_sample, -search::sign(m->mode) * h.metric});
        } else {
          svg.circle(x, y, 3, {"", kDominated, 1, kFaded}, title);
        }
      }
    svg.polyline(p, staircase(std::move(stair)), {kFront, "none", 1.5}, "the held-out front's step line", true);
  }
  svg.circle(81, cell_h + 20, 7, {"#000", "none", 1.5});
  svg.text(94, cell_h + 24, "evaluated trial (ringed on the validation front)", 11);
  legend(svg, 75, cell_h + 42, true);
  svg.text(cell_w + 75, cell_h + 24,
           "held out: " + m->metric + " (standing for " + v.objectives.metrics[m->objective] + ") against p50 latency per sample", 11);
  svg.text(cell_w + 75, cell_h + 40, "(the p50 of a batch over its batch size); in colour the held-out front, the others faded", 11);
  return svg.str("held-out front beside the validation front");
}

}  // namespace ranktune::report
