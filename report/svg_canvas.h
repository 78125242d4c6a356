#pragma once
/// The drawing primitives of the HTML report's charts: an SVG document, panels with a
/// scale per axis, and marks (lines, points, bars, text) that carry a <title>, which
/// browsers show on hover without any script. Pure: builds text.

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "report/scale.h"

namespace ranktune::report {

/// A plot area in pixels of its document, with the scale of each axis.
struct Panel {
  double x = 0, y = 0, w = 0, h = 0;
  Scale xs, ys;
  double px(double v) const { return x + xs.unit(v) * w; }
  double py(double v) const { return y + h - ys.unit(v) * h; }
};

/// How a mark is drawn: SVG presentation attributes, written only when set.
struct Style {
  std::string stroke, fill = "none";
  double width = 1, opacity = 1;
  std::string dash;  ///< stroke-dasharray, e.g. "4 3"
};

/// A colour of a sequential map for t in [0, 1] (a viridis-like ramp, dark to light), so
/// that values read in order in print and for most colour-blind readers.
std::string ramp_color(double t);
/// The i-th colour of a categorical palette of 10.
const char* palette(std::size_t i);

class SvgCanvas {
 public:
  SvgCanvas(double width, double height);

  /// The frame, grid lines, ticks and tick labels of `p`'s axes, their names, and a title.
  void axes(const Panel& p, const std::string& x_label, const std::string& y_label, const std::string& title = "");
  /// A line through `points` (data units of `p`; non-finite points break it). `steps`:
  /// a value holds until the next point.
  void polyline(const Panel& p, const std::vector<std::pair<double, double>>& points, const Style& s,
                const std::string& title = "", bool steps = false);
  /// A line through points given in pixels.
  void polyline_px(const std::vector<std::pair<double, double>>& px, const Style& s, const std::string& title = "");
  void circle(double cx, double cy, double r, const Style& s, const std::string& title = "");
  void rect(double x, double y, double w, double h, const Style& s, const std::string& title = "");
  void line(double x1, double y1, double x2, double y2, const Style& s, const std::string& title = "");
  /// `anchor`: start, middle or end; `rotate`: degrees about (x, y).
  void text(double x, double y, const std::string& s, double size = 11, const char* anchor = "start",
            double rotate = 0, const char* weight = "normal");
  /// The document: an inline <svg> element (no XML declaration), `label` its aria-label.
  std::string str(const std::string& label) const;
  double width() const { return width_; }

 private:
  void style(const Style& s);
  void close(const std::string& tag, const std::string& title);
  double width_, height_;
  std::ostringstream out_;
};

/// A number for SVG coordinates: at most one decimal, so that big charts stay small.
std::string px_num(double v);

}  // namespace ranktune::report
