// Repeater: each inner suggestion run as a group of trials, the group's mean told to the
// inner searcher, and its saved state (search/repeater.h).
#include "search/repeater.h"

#include "search/saved_state.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace ranktune::search {

namespace {

// The type tags of a config value in the state: double, integer, string.
constexpr char kValueTags[4] = "fis";

}  // namespace

Repeater::Repeater(std::unique_ptr<Searcher> inner, std::int64_t repeat, std::string metric)
    : inner_(std::move(inner)), repeat_(repeat), metric_(std::move(metric)) {
  if (!inner_) throw std::invalid_argument("repeater: no inner searcher");
  if (repeat_ < 1) throw std::invalid_argument("repeater: repeat must be >= 1");
}

Suggestion Repeater::suggest(TrialId id) {
  if (to_suggest_ == 0) {
    // The new group takes this trial's id: the inner searcher then sees ids it gave out.
    Suggestion s = inner_->suggest(id);
    if (s.kind != Suggestion::Kind::Config) return s;
    config_ = std::move(s.config);
    current_ = id;
    to_suggest_ = repeat_;
    groups_[id] = Group{repeat_, 0, 0, 0.0};
  }
  --to_suggest_;
  member_of_[id] = current_;
  return {Suggestion::Kind::Config, config_};
}

void Repeater::on_trial_complete(TrialId id, const Metrics& last, bool error) {
  const auto m = member_of_.find(id);
  if (m == member_of_.end()) return;  // not ours, or already complete
  const TrialId first = m->second;
  member_of_.erase(m);
  Group& g = groups_.at(first);
  const auto v = last.find(metric_);
  if (error) {
    ++g.errors;
  } else if (v != last.end() && std::isfinite(v->second)) {
    ++g.valid;
    g.sum += v->second;
  }
  if (--g.left > 0) return;
  const double mean =
      g.valid > 0 ? g.sum / static_cast<double>(g.valid) : std::numeric_limits<double>::quiet_NaN();
  const bool all_errored = g.errors == repeat_;
  groups_.erase(first);
  inner_->on_trial_complete(first, {{metric_, mean}}, all_errored);
}

std::string Repeater::extend(std::int64_t n) {
  if (n % repeat_ != 0)
    return "each config runs repeat = " + std::to_string(repeat_) + " times: add a multiple of " +
           std::to_string(repeat_) + " trials";
  return inner_->extend(n / repeat_);
}

std::int64_t Repeater::total() const {
  const std::int64_t t = inner_->total();
  return t < 0 ? -1 : t * repeat_;
}

std::string Repeater::save() const {
  StateWriter w("repeater", 1);
  w.field("repeat").integer(repeat_).field("current").integer(current_).integer(to_suggest_);
  w.field("config").integer(static_cast<std::int64_t>(config_.size())).line();
  for (const auto& [name, value] : config_) w.text(name).value(value, kValueTags).line();
  w.field("groups").integer(static_cast<std::int64_t>(groups_.size())).line();
  for (const auto& [first, g] : groups_) w.integer(first).integer(g.left).integer(g.valid).integer(g.errors).number(g.sum).line();
  w.field("members").integer(static_cast<std::int64_t>(member_of_.size())).line();
  for (const auto& [id, first] : member_of_) w.integer(id).integer(first).line();
  w.inner(inner_->save());
  return w.str();
}

void Repeater::restore(const std::string& state) {
  StateReader r(state, "repeater", 1, "repeater");
  const std::int64_t repeat = r.integer_field("repeat", 1);
  r.require(repeat == repeat_, "saved with repeat = " + std::to_string(repeat) + ", but repeat is now " +
                                   std::to_string(repeat_));
  r.field("current");
  const TrialId current = r.integer("the current group", 0);
  const std::int64_t to_suggest = r.integer("the members left to suggest", 0, repeat_ - 1);
  r.require(current > 0 || to_suggest == 0, "members left to suggest without a current group");
  Config config;
  for (std::size_t n = r.count_field("config"); n > 0; --n) {
    std::string name = r.text("a parameter name");
    config[name] = r.value("'" + name + "'", kValueTags);
  }
  std::map<TrialId, Group> groups;
  for (std::size_t n = r.count_field("groups"); n > 0; --n) {
    const TrialId first = r.integer("a group's first trial", 1);
    Group g;
    g.left = r.integer("a group's members left", 1);
    g.valid = r.integer("a group's valid members", 0);
    g.errors = r.integer("a group's failed members", 0);
    r.require(g.left + g.valid + g.errors <= repeat_, "group " + std::to_string(first) + " has more than repeat members");
    g.sum = r.number("a group's sum");
    groups[first] = g;
  }
  std::map<TrialId, TrialId> member_of;
  for (std::size_t n = r.count_field("members"); n > 0; --n) {
    const TrialId id = r.integer("a member's trial id");
    const TrialId first = r.integer("a member's group");
    r.require(groups.contains(first), "trial " + std::to_string(id) + " is in a group that is not open");
    member_of[id] = first;
  }
  r.require(to_suggest == 0 || groups.contains(current), "the current group is not open");
  inner_->restore(r.inner());  // first: if it throws, this decorator is unchanged too
  config_ = std::move(config);
  current_ = current;
  to_suggest_ = to_suggest;
  groups_ = std::move(groups);
  member_of_ = std::move(member_of);
}

}  // namespace ranktune::search
