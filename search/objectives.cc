// The objectives of a multi-objective experiment and a result's Pareto point
// (search/objectives.h).
#include "search/objectives.h"

#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>

#include "search/saved_state.h"

namespace ranktune::search {

namespace {

double metric_or_nan(const Metrics& m, const std::string& name) {
  const auto it = m.find(name);
  return it == m.end() ? std::numeric_limits<double>::quiet_NaN() : it->second;
}

}  // namespace

void Objectives::check() const {
  if (metrics.empty()) throw std::invalid_argument("objectives: none given; name at least one metric");
  if (modes.size() != metrics.size())
    throw std::invalid_argument("objectives: " + std::to_string(metrics.size()) + " metrics and " +
                                std::to_string(modes.size()) + " modes; give one mode per metric");
  std::set<std::string> seen;
  for (const auto& name : metrics) {
    if (name.empty()) throw std::invalid_argument("objectives: an objective metric has an empty name");
    if (!seen.insert(name).second)
      throw std::invalid_argument("objectives: '" + name + "' is named twice; each objective is one metric");
  }
  for (const Constraint& c : constraints) {
    if (c.metric.empty()) throw std::invalid_argument("objectives: a constraint names no metric");
    if (!std::isfinite(c.bound))
      throw std::invalid_argument("objectives: the constraint on '" + c.metric + "' has a bound that is not finite");
  }
}

std::string Constraint::text() const { return metric + (at_most ? " <= " : " >= ") + to_string(Value{bound}); }

std::string Objectives::describe() const {
  std::string out;
  for (std::size_t i = 0; i < metrics.size(); ++i)
    out += (i ? ", " : "") + metrics[i] + " " + (i < modes.size() ? to_string(modes[i]) : "?");
  for (std::size_t i = 0; i < constraints.size(); ++i) out += (i ? ", " : "; ") + constraints[i].text();
  return out;
}

bool Objectives::any_reported(const Metrics& m) const {
  for (const auto& name : metrics)
    if (m.contains(name)) return true;
  return false;
}

ParetoPoint Objectives::point(const Metrics& m) const {
  std::vector<double> values, constraint_values;
  values.reserve(metrics.size());
  for (const auto& name : metrics) values.push_back(metric_or_nan(m, name));
  constraint_values.reserve(constraints.size());
  // A missing or NaN constrained metric makes a NaN constraint value: failed (pareto.h). An
  // infinite one is a violation of infinite size on one side and holds on the other.
  for (const Constraint& c : constraints) constraint_values.push_back(c.value(metric_or_nan(m, c.metric)));
  return make_pareto_point(values, modes, constraint_values);
}

void write_objectives(StateWriter& w, const Objectives& o) {
  w.field("objectives").integer(static_cast<std::int64_t>(o.metrics.size())).line();
  for (std::size_t i = 0; i < o.metrics.size(); ++i) w.text(o.metrics[i]).integer(o.modes[i] == Mode::Max ? 1 : 0).line();
  w.field("constraints").integer(static_cast<std::int64_t>(o.constraints.size())).line();
  for (const Constraint& c : o.constraints) w.text(c.metric).integer(c.at_most ? 1 : 0).number(c.bound).line();
}

void read_objectives(StateReader& r, const Objectives& expected) {
  Objectives saved;
  for (std::size_t n = r.count_field("objectives"); n > 0; --n) {
    saved.metrics.push_back(r.text("an objective's metric"));
    saved.modes.push_back(r.flag("an objective's mode") ? Mode::Max : Mode::Min);
  }
  for (std::size_t n = r.count_field("constraints"); n > 0; --n) {
    Constraint c;
    c.metric = r.text("a constraint's metric");
    c.at_most = r.flag("a constraint's direction");
    c.bound = r.number("a constraint's bound");
    saved.constraints.push_back(std::move(c));
  }
  const auto said = [](const Objectives& o) { return o.metrics.empty() ? std::string("a single objective") : o.describe(); };
  r.require(saved == expected,
            "saved with other objectives (" + said(saved) + "; this experiment has " + said(expected) + ")");
}

StateWriter& write_pareto_point(StateWriter& w, const ParetoPoint& p) {
  w.number(p.violation);
  for (const double v : p.objectives) w.number(v);
  return w;
}

ParetoPoint read_pareto_point(StateReader& r, std::size_t count) {
  ParetoPoint p;
  p.violation = r.number("a point's violation");
  r.require(p.violation >= 0, "a point's violation must be >= 0 (got " + std::to_string(p.violation) + ")");
  for (std::size_t i = 0; i < count; ++i) p.objectives.push_back(r.number("a point's objective"));
  return p;
}

}  // namespace ranktune::search
