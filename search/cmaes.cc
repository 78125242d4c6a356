// One CMA-ES run: its strategy parameters, sampling in the box, the update of mean, step
// size, paths and covariance, the termination criteria and the saved state
// (search/cmaes.h: the algorithm and its source, Hansen's tutorial, 2016).
#include "search/cmaes.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

#include <Eigen/Eigenvalues>

namespace ranktune::search {

namespace {

// Beyond this the step size only overflows later computations (the `cmaes` package caps it
// alike); TolXUp stops a run long before.
constexpr double kMaxSigma = 1e32;
// C's eigenvalues are kept at least this fraction of the largest (see the header).
constexpr double kMinEigenRatio = 1e-20;
// Guards the active weights' division by ||C^(-1/2) y||^2 for a point on the mean.
constexpr double kMinSquaredNorm = 1e-8;
// TolXUp: the largest standard deviation grew by this factor over sigma0 (a sigma0 far too small).
constexpr double kTolXUp = 1e4;
// ConditionCov: the condition number of C.
constexpr double kMaxCondition = 1e14;

}  // namespace

std::int64_t CmaParameters::default_lambda(std::size_t n) {
  return 4 + static_cast<std::int64_t>(std::floor(3.0 * std::log(static_cast<double>(n))));
}

CmaParameters CmaParameters::make(std::size_t n, std::int64_t lambda) {
  if (n < 1) throw std::invalid_argument("CMA-ES needs at least one dimension");
  if (lambda < 2) throw std::invalid_argument("CMA-ES needs a population of at least 2");
  CmaParameters p;
  p.n = n;
  p.lambda = lambda;
  p.mu = lambda / 2;
  const double nd = static_cast<double>(n);
  const auto count = static_cast<std::size_t>(lambda);
  const auto mu = static_cast<std::size_t>(p.mu);

  // Eq. 49: w'_i = ln((lambda + 1) / 2) - ln i, positive for the better half.
  std::vector<double> prime(count);
  for (std::size_t i = 0; i < count; ++i) prime[i] = std::log((static_cast<double>(lambda) + 1) / 2) - std::log(static_cast<double>(i + 1));
  double sum_pos = 0, sum_pos2 = 0, sum_neg = 0, sum_neg2 = 0;
  for (std::size_t i = 0; i < count; ++i) {
    if (i < mu) {
      sum_pos += prime[i];
      sum_pos2 += prime[i] * prime[i];
    } else {
      sum_neg += prime[i];
      sum_neg2 += prime[i] * prime[i];
    }
  }
  p.mu_eff = sum_pos * sum_pos / sum_pos2;
  const double mu_eff_minus = sum_neg2 > 0 ? sum_neg * sum_neg / sum_neg2 : 0;

  // Eqs. 55-58 (alpha_cov = 2).
  constexpr double alpha_cov = 2;
  p.c_sigma = (p.mu_eff + 2) / (nd + p.mu_eff + 5);
  p.d_sigma = 1 + 2 * std::max(0.0, std::sqrt((p.mu_eff - 1) / (nd + 1)) - 1) + p.c_sigma;
  p.cc = (4 + p.mu_eff / nd) / (nd + 4 + 2 * p.mu_eff / nd);
  p.c1 = alpha_cov / ((nd + 1.3) * (nd + 1.3) + p.mu_eff);
  p.cmu = std::min(1 - p.c1, alpha_cov * (p.mu_eff - 2 + 1 / p.mu_eff) / ((nd + 2) * (nd + 2) + alpha_cov * p.mu_eff / 2));
  p.chi_n = std::sqrt(nd) * (1 - 1 / (4 * nd) + 1 / (21 * nd * nd));

  // Eqs. 50-53: the negative weights are scaled by the smallest of three bounds, the last of
  // which keeps C positive definite. With lambda <= 3, mu_eff = 1 and cmu = 0: two bounds are
  // +inf and the negative weights have no effect (they only ever multiply cmu).
  const double alpha_mu_minus = 1 + p.c1 / p.cmu;
  const double alpha_mueff_minus = 1 + 2 * mu_eff_minus / (p.mu_eff + 2);
  const double alpha_posdef_minus = (1 - p.c1 - p.cmu) / (nd * p.cmu);
  const double scale_neg = std::min({alpha_mu_minus, alpha_mueff_minus, alpha_posdef_minus});
  p.weights.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    p.weights[i] = prime[i] >= 0 ? prime[i] / sum_pos : (sum_neg < 0 ? scale_neg * prime[i] / -sum_neg : 0);
  }
  return p;
}

