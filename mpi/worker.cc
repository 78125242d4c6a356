// The worker loop of every rank but 0 (mpi/worker.h): setup and Hello, then trials as the
// driver says, alone or in a gang, with their checkpoints streamed both ways.
#include "mpi/worker.h"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <utility>
#include <vector>

#include <boost/mpi/collectives/broadcast.hpp>

#include "experiment/exit_codes.h"
#include "config/config.h"
#include "io/crc32c.h"
#include "mpi/backoff.h"
#include "mpi/errors.h"
#include "mpi/gang.h"
#include "mpi/launch.h"
#include "mpi/placement.h"
#include "mpi/rendezvous.h"
#include "mpi/trace.h"
#include "mpi/wire.h"
#include "sys/host.h"
#include "train/command.h"
#include "train/registry.h"
#include "train/trainable.h"

namespace ranktune::mpi {
namespace {

using namespace std::chrono_literals;

constexpr int kDriver = 0;
/// The longest nap of a worker that waits for the decision at the end of its lease.
constexpr std::chrono::microseconds kDecisionNap{20};
/// A decision kind the leader shares with its gang when the trainable finished by itself.
constexpr std::int64_t kFinished = -1;

class Worker {
 public:
  Worker(const boost::mpi::communicator& world, const boost::mpi::communicator& gangs, config::ExperimentConfig cfg,
         Setup setup, Placement placement)
      : world_(world),
        gangs_(gangs),
        cfg_(std::move(cfg)),
        traits_(train::traits(cfg_.trainable)),
        config_dir_(std::filesystem::path(cfg_.path).parent_path().string()),
        setup_(std::move(setup)),
        placement_(std::move(placement)) {}

  int loop() {
    for (;;) {
      Incoming in = next_message(2ms);
      switch (in.tag) {
        case kTagStart:
          run_trial(unpack<Start>(world_, in));
          break;
        case kTagDecision: break;  // a Stop for a trial that already ended here: nothing to do
        case kTagShutdown:
          trace("worker: Shutdown received");
          job_ending();  // rank 0 may now exit before us
          // The driver acknowledges chunks until every Bye is in: collect the last acks,
          // so that no send is in flight when MPI finalizes.
          while (!checkpoints_.idle()) take_ack(receive(world_, kDriver, 2ms, kTagCheckpointAck));
          send(world_, kDriver, kTagBye, Empty{});
          trace("worker: Bye sent");
          return 0;
        default:
          throw MpiError("worker " + std::to_string(world_.rank()) + ": unexpected message tag " +
                         std::to_string(in.tag));
      }
    }
  }

 private:
  /// Waits for the driver's next message, taking in the checkpoint acks that arrive
  /// meanwhile. Between trials a worker naps up to 2 ms; while a decision is due it naps at
  /// most 200 us, since the answer takes microseconds to come.
  Incoming next_message(std::chrono::microseconds max_nap) {
    for (;;) {
      Incoming in = receive(world_, kDriver, max_nap);
      if (in.tag != kTagCheckpointAck) return in;
      take_ack(in);
    }
  }
  /// The driver's next message if one is waiting (acks taken in), without blocking.
  std::optional<Incoming> poll_message() {
    while (auto in = try_receive(world_, kDriver, MPI_ANY_TAG)) {
      if (in->tag != kTagCheckpointAck) return in;
      take_ack(*in);
    }
    return std::nullopt;
  }
  void take_ack(const Incoming& in) { checkpoints_.acknowledged(unpack<ChunkAck>(world_, in)); }

