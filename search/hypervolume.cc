#include "search/hypervolume.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>

namespace ranktune::search {

namespace {

using Points = std::vector<std::vector<double>>;

/// The points that count, by the rule of the header (finite, strictly dominating the
/// reference), after checking the reference and every point's size. `kept` gets their indices.
Points counted_points(std::span<const std::vector<double>> points, const std::vector<double>& ref,
                      std::vector<std::size_t>* kept = nullptr) {
  if (ref.empty()) throw std::invalid_argument("hypervolume: the reference point has no coordinate");
  for (std::size_t i = 0; i < ref.size(); ++i)
    if (!std::isfinite(ref[i]))
      throw std::invalid_argument("hypervolume: coordinate " + std::to_string(i) +
                                  " of the reference point is not finite; give a finite reference point");
  Points out;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto& p = points[i];
    if (p.size() != ref.size())
      throw std::invalid_argument("hypervolume: point " + std::to_string(i) + " has " + std::to_string(p.size()) +
                                  " coordinates, the reference point " + std::to_string(ref.size()));
    bool counts = true;
    for (std::size_t j = 0; j < p.size(); ++j) counts = counts && std::isfinite(p[j]) && p[j] < ref[j];
    if (!counts) continue;
    out.push_back(p);
    if (kept) kept->push_back(i);
  }
  return out;
}

/// The points that no other one weakly dominates, one of each group of equal points: the
/// only ones a hypervolume depends on, and what WFG's work grows with.
Points nondominated(Points pts) {
  std::sort(pts.begin(), pts.end());  // lexicographic: a weak dominator sorts before what it dominates
  pts.erase(std::unique(pts.begin(), pts.end()), pts.end());
  Points out;
  for (auto& p : pts) {
    const bool dominated = std::any_of(out.begin(), out.end(), [&](const std::vector<double>& q) {
      for (std::size_t j = 0; j < p.size(); ++j)
        if (q[j] > p[j]) return false;
      return true;
    });
    if (!dominated) out.push_back(std::move(p));
  }
  return out;
}

/// Throws past the work cap of the header (4 objectives or more). C(n, d-3) * n in doubles, so
/// that it cannot overflow.
void check_work(std::size_t n, std::size_t d) {
  if (d < 4) return;
  double work = static_cast<double>(n);
  for (std::size_t k = 1; k <= d - 3 && k <= n; ++k) work *= static_cast<double>(n - k + 1) / static_cast<double>(k);
  if (d - 3 > n) work = 0;
  if (work > kMaxHypervolumeWork) {
    std::ostringstream msg;
    msg << "hypervolume: " << n << " non-dominated points in " << d << " objectives need about " << work
        << " steps of the exact algorithm (WFG), past its limit of " << kMaxHypervolumeWork
        << "; give fewer points (for example the front only) or fewer objectives";
    throw std::invalid_argument(msg.str());
  }
}

/// 2 objectives, sorted by the first: each point adds the slab between its second objective and
/// the lowest one seen so far, from its first objective to the reference.
double hv2(Points pts, const std::vector<double>& ref) {
  std::sort(pts.begin(), pts.end());
  double vol = 0, top = ref[1];
  for (const auto& p : pts) {
    if (p[1] >= top) continue;
    vol += (ref[0] - p[0]) * (top - p[1]);
    top = p[1];
  }
  return vol;
}

/// The 2-D staircase of the 3-D sweep: the non-dominated (x, y) points so far, x ascending and
/// so y descending, and the area they dominate up to the reference. An insertion updates the
/// area by the region the new point adds, walking only the points it removes, so that the
/// sweep is O(n log n) overall (each point enters and leaves the tree once).
class Staircase {
 public:
  Staircase(double rx, double ry) : rx_(rx), ry_(ry) {}
  double area() const { return area_; }

  void insert(double px, double py) {
    auto it = steps_.lower_bound(px);  // first step with x >= px
    double ceiling = ry_;              // the staircase's height just right of px
    if (it != steps_.begin()) {
      const auto left = std::prev(it);  // the lowest step left of px
      if (left->second <= py) return;   // dominated: adds nothing
      ceiling = left->second;
    }
    if (it != steps_.end() && it->first == px && it->second <= py) return;  // dominated or equal
    double x = px;
    while (it != steps_.end() && it->second >= py) {  // steps the new point dominates
      area_ += (it->first - x) * (ceiling - py);
      x = it->first;
      ceiling = it->second;
      it = steps_.erase(it);
    }
    area_ += ((it == steps_.end() ? rx_ : it->first) - x) * (ceiling - py);
    steps_.emplace_hint(it, px, py);
  }

