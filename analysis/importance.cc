// Hyperparameter importance: configs encoded as coordinates, the method the data supports,
// and the methods with their uncertainty behind one call (analysis/importance.h).
#include "analysis/importance.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "analysis/bootstrap.h"
#include "analysis/fanova.h"
#include "analysis/ped_anova.h"

namespace ranktune::analysis {
namespace {

Feature feature_of(const Param& p) {
  Feature f;
  f.name = p.name;
  const Domain& d = p.domain;
  switch (d.kind) {
    case DomainKind::Choice:
    case DomainKind::Grid:
      f.categories = d.values.size();
      break;
    case DomainKind::LogUniform:
      f.low = std::log(d.low);
      f.high = std::log(d.high);
      break;
    case DomainKind::RandInt:  // integers in [low, high)
      f.low = d.low;
      f.high = d.high - 1;
      f.steps = static_cast<std::size_t>(std::max(0.0, d.high - d.low));
      break;
    case DomainKind::QUniform:
      f.low = d.low;
      f.high = d.high;
      f.steps = static_cast<std::size_t>(std::floor((d.high - d.low) / d.q + 1e-9)) + 1;
      break;
    case DomainKind::Uniform:
      f.low = d.low;
      f.high = d.high;
      break;
  }
  return f;
}

/// The coordinate of `v` on `p`'s feature `f`, or NaN when `v` is not one of its values.
double coordinate(const Param& p, const Feature& f, const Value& v) {
  if (f.categories) {
    const auto& values = p.domain.values;
    const auto it = std::find(values.begin(), values.end(), v);
    // A number may come back as an integer or a double: compare as numbers too.
    if (it == values.end()) {
      const double x = to_double(v);
      for (std::size_t k = 0; k < values.size(); ++k)
        if (!std::isnan(x) && to_double(values[k]) == x) return static_cast<double>(k) + 0.5;
      return std::nan("");
    }
    return static_cast<double>(it - values.begin()) + 0.5;
  }
  double x = to_double(v);
  if (std::isnan(x)) return x;
  if (p.domain.kind == DomainKind::LogUniform) x = x > 0 ? std::log(x) : f.low;
  return std::clamp(x, std::min(f.low, f.high), std::max(f.low, f.high));
}

}  // namespace

const char* to_string(Method m) {
  switch (m) {
    case Method::Auto: return "auto";
    case Method::PedAnova: return "ped-anova";
    case Method::Fanova: return "fanova";
  }
  return "?";
}

Observations encode(const Space& space, const std::vector<Config>& configs, const std::vector<double>& values,
                    Mode mode) {
  Observations obs;
  for (const Param& p : space.params) obs.features.push_back(feature_of(p));
  for (std::size_t i = 0; i < configs.size() && i < values.size(); ++i) {
    if (std::isnan(values[i]) || std::isinf(values[i])) continue;
    std::vector<double> row;
    row.reserve(space.params.size());
    for (std::size_t j = 0; j < space.params.size(); ++j) {
      const auto it = configs[i].find(space.params[j].name);
      const double x = it == configs[i].end() ? std::nan("") : coordinate(space.params[j], obs.features[j], it->second);
      if (!std::isfinite(x)) break;
      row.push_back(x);
    }
    if (row.size() != space.params.size()) continue;
    obs.rows.push_back(std::move(row));
    obs.loss.push_back(-sign(mode) * values[i]);
  }
  return obs;
}

Method choose_method(std::size_t trials, double quantile, std::string* reason) {
  const auto top = static_cast<std::size_t>(std::ceil(quantile * static_cast<double>(trials)));
  const bool ped = top >= kPedAnovaMinTop;
  if (reason) {
    const auto pct = std::to_string(static_cast<int>(std::lround(100 * quantile)));
    *reason = ped ? "PED-ANOVA: its top " + pct + "% holds " + std::to_string(top) + " trials, at least the " +
                        std::to_string(kPedAnovaMinTop) + " it needs to rank as well as fANOVA, at a fraction of the cost"
                  : "fANOVA: PED-ANOVA's top " + pct + "% would hold " + std::to_string(top) + " trials, under the " +
                        std::to_string(kPedAnovaMinTop) + " it needs; fANOVA uses all " + std::to_string(trials);
  }
  return ped ? Method::PedAnova : Method::Fanova;
}

std::vector<double> shares(const Observations& obs, Method method, const Options& options) {
  return method == Method::PedAnova ? ped_anova(obs, options.quantile) : fanova(obs, options.trees, options.seed);
}

Importance evaluate(const Observations& obs, const Options& options) {
  Importance r;
  r.trials = obs.loss.size();
  r.level = options.level;
  std::size_t live = 0;
  for (const Feature& f : obs.features) live += !f.constant();
  if (options.method == Method::Auto) {
    r.method = choose_method(r.trials, options.quantile, &r.reason);
  } else {
    r.method = options.method;
    r.reason = std::string(r.method == Method::PedAnova ? "PED-ANOVA" : "fANOVA") + ": asked for";
  }
  if (r.trials < kMinTrials) {
    r.reason = std::to_string(r.trials) + " trial" + (r.trials == 1 ? "" : "s") + " with a value, under the " +
               std::to_string(kMinTrials) + " any method needs to tell an effect from chance: no shares";
    return r;
  }
  if (live == 0) {
    r.reason = "no hyperparameter varies: no shares";
    return r;
  }
  const std::vector<double> point = shares(obs, r.method, options);
  const Uncertainty u = bootstrap(obs, point, r.method, options);
  r.resamples = options.resamples;
  r.noise_floor = u.noise_floor;
  for (std::size_t f = 0; f < obs.features.size(); ++f)
    r.scores.push_back({obs.features[f].name, point[f], u.low[f], u.high[f],
                        obs.features[f].constant() || u.low[f] <= u.noise_floor});
  std::stable_sort(r.scores.begin(), r.scores.end(), [](const Score& a, const Score& b) { return a.value > b.value; });
  return r;
}

}  // namespace ranktune::analysis
