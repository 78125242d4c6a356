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

}  // namespace

search::Space space_of(const io::ResultsFile& file, const RunConfig* config, std::string* note) {
  if (config && config->parsed) return config->space;
  if (note)
    *note = config ? "domains taken from the values (the stored config did not parse: " + config->error + ")"
                   : "domains taken from the values";
  return space_from_values(file);
}

std::optional<si::Method> parse_importance_method(const std::string& name) {
  if (name == "ped-anova" || name == "pedanova") return si::Method::PedAnova;
  if (name == "fanova") return si::Method::Fanova;
  return std::nullopt;
}

ImportanceReport importance_of(const io::ResultsFile& file, const si::Options& options, const RunConfig* config) {
  ImportanceReport r;
  r.options = options;
  const search::Space space = space_of(file, config, &r.note);
  std::vector<search::Config> configs;
  std::vector<double> values;
  for (const search::Trial& t : file.trials) {
    configs.push_back(t.config);
    values.push_back(t.best);
  }
  const si::Observations obs = si::encode(space, configs, values, file.meta.mode);
  r.trials = obs.loss.size();
  r.scores = si::evaluate(obs, options);
  if (r.trials < 3) {
    r.note += std::string(r.note.empty() ? "" : "; ") + "fewer than 3 trials with a value: equal shares";
  } else if (options.method == si::Method::PedAnova &&
             static_cast<double>(r.trials) * options.quantile < 5) {
    r.note += std::string(r.note.empty() ? "" : "; ") + "under 5 trials in the top quantile: the shares are noisy";
  }
  return r;
}

std::string render_importance(const ImportanceReport& r, Format format) {
  const bool md = format == Format::Markdown;
  std::string out = md ? "## Hyperparameter importance\n\n" : "Hyperparameter importance";
  char head[160];
  if (r.options.method == si::Method::PedAnova) {
    std::snprintf(head, sizeof head, "%sPED-ANOVA: what set the top %.0f%% of %zu trials apart%s\n", md ? "" : " (",
                  100 * r.options.quantile, r.trials, md ? "\n" : ")");
  } else {
    std::snprintf(head, sizeof head, "%sfANOVA over a forest of %zu trees, %zu trials%s\n", md ? "" : " (", r.options.trees,
                  r.trials, md ? "\n" : ")");
  }
  out += head;
  std::size_t width = 4;
  for (const auto& s : r.scores) width = std::max(width, s.name.size());
  if (md) out += "| hyperparameter | share |\n|---|---:|\n";
  for (const auto& s : r.scores) {
    if (md) {
      out += "| " + s.name + " | " + percent(s.value) + " |\n";
      continue;
    }
    const auto bar = static_cast<std::size_t>(std::lround(40 * std::clamp(s.value, 0.0, 1.0)));
    out += "  " + s.name + std::string(width - s.name.size() + 2, ' ') + percent(s.value) + "  " + std::string(bar, '#') + "\n";
  }
  if (!r.note.empty()) out += (md ? "\n" : "  ") + ("note: " + r.note) + "\n";
  return out;
}

std::string importance_json(const ImportanceReport& r) {
  // An array, so that the order (most important first) survives.
  nlohmann::json scores = nlohmann::json::array();
  for (const auto& s : r.scores) scores.push_back({{"name", s.name}, {"share", s.value}});
  nlohmann::json doc = {{"method", si::to_string(r.options.method)},
                        {"trials", r.trials},
                        {"scores", scores},
                        {"note", r.note}};
  if (r.options.method == si::Method::PedAnova) doc["quantile"] = r.options.quantile;
  else doc["trees"] = r.options.trees;
  return sys::printable_json(doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace ranktune::report
