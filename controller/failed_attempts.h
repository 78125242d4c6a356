#pragma once
/// Failed attempts: what becomes of an attempt that failed, and the texts that say why. A
/// failure is retried as a new attempt while the experiment's max_failures allows, else the
/// trial ends as ERROR. An attempt that fails before its first result after a start that
/// changed its hyperparameters on top of a checkpoint (a `ctl set`, a PBT exploit:
/// Trial::revert) goes back to its state before that change instead, without counting a
/// failure. An attempt that ends without reporting the experiment's metric is a failure
/// whose error names the metrics it did report (a metric under the wrong name).
///
/// Why apart from the Controller: these rules decide what a failure is and how it is told,
/// wherever it is noticed (a worker's report, a result the Controller refuses, a trainable
/// that ended by itself); the Controller decides when. Like LiveControl, it carries its
/// decision out with the Controller's lifecycle steps (release, finish), as its friend,
/// handed the Controller on each call.

#include <cstddef>
#include <string>
#include <utility>

#include "controller/control.h"  // search/'s names, unqualified in controller/
#include "search/trial.h"

namespace ranktune::controller {

class Controller;

class FailedAttempts {
 public:
  /// `max_failures` and `metric` are the experiment's (ControllerOptions).
  FailedAttempts(int max_failures, std::string metric) : max_failures_(max_failures), metric_(std::move(metric)) {}

  /// Records the failure of `t`'s running attempt (Trial::error, an "error" event) and frees
  /// its workers; retries it (a new attempt, PENDING, a "retry" event) while failures are
  /// allowed, else ends it as ERROR.
  void fail(Controller& c, Trial& t, const std::string& reason, double now) const;
  /// A failure before the first result of a start that changed `t`'s hyperparameters on top
  /// of a checkpoint (Trial::revert): it goes back to its own previous state and old values,
  /// PENDING, with a "revert" event, without counting a failure.
  void revert(Controller& c, Trial& t, const std::string& reason, const std::string& log_tail, double now) const;

  /// Why attempt `t` failed that never reported the experiment's metric, with the names it
  /// did report.
  std::string missing_metric(const Trial& t) const;
  /// Adds the names of `metrics` that `t` has not reported yet to Trial::other_metrics, for
  /// missing_metric. After the first few results it stops growing, so a long attempt costs a
  /// size check per result.
  static void note_other_metrics(Trial& t, const Metrics& metrics);
  /// Whether `log_tail`, the output's tail of `t`'s failed attempt `attempt` that arrived
  /// after its failure was recorded (Controller::on_log_tail), goes into Trial::log_tail.
  static bool takes_log_tail(const Trial& t, int attempt, const std::string& log_tail);

 private:
  int max_failures_;
  std::string metric_;
};

}  // namespace ranktune::controller
