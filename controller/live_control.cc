// Live control carried out (controller/live_control.h): `ranktune ctl` requests on the
// Controller, and the `ctl set` values waiting for a trial's next start.
#include "controller/live_control.h"

#include <cmath>
#include <utility>

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
  if (r.kind == ControlRequest::Kind::Add && r.count > 0) {
    // The searcher's scheduler was told it finished (HyperBand closed its brackets): it
    // cannot be reopened.
    if (c.searcher_finished_)
      return refuse("the search algorithm has proposed all its trials and the scheduler knows it: add trials "
                    "with explicit configs instead");
    if (std::string why = c.searcher_->extend(r.count); !why.empty()) return refuse(why);
    extended_ += r.count;
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
  if (r.kind == ControlRequest::Kind::Stop) {
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

}  // namespace ranktune::controller
