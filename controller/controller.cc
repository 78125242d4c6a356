// The experiment as a pure state machine (controller::Controller): trials, their lifecycle,
// dispatch to workers and the scheduler's decisions. Live control is carried out by
// LiveControl (live_control.cc), failed attempts by FailedAttempts (failed_attempts.cc), the
// saved state read and written by Resume (resume.cc).
#include "controller/controller.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "search/pareto.h"
#include <utility>

#include "controller/gang_placement.h"
#include "search/recommend.h"

namespace ranktune::controller {

const char* to_string(EndReason r) {
  switch (r) {
    case EndReason::None: return "running";
    case EndReason::Completed: return "completed";
    case EndReason::TargetReached: return "target reached";
    case EndReason::TimeBudget: return "time budget spent";
    case EndReason::StepBudget: return "step budget spent";
    case EndReason::Interrupted: return "interrupted";
  }
  return "?";
}

Controller::Controller(ControllerOptions options, std::unique_ptr<Searcher> searcher,
                       std::unique_ptr<Scheduler> scheduler, ControllerObserver* observer)
    : options_(std::move(options)),
      searcher_(std::move(searcher)),
      scheduler_(std::move(scheduler)),
      observer_(observer),
      failures_(options_.max_failures, options_.metric),
      resume_(*searcher_, *scheduler_, options_.metric),
      budget_(options_.max_total_steps) {}

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
  std::vector<const Trial*> all;
  all.reserve(trials_.size());
  for (const auto& t : trials_) all.push_back(&t);
  return search::recommended(all, options_.mode);
}

void Controller::warn_partial_objectives(const Trial& t, const Metrics& metrics, double now) {
  // A result with some objectives and not the others (a latency measured only at the end)
  // is a failed point for MO-ASHA and MO-HyperBand at every rung it meets: say so once.
  if (!options_.objectives.any_reported(metrics)) return;
  std::vector<std::string> names = options_.objectives.metrics;
  for (const auto& c : options_.objectives.constraints) names.push_back(c.metric);
  std::string missing;
  for (std::size_t i = 0; i < names.size(); ++i)
    if (!metrics.contains(names[i]) && std::find(names.begin(), names.begin() + i, names[i]) == names.begin() + i)
      missing += (missing.empty() ? "" : ", ") + names[i];
  if (missing.empty()) return;
  partial_objectives_warned_ = true;
  event(now, &t, EventKind::Warning,
        "trial " + std::to_string(t.id) + " reported some objectives but not " + missing + " at iteration " +
            std::to_string(t.iterations) +
            ": such a result ranks as failed (behind every complete one) wherever the scheduler judges it. Report "
            "every objective and constrained metric with each result (once per experiment)");
}

void Controller::rank_pareto() {
  if (!options_.objectives.multi() || !pareto_stale_) return;
  pareto_stale_ = false;
  std::vector<std::size_t> ranked;
  std::vector<search::ParetoPoint> points;
  for (std::size_t i = 0; i < trials_.size(); ++i) {
    const Trial& t = trials_[i];
    // A trial that reported none of the objectives has no point to rank; one that reported
    // some is a failed point (objectives.h), on the last front.
    if (t.status != TrialStatus::Terminated || !options_.objectives.any_reported(t.last_metrics)) continue;
    ranked.push_back(i);
    points.push_back(options_.objectives.point(t.last_metrics));
  }
  std::vector<int> rank(trials_.size(), -1);
  if (!points.empty()) {
    const search::ParetoRanking r = search::nondominated_sort(points);
    for (std::size_t k = 0; k < ranked.size(); ++k) rank[ranked[k]] = static_cast<int>(r.rank[k]);
  }
  for (std::size_t i = 0; i < trials_.size(); ++i) {
    if (trials_[i].pareto_rank == rank[i]) continue;
    trials_[i].pareto_rank = rank[i];
    changed(trials_[i]);
  }
}

std::array<std::int64_t, 5> Controller::counts() const { return counts_; }

