// fANOVA: first-order variance shares of a random forest's trees (analysis/fanova.h).
#include "analysis/fanova.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <utility>

#include "search/space.h"

namespace ranktune::analysis {
namespace {

constexpr std::size_t kMaxDepth = 64;

/// The box a feature's coordinate lives in: [low, high], or [0, K] for K listed values.
std::pair<double, double> range_of(const Feature& f) {
  if (f.categories) return {0.0, static_cast<double>(f.categories)};
  return {f.low, f.high};
}

struct Leaf {
  std::vector<double> lo, hi;
  double value = 0;
};

void collect_leaves(const RegressionTree& tree, std::size_t at, std::vector<double>& lo, std::vector<double>& hi,
                    std::vector<Leaf>& out) {
  const RegressionTree::Node& node = tree.nodes[at];
  if (node.feature < 0) {
    out.push_back({lo, hi, node.value});
    return;
  }
  const auto f = static_cast<std::size_t>(node.feature);
  const double saved_hi = hi[f], saved_lo = lo[f];
  hi[f] = std::clamp(node.threshold, saved_lo, saved_hi);
  collect_leaves(tree, node.left, lo, hi, out);
  hi[f] = saved_hi;
  lo[f] = std::clamp(node.threshold, saved_lo, saved_hi);
  collect_leaves(tree, node.right, lo, hi, out);
  lo[f] = saved_lo;
}

}  // namespace

double RegressionTree::predict(const std::vector<double>& x) const {
  std::size_t at = 0;
  while (nodes[at].feature >= 0) at = x[static_cast<std::size_t>(nodes[at].feature)] <= nodes[at].threshold ? nodes[at].left : nodes[at].right;
  return nodes[at].value;
}

RowOrders row_orders(const Observations& obs) {
  RowOrders orders(obs.features.size(), std::vector<std::uint32_t>(obs.rows.size()));
  for (std::size_t f = 0; f < orders.size(); ++f) {
    std::iota(orders[f].begin(), orders[f].end(), 0u);
    std::stable_sort(orders[f].begin(), orders[f].end(),
                     [&](std::uint32_t a, std::uint32_t b) { return obs.rows[a][f] < obs.rows[b][f]; });
  }
  return orders;
}

RegressionTree fit_tree(const Observations& obs, const std::vector<std::size_t>& sample, std::uint64_t seed) {
  return fit_tree(obs, sample, seed, row_orders(obs));
}

RegressionTree fit_tree(const Observations& obs, const std::vector<std::size_t>& sample, std::uint64_t seed,
                        const RowOrders& by_row) {
  const std::size_t n = sample.size(), d = obs.features.size();
  RegressionTree tree;
  if (n == 0) {
    tree.nodes.push_back({});
    return tree;
  }
  auto x = [&](std::uint32_t p, std::size_t f) { return obs.rows[sample[p]][f]; };
  std::vector<double> y(n);
  for (std::size_t p = 0; p < n; ++p) y[p] = obs.loss[sample[p]];
  // One order of the sample positions per feature, sorted by that feature; every node
  // owns the same segment [begin, end) of each, which a split partitions stably. Read off
  // the rows' orders: each row's positions in the sample, in the row's place (a sort per
  // tree and feature cost a fifth of the forest).
  std::vector<std::uint32_t> start(obs.rows.size() + 1, 0), positions(n);
  for (const std::size_t r : sample) ++start[r + 1];
  for (std::size_t r = 0; r < obs.rows.size(); ++r) start[r + 1] += start[r];
  {
    std::vector<std::uint32_t> next(start.begin(), start.end() - 1);
    for (std::size_t p = 0; p < n; ++p) positions[next[sample[p]]++] = static_cast<std::uint32_t>(p);
  }
  std::vector<std::vector<std::uint32_t>> orders(d);
  for (std::size_t f = 0; f < d; ++f) {
    orders[f].reserve(n);
    for (const std::uint32_t r : by_row[f])
      for (std::uint32_t q = start[r]; q < start[r + 1]; ++q) orders[f].push_back(positions[q]);
  }
  std::vector<char> goes_left(n);
  std::vector<std::uint32_t> scratch(n);
  std::vector<std::size_t> features(d);
  std::iota(features.begin(), features.end(), std::size_t{0});
  Rng rng(seed);

  struct Task {
    std::size_t node, begin, end, depth;
  };
  tree.nodes.push_back({});
  std::vector<Task> stack{{0, 0, n, 0}};
  while (!stack.empty()) {
    const Task task = stack.back();
    stack.pop_back();
    const std::size_t count = task.end - task.begin;
    double sum = 0;
    for (std::size_t i = task.begin; i < task.end; ++i) sum += y[orders[0][i]];
    tree.nodes[task.node].value = sum / static_cast<double>(count);
    if (count < 2 || task.depth >= kMaxDepth || d == 0) continue;

    // The split that most reduces the squared error maximizes sum_l^2/n_l + sum_r^2/n_r.
    // Features are tried in a random order per node, and only a strictly better split
    // replaces the best, as sklearn does, so ties do not always favour the first feature.
    std::shuffle(features.begin(), features.end(), rng);
    const double parent = sum * sum / static_cast<double>(count);
    double best = parent;
    int best_feature = -1;
    double threshold = 0;
    std::size_t best_left = 0;
    for (const std::size_t f : features) {
      const std::vector<std::uint32_t>& order = orders[f];
      double left = 0;
      for (std::size_t i = task.begin; i + 1 < task.end; ++i) {
        left += y[order[i]];
        const double here = x(order[i], f), next = x(order[i + 1], f);
        if (!(next > here)) continue;
        const auto nl = static_cast<double>(i + 1 - task.begin), nr = static_cast<double>(task.end - i - 1);
        const double right = sum - left;
        const double score = left * left / nl + right * right / nr;
        if (score > best * (1 + 1e-12) + 1e-300) {
          best = score;
          best_feature = static_cast<int>(f);
          // The midpoint, unless rounding put it on the upper value.
          const double mid = here + (next - here) / 2;
          threshold = mid < next ? mid : here;
          best_left = i + 1 - task.begin;
        }
      }
    }
    if (best_feature < 0) continue;
    const auto bf = static_cast<std::size_t>(best_feature);
    for (std::size_t i = task.begin; i < task.end; ++i) goes_left[orders[bf][i]] = x(orders[bf][i], bf) <= threshold;
    for (std::size_t f = 0; f < d; ++f) {
      std::vector<std::uint32_t>& order = orders[f];
      std::size_t l = task.begin, r = 0;
      for (std::size_t i = task.begin; i < task.end; ++i) {
        if (goes_left[order[i]]) order[l++] = order[i];
        else scratch[r++] = order[i];
      }
      std::copy(scratch.begin(), scratch.begin() + static_cast<std::ptrdiff_t>(r), order.begin() + static_cast<std::ptrdiff_t>(l));
    }
    const std::size_t left_node = tree.nodes.size();
    tree.nodes[task.node].feature = best_feature;
    tree.nodes[task.node].threshold = threshold;
    tree.nodes[task.node].left = left_node;
    tree.nodes[task.node].right = left_node + 1;
    tree.nodes.push_back({});
    tree.nodes.push_back({});
    const std::size_t mid = task.begin + best_left;
    stack.push_back({left_node + 1, mid, task.end, task.depth + 1});
    stack.push_back({left_node, task.begin, mid, task.depth + 1});
  }
  return tree;
}

std::vector<double> tree_variance_shares(const RegressionTree& tree, const std::vector<Feature>& features) {
  const std::size_t d = features.size();
  std::vector<double> lo(d), hi(d), width(d);
  for (std::size_t f = 0; f < d; ++f) {
    std::tie(lo[f], hi[f]) = range_of(features[f]);
    width[f] = hi[f] - lo[f];
  }
  std::vector<Leaf> leaves;
  collect_leaves(tree, 0, lo, hi, leaves);
  // Each leaf's share of the space's volume (constant features have no width to share).
  std::vector<double> volume(leaves.size(), 1.0);
  double mean = 0;
  for (std::size_t l = 0; l < leaves.size(); ++l) {
    for (std::size_t f = 0; f < d; ++f)
      if (width[f] > 0) volume[l] *= (leaves[l].hi[f] - leaves[l].lo[f]) / width[f];
    mean += volume[l] * leaves[l].value;
  }
  double total = 0;
  for (std::size_t l = 0; l < leaves.size(); ++l) total += volume[l] * (leaves[l].value - mean) * (leaves[l].value - mean);
  std::vector<double> shares(d, 0.0);
  if (!(total > 0)) return shares;
  std::vector<std::pair<double, double>> steps;  // (coordinate, change of the marginal)
  for (std::size_t f = 0; f < d; ++f) {
    if (!(width[f] > 0) || features[f].constant()) continue;
    steps.clear();
    for (std::size_t l = 0; l < leaves.size(); ++l) {
      const double along = (leaves[l].hi[f] - leaves[l].lo[f]) / width[f];
      if (!(along > 0)) continue;
      // The leaf's prediction, weighted by its volume across the other features.
      const double w = leaves[l].value * volume[l] / along;
      steps.emplace_back(leaves[l].lo[f], w);
      steps.emplace_back(leaves[l].hi[f], -w);
    }
    std::sort(steps.begin(), steps.end());
    double marginal = 0, variance = 0;
    for (std::size_t s = 0; s + 1 < steps.size(); ++s) {
      marginal += steps[s].second;
      const double span = (steps[s + 1].first - steps[s].first) / width[f];
      if (span > 0) variance += span * (marginal - mean) * (marginal - mean);
    }
    shares[f] = variance / total;
  }
  return shares;
}

std::vector<std::vector<double>> fanova_tree_shares(const Observations& obs, std::size_t trees, std::uint64_t seed) {
  const std::size_t n = obs.loss.size();
  std::vector<std::vector<double>> out;
  std::vector<std::size_t> sample(n);
  const RowOrders by_row = n > 0 && trees > 0 ? row_orders(obs) : RowOrders{};
  for (std::size_t t = 0; t < trees && n > 0; ++t) {
    Rng rng = index_rng(seed, t);
    std::uniform_int_distribution<std::size_t> pick(0, n - 1);
    for (std::size_t& s : sample) s = pick(rng);
    out.push_back(tree_variance_shares(fit_tree(obs, sample, rng(), by_row), obs.features));
  }
  return out;
}

std::vector<double> fanova(const Observations& obs, std::size_t trees, std::uint64_t seed) {
  const std::size_t d = obs.features.size();
  std::vector<double> scores(d, 0.0);
  std::size_t counted = 0;
  for (const std::vector<double>& shares : fanova_tree_shares(obs, trees, seed)) {
    if (std::all_of(shares.begin(), shares.end(), [](double s) { return s == 0; })) continue;
    for (std::size_t f = 0; f < d; ++f) scores[f] += shares[f];
    ++counted;
  }
  const double sum = std::accumulate(scores.begin(), scores.end(), 0.0);
  if (counted == 0 || !(sum > 0)) {
    std::size_t live = 0;
    for (const Feature& f : obs.features) live += !f.constant();
    for (std::size_t f = 0; f < d; ++f) scores[f] = obs.features[f].constant() ? 0.0 : 1.0 / static_cast<double>(live);
    return scores;
  }
  for (double& s : scores) s /= sum;
  return scores;
}

}  // namespace ranktune::analysis
