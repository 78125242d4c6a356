// The Pareto front of a multi-objective results file for the reports (report/pareto_front.h).
#include "report/pareto_front.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <stdexcept>

#include "report/grid.h"
#include "report/leaderboard.h"
#include "search/hypervolume.h"

namespace ranktune::report {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The values of the objectives (or constrained metrics) in `m`, NaN where it lacks one.
std::vector<double> values_of(const search::Metrics& m, const std::vector<std::string>& names) {
  std::vector<double> out;
  for (const std::string& name : names) {
    const auto it = m.find(name);
    out.push_back(it == m.end() ? kNaN : it->second);
  }
  return out;
}

// `a` is no worse than `b` in every coordinate (minimization): `b` adds nothing beside `a`.
bool weakly_dominates(const std::vector<double>& a, const std::vector<double>& b) {
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i] > b[i]) return false;
  return true;
}

}  // namespace

std::map<search::TrialId, search::Metrics> last_results(const io::ResultsFile& file) {
  // Rows are appended as results arrive: a trial's last row of its latest attempt is its last result.
  std::map<search::TrialId, const io::ResultRow*> last;
  for (const io::ResultRow& r : file.results) {
    const io::ResultRow*& at = last[r.trial];
    if (at == nullptr || r.attempt >= at->attempt) at = &r;
  }
  std::map<search::TrialId, search::Metrics> out;
  for (const auto& [id, row] : last) {
    search::Metrics& m = out[id];
    for (std::size_t c = 0; c < row->values.size() && c < file.schema.metrics.size(); ++c)
      if (!std::isnan(row->values[c])) m[file.schema.metrics[c]] = row->values[c];
  }
  return out;
}

std::vector<double> default_reference(std::span<const std::vector<double>> points) {
  if (points.empty()) return {};
  const std::size_t d = points.front().size();
  std::vector<double> worst(d, -std::numeric_limits<double>::infinity()), best(d, std::numeric_limits<double>::infinity());
  for (const std::vector<double>& p : points) {
    if (p.size() != d)
      throw std::invalid_argument("reference point: a point of " + std::to_string(p.size()) + " objectives among points of " +
                                  std::to_string(d));
    for (std::size_t i = 0; i < d; ++i) {
      worst[i] = std::max(worst[i], p[i]);
      best[i] = std::min(best[i], p[i]);
    }
  }
  std::vector<double> ref(d);
  for (std::size_t i = 0; i < d; ++i) {
    const double range = worst[i] - best[i];
    ref[i] = worst[i] + (range > 0 ? 0.1 * range : worst[i] != 0 ? 0.1 * std::abs(worst[i]) : 1.0);
  }
  return ref;
}

std::vector<std::pair<double, double>> hypervolume_history(std::vector<TimedPoint> points,
                                                           const std::vector<double>& reference) {
  std::stable_sort(points.begin(), points.end(), [](const TimedPoint& a, const TimedPoint& b) { return a.time < b.time; });
  std::vector<std::vector<double>> front;
  std::vector<std::pair<double, double>> out;
  for (TimedPoint& tp : points) {
    const std::vector<double>& p = tp.point;
    if (p.size() != reference.size())
      throw std::invalid_argument("hypervolume history: a point of " + std::to_string(p.size()) +
                                  " objectives against a reference of " + std::to_string(reference.size()));
    bool counts = true;
    for (std::size_t i = 0; i < p.size(); ++i) counts = counts && std::isfinite(p[i]) && p[i] < reference[i];
    if (!counts) continue;
    if (std::any_of(front.begin(), front.end(), [&](const std::vector<double>& q) { return weakly_dominates(q, p); }))
      continue;
    std::erase_if(front, [&](const std::vector<double>& q) { return weakly_dominates(p, q); });
    front.push_back(std::move(tp.point));
    out.emplace_back(tp.time, search::hypervolume(front, reference));
  }
  return out;
}

std::string ParetoView::objectives_text() const {
  std::string out;
  for (std::size_t i = 0; i < objectives.metrics.size(); ++i)
    out += (i ? ", " : "") + objectives.metrics[i] + " (" + search::to_string(objectives.modes[i]) + ")";
  return out;
}

std::string ParetoView::constraints_text() const {
  return join(objectives.constraints, ", ", [](const search::Constraint& c) {
    return c.metric + (c.at_most ? " <= " : " >= ") + value_text(c.bound);
  });
}

std::string ParetoView::reference_point_text() const {
  if (reference.empty()) return "none";
  std::string point = "(";
  for (std::size_t i = 0; i < reference.size(); ++i)
    point += (i ? ", " : "") + objectives.metrics[i] + " " + value_text(reference[i]);
  return point + ")";
}

std::string ParetoView::reference_text() const {
  if (reference.empty()) return "none: no finished trial has a feasible point";
  const std::string point = reference_point_text();
  if (reference_given) return point + ", as given (--reference)";
  const std::size_t n = static_cast<std::size_t>(std::count_if(
      entries.begin(), entries.begin() + static_cast<std::ptrdiff_t>(ranked), [](const ParetoEntry& e) { return e.feasible(); }));
  return point + ": the worst value of each objective among the " + std::to_string(n) + " finished trials with a feasible " +
         "point, moved a tenth of its range away from the front (--reference sets it)";
}

