// Linear, log and categorical scales, ticks and extreme-keeping downsampling (report/scale.h).
#include "report/scale.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace ranktune::report {

double Scale::unit(double v) const {
  switch (kind) {
    case Kind::Categorical:
      return categories.empty() ? NAN : (v + 0.5) / static_cast<double>(categories.size());
    case Kind::Log:
      return v > 0 ? (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) : NAN;
    case Kind::Linear:
      break;
  }
  return (v - lo) / (hi - lo);
}

std::vector<double> Scale::ticks(std::size_t target) const {
  std::vector<double> out;
  if (kind == Kind::Categorical) {
    const std::size_t n = categories.size(), every = n > 12 ? (n + 11) / 12 : 1;
    for (std::size_t i = 0; i < n; i += every) out.push_back(static_cast<double>(i));
    return out;
  }
  if (kind == Kind::Log) {
    const int first = static_cast<int>(std::ceil(std::log10(lo) - 1e-9)), last = static_cast<int>(std::floor(std::log10(hi) + 1e-9));
    const int decades = last - first + 1, wanted = static_cast<int>(std::max<std::size_t>(target, 1));
    const int stride = std::max(1, (decades + wanted - 1) / wanted);
    for (int e = first; e <= last; e += stride) out.push_back(std::pow(10.0, e));
    if (out.size() < 3) {
      // Within a decade or two, 2 and 5 times the powers of ten mark the axis too.
      out.clear();
      for (int e = first - 1; e <= last; ++e)
        for (const double m : {1.0, 2.0, 5.0}) {
          const double v = m * std::pow(10.0, e);
          if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) out.push_back(v);
        }
    }
    return out;
  }
  const double raw = (hi - lo) / static_cast<double>(std::max<std::size_t>(target, 1));
  if (!(raw > 0) || !std::isfinite(raw)) return {lo};
  // The multiple of 1, 2 or 5 x 10^k nearest to the raw step (on a log scale).
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (const double m : {2.0, 5.0, 10.0})
    if (std::abs(std::log(m * mag / raw)) < std::abs(std::log(step / raw))) step = m * mag;
  // Multiples of the step by integer count, so that 0.2 * 15 stays 3 and not 3.0000000004.
  for (auto k = static_cast<long long>(std::ceil(lo / step - 1e-9)); static_cast<double>(k) * step <= hi + step * 1e-9; ++k)
    out.push_back(static_cast<double>(k) * step);
  return out;
}

std::string Scale::label(double v) const {
  if (kind == Kind::Categorical) {
    const auto i = static_cast<std::size_t>(std::max(0.0, v));
    return i < categories.size() ? categories[i] : "";
  }
  char buf[32];
  const double e = std::log10(std::abs(v));
  if (kind == Kind::Log && std::abs(e - std::round(e)) < 1e-9 && std::abs(e) >= 4) std::snprintf(buf, sizeof buf, "1e%+03d", static_cast<int>(std::round(e)));
  else std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

Scale linear_scale(double lo, double hi) {
  if (hi - lo < 1e-12 * std::max(1.0, std::abs(hi))) {
    const double pad = std::max(0.5, std::abs(hi) * 0.05);
    return {Scale::Kind::Linear, lo - pad, hi + pad, {}};
  }
  const double pad = 0.05 * (hi - lo);
  return {Scale::Kind::Linear, lo - pad, hi + pad, {}};
}

Scale log_scale(double lo, double hi) {
  if (hi / lo < 1 + 1e-12) return {Scale::Kind::Log, lo / std::sqrt(10.0), hi * std::sqrt(10.0), {}};
  const double pad = std::pow(10.0, 0.2);
  return {Scale::Kind::Log, lo / pad, hi * pad, {}};
}

Scale categorical_scale(std::vector<std::string> categories) {
  return {Scale::Kind::Categorical, 0, static_cast<double>(categories.size()), std::move(categories)};
}

Scale fit_scale(const std::vector<double>& values, LogChoice log) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const double v : values)
    if (std::isfinite(v)) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  if (lo > hi) return {Scale::Kind::Linear, 0, 1, {}};
  const bool positive = lo > 0;
  if (log == LogChoice::Always && positive) return log_scale(lo, hi);
  if (log == LogChoice::Auto && positive && hi / lo > 100) return log_scale(lo, hi);
  return linear_scale(lo, hi);
}

std::vector<std::pair<double, double>> downsample(const std::vector<std::pair<double, double>>& points,
                                                  std::size_t max_points) {
  if (points.size() <= std::max<std::size_t>(max_points, 4)) return points;
  // Buckets of consecutive points (a curve's iterations are evenly spaced, mostly).
  const std::size_t n = points.size(), buckets = std::max<std::size_t>(1, max_points / 4);
  std::vector<std::pair<double, double>> out;
  out.reserve(buckets * 4);
  for (std::size_t b = 0; b < buckets; ++b) {
    const std::size_t first = b * n / buckets, end = (b + 1) * n / buckets;
    if (first == end) continue;
    std::size_t low = first, high = first;
    for (std::size_t i = first; i < end; ++i) {
      if (points[i].second < points[low].second || std::isnan(points[low].second)) low = i;
      if (points[i].second > points[high].second || std::isnan(points[high].second)) high = i;
    }
    std::size_t keep[] = {first, low, high, end - 1};
    std::sort(std::begin(keep), std::end(keep));
    for (std::size_t k = 0; k < 4; ++k)
      if (k == 0 || keep[k] != keep[k - 1]) out.push_back(points[keep[k]]);
  }
  return out;
}

}  // namespace ranktune::report
