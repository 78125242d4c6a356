// Hyperparameter importance: what it costs, and how often it is right.
//
//   bench_importance time [TRIALS PARAMS [CSV [METHOD...]]]
//     Times ranktune's importance with its intervals (100 resamples) on TRIALS random trials of
//     PARAMS parameters (default 10,000 x 20), one core, by METHOD (auto, ped-anova, fanova;
//     default all three). With CSV (- for none), writes the trials there for
//     importance_optuna.py (Optuna's FanovaImportanceEvaluator on the same trials).
//   bench_importance accuracy SEEDS RESAMPLES SIZE...
//     Over the planted problems of tests/unit/analysis/planted.h (known answers), for each
//     trial count SIZE and method: in how many of SEEDS seeds the top-k is the planted set,
//     and (RESAMPLES > 0) how often a parameter with no effect is marked below the noise
//     floor, and a planted one.
//   bench_importance show PROBLEM TRIALS SEEDS METHOD
//     Every share with its interval, and the floor, for the first SEEDS seeds. The
//     experiment behind analysis::kPedAnovaMinTop (docs/guide/report.md, "Importance").
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "analysis/importance.h"
#include "tests/unit/analysis/planted.h"

namespace ra = ranktune::analysis;
namespace rs = ranktune::search;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// "p" and the index (appended, not prepended: GCC 12 warns about "p" + std::string).
std::string param_name(std::size_t j) {
  std::string name = "p";
  name += std::to_string(j);
  return name;
}

/// PARAMS floats in [0, 1]: parameter j weighs 1 / (j + 1)^2 in a sum of bumps, so the
/// importance falls off along the list; the last half do nothing.
ra::Observations random_trials(std::size_t n, std::size_t d, std::uint64_t seed, std::vector<std::vector<double>>* xs,
                               std::vector<double>* ys) {
  rs::Space space;
  for (std::size_t j = 0; j < d; ++j) space.params.push_back(ranktune::planted::uniform(param_name(j), 0, 1));
  rs::Rng rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<rs::Config> configs;
  for (std::size_t i = 0; i < n; ++i) {
    rs::Config c;
    std::vector<double> x(d);
    double y = 0;
    for (std::size_t j = 0; j < d; ++j) {
      x[j] = u(rng);
      c[param_name(j)] = x[j];
      if (j < d / 2) y += (x[j] - 0.3) * (x[j] - 0.3) / static_cast<double>((j + 1) * (j + 1));
    }
    xs->push_back(x);
    ys->push_back(y);
    configs.push_back(std::move(c));
  }
  return ra::encode(space, configs, *ys, rs::Mode::Min);
}

int time_mode(std::size_t n, std::size_t d, const char* csv, const std::vector<ra::Method>& methods) {
  std::vector<std::vector<double>> xs;
  std::vector<double> ys;
  const ra::Observations obs = random_trials(n, d, 1, &xs, &ys);
  if (csv && std::string(csv) != "-") {
    std::ofstream out(csv);
    for (std::size_t j = 0; j < d; ++j) out << "p" << j << ",";
    out << "loss\n";
    for (std::size_t i = 0; i < n; ++i) {
      for (const double x : xs[i]) out << x << ",";
      out << ys[i] << "\n";
    }
  }
  std::printf("%zu trials x %zu parameters, 100 resamples, one core\n", n, d);
  for (const ra::Method m : methods) {
    const auto t0 = std::chrono::steady_clock::now();
    const ra::Importance r = ra::evaluate(obs, {.method = m});
    const double s = seconds_since(t0);
    std::printf("%-10s ran %-9s %7.3f s  top: %s %.3f [%.3f, %.3f]  floor %.4f\n", ra::to_string(m), ra::to_string(r.method), s,
                r.scores[0].name.c_str(), r.scores[0].value, r.scores[0].low, r.scores[0].high, r.noise_floor);
  }
  return 0;
}

