// The "cmaes" searcher's options, the box of the space, asynchronous generations, IPOP
// restarts and saved state (search/cmaes_searcher.h: the algorithm and its papers, Hansen
// 2016 and Auger & Hansen 2005; one run's mathematics is search/cmaes.cc).
#include "search/cmaes_searcher.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "search/saved_state.h"

namespace ranktune::search {

namespace {

// The generators of the restarts' means: a stream of their own beside the suggestions',
// which count from 0 and never reach 2^63.
constexpr std::uint64_t kRestartStream = std::uint64_t{1} << 63;

constexpr double kInf = std::numeric_limits<double>::infinity();


// The value of a box coordinate u in [0, 1] for a numeric domain, of the domain's type:
// space.h's from_unit (log scale, q rounding, randint's cells), an integer for randint.
Value value_at_unit(const Domain& d, double u) {
  const double v = from_unit(d, u);
  if (d.kind == DomainKind::RandInt) return static_cast<std::int64_t>(v);
  return v;
}

void write_point(StateWriter& w, const Eigen::VectorXd& x) {
  for (Eigen::Index i = 0; i < x.size(); ++i) w.number(x(i));
}

Eigen::VectorXd read_point(StateReader& r, std::size_t n, const char* what) {
  Eigen::VectorXd x(static_cast<Eigen::Index>(n));
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    x(i) = r.finite(what);
    r.require(x(i) >= 0 && x(i) <= 1, std::string(what) + " must lie in [0, 1]");
  }
  return x;
}

}  // namespace

std::vector<std::size_t> CmaesSearcher::numeric_params(const Space& space) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < space.params.size(); ++i)
    // A conditional parameter is not in every trial: outside the box, drawn at random like
    // a listed one (Optuna's CMA-ES sampler models the intersection of the trials' spaces
    // and samples the rest independently).
    if (!space.params[i].domain.is_listed() && !space.params[i].conditional()) out.push_back(i);
  if (out.empty()) {
    throw OptionError("space",
                      "algorithm \"cmaes\" needs at least one uniform, loguniform, quniform or randint parameter "
                      "without a condition (when): it searches those, and draws choice, grid and conditional "
                      "parameters at random. For a space of listed values only, use \"tpe\" or \"grid\"");
  }
  return out;
}

CmaesOptions CmaesOptions::read(const Options& options, std::size_t dims) {
  if (dims == 0) throw std::invalid_argument("cmaes: a box of 0 dimensions");  // numeric_params refuses it first
  OptionReader r(options, "cmaes");
  CmaesOptions c;
  c.sigma0 = r.number("sigma0", c.sigma0);
  r.require(c.sigma0 > 0 && c.sigma0 <= 1, "sigma0",
            "must be in (0, 1], the initial step size as a fraction of each parameter's range (got " +
                to_string(Value(c.sigma0)) + "); the default 1/6 puts the range's ends 3 sigma from its middle");
  c.popsize = r.integer("popsize", CmaParameters::default_lambda(dims));
  r.require(c.popsize >= 2, "popsize",
            "must be >= 2 (got " + std::to_string(c.popsize) + "); the default is 4 + floor(3 ln " +
                std::to_string(dims) + ") = " + std::to_string(CmaParameters::default_lambda(dims)));
  r.at_most("popsize", c.popsize, kMaxTrials);
  c.restart = r.text("restart", "none", {"none", "ipop"}) == "ipop" ? Restart::Ipop : Restart::None;
  c.stopped = r.text("stopped_trials", "ignore", {"ignore", "rank"}) == "rank" ? Stopped::Rank : Stopped::Ignore;
  c.tolfun = r.number("tolfun", c.tolfun);
  r.require(c.tolfun >= 0 && std::isfinite(c.tolfun), "tolfun",
            "must be a finite number >= 0 (got " + to_string(Value(c.tolfun)) + ")");
  c.tolx = r.number("tolx", 1e-12 * c.sigma0);
  r.require(c.tolx >= 0 && std::isfinite(c.tolx), "tolx",
            "must be a finite number >= 0 (got " + to_string(Value(c.tolx)) + ")");
  r.finish();
  return c;
}

