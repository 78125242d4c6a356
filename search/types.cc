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

namespace {
constexpr std::array<const char*, 9> kEndNames = {"", "max_t", "stopped", "done", "budget", "target", "user", "error",
                                                  "unknown"};
}

const char* to_string(TrialEnd e) { return kEndNames[static_cast<std::size_t>(e)]; }

std::optional<TrialEnd> parse_trial_end(const std::string& s) {
  for (std::size_t i = 0; i < kEndNames.size(); ++i)
    if (s == kEndNames[i]) return static_cast<TrialEnd>(i);
  return std::nullopt;
}

const char* describe(TrialEnd e) {
  switch (e) {
    case TrialEnd::None: return "not ended";
    case TrialEnd::MaxT: return "ran max_t iterations";
    case TrialEnd::Stopped: return "stopped by the scheduler before max_t";
    case TrialEnd::Done: return "its program ended before max_t";
    case TrialEnd::Budget: return "cut when the experiment's time budget ran out";
    case TrialEnd::Target: return "the experiment reached its target";
    case TrialEnd::User: return "stopped by ranktune ctl stop";
    case TrialEnd::Error: return "failed";
    case TrialEnd::Unknown: return "not recorded (a file from before end reasons)";
  }
  return "?";
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
