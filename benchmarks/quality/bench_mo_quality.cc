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

constexpr std::int64_t kMaxT = 27;
constexpr double kNoise = 0.01;
constexpr int kCurvePoints = 20;
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
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

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
  if (argc < 8) {
    std::fprintf(stderr,
                 "usage: bench_mo_quality FUNCTION BUDGET WORKERS SEED_FIRST SEED_LAST SEARCHER SCHEDULER "
                 "[search.KEY=VALUE|scheduler.KEY=VALUE ...]\n"
                 "       bench_mo_quality --check   (check lines on stdin)\n");
    return 2;
  }
  const Problem p = problem(argv[1]);
  if (p.function == nullptr) {
    std::fprintf(stderr, "bench_mo_quality: unknown function '%s' (zdt1, zdt2, zdt3, dtlz2)\n", argv[1]);
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
      std::fprintf(stderr, "bench_mo_quality: '%s' is not search.KEY=VALUE or scheduler.KEY=VALUE\n", argv[i]);
      return 2;
    }
    const std::string table = arg.substr(0, dot), key = arg.substr(dot + 1, eq - dot - 1);
    (table == "search" ? searcher_options : scheduler_options)[key] = parse_value(arg.substr(eq + 1));
  }
  if (budget < 1 || workers < 1 || first > last) {
    std::fprintf(stderr, "bench_mo_quality: need BUDGET >= 1, WORKERS >= 1, SEED_FIRST <= SEED_LAST\n");
    return 2;
  }
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
  std::vector<std::vector<double>> true_front = train::pareto_front(*p.function, p.reference.size() == 2 ? 1000 : 50);
  const double front_hv = hypervolume(true_front, p.reference);
  const std::string& metric = p.objectives.metrics[0];
  for (int seed = first; seed <= last; ++seed) {
    ControllerOptions o;
    o.metric = metric;
    o.mode = Mode::Min;
    o.max_t = kMaxT;
    o.max_total_steps = budget;
    const auto useed = static_cast<std::uint64_t>(seed);
    SearcherOptions so_search{useed, 1'000'000'000, metric, Mode::Min, kMaxT};
    so_search.objectives = p.objectives;
    SchedulerContext ctx{metric, Mode::Min, kMaxT, &p.space, useed};
    ctx.objectives = p.objectives;
    Controller c(o, make_searcher(searcher, p.space, so_search, searcher_options),
                 make_scheduler(scheduler, ctx, scheduler_options));
    std::vector<std::pair<std::int64_t, double>> curve;
    std::int64_t next_point = 1;
    SimulatorOptions so;
    so.workers = workers;
    so.seed = useed;
    so.jitter = 0.1;
    so.progress_every = 1;
    so.on_progress = [&](double) {
      if (next_point > kCurvePoints || c.steps_done() < budget * next_point / kCurvePoints) return;
      const double hv = true_hypervolume(p, reported_front(p, c.trials()));
      while (next_point <= kCurvePoints && c.steps_done() >= budget * next_point / kCurvePoints) {
        curve.emplace_back(budget * next_point / kCurvePoints, hv);
        ++next_point;
      }
    };
    const StepModel model = [&](const Config& config, TrialId trial, int attempt, ModelState& s) {
      return train::synthetic_step(train::evaluate_synthetic(*p.function, config), kNoise, useed, trial, attempt, s.t);
    };
    simulate(c, model, so);
    const auto front = reported_front(p, c.trials());
    const double hv = true_hypervolume(p, front);
    std::string points;
    for (const auto& [steps, v] : curve) {
      // Appended piece by piece, not "," + ...: GCC 12 warns falsely (-Wrestrict) on that.
      if (!points.empty()) points += ',';
      points += '[';
      points += std::to_string(steps);
      points += ',';
      points += number(v);
      points += ']';
    }
    std::printf("{\"seed\": %d, \"hv\": %s, \"front_hv\": %s, \"front\": %zu, \"trials\": %zu, \"steps\": %lld, "
                "\"curve\": [%s]}\n",
                seed, number(hv).c_str(), number(front_hv).c_str(), front.size(), c.trials().size(),
                static_cast<long long>(c.steps_done()), points.c_str());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_mo_quality: %s\n", e.what());
    return 2;
  }
}
