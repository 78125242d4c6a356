// bench_mo_quality: ranktune's side of the multi-objective search-quality suite
// (benchmarks/quality/mo_suite.py, beside mo_optuna_side.py).
//
// One searcher + scheduler pair on one multi-objective function of the synthetic trainable,
// over a range of seeds, on W virtual workers of the simulator (controller/simulator.h), with a
// budget in iterations ([stop] max_total_steps: exact at any W). The objectives are the
// synthetic trainable's, as `ranktune simulate` runs them: each fi_t = fi(x) + (1 + gap_i) /
// sqrt(t) + 0.01 N(0, 1) (its own noise stream per objective), gap_i = fi(x) - min fi,
// max_t 27, steps of 1 virtual second with lognormal jitter 0.1. The searcher and the scheduler
// get the objectives {f1, f2[, f3]}, all minimized, as an experiment with
// `metric = ["f1", "f2"]` gives them.
//
// Functions (x1..xn in [0, 1]): zdt1, zdt2, zdt3 with n = 10, dtlz2 with 3 objectives and
// n = 12 (the paper's k = 10). Fewer variables than the ZDT paper's 30, because a search of
// about a hundred trials is what hyperparameter tuning affords.
//
// What is judged is what a user gets: the front ranktune reports, the non-dominated set
// (search/pareto.h) of every trial's last reported point (observed, noisy values), and its
// quality is the exact hypervolume (search/hypervolume.h) of the NOISE-FREE objectives f(x) of
// those configurations, against one fixed reference point per function: 1.1 times the largest
// value each objective takes over the whole domain, so that every configuration counts and no
// run scores 0 for lack of a point near the front. ZDT: f1 <= 1 and f2 <= g <= 10, so (1.1, 11)
// for all three; DTLZ2: each fi <= 1 + g <= 1 + 10/4, so (3.85, 3.85, 3.85). A point beyond
// the reference contributes nothing.
//
// Each seed prints one JSON line: {"seed", "hv", "front_hv", "front", "trials", "steps",
// "curve": [[steps, hv], ...]}: "front" is the size of the reported front, "front_hv" the
// hypervolume of the true Pareto front (train::pareto_front, 1,000 points for ZDT, 1,326 for
// DTLZ2) for scale, and the curve the hypervolume of the reported front after every
// `budget / 20` iterations (0 while no trial has reported).
//
// Usage: bench_mo_quality FUNCTION BUDGET WORKERS SEED_FIRST SEED_LAST SEARCHER SCHEDULER
//                         [search.KEY=VALUE|scheduler.KEY=VALUE ...]
//        bench_mo_quality --check      (reads check lines on stdin; see check() below)
// Exit status 3: the searcher or the scheduler does not take several objectives (yet), so the
// suite can skip that pair; 2: bad arguments.

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "controller/simulator.h"
#include "quality_run.h"
#include "search/hypervolume.h"
#include "search/objectives.h"
#include "search/pareto.h"
#include "search/scheduler.h"
#include "search/searcher.h"
#include "train/synthetic.h"

namespace {

using namespace ranktune::search;
using namespace ranktune::controller;
namespace train = ranktune::train;
using ranktune::bench::kMaxT;
using ranktune::bench::kNoise;

constexpr int kExitNotMultiObjective = 3;

struct Problem {
  const train::SyntheticFunction* function = nullptr;
  Space space;
  std::vector<double> reference;
  Objectives objectives;
};

Problem problem(const std::string& name) {
  Problem p;
  int n = 0;
  if (name == "zdt1" || name == "zdt2" || name == "zdt3") {
    n = 10;
    p.reference = {1.1, 11.0};
  } else if (name == "dtlz2") {
    n = 12;
    p.reference = {3.85, 3.85, 3.85};
  } else {
    return p;
  }
  p.function = train::find_synthetic_function(name);
  for (int i = 1; i <= n; ++i) {
    Domain d;
    d.kind = DomainKind::Uniform;
    d.low = 0;
    d.high = 1;
    p.space.params.push_back({train::variadic_param(i), d});
  }
  for (std::size_t i = 0; i < p.function->objectives(); ++i) {
    p.objectives.metrics.push_back(train::objective_metric(i));
    p.objectives.modes.push_back(Mode::Min);
  }
  return p;
}

std::string number(double v) { return ranktune::bench::json_number(v, 17); }

// The front the user is shown: the non-dominated trials by their last reported point.
std::vector<const Trial*> reported_front(const Problem& p, const std::vector<Trial>& trials) {
  std::vector<const Trial*> reported;
  std::vector<ParetoPoint> points;
  for (const Trial& t : trials) {
    if (!p.objectives.any_reported(t.last_metrics)) continue;  // started, nothing reported yet
    reported.push_back(&t);
    points.push_back(p.objectives.point(t.last_metrics));
  }
  std::vector<const Trial*> front;
  if (points.empty()) return front;
  const ParetoRanking ranking = nondominated_sort(points);  // named: a temporary's member dies before the loop
  for (std::size_t i : ranking.fronts[0]) front.push_back(reported[i]);
  return front;
}

// The hypervolume of the configurations' noise-free objectives.
double true_hypervolume(const Problem& p, const std::vector<const Trial*>& front) {
  std::vector<std::vector<double>> values;
  for (const Trial* t : front) values.push_back(train::evaluate_synthetic(*p.function, t->config).values);
  return hypervolume(values, p.reference);
}

bool in(const std::vector<std::string>& names, const std::string& name) {
  for (const auto& n : names)
    if (n == name) return true;
  return false;
}

// --check: the reference numbers mo_optuna_side.py compares its Python port with. Reads lines:
//   point FUNCTION SEED TRIAL T x1 .. xn  ->  the noise-free objectives, then the metrics
//                                             step T of that trial reports (noise 0.01)
//   hv FUNCTION K v ...                   ->  the hypervolume of K points (K x M values)
//                                             against the function's reference point
// and prints one line of %.17g numbers per line read.
int check() {
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string what, name;
    in >> what >> name;
    const Problem p = problem(name);
    if (p.function == nullptr) {
      std::fprintf(stderr, "bench_mo_quality --check: unknown function '%s'\n", name.c_str());
      return 2;
    }
    std::string out;
    if (what == "point") {
      std::uint64_t seed = 0;
      TrialId trial = 0;
      std::int64_t t = 0;
      in >> seed >> trial >> t;
      Config config;
      double v = 0;
      for (int i = 1; in >> v; ++i) config[train::variadic_param(i)] = v;
      const train::SyntheticPoint point = train::evaluate_synthetic(*p.function, config);
      const Metrics m = train::synthetic_step(point, kNoise, seed, trial, 0, t);
      for (double f : point.values) out += number(f) + " ";
      for (const auto& metric : p.objectives.metrics) out += number(m.at(metric)) + " ";
    } else if (what == "hv") {
      std::size_t k = 0;
      in >> k;
      std::vector<std::vector<double>> points(k, std::vector<double>(p.reference.size()));
      for (auto& point : points)
        for (double& v : point) in >> v;
      out = number(hypervolume(points, p.reference));
    } else {
      std::fprintf(stderr, "bench_mo_quality --check: expected 'point' or 'hv', got '%s'\n", what.c_str());
      return 2;
    }
    std::printf("%s\n", out.c_str());
  }
  return 0;
}

