#pragma once
/// Live control carried out (`ranktune ctl`): what the Controller does with a request that
/// passed the checks of controller/control.h, and the state that only requests create: the
/// `ctl set` values waiting for a trial's next start (Trial::pending), the workers held for
/// a trial paused to take them, and the counts of trials that requests added.
///
/// Why apart from the Controller: a request is an operator's rare correction, while the
/// Controller's other events come with every result; its rules (what may change when, what
/// is refused and why, the answers' wording) are one concern, kept in one file. Why not
/// fully apart: a request is carried out with the Controller's own lifecycle steps (stop,
/// pause, finish, dispatch), never with copies of them, so LiveControl is the Controller's
/// friend and is handed it on each call. It keeps no reference to it, so that a Controller
/// can still be moved.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "controller/control.h"
#include "search/trial.h"

namespace ranktune::controller {

class Controller;
struct Instruction;

/// "lr 0.001 -> 0.05, layers 2 -> 3": the values of `to` against those of `from`; with
/// `only_changed`, the keys whose value differs. Shared with the PBT exploit's record.
std::string change_text(const Config& from, const Config& to, bool only_changed = false);

class LiveControl {
 public:
  /// Carries out `request` on `c` (Controller::on_control, which documents the rules).
  ControlOutcome apply(Controller& c, const ControlRequest& request, double now, std::vector<Instruction>& out);
  /// `t` starts (Controller::begin_run): the `ctl set` values waiting for it take effect now,
  /// with a "control" event. On top of a checkpoint they keep Trial::revert, the state to
  /// go back to if the checkpoint does not fit them.
  void take_effect(Controller& c, Trial& t, double now);
  /// A "warning" that `t`'s waiting `ctl set` values were never applied (`why`), and drops them.
  void not_applied(Controller& c, Trial& t, const std::string& why, double now);
  /// The run ends (`why`: the end's reason): nothing starts again, so the held workers go
  /// back to `c`'s idle queue and every change still waiting is dropped with a warning (a
  /// resume does not carry it over; the warning says to send it again).
  void run_ends(Controller& c, const std::string& why, double now);

  /// Keeps `workers` for trial `id`, which a `ctl set` paused: it goes on on them as soon as
  /// its checkpoint is stored.
  void hold(TrialId id, std::vector<int> workers) { held_[id] = std::move(workers); }
  /// The workers held for trial `id`, no longer held; nullopt when there are none.
  std::optional<std::vector<int>> take_held(TrialId id);

  /// Trials appended with a config by `add`, beyond the searcher's.
  std::int64_t added() const { return added_; }
  /// Trials `add --count` asked of the searcher beyond its plan.
  std::int64_t extended() const { return extended_; }
  /// A resume: nothing is held, and the counts are the stored ones (`extended` nullopt: it
  /// stays as it is, no state was stored).
  void resume(std::int64_t added, std::optional<std::int64_t> extended);

  /// What `ctl budget` changed of the configured stopping rules (saved with the state).
  const BudgetOverrides& overrides() const { return overrides_; }
  /// A resume: the stored changes, applied to `c`'s options again.
  void restore_overrides(Controller& c, const BudgetOverrides& o);
  /// `ctl budget --num-samples` below the search algorithm's plan: the most trials it may
  /// propose (nullopt: its own total).
  std::optional<std::int64_t> sample_cap() const { return overrides_.sample_cap; }

 private:
  // The workers of a trial that `ctl set` paused, kept for it until its checkpoint is stored:
  // it goes on on them at once then. Given back to the idle queue, another trial took them
  // as the Pause was sent, and the changed trial waited, PENDING, until some trial ended.
  std::map<TrialId, std::vector<int>> held_;
  std::int64_t added_ = 0;     // trials added by `add` with a config, beyond the searcher's
  std::int64_t extended_ = 0;  // trials `add --count` asked of the searcher beyond its plan
  BudgetOverrides overrides_;  // `ctl budget`'s changes, kept across resumes

  // The requests beyond stop, set and add, each a lifecycle step of the Controller.
  ControlOutcome pause(Controller& c, Trial& t, double now, std::vector<Instruction>& out);
  ControlOutcome resume_trial(Controller& c, Trial& t, double now, std::vector<Instruction>& out);
  ControlOutcome budget(Controller& c, const ControlRequest& r, double now, std::vector<Instruction>& out);
  /// The rules in effect, for the answer (budget_text).
  BudgetRules rules(const Controller& c) const;
};

}  // namespace ranktune::controller
