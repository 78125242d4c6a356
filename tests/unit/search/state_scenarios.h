#pragma once
// Deterministic mid-run scenarios for every searcher and scheduler, written against the
// Searcher and Scheduler interfaces only. The saved-state round-trip tests drive them, and
// tests/data/saved_states/make_fixtures.cc drives the same ones against an older ranktune
// to keep the state texts it wrote: an old results file must still resume.
// Keep this header to what that older code has (search/searcher.h, search/scheduler.h).

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "search/scheduler.h"
#include "search/searcher.h"

namespace ranktune::search::scenarios {

/// A small space with each kind of value: a double, an integer and a string.
inline Space mixed_space() {
  Space s;
  s.params.push_back({"x", {DomainKind::Uniform, 0.0, 1.0}});
  s.params.push_back({"n", {DomainKind::RandInt, 1, 5}});
  Domain act{DomainKind::Choice};
  act.values = {Value{std::string("relu")}, Value{std::string("tanh two words")}};
  s.params.push_back({"act", act});
  return s;
}

/// A loss that depends on the config and the iteration, the same in every build.
inline double loss_of(const Config& c, std::int64_t iteration) {
  double v = 0;
  for (const auto& [name, value] : c) {
    if (const auto* d = std::get_if<double>(&value)) v += (*d - 0.3) * (*d - 0.3);
    else if (const auto* i = std::get_if<std::int64_t>(&value)) v += 0.1 * static_cast<double>(*i);
    else v += 0.05 * static_cast<double>(std::get<std::string>(value).size());
  }
  return v + 1.0 / static_cast<double>(iteration + 1);
}

/// Rounds run before the state is saved (by the fixtures too).
inline constexpr int kSchedulerRounds = 6;
inline constexpr int kSearcherRounds = 7;

struct SchedulerCase {
  std::string label;  ///< fixture file stem
  std::string name;   ///< make_scheduler name
  Options options;
  std::int64_t max_t = 9;
};

/// One case per scheduler (and per variant that saves another layout).
inline std::vector<SchedulerCase> scheduler_cases() {
  return {
      {"fifo", "fifo", {}},
      // stop_rule "quantile": the rule of the version that saved tests/data/saved_states
      // (top_k became the default in issue 29; scheduler_test covers it).
      {"asha", "asha", {{"reduction_factor", 2.0}, {"brackets", std::int64_t{2}}, {"stop_rule", std::string("quantile")}}},
      {"asha_promotion", "asha", {{"variant", std::string("promotion")}, {"reduction_factor", 2.0}}},
      {"hyperband", "hyperband", {{"reduction_factor", 3.0}}},
      {"median_stopping", "median_stopping", {{"min_samples_required", std::int64_t{2}}}},
      {"pbt", "pbt", {{"perturbation_interval", std::int64_t{2}}, {"resample_probability", 0.5}}},
  };
}

/// A farm of `workers` running trials under a scheduler, as the controller would: trials
/// are added while fewer than two wait, each running trial reports once a round, and the
/// scheduler's decisions are carried out. `log` records every decision and choice.
struct SchedulerRun {
  Space space = mixed_space();
  std::unique_ptr<Scheduler> sched;
  std::vector<Trial> trials;
  std::int64_t max_t = 9;
  std::int64_t total = 24;
  std::size_t workers = 4;
  std::vector<std::string> log;

  explicit SchedulerRun(const SchedulerCase& c) : max_t(c.max_t) {
    sched = make_scheduler(c.name, {"loss", Mode::Min, c.max_t, &space, 7}, c.options);
  }

  Config config_of(TrialId id) const {
    return {{"x", Value{std::fmod(0.37 * static_cast<double>(id), 1.0)}},
            {"n", Value{static_cast<std::int64_t>(1 + id % 5)}},
            {"act", Value{std::string(id % 2 ? "relu" : "tanh two words")}}};
  }

  std::size_t running() const {
    std::size_t n = 0;
    for (const auto& t : trials) n += t.status == TrialStatus::Running;
    return n;
  }

  void end(Trial& t) {
    t.status = TrialStatus::Terminated;
    sched->on_trial_complete(t);
  }

