// PED-ANOVA: the Pearson divergence between the top trials' and all trials' grid densities
// of each hyperparameter (analysis/ped_anova.h).
#include "analysis/ped_anova.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace ranktune::analysis {
namespace {

constexpr std::size_t kMaxCells = 50;
constexpr double kPriorWeight = 1.0;
constexpr std::size_t kMinTop = 2;

std::size_t cells_of(const Feature& f) {
  if (f.categories) return f.categories;
  return f.steps ? std::min(f.steps, kMaxCells) : kMaxCells;
}

std::size_t cell_of(const Feature& f, double x, std::size_t cells) {
  if (f.categories) return std::min(static_cast<std::size_t>(std::max(x, 0.0)), cells - 1);
  const double at = std::round((x - f.low) / (f.high - f.low) * static_cast<double>(cells - 1));
  if (!std::isfinite(at)) return 0;  // a range a hostile file made infinite
  return static_cast<std::size_t>(std::clamp(at, 0.0, static_cast<double>(cells - 1)));
}

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

/// Adds `weight` times a Gaussian kernel (mu, sigma), truncated to the grid's cells
/// [-0.5, cells - 0.5] and integrated over each cell, to `pdf`.
void add_kernel(std::vector<double>& pdf, double mu, double sigma, double weight) {
  const double cells = static_cast<double>(pdf.size());
  const double lo = normal_cdf((-0.5 - mu) / sigma);
  const double mass = normal_cdf((cells - 0.5 - mu) / sigma) - lo;
  if (!(mass > 0)) return;
  double below = lo;
  for (std::size_t k = 0; k < pdf.size(); ++k) {
    const double above = normal_cdf((static_cast<double>(k) + 0.5 - mu) / sigma);
    pdf[k] += weight * (above - below) / mass;
    below = above;
  }
}

/// Scott's rule on the grid, from the counts of the occupied cells.
double scott_bandwidth(const std::vector<double>& counts, double n) {
  double mean = 0;
  for (std::size_t k = 0; k < counts.size(); ++k) mean += static_cast<double>(k) * counts[k];
  mean /= n;
  double ss = 0;
  for (std::size_t k = 0; k < counts.size(); ++k) ss += counts[k] * (static_cast<double>(k) - mean) * (static_cast<double>(k) - mean);
  const double sd = std::sqrt(ss / std::max(1.0, n - 1));
  // The cells holding the n/4-th and 3n/4-th observations.
  auto cell_at = [&](double rank) {
    double seen = 0;
    for (std::size_t k = 0; k < counts.size(); ++k) {
      seen += counts[k];
      if (seen >= rank) return static_cast<double>(k);
    }
    return static_cast<double>(counts.size() - 1);
  };
  const double iqr = cell_at(std::max(1.0, std::floor(n * 3 / 4))) - cell_at(std::max(1.0, std::floor(n / 4)));
  const double sigma = 1.059 * std::min(iqr / 1.34, sd) * std::pow(n, -0.2);
  return std::max(sigma, 0.5 / 1.64);
}

}  // namespace

std::vector<double> ped_anova_density(const Observations& obs, std::size_t f, const std::vector<std::size_t>& members) {
  const Feature& feature = obs.features[f];
  const std::size_t cells = cells_of(feature);
  std::vector<double> counts(cells, 0.0);
  for (const std::size_t i : members) counts[cell_of(feature, obs.rows[i][f], cells)] += 1;
  const double n = static_cast<double>(members.size());
  std::vector<double> pdf(cells, 0.0);
  if (feature.categories) {
    for (std::size_t k = 0; k < cells; ++k) pdf[k] = (counts[k] + kPriorWeight / static_cast<double>(cells)) / (n + kPriorWeight);
    return pdf;
  }
  const double total = n + kPriorWeight;
  if (n > 0) {
    const double sigma = scott_bandwidth(counts, n);
    for (std::size_t k = 0; k < cells; ++k)
      if (counts[k] > 0) add_kernel(pdf, static_cast<double>(k), sigma, counts[k] / total);
  }
  add_kernel(pdf, 0.5 * static_cast<double>(cells - 1), static_cast<double>(cells), kPriorWeight / total);
  return pdf;
}

std::vector<double> ped_anova(const Observations& obs, double quantile) {
  const std::size_t d = obs.features.size();
  const std::size_t n = obs.loss.size();
  std::vector<double> scores(d, 0.0);
  std::vector<std::size_t> live;
  for (std::size_t f = 0; f < d; ++f)
    if (!obs.features[f].constant()) live.push_back(f);
  if (live.empty()) return scores;
  auto equal_shares = [&] {
    for (const std::size_t f : live) scores[f] = 1.0 / static_cast<double>(live.size());
    return scores;
  };
  if (n <= kMinTop) return equal_shares();

  // The top set: every trial at or below the cut, which is the quantile's loss (the
  // inverted CDF, so ties at the cut all belong) but no better than the kMinTop-th loss.
  std::vector<double> sorted = obs.loss;
  std::sort(sorted.begin(), sorted.end());
  const auto q_index = static_cast<std::size_t>(std::max(1.0, std::ceil(quantile * static_cast<double>(n)))) - 1;
  const double cut = std::max(sorted[kMinTop - 1], sorted[std::min(q_index, n - 1)]);
  std::vector<std::size_t> top, all(n);
  std::iota(all.begin(), all.end(), std::size_t{0});
  for (std::size_t i = 0; i < n; ++i)
    if (obs.loss[i] <= cut) top.push_back(i);

  double sum = 0;
  for (const std::size_t f : live) {
    const std::vector<double> p_top = ped_anova_density(obs, f, top);
    const std::vector<double> p_all = ped_anova_density(obs, f, all);
    double divergence = 0;
    for (std::size_t k = 0; k < p_top.size(); ++k) {
      const double a = p_all[k] + 1e-12;
      const double ratio = (p_top[k] + 1e-12) / a - 1;
      divergence += a * ratio * ratio;
    }
    scores[f] = divergence;
    sum += divergence;
  }
  // Equal densities everywhere (every trial in the top set, say) say nothing either way.
  if (!(sum > 0)) return equal_shares();
  for (double& s : scores) s /= sum;
  return scores;
}

}  // namespace ranktune::analysis
