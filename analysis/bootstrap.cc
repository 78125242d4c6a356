// Bootstrap intervals of importance shares and the permutation noise floor
// (analysis/bootstrap.h).
#include "analysis/bootstrap.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>

#include "analysis/fanova.h"
#include "analysis/null_importance.h"
#include "analysis/ped_anova.h"

namespace ranktune::analysis {
namespace {

/// Streams apart from the forest's index_rng(seed, tree): resample b draws from
/// index_rng(seed ^ kStream, b).
constexpr std::uint64_t kStream = 0x9e3779b97f4a7c15ULL;
/// ... and fANOVA's shuffled copies on the full data from index_rng(seed ^ kNullStream, 0).
constexpr std::uint64_t kNullStream = 0xc2b2ae3d27d4eb4fULL;

/// fANOVA's trees per resample when Options leave it to us: up to 8 while n is small and a
/// tree costs little, down to 2 from n = 1,000 (forests of few trees vary more, which
/// widens the intervals: conservative).
constexpr std::size_t kTreeRows = 2000;

double mean_of(const std::vector<double>& v) {
  return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

/// The level's quantiles of `values`, moved by `centre` - their mean.
std::pair<double, double> spread_around(const std::vector<double>& values, double centre, double level) {
  const double m = mean_of(values);
  return {centre + quantile(values, (1 - level) / 2) - m, centre + quantile(values, (1 + level) / 2) - m};
}

std::vector<std::size_t> bootstrap_sample(std::size_t n, Rng& rng) {
  std::uniform_int_distribution<std::size_t> pick(0, n - 1);
  std::vector<std::size_t> sample(n);
  for (std::size_t& s : sample) s = pick(rng);
  return sample;
}

/// Adds a small forest's share of each of `features` to `out[j]`: its trees' variance shares
/// (tree_variance_shares) summed, over the real parameters' (the first `d`) total, as
/// fanova() computes its own. Nothing when every tree is constant.
void add_forest(const std::vector<std::vector<double>>& trees, std::size_t d, const std::vector<std::size_t>& features,
                std::vector<std::vector<double>>& out) {
  double real = 0;
  std::vector<double> sum(features.size(), 0.0);
  for (const std::vector<double>& t : trees) {
    real += std::accumulate(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(d), 0.0);
    for (std::size_t j = 0; j < features.size(); ++j) sum[j] += t[features[j]];
  }
  if (!(real > 0)) return;
  for (std::size_t j = 0; j < features.size(); ++j) out[j].push_back(sum[j] / real);
}

/// fANOVA's noise floor: forests grown as fanova() grows its own (each tree on a bootstrap
/// of all the trials), each beside a shuffled copy of one parameter in turn; the level's
/// upper quantile of the copy's share. A forest of few trees gives a copy a large share now
/// and then, which the full forest averages away: each has a quarter of the full forest's
/// trees up to 500 trials, fewer above as trees get dearer (at least k), and there are
/// R / 5 of them (at least one per parameter).
double forest_noise_floor(const Observations& obs, const std::vector<std::size_t>& live, const Options& options, std::size_t k) {
  const std::size_t d = obs.features.size();
  const std::size_t groups = std::max<std::size_t>(options.resamples / 5, live.size());
  k = std::max(k, std::min(options.trees / 4, 4 * kTreeRows / obs.loss.size()));
  std::vector<std::vector<double>> null(1);
  for (std::size_t g = 0; g < groups; ++g) {
    Rng rng = index_rng(options.seed ^ kNullStream, g);
    const Observations shadowed = with_shadows(obs, {}, {live[g % live.size()]}, rng);
    add_forest(fanova_tree_shares(shadowed, k, rng()), d, {d}, null);
  }
  return null[0].empty() ? 0.0 : quantile(null[0], (1 + options.level) / 2);
}

}  // namespace

double quantile(std::vector<double> values, double q) {
  if (values.empty()) return std::nan("");
  std::sort(values.begin(), values.end());
  const double at = std::clamp(q, 0.0, 1.0) * static_cast<double>(values.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(at));
  const std::size_t above = std::min(below + 1, values.size() - 1);
  return values[below] + (at - static_cast<double>(below)) * (values[above] - values[below]);
}

Uncertainty bootstrap(const Observations& obs, const std::vector<double>& point, Method method, const Options& options) {
  const std::size_t d = obs.features.size(), n = obs.loss.size(), rounds = options.resamples;
  Uncertainty u;
  u.low = point;
  u.high = point;
  std::vector<std::size_t> live;
  for (std::size_t f = 0; f < d; ++f)
    if (!obs.features[f].constant()) live.push_back(f);
  if (rounds == 0 || n == 0 || live.empty()) return u;

  std::vector<std::vector<double>> resampled(d);  // PED-ANOVA: [feature][resample], its share
  std::vector<double> nulls;                      // PED-ANOVA: the shuffled copies' shares
  std::vector<std::vector<double>> forests(live.size());  // fANOVA: [live feature][resample], its share
  const std::size_t k = options.trees_per_resample ? std::max<std::size_t>(options.trees_per_resample, 2)
                                                   : std::clamp<std::size_t>(kTreeRows / n, 2, 8);
  // PED-ANOVA works on grid cells: a resample is a count per trial, a shuffled copy's top
  // set is as many trials drawn without replacement, and nothing is copied.
  const bool ped = method == Method::PedAnova;
  PedAnovaGrid grid;
  std::vector<std::size_t> order(n), top, perm(n);
  std::vector<std::vector<double>> all_counts(d);
  double real_total = 0;  // the real parameters' total divergence, which the points share
  if (ped) {
    grid = ped_anova_grid(obs);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return obs.loss[a] < obs.loss[b]; });
    const double cut = ped_anova_cut(obs.loss, order, {}, options.quantile);
    for (std::size_t i = 0; i < n; ++i)
      if (obs.loss[i] <= cut) top.push_back(i);
    std::iota(perm.begin(), perm.end(), std::size_t{0});
    for (const std::size_t f : live) {
      all_counts[f].assign(grid.cells[f], 0.0);
      for (std::size_t i = 0; i < n; ++i) all_counts[f][grid.cell[f][i]] += 1;
    }
    const std::vector<double> real = ped_anova_divergences(obs, options.quantile, live);
    real_total = std::accumulate(real.begin(), real.end(), 0.0);
  }
  std::vector<std::uint32_t> weight(n);
  std::vector<double> divergence(d), top_counts, counts;
  for (std::size_t b = 0; b < rounds; ++b) {
    Rng rng = index_rng(options.seed ^ kStream, b);
    if (ped) {
      // The bootstrap of the real parameters, shares of their total as ped_anova gives.
      std::fill(weight.begin(), weight.end(), 0u);
      std::uniform_int_distribution<std::size_t> pick(0, n - 1);
      for (std::size_t draw = 0; draw < n; ++draw) ++weight[pick(rng)];
      const double cut = ped_anova_cut(obs.loss, order, weight, options.quantile);
      double total = 0;
      for (const std::size_t f : live) {
        top_counts.assign(grid.cells[f], 0.0);
        counts.assign(grid.cells[f], 0.0);
        for (std::size_t i = 0; i < n; ++i) {
          if (!weight[i]) continue;
          counts[grid.cell[f][i]] += weight[i];
          if (obs.loss[i] <= cut) top_counts[grid.cell[f][i]] += weight[i];
        }
        total += divergence[f] = ped_anova_divergence(obs.features[f], top_counts, counts);
      }
      for (const std::size_t f : live) resampled[f].push_back(total > 0 ? divergence[f] / total : 1.0 / static_cast<double>(live.size()));
      // A shuffled copy of every parameter on the full data: its top set holds the values
      // of as many trials drawn at random (a partial Fisher-Yates shuffle).
      if (!(real_total > 0)) continue;
      for (const std::size_t f : live) {
        top_counts.assign(grid.cells[f], 0.0);
        for (std::size_t j = 0; j < top.size(); ++j) {
          std::swap(perm[j], perm[std::uniform_int_distribution<std::size_t>(j, n - 1)(rng)]);
          top_counts[grid.cell[f][perm[j]]] += 1;
        }
        nulls.push_back(ped_anova_divergence(obs.features[f], top_counts, all_counts[f]) / real_total);
      }
      continue;
    }
    // fANOVA: a forest of k trees on the resample.
    add_forest(fanova_tree_shares(with_shadows(obs, bootstrap_sample(n, rng), {}, rng), k, rng()), d, live, forests);
  }