int accuracy_mode(std::size_t seeds, std::size_t resamples, const std::vector<std::size_t>& sizes) {
  std::printf("%-10s %6s %-9s %9s %12s %9s %8s\n", "problem", "trials", "method", "top-k ok", "no-effect<fl", "planted<fl",
              "s/run");
  for (const ranktune::planted::Problem& p : ranktune::planted::all()) {
    for (const std::size_t n : sizes) {
      for (const ra::Method m : {ra::Method::PedAnova, ra::Method::Fanova}) {
        std::size_t right = 0, noise = 0, noise_total = 0, planted_low = 0;
        double secs = 0;
        for (std::size_t s = 0; s < seeds; ++s) {
          const ra::Observations obs = ranktune::planted::trials(p, n, 1000 + s);
          const auto t0 = std::chrono::steady_clock::now();
          const ra::Importance r = ra::evaluate(obs, {.method = m, .seed = s, .resamples = resamples});
          secs += seconds_since(t0);
          std::set<std::string> top;
          for (std::size_t k = 0; k < p.important.size() && k < r.scores.size(); ++k) top.insert(r.scores[k].name);
          right += top == p.important;
          for (const ra::Score& sc : r.scores) {
            if (p.no_effect.count(sc.name)) {
              ++noise_total;
              noise += sc.below_noise;
            }
            if (p.important.count(sc.name)) planted_low += sc.below_noise;
          }
        }
        std::printf("%-10s %6zu %-9s %5zu/%-3zu %7zu/%-4zu %6zu/%-3zu %8.3f\n", p.name.c_str(), n, ra::to_string(m), right, seeds,
                    noise, noise_total, planted_low, seeds * p.important.size(), secs / static_cast<double>(seeds));
        std::fflush(stdout);
      }
    }
  }
  return 0;
}

int show_mode(const std::string& problem, std::size_t n, std::size_t seeds, ra::Method m) {
  for (const ranktune::planted::Problem& p : ranktune::planted::all()) {
    if (p.name != problem) continue;
    for (std::size_t s = 0; s < seeds; ++s) {
      const ra::Importance r = ra::evaluate(ranktune::planted::trials(p, n, 1000 + s), {.method = m, .seed = s});
      std::printf("seed %zu %s floor %.4f:", s, ra::to_string(r.method), r.noise_floor);
      for (const ra::Score& sc : r.scores)
        std::printf("  %s %.4f [%.4f %.4f]%s", sc.name.c_str(), sc.value, sc.low, sc.high, sc.below_noise ? "~" : "");
      std::printf("\n");
    }
    return 0;
  }
  std::fprintf(stderr, "bench_importance: unknown problem '%s'; valid: issue34, hartmann6, ten_two\n", problem.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "time";
  if (mode == "time") {
    std::vector<ra::Method> methods;
    for (int i = 5; i < argc; ++i) {
      const std::string m = argv[i];
      if (m != "auto" && m != "ped-anova" && m != "fanova") {
        std::fprintf(stderr, "bench_importance: unknown method '%s'; valid: auto, ped-anova, fanova\n", argv[i]);
        return 2;
      }
      methods.push_back(m == "auto" ? ra::Method::Auto : m == "fanova" ? ra::Method::Fanova : ra::Method::PedAnova);
    }
    if (methods.empty()) methods = {ra::Method::Auto, ra::Method::PedAnova, ra::Method::Fanova};
    return time_mode(argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 10000, argc > 3 ? std::strtoul(argv[3], nullptr, 10) : 20,
                     argc > 4 ? argv[4] : nullptr, methods);
  }
  if (mode == "accuracy" && argc > 4) {
    std::vector<std::size_t> sizes;
    for (int i = 4; i < argc; ++i) sizes.push_back(std::strtoul(argv[i], nullptr, 10));
    return accuracy_mode(std::strtoul(argv[2], nullptr, 10), std::strtoul(argv[3], nullptr, 10), sizes);
  }
  if (mode == "show" && argc == 6) {
    const std::string m = argv[5];
    return show_mode(argv[2], std::strtoul(argv[3], nullptr, 10), std::strtoul(argv[4], nullptr, 10),
                     m == "fanova" ? ra::Method::Fanova : m == "ped-anova" ? ra::Method::PedAnova : ra::Method::Auto);
  }
  std::fprintf(stderr, "usage: bench_importance time [TRIALS PARAMS [CSV [METHOD...]]] | accuracy SEEDS RESAMPLES SIZE... | show PROBLEM TRIALS SEEDS METHOD\n");
  return 2;
}
