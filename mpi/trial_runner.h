#pragma once
/// One trial on a worker, from its Start to its end: the trainable's lifecycle (make it, set
/// it up, restore its checkpoint, step it, save its checkpoints, stop it) and what the driver
/// learns of it (its placement, each result, warnings, how it ended), alone or as a member
/// of a gang whose members agree on every phase's outcome.
///
/// Why apart from the message pump (mpi/worker_pump.h): this is what a trial does, the pump
/// how its messages travel. The runner decides when to ask for a decision, when to save and
/// what to report; the pump waits, naps and sends.

#include <string>

#include <boost/mpi/communicator.hpp>

#include "config/config.h"
#include "mpi/placement.h"
#include "mpi/wire.h"
#include "mpi/worker_pump.h"
#include "train/registry.h"
#include "train/trainable.h"

namespace ranktune::mpi {

class TrialRunner {
 public:
  /// `pump` carries every message to and from the driver; `gangs` is the parent of the gangs'
  /// communicators (gang_parent). `cfg` is the experiment's config, `setup` the driver's
  /// Setup, `placement` this rank's host and device.
  TrialRunner(WorkerPump& pump, const boost::mpi::communicator& gangs, config::ExperimentConfig cfg, Setup setup,
              Placement placement);

  /// Runs `start`'s trial until it ends here: the trainable finished, failed, or the driver
  /// stopped or paused it. Trial failures are reported to the driver (Ended), never thrown;
  /// MPI errors are thrown (they end the rank).
  void run(const Start& start);

 private:
  /// The trainable's warnings (a program killed with SIGKILL) as events in the results file.
  void send_warnings(const Start& start, train::Trainable& trainable);

  WorkerPump& pump_;
  const boost::mpi::communicator& gangs_;  ///< parent of the gangs' communicators
  config::ExperimentConfig cfg_;
  train::TrainableTraits traits_;  ///< of cfg_'s trainable, read once
  std::string config_dir_;         ///< the config's folder (train::Context::config_dir), made once
  Setup setup_;
  Placement placement_;
};

}  // namespace ranktune::mpi
