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
#include "search/recommend.h"
#include "search/scheduler.h"
#include "search/searcher.h"
#include "train/synthetic.h"

namespace {

using namespace ranktune::search;
using namespace ranktune::controller;
namespace train = ranktune::train;

constexpr std::int64_t kMaxT = 27;
constexpr double kNoise = 0.01;
constexpr int kCurvePoints = 20;

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
    for (int i = 1; i <= 6; ++i) dim("x" + std::to_string(i), 0, 1);
  } else if (name == "rosenbrock4") {
    // De Jong's domain, as most benchmark suites use it.
    p.function = train::find_synthetic_function("rosenbrock");
    for (int i = 1; i <= 4; ++i) dim("x" + std::to_string(i), -2.048, 2.048);
  }
  return p;
}

Value parse_value(const std::string& text) {
  char* end = nullptr;
  const long long i = std::strtoll(text.c_str(), &end, 10);
  if (end != text.c_str() && *end == '\0') return std::int64_t{i};
  const double d = std::strtod(text.c_str(), &end);
  if (end != text.c_str() && *end == '\0') return d;
  return text;
}

std::string number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

double regret_of(const Problem& p, const Trial* t) {
  if (t == nullptr) return NAN;
  return train::evaluate_synthetic(*p.function, t->config).gaps[0];
}

int run(int argc, char** argv) {
  if (argc < 8) {
    std::fprintf(stderr,
                 "usage: bench_quality FUNCTION BUDGET WORKERS SEED_FIRST SEED_LAST SEARCHER SCHEDULER "
                 "[search.KEY=VALUE|scheduler.KEY=VALUE ...]\n");
    return 2;
  }
  const Problem p = problem(argv[1]);
  if (p.function == nullptr) {
    std::fprintf(stderr, "bench_quality: unknown function '%s' (branin, hartmann6, rosenbrock4)\n", argv[1]);
    return 2;
  }
  const std::int64_t budget = std::atoll(argv[2]);
  const int workers = std::atoi(argv[3]);
  const int first = std::atoi(argv[4]), last = std::atoi(argv[5]);
  const std::string searcher = argv[6], scheduler = argv[7];
  Options searcher_options, scheduler_options;
  for (int i = 8; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto eq = arg.find('=');
    const auto dot = arg.find('.');
    if (eq == std::string::npos || dot == std::string::npos || dot > eq) {
      std::fprintf(stderr, "bench_quality: '%s' is not search.KEY=VALUE or scheduler.KEY=VALUE\n", argv[i]);
      return 2;
    }
    const std::string table = arg.substr(0, dot), key = arg.substr(dot + 1, eq - dot - 1);
    (table == "search" ? searcher_options : scheduler_options)[key] = parse_value(arg.substr(eq + 1));
  }
  if (budget < 1 || workers < 1 || first > last) {
    std::fprintf(stderr, "bench_quality: need BUDGET >= 1, WORKERS >= 1, SEED_FIRST <= SEED_LAST\n");
    return 2;
  }
  for (int seed = first; seed <= last; ++seed) {
    ControllerOptions o;
    o.metric = "loss";
    o.mode = Mode::Min;
    o.max_t = kMaxT;
    o.max_total_steps = budget;
    const auto useed = static_cast<std::uint64_t>(seed);
    Controller c(o, make_searcher(searcher, p.space, {useed, 1'000'000'000, "loss", Mode::Min}, searcher_options),
                 make_scheduler(scheduler, {"loss", Mode::Min, kMaxT, &p.space, useed}, scheduler_options));
    std::vector<std::pair<std::int64_t, double>> curve;
    std::int64_t next_point = 1;
    const auto record = [&](std::int64_t steps) {
      std::vector<const Trial*> all;
      all.reserve(c.trials().size());
      for (const Trial& t : c.trials()) all.push_back(&t);
      curve.emplace_back(steps, regret_of(p, recommended(all, Mode::Min)));
    };
    SimulatorOptions so;
    so.workers = workers;
    so.seed = useed;
    so.jitter = 0.1;
    so.progress_every = 1;
    so.on_progress = [&](double) {
      while (next_point <= kCurvePoints && c.steps_done() >= budget * next_point / kCurvePoints) {
        record(budget * next_point / kCurvePoints);
        ++next_point;
      }
    };
    const StepModel model = [&](const Config& config, TrialId trial, int attempt, ModelState& s) {
      return train::synthetic_step(train::evaluate_synthetic(*p.function, config), kNoise, useed, trial, attempt, s.t);
    };
    simulate(c, model, so);
    std::vector<const Trial*> all;
    for (const Trial& t : c.trials()) all.push_back(&t);
    const double regret = regret_of(p, recommended(all, Mode::Min));
    std::string points;
    for (const auto& [steps, r] : curve)
      points += (points.empty() ? "" : ",") + std::string("[") + std::to_string(steps) + "," + number(r) + "]";
    std::printf("{\"seed\": %d, \"regret\": %s, \"trials\": %zu, \"steps\": %lld, \"curve\": [%s]}\n", seed,
                number(regret).c_str(), c.trials().size(), static_cast<long long>(c.steps_done()), points.c_str());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_quality: %s\n", e.what());
    return 2;
  }
}
