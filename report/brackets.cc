// A bracket scheduler's brackets rebuilt from a results file (report/brackets.h).
#include "report/brackets.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "report/leaderboard.h"
#include "search/scheduler.h"

namespace ranktune::report {

std::optional<Grid> run_brackets(const io::ResultsFile& file, const RunConfig& config) {
  if (!config.parsed || !search::scheduler_traits(config.scheduler).brackets) return std::nullopt;
  std::unique_ptr<search::Scheduler> scheduler;
  try {
    scheduler = search::make_scheduler(
        config.scheduler, search::SchedulerContext{file.meta.metric, file.meta.mode, config.max_t, &config.space, 0},
        config.scheduler_options);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  const auto* layout = dynamic_cast<const search::BracketLayout*>(scheduler.get());
  if (layout == nullptr) return std::nullopt;
  std::vector<const search::Trial*> trials;
  for (const search::Trial& t : file.trials) trials.push_back(&t);
  std::sort(trials.begin(), trials.end(), [](auto* a, auto* b) { return a->id < b->id; });
  Grid g{{"bracket", "s", "trials", "rungs (iterations)", "ended at each rung", "best trial", "best"},
         {},
         {true, true, false, false, false, true, true}};
  std::size_t next = 0;
  // Brackets open in the scheduler's order, each taking shape.trials trials.
  for (int k = 0; next < trials.size(); ++k) {
    const search::OpenedBracket opened = layout->opened_bracket(k);
    const int s = opened.s;
    const search::BracketShape& shape = opened.shape;
    const std::size_t n = std::min<std::size_t>(static_cast<std::size_t>(std::max<std::int64_t>(shape.trials, 1)),
                                                trials.size() - next);
    std::vector<const search::Trial*> held(trials.begin() + static_cast<std::ptrdiff_t>(next),
                                           trials.begin() + static_cast<std::ptrdiff_t>(next + n));
    next += n;
    std::string rungs, ended;
    for (std::size_t i = 0; i < shape.milestones.size(); ++i) {
      const std::int64_t at = shape.milestones[i], before = i ? shape.milestones[i - 1] : 0;
      // A trial ended at this rung when its last iteration lies above the previous rung
      // and at or below this one (the last rung: every trial that got past the one before).
      const auto count = std::count_if(held.begin(), held.end(), [&](const search::Trial* t) {
        return t->iterations > before && (t->iterations <= at || i + 1 == shape.milestones.size());
      });
      rungs += (i ? ", " : "") + std::to_string(at);
      ended += (i ? " / " : "") + std::to_string(count);
    }
    const search::Trial* best = nullptr;
    for (const search::Trial* t : held)
      if (std::isfinite(t->best) && (best == nullptr || search::better(t->best, best->best, file.meta.mode))) best = t;
    g.body.push_back({std::to_string(k + 1), std::to_string(s),
                      std::to_string(held.front()->id) + "-" + std::to_string(held.back()->id) + " (" +
                          std::to_string(held.size()) + ")",
                      rungs, ended, best ? std::to_string(best->id) : "", best ? value_text(best->best) : ""});
  }
  if (g.body.empty()) return std::nullopt;
  return g;
}

}  // namespace ranktune::report
