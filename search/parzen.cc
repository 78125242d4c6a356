// TPE's Parzen-estimator model: the mixtures, the good/bad split, the candidate draws and
// their saved state (search/parzen.h: the model and its paper, Bergstra et al., NeurIPS 2011).
#include "search/parzen.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numbers>
#include <numeric>
#include <optional>
#include <stdexcept>

#include "search/saved_state.h"

namespace ranktune::search::parzen {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();
// Hyperopt's linear forgetting: this many newest observations keep full weight.
constexpr std::size_t kFullWeight = 25;
// Rejection sampling of a truncated Gaussian accepts at least ~1/3 of draws (every mean lies
// in the range and no sigma exceeds it), so this bound is only a guard against bad luck.
constexpr int kMaxRejections = 64;

// The model's coordinate of a raw value: log scale for loguniform, the centre of the
// integer's unit cell for randint, so that [low, high) is covered evenly.
double to_model(const Domain& d, double raw) {
  if (d.kind == DomainKind::LogUniform) return std::log(raw);
  if (d.kind == DomainKind::RandInt) return raw + 0.5;
  return raw;
}

// The raw value of a model coordinate, inside the domain and of its granularity.
double from_model(const Domain& d, double x) {
  switch (d.kind) {
    case DomainKind::LogUniform: return std::clamp(std::exp(x), d.low, d.high);
    case DomainKind::QUniform: return quantize(d, std::clamp(x, d.low, d.high));
    case DomainKind::RandInt: return std::clamp(std::floor(x), d.low, d.high - 1);
    default: return std::clamp(x, d.low, d.high);
  }
}

std::pair<double, double> model_range(const Domain& d) {
  if (d.kind == DomainKind::LogUniform) return {std::log(d.low), std::log(d.high)};
  return {d.low, d.high};
}

// Optuna's default_weights (Hyperopt's linear forgetting), oldest first: the newest
// kFullWeight weigh 1, older ones ramp linearly from 1/n, so the model follows recent trials.
std::vector<double> forgetting_weights(std::size_t n) {
  std::vector<double> w(n, 1.0);
  if (n > kFullWeight) {
    const std::size_t ramp = n - kFullWeight;
    const double first = 1.0 / static_cast<double>(n);
    for (std::size_t i = 0; i < ramp; ++i) {
      w[i] = ramp == 1 ? first : first + (1.0 - first) * static_cast<double>(i) / static_cast<double>(ramp - 1);
    }
  }
  return w;
}

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

// The log-density terms of k Gaussian kernels at x, coef[i] - z^2 / 2 with z = (x - mu[i]) /
// sigma[i], into `out`; returns their largest. The candidates' scoring is mostly this loop.
// Built twice, for AVX2 and for any x86-64, and picked at load time: the lanes change no
// bit (IEEE division and products are exact per element, a maximum is exact in any order,
// and no FMA is enabled to contract them).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
double kernel_terms(const double* mu, const double* sigma, const double* coef, double x, double* out, std::size_t k) {
  for (std::size_t i = 0; i < k; ++i) {
    const double z = (x - mu[i]) / sigma[i];
    out[i] = coef[i] - 0.5 * z * z;
  }
  double top = kNegInf;
  for (std::size_t i = 0; i < k; ++i) top = out[i] > top ? out[i] : top;
  return top;
}

// A component index drawn with the probabilities whose running sums are `cumulative`.
std::size_t pick_component(const std::vector<double>& cumulative, Rng& rng) {
  const double u = std::uniform_real_distribution<double>(0.0, cumulative.back())(rng);
  return std::min<std::size_t>(std::upper_bound(cumulative.begin(), cumulative.end(), u) - cumulative.begin(),
                               cumulative.size() - 1);
}

// A mixture of Gaussians truncated to [low, high]: one per observation plus the prior.
class Mixture {
 public:
  /// `sorted`, if given, is the components' order by (mean, index), the prior (index n)
  /// included; else it is sorted here. `weights`, if given, are the observations' weights
  /// (one per x) in place of the forgetting weights.
  Mixture(const std::vector<double>& xs, double low, double high, double prior_weight,
          const std::vector<std::uint32_t>* sorted = nullptr, const std::vector<double>* weights = nullptr)
      : low_(low), high_(high) {
    const std::size_t n = xs.size(), k = n + 1;
    mu_ = xs;
    mu_.push_back(0.5 * (low + high));
    std::vector<double> w = weights ? *weights : forgetting_weights(n);
    w.push_back(prior_weight);

    // Bandwidth: the larger gap to the sorted neighbours (the range ends count as
    // neighbours, except for the two extreme components: Optuna's consider_endpoints=false).
    // Sorted as (mean, index) pairs: the order of a stable sort by mean, from contiguous keys.
    std::vector<std::uint32_t> own;
    if (sorted == nullptr) {
      std::vector<std::pair<double, std::uint32_t>> keyed(k);
      for (std::size_t i = 0; i < k; ++i) keyed[i] = {mu_[i], static_cast<std::uint32_t>(i)};
      std::sort(keyed.begin(), keyed.end());
      own.resize(k);
      for (std::size_t i = 0; i < k; ++i) own[i] = keyed[i].second;
      sorted = &own;
    }
    const std::vector<std::uint32_t>& order = *sorted;
    sigma_.assign(k, 0.0);
    for (std::size_t i = 0; i < k; ++i) {
      const double left = i == 0 ? low : mu_[order[i - 1]];
      const double right = i + 1 == k ? high : mu_[order[i + 1]];
      sigma_[order[i]] = std::max(mu_[order[i]] - left, right - mu_[order[i]]);
    }
    if (k >= 2) {
      sigma_[order[0]] = mu_[order[1]] - mu_[order[0]];
      sigma_[order[k - 1]] = mu_[order[k - 1]] - mu_[order[k - 2]];
    }
    // The "magic clip": no component narrower than range / min(100, 1 + k), so a few close
    // observations cannot collapse the density onto a point; the prior spans the range.
    const double range = high - low;
    const double min_sigma = range / std::min(100.0, 1.0 + static_cast<double>(k));
    for (auto& s : sigma_) s = std::clamp(s, min_sigma, range);
    sigma_[n] = range;

    const double total = std::accumulate(w.begin(), w.end(), 0.0);
    cumulative_.resize(k);
    log_coef_.resize(k);
    log_weight_.resize(k);
    double run = 0.0;
    // Most sigmas are the clip's one value: its log is taken once.
    double last_sigma = NAN, log_scale = 0.0;
    for (std::size_t i = 0; i < k; ++i) {
      run += w[i] / total;
      cumulative_[i] = run;
      log_weight_[i] = std::log(w[i] / total);
      // A kernel 8.5 sigmas or more inside both ends has mass 1.0 exactly in doubles (each
      // tail is below 2^-56), so the erfc calls, most of the construction, are skipped.
      const double z_high = (high - mu_[i]) / sigma_[i], z_low = (low - mu_[i]) / sigma_[i];
      const double mass = z_high >= 8.5 && z_low <= -8.5 ? 1.0 : normal_cdf(z_high) - normal_cdf(z_low);
      if (sigma_[i] != last_sigma) {
        last_sigma = sigma_[i];
        log_scale = std::log(sigma_[i] * std::sqrt(2.0 * std::numbers::pi));
      }
      log_coef_[i] = log_weight_[i] - log_scale - std::log(std::max(mass, 1e-300));
    }
  }

