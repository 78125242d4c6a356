// The worker of every rank but 0 (mpi/worker.h): setup and Hello, then the message pump
// (mpi/worker_pump.h) serves the driver and runs each trial it starts (mpi/trial_runner.h).
#include "mpi/worker.h"

#include <csignal>
#include <cstdio>
#include <exception>
#include <string>
#include <utility>

#include <boost/mpi/collectives/broadcast.hpp>

#include "config/config.h"
#include "experiment/exit_codes.h"
#include "mpi/backoff.h"
#include "mpi/errors.h"
#include "mpi/gang.h"
#include "mpi/launch.h"
#include "mpi/placement.h"
#include "mpi/trace.h"
#include "mpi/trial_runner.h"
#include "mpi/wire.h"
#include "mpi/worker_pump.h"
#include "sys/host.h"
#include "sys/process.h"
#include "sys/temp_dir.h"
#include "train/trainable.h"

namespace ranktune::mpi {
namespace {

constexpr int kDriver = 0;

}  // namespace

int run_worker(const boost::mpi::communicator& world) {
  // Interrupts are the driver's to handle: it stops the trials and tells us to shut down.
  // mpirun turns a Ctrl-C into SIGTERM for every rank; a worker that died of it would leave
  // the driver unable to finish the graceful stop.
  std::signal(SIGINT, SIG_IGN);
  std::signal(SIGTERM, SIG_IGN);
  // Slurm's time-limit warning (--signal=USR1@S without B:) goes to every task of the step.
  std::signal(SIGUSR1, SIG_IGN);
  trace("worker: MPI_Init done");
  tighten_timer_slack();
  Setup setup;
  boost::mpi::broadcast(world, setup, kDriver);
  trace("worker: Setup received");
  if (setup.config_text.empty()) return 0;  // the driver refused the config and said why
  // When rank 0 dies, mpirun SIGTERMs (ignored, above) and then SIGKILLs us: leave first,
  // with our trials and folders.
  exit_with_process(static_cast<pid_t>(setup.driver_pid), setup.driver_namespace);
  try {
    if (setup.wire_version != kWireVersion) {
      throw MpiError("wire version mismatch: driver " + std::to_string(setup.wire_version) +
                     ", worker " + std::to_string(kWireVersion) + " (mixed ranktune builds?)");
    }
    config::ExperimentConfig cfg = config::parse_config(setup.config_text, setup.config_path, setup.overrides);
    // The driver validated the same config; failing here means this node differs (the
    // data or the program is missing on it).
    train::validate(cfg);
    // What a trial leaves behind (a child in a session of its own) becomes ours when its
    // parent exits, so that the trial's end can kill it (sys::ChildProcess::reap).
    sys::become_subreaper();
    // Trials' temporary folders go into this worker's run folder, which also removes the
    // folders that killed runs of this experiment left on this host.
    sys::TempDir run_folder;
    try {
      run_folder = sys::TempDir::run_folder(sys::run_folder_key(cfg.results));
    } catch (const std::exception& e) {  // checkpointing trials say it again when they fail
      std::fprintf(stderr, "ranktune: worker rank %d: %s; trials' folders go to %s\n", world.rank(), e.what(),
                   sys::temp_base().c_str());
    }
    Placement placement = place(world);
    const boost::mpi::communicator gangs = gang_parent(world);
    send(world, kDriver, kTagHello,
         Hello{kWireVersion, placement.host, placement.local_index, placement.device, placement.device_name});
    trace("worker: Hello sent");
    // The pump serves the driver; each Start it receives runs as a trial.
    WorkerPump pump(world);
    TrialRunner trials(pump, gangs, std::move(cfg), std::move(setup), std::move(placement));
    return pump.serve([&trials](const Start& start) { trials.run(start); });
  } catch (const std::exception& e) {
    // A worker that leaves on its own would leave the other ranks waiting in a collective or
    // for its messages, and MPI_Finalize waiting for them: end the job instead, saying why.
    // What the driver committed is in the file; `ranktune run --resume` goes on from it.
    std::fprintf(stderr, "ranktune: worker rank %d on %s failed: %s. Aborting the job; fix this node and resume "
                 "with `ranktune run CONFIG --resume`\n",
                 world.rank(), sys::host_name().c_str(), e.what());
    std::fflush(stderr);
    MPI_Abort(static_cast<MPI_Comm>(world), experiment::kExitInternal);
    return experiment::kExitInternal;  // not reached
  }
}

}  // namespace ranktune::mpi
