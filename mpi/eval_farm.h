#pragma once
/// Parallel `ranktune eval` (docs/guide/evaluation.md, "Parallel evaluation"): the leaders
/// spread over the ranks of an MPI job, one leader per worker at a time, each worker on its
/// own device (the GPU it binds as a run's workers do, mpi/placement.h; the CPU otherwise).
/// Rank 0 evaluates nothing: it hands out the leaders, gathers the evaluations and alone
/// records them (apps/eval_command.cc), so the file gets one evaluation, as from a serial eval.
///
/// Protocol, on a duplicate of the world communicator (so none of its tags meets the run's):
///   rank 0 -> w : Assign (a leader's index, trial and checkpoint iteration) | Leave
///   w -> rank 0 : Done (the evaluation, or its failure: exit code and message) | Bye (after Leave)
///   w -> rank 0 : Turn (compute | timing) | TurnDone;  rank 0 -> w : Granted
/// A worker reads the results file itself (on its first Assign: one that gets none never
/// reads it) and chooses the leaders as rank 0 did; each Assign names the trial and
/// iteration, so a worker that chose otherwise (the file changed) fails that evaluation
/// instead of evaluating another model.
///
/// Latency and co-located evaluations: with exclusive latency (the default), rank 0 hands
/// out turns per node (eval/turns.h). Untimed work of several evaluations runs side by side;
/// a timed phase waits until nothing else of the evaluation computes on its node, and
/// nothing starts there until it ends. Requests are served first come, first served, so a
/// waiting timed phase is not overtaken by later untimed work. Without it every evaluation
/// times whenever it gets there, and the manifest says so.
///
/// Failures: an evaluation that fails (a checkpoint that does not restore, a script that
/// exits, a device that cannot be used) is reported by its worker; rank 0 hands out nothing
/// more, lets the evaluations under way finish, tells every worker to leave, and then
/// throws the first failure with the trial and the worker named (the others are printed),
/// as the exception class a serial evaluation would throw, so the exit code is the same.
/// Nothing is recorded then. Idle ranks wait with a sleeping backoff (mpi/backoff.h).

#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <boost/mpi/communicator.hpp>
#include <boost/mpi/environment.hpp>

#include "eval/evaluator.h"
#include "eval/leaders.h"
#include "io/store.h"
#include "mpi/placement.h"

namespace ranktune::mpi {

/// An evaluation's bytes as a worker sends them to rank 0: every field but the leader, which
/// rank 0 points at its own. The fields are listed in one function (transfer() in
/// eval_farm.cc), where a field added to eval::LeaderEvaluation must be added too.
std::vector<char> encode_evaluation(const eval::LeaderEvaluation& e);
/// The evaluation in `bytes`; throws WireFormatError (mpi/codec.h) when they are not one.
eval::LeaderEvaluation decode_evaluation(const std::vector<char>& bytes);

/// Rank 0's turns of one node (pure): first come, first served; a timing turn alone, compute
/// turns together, and a waiting timing turn holds back the requests behind it.
class NodeTurns {
 public:
  /// `rank` asks for a turn (it holds none: a worker gives its turn back before asking).
  void ask(int rank, bool timing) { waiting_.push_back({rank, timing}); }
  /// Gives back what `rank` holds; nothing held is fine (a Done gives back what a worker forgot).
  void give_back(int rank);
  /// The ranks whose turn it is now, in the order asked; each is then told Granted.
  std::vector<int> grant();

 private:
  std::deque<std::pair<int, bool>> waiting_;
  std::map<int, bool> holding_;  ///< rank -> holds a timing turn
  int computing_ = 0;
  bool timing_ = false;
};

/// What a worker evaluates with, built on its first assignment.
struct FarmWorkerPlan {
  /// The leaders as this rank chose them, pointing into what `evaluate` keeps alive.
  std::vector<eval::Leader> leaders;
  /// Evaluates leaders[item]; `turns` goes into eval::EvalOptions::turns (nullptr without
  /// exclusive latency). The index tells apart entries that name the same trial (the same
  /// leaders through several pipelines).
  std::function<eval::LeaderEvaluation(std::size_t item, const eval::Leader&, eval::ComputeTurns* turns)> evaluate;
};

class EvalFarm {
 public:
  /// Starts MPI (MPI_Init) and places every rank (collective; a worker binds its GPU).
  /// Throws std::invalid_argument on every rank when the job has a single rank.
  explicit EvalFarm(bool exclusive_latency);
  /// Rank 0 whose gather() never ran (it failed before: a bad file, no leader) tells the
  /// workers to leave and waits for them; then MPI_Finalize.
  ~EvalFarm();
  EvalFarm(const EvalFarm&) = delete;
  EvalFarm& operator=(const EvalFarm&) = delete;

  bool root() const { return world_.rank() == 0; }
  int size() const { return world_.size(); }
  bool exclusive_latency() const { return exclusive_latency_; }
  /// Every worker's rank, host and device, by rank - 1 (known on every rank).
  const std::vector<io::WorkerInfo>& workers() const { return workers_; }
  /// The device a worker evaluates on for `requested` (--device): "auto" becomes the GPU
  /// this worker bound, where it bound one; anything else stays as asked.
  std::string device(const std::string& requested) const;

  /// Rank 0: evaluates `leaders` on the workers and returns their evaluations in the
  /// leaders' order, each pointing at its leader. Returns once every worker has left.
  /// Throws the first failure (see above). An MPI failure ends the job (abort_job).
  std::vector<eval::LeaderEvaluation> gather(const std::vector<eval::Leader>& leaders);

  /// A worker: evaluates what rank 0 hands it until rank 0 says to leave. `prepare` runs
  /// once, on the first assignment, in a compute turn; what it throws fails each assignment
  /// (its message goes to rank 0). Never throws for an evaluation; an MPI failure ends the
  /// job (abort_job).
  void serve(const std::function<FarmWorkerPlan()>& prepare);

 private:
  /// Rank 0, no worker evaluating: tells every worker to leave and waits for their Byes.
  void dismiss_workers();

  // Before world_ and comm_, so that MPI is finalized after they are freed.
  std::unique_ptr<boost::mpi::environment> env_;
  boost::mpi::communicator world_;
  boost::mpi::communicator comm_;  ///< the farm's own duplicate of world_
  bool exclusive_latency_;
  Placement placement_;
  std::vector<io::WorkerInfo> workers_;
  bool gathered_ = false;
};

}  // namespace ranktune::mpi
