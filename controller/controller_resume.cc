// The controller's persistence: the state saved with every commit of the results file
// (save_state) and the rebuild of the experiment from that file (resume). The rest of the
// state machine is in controller.cc.
#include <cmath>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "controller/controller.h"
#include "search/saved_state.h"

namespace ranktune::controller {

std::string Controller::save_state() const {
  std::ostringstream out;
  // Version 2 adds the trials `ranktune ctl add --count` asked of the searcher, which its
  // own state does not hold: resume re-applies them.
  // Version 3 adds the trials that existed when it was saved, and which of them were still
  // running: a resume from a state older than the file's rows (the disk filled as the state
  // was written, but the rows went in) catches the searcher and scheduler up on the rest.
  // Version 4 adds the trials `ranktune ctl add` appended with a config: the searcher's
  // total leaves them out, and while fewer trials exist than it plans they cannot be told
  // from its own, so the status line counted "9 of 8" after a resume (issue 27 item 12).
  out << "controller 4\nextended " << extended_ << "\nadded " << added_ << "\ntrials " << trials_.size() << " open";
  std::size_t open = 0;
  for (const Trial& t : trials_) open += t.finished() ? 0 : 1;
  out << ' ' << open;
  for (const Trial& t : trials_)
    if (!t.finished()) out << ' ' << t.id;
  out << '\n';
  write_text(out, searcher_->save());
  out << '\n';
  write_text(out, scheduler_->save());
  out << '\n';
  return out.str();
}

void Controller::complete_in_searcher(const Trial& t) {
  Metrics last;
  if (std::isfinite(t.last)) last[options_.metric] = t.last;
  searcher_->on_trial_complete(t.id, last, t.status == TrialStatus::Error);
}

void Controller::catch_up(const Trial& t) {
  (void)searcher_->suggest(t.id);
  if (t.finished()) complete_in_searcher(t);
  scheduler_->on_trial_add(t);
}

void Controller::resume(std::vector<Trial> trials, const std::map<TrialId, std::int64_t>& latest_checkpoint,
                        const std::string& state, const std::string& cause, double now) {
  std::optional<std::int64_t> stored_added;  // the state's count of added trials (version 4)
  for (std::size_t i = 0; i < trials.size(); ++i)
    if (trials[i].id != static_cast<TrialId>(i + 1))
      throw std::invalid_argument("resume: trial ids are not 1.." + std::to_string(trials.size()));
  if (!state.empty()) {
    std::istringstream in(state);
    std::string tag;
    int version = 0;
    if (!(in >> tag >> version) || tag != "controller" || version < 1 || version > 4)
      throw std::invalid_argument("resume: the stored state has no 'controller 1' to '4' header");
    std::int64_t extended = 0;
    if (version >= 2) {
      std::string word;
      if (!(in >> word >> extended) || word != "extended" || extended < 0)
        throw std::invalid_argument("resume: the stored state has a bad 'extended' line");
    }
    if (version >= 4) {
      std::string word;
      std::int64_t added = -1;
      if (!(in >> word >> added) || word != "added" || added < 0 || added > kMaxAddedTrials)
        throw std::invalid_argument("resume: the stored state has a bad 'added' line");
      stored_added = added;
    }
    // Version 1 and 2 states did not say how many trials they knew: taken to know them all.
    std::size_t known = trials.size();
    std::vector<TrialId> open;
    if (version >= 3) {
      std::string word, open_word;
      std::size_t n_open = 0;
      if (!(in >> word >> known >> open_word >> n_open) || word != "trials" || open_word != "open" ||
          known > trials.size() || n_open > known)
        throw std::invalid_argument("resume: the stored state has a bad 'trials' line (or knows more trials than "
                                    "the file's " + std::to_string(trials.size()) + ")");
      open.resize(n_open);
      for (TrialId& id : open)
        if (!(in >> id) || id < 1 || id > static_cast<TrialId>(known))
          throw std::invalid_argument("resume: the stored state has a bad list of open trials");
    }
    const std::string searcher = read_text(in, "searcher state");
    const std::string scheduler = read_text(in, "scheduler state");
    searcher_->restore(searcher);
    scheduler_->restore(scheduler);
    extended_ = 0;
    if (extended > 0) {
      if (std::string why = searcher_->extend(extended); !why.empty())
        throw std::invalid_argument("resume: the stored state added " + std::to_string(extended) +
                                    " trials, which this search algorithm refuses: " + why);
      extended_ = extended;
    }
    // The trials that finished after the state was saved: the searcher learns their ends.
    for (const TrialId id : open) {
      const Trial& t = trials[static_cast<std::size_t>(id - 1)];
      if (t.finished()) complete_in_searcher(t);
    }
    // The trials made after it: asked of the searcher again (it proposes what it proposed
    // then, up to what it learned in between; the file's config stands), told to the scheduler.
    for (std::size_t i = known; i < trials.size(); ++i) catch_up(trials[i]);
  } else {
    // No state was stored (the run died before its first commit, or `ranktune simulate`
    // wrote the file). The searcher is walked over the trials that exist, so that it goes on
    // after them: left as new, it sampled num_samples trials more. A finished trial is
    // reported complete with its last value of the metric (what /trials keeps), so a
    // model-based searcher learns from it. The scheduler learns them as new.
    for (const Trial& t : trials) catch_up(t);
  }
  trials_ = std::move(trials);
  counts_ = {};
  idle_workers_.clear();
  held_.clear();
  saving_ = 0;
  searcher_finished_ = false;
  end_reason_ = EndReason::None;
  // Without a stored count (a state older than version 4, or none) it is guessed: the trials
  // past the searcher's total. With no state that is exact, since the searcher was walked
  // over every trial (catch_up), added ones too, and plans as many fewer; an older state
  // misses the trials added while fewer existed than the searcher planned.
  const std::int64_t total = searcher_->total();
  added_ = stored_added ? *stored_added
                        : total < 0 ? 0 : std::max<std::int64_t>(0, static_cast<std::int64_t>(trials_.size()) - total);
  for (Trial& t : trials_) {
    // /trials.workers names the ranks of its last attempt (of the run before): kept as such.
    if (t.ran_on.empty()) t.ran_on = std::move(t.workers);
    t.workers.clear();
    t.saving = false;
    const auto it = latest_checkpoint.find(t.id);
    const std::int64_t c = it == latest_checkpoint.end() ? 0 : it->second;
    t.checkpoint_iteration = c;
    t.restore_trial = c > 0 ? t.id : 0;
    t.restore_checkpoint = c;
    t.restore_iterations = c;
    if (!t.finished()) {
      // Results past the checkpoint are in the file already: running them again under the
      // same attempt would record an iteration twice.
      if (t.iterations > c) ++t.attempt;
      t.start_cause = "ranktune run --resume";
      if (t.status != TrialStatus::Paused || c == 0) t.status = TrialStatus::Pending;
      t.iterations = c;
    }
    ++counts_[static_cast<std::size_t>(t.status)];
  }
  event(now, nullptr, EventKind::Resume, cause);
  for (const Trial& t : trials_)
    if (!t.finished()) changed(t);
}

}  // namespace ranktune::controller
