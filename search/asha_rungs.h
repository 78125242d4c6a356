#pragma once
/// The rung bookkeeping of ASHA's stopping variant (Li et al., "A System for Massively Parallel
/// Hyperparameter Tuning", MLSys 2020), shared by the single-objective AshaScheduler
/// (asha_scheduler.h, which documents the rule) and the multi-objective MoAshaScheduler
/// (mo_asha_scheduler.h): the options both read, the brackets and their milestones, which
/// bracket each trial is in and which rungs have judged it, the cutoff position of the two stop
/// rules, and their part of the saved state. What a rung records about a trial (a score, a
/// Pareto point) and how it ranks them stays with each scheduler.

#include <cstdint>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "search/fifo_scheduler.h"
#include "search/options.h"
#include "search/saved_state.h"
#include "search/scheduler.h"
#include "search/trial.h"

namespace ranktune::search {

/// The options of the stopping variant beyond the rungs: `brackets` and `stop_rule` (and
/// `variant`, which must be "stopping" here: make_scheduler sends "promotion" elsewhere).
struct AshaStoppingOptions {
  std::int64_t max_t = 1;
  std::int64_t grace = 1;
  double reduction_factor = 4;
  std::int64_t brackets = 1;
  bool top_k = true;  ///< stop_rule: "top_k" (true) or "quantile"
};
/// Reads and range-checks them (see asha_scheduler.h for each key); OptionError on a bad one.
/// Leaves r.finish() to the caller.
AshaStoppingOptions read_asha_stopping_options(OptionReader& r, std::int64_t default_max_t);

/// How many of the m values recorded at a rung before a trial may be strictly better than it
/// for it to go on: it stops iff at least m - cutoff_index of them are. cutoff_index is the
/// index i, in ascending order, of the single-objective cutoff x_i (asha_scheduler.h): for
/// "top_k", i = m - min(m, max(1, floor((m + 1) / rf))); for "quantile", i = floor((m - 1)(1 -
/// 1/rf)). Needs m > 0 (the first trial at a rung always goes on).
std::size_t asha_cutoff_index(std::size_t m, double reduction_factor, bool top_k);

/// The brackets' rungs and each trial's progress through them.
class AshaRungs {
 public:
  /// Builds the rungs of `o.brackets` brackets; throws OptionError (through `r`) when one has
  /// no rung below max_t or too many.
  AshaRungs(const OptionReader& r, const AshaStoppingOptions& o);
  AshaRungs() = default;  ///< no bracket: assign a built one

  /// Assigns `id` its bracket (round-robin in the order first seen) if it has none yet.
  void add(TrialId id);
  /// A rung to judge the trial at: the highest rung of its bracket whose milestone its
  /// iterations reached, if no rung that high has judged it yet. Marks it judged there (and
  /// every rung below). nullopt when there is none. The trial must have been added.
  struct At {
    std::size_t bracket = 0;
    std::size_t rung = 0;
  };
  std::optional<At> reach(const Trial& trial);
  /// The trial's next unjudged milestone (Scheduler::next_decision).
  std::int64_t next_decision(const Trial& trial) const;

  std::size_t brackets() const { return milestones_.size(); }
  /// milestones(s)[k]: the iteration of rung k of bracket s; strictly increasing.
  const std::vector<std::int64_t>& milestones(std::size_t bracket) const { return milestones_.at(bracket); }
  /// The bracket of a trial seen before, or -1.
  int bracket_of(TrialId id) const;

  /// Saved state, in two parts around the scheduler's own rung contents: the head ("added",
  /// "brackets", "trials", then "milestones": a line per bracket) and the records (a line per
  /// trial by id: "ID BRACKET NEXT_RUNG").
  void write_head(StateWriter& w) const;
  void write_records(StateWriter& w) const;
  /// Read what write_head and write_records wrote into this object (a copy the caller assigns
  /// once the whole state has read well). read_head checks the milestones against these and
  /// returns the number of trial records that read_records then reads.
  std::size_t read_head(StateReader& r);
  void read_records(StateReader& r, std::size_t trials);

 private:
  struct Record {
    int bracket = 0;
    std::size_t next_rung = 0;  ///< rungs below it have judged the trial
  };
  std::vector<std::vector<std::int64_t>> milestones_;  ///< milestones_[s][k]
  std::unordered_map<TrialId, Record> records_;
  std::int64_t added_ = 0;  ///< trials assigned so far (round-robin position)
};

/// What the single- and multi-objective stopping variants share as schedulers: the options
/// and rungs above, FIFO order for new trials, next_decision and the rung queries. Each
/// derived scheduler records and ranks a rung's results its own way.
class AshaStoppingBase : public Scheduler {
 public:
  void on_trial_add(const Trial& trial) override { rungs_.add(trial.id); }
  /// The trial's next unjudged rung milestone (no Stop can come before it), so a worker
  /// runs between rungs without waiting; past the last rung, never.
  std::int64_t next_decision(const Trial& trial) const override { return rungs_.next_decision(trial); }
  std::optional<TrialId> choose_trial_to_run(const std::vector<Trial>& trials) override {
    return order_.next(trials);
  }
  void on_trial_requeued(const Trial& trial) override { order_.requeued(trial); }

  /// milestones(s)[k]: the iteration of rung k of bracket s; strictly increasing.
  std::vector<std::int64_t> milestones(std::size_t bracket) const { return rungs_.milestones(bracket); }
  std::size_t brackets() const { return rungs_.brackets(); }
  /// The bracket of a trial seen before, or -1.
  int bracket_of(TrialId id) const { return rungs_.bracket_of(id); }

 protected:
  /// Reads the options ("asha" in messages; max_t defaults to `default_max_t`), refusing an
  /// unknown key, and builds the rungs. Throws OptionError.
  AshaStoppingBase(const Options& options, std::int64_t default_max_t);
  /// Per rung of every bracket, a default T: shaped as the rungs, for a derived scheduler's
  /// record of what each rung has seen.
  template <class T>
  std::vector<std::vector<T>> per_rung() const {
    std::vector<std::vector<T>> out;
    for (std::size_t s = 0; s < rungs_.brackets(); ++s) out.emplace_back(rungs_.milestones(s).size());
    return out;
  }

  /// Restore's common part, after the derived scheduler read its own fields: ASHA's head,
  /// then under `field` each rung's count of entries (named `what`) and that many entries, read
  /// by `read_one(r, entries)` into a fresh T per rung, then the records and the end. Assigns
  /// the rung bookkeeping only when everything read well, and returns the rungs' entries for
  /// the caller to assign.
  template <class T, class ReadOne>
  std::vector<std::vector<T>> read_rungs(StateReader& r, std::string_view field, std::string_view what,
                                         ReadOne read_one) {
    AshaRungs rungs = rungs_;
    const std::size_t ntrials = rungs.read_head(r);
    auto out = per_rung<T>();
    r.field(field);
    for (auto& bracket : out)
      for (T& entries : bracket)
        for (std::size_t n = r.count(what); n > 0; --n) read_one(r, entries);
    rungs.read_records(r, ntrials);
    r.finish();
    rungs_ = std::move(rungs);
    return out;
  }

  AshaStoppingOptions options_;
  AshaRungs rungs_;
  FifoOrder order_;
};

}  // namespace ranktune::search
