// Start-ahead dispatch (ControllerOptions::start_ahead): a worker whose trial runs its last
// lease already holds its next Start, so that it goes on to it the moment it reports the
// lease's last result.
//
// Why: a worker that reports the end of its trial and then waits for the driver's Stop and
// Start pays two wake-ups of a sleeping process per trial (the driver's, woken by the
// result; then its own, woken by the answer). On the 2-core VM each costs 60-150 us, most
// of the per-trial overhead of short trials (benchmarks/README.md, "Per trial"). After the
// lease that ends at max_t a trial's worker is free whatever the trial reports (the decision
// at max_t is a Stop, or the end of the experiment), so its next trial can be chosen before
// that result comes. Ray Tune and Optuna have no equivalent: their workers ask for the next
// trial when they finish one.
//
// The trial sent ahead stays PENDING, as the results file knows it, until the controller
// learns that the worker has moved on to it: when it releases the worker's current trial
// (begin_ahead), which it does on the last result or on any other end. Messages of the new
// trial come after that, since a worker's messages arrive in order. Until then it can be
// taken back (a Stop for it, which the worker drops, or obeys if it had begun the trial
// already): when the experiment ends, when `ranktune ctl` changes or stops it, and when an
// idle worker has nothing else to do, so that the last trials of a search do not wait behind
// long ones. A run taken back after it had begun is told apart by Trial::run.
#include <algorithm>
#include <cmath>

#include "search/controller.h"

namespace ranktune::search {

Controller::WorkerSlot& Controller::slot(int worker) {
  const auto index = static_cast<std::size_t>(std::max(worker, 0));
  if (index >= slots_.size()) slots_.resize(index + 1);
  return slots_[index];
}

bool Controller::last_lease(const Trial& t) const {
  return options_.start_ahead && t.workers.size() == 1 && t.lease_until >= options_.max_t;
}

void Controller::want_ahead(const Trial& t) {
  if (last_lease(t)) wants_ahead_.push_back(t.workers.front());
}

void Controller::fill_ahead(std::vector<Command>& out) {
  while (accepting() && !wants_ahead_.empty()) {
    const int w = wants_ahead_.front();
    const WorkerSlot& s = slot(w);
    // Still on its last lease, with nothing ahead yet: its trial may have ended since.
    const Trial* current = s.current != 0 ? find(s.current) : nullptr;
    if (s.ahead != 0 || current == nullptr || current->status != TrialStatus::Running || !last_lease(*current)) {
      wants_ahead_.pop_front();
      continue;
    }
    const std::optional<TrialId> choice = next_choice(true);
    if (!choice) return;  // nothing to send now: it stays wanted, for a trial added later
    Trial& t = trials_[static_cast<std::size_t>(*choice - 1)];
    // Only a trial that never ran: one that resumes or retries may need its checkpoint
    // streamed or its log appended to, and waits for an idle worker.
    if (t.status != TrialStatus::Pending || !std::isnan(t.start_time) || t.restore_trial != 0 || !t.pending.empty())
      return;
    wants_ahead_.pop_front();
    send_ahead(t, w, out);
  }
}

bool Controller::goes_on(const Trial& t, bool finite) const {
  return finite && last_lease(t) && t.iterations >= t.lease_until;
}

void Controller::send_ahead(Trial& t, int worker, std::vector<Command>& out) {
  t.sent_ahead = worker;
  slot(worker).ahead = t.id;
  ++ahead_;
  t.iterations = 0;
  t.lease_until = lease(t);
  t.run = ++runs_;
  Command c{Command::Kind::Start, t.id, worker, t.attempt, t.config, t.lease_until};
  c.cause = cause_of(t);
  c.gang = {worker};
  c.last = t.lease_until >= options_.max_t;  // start-ahead is on, and the trial has one worker
  c.run = t.run;
  out.push_back(std::move(c));
}

void Controller::take_back(Trial& t, std::vector<Command>& out) {
  const int w = t.sent_ahead;
  out.push_back({Command::Kind::Stop, t.id, w, t.attempt, {}});
  slot(w).ahead = 0;
  t.sent_ahead = 0;
  --ahead_;
  t.lease_until = 0;
  scheduler_->on_trial_requeued(t);  // runnable again: a FIFO order moves back to it
  wants_ahead_.push_back(w);  // its worker may be sent another (fill_ahead checks it still wants one)
}

bool Controller::take_back_one(std::vector<Command>& out) {
  if (ahead_ == 0) return false;
  // The holder whose current trial started last is likely the one to finish last.
  int from = -1;
  double latest = -INFINITY;
  for (std::size_t w = 0; w < slots_.size(); ++w) {
    const WorkerSlot& s = slots_[w];
    if (s.ahead == 0) continue;
    const Trial* current = s.current != 0 ? find(s.current) : nullptr;
    const double started = current != nullptr && !std::isnan(current->start_time) ? current->start_time : INFINITY;
    if (from < 0 || started > latest) {
      from = static_cast<int>(w);
      latest = started;
    }
  }
  if (from < 0) return false;
  take_back(trials_[static_cast<std::size_t>(slot(from).ahead - 1)], out);
  return true;
}

void Controller::begin_ahead(double now) {
  for (const int w : moved_on_) {
    WorkerSlot& s = slot(w);
    if (s.ahead == 0 || s.current != 0) {  // taken back since: the worker is idle
      if (s.current == 0) idle_workers_.push_back(w);
      continue;
    }
    Trial& t = trials_[static_cast<std::size_t>(s.ahead - 1)];
    s.ahead = 0;
    s.current = t.id;
    t.sent_ahead = 0;
    --ahead_;
    const std::int64_t lease = t.lease_until;  // what its Start told the worker
    begin_run(t, {w}, now);
    t.lease_until = lease;
    want_ahead(t);
  }
  moved_on_.clear();
}

}  // namespace ranktune::search
