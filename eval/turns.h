#pragma once
/// Turns to compute, for evaluations that share a machine (a parallel `ranktune eval`,
/// mpi/eval_farm.h). A latency measured while another evaluation computes on the same node
/// measures the contention as much as the model, so a timed phase must run alone there,
/// while the untimed work (restoring a checkpoint, the held-out metrics) of several
/// evaluations may run side by side. The evaluator (eval/evaluator.h) says which phase it
/// enters; whoever hands out the turns (rank 0 of the parallel evaluation) decides when it
/// may go on. No MPI here: the evaluator only calls these three functions.

namespace ranktune::eval {

class ComputeTurns {
 public:
  virtual ~ComputeTurns() = default;
  /// Before untimed work: returns once no timed phase runs on this node (others' untimed work
  /// may). Gives back a timing turn held.
  virtual void compute() = 0;
  /// Before timed work: returns once nothing else of the evaluation computes on this node.
  /// Gives back a compute turn held first (never holds two: no turn waits on another).
  virtual void timing() = 0;
  /// Gives back the turn held, if any.
  virtual void release() noexcept = 0;
};

}  // namespace ranktune::eval
