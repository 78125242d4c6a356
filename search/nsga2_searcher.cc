// NSGA-II's options, breeding, population and saved state (search/nsga2_searcher.h: the
// algorithm, its paper, Deb et al. 2002, and how this steady-state form differs; the ranking
// is search/pareto.cc).
#include "search/nsga2_searcher.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "search/observation_log.h"
#include "search/saved_state.h"

namespace ranktune::search {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// A failed point (pareto.h): what no tournament picks while a member did not fail.
bool failed(const ParetoPoint& p) {
  if (!std::isfinite(p.violation)) return true;
  return std::any_of(p.objectives.begin(), p.objectives.end(), [](double x) { return !std::isfinite(x); });
}

/// A coordinate of parameter `d` drawn from its domain, in parzen::Point's form (the value,
/// or a listed value's index): the prior a mutation and the random start draw from.
double draw(const Domain& d, Rng& rng) {
  if (d.is_listed()) return static_cast<double>(std::uniform_int_distribution<std::size_t>(0, d.values.size() - 1)(rng));
  return to_double(sample(d, rng));
}

/// Uniform in [0, 1): the coin of crossover, swapping and mutation.
double coin(Rng& rng) { return std::uniform_real_distribution<double>(0.0, 1.0)(rng); }

void check_probability(const OptionReader& r, const std::string& key, double p) {
  r.require(p >= 0 && p <= 1, key, "must be a probability in [0, 1] (got " + to_string(Value{p}) + ")");
}

}  // namespace

std::size_t Nsga2Options::varying_params(const Space& space) {
  return static_cast<std::size_t>(std::count_if(space.params.begin(), space.params.end(), [](const Param& p) {
    return !(p.domain.is_listed() && p.domain.values.size() < 2);
  }));
}

Nsga2Options Nsga2Options::read(const Options& options, std::size_t varying) {
  OptionReader r(options, "nsga2");
  Nsga2Options o;
  o.population_size = r.integer("population_size", o.population_size);
  // A tournament for the second parent leaves the first out: it needs two members.
  r.require(o.population_size >= 2, "population_size",
            "must be >= 2, the two parents of a child (got " + std::to_string(o.population_size) + ")");
  r.at_most("population_size", o.population_size, kMaxPopulation);
  o.crossover_prob = r.number("crossover_prob", o.crossover_prob);
  check_probability(r, "crossover_prob", o.crossover_prob);
  o.swapping_prob = r.number("swapping_prob", o.swapping_prob);
  check_probability(r, "swapping_prob", o.swapping_prob);
  o.mutation_prob = r.number("mutation_prob", 1.0 / static_cast<double>(std::max<std::size_t>(1, varying)));
  check_probability(r, "mutation_prob", o.mutation_prob);
  r.finish();
  return o;
}

Nsga2Searcher::Nsga2Searcher(Space space, SearcherOptions options, Nsga2Options nsga2)
    : NumSamplesSearcher(std::move(options)), space_(std::move(space)), nsga2_(nsga2) {
  if (nsga2_.mutation_prob < 0)
    nsga2_.mutation_prob = 1.0 / static_cast<double>(std::max<std::size_t>(1, Nsga2Options::varying_params(space_)));
  if (nsga2_.population_size < 2) throw std::invalid_argument("nsga2: population_size must be >= 2");
  if (!options_.objectives.metrics.empty()) {
    objectives_ = options_.objectives;
    objectives_.check();
  } else {
    // One objective: NSGA-II is then a steady-state genetic algorithm on the metric.
    objectives_.metrics = {options_.metric};
    objectives_.modes = {options_.mode};
  }
}

Suggestion Nsga2Searcher::suggest(TrialId id) {
  if (next_ >= options_.num_samples) return {Suggestion::Kind::Finished, {}};
  Rng rng = index_rng(options_.seed, static_cast<std::uint64_t>(next_++));
  const bool full = population_.size() >= static_cast<std::size_t>(nsga2_.population_size);
  const bool any_alive =
      std::any_of(population_.begin(), population_.end(), [](const Member& m) { return !failed(m.value); });
  Point point;
  if (full && any_alive) {
    point = breed(rng);
  } else {
    point.resize(space_.params.size());
    for (std::size_t i = 0; i < point.size(); ++i) point[i] = draw(space_.params[i].domain, rng);
  }
  Config config = parzen::settle(space_, point);  // inactive parameters: absent, NaN in the point
  pending_[id] = std::move(point);
  return {Suggestion::Kind::Config, std::move(config)};
}

