// The report's view of a run's stored config (report/run_config.h).
#include "config/stored.h"
#include "report/run_config.h"

#include "config/config.h"

namespace ranktune::report {

RunConfig run_config(const config::ExperimentConfig& cfg) {
  RunConfig r;
  r.parsed = true;
  r.space = cfg.space;
  r.algorithm = cfg.algorithm;
  r.scheduler = cfg.scheduler;
  r.search_options = cfg.search_options;
  r.scheduler_options = cfg.scheduler_options;
  r.max_t = cfg.max_t;
  r.objectives = cfg.objectives;
  return r;
}

RunConfig run_config(const io::ResultsFile& file) {
  try {
    return run_config(config::stored_config(file));
  } catch (const std::exception& e) {
    RunConfig r;
    r.error = e.what();
    return r;
  }
}

}  // namespace ranktune::report