  double draw(Rng& rng) const { return draw_from(pick_component(cumulative_, rng), rng); }

  /// A draw from component c alone, truncated to [low, high].
  double draw_from(std::size_t c, Rng& rng) const {
    std::normal_distribution<double> normal(mu_[c], sigma_[c]);
    for (int t = 0; t < kMaxRejections; ++t) {
      const double x = normal(rng);
      if (x >= low_ && x <= high_) return x;
    }
    return std::clamp(mu_[c], low_, high_);
  }

  double log_pdf(double x) const {
    // log-sum-exp over the components, in two passes to stay finite for far-out x. The
    // terms are computed once (the division dominates the first pass) into a buffer that
    // outlives the call; the second pass adds in component order, as the result's bits need.
    thread_local std::vector<double> terms;
    const std::size_t k = mu_.size();
    terms.resize(k);
    const double* t = terms.data();
    const double top = kernel_terms(mu_.data(), sigma_.data(), log_coef_.data(), x, terms.data(), k);
    double sum = 0.0;
    for (std::size_t i = 0; i < k; ++i) {
      // Terms below e^-40 of the largest cannot change the sum's double; skipping them
      // avoids exp's slow underflow path, which dominated with many narrow components.
      if (const double e = t[i] - top; e > -40.0) sum += std::exp(e);
    }
    return top + std::log(sum);
  }