void Controller::set_status(Trial& t, TrialStatus s) {
  const auto holds_lease = [](TrialStatus x) { return x == TrialStatus::Running || x == TrialStatus::Paused; };
  if (holds_lease(t.status) && !holds_lease(s)) budget_.give_back(t);
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
  while (accepting() && budget_.left() > 0 && idle_workers_.size() >= gang_size) {
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
    // `ctl budget --num-samples` lowered the searcher's plan: past it, it is finished.
    const std::optional<std::int64_t> cap = live_.sample_cap();
    Suggestion s = cap && static_cast<std::int64_t>(trials_.size()) - live_.added() >= *cap
                       ? Suggestion{Suggestion::Kind::Finished}
                       : searcher_->suggest(id);
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
  live_.take_effect(*this, t, now);  // a `ctl set` takes effect here, and only here
  changed(t);
  event(now, &t, EventKind::Start, t.attempt == 0 ? "" : "attempt " + std::to_string(t.attempt));
  return cause;
}

void Controller::start_trial(Trial& t, std::vector<int> workers, double now, std::vector<Instruction>& out) {
  budget_.give_back(t);  // a paused trial's unused lease, counted from its old run's iterations
  const std::string cause = begin_run(t, std::move(workers), now);
  t.lease_until = t.iterations;
  budget_.grant(t, lease(t));  // dispatch starts nothing when no step is left, so this grants >= 1
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
    // A trial held by `ctl pause` waits for `ctl resume` (or `ctl stop`), and the run with it.
    if (t.status != TrialStatus::Paused || t.held != Trial::Hold::None) continue;
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
  // At least one iteration: a scheduler made for a smaller max_t than `ctl budget --max-t`
  // set may name a decision point behind the trial (ASHA's last is its own max_t).
  return std::max(until, t.iterations + 1);
}

void Controller::end_if_steps_spent(double now, std::vector<Instruction>& out) {
  if (!accepting() || !budget_.spent()) return;
  // No lease is left (every granted iteration is recorded), so each running trial waits
  // for its decision and the Stops below end it where it is.
  auto stops = end_experiment(EndReason::StepBudget, TrialStatus::Terminated, now);
  out.insert(out.end(), std::make_move_iterator(stops.begin()), std::make_move_iterator(stops.end()));
}

void Controller::release(Trial& t) {
  idle_workers_.insert(idle_workers_.end(), t.workers.begin(), t.workers.end());
  t.workers.clear();
}

void Controller::finish(Trial& t, TrialStatus s, TrialEnd why, double now) {
  set_status(t, s);
  pareto_stale_ = true;
  t.end_time = now;
  t.end_reason = s == TrialStatus::Error ? TrialEnd::Error : why;
  live_.not_applied(*this, t, std::string("the trial ended (") + to_string(s) + ") at iteration " + std::to_string(t.iterations) +
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
  budget_.record(t);
  t.revert.reset();  // it restored and ran: its new values load
  // Copied into the storage the trial's previous result used: no allocation per result.
  t.last_metrics = metrics_in;
  const Metrics& metrics = t.last_metrics;
  if (observer_ != nullptr) observer_->on_result(t, t.iterations, now, metrics);

  if (options_.objectives.multi() && !partial_objectives_warned_) warn_partial_objectives(t, metrics, now);
  const auto it = metrics.find(options_.metric);
  if (it == metrics.end() && !t.reported) FailedAttempts::note_other_metrics(t, metrics);
  if (it != metrics.end()) {
    t.reported = true;
    const double v = it->second;
    if (!std::isfinite(v) && options_.non_finite == NonFinitePolicy::Error && !pausing) {
      std::ostringstream why;
      why << "metric '" << options_.metric << "' is " << v << " at iteration " << t.iterations
          << " (non_finite = \"error\")";
      for (int w : t.workers) out.emplace_back(Instruction{Instruction::Kind::Stop, t.id, w, t.attempt, {}}).failed = true;
      t.log_tail.clear();  // an earlier failure's; this one's comes from the worker (on_log_tail)
      failures_.fail(*this, t, why.str(), now);
      dispatch(now, out);
      end_if_steps_spent(now, out);
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
    if (requeue_on_checkpoint_.count(t.id) > 0 || t.held == Trial::Hold::Requeue) {
      const Decision d = t.iterations >= options_.max_t ? Decision::Stop : scheduler_->on_trial_result(t);
      if (d == Decision::Pause) {
        requeue_on_checkpoint_.erase(t.id);  // the scheduler's own pause: it stays PAUSED
        if (t.held == Trial::Hold::Requeue) t.held = Trial::Hold::Scheduler;  // and `ctl resume` gives it back to it
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
    end_if_steps_spent(now, out);
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
      const std::int64_t until = budget_.grant(t, lease(t));
      if (until <= t.iterations) {
        // max_total_steps: the other trials' leases hold what is left of the budget.
        event(now, &t, EventKind::BudgetStop, "no iteration left of max_total_steps " + std::to_string(options_.max_total_steps));
        stop_trial(t, TrialStatus::Terminated, TrialEnd::Budget, now, out);
        dispatch(now, out);
        break;
      }
      Instruction& c = out.emplace_back(Instruction{Instruction::Kind::Continue, t.id, t.workers.front(), t.attempt, {}, until});
      c.save = save;
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
        failures_.fail(*this, t, failures_.missing_metric(t), now);
        dispatch(now, out);
        break;
      }
      if (t.iterations < options_.max_t) event(now, &t, EventKind::EarlyStop, "stopped by the scheduler");
      stop_trial(t, TrialStatus::Terminated, t.iterations < options_.max_t ? TrialEnd::Stopped : TrialEnd::MaxT, now, out);
      dispatch(now, out);
      break;
  }
  end_abandoned(now);
  end_if_steps_spent(now, out);
}

void Controller::pause_trial(Trial& t, double now, std::vector<Instruction>& out, bool hold) {
  for (int w : t.workers) out.push_back({Instruction::Kind::Pause, t.id, w, t.attempt, {}});
  if (hold) {
    live_.hold(t.id, std::exchange(t.workers, {}));
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
  const std::optional<std::vector<int>> workers = live_.take_held(t.id);
  if (!workers) return false;
  idle_workers_.insert(idle_workers_.end(), workers->begin(), workers->end());
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
    budget_.give_back(*t);  // the worker stopped: what it did not run of its lease is free again
    // Paused by a graceful stop, not by its scheduler: it is PENDING (from this checkpoint),
    // so that after a resume any scheduler runs it again.
    if (requeue_on_checkpoint_.erase(t->id) > 0) set_status(*t, TrialStatus::Pending);
    scheduler_->on_trial_requeued(*t);
    // Paused by `ctl set`: it goes on now, with the new values, on the workers it paused on.
    if (std::optional<std::vector<int>> workers = live_.take_held(t->id)) {
      if (accepting() && t->status == TrialStatus::Pending) {
        start_trial(*t, std::move(*workers), now, out);  // records the change (begin_run)
        dispatch(now, out);
        return out;
      }
      idle_workers_.insert(idle_workers_.end(), workers->begin(), workers->end());
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

std::vector<Instruction> Controller::on_trial_done(TrialId id, int attempt, double now, const std::string& log_tail) {
  std::vector<Instruction> out;
  Trial* t = running(id, attempt);
  if (t == nullptr) return out;
  if (!t->reported) {
    t->log_tail = log_tail;
    failures_.fail(*this, *t, failures_.missing_metric(*t), now);
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
    failures_.revert(*this, *t, reason, log_tail, now);
    dispatch(now, out);
    return out;
  }
  t->log_tail = log_tail;
  const Trial::Hold held = t->held;
  failures_.fail(*this, *t, reason, now);
  // A pause of `ctl pause` whose checkpoint failed: the retry waits for `ctl resume` too.
  if (held != Trial::Hold::None && t->status == TrialStatus::Pending) {
    set_status(*t, TrialStatus::Paused);
    t->held = Trial::Hold::Requeue;
    changed(*t);
  }
  dispatch(now, out);
  return out;
}

void Controller::on_log_tail(TrialId id, int attempt, const std::string& log_tail) {
  Trial* t = const_cast<Trial*>(find(id));
  if (t == nullptr || !FailedAttempts::takes_log_tail(*t, attempt, log_tail)) return;
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
  // Nothing starts again in this run: a change still waiting is lost with it.
  live_.run_ends(*this, to_string(why), now);
  return out;
}

ControlOutcome Controller::on_control(const ControlRequest& r, double now, std::vector<Instruction>& out) {
  return live_.apply(*this, r, now, out);
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

std::string Controller::save_state() const {
  return resume_.save(trials_, live_.added(), live_.extended(), live_.overrides());
}

void Controller::resume(std::vector<Trial> trials, const std::map<TrialId, std::int64_t>& latest_checkpoint,
                        const std::string& state, const std::string& cause, double now) {
  // The searcher and scheduler first: a state that does not parse throws before the trial
  // table changes. They learn the trials as recorded, before restart readies them.
  const Resume::Restored restored = resume_.restore(trials, state);
  trials_ = std::move(trials);
  counts_ = Resume::restart(trials_, latest_checkpoint);
  // Trials `ctl pause` held stay held, PAUSED, until `ctl resume`.
  for (const auto& [id, how] : restored.held) {
    Trial& t = trials_[static_cast<std::size_t>(id - 1)];
    if (t.finished()) continue;
    t.held = how;
    if (t.status != TrialStatus::Paused) {
      --counts_[static_cast<std::size_t>(t.status)];
      ++counts_[static_cast<std::size_t>(TrialStatus::Paused)];
      t.status = TrialStatus::Paused;
    }
  }
  idle_workers_.clear();
  live_.resume(restored.added, restored.extended);
  live_.restore_overrides(*this, restored.overrides);
  saving_ = 0;
  searcher_finished_ = false;
  end_reason_ = EndReason::None;
  event(now, nullptr, EventKind::Resume, cause);
  for (const Trial& t : trials_)
    if (!t.finished()) changed(t);
}

}  // namespace ranktune::controller
