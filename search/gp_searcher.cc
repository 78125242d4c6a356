// GP-BO's options, logEI, the acquisition's search, observations and saved state
// (search/gp_searcher.h: the algorithm and its papers, Jones et al. 1998 and Ament et al.,
// NeurIPS 2023; the model is search/gaussian_process.cc).
#include "search/gp_searcher.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <numbers>
#include <numeric>
#include <stdexcept>

#include <Eigen/Dense>

#include "search/box_minimizer.h"
#include "search/saved_state.h"

namespace ranktune::search {

namespace gp {

namespace {

constexpr double kLogSqrt2Pi = 0.91893853320467274178;  // log(2 pi) / 2: Ament et al.'s c1
const double kSqrt2 = std::sqrt(2.0);

// erfcx(x) = exp(x^2) erfc(x) for x >= 0: directly while erfc(x) is a normal double, then
// by its asymptotic series (six terms: relative error below 2e-15 from x = 26).
double erfcx(double x) {
  if (x < 26) return std::exp(x * x) * std::erfc(x);
  const double u = 1 / (2 * x * x);
  double term = 1, sum = 1;
  for (int k = 1; k <= 6; ++k) {
    term *= -(2 * k - 1) * u;
    sum += term;
  }
  return sum / (x * std::sqrt(std::numbers::pi));
}

// log(1 - exp(a)) for a < 0, accurate at both ends (Maechler 2012).
double log1mexp(double a) { return a > -std::numbers::ln2 ? std::log(-std::expm1(a)) : std::log1p(-std::exp(a)); }

// log(1 - sqrt(pi) x erfcx(x)) for x >= 1/sqrt2: Ament et al.'s log1mexp(log(erfcx(-z/sqrt2)
// |z|) + c2) at x = -z/sqrt2. Where erfcx is its series, 1 minus the series is summed
// directly (u - 3u^2 + 15u^3 - ..., u = 1/(2x^2)), which keeps full relative precision where
// the difference of nearly equal numbers would lose it.
double log_one_minus(double x) {
  if (x < 26) return log1mexp(std::log(std::sqrt(std::numbers::pi) * x * erfcx(x)));
  const double u = 1 / (2 * x * x);
  double term = u, sum = 0;
  for (int k = 1; k <= 7; ++k) {
    sum += term;
    term *= -(2 * k + 1) * u;
  }
  return std::log(sum);
}

// Below this z, log h(z) = -z^2/2 - c1 - 2 log|z| to double precision.
const double kFarZ = -1 / std::sqrt(DBL_EPSILON);

}  // namespace

double log_h(double z) {
  if (z > -1) {
    const double phi = std::exp(-0.5 * z * z) / std::sqrt(2 * std::numbers::pi);
    return std::log(phi + z * 0.5 * std::erfc(-z / kSqrt2));
  }
  if (z > kFarZ) return -0.5 * z * z - kLogSqrt2Pi + log_one_minus(-z / kSqrt2);
  return -0.5 * z * z - kLogSqrt2Pi - 2 * std::log(-z);
}

double log_h_slope(double z) {
  if (z > -1) {
    const double phi = std::exp(-0.5 * z * z) / std::sqrt(2 * std::numbers::pi);
    const double cdf = 0.5 * std::erfc(-z / kSqrt2);
    return cdf / (phi + z * cdf);
  }
  // log Phi(z) - log h(z) with the common -z^2/2 cancelled by hand: Phi(z) = exp(-z^2/2)
  // erfcx(-z/sqrt2) / 2.
  const double log_cdf = std::log(erfcx(-z / kSqrt2) / 2);
  if (z > kFarZ) return std::exp(log_cdf + kLogSqrt2Pi - log_one_minus(-z / kSqrt2));
  return std::exp(log_cdf + kLogSqrt2Pi + 2 * std::log(-z));
}

double log_ei(double mean, double sigma, double best) { return log_h((mean - best) / sigma) + std::log(sigma); }

}  // namespace gp

namespace {

constexpr std::size_t kFitPoints = 200;  // most observations a hyperparameter fit uses
constexpr std::size_t kTopBases = 5;     // observations the local candidates start from
constexpr std::size_t kRefined = 3;      // candidates refined by gradient
// Per suggestion, n^2 times the candidates scored, and n^2 times the evaluations of one
// refinement, at most (n: modelled points and fantasies): each costs O(n^2).
constexpr double kCandidateBudget = 1e8;
constexpr double kRefineBudget = 2e7;
constexpr double kMinVariance = 1e-12;   // of the standardized score

}  // namespace

GpOptions GpOptions::read(const Options& options) {
  OptionReader r(options, "gp");
  GpOptions g;
  g.n_startup = r.positive_integer("n_startup", g.n_startup, kMaxTrials);
  const std::string pending = r.text("pending", "kriging_believer", {"kriging_believer", "constant_liar"});
  g.pending = pending == "constant_liar" ? Pending::ConstantLiar : Pending::KrigingBeliever;
  g.n_candidates = r.positive_integer("n_candidates", g.n_candidates, kMaxCandidates);
  g.max_points = r.integer("max_points", g.max_points);
  r.require(g.max_points >= 10, "max_points", "must be >= 10 (got " + std::to_string(g.max_points) + ")");
  r.at_most("max_points", g.max_points, kMaxGpPoints);
  r.finish();
  return g;
}

GpSearcher::GpSearcher(Space space, SearcherOptions options, GpOptions gp)
    : NumSamplesSearcher(std::move(options)), full_(std::move(space)), gp_(gp), log_(options_.metric, options_.mode) {
  for (const auto& p : full_.params)
    if (!p.conditional()) space_.params.push_back(p);
  for (const auto& p : space_.params) categorical_.push_back(p.domain.is_listed());
  hyper_ = gp::Hyper::initial(categorical_.size());
}

Suggestion GpSearcher::suggest(TrialId id) {
  if (next_ >= options_.num_samples) return {Suggestion::Kind::Finished, {}};
  Rng rng = index_rng(options_.seed, static_cast<std::uint64_t>(next_++));
  Point point = log_.observed().size() < static_cast<std::size_t>(gp_.n_startup) || space_.params.empty()
                    ? parzen::sample_point(space_, rng)
                    : propose(rng);
  Config config = parzen::decode(space_, point);
  if (full_.conditional()) {
    // The conditional parameters, after the model's draws: at random, then those whose
    // condition fails dropped.
    for (const auto& p : full_.params)
      if (p.conditional()) config[p.name] = sample(p.domain, rng);
    drop_inactive(full_, config);
  }
  log_.suggest(id, std::move(point));
  return {Suggestion::Kind::Config, std::move(config)};
}

void GpSearcher::adopt(TrialId id, const Config& config) {
  // The model's parameters (those without a condition) are in every config.
  log_.suggest(id, parzen::encode(space_, config));
}

void GpSearcher::on_trial_complete(TrialId id, const Metrics& last, bool error) { log_.complete(id, last, error); }

std::vector<std::size_t> GpSearcher::model_rows() const {
  std::vector<std::size_t> rows = chosen_;
  for (std::size_t i = fitted_at_; i < model_observed_; ++i) rows.push_back(i);
  return rows;
}

void GpSearcher::choose_rows() {
  // Every observation up to the fit, or past max_points the best half and then the most
  // recent, in completion order.
  const auto cap = static_cast<std::size_t>(gp_.max_points);
  chosen_.resize(fitted_at_);
  std::iota(chosen_.begin(), chosen_.end(), std::size_t{0});
  if (fitted_at_ <= cap) return;
  std::stable_sort(chosen_.begin(), chosen_.end(),
                   [&](std::size_t a, std::size_t b) { return log_.observed()[a].score > log_.observed()[b].score; });
  std::vector<bool> take(fitted_at_, false);
  for (std::size_t i = 0; i < cap / 2; ++i) take[chosen_[i]] = true;
  std::size_t count = cap / 2;
  for (std::size_t i = fitted_at_; i-- > 0 && count < cap;) {
    if (!take[i]) {
      take[i] = true;
      ++count;
    }
  }
  chosen_.clear();
  for (std::size_t i = 0; i < fitted_at_; ++i)
    if (take[i]) chosen_.push_back(i);
}

Eigen::VectorXd GpSearcher::unit_point(const Point& p) const {
  Eigen::VectorXd u(static_cast<Eigen::Index>(p.size()));
  for (std::size_t j = 0; j < p.size(); ++j) u[static_cast<Eigen::Index>(j)] = to_unit(space_.params[j].domain, p[j]);
  return u;
}

void GpSearcher::rebuild() {
  Eigen::MatrixXd points(static_cast<Eigen::Index>(chosen_.size()), static_cast<Eigen::Index>(categorical_.size()));
  for (std::size_t r = 0; r < chosen_.size(); ++r)
    points.row(static_cast<Eigen::Index>(r)) = unit_point(log_.observed()[chosen_[r]].point).transpose();
  if (!model_) model_ = std::make_unique<gp::GaussianProcess>(categorical_);
  model_->reset(hyper_, points);
  hyper_ = model_->hyper();  // with the noise the factor needed
  model_observed_ = fitted_at_;
}

void GpSearcher::refit() {
  const bool warm = fitted_at_ > 0;
  fitted_at_ = log_.observed().size();
  choose_rows();
  // The fit's data: the chosen rows thinned to kFitPoints by a fixed stride, with the
  // scores standardized over all chosen rows.
  const std::size_t c = chosen_.size(), m = std::min(c, kFitPoints);
  Eigen::VectorXd all(static_cast<Eigen::Index>(c));
  for (std::size_t r = 0; r < c; ++r) all[static_cast<Eigen::Index>(r)] = log_.observed()[chosen_[r]].score;
  const double mean = all.mean();
  const double sd = std::sqrt((all.array() - mean).square().mean());
  Eigen::MatrixXd points(static_cast<Eigen::Index>(m), static_cast<Eigen::Index>(categorical_.size()));
  Eigen::VectorXd y(static_cast<Eigen::Index>(m));
  for (std::size_t r = 0; r < m; ++r) {
    const std::size_t row = r * c / m;
    points.row(static_cast<Eigen::Index>(r)) = unit_point(log_.observed()[chosen_[row]].point).transpose();
    y[static_cast<Eigen::Index>(r)] = sd > 0 ? (all[static_cast<Eigen::Index>(row)] - mean) / sd : 0.0;
  }
  hyper_ = gp::fit(categorical_, points, y, warm ? &hyper_ : nullptr);
  rebuild();
}

void GpSearcher::update_model() {
  // After a restore, the rows of the last fit come back first: the refit rule counts them.
  if (!model_ && fitted_at_ > 0) choose_rows();
  const std::size_t n = log_.observed().size();
  if (fitted_at_ == 0 || n - fitted_at_ >= std::max<std::size_t>(1, chosen_.size() / 10)) {
    refit();
  } else if (!model_) {
    rebuild();
  }
  model_->truncate(chosen_.size() + (model_observed_ - fitted_at_));
  for (; model_observed_ < n; ++model_observed_) model_->append(unit_point(log_.observed()[model_observed_].point));
}

void GpSearcher::snap(Eigen::VectorXd& u) const {
  for (std::size_t j = 0; j < categorical_.size(); ++j) {
    const Domain& dom = space_.params[j].domain;
    const auto jj = static_cast<Eigen::Index>(j);
    if (dom.is_listed() || is_discrete(dom)) u[jj] = to_unit(dom, from_unit(dom, u[jj]));
  }
}

GpSearcher::Scene GpSearcher::prepare() {
  update_model();
  Scene scene;
  scene.rows = model_rows();
  const auto n = static_cast<Eigen::Index>(scene.rows.size());
  // Standardized scores of the modelled observations, then the pending trials' fantasies:
  // their values come from the model before any is added (under the Kriging believer,
  // adding one leaves the mean elsewhere unchanged anyway).
  Eigen::VectorXd& y = scene.y;
  y.resize(n + static_cast<Eigen::Index>(log_.pending().size()));
  for (Eigen::Index r = 0; r < n; ++r) y[r] = log_.observed()[scene.rows[static_cast<std::size_t>(r)]].score;
  const double mean = y.head(n).mean();
  const double sd = std::sqrt((y.head(n).array() - mean).square().mean());
  y.head(n) = (y.head(n).array() - mean) / (sd > 0 ? sd : 1.0);
  const double worst = y.head(n).minCoeff();
  model_->set_targets(y.head(n));
  Eigen::Index f = n;
  for (const auto& [pid, p] : log_.pending()) {
    scene.pending.push_back(unit_point(p));
    y[f++] = gp_.pending == GpOptions::Pending::KrigingBeliever ? model_->predict(scene.pending.back()).mean : worst;
  }
  for (const auto& u : scene.pending) model_->append(u);
  model_->set_targets(y);
  // The fantasies count as observations for the incumbent too (a believed value above the
  // best leaves no improvement next to its point), as in Ginsbourger et al.
  scene.best = y.maxCoeff();
  return scene;
}

double GpSearcher::acquisition(const Scene& scene, const Eigen::VectorXd& x, Eigen::VectorXd* gradient) const {
  const auto p = model_->predict(x, gradient != nullptr);
  const bool floored = p.variance < kMinVariance;
  const double sigma = std::sqrt(std::max(p.variance, kMinVariance));
  const double z = (p.mean - scene.best) / sigma;
  if (gradient != nullptr) {
    // d log EI = slope(z) dz + dsigma / sigma, dz = (dmean - z dsigma) / sigma.
    const Eigen::VectorXd dsigma = floored ? Eigen::VectorXd::Zero(x.size()) : Eigen::VectorXd(p.variance_gradient / (2 * sigma));
    *gradient = gp::log_h_slope(z) * (p.mean_gradient - z * dsigma) / sigma + dsigma / sigma;
  }
  return gp::log_h(z) + std::log(sigma);
}

double GpSearcher::log_ei_at(const Config& config) {
  if (log_.observed().empty() || space_.params.empty()) throw std::logic_error("gp: no model before the first observation");
  const Scene scene = prepare();
  Eigen::VectorXd x = unit_point(parzen::encode(space_, config));
  const double a = acquisition(scene, x, nullptr);
  model_->truncate(scene.rows.size());
  return a;
}

GpSearcher::Point GpSearcher::propose(Rng& rng) {
  const Scene scene = prepare();
  const std::size_t d = categorical_.size();
  const auto dd = static_cast<Eigen::Index>(d);
  const std::size_t n = scene.rows.size();

  // Candidates: half uniform, half around the best observations.
  const double rows_total = static_cast<double>(model_->size());
  const auto m = static_cast<Eigen::Index>(std::min<double>(
      static_cast<double>(gp_.n_candidates), std::max(64.0, std::floor(kCandidateBudget / std::max(1.0, rows_total * rows_total)))));
  const int refine_evaluations = static_cast<int>(std::clamp(kRefineBudget / std::max(1.0, rows_total * rows_total), 20.0, 100.0));
  std::vector<std::size_t> top(n);
  std::iota(top.begin(), top.end(), std::size_t{0});
  const std::size_t bases = std::min(kTopBases, n);
  std::partial_sort(top.begin(), top.begin() + static_cast<std::ptrdiff_t>(bases), top.end(), [&](std::size_t a, std::size_t b) {
    const double ya = scene.y[static_cast<Eigen::Index>(a)], yb = scene.y[static_cast<Eigen::Index>(b)];
    return ya > yb || (ya == yb && a < b);
  });
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::normal_distribution<double> step(0.0, 0.1);
  Eigen::MatrixXd candidates(m, dd);
  for (Eigen::Index c = 0; c < m; ++c) {
    Eigen::VectorXd u(dd);
    const bool local = c % 2 == 1;
    const Point& base = log_.observed()[scene.rows[top[static_cast<std::size_t>(c / 2) % bases]]].point;
    for (std::size_t j = 0; j < d; ++j) {
      const Domain& dom = space_.params[j].domain;
      const auto jj = static_cast<Eigen::Index>(j);
      if (dom.is_listed()) {
        const bool redraw = !local || unit(rng) < 1.0 / static_cast<double>(d);
        u[jj] = redraw ? static_cast<double>(std::uniform_int_distribution<std::size_t>(0, dom.values.size() - 1)(rng))
                       : base[j];
      } else {
        u[jj] = local ? std::clamp(to_unit(dom, base[j]) + step(rng), 0.0, 1.0) : unit(rng);
      }
    }
    snap(u);
    candidates.row(c) = u.transpose();
  }
  Eigen::VectorXd means, variances;
  model_->predict(candidates, means, variances);
  // Every point scored, with its score: the answer is the best that no pending trial has.
  std::vector<std::pair<double, Eigen::VectorXd>> scored;
  scored.reserve(static_cast<std::size_t>(m) + kRefined);
  for (Eigen::Index c = 0; c < m; ++c)
    scored.emplace_back(gp::log_ei(means[c], std::sqrt(std::max(variances[c], kMinVariance)), scene.best),
                        candidates.row(c).transpose());

  std::vector<std::size_t> order(static_cast<std::size_t>(m));
  std::iota(order.begin(), order.end(), std::size_t{0});
  const std::size_t refined = std::min<std::size_t>(kRefined, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(refined), order.end(), [&](std::size_t a, std::size_t b) {
    return scored[a].first > scored[b].first || (scored[a].first == scored[b].first && a < b);
  });
  Eigen::VectorXd lower = Eigen::VectorXd::Zero(dd), upper = Eigen::VectorXd::Ones(dd);
  for (std::size_t r = 0; r < refined; ++r) {
    Eigen::VectorXd x = scored[order[r]].second;
    // Categorical dimensions stay put while the numeric ones follow the gradient.
    for (std::size_t j = 0; j < d; ++j) {
      const auto jj = static_cast<Eigen::Index>(j);
      lower[jj] = categorical_[j] ? x[jj] : 0.0;
      upper[jj] = categorical_[j] ? x[jj] : 1.0;
    }
    const BoxObjective negative = [&](const Eigen::VectorXd& v, Eigen::VectorXd& g) {
      const double a = acquisition(scene, v, &g);
      g = -g;
      return -a;
    };
    x = minimize_in_box(negative, x, lower, upper,
                        {.max_iterations = 30, .max_evaluations = refine_evaluations, .gradient_tolerance = 1e-5,
                         .relative_tolerance = 1e-9})
            .x;
    snap(x);
    double score = acquisition(scene, x, nullptr);
    // One coordinate pass over the discrete dimensions: every other value of a categorical
    // one, the neighbours of an integer or quantized one.
    for (std::size_t j = 0; j < d; ++j) {
      const Domain& dom = space_.params[j].domain;
      const auto jj = static_cast<Eigen::Index>(j);
      std::vector<double> tries;
      if (dom.is_listed()) {
        for (std::size_t k = 0; k < dom.values.size(); ++k) tries.push_back(static_cast<double>(k));
      } else if (is_discrete(dom)) {
        const double raw = from_unit(dom, x[jj]);
        const double q = dom.kind == DomainKind::RandInt ? 1.0 : dom.q;
        for (const double v : {raw - q, raw + q})
          if (v >= dom.low && v <= (dom.kind == DomainKind::RandInt ? dom.high - 1 : dom.high)) tries.push_back(to_unit(dom, v));
      }
      for (const double v : tries) {
        if (v == x[jj]) continue;
        Eigen::VectorXd t = x;
        t[jj] = v;
        snap(t);
        if (const double s = acquisition(scene, t, nullptr); s > score) {
          score = s;
          x = t;
        }
      }
    }
    scored.emplace_back(score, std::move(x));
  }
  model_->truncate(n);
  // A point a pending trial already has is evaluated once already (in a discrete space the
  // Kriging believer can want it again): it is taken only when every scored point is one.
  const auto is_pending = [&](const Eigen::VectorXd& x) {
    return std::any_of(scene.pending.begin(), scene.pending.end(), [&](const Eigen::VectorXd& p) { return p == x; });
  };
  const std::pair<double, Eigen::VectorXd>* pick = nullptr;
  for (int allow_pending = 0; allow_pending < 2 && pick == nullptr; ++allow_pending) {
    for (const auto& candidate : scored)
      if ((allow_pending == 1 || !is_pending(candidate.second)) && (pick == nullptr || candidate.first > pick->first))
        pick = &candidate;
  }
  Point out(d);
  for (std::size_t j = 0; j < d; ++j) out[j] = from_unit(space_.params[j].domain, pick->second[static_cast<Eigen::Index>(j)]);
  return out;
}

// Layout (version 1): the suggestion count; the pending trials "ID POINT"; the
// observations "ID VALUE POINT" (the metric as reported); the count of observations at the
// last fit (0: none yet); the hyperparameters "LAMBDA_1..d SIGNAL NOISE MEAN".
std::string GpSearcher::save() const {
  StateWriter w("gp", 1);
  w.field("next").integer(next_);
  log_.write(w);
  w.field("fitted_at").integer(static_cast<std::int64_t>(fitted_at_));
  w.field("hyper");
  for (const double l : hyper_.inverse_squared_lengthscales) w.number(l);
  w.number(hyper_.signal_variance).number(hyper_.noise_variance).number(hyper_.mean);
  return w.str();
}

void GpSearcher::restore(const std::string& state) {
  StateReader r(state, "gp", 1, "gp searcher");
  const std::int64_t next = r.integer_field("next", 0);
  ObservationLog log(options_.metric, options_.mode);
  log.read(r, space_);
  const auto fitted_at = static_cast<std::size_t>(r.integer_field("fitted_at", 0, static_cast<std::int64_t>(log.observed().size())));
  r.field("hyper");
  gp::Hyper hyper = gp::Hyper::initial(categorical_.size());
  const auto positive = [&](const char* what) {
    const double v = r.finite(what);
    r.require(v > 0, std::string(what) + " must be > 0");
    return v;
  };
  for (auto& l : hyper.inverse_squared_lengthscales) l = positive("an inverse squared lengthscale");
  hyper.signal_variance = positive("the signal variance");
  hyper.noise_variance = positive("the noise variance");
  hyper.mean = r.finite("the prior mean");
  r.finish();
  next_ = next;
  log_ = std::move(log);
  fitted_at_ = fitted_at;
  hyper_ = hyper;
  chosen_.clear();
  model_.reset();  // rebuilt from the fit's observations and hyperparameters when next asked
  model_observed_ = 0;
}

}  // namespace ranktune::search
