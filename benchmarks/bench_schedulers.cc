// bench_schedulers: microseconds per on_trial_result decision of the early-stopping
// schedulers (asha, median_stopping) at 10^3, 10^4 and 10^5 live trials.
//
// Workload: N trials run at once; in each round every live trial reports its next
// iteration with a seeded uniform score (max mode). A trial that is stopped, or reaches
// max_t = 64, is replaced by a new trial, so N stay live; this runs for 10 N decisions.
// Only the scheduler calls are timed. Flat figures across N mean the per-decision cost does
// not grow linearly with the number of trials (the O(log n) of the rank splits is small).
// Usage: bench_schedulers [max_trials]   (default 100000)

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "search/scheduler.h"

namespace {

using namespace ranktune::search;

double us_per_decision(const std::string& name, std::int64_t live) {
  constexpr std::int64_t kMaxT = 64;
  auto sched = make_scheduler(name, {"loss", Mode::Max, kMaxT}, {});
  std::vector<Trial> slots(static_cast<std::size_t>(live));
  TrialId next_id = 1;
  const auto fresh = [&](Trial& t) {
    t = Trial{};
    t.id = next_id++;
    t.status = TrialStatus::Running;
    sched->on_trial_add(t);
  };
  for (auto& t : slots) fresh(t);
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> u(0, 1);
  const std::int64_t decisions = 10 * live;
  double seconds = 0;
  for (std::int64_t done = 0; done < decisions;) {
    for (auto& t : slots) {
      ++t.iterations;
      t.last_metrics["loss"] = u(rng);
      const auto start = std::chrono::steady_clock::now();
      Decision d = Decision::Stop;
      if (t.iterations < kMaxT) d = sched->on_trial_result(t);  // as the controller does
      if (d == Decision::Stop) sched->on_trial_complete(t);
      seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (d == Decision::Stop) fresh(t);
      if (++done == decisions) break;
    }
  }
  return seconds * 1e6 / static_cast<double>(decisions);
}

}  // namespace

int main(int argc, char** argv) {
  const std::int64_t max_trials = argc > 1 ? std::atoll(argv[1]) : 100000;
  std::printf("%-16s %10s %14s\n", "scheduler", "live", "us/decision");
  for (const char* name : {"asha", "median_stopping"}) {
    for (std::int64_t n = 1000; n <= max_trials; n *= 10) {
      std::printf("%-16s %10lld %14.3f\n", name, static_cast<long long>(n), us_per_decision(name, n));
      std::fflush(stdout);
    }
  }
  return 0;
}
