#pragma once
/// fANOVA hyperparameter importance (Hutter, Hoos & Leyton-Brown, "An Efficient Approach
/// for Assessing Hyperparameter Importance", ICML 2014), over a random forest (Breiman,
/// "Random Forests", Machine Learning 2001) fitted to the losses.
///
/// Each regression tree splits the search space into boxes with a constant prediction.
/// Under the uniform measure on the space, the tree's total variance is
///     V = sum_leaves vol(L) (v_L - m)^2,   m = sum_leaves vol(L) v_L,
/// and the marginal of feature d, f_d(x) = sum_{L : x in L_d} v_L vol(L) / vol(L_d) (the
/// average prediction over every other feature), is piecewise constant between the tree's
/// thresholds on d, so its variance V_d is exact. A feature's importance is V_d / V
/// averaged over the trees, normalized over the features to sum to 1.
///
/// The forest is CART with squared error, grown to pure leaves (at most 64 deep) on a
/// bootstrap sample per tree, every feature tried at every split (sklearn's
/// RandomForestRegressor defaults, which Optuna's FanovaImportanceEvaluator uses). Splits
/// use presorted feature orders partitioned down the tree, so a tree costs
/// O(features x trials x depth).
/// A listed domain is coded 0..K-1 (at index + 0.5): a split separates the codes below a
/// threshold from those above, so the trees may need several splits to isolate one value,
/// but the boxes measure each value with weight 1/K as the uniform measure should.
/// Limits: only first-order (single-feature) effects are reported; V_d of interacting
/// features is smaller than the variance they explain together.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "analysis/importance.h"

namespace ranktune::analysis {

/// A fitted regression tree: node 0 is the root; a leaf has feature == -1.
struct RegressionTree {
  struct Node {
    int feature = -1;
    double threshold = 0;  ///< rows with x[feature] <= threshold go left
    std::size_t left = 0, right = 0;
    double value = 0;  ///< the mean loss of the node's samples
  };
  std::vector<Node> nodes;
  double predict(const std::vector<double>& x) const;
};

/// The rows of `obs` sorted by each feature (stable): [feature][rank] = row.
using RowOrders = std::vector<std::vector<std::uint32_t>>;
RowOrders row_orders(const Observations& obs);

/// Fits one tree to the rows `sample` of `obs` (indices, repeats allowed: a bootstrap).
RegressionTree fit_tree(const Observations& obs, const std::vector<std::size_t>& sample, std::uint64_t seed);
/// The same with row_orders(obs) given, which a forest computes once for all its trees.
RegressionTree fit_tree(const Observations& obs, const std::vector<std::size_t>& sample, std::uint64_t seed,
                        const RowOrders& by_row);

/// V_d / V of one tree for every feature (all 0 when the tree is constant).
std::vector<double> tree_variance_shares(const RegressionTree& tree, const std::vector<Feature>& features);

/// V_d / V (tree_variance_shares) of each tree of a forest of `trees` trees, tree t fitted
/// to a bootstrap sample of obs's rows drawn from index_rng(seed, t). A tree of no variance
/// (a constant sample) gives all zeros.
std::vector<std::vector<double>> fanova_tree_shares(const Observations& obs, std::size_t trees, std::uint64_t seed);

/// The normalized importance of each of `obs.features` (in their order), 0 for constant
/// features, from a forest of `trees` trees: the per-tree shares averaged over the trees
/// that have variance, normalized to sum to 1.
std::vector<double> fanova(const Observations& obs, std::size_t trees, std::uint64_t seed);

}  // namespace ranktune::analysis
