// PED-ANOVA: the Pearson divergence between the top trials' and all trials' grid densities
// of each hyperparameter (analysis/ped_anova.h).
#include "analysis/ped_anova.h"

#include <algorithm>
#include <cmath>
#include <limits>
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

/// The kernels of one density share sigma and sit on cell centres, so each is a shift of one
/// table of the CDF at the cell edges: cdf[j] = Phi((j - (cells - 1) + 0.5) / sigma) for
/// offsets j - (cells - 1) in [-(cells - 1), cells]. Adds them all from the counts with
/// 2 cells erfc calls instead of 2 cells per kernel (the bootstrap scores many densities).
void add_cell_kernels(std::vector<double>& pdf, const std::vector<double>& counts, double sigma, double total) {
  const std::size_t cells = pdf.size();
  std::vector<double> cdf(2 * cells + 1);
  for (std::size_t j = 0; j < cdf.size(); ++j)
    cdf[j] = normal_cdf((static_cast<double>(j) - static_cast<double>(cells - 1) - 0.5) / sigma);
  // Cell k of a kernel at centre m spans offsets (k - m - 0.5, k - m + 0.5]: table entries
  // k - m + cells - 1 and k - m + cells.
  for (std::size_t m = 0; m < cells; ++m) {
    if (!(counts[m] > 0)) continue;
    const std::size_t base = cells - m;  // entry of offset -m - 0.5, the grid's lower edge
    const double mass = cdf[base + cells - 1] - cdf[base - 1];
    if (!(mass > 0)) continue;
    const double weight = counts[m] / total / mass;
    for (std::size_t k = 0; k < cells; ++k) pdf[k] += weight * (cdf[base + k] - cdf[base + k - 1]);
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

static std::vector<double> ped_anova_density_of_counts(const Feature& feature, const std::vector<double>& counts) {
  const std::size_t cells = counts.size();
  const double n = std::accumulate(counts.begin(), counts.end(), 0.0);
  std::vector<double> pdf(cells, 0.0);
  if (feature.categories) {
    for (std::size_t k = 0; k < cells; ++k) pdf[k] = (counts[k] + kPriorWeight / static_cast<double>(cells)) / (n + kPriorWeight);
    return pdf;
  }
  const double total = n + kPriorWeight;
  if (n > 0) add_cell_kernels(pdf, counts, scott_bandwidth(counts, n), total);
  add_kernel(pdf, 0.5 * static_cast<double>(cells - 1), static_cast<double>(cells), kPriorWeight / total);
  return pdf;
}

std::vector<double> ped_anova_density(const Observations& obs, std::size_t f, const std::vector<std::size_t>& members) {
  const Feature& feature = obs.features[f];
  const std::size_t cells = cells_of(feature);
  std::vector<double> counts(cells, 0.0);
  for (const std::size_t i : members) counts[cell_of(feature, obs.rows[i][f], cells)] += 1;
  return ped_anova_density_of_counts(feature, counts);
}

PedAnovaGrid ped_anova_grid(const Observations& obs) {
  PedAnovaGrid g;
  for (std::size_t f = 0; f < obs.features.size(); ++f) {
    const Feature& feature = obs.features[f];
    g.cells.push_back(cells_of(feature));
    std::vector<std::uint32_t> cell(obs.rows.size());
    for (std::size_t i = 0; i < obs.rows.size(); ++i)
      cell[i] = static_cast<std::uint32_t>(cell_of(feature, obs.rows[i][f], g.cells.back()));
    g.cell.push_back(std::move(cell));
  }
  return g;
}

double ped_anova_cut(const std::vector<double>& loss, const std::vector<std::size_t>& order,
                     const std::vector<std::uint32_t>& weight, double quantile) {
  auto count = [&](std::size_t i) { return weight.empty() ? std::size_t{1} : std::size_t{weight[i]}; };
  std::size_t n = 0;
  for (const std::size_t i : order) n += count(i);
  if (n <= kMinTop) return -std::numeric_limits<double>::infinity();
  // The cut is the quantile's loss (the inverted CDF, so ties at the cut all belong) but no
  // better than the kMinTop-th loss.
  const auto q_index = static_cast<std::size_t>(std::max(1.0, std::ceil(quantile * static_cast<double>(n)))) - 1;
  const std::size_t rank = std::max(kMinTop - 1, std::min(q_index, n - 1));
  std::size_t seen = 0;
  for (const std::size_t i : order) {
    seen += count(i);
    if (seen > rank) return loss[i];
  }
  return loss[order.back()];
}

double ped_anova_divergence(const Feature& feature, const std::vector<double>& top, const std::vector<double>& all) {
  const std::vector<double> p_top = ped_anova_density_of_counts(feature, top);
  const std::vector<double> p_all = ped_anova_density_of_counts(feature, all);
  double divergence = 0;
  for (std::size_t k = 0; k < p_top.size(); ++k) {
    const double a = p_all[k] + 1e-12;
    const double ratio = (p_top[k] + 1e-12) / a - 1;
    divergence += a * ratio * ratio;
  }
  return divergence;
}

std::vector<double> ped_anova_divergences(const Observations& obs, double quantile, const std::vector<std::size_t>& features) {
  const std::size_t n = obs.loss.size();
  std::vector<double> divergences(obs.features.size(), 0.0);
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return obs.loss[a] < obs.loss[b]; });
  const double cut = ped_anova_cut(obs.loss, order, {}, quantile);
  if (!(cut > -std::numeric_limits<double>::infinity())) return divergences;
  for (const std::size_t f : features) {
    const Feature& feature = obs.features[f];
    if (feature.constant()) continue;
    const std::size_t cells = cells_of(feature);
    std::vector<double> top(cells, 0.0), all(cells, 0.0);
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t c = cell_of(feature, obs.rows[i][f], cells);
      all[c] += 1;
      if (obs.loss[i] <= cut) top[c] += 1;
    }
    divergences[f] = ped_anova_divergence(feature, top, all);
  }
  return divergences;
}

std::vector<double> ped_anova(const Observations& obs, double quantile) {
  const std::size_t d = obs.features.size();
  std::vector<std::size_t> live;
  for (std::size_t f = 0; f < d; ++f)
    if (!obs.features[f].constant()) live.push_back(f);
  std::vector<double> scores = ped_anova_divergences(obs, quantile, live);
  const double sum = std::accumulate(scores.begin(), scores.end(), 0.0);
  // Equal densities everywhere (every trial in the top set, say, or too few trials for a
  // top set) say nothing either way.
  if (!(sum > 0)) {
    for (const std::size_t f : live) scores[f] = 1.0 / static_cast<double>(live.size());
    return scores;
  }
  for (double& s : scores) s /= sum;
  return scores;
}

}  // namespace ranktune::analysis