  /// Receives the checkpoint that `start` announced, chunk by chunk, acknowledging each, and
  /// checks its size and CRC-32C. This runs before anything else of the trial (and even if
  /// the trial is doomed), so that the stream always ends and the driver's window drains.
  /// Returns the bytes, or sets `problem` to why they cannot be restored.
  std::string receive_checkpoint(const Start& start, std::string& problem) {
    // Held whole once, here only; each chunk's bytes are received straight into their place.
    std::string bytes(static_cast<std::size_t>(std::max<std::int64_t>(start.checkpoint_size, 0)), '\0');
    std::int64_t received = 0;
    std::uint32_t crc = 0;
    for (;;) {
      const Incoming in = receive(world_, kDriver, 200us, kTagRestoreChunk);
      const CheckpointChunk c = unpack<CheckpointChunk>(world_, in);
      if (c.trial != start.trial || c.attempt != start.attempt || c.offset != received ||
          (!c.aborted && (c.size < 0 || c.size > start.checkpoint_size - received)))
        throw MpiError("worker " + std::to_string(world_.rank()) + ": checkpoint chunk of trial " +
                       std::to_string(c.trial) + " at byte " + std::to_string(c.offset) + " (" +
                       std::to_string(c.size) + " bytes) while restoring trial " + std::to_string(start.trial) +
                       " at byte " + std::to_string(received) + " of " + std::to_string(start.checkpoint_size));
      if (c.aborted) {
        problem = "the driver stopped sending its checkpoint after " + std::to_string(received) + " of " +
                  std::to_string(start.checkpoint_size) + " bytes (the run is ending)";
        return {};
      }
      char* const at = bytes.data() + received;
      receive_chunk_bytes(world_, kDriver, kTagRestoreChunk, c, at);
      crc = io::crc32c(std::as_bytes(std::span(at, static_cast<std::size_t>(c.size))), crc);
      received += c.size;
      send(world_, kDriver, kTagRestoreAck, ChunkAck{c.trial, c.attempt, received});
      if (c.last) break;
    }
    if (received != start.checkpoint_size || crc != start.checkpoint_crc32c) {
      char why[160];
      std::snprintf(why, sizeof why, "%lld bytes with CRC-32C %08x arrived, the file recorded %lld bytes with %08x",
                    static_cast<long long>(received), crc, static_cast<long long>(start.checkpoint_size),
                    start.checkpoint_crc32c);
      problem = std::string("its bytes were damaged on the way (") + why + ")";
    }
    return bytes;
  }

