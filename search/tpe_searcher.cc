#include "search/tpe_searcher.h"

#include "search/saved_state.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numbers>
#include <numeric>
#include <sstream>
#include <stdexcept>

namespace ranktune::search {
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

// A mixture of Gaussians truncated to [low, high]: one per observation plus the prior.
class Mixture {
 public:
  Mixture(const std::vector<double>& xs, double low, double high, double prior_weight)
      : low_(low), high_(high) {
    const std::size_t n = xs.size(), k = n + 1;
    mu_ = xs;
    mu_.push_back(0.5 * (low + high));
    std::vector<double> w = forgetting_weights(n);
    w.push_back(prior_weight);

    // Bandwidth: the larger gap to the sorted neighbours (the range ends count as
    // neighbours, except for the two extreme components: Optuna's consider_endpoints=false).
    std::vector<std::size_t> order(k);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return mu_[a] < mu_[b]; });
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
    double run = 0.0;
    for (std::size_t i = 0; i < k; ++i) {
      run += w[i] / total;
      cumulative_[i] = run;
      const double mass = normal_cdf((high - mu_[i]) / sigma_[i]) - normal_cdf((low - mu_[i]) / sigma_[i]);
      log_coef_[i] = std::log(w[i] / total) - std::log(sigma_[i] * std::sqrt(2.0 * std::numbers::pi)) -
                     std::log(std::max(mass, 1e-300));
    }
  }

  double draw(Rng& rng) const {
    const double u = std::uniform_real_distribution<double>(0.0, cumulative_.back())(rng);
    const auto c = std::min<std::size_t>(
        std::upper_bound(cumulative_.begin(), cumulative_.end(), u) - cumulative_.begin(), mu_.size() - 1);
    std::normal_distribution<double> normal(mu_[c], sigma_[c]);
    for (int t = 0; t < kMaxRejections; ++t) {
      const double x = normal(rng);
      if (x >= low_ && x <= high_) return x;
    }
    return std::clamp(mu_[c], low_, high_);
  }

  double log_pdf(double x) const {
    // log-sum-exp over the components, in two passes to stay finite for far-out x.
    double top = kNegInf;
    for (std::size_t i = 0; i < mu_.size(); ++i) {
      const double z = (x - mu_[i]) / sigma_[i];
      top = std::max(top, log_coef_[i] - 0.5 * z * z);
    }
    double sum = 0.0;
    for (std::size_t i = 0; i < mu_.size(); ++i) {
      const double z = (x - mu_[i]) / sigma_[i];
      // Terms below e^-40 of the largest cannot change the sum's double; skipping them
      // avoids exp's slow underflow path, which dominated with many narrow components.
      if (const double e = log_coef_[i] - 0.5 * z * z - top; e > -40.0) sum += std::exp(e);
    }
    return top + std::log(sum);
  }

 private:
  double low_, high_;
  std::vector<double> mu_, sigma_, cumulative_, log_coef_;
};

