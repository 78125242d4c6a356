// bench_search: search quality of searcher + scheduler pairs on the virtual-time simulator
// (controller/simulator.h), the way `ranktune simulate` runs the synthetic trainable.
//
// For each function (hartmann6, branin) and pair (random+fifo, random+asha,
// random+hyperband, bohb+hyperband, bohb+asha, tpe+fifo, tpe+asha, and both with TPE's constant_liar off), over seeds 1..S, on W
// virtual workers,
// max_t = 27 steps of 1 virtual second (lognormal jitter 0.1), noise 0.01, and a time
// budget of B virtual seconds, it prints the medians over the seeds of:
//   - time_to_1%: the virtual time at which a trial first evaluates a config whose
//     noise-free f(x) is within 1% of the optimum's magnitude (f(x) - opt <= 0.01 |opt|);
//     "-" when the median run never gets there within B;
//   - hits: in how many seeds it got there;
//   - best_f@B: the best noise-free f(x) of any config that ran a step by B;
//   - best_loss@B: the best reported loss by B (f(x) plus the learning-curve term
//     (1 + gap) / sqrt(t) and noise: what the leaderboard ranks, so longer runs count);
//   - trials: configs started by B.
// Schedulers keep their defaults: asha (grace_period 1, reduction_factor 3), hyperband
// (R = 27, eta = 3: brackets (27, 1), (12, 3), (6, 9), (4, 27)). Searchers too: bohb
// (random_fraction 1/3, min_points_in_model dims + 1), tpe (n_startup 10).
//
// Usage: bench_search [workers [seeds [budget_s]]]   (default 64 5 400)

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "search/scheduler.h"
#include "search/searcher.h"
#include "controller/simulator.h"
#include "train/synthetic.h"

namespace {

using namespace ranktune::search;
using namespace ranktune::controller;
namespace train = ranktune::train;

constexpr std::int64_t kMaxT = 27;

struct Run {
  double time_to_target = std::numeric_limits<double>::infinity();
  double best_f = std::numeric_limits<double>::infinity();
  double best_loss = NAN;
  std::int64_t trials = 0;
};

Space space_of(const train::SyntheticFunction& f) {
  Space s;
  const auto names = f.variadic() ? std::vector<std::string>{"x1", "x2", "x3", "x4", "x5", "x6"} : f.params;
  for (const auto& name : names) {
    Domain d;
    d.low = 0;
    d.high = 1;
    if (f.name == "branin") {
      d.low = name == "x1" ? -5 : 0;
      d.high = name == "x1" ? 10 : 15;
    }
    s.params.push_back({name, d});
  }
  return s;
}

Run simulate_pair(const train::SyntheticFunction& f, const std::string& searcher, const Options& searcher_options,
                  const std::string& scheduler, int workers, std::uint64_t seed, double budget_s) {
  const Space space = space_of(f);
  ControllerOptions o;
  o.metric = "loss";
  o.mode = Mode::Min;
  o.max_t = kMaxT;
  o.time_budget_s = budget_s;
  Controller c(o, make_searcher(searcher, space, {seed, 1000000, "loss", Mode::Min}, searcher_options),
               make_scheduler(scheduler, {"loss", Mode::Min, kMaxT, &space, seed}));
  const double target = f.optimum + 0.01 * std::abs(f.optimum);
  Run run;
  double now = 0;
  SimulatorOptions so;
  so.workers = workers;
  so.seed = seed;
  so.jitter = 0.1;
  so.on_progress = [&](double t) { now = t; };
  so.progress_every = 1;
  const StepModel model = [&](const Config& config, TrialId trial, int attempt, ModelState& s) {
    const auto point = train::evaluate_synthetic(f, config);
    // `now` is the time of the result delivered before this one (on_progress runs after
    // each): with many workers, a small fraction of a step early.
    if (now <= budget_s) {
      run.best_f = std::min(run.best_f, point.value);
      if (point.value <= target && !std::isfinite(run.time_to_target)) run.time_to_target = now;
    }
    return train::synthetic_step(point, 0.01, seed, trial, attempt, s.t);
  };
  so.budget_s = budget_s;
  const auto summary = simulate(c, model, so);
  run.best_loss = summary.best_at_budget;
  run.trials = static_cast<std::int64_t>(c.trials().size());
  return run;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int workers = argc > 1 ? std::atoi(argv[1]) : 64;
  const int seeds = argc > 2 ? std::atoi(argv[2]) : 5;
  const double budget_s = argc > 3 ? std::atof(argv[3]) : 400;
  if (workers < 1 || seeds < 1 || !(budget_s > 0)) {
    std::fprintf(stderr, "usage: bench_search [workers >= 1 [seeds >= 1 [budget_s > 0]]]\n");
    return 2;
  }
  // "tpe-nocl": TPE with constant_liar = false (the default is true).
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"random", "fifo"}, {"random", "asha"}, {"random", "hyperband"}, {"bohb", "hyperband"},
      {"bohb", "asha"},   {"tpe", "fifo"},   {"tpe", "asha"},          {"tpe-nocl", "fifo"},
      {"tpe-nocl", "asha"}};
  std::printf("%d workers, %d seeds, budget %g virtual s, max_t %lld; medians over seeds\n", workers, seeds, budget_s,
              static_cast<long long>(kMaxT));
  std::printf("%-10s %-18s %11s %5s %11s %12s %8s %8s\n", "function", "searcher+scheduler", "time_to_1%", "hits",
              "best_f@B", "best_loss@B", "trials", "wall_s");
  for (const char* name : {"hartmann6", "branin"}) {
    const auto* f = train::find_synthetic_function(name);
    for (const auto& [searcher, scheduler] : pairs) {
      const auto start = std::chrono::steady_clock::now();
      std::vector<double> ttt, best_f, best_loss, trials;
      int hits = 0;
      for (int seed = 1; seed <= seeds; ++seed) {
        const bool no_liar = searcher == "tpe-nocl";
        const Options opts = no_liar ? Options{{"constant_liar", std::int64_t{0}}} : Options{};
        const Run r = simulate_pair(*f, no_liar ? "tpe" : searcher, opts, scheduler, workers,
                                    static_cast<std::uint64_t>(seed), budget_s);
        ttt.push_back(r.time_to_target);
        hits += std::isfinite(r.time_to_target);
        best_f.push_back(r.best_f);
        best_loss.push_back(r.best_loss);
        trials.push_back(static_cast<double>(r.trials));
      }
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const double t = median(ttt);
      char tbuf[32];
      if (std::isfinite(t)) std::snprintf(tbuf, sizeof tbuf, "%.0f", t);
      else std::snprintf(tbuf, sizeof tbuf, "-");
      std::printf("%-10s %-18s %11s %3d/%d %11.5f %12.5f %8.0f %8.1f\n", name, (searcher + "+" + scheduler).c_str(), tbuf,
                  hits, seeds, median(best_f), median(best_loss), median(trials), wall);
      std::fflush(stdout);
    }
  }
  return 0;
}
