// Resume's half of the controller (controller/resume.h): the state saved with every commit of
// the results file, and the searcher's and scheduler's rebuild from that file. The
// Controller installs the result (Controller::resume, in controller.cc).
#include "controller/resume.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "search/saved_state.h"

namespace ranktune::controller {

std::string Resume::save(const std::vector<Trial>& trials, std::int64_t added, std::int64_t extended,
                         const BudgetOverrides& overrides) const {
  std::ostringstream out;
  // Version 2 adds the trials `ranktune ctl add --count` asked of the searcher, which its
  // own state does not hold: resume re-applies them.
  // Version 3 adds the trials that existed when it was saved, and which of them were still
  // running: a resume from a state older than the file's rows (the disk filled as the state
  // was written, but the rows went in) catches the searcher and scheduler up on the rest.
  // Version 4 adds the trials `ranktune ctl add` appended with a config: the searcher's
  // total leaves them out, and while fewer trials exist than it plans they cannot be told
  // from its own, so the status line counted "9 of 8" after a resume (issue 27 item 12).
  // Version 5 adds the trials `ranktune ctl pause` holds (id and 1: back to the queue on
  // `ctl resume`, 2: back to its scheduler) and the stopping rules `ctl budget` changed (-1:
  // as configured), which a resumed run keeps.
  out << "controller 5\nextended " << extended << "\nadded " << added << "\nheld";
  std::size_t held = 0;
  for (const Trial& t : trials) held += t.held != Trial::Hold::None && !t.finished() ? 1 : 0;
  out << ' ' << held;
  for (const Trial& t : trials)
    if (t.held != Trial::Hold::None && !t.finished()) out << ' ' << t.id << ' ' << (t.held == Trial::Hold::Requeue ? 1 : 2);
  char time[40];
  std::snprintf(time, sizeof time, "%.17g", overrides.time_budget_s.value_or(-1));
  out << "\nbudget " << time << ' ' << overrides.max_t.value_or(-1) << ' ' << overrides.sample_cap.value_or(-1);
  out << "\ntrials " << trials.size() << " open";
  std::size_t open = 0;
  for (const Trial& t : trials) open += t.finished() ? 0 : 1;
  out << ' ' << open;
  for (const Trial& t : trials)
    if (!t.finished()) out << ' ' << t.id;
  out << '\n';
  write_text(out, searcher_->save());
  out << '\n';
  write_text(out, scheduler_->save());
  out << '\n';
  return out.str();
}

void Resume::complete_in_searcher(const Trial& t) {
  Metrics last;
  if (std::isfinite(t.last)) last[metric_] = t.last;
  searcher_->on_trial_complete(t.id, last, t.status == TrialStatus::Error);
}

void Resume::catch_up(const Trial& t) {
  (void)searcher_->suggest(t.id);
  if (t.finished()) complete_in_searcher(t);
  scheduler_->on_trial_add(t);
}

Resume::Restored Resume::restore(const std::vector<Trial>& trials, const std::string& state) {
  Restored restored;
  std::optional<std::int64_t> stored_added;  // the state's count of added trials (version 4)
  for (std::size_t i = 0; i < trials.size(); ++i)
    if (trials[i].id != static_cast<TrialId>(i + 1))
      throw std::invalid_argument("resume: trial ids are not 1.." + std::to_string(trials.size()));
  if (!state.empty()) {
    std::istringstream in(state);
    std::string tag;
    int version = 0;
    if (!(in >> tag >> version) || tag != "controller" || version < 1 || version > 5)
      throw std::invalid_argument("resume: the stored state has no 'controller 1' to '5' header");
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
    if (version >= 5) {
      std::string word;
      std::size_t n = 0;
      if (!(in >> word >> n) || word != "held" || n > trials.size())
        throw std::invalid_argument("resume: the stored state has a bad 'held' line");
      for (std::size_t i = 0; i < n; ++i) {
        TrialId id = 0;
        int how = 0;
        if (!(in >> id >> how) || id < 1 || id > static_cast<TrialId>(trials.size()) || (how != 1 && how != 2))
          throw std::invalid_argument("resume: the stored state has a bad list of held trials");
        restored.held[id] = how == 1 ? Trial::Hold::Requeue : Trial::Hold::Scheduler;
      }
      double time = -1;
      std::int64_t max_t = -1, cap = -1;
      if (!(in >> word >> time >> max_t >> cap) || word != "budget" || !(time >= 0 || time == -1) ||
          (max_t < 1 && max_t != -1) || cap < -1)
        throw std::invalid_argument("resume: the stored state has a bad 'budget' line");
      if (time >= 0) restored.overrides.time_budget_s = time;
      if (max_t >= 1) restored.overrides.max_t = max_t;
      if (cap >= 0) restored.overrides.sample_cap = cap;
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
    restored.extended = 0;
    if (extended > 0) {
      if (std::string why = searcher_->extend(extended); !why.empty())
        throw std::invalid_argument("resume: the stored state added " + std::to_string(extended) +
                                    " trials, which this search algorithm refuses: " + why);
      restored.extended = extended;
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
  // Without a stored count (a state older than version 4, or none) it is guessed: the trials
  // past the searcher's total. With no state that is exact, since the searcher was walked
  // over every trial (catch_up), added ones too, and plans as many fewer; an older state
  // misses the trials added while fewer existed than the searcher planned.
  const std::int64_t total = searcher_->total();
  restored.added = stored_added ? *stored_added
                                : total < 0 ? 0
                                            : std::max<std::int64_t>(0, static_cast<std::int64_t>(trials.size()) - total);
  return restored;
}

std::array<std::int64_t, 5> Resume::restart(std::vector<Trial>& trials,
                                            const std::map<TrialId, std::int64_t>& latest_checkpoint) {
  std::array<std::int64_t, 5> counts{};
  for (Trial& t : trials) {
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
    ++counts[static_cast<std::size_t>(t.status)];
  }
  return counts;
}

}  // namespace ranktune::controller