  void round() {
    std::size_t pending = 0;
    for (const auto& t : trials) pending += t.status == TrialStatus::Pending;
    while (pending < 2 && static_cast<std::int64_t>(trials.size()) < total) {
      Trial& t = trials.emplace_back();
      t.id = static_cast<TrialId>(trials.size());
      t.config = config_of(t.id);
      sched->on_trial_add(t);
      ++pending;
    }
    if (static_cast<std::int64_t>(trials.size()) == total) sched->on_searcher_finished();
    while (running() < workers) {
      const auto id = sched->choose_trial_to_run(trials);
      log.push_back("choose " + (id ? std::to_string(*id) : std::string("none")));
      if (!id) break;
      trials[static_cast<std::size_t>(*id - 1)].status = TrialStatus::Running;
    }
    for (auto& t : trials) {
      if (t.status != TrialStatus::Running) continue;
      ++t.iterations;
      t.last = loss_of(t.config, t.iterations);
      t.last_metrics = {{"loss", t.last}};
      if (!(t.best <= t.last)) t.best = t.last;
      Decision d = sched->on_trial_result(t);
      log.push_back(std::to_string(t.id) + "@" + std::to_string(t.iterations) + " " + to_string(d));
      if (sched->wants_checkpoint(t)) t.checkpoint_iteration = t.iterations;
      if (d == Decision::Exploit) {
        const Exploit e = sched->exploit(t);
        t.config = e.config;
        log.push_back("exploit " + std::to_string(e.donor) + " " + to_string(Value{std::get<double>(e.config.at("x"))}));
        d = Decision::Continue;
      }
      if (t.iterations >= max_t || d == Decision::Stop) end(t);
      else if (d == Decision::Pause) t.status = TrialStatus::Paused, t.checkpoint_iteration = t.iterations;
    }
    for (TrialId id : sched->take_abandoned()) {
      log.push_back("abandon " + std::to_string(id));
      end(trials[static_cast<std::size_t>(id - 1)]);
    }
  }
};

struct SearcherCase {
  std::string label;
  std::string name;  ///< make_searcher name
  Options options;
};

/// One case per searcher, and the two decorators around one that has a state of its own.
inline std::vector<SearcherCase> searcher_cases() {
  return {
      {"random", "random", {}},
      {"grid", "grid", {}},
      // gamma 0.25 without a cap: TPE's defaults when tests/data/saved_states was written
      // (issue 29 made them Optuna's min(ceil(0.1 n), 25)), so a live run makes the history
      // those states hold.
      {"tpe", "tpe", {{"n_startup", std::int64_t{4}}, {"gamma", 0.25}, {"max_good", std::int64_t{0}}}},
      {"bohb", "bohb", {{"min_points_in_model", std::int64_t{3}}}},
      {"tpe_repeat_limit", "tpe",
       {{"n_startup", std::int64_t{3}}, {"repeat", std::int64_t{2}}, {"max_concurrent", std::int64_t{3}},
        {"gamma", 0.25}, {"max_good", std::int64_t{0}}}},
  };
}

/// A searcher fed as the controller would: up to three trials live, each reporting a
/// result a round and completing at iteration 3. `log` records the suggestions.
struct SearcherRun {
  Space space = mixed_space();
  std::unique_ptr<Searcher> searcher;
  struct Live {
    TrialId id;
    Config config;
    std::int64_t iterations;
  };
  std::vector<Live> live;
  TrialId next = 1;
  std::vector<std::string> log;

  explicit SearcherRun(const SearcherCase& c) {
    searcher = make_searcher(c.name, space, {.seed = 11, .num_samples = 40, .metric = "loss", .mode = Mode::Min},
                             c.options);
  }

  void round() {
    while (live.size() < 3) {
      const Suggestion s = searcher->suggest(next);
      if (s.kind != Suggestion::Kind::Config) {
        log.push_back(std::to_string(next) + (s.kind == Suggestion::Kind::NotNow ? " not now" : " finished"));
        break;
      }
      std::string text = std::to_string(next);
      for (const auto& [name, value] : s.config) text += " " + name + "=" + to_string(value);
      log.push_back(text);
      live.push_back({next++, s.config, 0});
    }
    for (auto it = live.begin(); it != live.end();) {
      ++it->iterations;
      const Metrics m{{"loss", loss_of(it->config, it->iterations)}};
      searcher->on_trial_result(it->id, it->iterations, m);
      if (it->iterations >= 3) {
        searcher->on_trial_complete(it->id, m, it->id % 7 == 0);
        it = live.erase(it);
      } else {
        ++it;
      }
    }
  }
};

}  // namespace ranktune::search::scenarios
