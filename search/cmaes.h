#pragma once
/// CMA-ES, the covariance matrix adaptation evolution strategy, as N. Hansen gives it in "The
/// CMA Evolution Strategy: A Tutorial" (arXiv:1604.00772, 2016): the (mu/mu_W, lambda)-ES with
/// weighted recombination, cumulative step-size adaptation (CSA), the rank-one and rank-mu
/// updates of the covariance matrix and negative ("active") recombination weights, with the
/// tutorial's default strategy parameters (its Table 1 and equations 49-58). Also its
/// termination criteria (Appendix B.3), which the IPOP restarts of the searcher use
/// (search/cmaes_searcher.h).
///
/// This file is the pure mathematics of one run: a search distribution N(mean, sigma^2 C) on the
/// box [0, 1]^n, which samples points and is updated from lambda points ranked best first. It
/// knows nothing of configs, trials or asynchrony: the searcher maps parameters into the box,
/// and decides which results make a generation and how they rank.
///
/// - Sampling stays in the box: a draw outside it is drawn again, up to kMaxResamples times,
///   then clipped into it (the bound handling of the `cmaes` package that Optuna's
///   CmaEsSampler uses). The update learns from the point as returned, so a clipped point is
///   learnt where it was evaluated.
/// - C is decomposed (B D^2 B^T) after every update, by Eigen's self-adjoint eigensolver.
///   Eigenvalues that round-off pushes to or below zero are raised to 1e-20 of the largest,
///   so that C^(-1/2) exists; the `conditioncov` criterion reports such a C.

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "search/saved_state.h"
#include "search/space.h"

namespace ranktune::search {

/// The strategy parameters of a run, all fixed by the dimension n and the population size
/// lambda (Hansen 2016, Table 1 and eqs. 49-58).
struct CmaParameters {
  std::size_t n = 0;
  std::int64_t lambda = 0;
  std::int64_t mu = 0;          ///< parents: floor(lambda / 2)
  std::vector<double> weights;  ///< lambda weights: mu positive (summing to 1), then the negative ones
  double mu_eff = 0;            ///< the variance effective selection mass of the positive weights
  double c_sigma = 0;           ///< learning rate of the step-size path
  double d_sigma = 0;           ///< damping of the step size
  double cc = 0;                ///< learning rate of the covariance path
  double c1 = 0;                ///< learning rate of the rank-one update
  double cmu = 0;               ///< learning rate of the rank-mu update
  double chi_n = 0;             ///< E||N(0, I)||, approximated

  /// Throws std::invalid_argument unless n >= 1 and lambda >= 2.
  static CmaParameters make(std::size_t n, std::int64_t lambda);
  /// The default population size: 4 + floor(3 ln n).
  static std::int64_t default_lambda(std::size_t n);
};

/// The thresholds of the termination criteria (Hansen 2016, Appendix B.3).
struct CmaTolerances {
  double sigma0 = 1.0 / 6.0;  ///< the initial step size, which TolX and TolXUp are relative to
  double tolx = 1e-12 / 6.0;  ///< TolX: every coordinate's standard deviation and path below it
  double tolfun = 1e-12;      ///< TolFun: the range of recent values below it
};

class CmaEs {
 public:
  /// Redraws of a sample outside the box before it is clipped.
  static constexpr int kMaxResamples = 100;

  /// A run from `mean` (inside the box) with step size `sigma` > 0, C = I, and population
  /// `lambda` >= 2. Throws std::invalid_argument on a bad argument.
  CmaEs(Eigen::VectorXd mean, double sigma, std::int64_t lambda, CmaTolerances tolerances);

  std::size_t dims() const { return params_.n; }
  std::int64_t lambda() const { return params_.lambda; }
  const CmaParameters& parameters() const { return params_; }
  /// Updates done so far (the tutorial's generation counter g).
  std::int64_t updates() const { return updates_; }
  double sigma() const { return sigma_; }
  const Eigen::VectorXd& mean() const { return mean_; }
  const Eigen::MatrixXd& covariance() const { return c_; }
  /// The evolution paths of C and of sigma.
  const Eigen::VectorXd& path_c() const { return pc_; }
  const Eigen::VectorXd& path_sigma() const { return ps_; }

  /// A sample of N(mean, sigma^2 C) in the box, drawing only from `rng`.
  Eigen::VectorXd ask(Rng& rng) const;

  /// One generation: exactly lambda() points in the box, best first, and their values
  /// (smaller is better; +inf allowed), which only TolFun reads. Throws std::invalid_argument
  /// on a wrong count or dimension.
  void tell(const std::vector<Eigen::VectorXd>& ranked, const std::vector<double>& values);

  /// The first termination criterion that holds, by its name in the tutorial (lower case:
  /// "tolfun", "tolx", "tolxup", "noeffectaxis", "noeffectcoord", "conditioncov") and why,
  /// or "" while none does (and before the first update).
  std::string stop_reason() const;

  /// Writes the run's state (everything but the parameters and tolerances, which the
  /// reader is given).
  void write(StateWriter& w) const;
  /// Reads what write() wrote, for a run of `n` dimensions and population `lambda`; the
  /// reader throws naming the field on a bad value.
  static CmaEs read(StateReader& r, std::size_t n, std::int64_t lambda, CmaTolerances tolerances);

 private:
  /// Recomputes B and D from C, making C exactly symmetric first.
  void decompose();
  /// The length of the TolFun history: 10 + ceil(30 n / lambda) generations.
  std::size_t history_length() const;

  CmaParameters params_;
  CmaTolerances tol_;
  Eigen::VectorXd mean_;
  double sigma_ = 0;
  Eigen::MatrixXd c_;   ///< the covariance matrix C
  Eigen::VectorXd pc_;  ///< the evolution path of C
  Eigen::VectorXd ps_;  ///< the conjugate evolution path of sigma
  Eigen::MatrixXd b_;   ///< eigenvectors of C, by column
  Eigen::VectorXd d_;   ///< square roots of C's eigenvalues, ascending
  std::int64_t updates_ = 0;
  std::deque<double> best_history_;  ///< best value of each recent generation, oldest first
  double last_min_ = 0, last_max_ = 0;  ///< the range of the last generation's values
};

}  // namespace ranktune::search