CmaEs::CmaEs(Eigen::VectorXd mean, double sigma, std::int64_t lambda, CmaTolerances tolerances)
    : params_(CmaParameters::make(static_cast<std::size_t>(mean.size()), lambda)),
      tol_(tolerances),
      mean_(std::move(mean)),
      sigma_(sigma) {
  if (!(sigma_ > 0) || !std::isfinite(sigma_)) throw std::invalid_argument("CMA-ES needs a step size > 0");
  const auto n = static_cast<Eigen::Index>(params_.n);
  c_ = Eigen::MatrixXd::Identity(n, n);
  pc_ = Eigen::VectorXd::Zero(n);
  ps_ = Eigen::VectorXd::Zero(n);
  decompose();
}

Eigen::VectorXd CmaEs::ask(Rng& rng) const {
  std::normal_distribution<double> normal(0.0, 1.0);
  const auto n = static_cast<Eigen::Index>(params_.n);
  Eigen::VectorXd z(n), x(n);
  for (int attempt = 0; attempt < kMaxResamples; ++attempt) {
    for (Eigen::Index i = 0; i < n; ++i) z(i) = normal(rng);
    x = mean_ + sigma_ * (b_ * d_.cwiseProduct(z));
    if ((x.array() >= 0.0).all() && (x.array() <= 1.0).all()) return x;
  }
  return x.cwiseMax(0.0).cwiseMin(1.0);
}

void CmaEs::tell(const std::vector<Eigen::VectorXd>& ranked, const std::vector<double>& values) {
  const auto& p = params_;
  const auto n = static_cast<Eigen::Index>(p.n);
  if (ranked.size() != static_cast<std::size_t>(p.lambda) || values.size() != ranked.size()) {
    throw std::invalid_argument("CMA-ES: a generation needs " + std::to_string(p.lambda) + " points and values");
  }
  const auto lambda = static_cast<Eigen::Index>(p.lambda);
  Eigen::MatrixXd y(n, lambda);  // the steps, (x_i - m) / sigma
  for (Eigen::Index i = 0; i < lambda; ++i) {
    const auto& x = ranked[static_cast<std::size_t>(i)];
    if (x.size() != n) throw std::invalid_argument("CMA-ES: a point of another dimension");
    y.col(i) = (x - mean_) / sigma_;
  }
  Eigen::VectorXd y_w = Eigen::VectorXd::Zero(n);
  for (Eigen::Index i = 0; i < p.mu; ++i) y_w += p.weights[static_cast<std::size_t>(i)] * y.col(i);

  // Mean (eq. 41, c_m = 1).
  mean_ += sigma_ * y_w;

  // Step-size path (eq. 43), with C^(-1/2) = B D^-1 B^T.
  const Eigen::MatrixXd c_inv_sqrt = b_ * d_.cwiseInverse().asDiagonal() * b_.transpose();
  ps_ = (1 - p.c_sigma) * ps_ + std::sqrt(p.c_sigma * (2 - p.c_sigma) * p.mu_eff) * (c_inv_sqrt * y_w);
  const double ps_norm = ps_.norm();

  // h_sigma stalls the covariance path while the step-size path is long (after eq. 45);
  // updates_ is the tutorial's g of this generation, counted from 0.
  const double correction = std::sqrt(1 - std::pow(1 - p.c_sigma, 2.0 * static_cast<double>(updates_ + 1)));
  const double nd = static_cast<double>(p.n);
  const bool h_sigma = ps_norm / correction < (1.4 + 2 / (nd + 1)) * p.chi_n;
  pc_ = (1 - p.cc) * pc_ + (h_sigma ? std::sqrt(p.cc * (2 - p.cc) * p.mu_eff) : 0.0) * y_w;

  // Covariance (eq. 47), the negative weights rescaled by n / ||C^(-1/2) y_i||^2 (eq. 46).
  Eigen::VectorXd w_o(lambda);
  double sum_w = 0;
  for (Eigen::Index i = 0; i < lambda; ++i) {
    const double w = p.weights[static_cast<std::size_t>(i)];
    sum_w += w;
    w_o(i) = w >= 0 ? w : w * nd / std::max((c_inv_sqrt * y.col(i)).squaredNorm(), kMinSquaredNorm);
  }
  const double delta_h = (1 - (h_sigma ? 1.0 : 0.0)) * p.cc * (2 - p.cc);
  c_ = (1 + p.c1 * delta_h - p.c1 - p.cmu * sum_w) * c_ + p.c1 * (pc_ * pc_.transpose()) +
       p.cmu * (y * w_o.asDiagonal() * y.transpose());

  // Step size (eq. 44).
  sigma_ = std::min(sigma_ * std::exp((p.c_sigma / p.d_sigma) * (ps_norm / p.chi_n - 1)), kMaxSigma);
  decompose();

  // TolFun's history: the best value of each generation, and this generation's range.
  last_min_ = *std::min_element(values.begin(), values.end());
  last_max_ = *std::max_element(values.begin(), values.end());
  best_history_.push_back(last_min_);
  while (best_history_.size() > history_length()) best_history_.pop_front();
  ++updates_;
}