Nsga2Searcher::Point Nsga2Searcher::breed(Rng& rng) const {
  const ParetoSelection selection = ranked();
  std::vector<std::size_t> position(population_.size());  // a member's place in the order, 0 best
  for (std::size_t k = 0; k < selection.order.size(); ++k) position[selection.order[k]] = k;

  // The tournament pool: the members that did not fail (breed() runs only when one exists).
  std::vector<std::size_t> pool;
  for (std::size_t i = 0; i < population_.size(); ++i)
    if (!failed(population_[i].value)) pool.push_back(i);
  // Binary tournament over `pool` without member `skip`: two draws with replacement, the one
  // earlier in the selection order wins (the crowded-comparison operator).
  const auto tournament = [&](std::size_t skip) {
    std::vector<std::size_t> from;
    from.reserve(pool.size());
    for (const std::size_t i : pool)
      if (i != skip) from.push_back(i);
    if (from.empty()) from = pool;  // a single member that did not fail: both parents are it
    std::uniform_int_distribution<std::size_t> pick(0, from.size() - 1);
    const std::size_t a = from[pick(rng)], b = from[pick(rng)];
    return position[a] < position[b] ? a : b;
  };

  const bool cross = coin(rng) < nsga2_.crossover_prob;
  const std::size_t first = tournament(population_.size());
  const Point& p1 = population_[first].point;
  const Point& p2 = cross ? population_[tournament(first)].point : p1;
  Point child(space_.params.size());
  for (std::size_t i = 0; i < child.size(); ++i) {
    // Uniform crossover; a parameter inactive in the parent it would come from comes from
    // the other one, and from the domain when neither has it (it may be active in the child).
    const bool swap = cross && coin(rng) < nsga2_.swapping_prob;
    const double mine = swap ? p2[i] : p1[i], other = swap ? p1[i] : p2[i];
    child[i] = !std::isnan(mine) ? mine : !std::isnan(other) ? other : draw(space_.params[i].domain, rng);
  }
  for (std::size_t i = 0; i < child.size(); ++i)
    if (coin(rng) < nsga2_.mutation_prob) child[i] = draw(space_.params[i].domain, rng);
  return child;
}

void Nsga2Searcher::adopt(TrialId id, const Config& config) {
  Config active = config;
  drop_inactive(space_, active);
  pending_[id] = parzen::encode(space_, active);
}

void Nsga2Searcher::on_trial_complete(TrialId id, const Metrics& last, bool error) {
  const auto it = pending_.find(id);
  if (it == pending_.end()) return;  // not ours, or already complete
  Member m{id, {}, std::move(it->second)};
  pending_.erase(it);
  if (error) {
    // Whatever it reported last, an errored trial is a failed point (pareto.h).
    m.value.objectives.assign(objectives_.metrics.size(), std::numeric_limits<double>::quiet_NaN());
    m.value.violation = kInf;
  } else {
    m.value = objectives_.point(last);
  }
  population_.push_back(std::move(m));
  truncate();
}

void Nsga2Searcher::truncate() {
  while (population_.size() > static_cast<std::size_t>(nsga2_.population_size)) {
    const std::size_t worst = ranked().order.back();
    population_.erase(population_.begin() + static_cast<std::ptrdiff_t>(worst));
  }
}

ParetoSelection Nsga2Searcher::ranked() const {
  std::vector<ParetoPoint> values;
  values.reserve(population_.size());
  for (const Member& m : population_) values.push_back(m.value);
  return pareto_selection(values);
}

std::vector<TrialId> Nsga2Searcher::population() const {
  std::vector<TrialId> out;
  for (const std::size_t i : ranked().order) out.push_back(population_[i].id);
  return out;
}

// Layout (version 1): "objectives" and their describe() text, which restore() compares;
// "next"; "pending" with a line per running trial (id, point); "population" with a line per
// member in the order they joined (id, violation, objectives in minimization form, point).
std::string Nsga2Searcher::save() const {
  StateWriter w("nsga2", 1);
  w.field("objectives").text(objectives_.describe());
  w.field("next").integer(next_);
  write_pending(w, pending_);
  w.field("population").integer(static_cast<std::int64_t>(population_.size())).line();
  for (const Member& m : population_) {
    w.integer(m.id).number(m.value.violation);
    for (const double v : m.value.objectives) w.number(v);
    parzen::write_point(w, m.point);
    w.line();
  }
  return w.str();
}

void Nsga2Searcher::restore(const std::string& state) {
  StateReader r(state, "nsga2", 1, "nsga2 searcher");
  r.field("objectives");
  const std::string saved = r.text("the objectives");
  r.require(saved == objectives_.describe(),
            "saved with other objectives (" + saved + "; this experiment has " + objectives_.describe() + ")");
  const std::int64_t next = r.integer_field("next", 0);
  std::map<TrialId, Point> pending = read_pending(r, space_);
  std::vector<Member> population;
  for (std::size_t n = r.count_field("population"); n > 0; --n) {
    Member m;
    m.id = r.integer("a member's id");
    m.value.violation = r.number("a member's violation");
    r.require(m.value.violation >= 0, "a member's violation must be >= 0");
    for (std::size_t k = 0; k < objectives_.metrics.size(); ++k) m.value.objectives.push_back(r.number("a member's objective"));
    m.point = parzen::read_point(r, space_);
    population.push_back(std::move(m));
  }
  r.finish();
  next_ = next;
  pending_ = std::move(pending);
  population_ = std::move(population);
  truncate();
}

}  // namespace ranktune::search
