// bench_quality: ranktune's side of the search-quality suite (benchmarks/quality/suite.py).
//
// One searcher + scheduler pair on one benchmark function, over a range of seeds, on W
// virtual workers of the simulator (controller/simulator.h), with a budget in iterations
// ([stop] max_total_steps: exact at any W). The objective is the synthetic trainable's, as
// `ranktune simulate` runs it: loss_t = f(x) + (1 + gap) / sqrt(t) + 0.01 N(0, 1), gap =
// f(x) - min f, max_t 27, steps of 1 virtual second with lognormal jitter 0.1.
//
// What is judged is what a user gets: the configuration ranktune recommends (the first row
// of the leaderboard, search/recommend.h), by its noise-free regret f(x) - min f. Each seed
// prints one JSON line: {"seed", "regret", "trials", "steps", "curve": [[steps, regret], ...]},
// the curve being the recommendation's regret after every `budget / points` iterations (NaN,
// printed null, while no trial has a value).
//
// Usage: bench_quality FUNCTION BUDGET WORKERS SEED_FIRST SEED_LAST SEARCHER SCHEDULER
//                      [KEY=VALUE ...]   (searcher options as search.KEY, scheduler's as
//                      scheduler.KEY; values are integers, numbers or strings)
// FUNCTION: branin, hartmann6, rosenbrock4.

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "controller/simulator.h"
#include "quality_run.h"
#include "search/recommend.h"
#include "search/scheduler.h"
#include "search/searcher.h"
#include "train/synthetic.h"

namespace {

using namespace ranktune::search;
using namespace ranktune::controller;
namespace train = ranktune::train;
using ranktune::bench::kMaxT;


struct Problem {
  const train::SyntheticFunction* function = nullptr;
  Space space;
};

Problem problem(const std::string& name) {
  Problem p;
  const auto dim = [&](const std::string& param, double low, double high) {
    Domain d;
    d.kind = DomainKind::Uniform;
    d.low = low;
    d.high = high;
    p.space.params.push_back({param, d});
  };
  if (name == "branin") {
    p.function = train::find_synthetic_function("branin");
    dim("x1", -5, 10);
    dim("x2", 0, 15);
  } else if (name == "hartmann6") {
    p.function = train::find_synthetic_function("hartmann6");
    for (int i = 1; i <= 6; ++i) dim(train::variadic_param(i), 0, 1);
  } else if (name == "rosenbrock4") {
    // De Jong's domain, as most benchmark suites use it.
    p.function = train::find_synthetic_function("rosenbrock");
    for (int i = 1; i <= 4; ++i) dim(train::variadic_param(i), -2.048, 2.048);
  }
  return p;
}

double regret_of(const Problem& p, const Trial* t) {
  if (t == nullptr) return NAN;
  return train::evaluate_synthetic(*p.function, t->config).gaps[0];
}

int run(int argc, char** argv) {
  const auto args = ranktune::bench::parse_pair_args(
      argc, argv, "bench_quality",
      "usage: bench_quality FUNCTION BUDGET WORKERS SEED_FIRST SEED_LAST SEARCHER SCHEDULER "
      "[search.KEY=VALUE|scheduler.KEY=VALUE ...]\n");
  if (!args) return 2;
  const Problem p = problem(args->function);
  if (p.function == nullptr) {
    std::fprintf(stderr, "bench_quality: unknown function '%s' (branin, hartmann6, rosenbrock4)\n", argv[1]);
    return 2;
  }
  const std::int64_t budget = args->budget;
  for (int seed = args->first; seed <= args->last; ++seed) {
    ControllerOptions o;
    o.metric = "loss";
    o.mode = Mode::Min;
    o.max_t = kMaxT;
    o.max_total_steps = budget;
    const auto useed = static_cast<std::uint64_t>(seed);
    Controller c(o,
                 make_searcher(args->searcher, p.space, {useed, 1'000'000'000, "loss", Mode::Min},
                               args->searcher_options),
                 make_scheduler(args->scheduler, {"loss", Mode::Min, kMaxT, &p.space, useed}, args->scheduler_options));
    const auto regret = [&] {
      std::vector<const Trial*> all;
      all.reserve(c.trials().size());
      for (const Trial& t : c.trials()) all.push_back(&t);
      return regret_of(p, recommended(all, Mode::Min));
    };
    ranktune::bench::Curve curve(budget);
    ranktune::bench::simulate_synthetic(c, *p.function, useed, args->workers, curve, regret);
    std::printf("{\"seed\": %d, \"regret\": %s, \"trials\": %zu, \"steps\": %lld, \"curve\": %s}\n", seed,
                ranktune::bench::json_number(regret(), 9).c_str(), c.trials().size(),
                static_cast<long long>(c.steps_done()), curve.json(9).c_str());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return ranktune::bench::guarded_main("bench_quality", run, argc, argv); }
