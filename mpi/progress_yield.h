#pragma once
/// Whether Open MPI's progress engine yields the core on an idle poll, set per scope.
///
/// On an oversubscribed node Open MPI turns on its `mpi_yield_when_idle`: every probe or
/// test that progresses nothing calls sched_yield(), for programs that busy-poll MPI so
/// that they share the cores. ranktune's ranks do not busy-poll: they nap between polls
/// (backoff.h, doorbell.h). There the yield only hands the core to another runnable rank
/// in the middle of a worker's hand-over between two trials (its empty probes after the
/// Result), and the worker waits for its next time slice: with 9 ranks on 2 cores the
/// worker's mean time between trials was 70-79 us with the yield and 41-45 us without it
/// (benchmarks/README.md, "The worker's own time between trials"). Blocking calls still
/// want the yield (a rank spinning in a collective without it takes the core from the
/// ranks it waits for): the Setup's broadcast, placement, gangs' collectives and
/// MPI_Finalize run with Open MPI's own choice, which this scope puts back.
///
/// Open MPI has no public call for it (the MPI_T variable is read-only): the scope calls
/// opal_progress_set_yield_when_idle, looked up with dlsym, and does nothing where that is
/// missing (another MPI, another Open MPI). Only scheduling changes, never a result.

namespace ranktune::mpi {

class ProgressYield {
 public:
  /// Sets the progress engine's yield on an idle poll to `yield` until the scope ends.
  explicit ProgressYield(bool yield);
  ~ProgressYield();
  ProgressYield(const ProgressYield&) = delete;
  ProgressYield& operator=(const ProgressYield&) = delete;

  /// What it was before the scope: Open MPI's own choice, for the first scope.
  bool before() const { return before_; }
  /// Whether this MPI lets ranktune set it (Open MPI's symbol was found).
  static bool available();

 private:
  bool before_ = false;
};

}  // namespace ranktune::mpi