  /// log of component c's truncated Gaussian density at x, without the component's weight.
  double kernel_log_pdf(std::size_t c, double x) const {
    const double z = (x - mu_[c]) / sigma_[c];
    return log_coef_[c] - log_weight_[c] - 0.5 * z * z;
  }

 private:
  double low_, high_;
  std::vector<double> mu_, sigma_, cumulative_, log_coef_, log_weight_;
};

// Log probabilities of a categorical estimator: weighted counts (the forgetting weights
// unless `weights` gives others) plus prior_weight spread evenly, so no value ever has
// probability zero.
std::vector<double> categorical_log_probs(const std::vector<double>& indices, std::size_t size,
                                          double prior_weight, const std::vector<double>* weights = nullptr) {
  std::vector<double> p(size, prior_weight / static_cast<double>(size));
  const auto w = weights ? *weights : forgetting_weights(indices.size());
  for (std::size_t i = 0; i < indices.size(); ++i) p[static_cast<std::size_t>(indices[i])] += w[i];
  const double total = std::accumulate(p.begin(), p.end(), 0.0);
  for (auto& x : p) x = std::log(x / total);
  return p;
}

std::string format_number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

}  // namespace

ModelOptions ModelOptions::read(OptionReader& r, const ModelOptions& defaults) {
  ModelOptions m;
  m.gamma = r.number("gamma", defaults.gamma);
  r.require(m.gamma > 0 && m.gamma < 1, "gamma",
            "must be in (0, 1), the fraction of observations in the good set (got " +
                format_number(m.gamma) + "); 0.25 is the usual choice");
  m.max_good = r.integer("max_good", defaults.max_good);
  r.require(m.max_good >= 0, "max_good",
            "must be >= 0, the most observations in the good set, 0 for no cap (got " + std::to_string(m.max_good) + ")");
  m.n_ei_candidates = r.integer("n_ei_candidates", defaults.n_ei_candidates);
  r.require(m.n_ei_candidates >= 1, "n_ei_candidates",
            "must be >= 1 (got " + std::to_string(m.n_ei_candidates) + ")");
  // Each suggestion scores every candidate against every observation: rank 0 would spin.
  r.at_most("n_ei_candidates", m.n_ei_candidates, kMaxCandidates);
  m.multivariate = r.flag("multivariate", defaults.multivariate);
  m.prior_weight = r.number("prior_weight", defaults.prior_weight);
  r.require(m.prior_weight > 0 && std::isfinite(m.prior_weight), "prior_weight",
            "must be > 0 (got " + format_number(m.prior_weight) + ")");
  return m;
}

Point encode(const Space& space, const Config& config) {
  Point p;
  p.reserve(space.params.size());
  for (const auto& param : space.params) {
    const Domain& d = param.domain;
    const auto found = config.find(param.name);
    if (found == config.end()) {
      p.push_back(kInactive);  // an inactive parameter (search/condition.h)
      continue;
    }
    const Value& v = found->second;
    if (!d.is_listed()) {
      p.push_back(to_double(v));
      continue;
    }
    // Listed values are stored by index; search::sample widens numbers to the list's type,
    // so numbers compare as doubles.
    std::size_t i = 0;
    for (; i < d.values.size(); ++i) {
      const Value& c = d.values[i];
      if (std::holds_alternative<std::string>(v) ? c == v
                                                 : !std::holds_alternative<std::string>(c) && to_double(c) == to_double(v)) {
        break;
      }
    }
    p.push_back(static_cast<double>(std::min(i, d.values.size() - 1)));
  }
  return p;
}

