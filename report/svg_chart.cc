// Line charts drawn as standalone SVG text: axes, ticks, series and legend, no plotting
// library (report/svg_chart.h).
#include "report/svg_chart.h"

#include "report/grid.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

namespace ranktune::report {
namespace {

constexpr double kWidth = 760, kPanel = 280, kLeft = 70, kRight = 190, kTop = 30, kBottom = 45;
constexpr const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                   "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// About five round tick values covering [lo, hi].
std::vector<double> ticks(double lo, double hi) {
  const double raw = (hi - lo) / 5;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (const double m : {2.0, 5.0, 10.0})
    if (raw > step) step = m * mag;
  std::vector<double> out;
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push_back(std::abs(v) < step * 1e-9 ? 0 : v);
  return out;
}

struct Range {
  double lo = std::numeric_limits<double>::infinity(), hi = -std::numeric_limits<double>::infinity();
  void add(double v) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  bool empty() const { return lo > hi; }
  void pad() {  // a flat series still gets a visible band
    if (hi - lo < 1e-12 * std::max(1.0, std::abs(hi))) {
      lo -= std::max(0.5, std::abs(lo) * 0.05);
      hi += std::max(0.5, std::abs(hi) * 0.05);
    }
  }
};

void panel(std::ostringstream& out, const Chart& c, double y0) {
  const double w = kWidth - kLeft - kRight, h = kPanel - kTop - kBottom;
  out << "<text x=\"" << kLeft << "\" y=\"" << y0 + 18 << "\" font-size=\"14\" font-weight=\"bold\">" << html_escape(c.title)
      << "</text>\n";
  Range xr, yr;
  for (const Series& s : c.series)
    for (const auto& [x, y] : s.points)
      if (std::isfinite(x) && std::isfinite(y)) {
        xr.add(x);
        yr.add(y);
      }
  const double top = y0 + kTop;
  out << "<rect x=\"" << kLeft << "\" y=\"" << top << "\" width=\"" << w << "\" height=\"" << h
      << "\" fill=\"none\" stroke=\"#444\"/>\n";
  if (xr.empty()) {
    out << "<text x=\"" << kLeft + w / 2 << "\" y=\"" << top + h / 2 << "\" text-anchor=\"middle\">no data</text>\n";
    return;
  }
  xr.pad();
  yr.pad();
  auto px = [&](double x) { return kLeft + (x - xr.lo) / (xr.hi - xr.lo) * w; };
  auto py = [&](double y) { return top + h - (y - yr.lo) / (yr.hi - yr.lo) * h; };
  for (const double t : ticks(xr.lo, xr.hi)) {
    out << "<line x1=\"" << px(t) << "\" y1=\"" << top + h << "\" x2=\"" << px(t) << "\" y2=\"" << top + h + 5
        << "\" stroke=\"#444\"/><text x=\"" << px(t) << "\" y=\"" << top + h + 18
        << "\" font-size=\"11\" text-anchor=\"middle\">" << num(t) << "</text>\n";
  }
  for (const double t : ticks(yr.lo, yr.hi)) {
    out << "<line x1=\"" << kLeft - 5 << "\" y1=\"" << py(t) << "\" x2=\"" << kLeft + w << "\" y2=\"" << py(t)
        << "\" stroke=\"#ddd\"/><text x=\"" << kLeft - 8 << "\" y=\"" << py(t) + 4
        << "\" font-size=\"11\" text-anchor=\"end\">" << num(t) << "</text>\n";
  }
  out << "<text x=\"" << kLeft + w / 2 << "\" y=\"" << top + h + 36 << "\" font-size=\"12\" text-anchor=\"middle\">"
      << html_escape(c.x_label) << "</text>\n";
  out << "<text x=\"16\" y=\"" << top + h / 2 << "\" font-size=\"12\" text-anchor=\"middle\" transform=\"rotate(-90 16 "
      << top + h / 2 << ")\">" << html_escape(c.y_label) << "</text>\n";
  for (std::size_t i = 0; i < c.series.size(); ++i) {
    const Series& s = c.series[i];
    const char* color = kColors[i % std::size(kColors)];
    std::ostringstream pts;
    bool any = false;
    double last_y = 0;
    for (const auto& [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      if (s.steps && any) pts << px(x) << ',' << py(last_y) << ' ';
      pts << px(x) << ',' << py(y) << ' ';
      any = true;
      last_y = y;
    }
    if (any)
      out << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"1.5\" points=\"" << pts.str() << "\"/>\n";
    if (i < 12) {
      const double ly = top + 10 + static_cast<double>(i) * 16;
      out << "<line x1=\"" << kLeft + w + 10 << "\" y1=\"" << ly << "\" x2=\"" << kLeft + w + 30 << "\" y2=\"" << ly
          << "\" stroke=\"" << color << "\" stroke-width=\"2\"/><text x=\"" << kLeft + w + 35 << "\" y=\"" << ly + 4
          << "\" font-size=\"11\">" << html_escape(s.label) << "</text>\n";
    }
  }
}

}  // namespace

std::string render_svg(const std::vector<Chart>& charts) {
  std::ostringstream out;
  const double height = kPanel * static_cast<double>(std::max<std::size_t>(1, charts.size()));
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth
      << "\" height=\"" << height << "\" font-family=\"sans-serif\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  for (std::size_t i = 0; i < charts.size(); ++i) panel(out, charts[i], kPanel * static_cast<double>(i));
  out << "</svg>\n";
  return out.str();
}

}  // namespace ranktune::report
