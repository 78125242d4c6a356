// Failed attempts (controller/failed_attempts.h): retries, errors, reverts after a change of
// hyperparameters, and the texts that say why.
#include "controller/failed_attempts.h"

#include <algorithm>
#include <utility>

#include "controller/controller.h"

namespace ranktune::controller {

namespace {

// An attempt that never reports the metric names up to this many of the names it did
// report, then "...": enough to spot a misspelling, short enough for the error column.
constexpr std::size_t kShownMetrics = 5;

}  // namespace

void FailedAttempts::fail(Controller& c, Trial& t, const std::string& reason, double now) const {
  t.revert.reset();
  t.error = reason;
  c.event(now, &t, EventKind::Error, reason);
  c.release(t);
  if (t.failures++ < max_failures_) {
    ++t.attempt;
    c.set_status(t, TrialStatus::Pending);
    c.scheduler_->on_trial_requeued(t);
    c.event(now, &t, EventKind::Retry, "failure " + std::to_string(t.failures) + " of " + std::to_string(max_failures_) +
                                  " allowed; attempt " + std::to_string(t.attempt));
  } else {
    c.finish(t, TrialStatus::Error, TrialEnd::Error, now);
  }
  c.changed(t);
}

void FailedAttempts::revert(Controller& c, Trial& t, const std::string& reason, const std::string& log_tail,
                            double now) const {
  Trial::Revert r = std::move(*t.revert);
  t.revert.reset();
  t.error = reason + " (after " + r.change + ")";
  t.log_tail = log_tail;
  const std::string back = r.restore_trial == 0 ? std::string("the start")
                           : r.restore_trial == t.id
                               ? "its own checkpoint at iteration " + std::to_string(r.restore_checkpoint)
                               : "trial " + std::to_string(r.restore_trial) + "'s checkpoint at iteration " +
                                     std::to_string(r.restore_checkpoint);
  // What it does comes before the reason, which quotes the program's exception and may be
  // long (an event's message is a bounded column).
  c.event(now, &t, EventKind::Revert,
          "failed before its first result after " + r.change + ", so it goes back to " + back +
              " with its old values: " + reason);
  c.release(t);
  // Rows past the point it goes back to are in the file (an exploit keeps the trial's own
  // count): a new attempt then, so no (trial, attempt, iteration) repeats. Not a failure.
  if (r.restore_iterations < t.iterations) ++t.attempt;
  t.config = std::move(r.config);
  t.restore_trial = r.restore_trial;
  t.restore_checkpoint = r.restore_checkpoint;
  t.restore_iterations = r.restore_iterations;
  t.checkpoint_iteration = r.checkpoint_iteration;
  c.set_status(t, TrialStatus::Pending);
  c.scheduler_->on_trial_requeued(t);
  c.changed(t);
}

std::string FailedAttempts::missing_metric(const Trial& t) const {
  std::string names;
  for (std::size_t i = 0; i < t.other_metrics.size(); ++i)
    names += (i == 0 ? "" : ", ") + (i < kShownMetrics ? t.other_metrics[i] : std::string("..."));
  return "ended without reporting metric '" + metric_ + "'" +
         (names.empty() ? std::string(", it reported no metrics") : ", it reported: " + names);
}

void FailedAttempts::note_other_metrics(Trial& t, const Metrics& metrics) {
  // One more name than are shown is kept, so that missing_metric knows to say "...".
  for (const auto& [name, value] : metrics) {
    if (t.other_metrics.size() > kShownMetrics) return;
    if (std::find(t.other_metrics.begin(), t.other_metrics.end(), name) == t.other_metrics.end())
      t.other_metrics.push_back(name);
  }
}

bool FailedAttempts::takes_log_tail(const Trial& t, int attempt, const std::string& log_tail) {
  if (log_tail.empty() || !t.log_tail.empty() || t.error.empty()) return false;
  // The failed attempt is the trial's last one (it ended as ERROR), or the one before its
  // retry, which has not failed since (its log_tail is still empty).
  const bool ended = t.status == TrialStatus::Error && t.attempt == attempt;
  const bool retried = t.attempt == attempt + 1;
  return ended || retried;
}

}  // namespace ranktune::controller
