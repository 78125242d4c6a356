#pragma once
/// The controller observer that records an experiment into the results file: every trial
/// change, result and event, plus a warning per trial that reports undeclared metrics.

#include <map>
#include <set>
#include <utility>
#include <string>
#include <vector>

#include "io/store.h"
#include "controller/controller.h"

namespace ranktune::experiment {

/// Whether an event of `kind` is a lifecycle change that the driver commits soon after
/// (Recorder::take_lifecycle). A `placement` event (where a started attempt computes: its
/// path, threads and collective) is not: its trial's start was committed already, and its
/// row goes with the next commit (at most flush_interval_ms later). Committing it at once
/// was a second flush per trial, a few tens of microseconds after the first, while the
/// results of other trials waited.
inline bool commits_soon(search::EventKind kind) { return kind != search::EventKind::Placement; }

class Recorder final : public controller::ControllerObserver {
 public:
  Recorder(io::ResultsWriter& writer, const std::vector<std::string>& declared_metrics);

  void on_trial_changed(const search::Trial& t) override;
  void on_result(const search::Trial& t, std::int64_t iteration, double time,
                 const search::Metrics& metrics) override;
  void on_event(double time, search::TrialId trial, int worker, search::EventKind kind,
                const std::string& message) override;
  /// An "exploit" event whose message is the lineage as JSON: {"donor", "donor_iteration",
  /// "iteration", "before", "after"} (cut at the event message width for huge configs).
  void on_exploit(double time, const search::Trial& t, search::TrialId donor, std::int64_t donor_iteration,
                  const search::Config& before) override;
  /// A "warning" event, also printed on stderr as "ranktune: warning: ..." (its control
  /// characters shown, not obeyed; the event keeps the text as given).
  void warn(double time, search::TrialId trial, int worker, const std::string& message);
  /// True once after each lifecycle change (a trial's status or attempt changed, or an
  /// event but a `placement`, commits_soon()): the driver flushes the file then, so a reader
  /// or a crash recovery sees every lifecycle step. Progress within a running trial (iterations, best)
  /// waits for the interval flush: flushing it per result would cost a flush per result.
  bool take_lifecycle() { return std::exchange(lifecycle_, false); }
  /// Also tells `also` (the live page) of every result and event as it is recorded, in the
  /// form recorded (an exploit as its lineage event). nullptr: nobody.
  void mirror_to(controller::ControllerObserver* also) { mirror_ = also; }
  /// Writes the progress of the trials that changed since the last call (`trials` indexed
  /// by id - 1, as Controller::trials()), then flushes the file. Deferring progress to the
  /// flush packs each trial row once per flush instead of once per result.
  void flush(const std::vector<search::Trial>& trials);

 private:
  io::ResultsWriter& writer_;
  std::set<std::string> declared_;
  std::map<search::TrialId, std::set<std::string>> warned_;  ///< undeclared metrics told of, by trial
  /// Last recorded (status, attempt) per trial id - 1, to tell lifecycle from progress.
  std::vector<std::pair<search::TrialStatus, int>> seen_;
  std::vector<search::TrialId> dirty_;  ///< trials with unwritten progress, each once
  std::vector<char> dirty_flag_;        ///< by id - 1: listed in dirty_
  bool lifecycle_ = false;
  controller::ControllerObserver* mirror_ = nullptr;
};

}  // namespace ranktune::experiment