int run(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--check") return check();
  const auto args = ranktune::bench::parse_pair_args(
      argc, argv, "bench_mo_quality",
      "usage: bench_mo_quality FUNCTION BUDGET WORKERS SEED_FIRST SEED_LAST SEARCHER SCHEDULER "
      "[search.KEY=VALUE|scheduler.KEY=VALUE ...]\n"
      "       bench_mo_quality --check   (check lines on stdin)\n");
  if (!args) return 2;
  const Problem p = problem(args->function);
  if (p.function == nullptr) {
    std::fprintf(stderr, "bench_mo_quality: unknown function '%s' (zdt1, zdt2, zdt3, dtlz2)\n", argv[1]);
    return 2;
  }
  const std::string &searcher = args->searcher, &scheduler = args->scheduler;
  // Asked before anything runs, so that a pair the suite cannot run yet is a clear skip, not
  // a failure: the multi-objective searchers are added one by one.
  const bool searcher_takes = in(multi_objective_searcher_names(), searcher);
  if (!searcher_takes || !in(multi_objective_scheduler_names(), scheduler)) {
    const auto& [kind, name, can] =
        searcher_takes ? std::tuple{"scheduler", scheduler, multi_objective_scheduler_names()}
                       : std::tuple{"searcher", searcher, multi_objective_searcher_names()};
    std::string names;
    for (const auto& n : can) {
      if (!names.empty()) names += ", ";
      names += n;
    }
    const bool known = in(searcher_takes ? scheduler_names() : searcher_names(), name);
    std::fprintf(stderr, "bench_mo_quality: %s '%s' %s (those that take several objectives: %s)\n", kind,
                 name.c_str(), known ? "does not take several objectives" : "is not in this build", names.c_str());
    return kExitNotMultiObjective;
  }
  const double front_hv =
      hypervolume(train::pareto_front(*p.function, p.reference.size() == 2 ? 1000 : 50), p.reference);
  const std::string& metric = p.objectives.metrics[0];
  for (int seed = args->first; seed <= args->last; ++seed) {
    ControllerOptions o;
    o.metric = metric;
    o.mode = Mode::Min;
    o.max_t = kMaxT;
    o.max_total_steps = args->budget;
    const auto useed = static_cast<std::uint64_t>(seed);
    SearcherOptions so{useed, 1'000'000'000, metric, Mode::Min, kMaxT};
    so.objectives = p.objectives;
    SchedulerContext ctx{metric, Mode::Min, kMaxT, &p.space, useed};
    ctx.objectives = p.objectives;
    Controller c(o, make_searcher(searcher, p.space, so, args->searcher_options),
                 make_scheduler(scheduler, ctx, args->scheduler_options));
    const auto hv = [&] { return true_hypervolume(p, reported_front(p, c.trials())); };
    ranktune::bench::Curve curve(args->budget);
    ranktune::bench::simulate_synthetic(c, *p.function, useed, args->workers, curve, hv);
    std::printf("{\"seed\": %d, \"hv\": %s, \"front_hv\": %s, \"front\": %zu, \"trials\": %zu, \"steps\": %lld, "
                "\"curve\": %s}\n",
                seed, number(hv()).c_str(), number(front_hv).c_str(), reported_front(p, c.trials()).size(),
                c.trials().size(), static_cast<long long>(c.steps_done()), curve.json(17).c_str());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return ranktune::bench::guarded_main("bench_mo_quality", run, argc, argv); }