  if (ped) {
    for (const std::size_t f : live) {
      const auto [lo, hi] = spread_around(resampled[f], point[f], options.level);
      u.low[f] = std::clamp(lo, 0.0, point[f]);
      u.high[f] = std::clamp(hi, point[f], 1.0);
    }
    if (!nulls.empty()) u.noise_floor = std::clamp(quantile(nulls, (1 + options.level) / 2), 0.0, 1.0);
    return u;
  }
  // fANOVA: a resample's small forests see fewer distinct trials (a bootstrap of a
  // bootstrap) than the full forest's trees, which shrinks the small shares most: the
  // resamples' spread is taken relative to their mean and applied to the point.
  for (std::size_t j = 0; j < live.size(); ++j) {
    const std::size_t f = live[j];
    const double m = mean_of(forests[j]);
    if (!(m > 0)) continue;
    u.low[f] = std::clamp(point[f] * quantile(forests[j], (1 - options.level) / 2) / m, 0.0, point[f]);
    u.high[f] = std::clamp(point[f] * quantile(forests[j], (1 + options.level) / 2) / m, point[f], 1.0);
  }
  u.noise_floor = std::clamp(forest_noise_floor(obs, live, options, k), 0.0, 1.0);
  return u;
}

}  // namespace ranktune::analysis