// Log probabilities of a categorical estimator: forgetting-weighted counts plus
// prior_weight spread evenly, so no value ever has probability zero.
std::vector<double> categorical_log_probs(const std::vector<double>& indices, std::size_t size,
                                          double prior_weight) {
  std::vector<double> p(size, prior_weight / static_cast<double>(size));
  const auto w = forgetting_weights(indices.size());
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

TpeOptions TpeOptions::read(const Options& options) {
  OptionReader r(options, "tpe");
  TpeOptions t;
  t.n_startup = r.integer("n_startup", t.n_startup);
  r.require(t.n_startup >= 1, "n_startup", "must be >= 1 (got " + std::to_string(t.n_startup) + ")");
  t.gamma = r.number("gamma", t.gamma);
  r.require(t.gamma > 0 && t.gamma < 1, "gamma",
            "must be in (0, 1), the fraction of observations in the good set (got " +
                format_number(t.gamma) + "); 0.25 is the usual choice");
  t.n_ei_candidates = r.integer("n_ei_candidates", t.n_ei_candidates);
  r.require(t.n_ei_candidates >= 1, "n_ei_candidates",
            "must be >= 1 (got " + std::to_string(t.n_ei_candidates) + ")");
  t.prior_weight = r.number("prior_weight", t.prior_weight);
  r.require(t.prior_weight > 0 && std::isfinite(t.prior_weight), "prior_weight",
            "must be > 0 (got " + format_number(t.prior_weight) + ")");
  r.finish();
  return t;
}

TpeSearcher::TpeSearcher(Space space, SearcherOptions options, TpeOptions tpe)
    : space_(std::move(space)), options_(std::move(options)), tpe_(tpe) {}

TpeSearcher::Point TpeSearcher::encode(const Config& config) const {
  Point p;
  p.reserve(space_.params.size());
  for (const auto& param : space_.params) {
    const Domain& d = param.domain;
    const Value& v = config.at(param.name);
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

Config TpeSearcher::decode(const Point& point) const {
  Config config;
  for (std::size_t i = 0; i < space_.params.size(); ++i) {
    const Domain& d = space_.params[i].domain;
    if (d.is_listed()) {
      const Value& v = d.values[static_cast<std::size_t>(point[i])];
      config[space_.params[i].name] = d.type() == ValueType::Float ? Value(to_double(v)) : v;
    } else if (d.kind == DomainKind::RandInt) {
      config[space_.params[i].name] = static_cast<std::int64_t>(point[i]);
    } else {
      config[space_.params[i].name] = point[i];
    }
  }
  return config;
}

double TpeSearcher::propose(std::size_t param, const std::vector<const Observation*>& good,
                            const std::vector<const Observation*>& bad, Rng& rng) const {
  const Domain& d = space_.params[param].domain;
  std::vector<double> xs_good, xs_bad;
  xs_good.reserve(good.size());
  xs_bad.reserve(bad.size());
  const bool listed = d.is_listed();
  for (const auto* o : good) xs_good.push_back(listed ? o->point[param] : to_model(d, o->point[param]));
  for (const auto* o : bad) xs_bad.push_back(listed ? o->point[param] : to_model(d, o->point[param]));

  double best = 0.0, best_score = kNegInf;
  if (listed) {
    const auto l = categorical_log_probs(xs_good, d.values.size(), tpe_.prior_weight);
    const auto g = categorical_log_probs(xs_bad, d.values.size(), tpe_.prior_weight);
    std::vector<double> pl(l.size());
    for (std::size_t c = 0; c < l.size(); ++c) pl[c] = std::exp(l[c]);
    std::discrete_distribution<std::size_t> draw_l(pl.begin(), pl.end());
    for (std::int64_t c = 0; c < tpe_.n_ei_candidates; ++c) {
      const std::size_t x = draw_l(rng);
      if (const double s = l[x] - g[x]; s > best_score) best_score = s, best = static_cast<double>(x);
    }
    return best;
  }
  const auto [low, high] = model_range(d);
  const Mixture l(xs_good, low, high, tpe_.prior_weight);
  const Mixture g(xs_bad, low, high, tpe_.prior_weight);
  for (std::int64_t c = 0; c < tpe_.n_ei_candidates; ++c) {
    const double x = l.draw(rng);
    if (const double s = l.log_pdf(x) - g.log_pdf(x); s > best_score) best_score = s, best = x;
  }
  return from_model(d, best);
}

Suggestion TpeSearcher::suggest(TrialId id) {
  if (next_ >= options_.num_samples) return {Suggestion::Kind::Finished, {}};
  Rng rng = index_rng(options_.seed, static_cast<std::uint64_t>(next_++));
  Point point;
  if (observed_.size() < static_cast<std::size_t>(tpe_.n_startup)) {
    Config config;
    for (const auto& p : space_.params) config[p.name] = sample(p.domain, rng);
    point = encode(config);
  } else {
    // Split by score, best first; a stable sort keeps ties in completion order so the split
    // is deterministic. The estimators then see each set in completion order, which the
    // forgetting weights need.
    const std::size_t n = observed_.size();
    std::vector<std::size_t> rank(n);
    std::iota(rank.begin(), rank.end(), 0);
    std::stable_sort(rank.begin(), rank.end(),
                     [&](auto a, auto b) { return observed_[a].score > observed_[b].score; });
    const auto n_good = std::clamp<std::size_t>(
        static_cast<std::size_t>(std::ceil(tpe_.gamma * static_cast<double>(n))), 1, n);
    std::vector<bool> is_good(n, false);
    for (std::size_t i = 0; i < n_good; ++i) is_good[rank[i]] = true;
    std::vector<const Observation*> good, bad;
    for (std::size_t i = 0; i < n; ++i) (is_good[i] ? good : bad).push_back(&observed_[i]);
    point.resize(space_.params.size());
    for (std::size_t i = 0; i < space_.params.size(); ++i) point[i] = propose(i, good, bad, rng);
  }
  Config config = decode(point);
  pending_[id] = std::move(point);
  return {Suggestion::Kind::Config, std::move(config)};
}

void TpeSearcher::on_trial_complete(TrialId id, const Metrics& last, bool error) {
  const auto it = pending_.find(id);
  if (it == pending_.end()) return;  // not ours, or already complete
  Point point = std::move(it->second);
  pending_.erase(it);
  if (error) return;
  const auto m = last.find(options_.metric);
  if (m == last.end() || !std::isfinite(m->second)) return;
  observed_.push_back({id, sign(options_.mode) * m->second, std::move(point)});
}

std::string TpeSearcher::save() const {
  std::ostringstream out;
  out << "tpe 1\nnext " << next_ << "\npending " << pending_.size() << "\n";
  for (const auto& [id, point] : pending_) {
    out << id;
    for (double x : point) {
      out << ' ';
      write_double(out, x);
    }
    out << '\n';
  }
  out << "observed " << observed_.size() << "\n";
  for (const auto& o : observed_) {
    // The metric as reported, not the signed score, so the text reads like the results.
    out << o.id << ' ';
    write_double(out, sign(options_.mode) * o.score);
    for (double x : o.point) {
      out << ' ';
      write_double(out, x);
    }
    out << '\n';
  }
  return out.str();
}

void TpeSearcher::restore(const std::string& state) {
  const auto bad = [](const std::string& why) {
    return std::invalid_argument("tpe searcher: bad saved state: " + why);
  };
  std::istringstream in(state);
  std::string word;
  int version = 0;
  if (!(in >> word >> version) || word != "tpe" || version != 1) throw bad("expected 'tpe 1'");
  const auto count = [&](const char* key) {
    long long n = -1;
    if (!(in >> word >> n) || word != key || n < 0) throw bad(std::string("expected '") + key + " N'");
    return n;
  };
  const auto read_point = [&] {
    Point p(space_.params.size());
    for (std::size_t i = 0; i < p.size(); ++i) {
      const Domain& d = space_.params[i].domain;
      p[i] = read_double(in, "point value");
      if (!std::isfinite(p[i])) throw bad("expected " + std::to_string(p.size()) + " finite values per row");
      const bool integral = d.is_listed() || d.kind == DomainKind::RandInt;
      if (integral && p[i] != std::floor(p[i])) throw bad("'" + space_.params[i].name + "' needs an integer");
      if (d.is_listed() && (p[i] < 0 || p[i] >= static_cast<double>(d.values.size()))) {
        throw bad("'" + space_.params[i].name + "' index out of range");
      }
      if (!d.is_listed() && (p[i] < d.low || p[i] > d.high)) {
        throw bad("'" + space_.params[i].name + "' outside its domain");
      }
    }
    return p;
  };
  const long long next = count("next");
  std::map<TrialId, Point> pending;
  for (long long n = count("pending"); n > 0; --n) {
    TrialId id = 0;
    if (!(in >> id)) throw bad("expected a pending trial id");
    pending[id] = read_point();
  }
  std::vector<Observation> observed;
  for (long long n = count("observed"); n > 0; --n) {
    Observation o{};
    if (!(in >> o.id)) throw bad("expected an observation's id");
    const double value = read_double(in, "observation value");
    if (!std::isfinite(value)) throw bad("an observation's value must be finite");
    o.score = sign(options_.mode) * value;
    o.point = read_point();
    observed.push_back(std::move(o));
  }
  if (in >> word) throw bad("unexpected '" + word + "' after the observations");
  next_ = next;
  pending_ = std::move(pending);
  observed_ = std::move(observed);
}

}  // namespace ranktune::search
