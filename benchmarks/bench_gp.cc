// Cost of one GP-BO suggestion (an "ask", search/gp_searcher.h) against the number of
// observations, on bench_tpe's problem (benchmarks/ask_problem.h).
//
// Usage: bench_gp [N ...]   (default 100 300 1000). For each N and for 1 and 8 workers it
// prints "observations workers reps first_ms median_ms max_ms": `first_ms` is the first
// model ask, which fits the hyperparameters and factors the kernel matrix (what every
// refit costs, once per 10% more observations); then `reps` asks, each followed by the
// completion of a trial (so the factor grows by a row between asks, as in a run), with 7
// trials pending at each ask for 8 workers. `median_cpu_ms` is the median of the asking
// thread's CPU time: on a shared machine the wall times grow with the load, the CPU time
// much less.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <string>
#include <time.h>
#include <vector>

#include "benchmarks/ask_problem.h"
#include "search/gp_searcher.h"

using namespace ranktune::search;
using ranktune::bench::ask_loss;
using ranktune::bench::ask_space;

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

double cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<long> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::atol(argv[i]));
  if (sizes.empty()) sizes = {100, 300, 1000};
  const Space space = ask_space();
  std::printf("observations workers reps first_ms median_ms max_ms median_cpu_ms\n");
  for (const long n : sizes) {
    for (const int workers : {1, 8}) {
      // Fill cheaply: a searcher whose startup phase outlasts n gives random configs; its
      // saved state then seeds a default-options searcher, whose asks are all model-based.
      const SearcherOptions o{1, n + 1000, "loss", Mode::Min};
      GpSearcher fill(space, o, {.n_startup = n + 1});
      TrialId id = 1;
      for (; id <= n; ++id) {
        const auto s = fill.suggest(id);
        fill.on_trial_complete(id, {{"loss", ask_loss(s.config)}}, false);
      }
      GpSearcher gp(space, o);
      gp.restore(fill.save());
      std::deque<std::pair<TrialId, Config>> running;
      std::vector<double> cpu;
      const auto ask = [&] {
        const auto t0 = std::chrono::steady_clock::now();
        const double c0 = cpu_ms();
        const auto s = gp.suggest(id);
        const double ms = ms_since(t0);
        cpu.push_back(cpu_ms() - c0);
        if (s.kind != Suggestion::Kind::Config) std::exit(1);
        running.emplace_back(id++, s.config);
        return ms;
      };
      const double first = ask();
      while (static_cast<int>(running.size()) < workers) ask();
      const int reps = n >= 1000 ? 21 : 41;
      cpu.clear();
      std::vector<double> ms;
      for (int r = 0; r < reps; ++r) {
        gp.on_trial_complete(running.front().first, {{"loss", ask_loss(running.front().second)}}, false);
        running.pop_front();
        ms.push_back(ask());
      }
      std::printf("%ld %d %d %.1f %.1f %.1f %.1f\n", n, workers, reps, first, median(ms),
                  *std::max_element(ms.begin(), ms.end()), median(cpu));
      std::fflush(stdout);
    }
  }
  return 0;
}
