// The experiment as a pure state machine (controller::Controller): trials, their lifecycle,
// dispatch to workers, the scheduler's decisions and live control. Its persistence
// (save_state, resume) is in controller_resume.cc.
#include "controller/controller.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <utility>

#include "controller/gang_placement.h"

namespace ranktune::controller {

namespace {

// "lr 0.001 -> 0.05, layers 2 -> 3": the values of `to` against those of `from`; with
// `only_changed`, the keys whose value differs.
std::string change_text(const Config& from, const Config& to, bool only_changed = false) {
  std::string s;
  for (const auto& [key, value] : to) {
    const auto old = from.find(key);
    if (only_changed && old != from.end() && old->second == value) continue;
    s += (s.empty() ? "" : ", ") + key + " " + (old == from.end() ? "unset" : to_string(old->second)) + " -> " +
         to_string(value);
  }
  return s;
}

std::string control_tag(const std::string& id) { return "#" + (id.empty() ? std::string("?") : id); }

// An attempt that never reports the metric names up to this many of the names it did
// report, then "...": enough to spot a misspelling, short enough for the error column.
constexpr std::size_t kShownMetrics = 5;

// Adds the names of `metrics` that `t` has not reported yet to t.other_metrics, keeping one
// more than are shown (so the error knows to say "..."). After the first few results it
// stops growing, so a long attempt costs a size check per result.
void note_other_metrics(Trial& t, const Metrics& metrics) {
  for (const auto& [name, value] : metrics) {
    if (t.other_metrics.size() > kShownMetrics) return;
    if (std::find(t.other_metrics.begin(), t.other_metrics.end(), name) == t.other_metrics.end())
      t.other_metrics.push_back(name);
  }
}

}  // namespace

const char* to_string(EndReason r) {
  switch (r) {
    case EndReason::None: return "running";
    case EndReason::Completed: return "completed";
    case EndReason::TargetReached: return "target reached";
    case EndReason::TimeBudget: return "time budget spent";
    case EndReason::Interrupted: return "interrupted";
  }
  return "?";
}

Controller::Controller(ControllerOptions options, std::unique_ptr<Searcher> searcher,
                       std::unique_ptr<Scheduler> scheduler, ControllerObserver* observer)
    : options_(std::move(options)),
      searcher_(std::move(searcher)),
      scheduler_(std::move(scheduler)),
      observer_(observer) {}

const Trial* Controller::find(TrialId id) const {
  if (id < 1 || id > static_cast<TrialId>(trials_.size())) return nullptr;
  return &trials_[static_cast<std::size_t>(id - 1)];
}

Trial* Controller::running(TrialId id, int attempt) {
  auto* t = const_cast<Trial*>(find(id));
  if (t == nullptr || t->status != TrialStatus::Running || t->attempt != attempt) return nullptr;
  return t;
}

const Trial* Controller::best() const {
  const Trial* b = nullptr;
  for (const auto& t : trials_) {
    if (!std::isnan(t.best) && (b == nullptr || better(t.best, b->best, options_.mode))) b = &t;
  }
  return b;
}

std::array<std::int64_t, 5> Controller::counts() const { return counts_; }

void Controller::set_status(Trial& t, TrialStatus s) {
  --counts_[static_cast<std::size_t>(t.status)];
  ++counts_[static_cast<std::size_t>(s)];
  t.status = s;
}

bool Controller::finished() const {
  // Kept O(1) with counts_: the driver asks after every batch of messages.
  const auto n = [&](TrialStatus s) { return counts_[static_cast<std::size_t>(s)]; };
  if (n(TrialStatus::Running) > 0 || saving_ > 0) return false;
  if (!accepting()) return true;
  return searcher_finished_ && n(TrialStatus::Pending) == 0 && n(TrialStatus::Paused) == 0;
}

void Controller::changed(const Trial& t) {
  if (observer_ != nullptr) observer_->on_trial_changed(t);
}

void Controller::event(double now, const Trial* t, EventKind kind, const std::string& msg) {
  if (observer_ == nullptr) return;
  const int worker = (t != nullptr && !t->workers.empty()) ? t->workers.front() : -1;
  observer_->on_event(now, t != nullptr ? t->id : -1, worker, kind, msg);
}

std::vector<Instruction> Controller::on_worker_free(int worker, double now) {
  idle_workers_.push_back(worker);
  std::vector<Instruction> out;
  dispatch(now, out);
  return out;
}

std::vector<Instruction> Controller::on_workers_free(const std::vector<int>& workers, double now) {
  idle_workers_.insert(idle_workers_.end(), workers.begin(), workers.end());
  std::vector<Instruction> out;
  dispatch(now, out);
  return out;
}

void Controller::dispatch(double now, std::vector<Instruction>& out) {
  const auto gang_size = static_cast<std::size_t>(std::max(1, options_.ranks_per_trial));
  while (accepting() && idle_workers_.size() >= gang_size) {
    const auto choice = next_choice();
    if (!choice) break;
    Trial& t = trials_[static_cast<std::size_t>(*choice - 1)];
    std::vector<int> gang = *choose_gang(idle_workers_, static_cast<int>(gang_size), options_.worker_nodes);
    std::erase_if(idle_workers_, [&](int w) { return std::find(gang.begin(), gang.end(), w) != gang.end(); });
    start_trial(t, std::move(gang), now, out);
  }
  end_abandoned(now);
}

std::optional<TrialId> Controller::next_choice() {
  auto choice = scheduler_->choose_trial_to_run(trials_);
  if (!choice && !searcher_finished_) {
    const TrialId id = static_cast<TrialId>(trials_.size()) + 1;
    Suggestion s = searcher_->suggest(id);
    if (s.kind == Suggestion::Kind::Finished) {
      searcher_finished_ = true;
      scheduler_->on_searcher_finished();
      choice = scheduler_->choose_trial_to_run(trials_);
    } else if (s.kind == Suggestion::Kind::Config) {
      append_trial(std::move(s.config));
      choice = scheduler_->choose_trial_to_run(trials_);
    }
  }
  return choice;
}

Trial& Controller::append_trial(Config config) {
  Trial& t = trials_.emplace_back();
  ++counts_[static_cast<std::size_t>(TrialStatus::Pending)];
  t.id = static_cast<TrialId>(trials_.size());
  t.config = std::move(config);
  scheduler_->on_trial_add(t);
  changed(t);
  return t;
}

std::string Controller::cause_of(const Trial& t) const {
  // A paused trial resumes, the rest start afresh or retry unless the code that queued it
  // said why.
  if (!t.start_cause.empty()) return t.start_cause;
  return t.status == TrialStatus::Paused ? "resume" : t.attempt > 0 ? "retry" : "start";
}

std::string Controller::begin_run(Trial& t, std::vector<int> workers, double now) {
  // Computed before the status changes.
  std::string cause = cause_of(t);
  t.start_cause.clear();
  if (t.status == TrialStatus::Paused) event(now, &t, EventKind::Unpause, "from iteration " + std::to_string(t.restore_iterations));
  set_status(t, TrialStatus::Running);
  t.workers = std::move(workers);
  t.ran_on = t.workers;
  t.hosts.clear();
  for (const int w : t.ran_on)
    if (static_cast<std::size_t>(w) < options_.worker_hosts.size()) t.hosts.push_back(options_.worker_hosts[static_cast<std::size_t>(w)]);
  t.iterations = t.restore_trial != 0 ? t.restore_iterations : 0;
  t.reported = false;
  t.other_metrics.clear();
  if (std::isnan(t.start_time)) t.start_time = now;
  if (!t.pending.empty()) {
    // A `ctl set` takes effect here, and only here: the values it trains with from now on.
    const std::string change = change_text(t.config, t.pending);
    if (t.restore_trial != 0)
      t.revert = Trial::Revert{"ctl set " + change, t.config, t.restore_trial, t.restore_checkpoint,
                               t.restore_iterations, t.checkpoint_iteration};
    for (const auto& [key, value] : t.pending) t.config[key] = value;
    event(now, &t, EventKind::Control,
          t.pending_ids + " applied: trial " + std::to_string(t.id) + " goes on from iteration " +
              std::to_string(t.iterations) + (t.restore_trial != 0 ? " (its checkpoint)" : " (from the start)") +
              " with " + change);
    t.pending.clear();
    t.pending_ids.clear();
  }
  changed(t);
  event(now, &t, EventKind::Start, t.attempt == 0 ? "" : "attempt " + std::to_string(t.attempt));
  return cause;
}

void Controller::start_trial(Trial& t, std::vector<int> workers, double now, std::vector<Instruction>& out) {
  const std::string cause = begin_run(t, std::move(workers), now);
  t.lease_until = lease(t);
  for (const int w : t.workers) {
    Instruction c{Instruction::Kind::Start, t.id, w, t.attempt, t.config, t.lease_until};
    c.iterations = t.iterations;
    c.restore_trial = t.restore_trial;
    c.restore_checkpoint = t.restore_checkpoint;
    c.gang = t.workers;
    c.cause = cause;
    out.push_back(std::move(c));
  }
}

void Controller::end_abandoned(double now) {
  for (const TrialId id : scheduler_->take_abandoned()) {
    Trial& t = trials_[static_cast<std::size_t>(id - 1)];
    if (t.status != TrialStatus::Paused) continue;
    if (t.saving) {  // its checkpoint is no longer needed, but the count must stay exact
      t.saving = false;
      --saving_;
    }
    unhold(t);
    finish(t, TrialStatus::Terminated, TrialEnd::Stopped, now);
    changed(t);
  }
  // Nothing runs, nothing new will come, and the scheduler picked none of the paused
  // trials: none ever will be resumed, so they end as they are (ASHA's promotion variant
  // leaves the trials that never made the cut paused until here).
  const auto n = [&](TrialStatus s) { return counts_[static_cast<std::size_t>(s)]; };
  if (!accepting() || !searcher_finished_ || n(TrialStatus::Paused) == 0) return;
  if (n(TrialStatus::Running) > 0 || n(TrialStatus::Pending) > 0 || saving_ > 0) return;
  if (scheduler_->choose_trial_to_run(trials_)) return;
  for (auto& t : trials_) {
    if (t.status != TrialStatus::Paused) continue;
    event(now, &t, EventKind::End, "paused, and not resumed by the scheduler");
    finish(t, TrialStatus::Terminated, t.iterations >= options_.max_t ? TrialEnd::MaxT : TrialEnd::Stopped, now);
    changed(t);
  }
}

std::int64_t Controller::lease(const Trial& t) const {
  std::int64_t until = std::min({options_.max_t, scheduler_->next_decision(t),
                                 t.iterations + std::max<std::int64_t>(1, options_.max_lease)});
  // A checkpoint is taken while the worker waits, so a lease ends where one is due.
  if (const std::int64_t every = options_.checkpoint_every; every > 0)
    until = std::min(until, (t.iterations / every + 1) * every);
  return until;
}

void Controller::release(Trial& t) {
  idle_workers_.insert(idle_workers_.end(), t.workers.begin(), t.workers.end());
  t.workers.clear();
}

void Controller::finish(Trial& t, TrialStatus s, TrialEnd why, double now) {
  set_status(t, s);
  t.end_time = now;
  t.end_reason = s == TrialStatus::Error ? TrialEnd::Error : why;
  not_applied(t, std::string("the trial ended (") + to_string(s) + ") at iteration " + std::to_string(t.iterations) +
                     " before it started again", now);
  if (s == TrialStatus::Error) {
    scheduler_->on_trial_error(t);
  } else {
    scheduler_->on_trial_complete(t);
  }
  searcher_->on_trial_complete(t.id, t.last_metrics, s == TrialStatus::Error);
}

void Controller::stop_trial(Trial& t, TrialStatus final_status, TrialEnd why, double now, std::vector<Instruction>& out) {
  // A trial that ends with at_end checkpoints: the worker's Pause saves, then stops.
  const bool save = options_.checkpoint_at_end && final_status == TrialStatus::Terminated;
  for (int w : t.workers) out.push_back({save ? Instruction::Kind::Pause : Instruction::Kind::Stop, t.id, w, t.attempt, {}});
  if (save && !t.workers.empty()) {
    t.saving = true;
    ++saving_;
  }
  release(t);
  if (final_status == TrialStatus::Pending) {
    set_status(t, TrialStatus::Pending);  // interrupted: it will start over
    scheduler_->on_trial_requeued(t);
  } else {
    finish(t, final_status, why, now);
  }
  changed(t);
}

void Controller::not_applied(Trial& t, const std::string& why, double now) {
  if (t.pending.empty()) return;
  event(now, &t, EventKind::Warning,
        "ctl set " + t.pending_ids + " not applied: " + why + ", so trial " + std::to_string(t.id) +
            " never trained with " + change_text(t.config, t.pending));
  t.pending.clear();
  t.pending_ids.clear();
}

void Controller::revert_attempt(Trial& t, const std::string& reason, const std::string& log_tail, double now) {
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
  event(now, &t, EventKind::Revert,
        "failed before its first result after " + r.change + ", so it goes back to " + back +
            " with its old values: " + reason);
  release(t);
  // Rows past the point it goes back to are in the file (an exploit keeps the trial's own
  // count): a new attempt then, so no (trial, attempt, iteration) repeats. Not a failure.
  if (r.restore_iterations < t.iterations) ++t.attempt;
  t.config = std::move(r.config);
  t.restore_trial = r.restore_trial;
  t.restore_checkpoint = r.restore_checkpoint;
  t.restore_iterations = r.restore_iterations;
  t.checkpoint_iteration = r.checkpoint_iteration;
  set_status(t, TrialStatus::Pending);
  scheduler_->on_trial_requeued(t);
  changed(t);
}

void Controller::fail_attempt(Trial& t, const std::string& reason, double now) {
  t.revert.reset();
  t.error = reason;
  event(now, &t, EventKind::Error, reason);
  release(t);
  if (t.failures++ < options_.max_failures) {
    ++t.attempt;
    set_status(t, TrialStatus::Pending);
    scheduler_->on_trial_requeued(t);
    event(now, &t, EventKind::Retry, "failure " + std::to_string(t.failures) + " of " +
                                std::to_string(options_.max_failures) + " allowed; attempt " +
                                std::to_string(t.attempt));
  } else {
    finish(t, TrialStatus::Error, TrialEnd::Error, now);
  }
  changed(t);
}

std::vector<Instruction> Controller::on_result(TrialId id, int attempt, const Metrics& metrics, double now) {
  std::vector<Instruction> out;
  on_result(id, attempt, metrics, now, out);
  return out;
}

void Controller::on_result(TrialId id, int attempt, const Metrics& metrics_in, double now,
                           std::vector<Instruction>& out) {
  Trial* tp = running(id, attempt);
  bool pausing = false;
  if (tp == nullptr) {
    // A trial paused while it ran on its lease: the results it sends before it sees the
    // Pause are part of the state it checkpoints, so they are recorded (without a decision).
    tp = const_cast<Trial*>(find(id));
    if (tp == nullptr || tp->status != TrialStatus::Paused || !tp->saving || tp->attempt != attempt) return;
    pausing = true;
  }
  Trial& t = *tp;
  ++t.iterations;
  t.revert.reset();  // it restored and ran: its new values load
  // Copied into the storage the trial's previous result used: no allocation per result.
  t.last_metrics = metrics_in;
  const Metrics& metrics = t.last_metrics;
  if (observer_ != nullptr) observer_->on_result(t, t.iterations, now, metrics);

  const auto it = metrics.find(options_.metric);
  if (it == metrics.end() && !t.reported) note_other_metrics(t, metrics);
  if (it != metrics.end()) {
    t.reported = true;
    const double v = it->second;
    if (!std::isfinite(v) && options_.non_finite == NonFinitePolicy::Error && !pausing) {
      std::ostringstream why;
      why << "metric '" << options_.metric << "' is " << v << " at iteration " << t.iterations
          << " (non_finite = \"error\")";
      for (int w : t.workers) out.emplace_back(Instruction{Instruction::Kind::Stop, t.id, w, t.attempt, {}}).failed = true;
      t.log_tail.clear();  // an earlier failure's; this one's comes from the worker (on_log_tail)
      fail_attempt(t, why.str(), now);
      dispatch(now, out);
      return;
    }
    if (std::isfinite(v)) {
      t.last = v;
      if (better(v, t.best, options_.mode)) {
        t.best = v;
        t.best_iteration = t.iterations;
      }
    }
  }
  searcher_->on_trial_result(t.id, t.iterations, metrics);
  if (pausing) {
    // Paused by a graceful stop while it ran: its scheduler still judges the result, or a
    // rung it reached now would be skipped after the resume. The worker is pausing anyway;
    // what changes is what the trial is once its checkpoint lands.
    bool freed = false;  // the workers held for it (a `ctl set`) are free again
    if (requeue_on_checkpoint_.count(t.id) > 0) {
      const Decision d = t.iterations >= options_.max_t ? Decision::Stop : scheduler_->on_trial_result(t);
      if (d == Decision::Pause) {
        requeue_on_checkpoint_.erase(t.id);  // the scheduler's own pause: it stays PAUSED
        freed = unhold(t);
      } else if (d == Decision::Stop) {
        requeue_on_checkpoint_.erase(t.id);
        t.saving = false;
        --saving_;
        freed = unhold(t);
        finish(t, TrialStatus::Terminated, t.iterations >= options_.max_t ? TrialEnd::MaxT : TrialEnd::Stopped, now);
      }
    }
    changed(t);
    if (freed) dispatch(now, out);
    return;
  }

  if (options_.target && it != metrics.end() && std::isfinite(it->second) &&
      sign(options_.mode) * it->second >= sign(options_.mode) * *options_.target) {
    std::ostringstream msg;
    msg << "trial " << t.id << " reached " << options_.metric << " = " << it->second;
    event(now, &t, EventKind::Target, msg.str());
    auto stops = end_experiment(EndReason::TargetReached, TrialStatus::Terminated, now);
    out.insert(out.end(), std::make_move_iterator(stops.begin()), std::make_move_iterator(stops.end()));
    return;
  }

  Decision d = t.iterations >= options_.max_t ? Decision::Stop : scheduler_->on_trial_result(t);
  switch (d) {
    case Decision::Exploit:
      if (exploit_trial(t, scheduler_->exploit(t), now, out)) break;
      [[fallthrough]];  // the donor has no stored checkpoint yet: go on as before
    case Decision::Continue: {
      changed(t);
      const bool save = scheduler_->wants_checkpoint(t) ||
                        (options_.checkpoint_every > 0 && t.iterations % options_.checkpoint_every == 0);
      if (!save && !options_.continue_every_result && t.iterations < t.lease_until) break;
      Instruction& c = out.emplace_back(Instruction{Instruction::Kind::Continue, t.id, t.workers.front(), t.attempt, {}, lease(t)});
      c.save = save;
      t.lease_until = c.until;
      break;
    }
    case Decision::Pause:
      pause_trial(t, now, out);
      dispatch(now, out);
      break;
    case Decision::Stop:
      if (!t.reported) {
        // It ran to max_t (or its scheduler stopped it) and never reported the metric: a
        // metric under another name, not a finished trial without a value.
        for (int w : t.workers) out.emplace_back(Instruction{Instruction::Kind::Stop, t.id, w, t.attempt, {}}).failed = true;
        t.log_tail.clear();  // the worker sends this attempt's (on_log_tail)
        fail_attempt(t, missing_metric(t), now);
        dispatch(now, out);
        break;
      }
      if (t.iterations < options_.max_t) event(now, &t, EventKind::EarlyStop, "stopped by the scheduler");
      stop_trial(t, TrialStatus::Terminated, t.iterations < options_.max_t ? TrialEnd::Stopped : TrialEnd::MaxT, now, out);
      dispatch(now, out);
      break;
  }
  end_abandoned(now);
}

void Controller::pause_trial(Trial& t, double now, std::vector<Instruction>& out, bool hold) {
  for (int w : t.workers) out.push_back({Instruction::Kind::Pause, t.id, w, t.attempt, {}});
  if (hold) {
    held_[t.id] = std::exchange(t.workers, {});
  } else {
    release(t);
  }
  set_status(t, TrialStatus::Paused);
  t.saving = true;
  ++saving_;
  event(now, &t, EventKind::Pause, "at iteration " + std::to_string(t.iterations));
  changed(t);
}

bool Controller::unhold(const Trial& t) {
  const auto it = held_.find(t.id);
  if (it == held_.end()) return false;
  idle_workers_.insert(idle_workers_.end(), it->second.begin(), it->second.end());
  held_.erase(it);
  return true;
}

bool Controller::exploit_trial(Trial& t, Exploit e, double now, std::vector<Instruction>& out) {
  const Trial* donor = find(e.donor);
  if (donor == nullptr || donor->checkpoint_iteration == 0 || donor->id == t.id) return false;
  // The workers carry out their messages in order: they end the current run, then start
  // the new one, so they stay busy and no other trial can take them in between.
  std::vector<int> workers = t.workers;
  for (const int w : workers) out.push_back({Instruction::Kind::Stop, t.id, w, t.attempt, {}});
  const std::string change = change_text(t.config, e.config, true);
  t.revert = Trial::Revert{"exploit of trial " + std::to_string(donor->id) + " (iteration " +
                               std::to_string(donor->checkpoint_iteration) +
                               "): " + (change.empty() ? std::string("the same values") : change),
                           t.config, t.restore_trial, t.restore_checkpoint, t.restore_iterations,
                           t.checkpoint_iteration};
  Config before = std::move(t.config);
  t.config = std::move(e.config);
  t.restore_trial = donor->id;
  t.restore_checkpoint = donor->checkpoint_iteration;
  t.restore_iterations = t.iterations;
  t.checkpoint_iteration = 0;  // its stored state is of the config it just left: no donor now
  t.start_cause = "exploit of trial " + std::to_string(donor->id) + " at its iteration " +
                  std::to_string(donor->checkpoint_iteration);
  if (observer_ != nullptr) observer_->on_exploit(now, t, donor->id, donor->checkpoint_iteration, before);
  set_status(t, TrialStatus::Pending);  // start_trial moves it back to Running
  start_trial(t, std::move(workers), now, out);
  return true;
}

std::vector<Instruction> Controller::on_checkpoint(TrialId id, int attempt, std::int64_t iteration, double now) {
  std::vector<Instruction> out;
  auto* t = const_cast<Trial*>(find(id));
  if (t == nullptr || t->attempt != attempt || iteration <= 0) return out;
  if (iteration > t->checkpoint_iteration) t->checkpoint_iteration = iteration;
  // Later starts (a resume, a retry) restore the newest state of the trial's current
  // lineage. Stale attempts were refused above, and a checkpoint from before an exploit
  // always arrives before the result the exploit answered, so "newest" is "highest".
  if (t->restore_trial == 0 || iteration >= t->restore_iterations) {
    t->restore_trial = t->id;
    t->restore_checkpoint = iteration;
    t->restore_iterations = iteration;
  }
  if (t->finished() && t->saving) {  // its at_end checkpoint
    t->saving = false;
    --saving_;
  } else if (t->status == TrialStatus::Paused && t->saving) {
    t->saving = false;
    --saving_;
    // Paused by a graceful stop, not by its scheduler: it is PENDING (from this checkpoint),
    // so that after a resume any scheduler runs it again.
    if (requeue_on_checkpoint_.erase(t->id) > 0) set_status(*t, TrialStatus::Pending);
    scheduler_->on_trial_requeued(*t);
    // Paused by `ctl set`: it goes on now, with the new values, on the workers it paused on.
    if (const auto h = held_.find(t->id); h != held_.end()) {
      std::vector<int> workers = std::move(h->second);
      held_.erase(h);
      if (accepting() && t->status == TrialStatus::Pending) {
        start_trial(*t, std::move(workers), now, out);  // records the change (begin_run)
        dispatch(now, out);
        return out;
      }
      idle_workers_.insert(idle_workers_.end(), workers.begin(), workers.end());
    }
  }
  changed(*t);
  dispatch(now, out);
  return out;
}

void Controller::on_checkpoint_lost(TrialId id, std::int64_t iteration, std::int64_t fallback) {
  // Rare (a damaged file), so a scan of the trial table is fine.
  for (Trial& t : trials_) {
    if (t.id == id && t.checkpoint_iteration == iteration) t.checkpoint_iteration = fallback;
    if (t.revert && t.revert->restore_trial == id && t.revert->restore_checkpoint == iteration) {
      Trial::Revert& r = *t.revert;
      if (r.checkpoint_iteration == iteration) r.checkpoint_iteration = fallback;
      if (fallback == 0) {
        r.restore_trial = r.restore_checkpoint = r.restore_iterations = 0;
      } else {
        r.restore_checkpoint = fallback;
        if (t.id == id) r.restore_iterations = fallback;
      }
    }
    if (t.restore_trial != id || t.restore_checkpoint != iteration) continue;
    if (fallback == 0) {
      t.restore_trial = t.restore_checkpoint = t.restore_iterations = 0;
    } else {
      t.restore_checkpoint = fallback;
      // Its own state: it goes on counting from there. A donor's: it keeps its own count.
      if (t.id == id) t.restore_iterations = fallback;
    }
  }
}

std::string Controller::missing_metric(const Trial& t) const {
  std::string names;
  for (std::size_t i = 0; i < t.other_metrics.size(); ++i)
    names += (i == 0 ? "" : ", ") + (i < kShownMetrics ? t.other_metrics[i] : std::string("..."));
  return "ended without reporting metric '" + options_.metric + "'" +
         (names.empty() ? std::string(", it reported no metrics") : ", it reported: " + names);
}

std::vector<Instruction> Controller::on_trial_done(TrialId id, int attempt, double now, const std::string& log_tail) {
  std::vector<Instruction> out;
  Trial* t = running(id, attempt);
  if (t == nullptr) return out;
  if (!t->reported) {
    t->log_tail = log_tail;
    fail_attempt(*t, missing_metric(*t), now);
  } else {
    release(*t);
    finish(*t, TrialStatus::Terminated, t->iterations >= options_.max_t ? TrialEnd::MaxT : TrialEnd::Done, now);
    changed(*t);
  }
  dispatch(now, out);
  return out;
}

std::vector<Instruction> Controller::on_trial_failed(TrialId id, int attempt,
                                                 const std::string& reason,
                                                 const std::string& log_tail, double now) {
  std::vector<Instruction> out;
  Trial* t = running(id, attempt);
  if (t == nullptr) {
    // A pause whose checkpoint failed to save: retry from the previous checkpoint.
    t = const_cast<Trial*>(find(id));
    if (t == nullptr || !t->saving || t->attempt != attempt) return out;
    t->saving = false;
    --saving_;
    // No checkpoint to go on from: the workers held for a `ctl set` are free (the retry
    // below starts wherever a worker is), and the failed pause no longer requeues it.
    unhold(*t);
    requeue_on_checkpoint_.erase(t->id);
    if (t->finished()) {  // its at_end checkpoint failed: the trial's result stands
      event(now, t, EventKind::Warning, "no checkpoint at the end: " + reason);
      dispatch(now, out);
      return out;
    }
    if (t->status != TrialStatus::Paused) return out;
  }
  if (t->status == TrialStatus::Running && t->revert) {
    // It failed before its first result after a start that changed its hyperparameters on
    // top of a checkpoint: most likely the checkpoint does not fit them (a layer's shape).
    revert_attempt(*t, reason, log_tail, now);
    dispatch(now, out);
    return out;
  }
  t->log_tail = log_tail;
  fail_attempt(*t, reason, now);
  dispatch(now, out);
  return out;
}

void Controller::on_log_tail(TrialId id, int attempt, const std::string& log_tail) {
  Trial* t = const_cast<Trial*>(find(id));
  if (t == nullptr || log_tail.empty() || !t->log_tail.empty() || t->error.empty()) return;
  // The failed attempt is the trial's last one (it ended as ERROR), or the one before its
  // retry, which has not failed since (its log_tail is still empty).
  const bool ended = t->status == TrialStatus::Error && t->attempt == attempt;
  const bool retried = t->attempt == attempt + 1;
  if (!ended && !retried) return;
  t->log_tail = log_tail;
  changed(*t);
}

std::vector<Instruction> Controller::end_experiment(EndReason why, TrialStatus final_status,
                                                double now) {
  std::vector<Instruction> out;
  if (!accepting()) return out;
  end_reason_ = why;
  event(now, nullptr, EventKind::End, to_string(why));
  for (auto& t : trials_) {
    if (t.status != TrialStatus::Running) continue;
    if (why == EndReason::Interrupted && options_.checkpoint_on_stop) {
      pause_trial(t, now, out);
      requeue_on_checkpoint_.insert(t.id);
    }
    else stop_trial(t, final_status, why == EndReason::TargetReached ? TrialEnd::Target : TrialEnd::Budget, now, out);
  }
  // Nothing starts again in this run: a change still waiting is lost with it (a resume
  // does not carry it over; the warning says to send it again).
  for (const auto& [id, workers] : held_) idle_workers_.insert(idle_workers_.end(), workers.begin(), workers.end());
  held_.clear();
  for (auto& t : trials_)
    if (!t.finished())
      not_applied(t, std::string("the run ended (") + to_string(why) + ") before the trial started again; send it " +
                         "again to the resumed run", now);
  return out;
}

ControlOutcome Controller::on_control(const ControlRequest& r, double now, std::vector<Instruction>& out) {
  const auto refuse = [](std::string why) { return ControlOutcome{false, std::move(why)}; };
  if (!accepting()) return refuse(std::string("the experiment is ending (") + to_string(end_reason_) + "): nothing changes now");
  if (r.kind == ControlRequest::Kind::Add && r.count > 0) {
    // The searcher's scheduler was told it finished (HyperBand closed its brackets): it
    // cannot be reopened.
    if (searcher_finished_)
      return refuse("the search algorithm has proposed all its trials and the scheduler knows it: add trials "
                    "with explicit configs instead");
    if (std::string why = searcher_->extend(r.count); !why.empty()) return refuse(why);
    extended_ += r.count;
    dispatch(now, out);
    return {true, "the search algorithm proposes " + std::to_string(r.count) + " more trials (" +
                      std::to_string(expected_trials()) + " in all)"};
  }
  if (r.kind == ControlRequest::Kind::Add) {
    const TrialId id = append_trial(r.config).id;
    ++added_;
    dispatch(now, out);
    return {true, "added trial " + std::to_string(id)};
  }
  Trial* t = const_cast<Trial*>(find(r.trial));
  if (t == nullptr)
    return refuse("no trial " + std::to_string(r.trial) + " (the experiment has " + std::to_string(trials_.size()) +
                  " so far)");
  const std::string name = "trial " + std::to_string(t->id);
  if (t->finished()) return refuse(name + " already ended (" + to_string(t->status) + ")");
  if (r.kind == ControlRequest::Kind::Stop) {
    const std::string what = name + " stopped at iteration " + std::to_string(t->iterations) + " (it was " +
                             to_string(t->status) + ")";
    if (t->status == TrialStatus::Running) {
      stop_trial(*t, TrialStatus::Terminated, TrialEnd::User, now, out);
    } else {
      // Pending or paused: nothing runs. A paused trial still saving keeps its count in
      // saving_ until the checkpoint lands (on_checkpoint settles a finished trial's).
      requeue_on_checkpoint_.erase(t->id);
      unhold(*t);
      finish(*t, TrialStatus::Terminated, TrialEnd::User, now);
      changed(*t);
    }
    dispatch(now, out);
    return {true, what};
  }
  // Set. The values are compared with what the trial will have, earlier requests included.
  Config will = t->config;
  for (const auto& [key, value] : t->pending) will[key] = value;
  const std::string change = change_text(will, r.config);
  const bool running = t->status == TrialStatus::Running;
  if (running && !options_.checkpoint_on_stop)
    return refuse(name + " is running and its trainable cannot checkpoint, so it cannot take new hyperparameters "
                  "without starting over: stop it, and add a trial with them");
  if (t->status == TrialStatus::Pending && std::isnan(t->start_time)) {
    // It never ran: nothing trained with the old values, so they are replaced now.
    for (const auto& [key, value] : r.config) t->config[key] = value;
    changed(*t);
    dispatch(now, out);
    return {true, name + ": " + change + "; it starts with them"};
  }
  // It ran: the values take effect when it next starts, from its checkpoint; until then
  // `config` (and /trials) keeps what it trains with. start_trial applies them and records
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
    pause_trial(*t, now, out, /*hold=*/true);
    requeue_on_checkpoint_.insert(t->id);
  } else if (t->saving) {
    when = "when it resumes from the checkpoint it is saving";
  } else if (t->restore_trial != 0) {
    when = "when it " + std::string(t->status == TrialStatus::Paused ? "resumes" : "starts again") +
           " from its checkpoint at iteration " + std::to_string(t->restore_iterations);
  } else {
    when = "when it starts again (from the start: it has no checkpoint)";
  }
  changed(*t);
  dispatch(now, out);
  return {true, name + " takes " + change + " " + when, true};
}

std::vector<Instruction> Controller::on_tick(double now) {
  std::vector<Instruction> out;
  if (accepting() && options_.time_budget_s > 0 && now >= options_.time_budget_s) {
    return end_experiment(EndReason::TimeBudget, TrialStatus::Terminated, now);
  }
  if (accepting() && finished()) end_reason_ = EndReason::Completed;
  return out;
}

std::vector<Instruction> Controller::request_stop(double now) {
  return end_experiment(EndReason::Interrupted, TrialStatus::Pending, now);
}

}  // namespace ranktune::controller