Config decode(const Space& space, const Point& point) {
  Config config;
  for (std::size_t i = 0; i < space.params.size(); ++i) {
    const Domain& d = space.params[i].domain;
    if (std::isnan(point[i])) continue;  // inactive
    if (d.is_listed()) {
      const Value& v = d.values[static_cast<std::size_t>(point[i])];
      config[space.params[i].name] = d.type() == ValueType::Float ? Value(to_double(v)) : v;
    } else if (d.kind == DomainKind::RandInt) {
      config[space.params[i].name] = static_cast<std::int64_t>(point[i]);
    } else {
      config[space.params[i].name] = point[i];
    }
  }
  return config;
}

Config settle(const Space& space, Point& point) {
  Config config = decode(space, point);
  if (!space.conditional()) return config;
  drop_inactive(space, config);
  for (std::size_t i = 0; i < space.params.size(); ++i)
    if (!config.contains(space.params[i].name)) point[i] = kInactive;
  return config;
}

Point sample_point(const Space& space, Rng& rng) {
  Config config;
  for (const auto& p : space.params) config[p.name] = sample(p.domain, rng);
  return encode(space, config);
}

namespace {

// The components' order by (mean, index) of an estimator over `count` observations, taken
// from `along` (the observations' order along the parameter) by `position` (an observation's
// index among the estimator's, or -1 when it is not one of them), merged with the running
// points (xs[count..], which follow the observations) and the prior at `prior` (the centre,
// the last index): the order that sorting the (mean, index) pairs would give.
std::vector<std::uint32_t> merged_order(const std::vector<std::uint32_t>& along, const std::vector<std::int64_t>& position,
                                        const std::vector<double>& xs, std::size_t count, double prior) {
  std::vector<std::pair<double, std::uint32_t>> rest;
  for (std::size_t i = count; i < xs.size(); ++i) rest.emplace_back(xs[i], static_cast<std::uint32_t>(i));
  rest.emplace_back(prior, static_cast<std::uint32_t>(xs.size()));
  std::sort(rest.begin(), rest.end());
  std::vector<std::uint32_t> order;
  order.reserve(xs.size() + 1);
  std::size_t r = 0;
  for (const std::uint32_t o : along) {
    const std::int64_t pos = position[o];
    if (pos < 0) continue;
    const std::pair<double, std::uint32_t> key{xs[static_cast<std::size_t>(pos)], static_cast<std::uint32_t>(pos)};
    while (r < rest.size() && rest[r] < key) order.push_back(rest[r++].second);
    order.push_back(static_cast<std::uint32_t>(pos));
  }
  while (r < rest.size()) order.push_back(rest[r++].second);
  return order;
}

// The model-based choice of one parameter from its good and bad values. With `along` (the
// observations' order along this parameter) and the positions of each observation among
// the good and the bad ones, the estimators' components are merged rather than sorted.
// `good_weights`, if given, weigh the good points in l(x) (one per point of `good`).
double propose_param(const Domain& d, std::size_t param, const std::vector<const Point*>& good,
                     const std::vector<const Point*>& bad, const ModelOptions& options, Rng& rng,
                     const std::vector<std::uint32_t>* along = nullptr, const std::vector<std::int64_t>* good_pos = nullptr,
                     const std::vector<std::int64_t>* bad_pos = nullptr, std::size_t bad_observed = 0,
                     const std::vector<double>* good_weights = nullptr) {
  std::vector<double> xs_good, xs_bad, ws_good;
  xs_good.reserve(good.size());
  xs_bad.reserve(bad.size());
  const bool listed = d.is_listed();
  // Only the observations where the parameter was active (Optuna's TPE fits each
  // parameter's estimators on the trials that have it).
  for (std::size_t i = 0; i < good.size(); ++i) {
    const double x = (*good[i])[param];
    if (std::isnan(x)) continue;
    xs_good.push_back(listed ? x : to_model(d, x));
    if (good_weights) ws_good.push_back((*good_weights)[i]);
  }
  for (const auto* p : bad)
    if (!std::isnan((*p)[param])) xs_bad.push_back(listed ? (*p)[param] : to_model(d, (*p)[param]));
  const std::vector<double>* wl = good_weights ? &ws_good : nullptr;

  double best = 0.0, best_score = kNegInf;
  if (listed) {
    const auto l = categorical_log_probs(xs_good, d.values.size(), options.prior_weight, wl);
    const auto g = categorical_log_probs(xs_bad, d.values.size(), options.prior_weight);
    std::vector<double> pl(l.size());
    for (std::size_t c = 0; c < l.size(); ++c) pl[c] = std::exp(l[c]);
    std::discrete_distribution<std::size_t> draw_l(pl.begin(), pl.end());
    for (std::int64_t c = 0; c < options.n_ei_candidates; ++c) {
      const std::size_t x = draw_l(rng);
      if (const double s = l[x] - g[x]; s > best_score) best_score = s, best = static_cast<double>(x);
    }
    return best;
  }
  const auto [low, high] = model_range(d);
  std::vector<std::uint32_t> order_l, order_g;
  if (along != nullptr) {
    order_l = merged_order(*along, *good_pos, xs_good, xs_good.size(), 0.5 * (low + high));
    order_g = merged_order(*along, *bad_pos, xs_bad, bad_observed, 0.5 * (low + high));
  }
  const Mixture l(xs_good, low, high, options.prior_weight, along ? &order_l : nullptr, wl);
  const Mixture g(xs_bad, low, high, options.prior_weight, along ? &order_g : nullptr);
  for (std::int64_t c = 0; c < options.n_ei_candidates; ++c) {
    const double x = l.draw(rng);
    if (const double s = l.log_pdf(x) - g.log_pdf(x); s > best_score) best_score = s, best = x;
  }
  return from_model(d, best);
}

// The joint ("multivariate") estimator of Optuna's multivariate TPE and of BOHB's KDE: one
// kernel per observation over all parameters at once (a product of its per-parameter
// kernels), plus the prior. A draw picks one kernel and draws every parameter from it, so
// the values that made an observation good stay together. Coordinates are the model's
// (to_model for numbers, the index for listed values).
class Joint {
 public:
  /// `weights`, if given, weigh the points (one each) in place of the forgetting weights.
  Joint(const Space& space, const std::vector<const Point*>& points, double prior_weight,
        const std::vector<double>* weights = nullptr)
      : space_(space) {
    const std::size_t n = points.size(), k = n + 1;
    std::vector<double> w = weights ? *weights : forgetting_weights(n);
    w.push_back(prior_weight);
    const double total = std::accumulate(w.begin(), w.end(), 0.0);
    double run = 0.0;
    for (std::size_t i = 0; i < k; ++i) {
      run += w[i] / total;
      cumulative_.push_back(run);
      log_weight_.push_back(std::log(w[i] / total));
    }
    for (std::size_t p = 0; p < space.params.size(); ++p) {
      const Domain& d = space.params[p].domain;
      std::vector<double> xs;
      for (const auto* pt : points) xs.push_back(d.is_listed() ? (*pt)[p] : to_model(d, (*pt)[p]));
      if (!d.is_listed()) {
        const auto [low, high] = model_range(d);
        mixtures_.emplace_back(Mixture(xs, low, high, prior_weight, nullptr, weights));
        categorical_.emplace_back();
        continue;
      }
      // Kernel i puts prior_weight spread evenly plus 1 on observation i's value
      // (Optuna 3.1's categorical kernel); the prior kernel is uniform.
      const std::size_t size = d.values.size();
      std::vector<std::vector<double>> rows(k, std::vector<double>(size, 0.0));
      for (std::size_t i = 0; i < k; ++i) {
        const double extra = i < n ? 1.0 : 0.0;
        const double norm = i < n ? prior_weight + 1.0 : prior_weight;
        for (std::size_t v = 0; v < size; ++v) {
          const double mass = prior_weight / static_cast<double>(size) +
                              (i < n && static_cast<std::size_t>(xs[i]) == v ? extra : 0.0);
          rows[i][v] = std::log(mass / norm);
        }
      }
      mixtures_.emplace_back(std::nullopt);
      categorical_.push_back(std::move(rows));
    }
  }