CmaesSearcher::CmaesSearcher(Space space, SearcherOptions options, CmaesOptions cmaes)
    : NumSamplesSearcher(std::move(options)),
      space_(std::move(space)),
      cmaes_(cmaes),
      numeric_(numeric_params(space_)),
      worst_(-kInf),
      // The first run starts at the box's centre, as Optuna's sampler does.
      es_(Eigen::VectorXd::Constant(static_cast<Eigen::Index>(numeric_.size()), 0.5), cmaes_.sigma0,
          cmaes_.popsize > 0 ? cmaes_.popsize : CmaParameters::default_lambda(numeric_.size()), cmaes_.tolerances()) {
  cmaes_.popsize = es_.lambda();
}

std::int64_t CmaesSearcher::popsize_after(std::int64_t restarts) const {
  std::int64_t lambda = cmaes_.popsize;
  for (std::int64_t i = 0; i < restarts && lambda < kMaxTrials; ++i) lambda = std::min(2 * lambda, kMaxTrials);
  return lambda;
}

Config CmaesSearcher::decode(const Eigen::VectorXd& x, Rng& rng) const {
  Config config;
  std::size_t k = 0;
  for (std::size_t i = 0; i < space_.params.size(); ++i) {
    const Param& p = space_.params[i];
    if (k < numeric_.size() && numeric_[k] == i) {
      config[p.name] = value_at_unit(p.domain, x(static_cast<Eigen::Index>(k++)));
    } else {
      config[p.name] = sample(p.domain, rng);  // listed: at random, after the point's draws
    }
  }
  return config;
}

Suggestion CmaesSearcher::suggest(TrialId id) {
  if (next_ >= options_.num_samples) return {Suggestion::Kind::Finished, {}};
  Rng rng = index_rng(options_.seed, static_cast<std::uint64_t>(next_++));
  Eigen::VectorXd x = es_.ask(rng);
  Config config = decode(x, rng);
  drop_inactive(space_, config);
  members_[id] = {generation_, 0, std::move(x)};
  return {Suggestion::Kind::Config, std::move(config)};
}

void CmaesSearcher::on_trial_result(TrialId id, std::int64_t iteration, const Metrics& metrics) {
  const auto it = members_.find(id);
  if (it != members_.end()) it->second.iteration = iteration;
}

void CmaesSearcher::adopt(TrialId id, const Config& config) {
  if (next_ > 0) return;
  Eigen::VectorXd x = Eigen::VectorXd::Constant(static_cast<Eigen::Index>(numeric_.size()), 0.5);
  for (std::size_t k = 0; k < numeric_.size(); ++k) {
    const Param& p = space_.params[numeric_[k]];
    if (const auto v = config.find(p.name); v != config.end())
      x[static_cast<Eigen::Index>(k)] = std::clamp(to_unit(p.domain, to_double(v->second)), 0.0, 1.0);
  }
  foreign_[id] = std::move(x);
}

void CmaesSearcher::on_trial_complete(TrialId id, const Metrics& last, bool error) {
  if (const auto f = foreign_.find(id); f != foreign_.end()) {
    const auto metric = last.find(options_.metric);
    if (next_ == 0 && !error && metric != last.end() && std::isfinite(metric->second) &&
        -sign(options_.mode) * metric->second < warm_best_) {
      warm_best_ = -sign(options_.mode) * metric->second;
      es_ = CmaEs(f->second, cmaes_.sigma0, es_.lambda(), cmaes_.tolerances());
    }
    foreign_.erase(f);
    return;
  }
  const auto it = members_.find(id);
  if (it == members_.end()) return;  // not ours, or already complete
  Member m = std::move(it->second);
  members_.erase(it);
  if (m.generation != generation_) return;  // late: its generation was updated without it
  const bool stopped = !error && options_.max_t > 0 && m.iteration > 0 && m.iteration < options_.max_t;
  if (stopped && cmaes_.stopped == CmaesOptions::Stopped::Ignore) return;
  const auto metric = last.find(options_.metric);
  Result r{id, kReachedEnd, 0, std::move(m.x)};
  if (!error && metric != last.end() && std::isfinite(metric->second)) {
    r.value = -sign(options_.mode) * metric->second;
    worst_ = std::max(worst_, r.value);
    if (stopped) r.tier = m.iteration;
  } else {
    r.tier = kFailed;
    r.value = worst_ > -kInf ? worst_ : kInf;
  }
  results_.push_back(std::move(r));
  if (static_cast<std::int64_t>(results_.size()) >= es_.lambda()) update();
}