 private:
  double rx_, ry_;
  double area_ = 0;
  std::map<double, double> steps_;
};

/// 3 objectives: Fonseca, Paquete and López-Ibáñez's sweep in the third objective. Between two
/// consecutive values of it, the dominated region's cross-section is the staircase's area.
double hv3(Points pts, const std::vector<double>& ref) {
  std::sort(pts.begin(), pts.end(), [](const auto& a, const auto& b) { return a[2] < b[2]; });
  Staircase stairs(ref[0], ref[1]);
  double vol = 0, z = pts.empty() ? ref[2] : pts.front()[2];
  for (const auto& p : pts) {
    vol += stairs.area() * (p[2] - z);
    z = p[2];
    stairs.insert(p[0], p[1]);
  }
  return vol + stairs.area() * (ref[2] - z);
}

double hv_counted(Points pts, const std::vector<double>& ref);

/// WFG: with the points ordered by their last objective, worst first, every later point is no
/// worse than p in it, so p's limit set (the later points clipped into p's box) lies at p's
/// last objective, and its volume is the slab (ref - p) in that objective times a hypervolume in
/// one objective fewer.
double wfg(Points pts, const std::vector<double>& ref) {
  const std::size_t d = ref.size();
  std::sort(pts.begin(), pts.end(), [&](const auto& a, const auto& b) { return a[d - 1] > b[d - 1]; });
  const std::vector<double> ref_less(ref.begin(), ref.end() - 1);
  double vol = 0;
  for (std::size_t k = 0; k < pts.size(); ++k) {
    const auto& p = pts[k];
    double box = 1;
    for (std::size_t j = 0; j < d; ++j) box *= ref[j] - p[j];
    Points limit;
    for (std::size_t i = k + 1; i < pts.size(); ++i) {
      std::vector<double> q(d - 1);
      for (std::size_t j = 0; j + 1 < d; ++j) q[j] = std::max(p[j], pts[i][j]);
      limit.push_back(std::move(q));
    }
    // The 3-D sweep takes dominated points in its stride (O(m log m)); a deeper level's filter
    // costs O(m^2), less than the level itself, and cuts what it recurses on.
    if (d - 1 >= 4) limit = nondominated(std::move(limit));
    vol += box - (ref[d - 1] - p[d - 1]) * hv_counted(std::move(limit), ref_less);
  }
  return vol;
}

/// The hypervolume of points that all count (see counted_points).
double hv_counted(Points pts, const std::vector<double>& ref) {
  if (pts.empty()) return 0;
  switch (ref.size()) {
    case 1: {
      double lo = ref[0];
      for (const auto& p : pts) lo = std::min(lo, p[0]);
      return ref[0] - lo;
    }
    case 2: return hv2(std::move(pts), ref);
    case 3: return hv3(std::move(pts), ref);
    default: return wfg(std::move(pts), ref);
  }
}

}  // namespace

double hypervolume(std::span<const std::vector<double>> points, const std::vector<double>& reference) {
  Points pts = counted_points(points, reference);
  if (reference.size() >= 4) {
    pts = nondominated(std::move(pts));
    check_work(pts.size(), reference.size());
  }
  return hv_counted(std::move(pts), reference);
}

std::vector<double> hypervolume_contributions(std::span<const std::vector<double>> points,
                                              const std::vector<double>& reference) {
  std::vector<std::size_t> index;
  const Points pts = counted_points(points, reference, &index);
  std::vector<double> out(points.size(), 0.0);
  const std::size_t d = reference.size();
  // A point's box less the part that the others dominate too, which is the hypervolume of the
  // others clipped into its box (max(p, q) coordinatewise: WFG's limit set). All the others, not
  // only the front: a point that p dominates can still cover part of what p alone dominates
  // among the front, so that neighbours' rectangles (exact for a non-dominated set) overstate
  // p's loss in a set with dominated points, as MOTPE's are. Clipping is
  // monotone, so a limit set has no more non-dominated points than the whole set and the cap
  // checked once here holds for every call below.
  if (d >= 4) check_work(nondominated(pts).size(), d);
  for (std::size_t i = 0; i < pts.size(); ++i) {
    double box = 1;
    for (std::size_t j = 0; j < d; ++j) box *= reference[j] - pts[i][j];
    Points limit;
    for (std::size_t k = 0; k < pts.size(); ++k) {
      if (k == i) continue;
      std::vector<double> q(d);
      for (std::size_t j = 0; j < d; ++j) q[j] = std::max(pts[i][j], pts[k][j]);
      limit.push_back(std::move(q));
    }
    if (d >= 4) limit = nondominated(std::move(limit));
    out[index[i]] = std::max(0.0, box - hv_counted(std::move(limit), reference));
  }
  return out;
}

}  // namespace ranktune::search
