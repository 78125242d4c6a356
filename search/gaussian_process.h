#pragma once
/// Gaussian-process regression: Rasmussen & Williams, "Gaussian Processes for Machine
/// Learning", MIT Press 2006 (algorithm 2.1 for the posterior, eq. 2.30 and 5.9 for the log
/// marginal likelihood and its gradient). The model of the "gp" searcher
/// (search/gp_searcher.h) and the "pb2" scheduler (search/pb2_scheduler.h).
///
/// Inputs are points of d dimensions. A numeric dimension is a coordinate (the callers map
/// each parameter into [0, 1]); a categorical one holds a category's index, and two points
/// differ there by 1 or not at all (a Hamming distance, as Optuna's GPSampler treats
/// categorical parameters). The kernel is Matern-5/2 with one lengthscale per dimension
/// (ARD) over r^2 = sum_j lambda_j delta_j^2, lambda_j = 1 / lengthscale_j^2:
///     k(a, b) = s (1 + sqrt(5) r + 5 r^2 / 3) exp(-sqrt(5) r),
/// plus a constant prior mean m and Gaussian observation noise of variance sigma^2.
///
/// The posterior keeps the Cholesky factor L of K + sigma^2 I (Eigen's LLT). A point added
/// with the same hyperparameters grows L by one row, the bordered form of the factorization
/// (one triangular solve, O(n^2)), instead of factoring again (O(n^3)); so a caller that
/// rebuilds from the same points, hyperparameters and order gets the same bits (resume
/// depends on it). Points past a count can be dropped again (the searcher's fantasies of
/// pending trials).
///
/// Hyperparameters are fitted by maximizing the log marginal likelihood plus a log prior,
/// in log space, from a few starts, with gradients (search/box_minimizer.h). The priors are
/// Optuna's GPSampler's (optuna/_gp/prior.py), which keep the fit stable with few points
/// and targets standardized to mean 0 and variance 1: on each lambda_j a density
/// proportional to exp(-(0.1 / lambda_j + 0.1 lambda_j)), Gamma(2, rate 1) on s, Gamma(1.1,
/// rate 30) on sigma^2 (sigma^2 >= 1e-6); none on m.

#include <cstddef>
#include <vector>

#include <Eigen/Core>

namespace ranktune::search::gp {

/// The kernel's hyperparameters.
struct Hyper {
  Eigen::VectorXd inverse_squared_lengthscales;  ///< lambda_j = 1 / lengthscale_j^2, one per dimension
  double signal_variance = 1;                    ///< s = k(x, x)
  double noise_variance = 0.1;                   ///< sigma^2, on the diagonal
  double mean = 0;                               ///< the constant prior mean m

  /// The first start of a fit: lambda_j = 1, s = 1, sigma^2 = 0.1, m = 0.
  static Hyper initial(std::size_t dims);
};

/// The bounds of a fit: lambda_j in [1e-4, 1e4] (lengthscales 0.01 to 100 in the unit box),
/// s in [1e-2, 1e2], sigma^2 in [1e-6, 10], m in [-10, 10] (targets are standardized).
inline constexpr double kMinNoise = 1e-6;

/// Matern-5/2 of a scaled squared distance r2 >= 0, with k(0) = 1.
double matern52(double r2);

class GaussianProcess {
 public:
  /// `categorical[j]`: dimension j holds category indices.
  explicit GaussianProcess(std::vector<bool> categorical);

  std::size_t dims() const { return categorical_.size(); }
  std::size_t size() const { return n_; }
  const Hyper& hyper() const { return hyper_; }
  const std::vector<bool>& categorical() const { return categorical_; }

  /// Forgets every point and takes the rows of `points` (n x dims) under `hyper`, factored
  /// at once. If K + sigma^2 I is not positive definite in floating point (near-duplicate
  /// points with tiny noise), sigma^2 grows tenfold until it is; hyper() says what it took.
  void reset(const Hyper& hyper, const Eigen::MatrixXd& points);
  /// Adds one point; the factor grows by a row.
  void append(const Eigen::VectorXd& x);
  /// Keeps the first `n` points only (n <= size()).
  void truncate(std::size_t n);
  /// The targets of the size() points, in order. Predictions need it after the points change.
  void set_targets(const Eigen::VectorXd& y);

  struct Prediction {
    double mean = 0;
    double variance = 0;  ///< of the latent function (without the noise), >= 0
    Eigen::VectorXd mean_gradient, variance_gradient;  ///< d/dx; 0 along categorical dimensions
  };
  /// The posterior at x; the gradients only when `gradient`.
  Prediction predict(const Eigen::VectorXd& x, bool gradient = false) const;
  /// The posterior means and variances at the rows of `xs` (m x dims), with one triangular
  /// solve for all of them.
  void predict(const Eigen::MatrixXd& xs, Eigen::VectorXd& mean, Eigen::VectorXd& variance) const;
  /// k(a, b) under the current hyperparameters.
  double kernel(const Eigen::VectorXd& a, const Eigen::VectorXd& b) const;

 private:
  /// k(x, point i) for the first n points into k; when dk is given, dk/d(r^2) too.
  void kernel_row(const Eigen::VectorXd& x, std::size_t n, Eigen::VectorXd& k, Eigen::VectorXd* dk) const;
  void reserve(std::size_t n);

  std::vector<bool> categorical_;
  Hyper hyper_;
  // Capacity rows; the first n_ are in use. The capacity is a multiple of 64, so every
  // column of the factor starts equally aligned and its solves give the same bits however
  // the capacity was reached.
  Eigen::MatrixXd x_;  // cap x dims, a row per point
  Eigen::MatrixXd l_;  // cap x cap, lower triangle: the factor of K + sigma^2 I
  Eigen::VectorXd alpha_;  // (K + sigma^2 I)^-1 (y - m), after set_targets
  std::size_t n_ = 0;
};

/// log p(y | points, hyper) + log prior(hyper) (R&W eq. 2.30 with the priors above), and
/// when `gradient` is given its gradient with respect to theta = (log lambda_1..d, log s,
/// log sigma^2, m) (R&W eq. 5.9). -infinity when K + sigma^2 I is not positive definite.
double log_posterior(const std::vector<bool>& categorical, const Eigen::MatrixXd& points,
                     const Eigen::VectorXd& y, const Hyper& hyper, Eigen::VectorXd* gradient = nullptr);

/// The maximum a posteriori hyperparameters for targets `y` (standardized) at the rows of
/// `points`, from two starts: `warm` and Hyper::initial when `warm` is given, else
/// Hyper::initial and the same with short lengthscales (0.2) and little noise (0.01). The
/// best start wins (the first on a tie).
Hyper fit(const std::vector<bool>& categorical, const Eigen::MatrixXd& points, const Eigen::VectorXd& y,
          const Hyper* warm = nullptr);

}  // namespace ranktune::search::gp
