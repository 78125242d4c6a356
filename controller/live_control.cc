// Live control carried out (controller/live_control.h): `ranktune ctl` requests on the
// Controller, and the `ctl set` values waiting for a trial's next start.
#include "controller/live_control.h"

#include <cmath>
#include <utility>

#include "search/options.h"

#include "controller/controller.h"

namespace ranktune::controller {

namespace {

std::string control_tag(const std::string& id) { return "#" + (id.empty() ? std::string("?") : id); }

}  // namespace

std::string change_text(const Config& from, const Config& to, bool only_changed) {
  std::string s;
  for (const auto& [key, value] : to) {
    const auto old = from.find(key);
    if (only_changed && old != from.end() && old->second == value) continue;
    s += (s.empty() ? "" : ", ") + key + " " + (old == from.end() ? "unset" : to_string(old->second)) + " -> " +
         to_string(value);
  }
  return s;
}

void LiveControl::take_effect(Controller& c, Trial& t, double now) {
  if (t.pending.empty()) return;
  // A `ctl set` takes effect here, and only here: the values it trains with from now on.
  const std::string change = change_text(t.config, t.pending);
  if (t.restore_trial != 0)
    t.revert = Trial::Revert{"ctl set " + change, t.config, t.restore_trial, t.restore_checkpoint,
                             t.restore_iterations, t.checkpoint_iteration};
  for (const auto& [key, value] : t.pending) t.config[key] = value;
  c.event(now, &t, EventKind::Control,
          t.pending_ids + " applied: trial " + std::to_string(t.id) + " goes on from iteration " +
              std::to_string(t.iterations) + (t.restore_trial != 0 ? " (its checkpoint)" : " (from the start)") +
              " with " + change);
  t.pending.clear();
  t.pending_ids.clear();
}

void LiveControl::not_applied(Controller& c, Trial& t, const std::string& why, double now) {
  if (t.pending.empty()) return;
  c.event(now, &t, EventKind::Warning,
          "ctl set " + t.pending_ids + " not applied: " + why + ", so trial " + std::to_string(t.id) +
              " never trained with " + change_text(t.config, t.pending));
  t.pending.clear();
  t.pending_ids.clear();
}

void LiveControl::run_ends(Controller& c, const std::string& why, double now) {
  for (const auto& [id, workers] : held_) c.idle_workers_.insert(c.idle_workers_.end(), workers.begin(), workers.end());
  held_.clear();
  for (auto& t : c.trials_)
    if (!t.finished())
      not_applied(c, t, "the run ended (" + why + ") before the trial started again; send it again to the resumed run",
                  now);
}

std::optional<std::vector<int>> LiveControl::take_held(TrialId id) {
  const auto it = held_.find(id);
  if (it == held_.end()) return std::nullopt;
  std::vector<int> workers = std::move(it->second);
  held_.erase(it);
  return workers;
}

void LiveControl::resume(std::int64_t added, std::optional<std::int64_t> extended) {
  held_.clear();
  added_ = added;
  if (extended) extended_ = *extended;
}

ControlOutcome LiveControl::apply(Controller& c, const ControlRequest& r, double now, std::vector<Instruction>& out) {
  const auto refuse = [](std::string why) { return ControlOutcome{false, std::move(why)}; };
  if (!c.accepting())
    return refuse(std::string("the experiment is ending (") + to_string(c.end_reason_) + "): nothing changes now");
  if (r.kind == ControlRequest::Kind::StopExperiment) {
    const std::int64_t running = c.counts_[static_cast<std::size_t>(TrialStatus::Running)];
    // The very path of a SIGTERM to rank 0 (Controller::request_stop).
    std::vector<Instruction> stops = c.request_stop(now);
    out.insert(out.end(), std::make_move_iterator(stops.begin()), std::make_move_iterator(stops.end()));
    return {true, "the experiment stops, as on SIGTERM: " + std::to_string(running) + " running trial(s) " +
                      (c.options_.checkpoint_on_stop ? "pause with a checkpoint"
                                                     : "stop (the trainable cannot checkpoint: they start over on resume)") +
                      "; the run exits 4 once the file is flushed; continue it with `ranktune run CONFIG --resume`"};
  }
  if (r.kind == ControlRequest::Kind::Budget) return budget(c, r, now, out);
  if (r.kind == ControlRequest::Kind::Add && r.count > 0) {
    // The searcher's scheduler was told it finished (HyperBand closed its brackets): it
    // cannot be reopened.
    if (c.searcher_finished_)
      return refuse("the search algorithm has proposed all its trials and the scheduler knows it: add trials "
                    "with explicit configs instead");
    if (std::string why = c.searcher_->extend(r.count); !why.empty()) return refuse(why);
    extended_ += r.count;
    if (overrides_.sample_cap) *overrides_.sample_cap += r.count;  // beyond a lowered num_samples too
    c.dispatch(now, out);
    return {true, "the search algorithm proposes " + std::to_string(r.count) + " more trials (" +
                      std::to_string(c.expected_trials()) + " in all)"};
  }
  if (r.kind == ControlRequest::Kind::Add) {
    const TrialId id = c.append_trial(r.config).id;
    ++added_;
    c.dispatch(now, out);
    return {true, "added trial " + std::to_string(id)};
  }
  Trial* t = const_cast<Trial*>(c.find(r.trial));
  if (t == nullptr)
    return refuse("no trial " + std::to_string(r.trial) + " (the experiment has " + std::to_string(c.trials_.size()) +
                  " so far)");
  const std::string name = "trial " + std::to_string(t->id);
  if (t->finished()) return refuse(name + " already ended (" + to_string(t->status) + ")");
  if (r.kind == ControlRequest::Kind::Pause) return pause(c, *t, now, out);
  if (r.kind == ControlRequest::Kind::Resume) return resume_trial(c, *t, now, out);
  if (r.kind == ControlRequest::Kind::Stop) {
    t->held = Trial::Hold::None;
    const std::string what = name + " stopped at iteration " + std::to_string(t->iterations) + " (it was " +
                             to_string(t->status) + ")";
    if (t->status == TrialStatus::Running) {
      c.stop_trial(*t, TrialStatus::Terminated, TrialEnd::User, now, out);
    } else {
      // Pending or paused: nothing runs. A paused trial still saving keeps its count in
      // saving_ until the checkpoint lands (on_checkpoint settles a finished trial's).
      c.requeue_on_checkpoint_.erase(t->id);
      c.unhold(*t);
      c.finish(*t, TrialStatus::Terminated, TrialEnd::User, now);
      c.changed(*t);
    }
    c.dispatch(now, out);
    return {true, what};
  }
  // Set. The values are compared with what the trial will have, earlier requests included.
  Config will = t->config;
  for (const auto& [key, value] : t->pending) will[key] = value;
  const std::string change = change_text(will, r.config);
  const bool running = t->status == TrialStatus::Running;
  if (running && !c.options_.checkpoint_on_stop)
    return refuse(name + " is running and its trainable cannot checkpoint, so it cannot take new hyperparameters "
                  "without starting over: stop it, and add a trial with them");
  if (t->status == TrialStatus::Pending && std::isnan(t->start_time)) {
    // It never ran: nothing trained with the old values, so they are replaced now.
    for (const auto& [key, value] : r.config) t->config[key] = value;
    c.changed(*t);
    c.dispatch(now, out);
    return {true, name + ": " + change + "; it starts with them"};
  }
  // It ran: the values take effect when it next starts, from its checkpoint; until then
  // `config` (and /trials) keeps what it trains with. take_effect applies them and records
  // a second "control" event; a trial that ends first gets a "warning" that they were not.
  for (const auto& [key, value] : r.config) t->pending[key] = value;
  t->pending_ids += (t->pending_ids.empty() ? "" : " ") + control_tag(r.id);
  t->start_cause = "ctl set: " + change;  // for its log, once it runs again
  std::string when;
  if (running) {
    // As a graceful stop does: it checkpoints, becomes PENDING when the checkpoint is
    // stored, and restarts from it. The worker may run on to the end of its lease before it
    // sees the Pause, so the checkpoint (and the change) can come a few iterations later.
    when = "when it resumes from its next checkpoint (pausing it at iteration " + std::to_string(t->iterations) +
           "; it may run on a few iterations first)";
    c.pause_trial(*t, now, out, /*hold=*/true);
    c.requeue_on_checkpoint_.insert(t->id);
  } else if (t->saving) {
    when = "when it resumes from the checkpoint it is saving";
  } else if (t->restore_trial != 0) {
    when = "when it " + std::string(t->status == TrialStatus::Paused ? "resumes" : "starts again") +
           " from its checkpoint at iteration " + std::to_string(t->restore_iterations);
  } else {
    when = "when it starts again (from the start: it has no checkpoint)";
  }
  c.changed(*t);
  c.dispatch(now, out);
  return {true, name + " takes " + change + " " + when, true};
}

ControlOutcome LiveControl::pause(Controller& c, Trial& t, double now, std::vector<Instruction>& out) {
  const std::string name = "trial " + std::to_string(t.id);
  if (t.held != Trial::Hold::None)
    return {false, name + " is already paused by ctl pause; `ranktune ctl resume` puts it back in the queue"};
  std::string what;
  if (t.status == TrialStatus::Running) {
    if (!c.options_.checkpoint_on_stop)
      return {false, name + " is running and its trainable cannot checkpoint, so a pause would lose its " +
                         std::to_string(t.iterations) + " iterations: stop it (ctl stop) instead, or use a trainable "
                         "that checkpoints (synthetic, mlp, a command with checkpoint = true)"};
    // As the scheduler's own pauses: a Pause, it checkpoints, and its workers go to other
    // work at once; it stays PAUSED (not requeued) once the checkpoint is stored.
    c.pause_trial(t, now, out);
    t.held = Trial::Hold::Requeue;
    what = name + " pauses at iteration " + std::to_string(t.iterations) +
           " (it checkpoints first, and may run on a few iterations of its lease); its worker goes to other work";
  } else if (t.status == TrialStatus::Paused) {
    // Paused by a `ctl set` (its checkpoint on its way, its workers held for it): the held
    // workers go to other work, and the set's values wait for its resume.
    if (c.requeue_on_checkpoint_.erase(t.id) > 0 || c.unhold(t)) {
      c.unhold(t);
      t.held = Trial::Hold::Requeue;
    } else {
      t.held = Trial::Hold::Scheduler;  // its scheduler paused it: it gets it back on resume
    }
    what = name + " (paused at iteration " + std::to_string(t.iterations) + ") stays paused until `ctl resume`";
  } else {  // Pending: it does not start until resumed
    c.set_status(t, TrialStatus::Paused);
    t.held = Trial::Hold::Requeue;
    what = name + " will not start until `ctl resume`" +
           (t.restore_trial != 0 ? " (from its checkpoint at iteration " + std::to_string(t.restore_iterations) + ")"
                                 : std::string());
  }
  c.changed(t);
  c.dispatch(now, out);
  return {true, what};
}

ControlOutcome LiveControl::resume_trial(Controller& c, Trial& t, double now, std::vector<Instruction>& out) {
  const std::string name = "trial " + std::to_string(t.id);
  if (t.held == Trial::Hold::None)
    return {false, t.status == TrialStatus::Paused
                       ? name + " was paused by its scheduler, not by ctl pause: the scheduler resumes it"
                       : name + " is not paused (it is " + to_string(t.status) + ")"};
  if (t.held == Trial::Hold::Requeue) {
    if (t.saving) {
      c.requeue_on_checkpoint_.insert(t.id);  // PENDING once its checkpoint is stored
    } else {
      c.set_status(t, TrialStatus::Pending);
    }
  }
  t.held = Trial::Hold::None;
  c.scheduler_->on_trial_requeued(t);
  c.changed(t);
  c.dispatch(now, out);
  return {true, name + " is back in the queue" +
                    (t.restore_trial != 0 ? " (it goes on from its checkpoint at iteration " +
                                                std::to_string(t.restore_iterations) + ")"
                                          : std::string(" (it starts from the beginning: it has no checkpoint)"))};
}

BudgetRules LiveControl::rules(const Controller& c) const {
  BudgetRules r;
  r.time_budget_s = c.options_.time_budget_s;
  r.max_t = c.options_.max_t;
  const std::int64_t total = c.searcher_->total();
  r.num_samples = overrides_.sample_cap ? *overrides_.sample_cap : total;
  return r;
}

ControlOutcome LiveControl::budget(Controller& c, const ControlRequest& r, double now, std::vector<Instruction>& out) {
  const auto refuse = [](std::string why) { return ControlOutcome{false, std::move(why)}; };
  if (!r.time_budget_s && !r.num_samples && !r.max_t)
    return refuse("no stopping rule to change: give --time-budget-s, --num-samples or --max-t");
  const BudgetRules before = rules(c);
  // Every check first: a request is applied whole or not at all.
  if (r.time_budget_s) {
    const double s = *r.time_budget_s;
    if (!std::isfinite(s) || s < 0) return refuse("time_budget_s must be a number of seconds >= 0 (0: no budget)");
    if (s > 0 && s <= now)
      return refuse("the experiment has run " + std::to_string(static_cast<long long>(now)) +
                    " s (since it was created, over all its runs): a time budget of " +
                    std::to_string(static_cast<long long>(s)) +
                    " s would end it at once; give more, or `ranktune ctl stop-experiment` to stop it now");
  }
  if (r.max_t) {
    if (*r.max_t < 1 || *r.max_t > kMaxIterations)
      return refuse("max_t must be from 1 to " + std::to_string(kMaxIterations) + " (iterations per trial)");
    if (std::string why = c.scheduler_->refuse_max_t(*r.max_t); !why.empty()) return refuse("max_t: " + why);
  }
  const std::int64_t proposed = static_cast<std::int64_t>(c.trials_.size()) - added_;  // the searcher's so far
  const std::int64_t total = c.searcher_->total();  // its plan, `add --count` included
  std::int64_t extend_by = 0;
  if (r.num_samples) {
    const std::int64_t n = *r.num_samples;
    if (n < proposed)
      return refuse("num_samples " + std::to_string(n) + " is below the " + std::to_string(proposed) +
                    " trials the search algorithm has proposed already: " + std::to_string(proposed) +
                    " is the least it can be now (`ranktune ctl stop` ends trials)");
    // Finished (its own plan, or a lowered num_samples, reached): HyperBand has closed its
    // brackets, so it cannot be reopened.
    if (n > proposed && c.searcher_finished_)
      return refuse("num_samples: the search algorithm has proposed all its trials and the scheduler knows it, so "
                    "it cannot propose more: add trials with explicit configs instead (`ranktune ctl add`)");
    if (total >= 0 && n > total) {
      extend_by = n - total;
      if (std::string why = check_added_trials(extend_by, added_ + extended_, c.expected_trials()); !why.empty())
        return refuse("num_samples: " + why);
      if (std::string why = c.searcher_->extend(extend_by); !why.empty()) return refuse("num_samples: " + why);
    }
  }
  // Applied.
  if (r.num_samples) {
    if (extend_by > 0) {
      extended_ += extend_by;
      overrides_.sample_cap.reset();
    } else if (total < 0 || *r.num_samples < total) {
      overrides_.sample_cap = *r.num_samples;  // next_choice asks the searcher for no more
    } else {
      overrides_.sample_cap.reset();
    }
  }
  if (r.time_budget_s) {
    c.options_.time_budget_s = *r.time_budget_s;
    overrides_.time_budget_s = *r.time_budget_s;
  }
  if (r.max_t) {
    c.options_.max_t = *r.max_t;
    overrides_.max_t = *r.max_t;
    // Trials at or past the new max_t end now, as they would have there; running ones that
    // are not there yet stop at it (Controller::on_result), the others run on to it.
    for (Trial& t : c.trials_) {
      if (t.finished() || t.iterations < *r.max_t || t.saving) continue;
      if (t.status == TrialStatus::Running) {
        c.stop_trial(t, TrialStatus::Terminated, TrialEnd::MaxT, now, out);
        continue;
      }
      c.requeue_on_checkpoint_.erase(t.id);
      c.unhold(t);
      t.held = Trial::Hold::None;
      c.finish(t, TrialStatus::Terminated, TrialEnd::MaxT, now);
      c.changed(t);
    }
  }
  const BudgetRules after = rules(c);
  std::string change;
  const auto note = [&](const char* key, const std::string& from, const std::string& to) {
    if (from != to) change += (change.empty() ? "" : ", ") + std::string(key) + " " + from + " -> " + to;
  };
  const auto secs = [](double s) { return s > 0 ? std::to_string(static_cast<long long>(std::ceil(s))) : std::string("none"); };
  note("time_budget_s", secs(before.time_budget_s), secs(after.time_budget_s));
  note("num_samples", std::to_string(before.num_samples), std::to_string(after.num_samples));
  note("max_t", std::to_string(before.max_t), std::to_string(after.max_t));
  c.dispatch(now, out);
  return {true, (change.empty() ? std::string("nothing changed") : change) + "; " + budget_text(after)};
}

void LiveControl::restore_overrides(Controller& c, const BudgetOverrides& o) {
  overrides_ = o;
  if (o.time_budget_s) c.options_.time_budget_s = *o.time_budget_s;
  if (o.max_t) c.options_.max_t = *o.max_t;
}

}  // namespace ranktune::controller
