// The importance section of the report (report/importance.h).
#include "report/importance.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "sys/printable.h"

namespace ranktune::report {
namespace si = ranktune::analysis;
namespace {

/// A space from the values alone: numbers uniform over [min, max], strings listed.
search::Space space_from_values(const io::ResultsFile& file) {
  std::map<std::string, std::pair<double, double>> ranges;
  std::map<std::string, std::set<std::string>> words;
  for (const search::Trial& t : file.trials)
    for (const auto& [name, v] : t.config) {
      if (const auto* s = std::get_if<std::string>(&v)) {
        words[name].insert(*s);
        continue;
      }
      const double x = search::to_double(v);
      auto [it, fresh] = ranges.try_emplace(name, x, x);
      if (!fresh) it->second = {std::min(it->second.first, x), std::max(it->second.second, x)};
    }
  search::Space space;
  for (const auto& [name, range] : ranges)
    space.params.push_back({name, search::Domain{search::DomainKind::Uniform, range.first, range.second, 0, {}}});
  for (const auto& [name, set] : words) {
    search::Domain d{search::DomainKind::Choice, 0, 0, 0, {}};
    for (const std::string& w : set) d.values.emplace_back(w);
    space.params.push_back({name, d});
  }
  return space;
}

std::string percent(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%5.1f%%", 100 * share);
  return buf;
}

/// A share as "12.3%", no padding.
std::string percent_text(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * share);
  return buf;
}

/// "fANOVA over 60 trials (a forest of 64 trees)", "PED-ANOVA over 600 trials (what set
/// the top 10% apart)", or "no shares" when there were too few.
std::string method_line(const ImportanceReport& r) {
  const si::Importance& x = r.result;
  if (x.scores.empty()) return "no shares";
  char line[160];
  if (x.method == si::Method::PedAnova)
    std::snprintf(line, sizeof line, "PED-ANOVA over %zu trials: what set the top %.0f%% apart", x.trials,
                  100 * r.options.quantile);
  else
    std::snprintf(line, sizeof line, "fANOVA over %zu trials: a forest of %zu trees", x.trials, r.options.trees);
  return line;
}

}  // namespace

search::Space space_of(const io::ResultsFile& file, const RunConfig* config, std::string* note) {
  if (config && config->parsed) return config->space;
  if (note)
    *note = config ? "domains taken from the values (the stored config did not parse: " + config->error + ")"
                   : "domains taken from the values";
  return space_from_values(file);
}

std::optional<si::Method> parse_importance_method(const std::string& name) {
  if (name.empty() || name == "auto") return si::Method::Auto;
  if (name == "ped-anova" || name == "pedanova") return si::Method::PedAnova;
  if (name == "fanova") return si::Method::Fanova;
  return std::nullopt;
}

BudgetValues values_for_importance(const io::ResultsFile& file) {
  BudgetValues out;
  const auto& metrics = file.schema.metrics;
  const auto column = static_cast<std::size_t>(std::find(metrics.begin(), metrics.end(), file.meta.metric) - metrics.begin());
  // The most iterations each trial reported the metric at.
  std::map<search::TrialId, std::int64_t> reached;
  if (column < metrics.size())
    for (const io::ResultRow& row : file.results)
      if (column < row.values.size() && std::isfinite(row.values[column]))
        reached[row.trial] = std::max(reached[row.trial], row.iteration);
  std::vector<std::int64_t> depths;
  for (const search::Trial& t : file.trials)
    if (std::isfinite(t.best)) {
      const auto it = reached.find(t.id);
      depths.push_back(it == reached.end() ? 0 : it->second);
    }
  std::sort(depths.begin(), depths.end(), std::greater<>());
  const bool mixed = !depths.empty() && depths.front() != depths.back() && depths.back() > 0;
  if (!mixed) {
    for (const search::Trial& t : file.trials) {
      out.configs.push_back(t.config);
      out.values.push_back(t.best);
    }
    out.budget = depths.empty() || depths.front() == 0
                     ? "each trial's best value"
                     : "each trial's best value; every trial reported " + std::to_string(depths.front()) + " iteration" +
                           (depths.front() == 1 ? "" : "s");
    return out;
  }
  // Trials stopped at different budgets: one iteration count B for all, the most that at
  // least half of them reached, and each trial's best up to it.
  const std::int64_t b = depths[(depths.size() + 1) / 2 - 1];
  std::map<search::TrialId, double> best;
  const search::Mode mode = file.meta.mode;
  for (const io::ResultRow& row : file.results) {
    if (row.iteration > b || column >= row.values.size() || !std::isfinite(row.values[column])) continue;
    const auto [it, fresh] = best.try_emplace(row.trial, row.values[column]);
    if (!fresh && search::sign(mode) * row.values[column] > search::sign(mode) * it->second) it->second = row.values[column];
  }
  std::size_t left_out = 0;
  for (const search::Trial& t : file.trials) {
    if (!std::isfinite(t.best)) continue;
    const auto r = reached.find(t.id);
    const auto v = best.find(t.id);
    if (r == reached.end() || r->second < b || v == best.end()) {
      ++left_out;
      continue;
    }
    out.configs.push_back(t.config);
    out.values.push_back(v->second);
  }
  out.iteration = b;
  out.budget = "each trial's best up to iteration " + std::to_string(b) + ", the most that half the trials reached (" +
               "they stopped at iterations " + std::to_string(depths.back()) + " to " + std::to_string(depths.front()) +
               ", as under ASHA or HyperBand: budgets are not mixed)" +
               (left_out ? "; " + std::to_string(left_out) + " trial" + (left_out == 1 ? "" : "s") + " that stopped earlier left out" : "");
  return out;
}

