#pragma once
/// The trial record the controller keeps, and the lifecycle states a trial moves through.

#include <optional>
#include <string>
#include <vector>

#include "search/types.h"

namespace ranktune::search {

/// Lifecycle: Pending -> Running -> {Terminated | Error | Pending (retry) | Paused}.
/// Paused -> Running resumes a trial from its checkpoint (scheduler issue).
enum class TrialStatus { Pending, Running, Paused, Terminated, Error };

const char* to_string(TrialStatus s);
/// Parses the names that to_string gives; nullopt for anything else.
std::optional<TrialStatus> parse_trial_status(const std::string& s);

/// Everything the controller knows about one trial. Times are seconds since the
/// experiment started, as given by the caller's clock.
struct Trial {
  TrialId id = 0;
  Config config;
  TrialStatus status = TrialStatus::Pending;
  int attempt = 0;            ///< 0 for the first run, +1 for each retry after a failure
  std::int64_t iterations = 0;  ///< iterations reported in the current attempt
  double last = NAN;          ///< last finite value of the experiment metric
  double best = NAN;          ///< best value of the metric over all attempts
  std::int64_t best_iteration = 0;  ///< iteration at which `best` was reported
  Metrics last_metrics;       ///< every metric of the last result
  std::vector<int> workers;   ///< ranks running it (empty unless Running)
  double start_time = NAN;    ///< first start
  double end_time = NAN;      ///< when it reached Terminated or Error
  std::string error;          ///< reason of the last failure, empty if none
  std::string log_tail;       ///< last lines of the trainable's output, when known
  bool reported = false;      ///< the metric appeared in a result of the current attempt

  bool finished() const { return status == TrialStatus::Terminated || status == TrialStatus::Error; }
};

}  // namespace ranktune::search
