// Gaussian-process posterior, marginal likelihood and hyperparameter fit
// (search/gaussian_process.h: the model and its reference, Rasmussen & Williams 2006).
#include "search/gaussian_process.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>

#include <Eigen/Cholesky>
#include <Eigen/Dense>

#include "search/box_minimizer.h"

namespace ranktune::search::gp {

namespace {

constexpr double kSqrt5 = 2.23606797749978969641;
// The fit's bounds in theta = (log lambda, log s, log sigma^2, m).
constexpr double kMinLambda = 1e-4, kMaxLambda = 1e4;
constexpr double kMinSignal = 1e-2, kMaxSignal = 1e2;
constexpr double kMaxNoise = 10;
constexpr double kMeanBound = 10;

// k / s and dk/d(r^2) / s at r2.
inline double matern(double r2, double* derivative) {
  const double r = std::sqrt(5.0 * r2);
  const double e = std::exp(-r);
  if (derivative != nullptr) *derivative = -5.0 / 6.0 * (1.0 + r) * e;
  return (1.0 + r + r * r / 3.0) * e;
}

std::size_t capacity_for(std::size_t n) {
  std::size_t cap = 64;
  while (cap < n) cap *= 2;
  return cap;
}

// The squared scaled distance between rows a and b of two matrices.
template <class A, class B>
double scaled_r2(const std::vector<bool>& categorical, const Eigen::VectorXd& lambda, const A& a, const B& b) {
  double r2 = 0;
  for (std::size_t j = 0; j < categorical.size(); ++j) {
    const auto jj = static_cast<Eigen::Index>(j);
    const double delta = a(jj) - b(jj);
    r2 += lambda[jj] * (categorical[j] ? (delta != 0 ? 1.0 : 0.0) : delta * delta);
  }
  return r2;
}

Eigen::VectorXd pack(const Hyper& h) {
  const auto d = h.inverse_squared_lengthscales.size();
  Eigen::VectorXd theta(d + 3);
  theta.head(d) = h.inverse_squared_lengthscales.array().log();
  theta[d] = std::log(h.signal_variance);
  theta[d + 1] = std::log(h.noise_variance);
  theta[d + 2] = h.mean;
  return theta;
}

Hyper unpack(const Eigen::VectorXd& theta) {
  const auto d = theta.size() - 3;
  Hyper h;
  h.inverse_squared_lengthscales = theta.head(d).array().exp();
  h.signal_variance = std::exp(theta[d]);
  h.noise_variance = std::exp(theta[d + 1]);
  h.mean = theta[d + 2];
  return h;
}

}  // namespace

Hyper Hyper::initial(std::size_t dims) {
  Hyper h;
  h.inverse_squared_lengthscales = Eigen::VectorXd::Ones(static_cast<Eigen::Index>(dims));
  return h;
}

double matern52(double r2) { return matern(r2, nullptr); }

GaussianProcess::GaussianProcess(std::vector<bool> categorical)
    : categorical_(std::move(categorical)), hyper_(Hyper::initial(categorical_.size())) {}

void GaussianProcess::reserve(std::size_t n) {
  if (n <= static_cast<std::size_t>(l_.rows())) return;
  const auto cap = static_cast<Eigen::Index>(capacity_for(n));
  const auto used = static_cast<Eigen::Index>(n_);
  Eigen::MatrixXd x(cap, static_cast<Eigen::Index>(dims())), l(cap, cap);
  x.topRows(used) = x_.topRows(used);
  l.topLeftCorner(used, used) = l_.topLeftCorner(used, used);
  x_.swap(x);
  l_.swap(l);
}

void GaussianProcess::kernel_row(const Eigen::VectorXd& x, std::size_t n, Eigen::VectorXd& k,
                                 Eigen::VectorXd* dk) const {
  const auto m = static_cast<Eigen::Index>(n);
  Eigen::ArrayXd r2 = Eigen::ArrayXd::Zero(m);
  for (std::size_t j = 0; j < dims(); ++j) {
    const auto jj = static_cast<Eigen::Index>(j);
    const auto column = x_.col(jj).head(m).array();
    const double lambda = hyper_.inverse_squared_lengthscales[jj];
    if (categorical_[j]) {
      r2 += lambda * (column != x[jj]).cast<double>();
    } else {
      r2 += lambda * (column - x[jj]).square();
    }
  }
  const Eigen::ArrayXd r = (5.0 * r2).sqrt();
  const Eigen::ArrayXd e = (-r).exp();
  k = hyper_.signal_variance * (1.0 + r + r.square() / 3.0) * e;
  if (dk != nullptr) *dk = (-5.0 / 6.0 * hyper_.signal_variance) * (1.0 + r) * e;
}

double GaussianProcess::kernel(const Eigen::VectorXd& a, const Eigen::VectorXd& b) const {
  return hyper_.signal_variance * matern52(scaled_r2(categorical_, hyper_.inverse_squared_lengthscales, a, b));
}

void GaussianProcess::reset(const Hyper& hyper, const Eigen::MatrixXd& points) {
  if (static_cast<std::size_t>(hyper.inverse_squared_lengthscales.size()) != dims() ||
      static_cast<std::size_t>(points.cols()) != dims()) {
    throw std::invalid_argument("GaussianProcess::reset: dimensions do not match");
  }
  hyper_ = hyper;
  n_ = 0;
  alpha_.resize(0);
  const Eigen::Index n = points.rows();
  reserve(static_cast<std::size_t>(n));
  x_.topRows(n) = points;
  Eigen::MatrixXd k(n, n);
  for (Eigen::Index b = 0; b < n; ++b) {
    for (Eigen::Index a = b; a < n; ++a) {
      k(a, b) = hyper_.signal_variance *
                matern52(scaled_r2(categorical_, hyper_.inverse_squared_lengthscales, points.row(a), points.row(b)));
    }
  }
  // The noise only grows where floating point needs it (duplicates with a tiny noise).
  for (int tries = 0;; ++tries) {
    Eigen::MatrixXd kn = k;
    kn.diagonal().array() += hyper_.noise_variance;
    Eigen::LLT<Eigen::MatrixXd, Eigen::Lower> llt(kn);
    if (llt.info() == Eigen::Success) {
      l_.topLeftCorner(n, n) = llt.matrixL();
      break;
    }
    if (tries >= 12) throw std::runtime_error("GaussianProcess: the kernel matrix is not positive definite");
    hyper_.noise_variance *= 10;
  }
  n_ = static_cast<std::size_t>(n);
}

void GaussianProcess::append(const Eigen::VectorXd& x) {
  reserve(n_ + 1);
  const auto n = static_cast<Eigen::Index>(n_);
  Eigen::VectorXd k;
  kernel_row(x, n_, k, nullptr);
  // The new row of L: v = L^-1 k, and d^2 = k(x, x) + sigma^2 - v.v, the variance of the new
  // target given the others, which is never below sigma^2.
  l_.topLeftCorner(n, n).triangularView<Eigen::Lower>().solveInPlace(k);
  l_.row(n).head(n) = k.transpose();
  const double d2 = hyper_.signal_variance + hyper_.noise_variance - k.squaredNorm();
  l_(n, n) = std::sqrt(std::max(d2, hyper_.noise_variance));
  x_.row(n) = x.transpose();
  ++n_;
  alpha_.resize(0);
}

void GaussianProcess::truncate(std::size_t n) {
  if (n > n_) throw std::invalid_argument("GaussianProcess::truncate past the end");
  n_ = n;
  alpha_.resize(0);
}

void GaussianProcess::set_targets(const Eigen::VectorXd& y) {
  if (static_cast<std::size_t>(y.size()) != n_) throw std::invalid_argument("GaussianProcess::set_targets: size");
  const auto n = static_cast<Eigen::Index>(n_);
  const auto l = l_.topLeftCorner(n, n).triangularView<Eigen::Lower>();
  alpha_ = y.array() - hyper_.mean;
  l.solveInPlace(alpha_);
  l.transpose().solveInPlace(alpha_);
}

GaussianProcess::Prediction GaussianProcess::predict(const Eigen::VectorXd& x, bool gradient) const {
  if (static_cast<std::size_t>(alpha_.size()) != n_) throw std::logic_error("GaussianProcess::predict before set_targets");
  const auto n = static_cast<Eigen::Index>(n_);
  Prediction p;
  Eigen::VectorXd k, dk;
  kernel_row(x, n_, k, gradient ? &dk : nullptr);
  p.mean = hyper_.mean + k.dot(alpha_);
  Eigen::VectorXd v = k;
  const auto l = l_.topLeftCorner(n, n).triangularView<Eigen::Lower>();
  l.solveInPlace(v);
  p.variance = std::max(0.0, hyper_.signal_variance - v.squaredNorm());
  if (!gradient) return p;
  // dk_i/dx_j = dk_i/dr2 * 2 lambda_j (x_j - X_ij); mean' = k'.alpha; variance' = -2 k'.w
  // with w = K^-1 k = L^-T v.
  l.transpose().solveInPlace(v);
  const auto d = static_cast<Eigen::Index>(dims());
  p.mean_gradient = Eigen::VectorXd::Zero(d);
  p.variance_gradient = Eigen::VectorXd::Zero(d);
  const Eigen::ArrayXd a = dk.array() * alpha_.array(), w = dk.array() * v.array();
  for (Eigen::Index j = 0; j < d; ++j) {
    if (categorical_[static_cast<std::size_t>(j)]) continue;
    const Eigen::ArrayXd delta = x[j] - x_.col(j).head(n).array();
    const double scale = 2.0 * hyper_.inverse_squared_lengthscales[j];
    p.mean_gradient[j] = scale * (a * delta).sum();
    p.variance_gradient[j] = -2.0 * scale * (w * delta).sum();
  }
  return p;
}

void GaussianProcess::predict(const Eigen::MatrixXd& xs, Eigen::VectorXd& mean, Eigen::VectorXd& variance) const {
  if (static_cast<std::size_t>(alpha_.size()) != n_) throw std::logic_error("GaussianProcess::predict before set_targets");
  const auto n = static_cast<Eigen::Index>(n_);
  const Eigen::Index m = xs.rows();
  Eigen::MatrixXd ks(n, m);
  Eigen::VectorXd k;
  for (Eigen::Index c = 0; c < m; ++c) {
    kernel_row(xs.row(c).transpose(), n_, k, nullptr);
    ks.col(c) = k;
  }
  mean = (ks.transpose() * alpha_).array() + hyper_.mean;
  l_.topLeftCorner(n, n).triangularView<Eigen::Lower>().solveInPlace(ks);
  variance = (hyper_.signal_variance - ks.colwise().squaredNorm().array()).max(0.0).matrix().transpose();
}

double log_posterior(const std::vector<bool>& categorical, const Eigen::MatrixXd& points, const Eigen::VectorXd& y,
                     const Hyper& hyper, Eigen::VectorXd* gradient) {
  const Eigen::Index n = points.rows();
  const auto d = static_cast<Eigen::Index>(categorical.size());
  const Eigen::VectorXd& lambda = hyper.inverse_squared_lengthscales;
  const double s = hyper.signal_variance, noise = hyper.noise_variance;
  // K (lower triangle, noise-free) and dk/dr2 per pair.
  Eigen::MatrixXd k(n, n), dk(n, n);
  for (Eigen::Index b = 0; b < n; ++b) {
    for (Eigen::Index a = b; a < n; ++a) {
      double g = 0;
      k(a, b) = s * matern(scaled_r2(categorical, lambda, points.row(a), points.row(b)), &g);
      dk(a, b) = s * g;
    }
  }
  Eigen::MatrixXd kn = k.selfadjointView<Eigen::Lower>();
  kn.diagonal().array() += noise;
  const Eigen::LLT<Eigen::MatrixXd, Eigen::Lower> llt(kn);
  if (llt.info() != Eigen::Success) return -std::numeric_limits<double>::infinity();
  const Eigen::VectorXd residual = y.array() - hyper.mean;
  const Eigen::VectorXd alpha = llt.solve(residual);
  const double log_det = 2.0 * llt.matrixLLT().diagonal().array().log().sum();
  double value = -0.5 * residual.dot(alpha) - 0.5 * log_det - 0.5 * static_cast<double>(n) * std::log(2 * std::numbers::pi);
  // Priors (Optuna's GPSampler): exp(-(0.1/lambda + 0.1 lambda)) per dimension, Gamma(2, 1)
  // on s, Gamma(1.1, 30) on sigma^2; constants dropped.
  value += -(0.1 / lambda.array() + 0.1 * lambda.array()).sum() + (std::log(s) - s) + (0.1 * std::log(noise) - 30 * noise);
  if (gradient == nullptr) return value;
  // d/dtheta = 1/2 tr((alpha alpha^T - K^-1) dK/dtheta), over the lower triangle with the
  // off-diagonal pairs counted twice.
  const Eigen::MatrixXd w = alpha * alpha.transpose() - llt.solve(Eigen::MatrixXd::Identity(n, n));
  gradient->setZero(d + 3);
  double d_signal = 0;
  Eigen::VectorXd d_lambda = Eigen::VectorXd::Zero(d);
  for (Eigen::Index b = 0; b < n; ++b) {
    for (Eigen::Index a = b; a < n; ++a) {
      const double weight = (a == b ? 0.5 : 1.0) * w(a, b);
      d_signal += weight * k(a, b);
      if (a == b) continue;
      const double wg = weight * dk(a, b);
      for (Eigen::Index j = 0; j < d; ++j) {
        const double delta = points(a, j) - points(b, j);
        d_lambda[j] += wg * (categorical[static_cast<std::size_t>(j)] ? (delta != 0 ? 1.0 : 0.0) : delta * delta);
      }
    }
  }
  gradient->head(d) = d_lambda.cwiseProduct(lambda).array() + (0.1 / lambda.array() - 0.1 * lambda.array());
  (*gradient)[d] = d_signal + (1 - s);
  (*gradient)[d + 1] = 0.5 * noise * w.trace() + (0.1 - 30 * noise);
  (*gradient)[d + 2] = alpha.sum();
  return value;
}

Hyper fit(const std::vector<bool>& categorical, const Eigen::MatrixXd& points, const Eigen::VectorXd& y,
          const Hyper* warm) {
  const auto d = static_cast<Eigen::Index>(categorical.size());
  Eigen::VectorXd lower(d + 3), upper(d + 3);
  lower.head(d).setConstant(std::log(kMinLambda));
  upper.head(d).setConstant(std::log(kMaxLambda));
  lower[d] = std::log(kMinSignal);
  upper[d] = std::log(kMaxSignal);
  lower[d + 1] = std::log(kMinNoise);
  upper[d + 1] = std::log(kMaxNoise);
  lower[d + 2] = -kMeanBound;
  upper[d + 2] = kMeanBound;
  const BoxObjective objective = [&](const Eigen::VectorXd& theta, Eigen::VectorXd& gradient) {
    const double v = log_posterior(categorical, points, y, unpack(theta), &gradient);
    gradient = -gradient;
    return -v;
  };
  // Starts: a refit from the last fit and from the initial values; the first fit from the
  // initial values and from short lengthscales with little noise (a wiggly function).
  std::vector<Hyper> starts;
  starts.push_back(warm != nullptr ? *warm : Hyper::initial(categorical.size()));
  if (warm != nullptr) {
    starts.push_back(Hyper::initial(categorical.size()));
  } else {
    Hyper shorter = Hyper::initial(categorical.size());
    shorter.inverse_squared_lengthscales.setConstant(25.0);
    shorter.noise_variance = 0.01;
    starts.push_back(shorter);
  }
  // The optimum is wanted to a few digits only (the objective is a sum over the points):
  // tolerances as loose as Optuna's GPSampler's keep a refit cheap.
  const BoxMinimizerOptions options{.max_iterations = 60, .gradient_tolerance = 1e-3, .relative_tolerance = 1e-8};
  BoxMinimum best;
  bool found = false;
  for (const Hyper& start : starts) {
    BoxMinimum m = minimize_in_box(objective, pack(start), lower, upper, options);
    if (!found || m.f < best.f) {
      best = std::move(m);
      found = true;
    }
  }
  return unpack(best.x);
}

}  // namespace ranktune::search::gp