void CmaesSearcher::update() {
  // Stable: equal results rank in the order they completed.
  std::stable_sort(results_.begin(), results_.end(), [](const Result& a, const Result& b) {
    return a.tier != b.tier ? a.tier > b.tier : a.value < b.value;
  });
  std::vector<Eigen::VectorXd> ranked;
  std::vector<double> values;
  for (auto& r : results_) {
    ranked.push_back(std::move(r.x));
    values.push_back(r.value);
  }
  es_.tell(ranked, values);
  results_.clear();
  ++generation_;
  if (cmaes_.restart != CmaesOptions::Restart::Ipop) return;
  std::string reason = es_.stop_reason();
  if (reason.empty()) return;
  ++restarts_;
  restart_reason_ = std::move(reason);
  Rng rng = index_rng(options_.seed, kRestartStream + static_cast<std::uint64_t>(restarts_));
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  Eigen::VectorXd mean(static_cast<Eigen::Index>(numeric_.size()));
  for (Eigen::Index i = 0; i < mean.size(); ++i) mean(i) = unit(rng);
  es_ = CmaEs(std::move(mean), cmaes_.sigma0, popsize_after(restarts_), cmaes_.tolerances());
}

std::string CmaesSearcher::save() const {
  StateWriter w("cmaes", 1);
  w.field("next").integer(next_);
  w.field("generation").integer(generation_);
  w.field("restarts").integer(restarts_).text(restart_reason_);
  w.field("popsize").integer(es_.lambda());
  w.field("worst").number(worst_);
  es_.write(w);
  w.field("members").integer(static_cast<std::int64_t>(members_.size())).line();
  for (const auto& [id, m] : members_) {
    w.integer(id).integer(m.generation).integer(m.iteration);
    write_point(w, m.x);
    w.line();
  }
  w.field("results").integer(static_cast<std::int64_t>(results_.size())).line();
  for (const auto& r : results_) {
    w.integer(r.id).integer(r.tier).number(r.value);
    write_point(w, r.x);
    w.line();
  }
  return w.str();
}

void CmaesSearcher::restore(const std::string& state) {
  StateReader r(state, "cmaes", 1, "cmaes searcher");
  const std::size_t n = numeric_.size();
  const std::int64_t next = r.integer_field("next", 0);
  const std::int64_t generation = r.integer_field("generation", 0);
  const std::int64_t restarts = r.integer_field("restarts", 0);
  std::string reason = r.text("the last restart's reason");
  r.require(restarts == 0 || cmaes_.restart == CmaesOptions::Restart::Ipop,
            "it restarted " + std::to_string(restarts) + " times, but this config has restart = \"none\"");
  const std::int64_t lambda = r.integer_field("popsize", 2, kMaxTrials);
  r.require(lambda == popsize_after(restarts),
            "its population is " + std::to_string(lambda) + ", but this config's popsize " +
                std::to_string(cmaes_.popsize) + " after " + std::to_string(restarts) + " restarts gives " +
                std::to_string(popsize_after(restarts)) + "; resume with the config it was saved with");
  r.field("worst");
  const double worst = r.number("worst");
  r.require(!std::isnan(worst) && worst < kInf, "worst must be a number below inf");
  CmaEs es = CmaEs::read(r, n, lambda, cmaes_.tolerances());
  std::map<TrialId, Member> members;
  for (std::size_t k = r.count_field("members"); k > 0; --k) {
    const TrialId id = r.integer("a member's trial id");
    Member m;
    m.generation = r.integer("a member's generation", 0, generation);
    m.iteration = r.integer("a member's iteration", 0);
    m.x = read_point(r, n, "a member's point");
    r.require(members.emplace(id, std::move(m)).second, "trial " + std::to_string(id) + " is a member twice");
  }
  std::vector<Result> results;
  for (std::size_t k = r.count_field("results"); k > 0; --k) {
    Result res;
    res.id = r.integer("a result's trial id");
    res.tier = r.integer("a result's rank tier", kFailed);
    res.value = r.number("a result's value");
    r.require(!std::isnan(res.value), "a result's value must be a number");
    res.x = read_point(r, n, "a result's point");
    results.push_back(std::move(res));
  }
  r.require(static_cast<std::int64_t>(results.size()) < lambda, "it holds a complete generation of results");
  r.finish();
  next_ = next;
  generation_ = generation;
  restarts_ = restarts;
  restart_reason_ = std::move(reason);
  worst_ = worst;
  es_ = std::move(es);
  members_ = std::move(members);
  results_ = std::move(results);
}

}  // namespace ranktune::search