  Point draw(Rng& rng) const {
    const std::size_t c = pick_component(cumulative_, rng);
    Point x(space_.params.size());
    for (std::size_t p = 0; p < x.size(); ++p) {
      if (mixtures_[p]) {
        x[p] = mixtures_[p]->draw_from(c, rng);
      } else {
        const auto& row = categorical_[p][c];
        std::vector<double> probs(row.size());
        for (std::size_t v = 0; v < row.size(); ++v) probs[v] = std::exp(row[v]);
        x[p] = static_cast<double>(std::discrete_distribution<std::size_t>(probs.begin(), probs.end())(rng));
      }
    }
    return x;
  }

  double log_pdf(const Point& x) const {
    std::vector<double> terms(cumulative_.size());
    double top = kNegInf;
    for (std::size_t c = 0; c < terms.size(); ++c) {
      double t = log_weight_[c];
      for (std::size_t p = 0; p < x.size(); ++p) {
        t += mixtures_[p] ? mixtures_[p]->kernel_log_pdf(c, x[p])
                          : categorical_[p][c][static_cast<std::size_t>(x[p])];
      }
      terms[c] = t;
      top = std::max(top, t);
    }
    double sum = 0.0;
    for (const double t : terms)
      if (t - top > -40.0) sum += std::exp(t - top);  // as in Mixture::log_pdf
    return top + std::log(sum);
  }

