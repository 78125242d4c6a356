// Names of the core values and enums: to_string of values, value types, trial statuses,
// decisions, domain kinds and end reasons, and parse_trial_status (declared in their headers).
#include <array>
#include <cstdio>

#include "search/scheduler.h"
#include "search/space.h"
#include "search/trial.h"
#include "search/types.h"

namespace ranktune::search {

std::string to_string(const Value& v) {
  if (const auto* d = std::get_if<double>(&v)) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", *d);
    return buf;
  }
  if (const auto* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  return std::get<std::string>(v);
}

double to_double(const Value& v) {
  if (const auto* d = std::get_if<double>(&v)) return *d;
  if (const auto* i = std::get_if<std::int64_t>(&v)) return static_cast<double>(*i);
  return NAN;
}

const char* to_string(ValueType t) {
  switch (t) {
    case ValueType::Float: return "float";
    case ValueType::Int: return "int";
    case ValueType::String: return "string";
  }
  return "?";
}

namespace {
constexpr std::array<const char*, 5> kStatusNames = {"PENDING", "RUNNING", "PAUSED", "TERMINATED",
                                                     "ERROR"};
}

const char* to_string(TrialStatus s) { return kStatusNames[static_cast<std::size_t>(s)]; }

std::optional<TrialStatus> parse_trial_status(const std::string& s) {
  for (std::size_t i = 0; i < kStatusNames.size(); ++i) {
    if (s == kStatusNames[i]) return static_cast<TrialStatus>(i);
  }
  return std::nullopt;
}

const char* to_string(Decision d) {
  switch (d) {
    case Decision::Continue: return "continue";
    case Decision::Pause: return "pause";
    case Decision::Stop: return "stop";
    case Decision::Exploit: return "exploit";
  }
  return "?";
}

const char* to_string(DomainKind k) {
  switch (k) {
    case DomainKind::Uniform: return "uniform";
    case DomainKind::LogUniform: return "loguniform";
    case DomainKind::QUniform: return "quniform";
    case DomainKind::RandInt: return "randint";
    case DomainKind::Choice: return "choice";
    case DomainKind::Grid: return "grid";
  }
  return "?";
}

}  // namespace ranktune::search
