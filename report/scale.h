#pragma once
/// Axes for the report's charts: linear, log and categorical scales with their ticks, and
/// the downsampling that keeps a curve's extremes. Pure: numbers in, numbers and labels out.

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace ranktune::report {

/// Maps data values onto [0, 1] along an axis.
struct Scale {
  enum class Kind { Linear, Log, Categorical };
  Kind kind = Kind::Linear;
  double lo = 0, hi = 1;                ///< the data range shown (Log: both > 0)
  std::vector<std::string> categories;  ///< Categorical: value i is categories[i]

  /// Where `v` falls: 0 at lo, 1 at hi (values outside fall outside). Categorical: v is the
  /// index, at the middle of its band. NaN for a value the scale cannot place (<= 0 on Log).
  double unit(double v) const;
  /// Round values to mark: about `target` multiples of 1, 2 or 5 x 10^k (Linear); the powers
  /// of 10 in range, with 2 and 5 times them when there are fewer than 3 (Log); every
  /// category, or every k-th when there are more than 12.
  std::vector<double> ticks(std::size_t target = 5) const;
  /// A tick's text: 4 significant digits; powers of ten as 1e-05 on Log; the category's name.
  std::string label(double v) const;
};

/// [lo, hi] widened by 5% on both sides, or to a visible band when flat (lo == hi).
Scale linear_scale(double lo, double hi);
/// [lo, hi], lo > 0, widened by a fifth of a decade on both sides (a flat range: one decade).
Scale log_scale(double lo, double hi);
Scale categorical_scale(std::vector<std::string> categories);
/// The scale for `values` (non-finite ones ignored): Log when `log` says so, or when it is
/// unset and every value is positive and they span more than two decades; Linear otherwise
/// (`log` true with a value <= 0 falls back to Linear: a log axis cannot show it).
/// No finite value: Linear over [0, 1].
enum class LogChoice { Auto, Never, Always };
Scale fit_scale(const std::vector<double>& values, LogChoice log = LogChoice::Auto);

/// At most about `max_points` of a series sorted by x, for a chart: the points are cut into
/// max_points / 4 runs of consecutive points and each keeps its first, last, lowest and
/// highest (in x order), so spikes and the best value survive. The series' own first and last points are
/// always kept; a series already short enough comes back as it is.
std::vector<std::pair<double, double>> downsample(const std::vector<std::pair<double, double>>& points,
                                                  std::size_t max_points);

}  // namespace ranktune::report
