// SVG drawing primitives of the HTML report's charts (report/svg_canvas.h).
#include "report/svg_canvas.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>

#include "report/grid.h"

namespace ranktune::report {
namespace {

constexpr const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

}  // namespace

std::string px_num(double v) {
  char buf[32];
  const double r = std::round(v * 10) / 10;
  if (r == std::floor(r)) std::snprintf(buf, sizeof buf, "%.0f", r);
  else std::snprintf(buf, sizeof buf, "%.1f", r);
  return buf;
}

std::string ramp_color(double t) {
  // Five stops of viridis, interpolated in sRGB.
  static constexpr double stops[][3] = {{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}};
  if (!std::isfinite(t)) return "#999999";
  t = std::clamp(t, 0.0, 1.0) * 4;
  const auto i = std::min<std::size_t>(3, static_cast<std::size_t>(t));
  const double f = t - static_cast<double>(i);
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", static_cast<int>(std::lround(stops[i][0] + f * (stops[i + 1][0] - stops[i][0]))),
                static_cast<int>(std::lround(stops[i][1] + f * (stops[i + 1][1] - stops[i][1]))),
                static_cast<int>(std::lround(stops[i][2] + f * (stops[i + 1][2] - stops[i][2]))));
  return buf;
}

const char* palette(std::size_t i) { return kPalette[i % std::size(kPalette)]; }

SvgCanvas::SvgCanvas(double width, double height) : width_(width), height_(height) {}

void SvgCanvas::style(const Style& s) {
  if (!s.stroke.empty()) out_ << " stroke=\"" << s.stroke << '"';
  out_ << " fill=\"" << s.fill << '"';
  if (s.width != 1) out_ << " stroke-width=\"" << px_num(s.width) << '"';
  if (s.opacity != 1) out_ << " opacity=\"" << s.opacity << '"';
  if (!s.dash.empty()) out_ << " stroke-dasharray=\"" << s.dash << '"';
}

void SvgCanvas::close(const std::string& tag, const std::string& title) {
  if (title.empty()) {
    out_ << "/>\n";
    return;
  }
  out_ << "><title>" << html_escape(title) << "</title></" << tag << ">\n";
}

void SvgCanvas::axes(const Panel& p, const std::string& x_label, const std::string& y_label, const std::string& title) {
  if (!title.empty()) text(p.x, p.y - 8, title, 13, "start", 0, "bold");
  rect(p.x, p.y, p.w, p.h, {"#444", "none"});
  const bool x_cat = p.xs.kind == Scale::Kind::Categorical;
  for (const double t : p.xs.ticks(p.w < 200 ? 3 : 5)) {
    const double x = p.px(t);
    if (!(x >= p.x - 0.5 && x <= p.x + p.w + 0.5)) continue;
    line(x, p.y + p.h, x, p.y + p.h + 4, {"#444"});
    // Category names may be long: they lean so that neighbours do not overlap.
    if (x_cat) text(x, p.y + p.h + 14, p.xs.label(t), 10, "end", -30);
    else text(x, p.y + p.h + 15, p.xs.label(t), 10, "middle");
  }
  for (const double t : p.ys.ticks(p.h < 150 ? 3 : 5)) {
    const double y = p.py(t);
    if (!(y >= p.y - 0.5 && y <= p.y + p.h + 0.5)) continue;
    line(p.x - 4, y, p.x + p.w, y, {"#e4e4e4"});
    text(p.x - 6, y + 3.5, p.ys.label(t), 10, "end");
  }
  if (!x_label.empty()) text(p.x + p.w / 2, p.y + p.h + (x_cat ? 44 : 30), x_label, 11, "middle");
  if (!y_label.empty()) text(p.x - 48, p.y + p.h / 2, y_label, 11, "middle", -90);
}

void SvgCanvas::polyline(const Panel& p, const std::vector<std::pair<double, double>>& points, const Style& s,
                         const std::string& title, bool steps) {
  std::vector<std::pair<double, double>> run;
  double last_y = NAN;
  auto flush = [&] {
    if (run.size() >= 2) polyline_px(run, s, title);
    else if (run.size() == 1) circle(run[0].first, run[0].second, std::max(1.5, s.width), {"", s.stroke, 1, s.opacity}, title);
    run.clear();
  };
  for (const auto& [x, y] : points) {
    const double X = p.px(x), Y = p.py(y);
    if (!std::isfinite(X) || !std::isfinite(Y)) {
      flush();
      last_y = NAN;
      continue;
    }
    if (steps && std::isfinite(last_y)) run.emplace_back(X, last_y);
    run.emplace_back(X, Y);
    last_y = Y;
  }
  flush();
}

void SvgCanvas::polyline_px(const std::vector<std::pair<double, double>>& px, const Style& s, const std::string& title) {
  out_ << "<polyline points=\"";
  for (std::size_t i = 0; i < px.size(); ++i) out_ << (i ? " " : "") << px_num(px[i].first) << ',' << px_num(px[i].second);
  out_ << '"';
  style(s);
  close("polyline", title);
}

void SvgCanvas::circle(double cx, double cy, double r, const Style& s, const std::string& title) {
  out_ << "<circle cx=\"" << px_num(cx) << "\" cy=\"" << px_num(cy) << "\" r=\"" << px_num(r) << '"';
  style(s);
  close("circle", title);
}

void SvgCanvas::rect(double x, double y, double w, double h, const Style& s, const std::string& title) {
  out_ << "<rect x=\"" << px_num(x) << "\" y=\"" << px_num(y) << "\" width=\"" << px_num(std::max(w, 0.0)) << "\" height=\""
       << px_num(std::max(h, 0.0)) << '"';
  style(s);
  close("rect", title);
}

void SvgCanvas::line(double x1, double y1, double x2, double y2, const Style& s, const std::string& title) {
  out_ << "<line x1=\"" << px_num(x1) << "\" y1=\"" << px_num(y1) << "\" x2=\"" << px_num(x2) << "\" y2=\"" << px_num(y2) << '"';
  style(s);
  close("line", title);
}

void SvgCanvas::text(double x, double y, const std::string& s, double size, const char* anchor, double rotate,
                     const char* weight) {
  out_ << "<text x=\"" << px_num(x) << "\" y=\"" << px_num(y) << "\" font-size=\"" << px_num(size) << '"';
  if (std::string(anchor) != "start") out_ << " text-anchor=\"" << anchor << '"';
  if (std::string(weight) != "normal") out_ << " font-weight=\"" << weight << '"';
  if (rotate != 0) out_ << " transform=\"rotate(" << px_num(rotate) << ' ' << px_num(x) << ' ' << px_num(y) << ")\"";
  out_ << '>' << html_escape(s) << "</text>\n";
}

std::string SvgCanvas::str(const std::string& label) const {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" aria-label=\"" + html_escape(label) + "\" width=\"" +
         px_num(width_) + "\" height=\"" + px_num(height_) + "\" viewBox=\"0 0 " + px_num(width_) + ' ' + px_num(height_) +
         "\" font-family=\"sans-serif\">\n" + out_.str() + "</svg>\n";
}

}  // namespace ranktune::report
