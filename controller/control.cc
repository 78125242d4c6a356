// The checks of live control requests: a request's hyperparameters against the space, and
// the count of added trials (controller/control.h).
#include "controller/control.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <sstream>
#include <variant>

namespace ranktune::controller {
namespace {

std::string names(const Space& space) {
  std::string out;
  for (const Param& p : space.params) out += (out.empty() ? "" : ", ") + p.name;
  return out;
}

std::string listed(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

std::string domain_text(const Domain& d) {
  if (d.is_listed()) {
    std::string out = "one of ";
    for (std::size_t i = 0; i < d.values.size(); ++i) out += (i ? ", " : "") + to_string(d.values[i]);
    return out;
  }
  const std::string lo = to_string(Value{d.low}), hi = to_string(Value{d.high});
  return d.kind == DomainKind::RandInt ? "an integer in [" + lo + ", " + hi + ")" : "in [" + lo + ", " + hi + "]";
}

bool in_domain(const Domain& d, const Value& v) {
  if (d.is_listed()) {
    return std::any_of(d.values.begin(), d.values.end(), [&](const Value& x) {
      if (std::holds_alternative<std::string>(x) || std::holds_alternative<std::string>(v)) return x == v;
      return to_double(x) == to_double(v);
    });
  }
  const double x = to_double(v);
  return d.kind == DomainKind::RandInt ? x >= d.low && x < d.high : x >= d.low && x <= d.high;
}

}  // namespace

const char* to_string(ControlRequest::Kind k) {
  switch (k) {
    case ControlRequest::Kind::Stop: return "stop";
    case ControlRequest::Kind::Set: return "set";
    case ControlRequest::Kind::Add: return "add";
    case ControlRequest::Kind::Pause: return "pause";
    case ControlRequest::Kind::Resume: return "resume";
    case ControlRequest::Kind::Budget: return "budget";
    case ControlRequest::Kind::StopExperiment: return "stop-experiment";
  }
  return "?";
}

std::string check_control_config(const Space& space, Config& config, bool complete, bool force) {
  if (config.empty() && !complete) return "no parameter to change; give name=value pairs";
  for (auto& [name, value] : config) {
    const Param* p = space.find(name);
    if (p == nullptr) return "'" + name + "' is not a parameter of the search space; valid: " + names(space);
    const ValueType want = p->domain.type();
    if (want == ValueType::Float && std::holds_alternative<std::int64_t>(value))
      value = static_cast<double>(std::get<std::int64_t>(value));
    const bool is_string = std::holds_alternative<std::string>(value);
    const bool ok_type = want == ValueType::String ? is_string
                         : want == ValueType::Int  ? std::holds_alternative<std::int64_t>(value)
                                                   : std::holds_alternative<double>(value);
    if (!ok_type)
      return "'" + name + "' takes " + (want == ValueType::String ? "a string" : want == ValueType::Int ? "an integer" : "a number") +
             " (got " + to_string(value) + ")";
    if (!force && !in_domain(p->domain, value))
      return "'" + name + "' = " + to_string(value) + " is outside its domain (" + domain_text(p->domain) +
             "); pass --force to use it anyway";
    // The mutation scope holds for ctl set as for PBT: a trial that ran keeps the others.
    if (!complete && !space.may_mutate(name))
      return "'" + name + "' is not in [scheduler] mutable (" + listed(space.mutable_params) +
             "): a trial keeps it for its whole life. Add a trial with the value instead (ranktune ctl add)";
  }
  if (complete) {
    // Parameters whose condition fails are left out, given or not; every active one is needed.
    drop_inactive(space, config);
    for (const Param& p : space.params)
      if (!config.contains(p.name) && (!p.conditional() || holds(p.when, config)))
        return "'" + p.name + "' is missing: a new trial needs every parameter (" + names(space) + ")" +
               (space.conditional() ? ", but those whose condition (when) fails" : "");
  }
  return "";
}

std::string check_set_conditions(const Space& space, const Config& current, const Config& change) {
  if (!space.conditional()) return "";
  Config will = current;
  for (const auto& [name, value] : change) will[name] = value;
  Config active = will;
  drop_inactive(space, active);
  for (const auto& [name, value] : change)
    if (!active.contains(name))
      return "'" + name + "' is inactive in this trial (its condition \"" + space.find(name)->when.text +
             "\" does not hold with these values): it takes no value";
  for (const Param& p : space.params) {
    if (!active.contains(p.name) && p.conditional() && holds(p.when, active))
      return "these values turn '" + p.name + "' on (" + p.when.text + "): give it a value too";
    // A trial's config only gains values: one that would lose a parameter is a new trial.
    if (current.contains(p.name) && !active.contains(p.name))
      return "these values turn '" + p.name + "' off (" + p.when.text +
             " no longer holds), which a trial cannot undo: add a trial with them instead (ranktune ctl add)";
  }
  return "";
}

std::string check_added_trials(std::int64_t n, std::int64_t added, std::int64_t expected) {
  if (n > kMaxAddCount)
    return "asks for " + std::to_string(n) + " trials; one request may add at most " + std::to_string(kMaxAddCount);
  if (n > kMaxAddedTrials - added)
    return "would bring the trials added by ranktune ctl to " + std::to_string(added + n) + ", beyond the " +
           std::to_string(kMaxAddedTrials) + " one experiment may take (" + std::to_string(added) +
           " so far): start a new experiment for a search that large";
  if (expected >= 0 && expected > std::numeric_limits<std::int64_t>::max() - n)
    return "would overflow the experiment's count of trials (" + std::to_string(expected) + ")";
  return "";
}

bool names_trial(ControlRequest::Kind kind) {
  return kind == ControlRequest::Kind::Stop || kind == ControlRequest::Kind::Set || kind == ControlRequest::Kind::Pause ||
         kind == ControlRequest::Kind::Resume;
}

namespace {
constexpr const char* kRulesTag = "stopping rules now: ";
}  // namespace

std::string budget_text(const BudgetRules& rules) {
  char time[40];
  std::snprintf(time, sizeof time, "%.17g", rules.time_budget_s);
  return std::string(kRulesTag) + "time_budget_s=" + time + " num_samples=" + std::to_string(rules.num_samples) +
         " max_t=" + std::to_string(rules.max_t);
}

std::optional<BudgetRules> parse_budget_text(const std::string& message) {
  const std::size_t at = message.rfind(kRulesTag);
  if (at == std::string::npos) return std::nullopt;
  std::istringstream in(message.substr(at + std::char_traits<char>::length(kRulesTag)));
  BudgetRules r;
  std::string word;
  int seen = 0;
  while (in >> word) {
    const std::size_t eq = word.find('=');
    if (eq == std::string::npos) break;
    const std::string key = word.substr(0, eq), value = word.substr(eq + 1);
    try {
      if (key == "time_budget_s") r.time_budget_s = std::stod(value), ++seen;
      else if (key == "num_samples") r.num_samples = std::stoll(value), ++seen;
      else if (key == "max_t") r.max_t = std::stoll(value), ++seen;
    } catch (const std::logic_error&) {
      return std::nullopt;
    }
  }
  if (seen != 3) return std::nullopt;
  return r;
}

}  // namespace ranktune::controller
