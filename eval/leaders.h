#pragma once
/// Which trials `ranktune eval` evaluates, and from which of their stored checkpoints. Pure:
/// a function of the results file as read.

#include <cstddef>
#include <string>
#include <vector>

#include "io/store.h"
#include "report/pareto_front.h"

namespace ranktune::eval {

/// Which stored checkpoint of a trial stands for it.
enum class CheckpointChoice {
  Best,    ///< the live checkpoint with the best score (the experiment metric at its iteration)
  Latest,  ///< the live checkpoint of the highest iteration
};

/// The iterations of a trial's checkpoint rows for messages: "4, 8, 12 (dropped: 1, 2)",
/// "none" when no row is live.
std::string checkpoint_list(const std::vector<const io::CheckpointRow*>& rows);

/// "best" or "latest"; throws std::invalid_argument naming the valid ones.
CheckpointChoice parse_checkpoint_choice(const std::string& name);

struct Leader {
  const search::Trial* trial = nullptr;
  const io::CheckpointRow* checkpoint = nullptr;
  std::size_t rank = 0;  ///< 1-based place on the leaderboard
};

struct LeaderChoice {
  std::vector<Leader> leaders;
  /// Trials passed over, each with why ("trial 4 (rank 2): no stored checkpoint ...").
  std::vector<std::string> skipped;
};

/// With `trials` empty: the first `top` trials in leaderboard order (report::best_first)
/// that have a live checkpoint, passing over the others (listed in `skipped`). Trials
/// without a finite best value, and trials that ended in ERROR, are never leaders. With
/// `pareto` (a multi-objective experiment) the leaderboard is the Pareto one, as `report`
/// shows it: rank, then crowding distance, and only ranked trials lead; Leader::rank is the
/// place on it (`--trial` ids too). With
/// `trials` given: exactly those, in that order; throws std::invalid_argument for an id
/// that is not in the file or has no live checkpoint, saying which checkpoints it has.
/// Best falls back to Latest for a trial whose live checkpoints have no finite score
/// (files from before scores were recorded); ties go to the later iteration.
LeaderChoice choose_leaders(const io::ResultsFile& file, std::size_t top, const std::vector<search::TrialId>& trials,
                            CheckpointChoice choice, const report::ParetoView* pareto = nullptr);

/// A multi-objective experiment's front (`eval --front`): the trials of pareto_rank 0 in the
/// view's order (crowding distance, largest first) that have a live checkpoint, passing over
/// the others (in `skipped`). Leader::rank is the trial's place in that order, 1 first.
LeaderChoice choose_front(const io::ResultsFile& file, const report::ParetoView& pareto, CheckpointChoice choice);

}  // namespace ranktune::eval