  void run_trial(const Start& start) {
    trace_trial("worker: Start in", start.trial);
    train::Context ctx;
    ctx.trial_id = start.trial;
    ctx.attempt = start.attempt;
    ctx.rank = world_.rank();
    ctx.local_index = placement_.local_index;
    ctx.device = placement_.device;
    ctx.seed = cfg_.seed;
    ctx.log_dir = setup_.log_dir;
    ctx.first_iteration = start.iterations + 1;
    ctx.start_cause = start.cause;
    ctx.config_dir = config_dir_;

    // A gang trial: the members build their communicator first. A failure to build it is
    // an MPI failure (the job cannot go on consistently), not a failed attempt.
    std::unique_ptr<Gang> gang;
    if (start.gang.size() > 1) {
      // Only a kind that computes on the GPU gets it (the mlp, unless told to stay on the CPU).
      gang = std::make_unique<Gang>(static_cast<MPI_Comm>(gangs_), start.gang, gang_tag(start),
                                    traits_.uses_gpu ? placement_.device : std::string("cpu"));
      ctx.collective = &gang->collective();
    }
    const bool leader = !gang || gang->leader();
    // A program that trains distributed by itself (a DDP script) learns where its gang
    // meets before any member starts it.
    if (traits_.distributed_env) ctx.distributed = rendezvous(gang.get(), placement_.host);
    if (gang) ctx.peer_failed = [&gang] { return gang->alarmed(); };
    // Every phase ends with the gang agreeing on its outcome, so all members stop together.
    // A member whose phase failed by itself first tells the others, which may be waiting
    // on it (a DDP program blocked on its dead peer).
    auto agreed = [&](const Outcome& mine) {
      if (!gang) return mine;
      if (!mine.ok && !mine.secondary) gang->alarm();
      return gang->agree(mine);
    };

    std::string problem;
    std::string checkpoint = start.restore ? receive_checkpoint(start, problem) : std::string();
    std::unique_ptr<train::Trainable> trainable;
    Outcome outcome = agreed(guarded(trainable.get(), [&] {
      if (!problem.empty()) throw train::TrialFailure("cannot restore its checkpoint: " + problem);
      trainable = train::make_trainable(cfg_.trainable);
      trainable->setup(start.config, ctx);
      if (start.restore) {
        train::MemoryCheckpointReader reader(std::as_bytes(std::span(checkpoint.data(), checkpoint.size())));
        try {
          trainable->restore(reader);
        } catch (const train::CheckpointError& e) {
          throw train::TrialFailure(std::string("cannot restore its checkpoint: ") + e.what());
        }
      }
      checkpoint = std::string();  // restored: give the memory back before the trial runs
    }));
    if (outcome.ok && leader) {
      const train::ComputeInfo info = trainable->compute_info();
      send(world_, kDriver, kTagPlaced,
           Placed{start.trial, start.attempt, info.path, info.threads, gang ? gang->collective().name() : ""});
    }

    std::int64_t until = start.until;
    for (std::int64_t iteration = start.iterations + 1; outcome.ok; ++iteration) {
      train::StepResult r;
      trace_trial("worker: step begins", start.trial);
      outcome = agreed(guarded(trainable.get(), [&] { r = trainable->step(); }));
      trace_trial("worker: step ends", start.trial);
      if (!outcome.ok) break;
      // The leader decides (from its own step and the driver), and the gang follows.
      std::int64_t decision[3] = {kFinished, until, 0};  // kind, lease, save
      bool failed = false;  // a Stop because the driver failed the attempt (the leader's to answer)
      if (leader && !r.done) {
        send(world_, kDriver, kTagResult, Result{start.trial, start.attempt, iteration, std::move(r.metrics)});
        const Decision d = next_decision(start, iteration, until);
        decision[0] = d.kind;
        decision[1] = d.until;
        decision[2] = d.save;
        failed = d.kind == Decision::Stop && d.failed;
      }
      if (gang) gang->share(decision);
      if (decision[0] == kFinished) break;  // the trainable finished by itself
      const bool ends = decision[0] == Decision::Stop || decision[0] == Decision::Pause;
      if (decision[0] == Decision::Pause || decision[2] != 0) {
        train::CheckpointBytes saved;
        outcome = agreed(leader ? guarded(trainable.get(), [&] { saved = save_checkpoint(*trainable); }) : Outcome{});
        if (!outcome.ok) break;
        // An attempt that ends here stops its program (every member's) before the checkpoint
        // leaves: once it is stored the driver may resume the trial on other workers, whose
        // programs append to the same logs, and this program's last output must be in them
        // by then (written after, it landed over the resumed run's separator line).
        if (ends) trainable->stop();
        outcome = agreed(leader ? guarded(trainable.get(), [&] { stream_checkpoint(start, iteration, saved); })
                                : Outcome{});
        if (!outcome.ok) break;
      }
      if (ends) {
        // The driver already counts the workers as free, and sends no Ended for them.
        trainable->stop();  // a second stop() does nothing
        send_warnings(start, *trainable);
        // It failed the attempt on a result (a NaN metric): the output says why.
        if (failed) send(world_, kDriver, kTagLogTail, LogTail{start.trial, start.attempt, trainable->log_tail()});
        return;
      }
      until = decision[1];
    }
    if (trainable) {
      trainable->stop();
      send_warnings(start, *trainable);
    }
    // A trainable that ended by itself sends its tail too: the driver fails it when it never
    // reported the metric.
    if (leader) {
      send(world_, kDriver, kTagEnded,
           Ended{start.trial, start.attempt, !outcome.ok, outcome.reason,
                 outcome.ok && trainable ? trainable->log_tail() : outcome.log_tail});
    }
  }

  /// The trainable's warnings (a program killed with SIGKILL) as events in the results file.
  void send_warnings(const Start& start, train::Trainable& trainable) {
    for (std::string& w : trainable.take_warnings())
      send(world_, kDriver, kTagNotice, Notice{start.trial, start.attempt, search::EventKind::Warning, std::move(w)});
  }

  /// The decision about `iteration` of the running trial: within the lease, Continue unless
  /// a Stop is already waiting (the worker does not wait for it); at its end, the driver's.
  Decision next_decision(const Start& start, std::int64_t iteration, std::int64_t until) {
    if (iteration < until) {
      const auto in = poll_message();
      if (!in) return Decision{start.trial, start.attempt, Decision::Continue, until, false};
      return decision_for(start, *in);
    }
    // The end of the lease: the answer is on its way (the driver takes a result within its
    // own nap and answers at once), so short naps: a 200 us nap overshot the answer by up to
    // its length on every trial. This wait lasts a round trip, a few hundred microseconds.
    Incoming in = next_message(kDecisionNap);
    trace_trial("worker: decision in", start.trial);
    return decision_for(start, in);
  }