 private:
  const Space& space_;
  std::vector<double> cumulative_, log_weight_;
  std::vector<std::optional<Mixture>> mixtures_;                // numbers
  std::vector<std::vector<std::vector<double>>> categorical_;  // listed: [kernel][value] log p
};

// The joint choice of every parameter: the best of n_ei_candidates joint draws from l.
Point propose_joint(const Space& space, const std::vector<const Point*>& good, const std::vector<const Point*>& bad,
                    const ModelOptions& options, Rng& rng, const std::vector<double>* good_weights = nullptr) {
  const Joint l(space, good, options.prior_weight, good_weights), g(space, bad, options.prior_weight);
  Point best;
  double best_score = kNegInf;
  for (std::int64_t c = 0; c < options.n_ei_candidates; ++c) {
    Point x = l.draw(rng);
    if (const double s = l.log_pdf(x) - g.log_pdf(x); best.empty() || s > best_score) {
      best_score = s;
      best = std::move(x);
    }
  }
  for (std::size_t p = 0; p < best.size(); ++p) {
    const Domain& d = space.params[p].domain;
    if (!d.is_listed()) best[p] = from_model(d, best[p]);
  }
  return best;
}

// The multivariate proposal over a conditional space: the parameters split into groups that
// are always active together (those with the same condition; the unconditional ones are one
// group), and each group gets its own joint estimator over the observations where it was
// active. This is Optuna's multivariate TPE with group = true, whose decomposition of the
// search space by co-occurrence in past trials finds these same groups; here the conditions
// give them without looking at the history.
Point propose_groups(const Space& space, const std::vector<const Point*>& good, const std::vector<const Point*>& bad,
                     const ModelOptions& options, Rng& rng, const std::vector<double>* good_weights = nullptr) {
  std::vector<std::vector<std::size_t>> groups;
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < space.params.size(); ++i) {
    const std::string& key = space.params[i].when.text;
    const auto at = std::find(keys.begin(), keys.end(), key);
    if (at == keys.end()) {
      keys.push_back(key);
      groups.push_back({i});
    } else {
      groups[static_cast<std::size_t>(at - keys.begin())].push_back(i);
    }
  }
  Point out(space.params.size(), kInactive);
  for (const auto& group : groups) {
    Space sub;
    for (const std::size_t i : group) sub.params.push_back({space.params[i].name, space.params[i].domain});
    // A group's members are active together: its first coordinate tells. `from_w`, if
    // given, are the points' weights: those of the points kept go to `kept_w`.
    const auto project = [&](const std::vector<const Point*>& from, std::vector<Point>& store,
                             const std::vector<double>* from_w, std::vector<double>& kept_w) {
      for (std::size_t k = 0; k < from.size(); ++k) {
        const Point* p = from[k];
        if (std::isnan((*p)[group.front()])) continue;
        Point q;
        for (const std::size_t i : group) q.push_back((*p)[i]);
        store.push_back(std::move(q));
        if (from_w) kept_w.push_back((*from_w)[k]);
      }
    };
    std::vector<Point> good_store, bad_store;
    std::vector<double> good_w, bad_w;
    project(good, good_store, good_weights, good_w);
    project(bad, bad_store, nullptr, bad_w);
    std::vector<const Point*> g, b;
    for (const Point& p : good_store) g.push_back(&p);
    for (const Point& p : bad_store) b.push_back(&p);
    const Point chosen = propose_joint(sub, g, b, options, rng, good_weights ? &good_w : nullptr);
    for (std::size_t k = 0; k < group.size(); ++k) out[group[k]] = chosen[k];
  }
  return out;
}

}  // namespace

