// Pipeline sensitivity tables (report/sensitivity.h).
#include "report/sensitivity.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

namespace ranktune::report {
namespace {

// The manifest's "sensitivity" object, or null for an evaluation outside any group (and for
// a manifest that is not JSON: an evaluation recorded by something else is just not grouped).
nlohmann::json sensitivity_of(const io::Evaluation& e) {
  const nlohmann::json m = nlohmann::json::parse(e.manifest, nullptr, false);
  if (!m.is_object() || !m.contains("sensitivity") || !m["sensitivity"].is_object()) return nullptr;
  const nlohmann::json& s = m["sensitivity"];
  if (!s.contains("group") || !s["group"].is_string() || !s.contains("index") || !s["index"].is_number_integer())
    return nullptr;
  return s;
}

nlohmann::json pipeline_of(const io::Evaluation& e) {
  const nlohmann::json m = nlohmann::json::parse(e.manifest, nullptr, false);
  if (m.is_object() && m.contains("pipeline") && m["pipeline"].is_object()) return m["pipeline"];
  return nlohmann::json::object();
}

std::string text_of(const nlohmann::json& j, const char* key, const std::string& fallback) {
  if (!j.contains(key)) return fallback;
  if (j[key].is_string()) return j[key].get<std::string>();
  if (j[key].is_boolean()) return j[key].get<bool>() ? "yes" : "no";
  return fallback;
}

std::string fixed(double v, int digits, bool sign = false) {
  if (!std::isfinite(v)) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, sign ? "%+.*f" : "%.*f", digits, v);
  // A change too small to show is no change: "+0.0000", never "-0.0000".
  if (sign && buf[0] == '-' && std::strspn(buf + 1, "0.") == std::strlen(buf + 1)) buf[0] = '+';
  return buf;
}

bool is_accuracy(const std::string& metric) {
  const std::string tail = "accuracy";
  return metric.size() >= tail.size() && metric.compare(metric.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

std::vector<const io::Evaluation*> newest_sensitivity_group(const std::vector<io::Evaluation>& evaluations) {
  std::vector<const io::Evaluation*> group;
  if (evaluations.empty()) return group;
  const nlohmann::json newest = sensitivity_of(evaluations.back());
  if (newest.is_null()) return group;
  const std::string id = newest["group"].get<std::string>();
  std::vector<std::pair<std::int64_t, const io::Evaluation*>> found;
  for (const io::Evaluation& e : evaluations)
    if (const nlohmann::json s = sensitivity_of(e); !s.is_null() && s["group"].get<std::string>() == id)
      found.emplace_back(s["index"].get<std::int64_t>(), &e);
  if (found.size() < 2) return group;
  std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [index, e] : found) group.push_back(e);
  return group;
}

std::optional<Grid> sensitivity_grid(const std::vector<const io::Evaluation*>& group) {
  if (group.empty()) return std::nullopt;
  using Key = std::pair<search::TrialId, std::int64_t>;
  std::vector<std::string> metrics;
  std::vector<Key> keys;
  // [evaluation][trial, iteration][metric]
  std::vector<std::map<Key, std::map<std::string, double>>> values(group.size());
  for (std::size_t i = 0; i < group.size(); ++i) {
    for (const io::EvalMetricRow& m : group[i]->metrics) {
      if (std::find(metrics.begin(), metrics.end(), m.metric) == metrics.end()) metrics.push_back(m.metric);
      const Key k{m.trial, m.iteration};
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
      values[i][k][m.metric] = m.value;
    }
  }
  // The reference is the group's first pipeline (index 0), when it was recorded.
  const bool has_reference = sensitivity_of(*group.front())["index"].get<std::int64_t>() == 0;
  Grid g;
  g.head = {"trial_id", "iteration", "pipeline", "normalize", "input_dtype"};
  g.head.insert(g.head.end(), metrics.begin(), metrics.end());
  for (const std::string& m : metrics) g.head.push_back("Δ " + m + (is_accuracy(m) ? " (pp)" : ""));
  g.numeric = {true, true, false, false, false};
  g.numeric.resize(g.head.size(), true);
  for (const Key& k : keys) {
    for (std::size_t i = 0; i < group.size(); ++i) {
      if (!values[i].contains(k)) continue;
      const nlohmann::json p = pipeline_of(*group[i]);
      std::vector<std::string>& row = g.body.emplace_back();
      row = {std::to_string(k.first), std::to_string(k.second), text_of(p, "name", "?"), text_of(p, "normalize", ""),
             text_of(p, "input_dtype", "")};
      const auto& mine = values[i][k];
      for (const std::string& m : metrics) row.push_back(mine.contains(m) ? fixed(mine.at(m), 4) : "");
      for (const std::string& m : metrics) {
        const bool known = has_reference && values[0].contains(k) && values[0][k].contains(m) && mine.contains(m);
        if (!known) {
          row.emplace_back();
          continue;
        }
        const double d = mine.at(m) - values[0][k][m];
        row.push_back(is_accuracy(m) ? fixed(100 * d, 2, true) : fixed(d, 4, true));
      }
    }
  }
  return g;
}

}  // namespace ranktune::report