  /// The decision about the running trial; anything else is a protocol error.
  Decision decision_for(const Start& start, const Incoming& in) const {
    if (in.tag != kTagDecision) {
      throw MpiError("worker " + std::to_string(world_.rank()) + ": expected a decision, got message tag " +
                     std::to_string(in.tag));
    }
    const auto d = unpack<Decision>(world_, in);
    if (d.trial != start.trial || d.attempt != start.attempt) {
      throw MpiError("worker " + std::to_string(world_.rank()) + ": decision for trial " + std::to_string(d.trial) +
                     " while running trial " + std::to_string(start.trial));
    }
    return d;
  }

  /// Runs one phase of the trial; a failure becomes its Outcome. MPI errors propagate: they
  /// end the rank, not just the attempt.
  template <class F>
  static Outcome guarded(const train::Trainable* trainable_before, F&& phase) {
    try {
      phase();
      return {};
    } catch (const train::PeerFailure& e) {
      return {false, e.what(), e.log_tail(), /*secondary=*/true, wall_seconds()};
    } catch (const train::TrialFailure& e) {
      return {false, e.what(), e.log_tail(), false, wall_seconds()};
    } catch (const MpiError&) {
      throw;
    } catch (const std::exception& e) {
      // A bug or resource problem inside one trial must not take the worker rank down.
      return {false, e.what(), trainable_before ? trainable_before->log_tail() : std::string(), false, wall_seconds()};
    }
  }

  /// A tag that tells apart gangs that form at the same time (they differ in trial or
  /// attempt); MPI guarantees tags up to 32767.
  static int gang_tag(const Start& start) { return static_cast<int>((start.trial * 31 + start.attempt) % 32768); }

  /// Saves the trainable's state after `iteration` and streams it to the driver in chunks
  /// (at most kCheckpointWindow unacknowledged: the worker naps for acks when the window is
  /// full). It returns once MPI has delivered the last chunk, without waiting for its ack:
  /// a small checkpoint costs no round trip. Throws TrialFailure (the attempt fails) when
  /// the trainable cannot checkpoint; then nothing was sent.
  /// The trainable's checkpoint, in memory until it has streamed (stream_checkpoint).
  static train::CheckpointBytes save_checkpoint(train::Trainable& trainable) {
    if (!trainable.can_checkpoint())
      throw train::TrialFailure("the scheduler needs checkpoints, and this trainable cannot save one");
    train::CheckpointBytes bytes;
    train::MemoryCheckpointWriter out(bytes);
    trainable.save(out);
    return bytes;
  }

  /// Streams `bytes`, the checkpoint of `start`'s trial at `iteration`, to rank 0 in chunks
  /// within the window, and returns once every chunk is delivered.
  void stream_checkpoint(const Start& start, std::int64_t iteration, const train::CheckpointBytes& bytes) {
    CheckpointChunk chunk{start.trial, start.attempt, iteration, static_cast<std::int64_t>(bytes.size())};
    std::size_t offset = 0;
    do {
      while (checkpoints_.full()) take_ack(receive(world_, kDriver, 200us, kTagCheckpointAck));
      const std::size_t n = std::min(kCheckpointChunkBytes, bytes.size() - offset);
      chunk.offset = static_cast<std::int64_t>(offset);
      chunk.size = static_cast<std::int64_t>(n);
      chunk.last = offset + n == bytes.size();
      // Sent from `bytes` as they lie (no copy): they stay put until wait_delivered below.
      checkpoints_.send(chunk, reinterpret_cast<const char*>(bytes.data()) + offset);
      offset += n;
    } while (!chunk.last);
    checkpoints_.wait_delivered();
  }

  const boost::mpi::communicator& world_;
  const boost::mpi::communicator& gangs_;  ///< parent of the gangs' communicators
  config::ExperimentConfig cfg_;
  train::TrainableTraits traits_;  ///< of cfg_'s trainable, read once
  std::string config_dir_;         ///< the config's folder (train::Context::config_dir), made once
  Setup setup_;
  Placement placement_;
  ChunkWindow checkpoints_{world_, kDriver, kTagCheckpoint};  ///< chunks of saves in flight to the driver
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
    return Worker(world, gangs, std::move(cfg), std::move(setup), std::move(placement)).loop();
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