ImportanceReport importance_of(const io::ResultsFile& file, const si::Options& options, const RunConfig* config) {
  ImportanceReport r;
  r.options = options;
  const search::Space space = space_of(file, config, &r.note);
  BudgetValues values = values_for_importance(file);
  r.budget = std::move(values.budget);
  r.result = si::evaluate(si::encode(space, values.configs, values.values, file.meta.mode), options);
  return r;
}

std::string noise_sentence(const ImportanceReport& r) {
  std::vector<std::string> noise;
  for (const auto& s : r.result.scores)
    if (s.below_noise) noise.push_back(s.name);
  if (noise.empty() || r.result.scores.empty()) return "";
  std::string names;
  for (std::size_t i = 0; i < noise.size(); ++i)
    names += (i == 0 ? "" : i + 1 == noise.size() ? " and " : ", ") + noise[i];
  const bool one = noise.size() == 1;
  return names + (one ? " is" : " are") + " indistinguishable from noise: " + (one ? "its interval reaches" : "their intervals reach") +
         " the share a shuffled copy of a parameter gets (" + percent_text(r.result.noise_floor) + ").";
}

std::string render_importance(const ImportanceReport& r, Format format) {
  const bool md = format == Format::Markdown;
  const si::Importance& x = r.result;
  std::string out = md ? "## Hyperparameter importance\n\n" : "Hyperparameter importance";
  out += (md ? "" : " (") + method_line(r) + (md ? "\n\n" : ")\n");
  auto said = [&](const std::string& label, const std::string& text) {
    if (!text.empty()) out += (md ? "" : "  ") + label + ": " + text + (md ? "\n\n" : "\n");
  };
  said("why", x.reason);
  said("values", r.budget);
  if (!x.scores.empty()) {
    std::size_t width = 4;
    for (const auto& s : x.scores) width = std::max(width, s.name.size());
    char level[16];
    std::snprintf(level, sizeof level, "%.0f%%", 100 * x.level);
    if (md) out += std::string("| hyperparameter | share | ") + level + " interval | |\n|---|---:|---|---|\n";
    for (const auto& s : x.scores) {
      const std::string interval = std::string("[") + percent_text(s.low) + ", " + percent_text(s.high) + "]";
      if (md) {
        out += "| " + s.name + " | " + percent(s.value) + " | " + interval + " | " + (s.below_noise ? "could be noise" : "") + " |\n";
        continue;
      }
      const auto bar = static_cast<std::size_t>(std::lround(40 * std::clamp(s.value, 0.0, 1.0)));
      out += "  " + s.name + std::string(width - s.name.size() + 2, ' ') + percent(s.value) + "  " + interval +
             std::string(16 > interval.size() ? 16 - interval.size() : 1, ' ') + std::string(bar, '#') +
             (s.below_noise ? std::string(bar ? " ~" : "~") + " could be noise" : "") + "\n";
    }
    if (md) out += "\n";
    const std::string noise = noise_sentence(r);
    said("noise floor", percent_text(x.noise_floor) + " (" + level + " intervals from " + std::to_string(x.resamples) +
                            " bootstrap resamples" + (noise.empty() ? "; every share stands above it)" : "). " + noise));
  }
  if (!r.note.empty()) out += (md ? "" : "  ") + ("note: " + r.note) + "\n";
  return out;
}

std::string importance_json(const ImportanceReport& r) {
  const si::Importance& x = r.result;
  // An array, so that the order (most important first) survives.
  nlohmann::json scores = nlohmann::json::array();
  for (const auto& s : x.scores)
    scores.push_back({{"name", s.name}, {"share", s.value}, {"low", s.low}, {"high", s.high}, {"below_noise", s.below_noise}});
  nlohmann::json doc = {{"method", si::to_string(x.method)},
                        {"trials", x.trials},
                        {"reason", x.reason},
                        {"noise_floor", x.noise_floor},
                        {"level", x.level},
                        {"resamples", x.resamples},
                        {"budget", r.budget},
                        {"scores", scores},
                        {"note", r.note}};
  if (x.method == si::Method::PedAnova) doc["quantile"] = r.options.quantile;
  else doc["trees"] = r.options.trees;
  return sys::printable_json(doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
}

std::string importance_title(const ImportanceReport& r) { return method_line(r); }

}  // namespace ranktune::report
