// The objectives of a multi-objective experiment and a result's Pareto point
// (search/objectives.h).
#include "search/objectives.h"

#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>

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

std::string Objectives::describe() const {
  std::string out;
  for (std::size_t i = 0; i < metrics.size(); ++i)
    out += (i ? ", " : "") + metrics[i] + " " + (i < modes.size() ? to_string(modes[i]) : "?");
  for (std::size_t i = 0; i < constraints.size(); ++i) {
    const Constraint& c = constraints[i];
    out += (i ? ", " : "; ") + c.metric + (c.at_most ? " <= " : " >= ") + to_string(Value{c.bound});
  }
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

}  // namespace ranktune::search