std::vector<std::pair<double, double>> ParetoView::history() const {
  if (reference.empty()) return {};
  std::vector<TimedPoint> points;
  for (std::size_t i = 0; i < ranked; ++i)
    if (entries[i].feasible() && std::isfinite(entries[i].trial->end_time))
      points.push_back({entries[i].trial->end_time, entries[i].point.objectives});
  return hypervolume_history(std::move(points), search::to_minimization(reference, objectives.modes));
}

std::optional<ParetoView> pareto_view(const io::ResultsFile& file, const search::Objectives& objectives,
                                      const std::vector<double>& reference) {
  if (!objectives.multi()) return std::nullopt;
  if (!reference.empty()) {
    if (reference.size() != objectives.metrics.size())
      throw std::invalid_argument("--reference: " + std::to_string(reference.size()) + (reference.size() == 1 ? " value" : " values") + " for " +
                                  std::to_string(objectives.metrics.size()) + " objectives; give one per objective (" +
                                  join(objectives.metrics, ", ", as_is) + "), in that order");
    for (const double r : reference)
      if (!std::isfinite(r)) throw std::invalid_argument("--reference: every value must be a finite number");
  }
  ParetoView v;
  v.objectives = objectives;
  std::vector<std::string> constrained;
  for (const search::Constraint& c : objectives.constraints) constrained.push_back(c.metric);
  const auto last = last_results(file);
  const search::Metrics none;
  std::vector<ParetoEntry> ranked, others;
  for (const search::Trial& t : file.trials) {
    const auto it = last.find(t.id);
    const search::Metrics& m = it == last.end() ? none : it->second;
    ParetoEntry e{&t, values_of(m, objectives.metrics), values_of(m, constrained), objectives.point(m), t.pareto_rank, 0};
    (e.rank >= 0 ? ranked : others).push_back(std::move(e));
  }
  // The crowding distance of each trial within its front (the file's ranks).
  std::vector<search::ParetoPoint> points;
  std::map<int, std::vector<std::size_t>> fronts;
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    points.push_back(ranked[i].point);
    fronts[ranked[i].rank].push_back(i);
  }
  for (const auto& [rank, members] : fronts) {
    const std::vector<double> d = search::crowding_distance(points, members);
    for (std::size_t k = 0; k < members.size(); ++k) ranked[members[k]].crowding = d[k];
  }
  std::sort(ranked.begin(), ranked.end(), [](const ParetoEntry& a, const ParetoEntry& b) {
    if (a.rank != b.rank) return a.rank < b.rank;
    if (a.crowding != b.crowding) return a.crowding > b.crowding;
    return a.trial->id < b.trial->id;
  });
  std::map<search::TrialId, std::size_t> place;
  const auto order = best_first(file);
  for (std::size_t i = 0; i < order.size(); ++i) place[order[i]->id] = i;
  std::sort(others.begin(), others.end(),
            [&](const ParetoEntry& a, const ParetoEntry& b) { return place[a.trial->id] < place[b.trial->id]; });
  v.ranked = ranked.size();
  v.front = static_cast<std::size_t>(
      std::count_if(ranked.begin(), ranked.end(), [](const ParetoEntry& e) { return e.rank == 0; }));
  v.entries = std::move(ranked);
  v.entries.insert(v.entries.end(), std::make_move_iterator(others.begin()), std::make_move_iterator(others.end()));

  std::vector<std::vector<double>> feasible, front;
  for (std::size_t i = 0; i < v.ranked; ++i) {
    if (!v.entries[i].feasible()) continue;
    feasible.push_back(v.entries[i].point.objectives);
    if (i < v.front) front.push_back(v.entries[i].point.objectives);
  }
  std::vector<double> ref_min;
  if (!reference.empty()) {
    v.reference = reference;
    v.reference_given = true;
    ref_min = search::to_minimization(reference, objectives.modes);
  } else if (!feasible.empty()) {
    ref_min = default_reference(feasible);
    v.reference = search::to_minimization(ref_min, objectives.modes);  // negation is its own inverse
  }
  if (ref_min.empty()) {
    v.hypervolume = kNaN;
    v.hypervolume_note = "no finished trial has a feasible point";
  } else {
    try {
      v.hypervolume = search::hypervolume(front, ref_min);
    } catch (const std::invalid_argument& e) {
      v.hypervolume = kNaN;
      v.hypervolume_note = e.what();
    }
  }
  return v;
}

std::vector<double> parse_reference(const std::string& text) {
  std::vector<double> out;
  std::size_t at = 0;
  while (true) {
    const std::size_t comma = text.find(',', at);
    std::string item = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    char* end = nullptr;
    const double v = item.empty() ? kNaN : std::strtod(item.c_str(), &end);
    if (item.empty() || *end != '\0' || !std::isfinite(v))
      throw std::invalid_argument("--reference: '" + one_line(item) + "' is not a finite number; give one number per " +
                                  "objective, in the order of [experiment] metric, comma-separated (--reference 1.1,5.3)");
    out.push_back(v);
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

}  // namespace ranktune::report
