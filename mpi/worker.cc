#include "mpi/worker.h"

#include <csignal>
#include <filesystem>
#include <optional>

#include <boost/mpi/collectives/broadcast.hpp>

#include "io/config.h"
#include "io/json.h"
#include "mpi/backoff.h"
#include "mpi/errors.h"
#include "mpi/placement.h"
#include "mpi/wire.h"
#include "train/trainable.h"

namespace ranktune::mpi {
namespace {

using namespace std::chrono_literals;

constexpr int kDriver = 0;

/// Waits for the driver's next message. Between trials a worker naps up to 2 ms; while a
/// decision is due it naps at most 200 us, since the answer takes microseconds to come.
Incoming next_message(const boost::mpi::communicator& world, std::chrono::microseconds max_nap) {
  return receive(world, kDriver, max_nap);
}

class Worker {
 public:
  Worker(const boost::mpi::communicator& world, io::ExperimentConfig cfg, Setup setup,
         Placement placement)
      : world_(world), cfg_(std::move(cfg)), setup_(std::move(setup)), placement_(std::move(placement)) {}

  int loop() {
    for (;;) {
      Incoming in = next_message(world_, 2ms);
      switch (in.tag) {
        case kTagStart: run_trial(unpack<Start>(world_, in)); break;
        case kTagDecision: break;  // a Stop for a trial that already ended here: nothing to do
        case kTagShutdown: send(world_, kDriver, kTagBye, Empty{}); return 0;
        default:
          throw MpiError("worker " + std::to_string(world_.rank()) + ": unexpected message tag " +
                         std::to_string(in.tag));
      }
    }
  }

 private:
  void run_trial(const Start& start) {
    train::Context ctx;
    ctx.trial_id = start.trial;
    ctx.attempt = start.attempt;
    ctx.rank = world_.rank();
    ctx.local_index = placement_.local_index;
    ctx.device = placement_.device;
    ctx.seed = cfg_.seed;
    ctx.log_dir = setup_.log_dir;
    ctx.config_dir = std::filesystem::path(cfg_.path).parent_path().string();

    std::unique_ptr<train::Trainable> trainable;
    Ended ended{start.trial, start.attempt, false, {}, {}};
    try {
      trainable = train::make_trainable(cfg_.trainable);
      trainable->setup(io::config_from_json(nlohmann::json::parse(start.config_json)), ctx);
      if (!start.checkpoint.empty()) {
        train::MemoryCheckpointReader reader(std::as_bytes(std::span(start.checkpoint.data(), start.checkpoint.size())));
        try {
          trainable->restore(reader);
        } catch (const train::CheckpointError& e) {
          throw train::TrialFailure(std::string("cannot restore its checkpoint: ") + e.what());
        }
      }
      std::int64_t until = start.until;
      for (std::int64_t iteration = start.iterations + 1;; ++iteration) {
        train::StepResult r = trainable->step();
        if (r.done) break;  // finished by itself
        send(world_, kDriver, kTagResult,
             Result{start.trial, start.attempt, iteration, std::move(r.metrics)});
        // Within the lease only a Stop can come, and we need not wait for it.
        std::optional<Incoming> in;
        if (iteration < until) {
          in = try_receive(world_, kDriver);
          if (!in) continue;
        } else {
          in = next_message(world_, 200us);
        }
        const Decision d = decision_for(start, *in);
        if (d.kind == Decision::Stop) {
          trainable->stop();
          return;  // the driver already counts this worker as free
        }
        if (d.kind == Decision::Pause || d.save) send_checkpoint(start, iteration, *trainable);
        if (d.kind == Decision::Pause) {
          trainable->stop();
          return;  // as for Stop: the driver freed this worker when it paused the trial
        }
        until = d.until;
      }
    } catch (const train::TrialFailure& e) {
      ended.failed = true;
      ended.reason = e.what();
      ended.log_tail = e.log_tail();
    } catch (const MpiError&) {
      throw;
    } catch (const std::exception& e) {
      // A bug or resource problem inside one trial must not take the worker rank down.
      ended.failed = true;
      ended.reason = e.what();
      if (trainable) ended.log_tail = trainable->log_tail();
    }
    if (trainable) trainable->stop();
    send(world_, kDriver, kTagEnded, ended);
  }

  /// Saves the trainable's state after `iteration` and sends it to the driver. Throws
  /// TrialFailure (the attempt fails) when the trainable cannot checkpoint.
  void send_checkpoint(const Start& start, std::int64_t iteration, train::Trainable& trainable) {
    if (!trainable.can_checkpoint())
      throw train::TrialFailure("the scheduler needs checkpoints, and this trainable cannot save one");
    train::CheckpointBytes bytes;
    train::MemoryCheckpointWriter out(bytes);
    trainable.save(out);
    Checkpoint k{start.trial, start.attempt, iteration, {}};
    k.bytes.assign(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    send(world_, kDriver, kTagCheckpoint, k);
  }

  /// The decision about the running trial; anything else is a protocol error.
  Decision decision_for(const Start& start, const Incoming& in) const {
    if (in.tag != kTagDecision) {
      throw MpiError("worker " + std::to_string(world_.rank()) +
                     ": expected a decision, got message tag " + std::to_string(in.tag));
    }
    const auto d = unpack<Decision>(world_, in);
    if (d.trial != start.trial || d.attempt != start.attempt) {
      throw MpiError("worker " + std::to_string(world_.rank()) + ": decision for trial " +
                     std::to_string(d.trial) + " while running trial " + std::to_string(start.trial));
    }
    return d;
  }

  const boost::mpi::communicator& world_;
  io::ExperimentConfig cfg_;
  Setup setup_;
  Placement placement_;
};

}  // namespace

int run_worker(const boost::mpi::communicator& world) {
  // Interrupts are the driver's to handle: it stops the trials and tells us to shut down.
  // mpirun turns a Ctrl-C into SIGTERM for every rank; a worker that died of it would leave
  // the driver unable to finish the graceful stop.
  std::signal(SIGINT, SIG_IGN);
  std::signal(SIGTERM, SIG_IGN);
  // Slurm's time-limit warning (--signal=USR1@S without B:) goes to every task of the step.
  std::signal(SIGUSR1, SIG_IGN);
  tighten_timer_slack();
  Setup setup;
  boost::mpi::broadcast(world, setup, kDriver);
  if (setup.config_text.empty()) return 0;  // the driver refused the config and said why
  if (setup.wire_version != kWireVersion) {
    throw MpiError("wire version mismatch: driver " + std::to_string(setup.wire_version) +
                   ", worker " + std::to_string(kWireVersion) + " (mixed ranktune builds?)");
  }
  io::ExperimentConfig cfg = io::parse_config(setup.config_text, setup.config_path, setup.overrides);
  train::validate(cfg);
  Placement placement = place(world);
  send(world, kDriver, kTagHello,
       Hello{kWireVersion, placement.host, placement.local_index, placement.device, placement.device_name});
  return Worker(world, std::move(cfg), std::move(setup), std::move(placement)).loop();
}

}  // namespace ranktune::mpi
