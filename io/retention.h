#pragma once
/// Checkpoint retention: which stored checkpoints of a trial may go, and where freed bytes of
/// /checkpoint_data are reused. Pure algorithms, no I/O: ResultsWriter applies them.
///
/// Policy ([checkpoint] keep_last = N, keep_best = M; both 0 by default = keep everything):
/// of each trial's live checkpoints, these stay:
///   - its newest one (always: a paused trial resumes from it, a retry restarts from it,
///     PBT clones it);
///   - the N newest (keep_last);
///   - the M best by the experiment metric at the checkpoint's iteration (keep_best; a
///     checkpoint with an unknown or non-finite metric is never among the best; ties go to
///     the newer one);
///   - every pinned one (a checkpoint that some unfinished trial would restore next: a PBT
///     donor's checkpoint, or the one a retry falls back to).
/// Everything else is dropped. A limit of 0 adds nothing to the set, so keep_last = 0 with
/// keep_best = 2 keeps the newest and the two best.

#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <utility>
#include <vector>

#include "search/trial.h"
#include "search/types.h"

namespace ranktune::io {

struct RetentionPolicy {
  std::int64_t keep_last = 0;  ///< newest checkpoints kept per trial (0: no limit by age)
  std::int64_t keep_best = 0;  ///< best checkpoints kept per trial (0: none kept for merit)
  search::Mode mode = search::Mode::Max;  ///< how the metric of keep_best compares
  /// False when both limits are 0: every checkpoint is kept.
  bool enabled() const { return keep_last > 0 || keep_best > 0; }
};

/// One live checkpoint of a trial, as the policy sees it.
struct CheckpointScore {
  std::int64_t iteration = 0;
  double score = 0;  ///< the experiment metric at `iteration`; NaN when unknown
};

/// (trial, iteration): a checkpoint's identity in the store.
using CheckpointKey = std::pair<search::TrialId, std::int64_t>;

/// The iterations of `live` (one trial's live checkpoints, any order, distinct iterations)
/// that `policy` drops, ascending. `pinned` holds iterations that must stay. Nothing is
/// dropped when the policy is disabled.
std::vector<std::int64_t> checkpoints_to_drop(std::span<const CheckpointScore> live, const RetentionPolicy& policy,
                                              const std::set<std::int64_t>& pinned);

/// The checkpoints that the trials in `trials` may still restore: the restore source of
/// every trial that has not finished (its own newest checkpoint, or a PBT donor's).
std::set<CheckpointKey> pinned_checkpoints(const std::vector<search::Trial>& trials);

/// The free byte ranges of an append-only byte store, coalesced, handed out first fit.
class FreeSpace {
 public:
  /// Every range of [0, extent) that no range of `used` (offset, size) covers; `used` may
  /// be unsorted and overlap.
  static FreeSpace gaps(std::vector<std::pair<std::uint64_t, std::uint64_t>> used, std::uint64_t extent);

  /// Returns [offset, offset + size) to the free list, merging it with its neighbours.
  /// The range must not overlap a free one (a double free is a bug: std::logic_error).
  void release(std::uint64_t offset, std::uint64_t size);
  /// Where `size` (> 0) bytes go in a store of `extent` bytes: the lowest free range that
  /// holds them, else the free range that ends at `extent` (the store grows by the rest),
  /// else `extent` itself. The bytes taken leave the free list.
  std::uint64_t allocate(std::uint64_t size, std::uint64_t extent);

  std::uint64_t total() const { return total_; }
  /// offset -> size, ascending, no two adjacent or overlapping.
  const std::map<std::uint64_t, std::uint64_t>& ranges() const { return ranges_; }

 private:
  std::map<std::uint64_t, std::uint64_t> ranges_;
  std::uint64_t total_ = 0;
};

}  // namespace ranktune::io
