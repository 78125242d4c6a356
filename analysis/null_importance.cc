// Shadow features: permuted copies of hyperparameters, for the noise floor
// (analysis/null_importance.h).
#include "analysis/null_importance.h"

#include <algorithm>
#include <numeric>

namespace ranktune::analysis {

Observations with_shadows(const Observations& obs, const std::vector<std::size_t>& sample,
                          const std::vector<std::size_t>& shadowed, Rng& rng) {
  std::vector<std::size_t> rows = sample;
  if (rows.empty()) {
    rows.resize(obs.loss.size());
    std::iota(rows.begin(), rows.end(), std::size_t{0});
  }
  const std::size_t d = obs.features.size();
  Observations out;
  out.features = obs.features;
  for (const std::size_t f : shadowed) {
    out.features.push_back(obs.features[f]);
    out.features.back().name = "shadow:" + obs.features[f].name;
  }
  out.rows.reserve(rows.size());
  out.loss.reserve(rows.size());
  for (const std::size_t i : rows) {
    out.rows.push_back(obs.rows[i]);
    out.rows.back().resize(d + shadowed.size());
    out.loss.push_back(obs.loss[i]);
  }
  // Each shadow column: the sampled column of its feature, shuffled on its own, so that two
  // shadows are independent of each other as well as of the loss.
  std::vector<std::size_t> order(rows.size());
  for (std::size_t j = 0; j < shadowed.size(); ++j) {
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::shuffle(order.begin(), order.end(), rng);
    for (std::size_t p = 0; p < rows.size(); ++p) out.rows[p][d + j] = obs.rows[rows[order[p]]][shadowed[j]];
  }
  return out;
}

}  // namespace ranktune::analysis
