// PBT's perturbation points, exploit, explore and saved state (search/pbt_scheduler.h: the
// algorithm and its paper, Jaderberg et al., arXiv:1711.09846).
#include "search/pbt_scheduler.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "search/saved_state.h"

namespace ranktune::search {

namespace {

// The type tags of a config value in the state: double, integer, string.
constexpr char kValueTags[4] = "012";

}  // namespace

PbtScheduler::PbtScheduler(SchedulerContext ctx, const Options& options, const std::string& owner)
    : ctx_(std::move(ctx)), owner_(owner) {
  if (ctx_.space == nullptr) throw std::invalid_argument(owner + " needs the search space");
  OptionReader r(options, owner);
  interval_ = r.integer("perturbation_interval", std::max<std::int64_t>(1, ctx_.max_t / 10));
  quantile_ = r.number("quantile_fraction", 0.25);
  resample_ = r.number("resample_probability", 0.25);
  r.require(interval_ >= 1, "perturbation_interval", "must be >= 1 (iterations)");
  r.at_most("perturbation_interval", interval_, kMaxIterations);
  r.require(quantile_ > 0 && quantile_ <= 0.5, "quantile_fraction", "must be in (0, 0.5]");
  r.require(resample_ >= 0 && resample_ <= 1, "resample_probability", "must be in [0, 1]");
  for (const std::string& key : r.keys_with_prefix("bounds.")) {
    // "bounds.NAME.low" / "bounds.NAME.high", as the config layer flattens [low, high].
    const auto dot = key.rfind('.');
    const std::string name = key.substr(7, dot == std::string::npos || dot < 7 ? std::string::npos : dot - 7);
    const std::string end = dot == std::string::npos ? "" : key.substr(dot + 1);
    const Param* p = ctx_.space->find(name);
    r.require(p != nullptr && (end == "low" || end == "high"), key,
              "must be bounds." + name + " = [low, high] for a parameter of the search space");
    r.require(!p->domain.is_listed(), key, "'" + name + "' is a listed parameter; bounds apply to numbers");
    const Value& v = options.at(key);
    const double x = std::holds_alternative<double>(v) ? std::get<double>(v) : to_double(v);
    auto& b = bounds_.try_emplace(name, p->domain.low, p->domain.high).first->second;
    (end == "low" ? b.first : b.second) = x;
  }
  for (const auto& [name, b] : bounds_)
    r.require(b.first < b.second, "bounds." + name, "low must be below high");
  r.finish();
}

std::int64_t PbtScheduler::next_decision(const Trial& trial) const {
  return (trial.iterations / interval_ + 1) * interval_;
}

bool PbtScheduler::wants_checkpoint(const Trial& trial) const { return trial.iterations % interval_ == 0; }

Decision PbtScheduler::on_trial_result(const Trial& trial) {
  if (trial.iterations % interval_ != 0) return Decision::Continue;
  // The config that goes with the checkpoint stored here, which is what a donor hands on.
  configs_[trial.id] = trial.config;
  const double score = std::isfinite(trial.last) ? sign(ctx_.mode) * trial.last : -INFINITY;
  set_score(trial.id, score);
  at_perturbation_point(trial, score);
  const auto k = static_cast<std::size_t>(std::floor(static_cast<double>(scores_.size()) * quantile_ + 1e-9));
  if (k == 0) return Decision::Continue;
  // Ranks count from the worst; ties: lower id first.
  if (ranked_.order_of_key({score, trial.id}) >= k) return Decision::Continue;
  Rng rng = index_rng(ctx_.seed ^ 0x9e3779b97f4a7c15ULL, draws_++);
  const TrialId donor = ranked_.find_by_order(ranked_.size() - 1 - static_cast<std::size_t>(rng() % k))->second;
  if (donor == trial.id) return Decision::Continue;
  const std::uint64_t index = draws_++;
  pending_[trial.id] = {donor, explore_for(trial, donor, configs_.at(donor), index)};
  return Decision::Exploit;
}

void PbtScheduler::set_score(TrialId id, double score) {
  const auto [it, added] = scores_.try_emplace(id, score);
  if (!added) {
    ranked_.erase({it->second, id});
    it->second = score;
  }
  ranked_.insert({score, id});
}

std::optional<double> PbtScheduler::score_of(TrialId id) const {
  const auto it = scores_.find(id);
  if (it == scores_.end()) return std::nullopt;
  return it->second;
}

void PbtScheduler::erase_score(TrialId id) {
  const auto it = scores_.find(id);
  if (it == scores_.end()) return;
  ranked_.erase({it->second, id});
  scores_.erase(it);
}

Exploit PbtScheduler::exploit(const Trial& trial) {
  auto it = pending_.find(trial.id);
  if (it == pending_.end()) throw std::logic_error(owner_ + ": no exploit decided for trial " + std::to_string(trial.id));
  Exploit e = std::move(it->second);
  pending_.erase(it);
  return e;
}

std::pair<double, double> PbtScheduler::explore_bounds(const Param& p) const {
  if (const auto it = bounds_.find(p.name); it != bounds_.end()) return it->second;
  return {p.domain.low, p.domain.kind == DomainKind::RandInt ? p.domain.high - 1 : p.domain.high};
}

Config PbtScheduler::explore(const Config& config, std::uint64_t index) const {
  Rng rng = index_rng(ctx_.seed ^ 0x3c6ef372fe94f82bULL, index);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  Config out = config;
  for (const Param& p : ctx_.space->params) {
    auto it = out.find(p.name);
    // Inactive here, or outside `[scheduler] mutable`: copied from the donor as it is.
    if (it == out.end() || !ctx_.space->may_mutate(p.name)) continue;
    const Domain& d = p.domain;
    if (unit(rng) < resample_) {
      it->second = sample(d, rng);
      continue;
    }
    const bool up = unit(rng) < 0.5;
    if (d.is_listed()) {
      const auto pos = std::find(d.values.begin(), d.values.end(), it->second);
      auto i = pos == d.values.end() ? 0 : pos - d.values.begin();
      i = std::clamp<std::ptrdiff_t>(i + (up ? 1 : -1), 0, static_cast<std::ptrdiff_t>(d.values.size()) - 1);
      it->second = d.values[static_cast<std::size_t>(i)];
      continue;
    }
    const auto b = bounds_.count(p.name) ? bounds_.at(p.name) : std::pair{d.low, d.high};
    double x = to_double(it->second) * (up ? 1.2 : 0.8);
    if (d.kind == DomainKind::RandInt) {
      // [low, high) for integers; a perturbation that rounds back to the same value still
      // moves by one, or small integers would never change.
      const auto old = std::get<std::int64_t>(it->second);
      auto v = std::llround(x);
      if (v == old) v += up ? 1 : -1;
      const auto hi = bounds_.count(p.name) ? static_cast<std::int64_t>(std::floor(b.second))
                                            : static_cast<std::int64_t>(d.high) - 1;
      it->second = std::clamp<std::int64_t>(v, static_cast<std::int64_t>(std::ceil(b.first)), hi);
      continue;
    }
    x = std::clamp(x, b.first, b.second);
    if (d.kind == DomainKind::QUniform) x = quantize(d, x);
    it->second = x;
  }
  settle_conditions(*ctx_.space, out, rng);
  return out;
}

// Layout (version 2; version 1 is the same without the field names): the draws, the
// score count and a line per score "ID SCORE", then the config count and a line per trial
// "ID PARAMS (name type value)..." with the types 0 double, 1 integer, 2 string.
std::string PbtScheduler::save() const {
  StateWriter w("pbt", 2);
  w.field("draws").integer(static_cast<std::int64_t>(draws_));
  w.field("scores").integer(static_cast<std::int64_t>(scores_.size())).line();
  for (const auto& [id, score] : scores_) w.integer(id).number(score).line();
  w.field("configs").integer(static_cast<std::int64_t>(configs_.size())).line();
  for (const auto& [id, config] : configs_) {
    w.integer(id).integer(static_cast<std::int64_t>(config.size()));
    for (const auto& [name, value] : config) w.text(name).value(value, kValueTags);
    w.line();
  }
  return w.str();
}

void PbtScheduler::restore(const std::string& state) {
  StateReader r(state, "pbt", 2, "pbt", /*named_since=*/2);
  const auto draws = static_cast<std::uint64_t>(r.integer_field("draws", 0));
  std::map<TrialId, double> scores;
  for (std::size_t n = r.count_field("scores"); n > 0; --n) {
    const TrialId id = r.integer("a trial id");
    scores[id] = r.number("a pbt score");
  }
  std::map<TrialId, Config> configs;
  for (std::size_t n = r.count_field("configs"); n > 0; --n) {
    Config& c = configs[r.integer("a trial id")];
    for (std::size_t m = r.count("a config's parameters"); m > 0; --m) {
      std::string name = r.text("a parameter name");
      c[name] = r.value("'" + name + "'", kValueTags);
    }
  }
  r.finish();
  draws_ = draws;
  scores_ = std::move(scores);
  ranked_.clear();
  for (const auto& [id, score] : scores_) ranked_.insert({score, id});
  configs_ = std::move(configs);
  pending_.clear();
  order_ = FifoOrder();
}

}  // namespace ranktune::search