void SortedObservations::add(const Space& space, const Point& point) {
  if (orders_.empty()) {
    orders_.assign(space.params.size(), {});
    coords_.assign(space.params.size(), {});
  }
  const auto index = static_cast<std::uint32_t>(count_++);
  for (std::size_t p = 0; p < space.params.size(); ++p) {
    const Domain& d = space.params[p].domain;
    if (d.is_listed() || space.params[p].conditional()) continue;  // no order: propose sorts them
    const double x = to_model(d, point[p]);
    coords_[p].push_back(x);
    // The newest index is the largest: it goes after every equal coordinate.
    auto& order = orders_[p];
    const auto& c = coords_[p];
    const auto at = std::upper_bound(order.begin(), order.end(), x, [&](double v, std::uint32_t o) { return v < c[o]; });
    order.insert(at, index);
  }
}

void SortedObservations::assign(const Space& space, const std::vector<const Point*>& points) {
  orders_.assign(space.params.size(), {});
  coords_.assign(space.params.size(), {});
  count_ = points.size();
  for (std::size_t p = 0; p < space.params.size(); ++p) {
    const Domain& d = space.params[p].domain;
    if (d.is_listed() || space.params[p].conditional()) continue;
    std::vector<std::pair<double, std::uint32_t>> keyed(points.size());
    for (std::size_t i = 0; i < points.size(); ++i) {
      coords_[p].push_back(to_model(d, (*points[i])[p]));
      keyed[i] = {coords_[p].back(), static_cast<std::uint32_t>(i)};
    }
    std::sort(keyed.begin(), keyed.end());  // by coordinate, ties by index: as add() orders them
    for (const auto& k : keyed) orders_[p].push_back(k.second);
  }
}

std::size_t good_count(std::size_t n, const ModelOptions& options) {
  if (n == 0) return 0;
  std::size_t cap = n;
  if (options.max_good > 0) cap = std::min(cap, static_cast<std::size_t>(options.max_good));
  return std::clamp<std::size_t>(static_cast<std::size_t>(std::ceil(options.gamma * static_cast<double>(n))), 1, cap);
}

