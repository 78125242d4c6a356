#include "search/scheduler.h"

#include <stdexcept>

#include "search/asha_promotion.h"
#include "search/asha_scheduler.h"
#include "search/fifo_scheduler.h"
#include "search/hyperband_scheduler.h"
#include "search/median_stopping.h"
#include "search/pbt_scheduler.h"

namespace ranktune::search {

std::vector<std::string> scheduler_names() { return {"fifo", "asha", "hyperband", "median_stopping", "pbt"}; }

std::unique_ptr<Scheduler> make_scheduler(const std::string& name, const SchedulerContext& ctx,
                                          const Options& options) {
  if (name == "fifo") {
    OptionReader(options, name).finish();  // FIFO takes no options
    return std::make_unique<FifoScheduler>();
  }
  if (name == "asha") {
    const auto v = options.find("variant");
    if (v != options.end() && v->second == Value{std::string("promotion")})
      return std::make_unique<AshaPromotionScheduler>(ctx, options);
    return std::make_unique<AshaScheduler>(ctx, options);
  }
  if (name == "median_stopping") return std::make_unique<MedianStoppingScheduler>(ctx, options);
  if (name == "hyperband") return std::make_unique<HyperBandScheduler>(ctx, options);
  if (name == "pbt") return std::make_unique<PbtScheduler>(ctx, options);
  throw std::invalid_argument("unknown scheduler '" + name + "'; valid: " + comma_list(scheduler_names()));
}

}  // namespace ranktune::search