void CmaEs::decompose() {
  c_ = (c_ + c_.transpose()).eval() / 2;
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver;
  if (c_.allFinite()) solver.compute(c_);
  if (!c_.allFinite() || solver.info() != Eigen::Success) {
    // Finite points in the box never make such a C; should round-off ever do it, the run
    // starts its shape afresh rather than sample from it.
    const auto n = static_cast<Eigen::Index>(params_.n);
    c_ = Eigen::MatrixXd::Identity(n, n);
    pc_.setZero();
    solver.compute(c_);
  }
  b_ = solver.eigenvectors();
  Eigen::VectorXd ev = solver.eigenvalues();
  const double floor = std::max(ev.maxCoeff() * kMinEigenRatio, std::numeric_limits<double>::min());
  d_ = ev.cwiseMax(floor).cwiseSqrt();
}

std::size_t CmaEs::history_length() const {
  return 10 + static_cast<std::size_t>(std::ceil(30.0 * static_cast<double>(params_.n) / static_cast<double>(params_.lambda)));
}

std::string CmaEs::stop_reason() const {
  if (updates_ == 0) return "";
  std::ostringstream why;
  why.precision(3);
  const auto n = static_cast<Eigen::Index>(params_.n);

  if (best_history_.size() >= history_length()) {
    const auto [lo, hi] = std::minmax_element(best_history_.begin(), best_history_.end());
    const double range = std::max(*hi, last_max_) - std::min(*lo, last_min_);
    if (range < tol_.tolfun) {
      why << "tolfun: the values of the last " << best_history_.size() << " generations lie within " << range;
      return why.str();
    }
  }
  const Eigen::VectorXd sd = sigma_ * c_.diagonal().cwiseSqrt();
  if ((sigma_ * pc_.cwiseAbs().array() < tol_.tolx).all() && (sd.array() < tol_.tolx).all()) {
    why << "tolx: every standard deviation is below " << tol_.tolx;
    return why.str();
  }
  if (sigma_ * d_.maxCoeff() > kTolXUp * tol_.sigma0) {
    why << "tolxup: the step size grew to " << sigma_ * d_.maxCoeff() << ", over " << kTolXUp << " x sigma0";
    return why.str();
  }
  const Eigen::Index axis = static_cast<Eigen::Index>(updates_ % static_cast<std::int64_t>(n));
  if ((mean_ + 0.1 * sigma_ * d_(axis) * b_.col(axis)).cwiseEqual(mean_).all()) {
    why << "noeffectaxis: a step of 0.1 standard deviations along axis " << axis << " leaves the mean unchanged";
    return why.str();
  }
  for (Eigen::Index i = 0; i < n; ++i) {
    if (mean_(i) + 0.2 * sd(i) == mean_(i)) {
      why << "noeffectcoord: a step of 0.2 standard deviations in coordinate " << i << " leaves the mean unchanged";
      return why.str();
    }
  }
  const double condition = (d_.maxCoeff() / d_.minCoeff()) * (d_.maxCoeff() / d_.minCoeff());
  if (condition > kMaxCondition) {
    why << "conditioncov: the condition number of C is " << condition << ", over " << kMaxCondition;
    return why.str();
  }
  return "";
}

