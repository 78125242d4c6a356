#include "mpi/worker.h"

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <optional>

#include <boost/mpi/collectives/broadcast.hpp>

#include "io/config.h"
#include "io/crc32c.h"
#include "io/json.h"
#include "mpi/backoff.h"
#include "mpi/driver.h"
#include "mpi/errors.h"
#include "mpi/gang.h"
#include "mpi/placement.h"
#include "mpi/wire.h"
#include "train/trainable.h"

namespace ranktune::mpi {
namespace {

using namespace std::chrono_literals;

constexpr int kDriver = 0;
/// A decision kind the leader shares with its gang when the trainable finished by itself.
constexpr std::int64_t kFinished = -1;

/// Waits for the driver's next message. Between trials a worker naps up to 2 ms; while a
/// decision is due it naps at most 200 us, since the answer takes microseconds to come.
Incoming next_message(const boost::mpi::communicator& world, std::chrono::microseconds max_nap) {
  return receive(world, kDriver, max_nap);
}

class Worker {
 public:
  Worker(const boost::mpi::communicator& world, const boost::mpi::communicator& gangs, io::ExperimentConfig cfg,
         Setup setup, Placement placement)
      : world_(world), gangs_(gangs), cfg_(std::move(cfg)), setup_(std::move(setup)), placement_(std::move(placement)) {}

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

    // A gang trial: the members build their communicator first. A failure to build it is
    // an MPI failure (the job cannot go on consistently), not a failed attempt.
    std::unique_ptr<Gang> gang;
    if (start.gang.size() > 1) {
      // Only the mlp computes on the GPU, and only when not told to stay on the CPU.
      const bool gpu = cfg_.trainable.kind == "mlp" && cfg_.trainable.device != "cpu";
      gang = std::make_unique<Gang>(static_cast<MPI_Comm>(gangs_), start.gang, gang_tag(start),
                                    gpu ? placement_.device : std::string("cpu"));
      ctx.collective = &gang->collective();
    }
    const bool leader = !gang || gang->leader();
    // Every phase ends with the gang agreeing on its outcome, so all members stop together.
    auto agreed = [&](const Outcome& mine) { return gang ? gang->agree(mine) : mine; };

    std::unique_ptr<train::Trainable> trainable;
    Outcome outcome = agreed(guarded(trainable.get(), [&] {
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
    }));
    if (outcome.ok && leader) {
      const train::ComputeInfo info = trainable->compute_info();
      send(world_, kDriver, kTagPlaced,
           Placed{start.trial, start.attempt, info.path, info.threads, gang ? gang->collective().name() : ""});
    }

    std::int64_t until = start.until;
    for (std::int64_t iteration = start.iterations + 1; outcome.ok; ++iteration) {
      train::StepResult r;
      outcome = agreed(guarded(trainable.get(), [&] { r = trainable->step(); }));
      if (!outcome.ok) break;
      // The leader decides (from its own step and the driver), and the gang follows.
      std::int64_t decision[3] = {kFinished, until, 0};  // kind, lease, save
      if (leader && !r.done) {
        send(world_, kDriver, kTagResult, Result{start.trial, start.attempt, iteration, std::move(r.metrics)});
        const Decision d = next_decision(start, iteration, until);
        decision[0] = d.kind;
        decision[1] = d.until;
        decision[2] = d.save;
      }
      if (gang) gang->share(decision);
      if (decision[0] == kFinished) break;  // the trainable finished by itself
      if (decision[0] == Decision::Pause || decision[2] != 0) {
        outcome = agreed(leader ? guarded(trainable.get(), [&] { send_checkpoint(start, iteration, *trainable); })
                                : Outcome{});
        if (!outcome.ok) break;
      }
      if (decision[0] == Decision::Stop || decision[0] == Decision::Pause) {
        // The driver already counts the workers as free, and sends no Ended for them.
        trainable->stop();
        return;
      }
      until = decision[1];
    }
    if (trainable) trainable->stop();
    if (leader) send(world_, kDriver, kTagEnded, Ended{start.trial, start.attempt, !outcome.ok, outcome.reason, outcome.log_tail});
  }

  /// The decision about `iteration` of the running trial: within the lease, Continue unless
  /// a Stop is already waiting (the worker does not wait for it); at its end, the driver's.
  Decision next_decision(const Start& start, std::int64_t iteration, std::int64_t until) {
    if (iteration < until) {
      const auto in = try_receive(world_, kDriver);
      if (!in) return Decision{start.trial, start.attempt, Decision::Continue, until, false};
      return decision_for(start, *in);
    }
    return decision_for(start, next_message(world_, 200us));
  }

  /// Runs one phase of the trial; a failure becomes its Outcome. MPI errors propagate: they
  /// end the rank, not just the attempt.
  template <class F>
  static Outcome guarded(const train::Trainable* trainable_before, F&& phase) {
    try {
      phase();
      return {};
    } catch (const train::TrialFailure& e) {
      return {false, e.what(), e.log_tail()};
    } catch (const MpiError&) {
      throw;
    } catch (const std::exception& e) {
      // A bug or resource problem inside one trial must not take the worker rank down.
      return {false, e.what(), trainable_before ? trainable_before->log_tail() : std::string()};
    }
  }

  /// A tag that tells apart gangs that form at the same time (they differ in trial or
  /// attempt); MPI guarantees tags up to 32767.
  static int gang_tag(const Start& start) { return static_cast<int>((start.trial * 31 + start.attempt) % 32768); }

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
  const boost::mpi::communicator& gangs_;  ///< parent of the gangs' communicators
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
  try {
    if (setup.wire_version != kWireVersion) {
      throw MpiError("wire version mismatch: driver " + std::to_string(setup.wire_version) +
                     ", worker " + std::to_string(kWireVersion) + " (mixed ranktune builds?)");
    }
    io::ExperimentConfig cfg = io::parse_config(setup.config_text, setup.config_path, setup.overrides);
    // The driver validated the same config; failing here means this node differs (the
    // data or the program is missing on it).
    train::validate(cfg);
    Placement placement = place(world);
    const boost::mpi::communicator gangs = gang_parent(world);
    send(world, kDriver, kTagHello,
         Hello{kWireVersion, placement.host, placement.local_index, placement.device, placement.device_name});
    return Worker(world, gangs, std::move(cfg), std::move(setup), std::move(placement)).loop();
  } catch (const std::exception& e) {
    // A worker that leaves on its own would leave the other ranks waiting in a collective or
    // for its messages, and MPI_Finalize waiting for them: end the job instead, saying why.
    // What the driver committed is in the file; `ranktune run --resume` goes on from it.
    std::fprintf(stderr, "ranktune: worker rank %d on %s failed: %s. Aborting the job; fix this node and resume "
                 "with `ranktune run CONFIG --resume`\n",
                 world.rank(), host_name().c_str(), e.what());
    std::fflush(stderr);
    MPI_Abort(static_cast<MPI_Comm>(world), kExitInternal);
    return kExitInternal;  // not reached
  }
}

}  // namespace ranktune::mpi
