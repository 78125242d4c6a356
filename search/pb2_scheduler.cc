// PB2's observations of score changes, its GP-UCB choice of the explored hyperparameters and
// its saved state (search/pb2_scheduler.h: the algorithm and its paper, Parker-Holder et al.,
// NeurIPS 2020; the population's bookkeeping and exploit are PBT's, search/pbt_scheduler.cc).
#include "search/pb2_scheduler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include <Eigen/Dense>

#include "search/box_minimizer.h"
#include "search/saved_state.h"

namespace ranktune::search {

namespace {

constexpr std::size_t kWindow = 128;     // observations kept
constexpr std::size_t kMinData = 3;      // observations before the model chooses
constexpr int kUniformCandidates = 256;
constexpr int kLocalCandidates = 64;
constexpr std::size_t kRefined = 2;
constexpr std::size_t kMaxBatch = 128;   // running intervals the variance counts, the newest

}  // namespace

Pb2Scheduler::Pb2Scheduler(SchedulerContext ctx, const Options& options)
    : PbtScheduler(std::move(ctx), options, "pb2") {
  for (const Param& p : ctx_.space->params) {
    // Listed values are explored as PBT does; parameters outside `[scheduler] mutable` are
    // the donor's, unmodelled.
    if (p.domain.is_listed() || !ctx_.space->may_mutate(p.name)) continue;
    numeric_.push_back(&p);
    Domain d = p.domain;
    const auto [low, high] = explore_bounds(p);
    // The model scales loguniform values on the log scale and rounds integers into the
    // bounds: bounds that allow neither are an error here, not a NaN later.
    if (d.kind == DomainKind::LogUniform && !(low > 0)) {
      throw OptionError("bounds." + p.name, "pb2 option 'bounds." + p.name + "': '" + p.name +
                                                "' is loguniform, so its bounds must be > 0");
    }
    if (d.kind == DomainKind::RandInt && std::ceil(low) > std::floor(high)) {
      throw OptionError("bounds." + p.name, "pb2 option 'bounds." + p.name + "' holds no integer of '" + p.name + "'");
    }
    if (d.kind == DomainKind::RandInt) {
      d.low = std::ceil(low);
      d.high = std::floor(high) + 1;  // randint's high is excluded
    } else {
      d.low = low;
      d.high = high;
    }
    bounded_.push_back(d);
  }
  hyper_ = gp::Hyper::initial(1 + numeric_.size());
}

std::vector<double> Pb2Scheduler::unit_values(const Config& config) const {
  std::vector<double> x(numeric_.size(), 0.5);
  for (std::size_t j = 0; j < numeric_.size(); ++j)
    if (const auto it = config.find(numeric_[j]->name); it != config.end()) x[j] = to_unit(bounded_[j], to_double(it->second));
  return x;
}

void Pb2Scheduler::at_perturbation_point(const Trial& trial, double score) {
  const auto now = static_cast<double>(trial.iterations);
  // The interval that ends here is an observation: its change of score per iteration.
  if (const auto it = running_.find(trial.id); it != running_.end()) {
    const Interval& iv = it->second;
    if (std::isfinite(score) && std::isfinite(iv.score) && now > iv.start) {
      data_.push_back({iv.start, (score - iv.score) / (now - iv.start), iv.x});
      if (data_.size() > kWindow) data_.pop_front();
    }
  }
  running_[trial.id] = {now, score, unit_values(trial.config)};
}

Config Pb2Scheduler::explore_for(const Trial& trial, TrialId donor, const Config& donor_config, std::uint64_t index) {
  // PBT's explore moves the listed values; the model chooses the numeric ones over it.
  Config config = explore(donor_config, index);
  const auto now = static_cast<double>(trial.iterations);
  // The trial goes on from the donor's checkpoint, so from the donor's score there.
  const std::optional<double> donor_score = score_of(donor);
  const auto donor_interval = running_.find(donor);
  const std::vector<double> donor_x =
      donor_interval != running_.end() ? donor_interval->second.x : unit_values(config);
  running_.erase(trial.id);  // not a pending point of its own choice
  choose(trial.id, now, donor_x, config, choices_++);
  running_[trial.id] = {now, donor_score.value_or(-INFINITY), unit_values(config)};
  return config;
}

void Pb2Scheduler::forget(TrialId id) {
  PbtScheduler::forget(id);
  running_.erase(id);
}

Eigen::VectorXd Pb2Scheduler::input(double start, const std::vector<double>& x) const {
  Eigen::VectorXd p(static_cast<Eigen::Index>(1 + x.size()));
  p[0] = start / static_cast<double>(std::max<std::int64_t>(1, ctx_.max_t));
  for (std::size_t j = 0; j < x.size(); ++j) p[static_cast<Eigen::Index>(j + 1)] = x[j];
  return p;
}

void Pb2Scheduler::training_data(Eigen::MatrixXd& points, Eigen::VectorXd& y) const {
  // The observations, their changes standardized.
  const auto n = static_cast<Eigen::Index>(data_.size());
  points.resize(n, static_cast<Eigen::Index>(1 + numeric_.size()));
  y.resize(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const Observation& o = data_[static_cast<std::size_t>(i)];
    points.row(i) = input(o.start, o.x).transpose();
    y[i] = o.change;
  }
  const double mean = y.mean(), sd = std::sqrt((y.array() - mean).square().mean());
  y = (y.array() - mean) / (sd > 0 ? sd : 1.0);
}

Pb2Scheduler::Models Pb2Scheduler::models(TrialId trial) const {
  const gp::GaussianProcess empty(std::vector<bool>(1 + numeric_.size(), false));
  Models m{empty, empty, 0};
  Eigen::MatrixXd points;
  Eigen::VectorXd y;
  training_data(points, y);
  const auto n = y.size();
  const double dims = static_cast<double>(1 + numeric_.size());
  m.kappa = std::sqrt(0.2 * dims * std::log(2.0 * static_cast<double>(n)));
  m.mean.reset(hyper_, points);
  m.mean.set_targets(y);
  // The variance with the other running intervals added as if observed (GP-BUCB): their
  // values do not change a variance, so they are 0. The newest kMaxBatch of them (by
  // start, then id), so that a large population does not make the model as large.
  std::vector<std::pair<double, TrialId>> newest;
  for (const auto& [id, iv] : running_)
    if (id != trial) newest.emplace_back(iv.start, id);
  const std::size_t keep = std::min(kMaxBatch, newest.size());
  std::partial_sort(newest.begin(), newest.begin() + static_cast<std::ptrdiff_t>(keep), newest.end(),
                    [](const auto& a, const auto& b) { return a > b; });
  m.spread = m.mean;
  for (std::size_t i = 0; i < keep; ++i) {
    const Interval& iv = running_.at(newest[i].second);
    m.spread.append(input(iv.start, iv.x));
  }
  Eigen::VectorXd all = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(m.spread.size()));
  all.head(n) = y;
  m.spread.set_targets(all);
  return m;
}

