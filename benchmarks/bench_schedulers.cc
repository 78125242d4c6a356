// bench_schedulers: microseconds per on_trial_result decision of every trial scheduler
// (asha, asha's promotion variant, hyperband, pbt, median_stopping, and fifo as the floor)
// at 10^3, 10^4 and 10^5 live trials.
//
// Workload: N workers each run one trial; in each round every running trial reports its
// next iteration with a seeded uniform score (max mode). The decision is carried out as
// the controller does (controller/controller.cc), with checkpoints that land at once:
//   Continue: the trial goes on (a PBT checkpoint request is noted, so it can be a donor);
//   Exploit:  the trial takes the donor's config and goes on (PBT);
//   Pause:    the trial is Paused and requeued, and its worker takes the next choice;
//   Stop, or max_t = 64 reached: the trial completes, and its worker takes the next choice.
// A worker takes choose_trial_to_run's answer, or a new trial when there is none; trials
// that take_abandoned hands over end. This runs for 10 N decisions. Only the scheduler's
// calls are timed (on_trial_add, on_trial_result, exploit, wants_checkpoint,
// on_trial_requeued, on_trial_complete, take_abandoned, choose_trial_to_run), divided by
// the number of decisions. Flat figures across N mean the per-decision cost does not grow
// linearly with the number of trials.
// Usage: bench_schedulers [max_live [scheduler ...]]   (default 100000, every scheduler)

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "search/scheduler.h"

namespace {

using namespace ranktune::search;
using Clock = std::chrono::steady_clock;

constexpr std::int64_t kMaxT = 64;

struct Bench {
  Bench(const std::string& label, std::int64_t live) {
    Domain lr;
    lr.low = 1e-4;
    lr.high = 1;
    space.params.push_back({"lr", lr});
    const bool promotion = label == "asha_promotion";
    scheduler = make_scheduler(promotion ? "asha" : label, {"loss", Mode::Max, kMaxT, &space, 1},
                               promotion ? Options{{"variant", std::string("promotion")}} : Options{});
    // Every trial ever made stays in the table (ids index it), as in the controller.
    table.reserve(static_cast<std::size_t>(live) * 4);
    workers.resize(static_cast<std::size_t>(live));
  }

  // Times `f` into `seconds`.
  template <class F>
  auto timed(F&& f) {
    const auto start = Clock::now();
    if constexpr (std::is_void_v<decltype(f())>) {
      f();
      seconds += std::chrono::duration<double>(Clock::now() - start).count();
    } else {
      auto r = f();
      seconds += std::chrono::duration<double>(Clock::now() - start).count();
      return r;
    }
  }

  Trial& trial(TrialId id) { return table[static_cast<std::size_t>(id - 1)]; }

  void complete(Trial& t) {
    t.status = TrialStatus::Terminated;
    timed([&] { scheduler->on_trial_complete(t); });
  }

  void end_abandoned() {
    for (const TrialId id : timed([&] { return scheduler->take_abandoned(); })) {
      if (Trial& t = trial(id); t.status == TrialStatus::Paused) complete(t);
    }
  }

  // The controller's dispatch for one free worker.
  TrialId next() {
    auto choice = timed([&] { return scheduler->choose_trial_to_run(table); });
    if (!choice) {
      Trial& t = table.emplace_back();
      t.id = static_cast<TrialId>(table.size());
      t.config["lr"] = std::uniform_real_distribution<double>(1e-4, 1)(rng);
      timed([&] { scheduler->on_trial_add(t); });
      choice = timed([&] { return scheduler->choose_trial_to_run(table); });
    }
    Trial& t = trial(*choice);
    t.status = TrialStatus::Running;  // a paused trial goes on counting where it paused
    return t.id;
  }

  double us_per_decision() {
    for (auto& w : workers) w = next();
    const std::int64_t decisions = 10 * static_cast<std::int64_t>(workers.size());
    std::uniform_real_distribution<double> u(0, 1);
    for (std::int64_t done = 0; done < decisions;) {
      for (auto& w : workers) {
        Trial& t = trial(w);
        ++t.iterations;
        t.last = u(rng);
        t.last_metrics["loss"] = t.last;
        const Decision d =
            t.iterations < kMaxT ? timed([&] { return scheduler->on_trial_result(t); }) : Decision::Stop;
        switch (d) {
          case Decision::Continue:
            if (timed([&] { return scheduler->wants_checkpoint(t); })) t.checkpoint_iteration = t.iterations;
            break;
          case Decision::Exploit:
            t.config = timed([&] { return scheduler->exploit(t); }).config;
            break;
          case Decision::Pause:
            t.status = TrialStatus::Paused;
            t.checkpoint_iteration = t.iterations;
            timed([&] { scheduler->on_trial_requeued(t); });
            w = next();
            break;
          case Decision::Stop:
            complete(t);
            w = next();
            break;
        }
        end_abandoned();
        if (++done == decisions) break;
      }
    }
    return seconds * 1e6 / static_cast<double>(decisions);
  }

  Space space;
  std::unique_ptr<Scheduler> scheduler;
  std::vector<Trial> table;
  std::vector<TrialId> workers;  // the trial each worker runs
  std::mt19937_64 rng{42};
  double seconds = 0;
};

}  // namespace

int main(int argc, char** argv) {
  const std::int64_t max_live = argc > 1 ? std::atoll(argv[1]) : 100000;
  std::vector<std::string> names;
  for (int i = 2; i < argc; ++i) names.emplace_back(argv[i]);
  if (names.empty()) names = {"fifo", "asha", "asha_promotion", "hyperband", "pbt", "median_stopping"};
  std::printf("%-16s %10s %14s\n", "scheduler", "live", "us/decision");
  for (const auto& name : names) {
    for (std::int64_t n = 1000; n <= max_live; n *= 10) {
      Bench bench(name, n);
      std::printf("%-16s %10lld %14.3f\n", name.c_str(), static_cast<long long>(n), bench.us_per_decision());
      std::fflush(stdout);
    }
  }
  return 0;
}