void CmaEs::write(StateWriter& w) const {
  const auto n = static_cast<Eigen::Index>(params_.n);
  w.field("updates").integer(updates_);
  w.field("sigma").number(sigma_);
  w.field("mean");
  for (Eigen::Index i = 0; i < n; ++i) w.number(mean_(i));
  w.field("pc");
  for (Eigen::Index i = 0; i < n; ++i) w.number(pc_(i));
  w.field("ps");
  for (Eigen::Index i = 0; i < n; ++i) w.number(ps_(i));
  w.field("covariance").line();
  for (Eigen::Index i = 0; i < n; ++i) {
    for (Eigen::Index j = 0; j < n; ++j) w.number(c_(i, j));
    w.line();
  }
  w.field("history").integer(static_cast<std::int64_t>(best_history_.size()));
  for (double v : best_history_) w.number(v);
  w.field("last").number(last_min_).number(last_max_);
}

CmaEs CmaEs::read(StateReader& r, std::size_t n, std::int64_t lambda, CmaTolerances tolerances) {
  const auto dims = static_cast<Eigen::Index>(n);
  const std::int64_t updates = r.integer_field("updates", 0);
  r.field("sigma");
  const double sigma = r.finite("sigma");
  r.require(sigma > 0, "sigma must be > 0 (got " + std::to_string(sigma) + ")");
  const auto vector = [&](std::string_view name, bool in_box) {
    r.field(name);
    Eigen::VectorXd v(dims);
    for (Eigen::Index i = 0; i < dims; ++i) {
      v(i) = r.finite(name);
      if (in_box) r.require(v(i) >= 0 && v(i) <= 1, std::string(name) + " must lie in [0, 1]");
    }
    return v;
  };
  Eigen::VectorXd mean = vector("mean", true);
  Eigen::VectorXd pc = vector("pc", false);
  Eigen::VectorXd ps = vector("ps", false);
  r.field("covariance");
  Eigen::MatrixXd c(dims, dims);
  for (Eigen::Index i = 0; i < dims; ++i)
    for (Eigen::Index j = 0; j < dims; ++j) c(i, j) = r.finite("covariance");
  r.require((c.array() == c.transpose().array()).all() && (c.diagonal().array() > 0).all(),
            "covariance must be symmetric with a positive diagonal");
  std::deque<double> history;
  for (std::size_t k = r.count_field("history"); k > 0; --k) history.push_back(r.number("a history value"));
  r.field("last");
  const double last_min = r.number("last");
  const double last_max = r.number("last");

  CmaEs es(std::move(mean), sigma, lambda, tolerances);
  r.require(history.size() <= es.history_length(), "history is longer than its " +
                                                       std::to_string(es.history_length()) + " generations");
  es.updates_ = updates;
  es.pc_ = std::move(pc);
  es.ps_ = std::move(ps);
  es.c_ = std::move(c);
  es.best_history_ = std::move(history);
  es.last_min_ = last_min;
  es.last_max_ = last_max;
  es.decompose();
  return es;
}

}  // namespace ranktune::search
