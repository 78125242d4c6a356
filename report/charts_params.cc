// The hyperparameter charts of the HTML report: parallel coordinates, each hyperparameter
// against the metric, and the importance bars (report/charts.h).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "report/charts.h"
#include "report/grid.h"
#include "report/svg_canvas.h"

namespace ranktune::report {
namespace {

constexpr std::size_t kMaxDrawn = 1500, kLeadersDrawn = 300;

/// The trials with a finite best, in leaderboard order, at most kMaxDrawn: the best
/// kLeadersDrawn and an even spread of the rest. `total` gets how many had a value.
std::vector<const search::Trial*> drawn(const ChartData& d, std::size_t* total) {
  std::vector<const search::Trial*> finite;
  for (const search::Trial* t : d.ranked)
    if (std::isfinite(t->best)) finite.push_back(t);
  *total = finite.size();
  if (finite.size() <= kMaxDrawn) return finite;
  std::vector<const search::Trial*> out(finite.begin(), finite.begin() + kLeadersDrawn);
  const std::size_t rest = finite.size() - kLeadersDrawn, slots = kMaxDrawn - kLeadersDrawn;
  for (std::size_t i = 0; i < slots; ++i) out.push_back(finite[kLeadersDrawn + i * rest / slots]);
  return out;
}

/// The axis of a hyperparameter: log for a log domain, a band per value for a listed one.
Scale param_scale(const search::Param& p) {
  const search::Domain& d = p.domain;
  switch (d.kind) {
    case search::DomainKind::Choice:
    case search::DomainKind::Grid: {
      std::vector<std::string> names;
      for (const search::Value& v : d.values) names.push_back(search::to_string(v));
      return categorical_scale(std::move(names));
    }
    case search::DomainKind::LogUniform:
      return log_scale(d.low, d.high);
    case search::DomainKind::RandInt:
      return linear_scale(d.low, d.high - 1);
    default:
      return linear_scale(d.low, d.high);
  }
}

/// Where `trial`'s value of `p` sits on param_scale(p): the index for a listed domain.
double param_coordinate(const search::Param& p, const search::Trial& t) {
  const auto it = t.config.find(p.name);
  if (it == t.config.end()) return NAN;
  if (p.domain.is_listed()) {
    const auto& values = p.domain.values;
    for (std::size_t k = 0; k < values.size(); ++k)
      if (values[k] == it->second || search::to_double(values[k]) == search::to_double(it->second))
        return static_cast<double>(k);
    return NAN;
  }
  return search::to_double(it->second);
}

std::string caption(std::size_t shown, std::size_t total) {
  if (shown == total) return "";
  return "the best " + std::to_string(kLeadersDrawn) + " trials and an even spread of the others: " +
         std::to_string(shown) + " of " + std::to_string(total) + " drawn";
}

/// Colour by rank: the best dark, the worst light, so that the best stand out on white.
std::string rank_color(std::size_t rank, std::size_t total) {
  return ramp_color(total > 1 ? 0.9 * static_cast<double>(rank) / static_cast<double>(total - 1) : 0);
}

}  // namespace

std::string parallel_coordinates_chart(const ChartData& d) {
  const io::ResultsFile& file = *d.file;
  std::size_t total = 0;
  const std::vector<const search::Trial*> trials = drawn(d, &total);
  const std::size_t axes = d.space.params.size() + 1;
  const double gap = 110, left = 60, top = 40, height = 300;
  const double W = std::max(600.0, left * 2 + gap * static_cast<double>(axes - 1)), H = top + height + 70;
  SvgCanvas svg(W, H);
  std::vector<Scale> scales;
  for (const search::Param& p : d.space.params) scales.push_back(param_scale(p));
  std::vector<double> bests;
  for (const search::Trial* t : trials) bests.push_back(t->best);
  scales.push_back(fit_scale(bests, d.log_y));
  auto x_of = [&](std::size_t a) { return left + gap * static_cast<double>(a); };
  auto y_of = [&](std::size_t a, double v) { return top + height - scales[a].unit(v) * height; };
  // Worst first, so that the best lie on top.
  for (std::size_t i = trials.size(); i-- > 0;) {
    const search::Trial& t = *trials[i];
    std::vector<std::pair<double, double>> pts;
    std::string title = "trial " + std::to_string(t.id) + ": " + file.meta.metric + " " + value_text(t.best);
    for (std::size_t a = 0; a + 1 < axes; ++a) {
      const double v = param_coordinate(d.space.params[a], t);
      pts.emplace_back(x_of(a), y_of(a, v));
      const auto it = t.config.find(d.space.params[a].name);
      if (it != t.config.end()) title += ", " + d.space.params[a].name + "=" + search::to_string(it->second);
    }
    pts.emplace_back(x_of(axes - 1), y_of(axes - 1, t.best));
    if (std::all_of(pts.begin(), pts.end(), [](const auto& q) { return std::isfinite(q.second); }))
      svg.polyline_px(pts, {rank_color(i, trials.size()), "none", i < 10 ? 1.8 : 1, i < 10 ? 1 : 0.45}, title);
  }
  for (std::size_t a = 0; a < axes; ++a) {
    const double x = x_of(a);
    svg.line(x, top, x, top + height, {"#333"});
    const std::string name = a + 1 < axes ? d.space.params[a].name : file.meta.metric;
    const bool log = scales[a].kind == Scale::Kind::Log;
    svg.text(x, top - 14, name + (log ? " (log)" : ""), 11, "middle", 0, "bold");
    for (const double t : scales[a].ticks(5)) {
      const double y = y_of(a, t);
      if (!(y >= top - 0.5 && y <= top + height + 0.5)) continue;
      svg.line(x - 3, y, x + 3, y, {"#333"});
      svg.text(x - 5, y + 3.5, scales[a].label(t), 9, "end");
    }
  }
  const std::string note = caption(trials.size(), total);
  svg.text(left, H - 30, "a line per trial, darker is better" + (note.empty() ? "" : "; " + note), 11);
  if (trials.empty()) svg.text(W / 2, top + height / 2, "no trial with a value yet", 12, "middle");
  return svg.str("parallel coordinates of the hyperparameters");
}

std::string scatter_chart(const ChartData& d) {
  const io::ResultsFile& file = *d.file;
  std::size_t total = 0;
  const std::vector<const search::Trial*> trials = drawn(d, &total);
  const std::size_t n = std::max<std::size_t>(1, d.space.params.size()), per_row = 3;
  const double cell_w = 300, cell_h = 230;
  const std::size_t rows = (n + per_row - 1) / per_row;
  SvgCanvas svg(cell_w * static_cast<double>(per_row), cell_h * static_cast<double>(rows) + 24);
  std::vector<double> bests;
  for (const search::Trial* t : trials) bests.push_back(t->best);
  const Scale ys = fit_scale(bests, d.log_y);
  for (std::size_t k = 0; k < d.space.params.size(); ++k) {
    const search::Param& param = d.space.params[k];
    const double ox = cell_w * static_cast<double>(k % per_row), oy = cell_h * static_cast<double>(k / per_row);
    Panel p{ox + 62, oy + 26, cell_w - 80, cell_h - 90, param_scale(param), ys};
    const bool log = p.xs.kind == Scale::Kind::Log;
    svg.axes(p, param.name + (log ? " (log)" : ""), k % per_row == 0 ? file.meta.metric : "", param.name);
    const bool listed = p.xs.kind == Scale::Kind::Categorical;
    const double band = listed ? p.w / std::max(1.0, static_cast<double>(p.xs.categories.size())) : 0;
    for (std::size_t i = trials.size(); i-- > 0;) {
      const search::Trial& t = *trials[i];
      const double v = param_coordinate(param, t);
      double x = p.px(v);
      // Points of one listed value spread across 60% of its band (by trial id, so the
      // page is the same every time) instead of piling onto one line.
      if (listed) x += band * 0.6 * (static_cast<double>((static_cast<std::uint64_t>(t.id) * 2654435761u) % 1000) / 1000.0 - 0.5);
      const double y = p.py(t.best);
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      const auto it = t.config.find(param.name);
      svg.circle(x, y, i < 10 ? 3 : 2, {"", rank_color(i, trials.size()), 1, i < 10 ? 1 : 0.6},
                 "trial " + std::to_string(t.id) + ": " + param.name + "=" +
                     (it == t.config.end() ? "" : search::to_string(it->second)) + ", " + file.meta.metric + " " +
                     value_text(t.best));
    }
  }
  const std::string note = caption(trials.size(), total);
  svg.text(10, cell_h * static_cast<double>(rows) + 14, "a point per trial, darker is better" + (note.empty() ? "" : "; " + note), 11);
  return svg.str("each hyperparameter against the metric");
}

std::string importance_chart(const ImportanceReport& r) {
  const analysis::Importance& x = r.result;
  const double row = 22, left = 160, width = 420;
  SvgCanvas svg(left + width + 90, 30 + row * static_cast<double>(x.scores.size()) + 10 + (x.scores.empty() ? 0 : 16));
  svg.text(10, 18, importance_title(r), 12, "start", 0, "bold");
  auto at = [&](double share) { return left + width * std::clamp(share, 0.0, 1.0); };
  for (std::size_t i = 0; i < x.scores.size(); ++i) {
    const double y = 30 + row * static_cast<double>(i);
    const auto& s = x.scores[i];
    char pct[96];
    std::snprintf(pct, sizeof pct, "%.1f%% (%.0f%% interval %.1f%% to %.1f%%)%s", 100 * s.value, 100 * x.level, 100 * s.low,
                  100 * s.high, s.below_noise ? ", could be noise" : "");
    svg.text(left - 8, y + 14, s.name, 11, "end");
    // A share whose interval reaches the noise floor is drawn faded.
    svg.rect(left, y + 3, at(s.value) - left, row - 6, {"", palette(0), 1, s.below_noise ? 0.3 : 1}, s.name + ": " + pct);
    // The error bar: the interval, with caps.
    const double mid = y + row / 2;
    svg.line(at(s.low), mid, at(s.high), mid, {"#222", "none", 1.2});
    svg.line(at(s.low), mid - 4, at(s.low), mid + 4, {"#222", "none", 1.2});
    svg.line(at(s.high), mid - 4, at(s.high), mid + 4, {"#222", "none", 1.2});
    char label[16];
    std::snprintf(label, sizeof label, "%.1f%%", 100 * s.value);
    svg.text(std::max(at(s.value), at(s.high)) + 6, y + 14, label, 11);
  }
  if (!x.scores.empty()) {
    // The noise floor: what a shuffled copy of a parameter gets.
    const double bottom = 30 + row * static_cast<double>(x.scores.size());
    char floor[80];
    std::snprintf(floor, sizeof floor, "dashed: noise floor %.1f%%; bars: %.0f%% intervals", 100 * x.noise_floor,
                  100 * x.level);
    svg.line(at(x.noise_floor), 26, at(x.noise_floor), bottom, {"#c0392b", "none", 1.5, 1, "4 3"}, floor);
    svg.text(left, bottom + 14, floor, 11);
  }
  return svg.str("hyperparameter importance");
}

}  // namespace ranktune::report