double Pb2Scheduler::ucb(const Models& m, const Eigen::VectorXd& x, Eigen::VectorXd* gradient) {
  const auto mean = m.mean.predict(x, gradient != nullptr);
  const auto spread = m.spread.predict(x, gradient != nullptr);
  const double sigma = std::sqrt(std::max(spread.variance, 1e-12));
  if (gradient != nullptr) *gradient = mean.mean_gradient + m.kappa * spread.variance_gradient / (2 * sigma);
  return mean.mean + m.kappa * sigma;
}

double Pb2Scheduler::acquisition(TrialId trial, std::int64_t iterations, const Config& config) const {
  if (!fitted_ || data_.size() < kMinData) throw std::logic_error("pb2: no model yet");
  return ucb(models(trial), input(static_cast<double>(iterations), unit_values(config)), nullptr);
}

void Pb2Scheduler::choose(TrialId trial, double time, const std::vector<double>& donor, Config& config,
                          std::uint64_t index) {
  const std::size_t nx = numeric_.size();
  if (nx == 0) return;
  Rng rng = index_rng(ctx_.seed ^ 0x5851f42d4c957f2dULL, index);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const auto dims = static_cast<Eigen::Index>(1 + nx);
  Eigen::VectorXd best_x = input(time, std::vector<double>(nx, 0.0));
  if (data_.size() < kMinData) {
    for (std::size_t j = 0; j < nx; ++j) best_x[static_cast<Eigen::Index>(j + 1)] = unit(rng);
  } else {
    Eigen::MatrixXd points;
    Eigen::VectorXd y;
    training_data(points, y);
    hyper_ = gp::fit(std::vector<bool>(static_cast<std::size_t>(dims), false), points, y, fitted_ ? &hyper_ : nullptr);
    fitted_ = true;
    const Models m = models(trial);
    // Candidates: uniform, and near the donor's values; the best refined by gradient with
    // the time held.
    std::normal_distribution<double> step(0.0, 0.1);
    const int count = kUniformCandidates + kLocalCandidates;
    Eigen::MatrixXd candidates(count, dims);
    for (int c = 0; c < count; ++c) {
      candidates(c, 0) = best_x[0];
      for (std::size_t j = 0; j < nx; ++j)
        candidates(c, static_cast<Eigen::Index>(j + 1)) =
            c < kUniformCandidates ? unit(rng) : std::clamp(donor[j] + step(rng), 0.0, 1.0);
    }
    Eigen::VectorXd means, ignored, variances;
    m.mean.predict(candidates, means, ignored);
    m.spread.predict(candidates, ignored, variances);
    std::vector<double> scores(static_cast<std::size_t>(count));
    for (int c = 0; c < count; ++c)
      scores[static_cast<std::size_t>(c)] = means[c] + m.kappa * std::sqrt(std::max(variances[c], 1e-12));
    std::vector<std::size_t> order(scores.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::partial_sort(order.begin(), order.begin() + kRefined, order.end(), [&](std::size_t a, std::size_t b) {
      return scores[a] > scores[b] || (scores[a] == scores[b] && a < b);
    });
    Eigen::VectorXd lower = Eigen::VectorXd::Zero(dims), upper = Eigen::VectorXd::Ones(dims);
    lower[0] = upper[0] = best_x[0];
    const BoxObjective negative = [&](const Eigen::VectorXd& v, Eigen::VectorXd& g) {
      const double u = ucb(m, v, &g);
      g = -g;
      return -u;
    };
    double best = -INFINITY;
    for (std::size_t r = 0; r < kRefined; ++r) {
      const BoxMinimum found = minimize_in_box(negative, candidates.row(static_cast<Eigen::Index>(order[r])).transpose(),
                                               lower, upper, {.max_iterations = 30, .gradient_tolerance = 1e-6});
      if (-found.f > best) {
        best = -found.f;
        best_x = found.x;
      }
    }
  }
  for (std::size_t j = 0; j < nx; ++j) {
    // An inactive parameter stays absent (unless the new values turn its condition on).
    if (!config.contains(numeric_[j]->name)) continue;
    const double raw = from_unit(bounded_[j], best_x[static_cast<Eigen::Index>(j + 1)]);
    config[numeric_[j]->name] = numeric_[j]->domain.kind == DomainKind::RandInt ? Value(static_cast<std::int64_t>(raw)) : Value(raw);
  }
  settle_conditions(*ctx_.space, config, rng);
}

// Layout (version 1): the choice count; "fit" 0 or 1 and the hyperparameters (time's
// lambda first, then one per numeric parameter, signal, noise, mean); the running intervals
// "ID START SCORE X..."; the scores "ID SCORE"; the observations "START CHANGE X..."; and
// PBT's state, inner.
std::string Pb2Scheduler::save() const {
  StateWriter w("pb2", 1);
  w.field("choices").integer(static_cast<std::int64_t>(choices_));
  w.field("fit").integer(fitted_ ? 1 : 0);
  for (const double l : hyper_.inverse_squared_lengthscales) w.number(l);
  w.number(hyper_.signal_variance).number(hyper_.noise_variance).number(hyper_.mean);
  w.field("running").integer(static_cast<std::int64_t>(running_.size())).line();
  for (const auto& [id, iv] : running_) {
    w.integer(id).number(iv.start).number(iv.score);
    for (const double v : iv.x) w.number(v);
    w.line();
  }
  // PBT's scores, which its inner state holds too (the layout of version 1, when PB2 kept
  // a copy of its own).
  w.field("scores").integer(static_cast<std::int64_t>(scores().size())).line();
  for (const auto& [id, score] : scores()) w.integer(id).number(score).line();
  w.field("data").integer(static_cast<std::int64_t>(data_.size())).line();
  for (const auto& o : data_) {
    w.number(o.start).number(o.change);
    for (const double v : o.x) w.number(v);
    w.line();
  }
  w.inner(PbtScheduler::save());
  return w.str();
}

void Pb2Scheduler::restore(const std::string& state) {
  StateReader r(state, "pb2", 1, "pb2");
  const auto choices = static_cast<std::uint64_t>(r.integer_field("choices", 0));
  const bool fitted = r.integer_field("fit", 0, 1) == 1;
  gp::Hyper hyper = gp::Hyper::initial(1 + numeric_.size());
  for (auto& l : hyper.inverse_squared_lengthscales) {
    l = r.finite("an inverse squared lengthscale");
    r.require(l > 0, "an inverse squared lengthscale must be > 0");
  }
  hyper.signal_variance = r.finite("the signal variance");
  hyper.noise_variance = r.finite("the noise variance");
  r.require(hyper.signal_variance > 0 && hyper.noise_variance > 0, "the signal and noise variances must be > 0");
  hyper.mean = r.finite("the prior mean");
  const auto values = [&](std::size_t count, const std::string& what) {
    std::vector<double> x(count);
    for (auto& v : x) v = r.finite(what);
    return x;
  };
  std::map<TrialId, Interval> running;
  for (std::size_t n = r.count_field("running"); n > 0; --n) {
    const TrialId id = r.integer("a trial id");
    Interval iv;
    iv.start = r.finite("an interval's start");
    iv.score = r.number("an interval's score");
    iv.x = values(numeric_.size(), "an interval's hyperparameter");
    running[id] = std::move(iv);
  }
  // The scores are read again from PBT's inner state.
  for (std::size_t n = r.count_field("scores"); n > 0; --n) {
    r.integer("a trial id");
    r.number("a score");
  }
  std::deque<Observation> data;
  for (std::size_t n = r.count_field("data"); n > 0; --n) {
    Observation o;
    o.start = r.finite("an observation's start");
    o.change = r.finite("an observation's change");
    o.x = values(numeric_.size(), "an observation's hyperparameter");
    data.push_back(std::move(o));
  }
  r.require(data.size() <= kWindow, "more observations than pb2 keeps");
  const std::string inner = r.inner();
  PbtScheduler::restore(inner);  // throws, naming pbt, on a damaged inner state; before any change here
  choices_ = choices;
  fitted_ = fitted;
  hyper_ = hyper;
  running_ = std::move(running);
  data_ = std::move(data);
}

}  // namespace ranktune::search
