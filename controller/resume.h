#pragma once
/// Resume's half of the controller: the state the Controller saves with every commit of the
/// results file (the searcher's and scheduler's own, and what live control added, which
/// theirs does not hold), and the rebuild of an experiment from that file
/// (Controller::resume, which documents the rules).
///
/// Why apart from the Controller: it runs once per run (the save once per commit), never per
/// result, and its rules are about the file's history (state versions 1 to 4, trials that a
/// state did not know yet, work lost past a checkpoint) rather than the trial lifecycle. It
/// needs the searcher and the scheduler and nothing private of the Controller: the
/// Controller hands it the trials and installs what it returns.

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "controller/control.h"  // search/'s names, unqualified in controller/
#include "search/scheduler.h"
#include "search/searcher.h"
#include "search/trial.h"

namespace ranktune::controller {

class Resume {
 public:
  /// `searcher` and `scheduler` are the Controller's (they outlive it, on the heap, even when
  /// the Controller is moved); `metric` is the experiment's.
  Resume(Searcher& searcher, Scheduler& scheduler, std::string metric)
      : searcher_(&searcher), scheduler_(&scheduler), metric_(std::move(metric)) {}

  /// The text Controller::save_state gives: `trials` (which are still open) and the counts
  /// of live control (LiveControl::added, LiveControl::extended), then the searcher's and
  /// the scheduler's save().
  /// Version 5 adds the trials `ctl pause` holds (Trial::held) and `overrides`.
  std::string save(const std::vector<Trial>& trials, std::int64_t added, std::int64_t extended,
                   const BudgetOverrides& overrides = {}) const;

  /// What restore found that the Controller keeps (LiveControl::resume).
  struct Restored {
    std::int64_t added = 0;                ///< trials live control added with a config
    std::optional<std::int64_t> extended;  ///< trials it asked of the searcher; nullopt: no state
    std::map<TrialId, Trial::Hold> held;   ///< trials `ctl pause` held, and how (version 5)
    BudgetOverrides overrides;             ///< `ctl budget`'s changes (version 5)
  };
  /// Brings the searcher and the scheduler to where `trials` (as recorded, ids 1..n) left
  /// them: from `state` ("" when none was stored: they are walked over the trials), then
  /// over the trials the state did not know. Changes nothing of `trials`. Throws
  /// std::invalid_argument for ids that are not 1..n or a state that does not parse.
  Restored restore(const std::vector<Trial>& trials, const std::string& state);

  /// Readies each trial for the run that resumes it: its newest stored checkpoint from
  /// `latest_checkpoint`, and an unfinished one back to Pending (a paused one with a
  /// checkpoint stays paused), with a new attempt when work past that checkpoint is lost.
  /// Returns the trials' counts by TrialStatus.
  static std::array<std::int64_t, 5> restart(std::vector<Trial>& trials,
                                             const std::map<TrialId, std::int64_t>& latest_checkpoint);

 private:
  /// Tells the searcher that finished trial `t` completed, with its last value of the metric.
  void complete_in_searcher(const Trial& t);
  /// Brings the searcher and scheduler up to a trial of the file they do not know.
  void catch_up(const Trial& t);

  Searcher* searcher_;
  Scheduler* scheduler_;
  std::string metric_;
};

}  // namespace ranktune::controller