Point propose(const Space& space, const std::vector<Scored>& observations, const ModelOptions& options,
              Rng& rng, const std::vector<const Point*>& running, const SortedObservations* sorted) {
  // Split by score, best first; a stable sort keeps ties in observation order so the split
  // is deterministic. The estimators then see each set in observation order, which the
  // forgetting weights need.
  const std::size_t n = observations.size();
  if (n == 0) throw std::invalid_argument("parzen::propose: no observations");
  std::vector<std::size_t> rank(n);
  std::iota(rank.begin(), rank.end(), 0);
  std::stable_sort(rank.begin(), rank.end(), [&](auto a, auto b) {
    if (observations[a].depth != observations[b].depth) return observations[a].depth > observations[b].depth;
    return observations[a].score > observations[b].score;
  });
  Split split;
  split.good.assign(n, false);
  const std::size_t n_good = good_count(n, options);
  for (std::size_t i = 0; i < n_good; ++i) split.good[rank[i]] = true;
  std::vector<const Point*> points(n);
  for (std::size_t i = 0; i < n; ++i) points[i] = observations[i].point;
  return propose(space, points, split, options, rng, running, sorted);
}

Point propose(const Space& space, const std::vector<const Point*>& observations, const Split& split,
              const ModelOptions& options, Rng& rng, const std::vector<const Point*>& running,
              const SortedObservations* sorted) {
  const std::size_t n = observations.size();
  if (split.good.size() != n || (!split.weights.empty() && split.weights.size() != n))
    throw std::invalid_argument("parzen::propose: the split does not match the observations");
  const std::vector<bool>& is_good = split.good;
  std::vector<const Point*> good, bad;
  std::vector<double> good_weights;  // only with the split's own weights
  for (std::size_t i = 0; i < n; ++i) {
    (is_good[i] ? good : bad).push_back(observations[i]);
    if (is_good[i] && !split.weights.empty()) good_weights.push_back(split.weights[i]);
  }
  const std::vector<double>* gw = split.weights.empty() ? nullptr : &good_weights;
  bad.insert(bad.end(), running.begin(), running.end());
  if (options.multivariate) return space.conditional() ? propose_groups(space, good, bad, options, rng, gw)
                                                       : propose_joint(space, good, bad, options, rng, gw);
  // Each observation's index among the good ones and among the bad ones (-1: not there).
  std::vector<std::int64_t> good_pos, bad_pos;
  const bool merge = sorted != nullptr && sorted->size() == n;
  if (merge) {
    good_pos.assign(n, -1);
    bad_pos.assign(n, -1);
    std::int64_t g = 0, b = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (is_good[i]) {
        good_pos[i] = g++;
      } else {
        bad_pos[i] = b++;
      }
    }
  }
  Point point(space.params.size());
  for (std::size_t i = 0; i < space.params.size(); ++i) {
    const Domain& d = space.params[i].domain;
    const auto* along = merge && !d.is_listed() && !space.params[i].conditional() ? &sorted->order(i) : nullptr;
    point[i] = propose_param(d, i, good, bad, options, rng, along, &good_pos, &bad_pos, bad.size() - running.size(), gw);
  }
  return point;
}

void write_point(StateWriter& w, const Point& point) {
  for (double x : point) w.number(x);
}

Point read_point(StateReader& r, const Space& space) {
  Point p(space.params.size());
  for (std::size_t i = 0; i < p.size(); ++i) {
    const Param& param = space.params[i];
    const Domain& d = param.domain;
    if (param.conditional()) {
      p[i] = r.number("a value of '" + param.name + "'");
      if (std::isnan(p[i])) continue;  // inactive
      r.require(std::isfinite(p[i]), "a value of '" + param.name + "' must be finite");
    } else {
      p[i] = r.finite("a value of '" + param.name + "'");
    }
    const bool integral = d.is_listed() || d.kind == DomainKind::RandInt;
    r.require(!integral || p[i] == std::floor(p[i]), "'" + param.name + "' needs an integer");
    r.require(!d.is_listed() || (p[i] >= 0 && p[i] < static_cast<double>(d.values.size())),
              "'" + param.name + "' index out of range");
    r.require(d.is_listed() || (p[i] >= d.low && p[i] <= d.high), "'" + param.name + "' outside its domain");
  }
  return p;
}

}  // namespace ranktune::search::parzen
