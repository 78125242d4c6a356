// One trial on a worker (mpi/trial_runner.h): the trainable's lifecycle, alone or in a gang,
// with every message through the worker's pump.
#include "mpi/trial_runner.h"

#include <filesystem>
#include <memory>
#include <span>
#include <utility>

#include "mpi/errors.h"
#include "mpi/gang.h"
#include "mpi/rendezvous.h"
#include "mpi/trace.h"
#include "train/checkpoint.h"

namespace ranktune::mpi {
namespace {

/// A decision kind the leader shares with its gang when the trainable finished by itself.
constexpr std::int64_t kFinished = -1;

/// Runs one phase of the trial; a failure becomes its Outcome. MPI errors propagate: they
/// end the rank, not just the attempt.
template <class F>
Outcome guarded(const train::Trainable* trainable_before, F&& phase) {
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
int gang_tag(const Start& start) { return static_cast<int>((start.trial * 31 + start.attempt) % 32768); }

/// The trainable's checkpoint, in memory until it has streamed (WorkerPump::stream_checkpoint).
/// Throws TrialFailure (the attempt fails) when the trainable cannot checkpoint; then
/// nothing is sent.
train::CheckpointBytes save_checkpoint(train::Trainable& trainable) {
  if (!trainable.can_checkpoint())
    throw train::TrialFailure("the scheduler needs checkpoints, and this trainable cannot save one");
  train::CheckpointBytes bytes;
  train::MemoryCheckpointWriter out(bytes);
  trainable.save(out);
  return bytes;
}

}  // namespace

TrialRunner::TrialRunner(WorkerPump& pump, const boost::mpi::communicator& gangs, config::ExperimentConfig cfg,
                         Setup setup, Placement placement)
    : pump_(pump),
      gangs_(gangs),
      cfg_(std::move(cfg)),
      traits_(train::traits(cfg_.trainable)),
      config_dir_(std::filesystem::path(cfg_.path).parent_path().string()),
      setup_(std::move(setup)),
      placement_(std::move(placement)) {}

void TrialRunner::run(const Start& start) {
  trace_trial("worker: Start in", start.trial);
  train::Context ctx;
  ctx.trial_id = start.trial;
  ctx.attempt = start.attempt;
  ctx.rank = pump_.rank();
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
  std::string checkpoint = start.restore ? pump_.receive_checkpoint(start, problem) : std::string();
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
    pump_.placed(Placed{start.trial, start.attempt, info.path, info.threads, gang ? gang->collective().name() : ""});
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
      pump_.result(Result{start.trial, start.attempt, iteration, std::move(r.metrics)});
      const Decision d = pump_.next_decision(start, iteration, until);
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
      outcome = agreed(leader ? guarded(trainable.get(), [&] { pump_.stream_checkpoint(start, iteration, saved); })
                              : Outcome{});
      if (!outcome.ok) break;
    }
    if (ends) {
      // The driver already counts the workers as free, and sends no Ended for them.
      trainable->stop();  // a second stop() does nothing
      send_warnings(start, *trainable);
      // It failed the attempt on a result (a NaN metric): the output says why.
      if (failed) pump_.log_tail(LogTail{start.trial, start.attempt, trainable->log_tail()});
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
    pump_.ended(Ended{start.trial, start.attempt, !outcome.ok, outcome.reason,
                      outcome.ok && trainable ? trainable->log_tail() : outcome.log_tail});
  }
}

void TrialRunner::send_warnings(const Start& start, train::Trainable& trainable) {
  for (std::string& w : trainable.take_warnings())
    pump_.notice(Notice{start.trial, start.attempt, search::EventKind::Warning, std::move(w)});
}

}  // namespace ranktune::mpi
