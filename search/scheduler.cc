// The scheduler factory: each `[scheduler] kind` by name, and the list of known kinds
// (search/scheduler.h).
#include "search/scheduler.h"

#include <stdexcept>

#include "search/asha_promotion.h"
#include "search/asha_scheduler.h"
#include "search/fifo_scheduler.h"
#include "search/hyperband_scheduler.h"
#include "search/median_stopping.h"
#include "search/mo_asha_promotion.h"
#include "search/mo_asha_scheduler.h"
#include "search/mo_hyperband_ranking.h"
#include "search/pb2_scheduler.h"
#include "search/pbt_scheduler.h"
#include "sys/text.h"

namespace ranktune::search {

namespace {

template <class T>
std::unique_ptr<Scheduler> make(const SchedulerContext& ctx, const Options& options) {
  return std::make_unique<T>(ctx, options);
}

std::unique_ptr<Scheduler> make_fifo(const SchedulerContext&, const Options& options) {
  OptionReader(options, "fifo").finish();  // FIFO takes no options
  return std::make_unique<FifoScheduler>();
}

std::unique_ptr<Scheduler> make_asha(const SchedulerContext& ctx, const Options& options) {
  // Several objectives or constraints: the same rungs, ranked by non-dominated sorting.
  const bool multi = ctx.objectives.multi();
  const auto v = options.find("variant");
  if (v != options.end() && v->second == Value{std::string("promotion")})
    return multi ? make_mo_asha_promotion(ctx, ctx.objectives, options)
                 : std::make_unique<AshaPromotionScheduler>(ctx, options);
  if (multi) return std::make_unique<MoAshaScheduler>(ctx, ctx.objectives, options);
  return std::make_unique<AshaScheduler>(ctx, options);
}

std::unique_ptr<Scheduler> make_hyperband(const SchedulerContext& ctx, const Options& options) {
  // Several objectives or constraints: the same brackets, each full rung ranked by
  // non-dominated sorting.
  if (ctx.objectives.multi()) return make_mo_hyperband(ctx, ctx.objectives, options);
  return std::make_unique<HyperBandScheduler>(ctx, options);
}

}  // namespace

const std::vector<SchedulerKind>& schedulers() {
  static const std::vector<SchedulerKind> table = {
      {"fifo", "runs every trial to max_t, in the order they were created", make_fifo, {.multi_objective = true}},
      {"asha", "asynchronous successive halving: stops (or, variant = \"promotion\", pauses) trials "
               "below the top 1/reduction_factor at each rung; several objectives: MO-ASHA (non-dominated "
               "sorting, then crowding distance)", make_asha, {.rungs = true, .multi_objective = true}},
      {"hyperband", "synchronous HyperBand brackets: pauses each rung, resumes the top 1/reduction_factor; "
                    "several objectives: ranked by non-dominated sorting, then crowding distance",
       make_hyperband, {.rungs = true, .brackets = true, .multi_objective = true}},
      {"median_stopping", "stops a trial whose best result is worse than the median of the others' "
                          "running averages", make<MedianStoppingScheduler>, {}},
      {"pbt", "population based training: the bottom quantile restarts from a top trial's checkpoint "
              "with a perturbed config", make<PbtScheduler>, {.mutates = true}},
      {"pb2", "population based bandits: PBT whose explore picks the numeric hyperparameters by time-varying "
              "GP-UCB on the score changes", make<Pb2Scheduler>, {.mutates = true}},
  };
  return table;
}

std::vector<std::string> scheduler_names() {
  std::vector<std::string> out;
  for (const auto& k : schedulers()) out.emplace_back(k.name);
  return out;
}

SchedulerTraits scheduler_traits(const std::string& name) {
  for (const auto& k : schedulers())
    if (name == k.name) return k.traits;
  return {};
}

std::vector<std::string> multi_objective_scheduler_names() {
  std::vector<std::string> out;
  for (const auto& k : schedulers())
    if (k.traits.multi_objective) out.emplace_back(k.name);
  return out;
}

std::unique_ptr<Scheduler> make_scheduler(const std::string& name, const SchedulerContext& ctx,
                                          const Options& options) {
  for (const auto& k : schedulers()) {
    if (name != k.name) continue;
    if (ctx.objectives.multi() && !k.traits.multi_objective)
      throw std::invalid_argument("scheduler '" + name + "' ranks trials by one metric, and this experiment has " +
                                  ctx.objectives.describe() + ". With several objectives or constraints use " +
                                  sys::comma_list(multi_objective_scheduler_names()) +
                                  ", or give one metric and no constraints");
    return k.make(ctx, options);
  }
  throw std::invalid_argument("unknown scheduler '" + name + "'; valid: " + sys::comma_list(scheduler_names()));
}

std::vector<ResolvedOption> resolved_scheduler_options(const std::string& name, const SchedulerContext& ctx,
                                                       const Options& options) {
  const OptionLog log;
  make_scheduler(name, ctx, options);
  return log.options();
}

}  // namespace ranktune::search
