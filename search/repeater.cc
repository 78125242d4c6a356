#include "search/repeater.h"

#include "search/saved_state.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace ranktune::search {

namespace {

std::invalid_argument bad(const std::string& why) {
  return std::invalid_argument("repeater: bad saved state: " + why);
}

long long read_count(std::istream& in, const char* key) {
  std::string word;
  long long n = -1;
  if (!(in >> word >> n) || word != key || n < 0) throw bad(std::string("expected '") + key + " N'");
  return n;
}

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
  std::ostringstream out;
  out << "repeater 1\nrepeat " << repeat_ << "\ncurrent " << current_ << ' ' << to_suggest_
      << "\nconfig " << config_.size() << '\n';
  for (const auto& [name, value] : config_) {
    write_text(out, name);
    if (const auto* d = std::get_if<double>(&value)) {
      out << " f ";
      write_double(out, *d);
    } else if (const auto* i = std::get_if<std::int64_t>(&value)) {
      out << " i " << *i;
    } else {
      out << " s ";
      write_text(out, std::get<std::string>(value));
    }
    out << '\n';
  }
  out << "groups " << groups_.size() << '\n';
  for (const auto& [first, g] : groups_) {
    out << first << ' ' << g.left << ' ' << g.valid << ' ' << g.errors << ' ';
    write_double(out, g.sum);
    out << '\n';
  }
  out << "members " << member_of_.size() << '\n';
  for (const auto& [id, first] : member_of_) out << id << ' ' << first << '\n';
  write_inner(out, inner_->save());
  return out.str();
}

void Repeater::restore(const std::string& state) {
  std::istringstream in(state);
  std::string word;
  int version = 0;
  if (!(in >> word >> version) || word != "repeater" || version != 1) {
    throw bad("expected 'repeater 1'");
  }
  const long long repeat = read_count(in, "repeat");
  if (repeat != repeat_) {
    throw bad("saved with repeat = " + std::to_string(repeat) + ", but repeat is now " +
              std::to_string(repeat_));
  }
  TrialId current = 0;
  long long to_suggest = -1;
  if (!(in >> word >> current >> to_suggest) || word != "current" || current < 0 ||
      to_suggest < 0 || to_suggest >= repeat_ || (current == 0 && to_suggest > 0)) {
    throw bad("expected 'current FIRST_ID TO_SUGGEST'");
  }
  Config config;
  for (long long n = read_count(in, "config"); n > 0; --n) {
    std::string name = read_text(in, "a name or string");
    char type = 0;
    if (!(in >> type)) throw bad("expected a value type");
    if (type == 'f') {
      config[name] = read_double(in, "a number");
    } else if (type == 'i') {
      std::int64_t i = 0;
      if (!(in >> i)) throw bad("expected an integer for '" + name + "'");
      config[name] = i;
    } else if (type == 's') {
      if (in.get() != ' ') throw bad("expected a string for '" + name + "'");
      config[name] = read_text(in, "a name or string");
    } else {
      throw bad(std::string("unknown value type '") + type + "'");
    }
  }
  std::map<TrialId, Group> groups;
  for (long long n = read_count(in, "groups"); n > 0; --n) {
    TrialId first = 0;
    Group g;
    if (!(in >> first >> g.left >> g.valid >> g.errors) || first < 1 || g.left < 1 ||
        g.valid < 0 || g.errors < 0 || g.left + g.valid + g.errors > repeat_) {
      throw bad("expected 'FIRST_ID LEFT VALID ERRORS SUM'");
    }
    g.sum = read_double(in, "a number");
    groups[first] = g;
  }
  std::map<TrialId, TrialId> member_of;
  for (long long n = read_count(in, "members"); n > 0; --n) {
    TrialId id = 0, first = 0;
    if (!(in >> id >> first) || !groups.contains(first)) throw bad("expected 'ID FIRST_ID' of an open group");
    member_of[id] = first;
  }
  if (to_suggest > 0 && !groups.contains(current)) throw bad("the current group is not open");
  inner_->restore(read_inner(in));  // first: if it throws, this decorator is unchanged too
  config_ = std::move(config);
  current_ = current;
  to_suggest_ = to_suggest;
  groups_ = std::move(groups);
  member_of_ = std::move(member_of);
}

}  // namespace ranktune::search
